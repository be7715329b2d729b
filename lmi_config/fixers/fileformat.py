"""Fixers of the format rules: line edits that keep the value the user meant.

Safe fixes leave the configuration the container reads as the user meant it (a duplicate that never
counted removed, blanks the container would have kept stripped, a comment moved off a value);
renaming a misspelt key is unsafe: the option starts to count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from lmi_config.fixers.edits import Edit, Fix, physical_line

if TYPE_CHECKING:
    from lmi_config.configfile.loader import SourceFile as Source
    from lmi_config.configfile.properties import PropertyEntry
    from lmi_config.rules.base import Finding


_entries_cache: tuple[object, dict[tuple[int, str], PropertyEntry]] = (None, {})


def _property_entry(source: Source, finding: Finding) -> PropertyEntry | None:
    """The entry a finding is on (its line and key); indexed once per document, as a file of
    thousands of findings asks once per finding."""
    global _entries_cache
    document = source.properties
    if document is None or finding.line is None or finding.key is None:
        return None
    if _entries_cache[0] is not document:
        index: dict[tuple[int, str], PropertyEntry] = {}
        for entry in document.entries:
            index.setdefault((entry.line, entry.key), entry)
        _entries_cache = (document, index)
    return _entries_cache[1].get((finding.line, finding.key))


def _fix(source: Source, finding: Finding, edits: tuple[Edit, ...], safe: bool, description: str) -> Fix:
    return Fix(finding.code, finding.key, source.path, edits, safe, description)


def _duplicate_key(source: Source, finding: Finding) -> Fix | None:
    """LMI002: remove every earlier assignment of the key (only the last one ever counted)."""
    assignments = [line for key, _, line in source.assignments() if key == finding.key and line is not None]
    if len(assignments) < 2 or finding.line not in assignments:
        return None
    document = source.properties
    if document is not None and any(
        entry.continued for entry in document.entries if entry.key == finding.key
    ):
        return None
    removed = tuple(Edit(line, "remove") for line in assignments[:-1])
    return _fix(source, finding, removed, True, f"remove the assignments of {finding.key} that never count")


def _trailing_whitespace(source: Source, finding: Finding) -> Fix | None:
    """LMI003: strip the blanks the container would keep in the value."""
    entry = _property_entry(source, finding)
    if entry is None or entry.continued or finding.line is None:
        return None
    line = physical_line(source.text, finding.line)
    return _fix(
        source, finding, (Edit(finding.line, "replace", line.rstrip(" \t\f")),), True, "strip trailing blanks"
    )


def _inline_comment(source: Source, finding: Finding) -> Fix | None:
    """LMI004: keep the value, move the comment to its own line above."""
    entry = _property_entry(source, finding)
    if entry is None or entry.continued or finding.line is None:
        return None
    line = physical_line(source.text, finding.line)
    if not line.endswith(entry.raw_value):
        return None
    from lmi_config.rules.fileformat import INLINE_COMMENT  # what the inline-comment rule reports

    match = INLINE_COMMENT.search(entry.raw_value)
    if match is None:
        return None
    prefix = line[: len(line) - len(entry.raw_value)]
    kept = entry.raw_value[: match.start()].rstrip()
    comment = entry.raw_value[match.start() :].strip()
    indent = line[: len(line) - len(line.lstrip())]
    edits = (
        Edit(finding.line, "insert_before", indent + comment),
        Edit(finding.line, "replace", prefix + kept),
    )
    return _fix(source, finding, edits, True, "move the comment to its own line")


def _separator_style(source: Source, finding: Finding) -> Fix | None:
    """LMI005: write ``key: value`` and ``key value`` as ``key=value`` (the server reads them alike)."""
    entry = _property_entry(source, finding)
    if entry is None or entry.continued or entry.separator not in (":", " ") or finding.line is None:
        return None
    line = physical_line(source.text, finding.line)
    if not line.endswith(entry.raw_value):
        return None
    head = line[: len(line) - len(entry.raw_value)].rstrip(" \t\f")
    head = head[:-1].rstrip(" \t\f") if head.endswith(":") else head
    return _fix(
        source,
        finding,
        (Edit(finding.line, "replace", f"{head}={entry.raw_value}"),),
        True,
        "write key=value",
    )


def _unknown_option(source: Source, finding: Finding) -> Fix | None:
    """LMI101: rename a misspelt key to the one it was meant to be (unsafe: the option starts to count)."""
    from lmi_config.rules.suggestions import suggest

    entry = _property_entry(source, finding)
    if entry is None or finding.key is None or finding.line is None:
        return None
    suggestion = suggest(finding.key)
    if not suggestion or not is_misspelling(finding.key, suggestion):
        return None  # a different option, not a slip of the keyboard: the message names it, no rename
    line = physical_line(source.text, finding.line)
    indent = line[: len(line) - len(line.lstrip())]
    if not line[len(indent) :].startswith(finding.key):
        return None
    renamed = indent + suggestion + line[len(indent) + len(finding.key) :]
    return _fix(source, finding, (Edit(finding.line, "replace", renamed),), False, f"rename to {suggestion}")


def _edit_distance(first: str, second: str) -> int:
    """Optimal string alignment distance (insert, delete, substitute, swap neighbours)."""
    previous_previous: list[int] = []
    previous = list(range(len(second) + 1))
    for i, a in enumerate(first, start=1):
        current = [i] + [0] * len(second)
        for j, b in enumerate(second, start=1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b))
            if i > 1 and j > 1 and a == second[j - 2] and first[i - 2] == b:
                current[j] = min(current[j], previous_previous[j - 2] + 1)
        previous_previous, previous = previous, current
    return previous[-1]


def is_misspelling(written: str, known: str) -> bool:
    """Whether ``written`` is ``known`` with a slip: case or ``_`` only, or one keystroke apart (a letter missing, extra, wrong, or two swapped)."""

    def folded(key: str) -> str:
        return key.replace("_", "").lower()

    return folded(written) == folded(known) or _edit_distance(written, known) <= 1


FORMAT_FIXERS: dict[str, Callable[[Source, Finding], Fix | None]] = {
    "LMI002": _duplicate_key,
    "LMI003": _trailing_whitespace,
    "LMI004": _inline_comment,
    "LMI005": _separator_style,
    "LMI101": _unknown_option,
}
UNSAFE_FORMAT_FIXES = frozenset({"LMI101"})  # the fixes above made with safe=False
