"""Fixes: line edits that remove a finding, judged before they are offered (``lint --fix`` / ``--diff``).

A fix is data: edits of physical lines (replace, remove, insert a line before) in the file that holds
the finding. Before a fix is offered, the file is linted again with it applied: the finding must be
gone and no error may appear that was not there. Fixes are *safe* when the container reads the same
configuration the user meant (a duplicate that never counted removed, blanks the container would have
kept stripped, a comment moved off a value); *unsafe* when they change what the container does in a
way a user may rely on (a misspelt key renamed, so the option starts to count) and need
``--unsafe-fixes``. Comments, order, quoting, line endings and the file's mode are kept; files are
written atomically; fixing runs to a fixed point, so a second ``--fix`` changes nothing.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from lmi_config.configfile.loader import SourceFile as Source
    from lmi_config.configfile.properties import PropertyEntry
    from lmi_config.lint import LintOptions, LintResult
    from lmi_config.rules.base import Finding

_LINE_END = re.compile(r"(\r\n|\r|\n)")
MAX_PASSES = 10


class Edit(NamedTuple):
    line: int  # 1-based physical line
    action: str  # replace | remove | insert_before
    text: str = ""


class Fix(NamedTuple):
    code: str
    key: str | None
    edits: tuple[Edit, ...]
    safe: bool
    description: str


@dataclass
class FixResult:
    """Per file: the original and fixed text; per rule: how many fixes were applied."""

    changed: dict[str, tuple[str, str]] = field(default_factory=dict)
    applied: Counter[str] = field(default_factory=Counter)


def _lines(text: str) -> list[str]:
    """Physical lines with their endings kept (``a\\r\\n`` stays ``a\\r\\n``)."""
    parts = _LINE_END.split(text)
    lines = [
        parts[index] + (parts[index + 1] if index + 1 < len(parts) else "")
        for index in range(0, len(parts), 2)
    ]
    return lines if lines and lines[-1] else lines[:-1]


def _ending(line: str) -> str:
    match = _LINE_END.search(line)
    return match.group(0) if match else ""


def apply_edits(text: str, edits: tuple[Edit, ...] | list[Edit]) -> str:
    """``text`` with the edits applied (line numbers refer to ``text``); line endings are kept."""
    lines = _lines(text)
    default_end = _ending(lines[0]) if lines else "\n"
    by_line: dict[int, list[Edit]] = {}
    for edit in edits:
        by_line.setdefault(edit.line, []).append(edit)
    out: list[str] = []
    for number, line in enumerate(lines, start=1):
        end = _ending(line) or default_end
        for edit in by_line.get(number, []):
            if edit.action == "insert_before":
                out.append(edit.text + end)
        actions = [edit for edit in by_line.get(number, []) if edit.action != "insert_before"]
        if any(edit.action == "remove" for edit in actions):
            continue
        replaced = [edit for edit in actions if edit.action == "replace"]
        out.append(replaced[-1].text + _ending(line) if replaced else line)
    return "".join(out)


# --- the fixers: one per rule that can offer a fix --------------------------------------------------


def _physical(source: Source, line: int) -> str:
    lines = _lines(source.text)
    return lines[line - 1].rstrip("\r\n") if 0 < line <= len(lines) else ""


def _property_entry(source: Source, finding: Finding) -> PropertyEntry | None:
    document = source.properties
    if document is None:
        return None
    return next(
        (entry for entry in document.entries if entry.line == finding.line and entry.key == finding.key), None
    )


def _duplicate_key(source: Source, finding: Finding) -> Fix | None:
    """LMI002: remove every earlier assignment of the key (only the last one ever counted)."""
    assignments = [line for key, _, line in source.assignments() if key == finding.key and line is not None]
    if len(assignments) < 2 or finding.line != assignments[-1] and finding.line not in assignments:
        return None
    document = source.properties
    if document is not None and any(
        entry.continued for entry in document.entries if entry.key == finding.key
    ):
        return None
    removed = tuple(Edit(line, "remove") for line in assignments[:-1])
    return Fix(
        "LMI002", finding.key, removed, True, f"remove the assignments of {finding.key} that never count"
    )


def _trailing_whitespace(source: Source, finding: Finding) -> Fix | None:
    """LMI003: strip the blanks the container would keep in the value."""
    entry = _property_entry(source, finding)
    if entry is None or entry.continued or finding.line is None:
        return None
    line = _physical(source, finding.line)
    return Fix(
        "LMI003",
        finding.key,
        (Edit(finding.line, "replace", line.rstrip(" \t\f")),),
        True,
        "strip trailing blanks",
    )


def _inline_comment(source: Source, finding: Finding) -> Fix | None:
    """LMI004: keep the value, move the comment to its own line above."""
    entry = _property_entry(source, finding)
    if entry is None or entry.continued or finding.line is None:
        return None
    line = _physical(source, finding.line)
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
    return Fix("LMI004", finding.key, edits, True, "move the comment to its own line")


def _separator_style(source: Source, finding: Finding) -> Fix | None:
    """LMI005: ``key: value`` / ``key value`` → ``key=value`` (the server reads both alike)."""
    entry = _property_entry(source, finding)
    if entry is None or entry.continued or entry.separator not in (":", " ") or finding.line is None:
        return None
    line = _physical(source, finding.line)
    if not line.endswith(entry.raw_value):
        return None
    head = line[: len(line) - len(entry.raw_value)].rstrip(" \t\f")
    head = head[:-1].rstrip(" \t\f") if head.endswith(":") else head
    return Fix(
        "LMI005",
        finding.key,
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
    line = _physical(source, finding.line)
    indent = line[: len(line) - len(line.lstrip())]
    if not suggestion or not line[len(indent) :].startswith(finding.key):
        return None
    renamed = indent + suggestion + line[len(indent) + len(finding.key) :]
    return Fix(
        "LMI101", finding.key, (Edit(finding.line, "replace", renamed),), False, f"rename to {suggestion}"
    )


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


FIXERS: dict[str, Callable[[Source, Finding], Fix | None]] = {
    "LMI002": _duplicate_key,
    "LMI003": _trailing_whitespace,
    "LMI004": _inline_comment,
    "LMI005": _separator_style,
    "LMI101": _unknown_option,
}


# --- judging and applying --------------------------------------------------------------------------


def _sources(result: LintResult) -> dict[str, Source]:
    return {source.path: source for unit in result.units for source in unit.sources}


def candidate_fixes(result: LintResult, unsafe: bool) -> Iterator[tuple[Source, Finding, Fix]]:
    """The fixes the fixers propose for the findings of ``result`` (not judged yet)."""
    sources = _sources(result)
    for finding in result.findings:
        fixer = FIXERS.get(finding.code)
        source = sources.get(finding.path)
        if fixer is None or source is None or source.kind not in ("properties", "env"):
            continue
        if source.raw != source.text.encode("utf-8", errors="surrogatepass"):
            continue  # bytes the text does not carry back exactly (non-UTF-8, latin-1 beyond ASCII): left alone
        fix = fixer(source, finding)
        if fix is not None and (fix.safe or unsafe):
            yield source, finding, fix


def _verdict(text: str, source: Source, options: LintOptions) -> Counter[tuple[str, str | None, str]]:
    from pathlib import Path

    from lmi_config.lint import lint_text

    result = lint_text(text, source.kind, options, name=source.path, directory=Path(source.path).parent)
    return Counter((finding.code, finding.key, finding.severity) for finding in result.findings)


def _accepted(source: Source, fix: Fix, before: Counter, options: LintOptions) -> bool:
    after = _verdict(apply_edits(source.text, fix.edits), source, options)
    gone = sum(count for (code, key, _), count in after.items() if code == fix.code and key == fix.key) < sum(
        count for (code, key, _), count in before.items() if code == fix.code and key == fix.key
    )
    new_errors = [item for item, count in after.items() if item[2] == "error" and count > before.get(item, 0)]
    return gone and not new_errors


def fix_once(result: LintResult, options: LintOptions, unsafe: bool) -> dict[str, tuple[str, list[Fix]]]:
    """One pass: per file, the text with every accepted, non-overlapping fix applied, and the fixes."""
    fixed: dict[str, tuple[str, list[Fix]]] = {}
    by_file: dict[str, list[tuple[Source, Fix]]] = {}
    for source, _finding, fix in candidate_fixes(result, unsafe):
        by_file.setdefault(source.path, []).append((source, fix))
    for path, proposals in by_file.items():
        source = proposals[0][0]
        before = _verdict(source.text, source, options)
        taken: list[Fix] = []
        touched: set[int] = set()
        for _, fix in proposals:
            lines = {edit.line for edit in fix.edits}
            if lines & touched or not _accepted(source, fix, before, options):
                continue  # an overlapping fix waits for the next pass
            taken.append(fix)
            touched |= lines
        if taken:
            fixed[path] = (
                apply_edits(source.text, tuple(edit for fix in taken for edit in fix.edits)),
                taken,
            )
    return fixed


def fix_to_fixed_point(result: LintResult, options: LintOptions, unsafe: bool) -> FixResult:
    """Fix pass after pass (each judged) until nothing is left to fix; nothing is written."""
    from lmi_config.lint import lint_text

    originals = {path: source.text for path, source in _sources(result).items()}
    kinds = {path: source.kind for path, source in _sources(result).items()}
    outcome = FixResult()
    current: dict[str, str] = {}
    for _ in range(MAX_PASSES):
        fixed = fix_once(result, options, unsafe)
        if not fixed:
            break
        for path, (text, fixes) in fixed.items():
            current[path] = text
            outcome.applied.update(fix.code for fix in fixes)
        results = [lint_text(text, kinds[path], options, name=path) for path, text in current.items()]
        result = results[0]
        for other in results[1:]:
            result.findings.extend(other.findings)
            result.units.extend(other.units)
    outcome.changed = {
        path: (originals[path], text) for path, text in current.items() if text != originals[path]
    }
    return outcome
