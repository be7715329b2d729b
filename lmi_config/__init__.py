"""lmi-config: check and write DJL Serving / LMI configurations offline.

Public API (stable): :func:`lmi_config.api.lint_paths`, :func:`lmi_config.api.lint_text`.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
