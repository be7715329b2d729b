"""The errors the public API raises, each meaning one thing to a caller (and one exit code to the CLI).

Every one is an :class:`LmiConfigError`, so that ``except LmiConfigError`` catches whatever
:mod:`lmi_config.api` raises on purpose; anything else escaping it is a bug. Each keeps the
built-in base it had before the hierarchy (``ValueError`` for most), so that existing callers'
``except ValueError`` still catches what it caught::

    LmiConfigError
    ├── InputError          unusable input: a file, a flag, an argument (exit 2)
    │   └── InvalidArgument an API argument of the wrong type or value (also a ValueError)
    ├── SpecError           an unusable spec (exit 2; a ValueError)
    ├── TemplateProblem     a template that cannot be loaded or rendered (exit 2; a ValueError)
    ├── OutputError         a destination that cannot be written (exit 2)
    ├── PlanningError       nothing fits (exit 1; a ValueError)
    └── DeployError         AWS refused a deploy step or the endpoint failed (exit 3)

Kept in one light module so that importing them costs nothing on the lint path.
"""

from __future__ import annotations


class LmiConfigError(Exception):
    """The base of every error lmi-config raises on purpose; its message says what to do instead."""


class InputError(LmiConfigError):
    """Unusable input (missing, unreadable, binary, too large, nothing to lint): exit code 2."""


class InvalidArgument(InputError, ValueError):
    """An argument of a :mod:`lmi_config.api` function that it does not accept (a wrong type, an
    unknown name, NaN or a number out of range): the message names the argument and what is allowed."""


class SpecError(LmiConfigError, ValueError):
    """An unusable spec: the message names the file, the line and what to do instead (exit code 2)."""


class TemplateProblem(LmiConfigError, ValueError):
    """A template that cannot be loaded or rendered (exit code 2): the message names it."""


class OutputError(LmiConfigError):
    """A destination that cannot be written (exit code 2): the message says why and what to do."""


class PlanningError(LmiConfigError, ValueError):
    """No configuration fits (exit code 1): the message says what stood in the way."""


class DeployError(LmiConfigError):
    """AWS refused a deploy step or the endpoint failed (exit code 3): the message says which
    call and why; what the run created has been removed unless asked to keep it."""
