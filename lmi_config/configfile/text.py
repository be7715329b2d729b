"""Small text helpers shared by the readers."""

from __future__ import annotations

import re

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """Split on ``\\n``, ``\\r`` and ``\\r\\n`` only, as Java's ``LineReader`` does.

    ``str.splitlines`` would also split on ``\\v``, ``\\x1c``… and ``\\x85``, which Java keeps
    inside a line.
    """
    lines = _LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines
