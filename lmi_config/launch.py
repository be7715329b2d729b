"""The console script's entry point (``lmi-config``, ``python -m lmi_config``): the command line
of :mod:`lmi_config.cli`, loaded with the garbage collector paused (:mod:`lmi_config.collector`).

Library callers (``lmi_config.api``, tests through ``lmi_config.cli``) never pass through here.
"""

from __future__ import annotations

from lmi_config import collector


def main() -> None:
    """``lmi-config``."""
    collector.pause()
    try:
        from lmi_config.cli import main as command

        command()
    finally:  # --help and --version import no command module: collect again all the same
        collector.resume()
