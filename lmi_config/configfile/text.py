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


_YAML_COMPACT_INDICATOR = re.compile(r"([-?:])(?:[ \t]+|$)")
_YAML_BLOCK_SCALAR = re.compile(r"(?:^|[\s:-])[|>][0-9+-]*\s*(?:#.*)?$")


def yaml_nesting_bound(text: str) -> tuple[int, int]:
    """An upper bound on how deeply YAML text nests, and the 1-based line where it is reached.

    Read from the text alone, before any YAML parser sees it, so that the refusal of a deep
    document is ours with every parser version (libyaml stops flow nesting at 1000 levels with
    a message of its own, and its scanner reads ahead of the events).

    Block collections nest by column: a nested one starts at a greater column, except a sequence
    that is a mapping's value, which may share the mapping's column. So at most two block levels
    per open column; the columns are those of the lines' indentation and of the content after
    compact ``-`` / ``?`` / ``:`` indicators (``- - a``, ``- key: value``). Flow collections add the
    ``[`` / ``{`` open outside quotes and comments, on top of the block depth where they opened.
    Columns are counted on every line, even one that looks inside a flow collection: a ``[`` in a
    plain scalar (``:[: …``) opens none, and must not hide the block lines after it. A block
    scalar's text (``|`` / ``>``) is skipped. Every approximation can only make the bound larger.
    """
    deepest, deepest_line = 0, 0
    columns: list[int] = []
    flow_depth = 0
    quote = ""  # the quote character a multi-line quoted scalar is still open with
    block_scalar_parent: int | None = None
    block_depth = 0  # where the current flow collection (if any) started
    for number, line in enumerate(split_lines(text), start=1):
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        if block_scalar_parent is not None:
            if not stripped.strip() or indent > block_scalar_parent:
                continue
            block_scalar_parent = None
        if not stripped.strip() or (stripped.startswith("#") and not quote):
            continue
        position = 0
        while columns and columns[-1] > indent:
            columns.pop()
        if not columns or columns[-1] < indent:
            columns.append(indent)
        while match := _YAML_COMPACT_INDICATOR.match(stripped, position):
            position = match.end()
            columns.append(indent + position)
        line_depth = 2 * len(columns)
        if not quote and flow_depth == 0:
            block_depth = line_depth
        flow_depth, quote, most_open = _scan_flow(stripped, position, flow_depth, quote)
        line_peak = max(line_depth, block_depth + most_open)
        if line_peak > deepest:
            deepest, deepest_line = line_peak, number
        if not quote and flow_depth == 0 and _YAML_BLOCK_SCALAR.search(stripped):
            block_scalar_parent = indent
    return deepest, deepest_line


def _scan_flow(line: str, start: int, flow_depth: int, quote: str) -> tuple[int, str, int]:
    """Brackets of one YAML line outside quotes and comments: (depth after, open quote, most open)."""
    most_open = flow_depth
    index = start
    while index < len(line):
        character = line[index]
        if quote:
            if character == quote:
                if quote == "'" and line.startswith("''", index):
                    index += 1
                else:
                    quote = ""
            elif character == "\\" and quote == '"':
                index += 1
        elif character in "\"'" and (index == start or line[index - 1] in " \t[{,:"):
            quote = character
        elif character == "#" and (index == 0 or line[index - 1] in " \t"):
            break
        elif character in "[{":
            flow_depth += 1
            most_open = max(most_open, flow_depth)
        elif character in "]}":
            flow_depth = max(0, flow_depth - 1)
        index += 1
    return flow_depth, quote, most_open
