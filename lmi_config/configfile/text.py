"""Small text helpers shared by the readers."""

from __future__ import annotations

import contextlib
import gc
import itertools
import re
from collections.abc import Iterator

MAX_JSON_DEPTH = 64  # Environment JSON is 1-4 levels deep, a model's config.json rarely over 5
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """Split on ``\\n``, ``\\r`` and ``\\r\\n`` only, as Java's ``LineReader`` does.

    ``str.splitlines`` would also split on ``\\v``, ``\\x1c``… and ``\\x85``, which Java keeps
    inside a line.
    """
    lines = text.split("\n") if "\r" not in text else _LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def json_nesting_depth(text: str) -> int:
    """How deeply arrays and objects nest in JSON text, found without parsing it (strings skipped).

    Checked before ``json.loads``, whose recursion fails on a document nested ~1000 deep.
    """
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    if not brackets:
        return 0
    return max(itertools.accumulate(map(_BRACKET_STEP.__getitem__, brackets)))


def shorten(text: str, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis, for messages about huge values."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building records that hold no cycles.

    A file of a million lines makes millions of tuples; each 700 allocations start a collection,
    and the older generations' collections walk everything allocated so far (about half of the
    time of reading such a file). Nothing is left uncollected: no cycle is made meanwhile, and
    the collector runs again afterwards.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
