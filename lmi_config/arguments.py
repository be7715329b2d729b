"""What the public API accepts, checked where a caller hands it over (:mod:`lmi_config.api`).

The CLI's flags are checked by click before they reach the API; a Python caller has no such
guard, and a wrong argument would otherwise surface as whatever the code deep inside happens to
raise (``KeyError``, ``TypeError``, ``AttributeError``) or, worse, as a NaN prediction. Each check
here raises :class:`InvalidArgument` (an :class:`InputError`, exit code 2) naming the argument,
what was given and what is allowed, and returns the value as the code below may use it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from lmi_config.errors import InvalidArgument
from lmi_config.knowledge.options import JAVA_INT_MAX

MAX_SHOWN_CHARACTERS = 80  # a hostile 4 MB argument is not copied into the message

T = TypeVar("T")


def shown(value: Any) -> str:
    """A value as a message shows it: its repr, cut short (its type where even repr fails)."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a caller's object whose repr raises: the message still names it
        return f"<a {type(value).__name__}>"
    return text if len(text) <= MAX_SHOWN_CHARACTERS else f"{text[:MAX_SHOWN_CHARACTERS]}…"


def _refuse(name: str, value: Any, allowed: str) -> InvalidArgument:
    return InvalidArgument(f"{name}: {shown(value)} is not allowed; {allowed}")


def text(name: str, value: Any, *, empty: bool = True, nul: bool = False) -> str:
    """A string (``empty``: may be ""; ``nul``: may hold a NUL character, which no path or name can)."""
    if not isinstance(value, str):
        raise _refuse(name, value, "expected a string")
    if not empty and not value.strip():
        raise _refuse(name, value, "expected a non-empty string")
    if not nul and "\x00" in value:
        raise _refuse(name, value, "a NUL character cannot be part of a name or a path")
    return value


def optional_text(name: str, value: Any, *, empty: bool = True) -> str | None:
    """None or a string without NUL (see :func:`text`)."""
    return None if value is None else text(name, value, empty=empty)


def texts(name: str, value: Any, *, empty: bool = True) -> list[str]:
    """A list or tuple of strings without NUL (a lone string is refused: it is not a list of one)."""
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
        raise _refuse(name, value, "expected a list of strings")
    return [text(f"{name}[{position}]", item, empty=empty) for position, item in enumerate(value)]


def optional_texts(name: str, value: Any, *, empty: bool = True) -> list[str] | None:
    """None or a list of strings (see :func:`texts`)."""
    return None if value is None else texts(name, value, empty=empty)


def path(name: str, value: Any) -> Path:
    """A ``pathlib.Path`` or a non-empty string without NUL, as a Path."""
    if isinstance(value, Path):
        return Path(text(name, str(value), empty=False))
    return Path(text(name, value, empty=False))


def optional_path(name: str, value: Any) -> Path | None:
    """None or a path (see :func:`path`)."""
    return None if value is None else path(name, value)


def flag(name: str, value: Any) -> bool:
    """True or False (not 1, 0, "yes" or None: a truthy value of another type is a mistake)."""
    if not isinstance(value, bool):
        raise _refuse(name, value, "expected True or False")
    return value


def optional_flag(name: str, value: Any) -> bool | None:
    """None, True or False."""
    return None if value is None else flag(name, value)


def count(name: str, value: Any, *, minimum: int = 1, maximum: int = JAVA_INT_MAX) -> int:
    """A whole number from ``minimum`` to ``maximum`` (not a bool, not a float such as 2.0 or NaN)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise _refuse(name, value, f"expected a whole number from {minimum} to {maximum}")
    if not minimum <= value <= maximum:
        raise _refuse(name, value, f"expected a whole number from {minimum} to {maximum}")
    return value


def optional_count(name: str, value: Any, *, minimum: int = 1, maximum: int = JAVA_INT_MAX) -> int | None:
    """None or a whole number in range (see :func:`count`)."""
    return None if value is None else count(name, value, minimum=minimum, maximum=maximum)


def positive_number(name: str, value: Any, *, minimum: float = 0.0, unit: str = "") -> float:
    """A finite real number above ``minimum`` (an int or a float; not a bool, NaN or infinity)."""
    what = f"expected a finite number above {minimum:g}{f' {unit}' if unit else ''}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _refuse(name, value, what)
    try:
        number = float(value)
    except OverflowError:  # an int past a float's range
        raise _refuse(name, value, what) from None
    if not math.isfinite(number) or not number > minimum:
        raise _refuse(name, value, what)
    return number


def optional_positive_number(name: str, value: Any, *, minimum: float = 0.0, unit: str = "") -> float | None:
    """None or a finite number above ``minimum`` (see :func:`positive_number`)."""
    return None if value is None else positive_number(name, value, minimum=minimum, unit=unit)


def choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """One of ``choices`` (exactly: names are case-sensitive, as the CLI's)."""
    allowed = tuple(choices)
    if not isinstance(value, str) or value not in allowed:
        raise _refuse(name, value, f"choose one of {', '.join(allowed)}")
    return value


def optional_choice(name: str, value: Any, choices: Iterable[str]) -> str | None:
    """None or one of ``choices``."""
    return None if value is None else choice(name, value, choices)


def instance_of(name: str, value: Any, kind: type[T], what: str) -> T:
    """An object of ``kind`` (``what`` says how to make one)."""
    if not isinstance(value, kind):
        raise _refuse(name, value, f"expected {what}")
    return value


def optional_instance_of(name: str, value: Any, kind: type[T], what: str) -> T | None:
    """None or an object of ``kind``."""
    return None if value is None else instance_of(name, value, kind, what)


def optional_callback(name: str, value: Any) -> Callable[..., Any] | None:
    """None or something callable."""
    if value is not None and not callable(value):
        raise _refuse(name, value, "expected a function or None")
    return value


def optional_bytes(name: str, value: Any) -> bytes | None:
    """None or bytes (standard input as read)."""
    if value is not None and not isinstance(value, bytes):
        raise _refuse(name, value, "expected bytes or None")
    return value


def known_fields(name: str, given: Iterable[str], known: Iterable[str]) -> None:
    """Keyword arguments that name fields a request has (a misspelt one is not silently ignored)."""
    allowed = tuple(known)
    unknown = [field for field in given if field not in allowed]
    if unknown:
        raise InvalidArgument(
            f"{name}: unknown field{'s' if len(unknown) > 1 else ''} {', '.join(shown(f) for f in unknown)}; "
            f"known: {', '.join(allowed)}"
        )


Check = Callable[[str, Any], Any]


def fields_of(name: str, value: Any, checks: dict[str, Check]) -> None:
    """Each field of a request or options object, by its check (the name says ``Options.field``)."""
    for field, check in checks.items():
        check(f"{name}.{field}", getattr(value, field))


def pairs(name: str, value: Any) -> None:
    """A list or tuple of (key, value) string pairs (``--set KEY=VALUE``)."""
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
        raise _refuse(name, value, "expected a list of (key, value) pairs of strings")
    for position, pair in enumerate(value):
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise _refuse(f"{name}[{position}]", pair, "expected a (key, value) pair of strings")
        text(f"{name}[{position}] key", pair[0], empty=False)
        text(f"{name}[{position}] value", pair[1])
