"""The errors the public API raises, each meaning one thing to a caller (and one exit code to the CLI).

Kept in one light module so that importing them costs nothing on the lint path.
"""

from __future__ import annotations


class InputError(Exception):
    """Unusable input (missing, unreadable, binary, too large, nothing to lint): exit code 2."""


class SpecError(ValueError):
    """An unusable spec: the message names the file, the line and what to do instead (exit code 2)."""


class TemplateProblem(ValueError):
    """A template that cannot be loaded or rendered (exit code 2): the message names it."""


class OutputError(Exception):
    """A destination that cannot be written (exit code 2): the message says why and what to do."""


class PlanningError(ValueError):
    """No configuration fits (exit code 1): the message says what stood in the way."""


class DeployError(Exception):
    """AWS refused a deploy step or the endpoint failed (exit code 3): the message says which
    call and why; what the run created has been removed unless asked to keep it."""
