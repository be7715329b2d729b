"""Strict JSON for the files lmi-config reads back and rewrites (cache-config files, a search's
results and journal): what one JSON reader accepts and another reads differently is refused,
naming the file and the line; and what lmi-config writes or prints as JSON (every ``--format
json`` and ``sarif`` document, the files it writes) is standard JSON that every reader accepts.

Python's ``json`` module alone reads ``NaN`` and ``Infinity`` (not JSON), turns ``1e400`` into
infinity and writes it back as ``Infinity``, raises a bare ``ValueError`` for an integer past
4,300 digits, and keeps only the last of two values under one key.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from typing import Any

from lmi_config.errors import InputError, OutputError

MAX_JSON_INTEGER = 2**63  # larger integers are no count, size or length any tool here writes


def parse_json(data: bytes | str, shown: str) -> Any:
    """Strict JSON: :class:`InputError` naming ``shown`` (and the line) for text that is not UTF-8 or
    not JSON, nesting too deep to parse, ``NaN`` / ``Infinity``, a number that overflows a float
    (``1e400``), an integer of 2**63 or more (Python refuses past 4,300 digits, a traceback) and a
    key twice in one object (the second value would hide the first)."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as error:
        raise InputError(f"{shown}: not UTF-8 text (byte {error.start}); fix or move it") from None

    def refuse(token: str, why: str) -> None:
        line = text.count("\n", 0, max(text.find(token), 0)) + 1
        raise _NumberRefused(f"{shown}:{line}: the number {token[:40]}{'…' if len(token) > 40 else ''} {why}")

    def integer(token: str) -> int:
        if len(token.lstrip("-")) > 19 or abs(int(token)) >= MAX_JSON_INTEGER:
            refuse(token, f"is too large (at most {MAX_JSON_INTEGER - 1}); fix or move the file")
        return int(token)

    def real(token: str) -> float:
        value = float(token)
        if value in (float("inf"), float("-inf")):
            refuse(token, "is beyond the range of a number (not finite); fix or move the file")
        return value

    def constant(token: str) -> float:
        refuse(token, "is not JSON (NaN and Infinity are not numbers in JSON); fix or move the file")
        raise AssertionError  # refuse raised

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        # a second value under one key would silently replace the first, and a rewrite lose it
        found: dict[str, Any] = {}
        for key, value in pairs:
            if key in found:
                quoted = json.dumps(key)
                first = text.find(quoted)
                line = text.count("\n", 0, max(text.find(quoted, first + 1), first, 0)) + 1
                raise _NumberRefused(f"{shown}:{line}: the key {quoted[:80]} appears twice; merge the two")
            found[key] = value
        return found

    try:
        return json.loads(
            text, parse_int=integer, parse_float=real, parse_constant=constant, object_pairs_hook=unique
        )
    except _NumberRefused as error:
        raise InputError(str(error)) from None
    except json.JSONDecodeError as error:
        raise InputError(f"{shown}:{error.lineno}: not valid JSON ({error.msg}); fix or move it") from None
    except RecursionError:
        raise InputError(f"{shown}: nested too deeply to read; fix or move it") from None


class _NumberRefused(ValueError):
    """A number or a key strict JSON reading refuses (raised from inside the parser's hooks)."""


def json_text(
    document: Any,
    *,
    indent: int | None = 2,
    ensure_ascii: bool = True,
    sort_keys: bool = False,
    separators: tuple[str, str] | None = None,
    default: Callable[[Any], Any] | None = None,
) -> str:
    """Standard JSON text of ``document`` (no newline at the end): every JSON document lmi-config
    writes or prints goes through here, so that none holds ``NaN`` or ``Infinity``, which Python's
    ``json`` writes by default and other readers (``jq``, JavaScript, Go, Jackson) refuse.

    A number that is not finite is a figure nothing should have produced: :class:`OutputError`
    naming where it is in the document, rather than a document that is not JSON."""
    try:
        return json.dumps(
            document,
            indent=indent,
            ensure_ascii=ensure_ascii,
            sort_keys=sort_keys,
            separators=separators,
            default=default,
            allow_nan=False,
        )
    except ValueError as error:
        if "Out of range float" not in str(error):
            raise
        where = non_finite_place(document) or "a value"
        raise OutputError(
            f"cannot write the JSON document: {where} is not a finite number (JSON has no NaN or "
            "Infinity); this is a bug in lmi-config, please report it with the command that printed it"
        ) from None


def dump_json(document: Any, *, indent: int | None = 2, **options: Any) -> str:
    """:func:`json_text` ended by a newline: a document as a file or standard output holds it."""
    return json_text(document, indent=indent, **options) + "\n"


def non_finite_place(document: Any, place: str = "$") -> str | None:
    """Where the first NaN or infinity of ``document`` is, as a JSON path (``$.candidates[0].cost``)."""
    if isinstance(document, float) and not math.isfinite(document):
        return place
    if isinstance(document, dict):
        items: Iterable[tuple[str, Any]] = ((f"{place}.{key}", value) for key, value in document.items())
    elif isinstance(document, list | tuple):
        items = ((f"{place}[{position}]", value) for position, value in enumerate(document))
    else:
        return None
    for inner, value in items:
        found = non_finite_place(value, inner)
        if found is not None:
            return found
    return None
