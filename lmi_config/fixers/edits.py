"""The data of a fix: line edits of one file, and the key-level changes they were made from."""

import re
from typing import NamedTuple

_LINE_END = re.compile(r"(\r\n|\r|\n)")


class Edit(NamedTuple):
    """One physical-line edit; ``line`` is 1-based (for ``append``, the line count of the file)."""

    line: int
    action: str  # replace | remove | insert_before | append
    text: str = ""


class Change(NamedTuple):
    """A change of the configuration by key: set a value, remove the key, or rename it."""

    action: str  # set | remove | rename
    key: str  # the canonical key (option.tensor_parallel_degree)
    value: str = ""  # set: the new value
    new_key: str = ""  # rename: the key it becomes

    def describe(self) -> str:
        """``set option.dtype=fp16`` / ``remove option.x`` / ``rename option.a to option.b``."""
        if self.action == "set":
            return f"set {self.key}={self.value}"
        if self.action == "rename":
            return f"rename {self.key} to {self.new_key}"
        return f"remove {self.key}"


class Fix(NamedTuple):
    """A judged fix: the edits of the file that holds the finding's key, and what they mean.

    ``safe``: the container reads what the user meant (applied by ``--fix``); unsafe fixes change
    what the container does and need ``--unsafe-fixes``. ``alternatives`` are the descriptions of
    other fixes the judge also accepted for the same finding (other TP degrees, other lengths).
    """

    code: str
    key: str | None
    path: str
    edits: tuple[Edit, ...]
    safe: bool
    description: str
    changes: tuple[Change, ...] = ()
    alternatives: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        """The ``fix`` object of a finding in ``--format json``."""
        return {
            "description": self.description,
            "applicability": "safe" if self.safe else "unsafe",
            "path": self.path,
            "edits": [{"line": edit.line, "action": edit.action, "text": edit.text} for edit in self.edits],
            "changes": [change._asdict() for change in self.changes],
            "alternatives": list(self.alternatives),
        }


def describe_changes(changes: tuple[Change, ...]) -> str:
    """The changes of one fix in words, joined by ``and``."""
    return " and ".join(change.describe() for change in changes)


def split_lines(text: str) -> list[str]:
    """Physical lines with their endings kept (``a\\r\\n`` stays ``a\\r\\n``)."""
    parts = _LINE_END.split(text)
    lines = [
        parts[index] + (parts[index + 1] if index + 1 < len(parts) else "")
        for index in range(0, len(parts), 2)
    ]
    return lines if lines and lines[-1] else lines[:-1]


def line_ending(line: str) -> str:
    """The ending of a physical line (empty for a last line without one)."""
    match = _LINE_END.search(line)
    return match.group(0) if match else ""


_split_cache: tuple[str, list[str]] = ("", [])


def physical_line(text: str, line: int) -> str:
    """Physical line ``line`` (1-based) without its ending, empty when there is none."""
    global _split_cache
    if _split_cache[0] is not text:  # fixers of one file ask for its lines once per finding
        _split_cache = (text, split_lines(text))
    lines = _split_cache[1]
    return lines[line - 1].rstrip("\r\n") if 0 < line <= len(lines) else ""


def apply_edits(text: str, edits: tuple[Edit, ...] | list[Edit]) -> str:
    """``text`` with the edits applied (line numbers refer to ``text``); line endings are kept."""
    lines = split_lines(text)
    default_end = line_ending(lines[0]) if lines and line_ending(lines[0]) else "\n"
    by_line: dict[int, list[Edit]] = {}
    for edit in edits:
        by_line.setdefault(edit.line, []).append(edit)
    out: list[str] = []
    for number, line in enumerate(lines, start=1):
        end = line_ending(line) or default_end
        for edit in by_line.get(number, []):
            if edit.action == "insert_before":
                out.append(edit.text + end)
        actions = [edit for edit in by_line.get(number, []) if edit.action in ("replace", "remove")]
        if any(edit.action == "remove" for edit in actions):
            continue
        replaced = [edit for edit in actions if edit.action == "replace"]
        out.append(replaced[-1].text + line_ending(line) if replaced else line)
    appended = [edit.text for edit in edits if edit.action == "append"]
    if appended and out and not line_ending(out[-1]):
        out[-1] += default_end  # a last line without an ending gets one before the new line
    out.extend(text_line + default_end for text_line in appended)
    return "".join(out)
