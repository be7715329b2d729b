"""Baselines: record today's findings, then report only new ones (``lint --write-baseline`` / ``--baseline``).

A finding is recorded by its file (relative to the baseline file's directory), rule code, key and a
fingerprint of the text of the entry it is on — not by line number — so a finding that moves when
lines are inserted above it stays baselined, and one whose value changes is new again. The text is
read as the file's reader reads it: its lines split where the reader splits them (``\\n``, ``\\r``,
``\\r\\n``; ``\\n`` alone in JSON), every physical line of an entry that spans several (a backslash
continuation, a quoted value over lines, a JSON value below its key), less only what the reader
skips, as the bytes in the file. A finding not tied to a line is fingerprinted by its message with
the numbers taken out; one on a line that cannot be read again (standard input) by its whole
message. Each recorded finding accepts one finding (the same finding twice in a file needs two
records).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from lmi_config.configfile.envfile import split_json_lines
from lmi_config.configfile.loader import SourceFile, read_file
from lmi_config.configfile.properties import BLANKS
from lmi_config.configfile.text import shorten, split_lines
from lmi_config.errors import InputError
from lmi_config.io import MAX_INPUT_BYTES
from lmi_config.rules.base import Finding
from lmi_config.strict_json import dump_json

FORMAT_VERSION = 1
# one finding per byte of the largest file lint reads: a larger count is none lint --write-baseline wrote
MAX_COUNT = MAX_INPUT_BYTES
_FIELDS = ("path", "code", "key", "fingerprint", "count")
_FINGERPRINT = re.compile(r"[0-9a-f]{16}")
_NUMBERS = re.compile(r"\d+")
_JSON_BLANKS = re.compile(r"[ \t\n\r]*")
_WRITE_AGAIN = "write the baseline again with lint --write-baseline"

Identity = tuple[str, str, str, str]  # path, code, key ("" for none), fingerprint


class _Reading(NamedTuple):
    """One configuration file as its reader reads it."""

    lines: list[bytes]  # every physical line less what the reader skips, as the bytes in the file
    spans: dict[int, tuple[int, int]]  # a line of an entry over several lines -> its first and last line


def _reading(source: SourceFile) -> _Reading:
    """The lines of ``source`` as its reader split them, and the entries that span lines."""
    if source.properties is not None:
        document = source.properties
        records = [(entry.line, entry.end_line) for entry in document.entries]
        records += [(error.line, error.end_line) for error in document.errors]
        spans = _spans(records)
        # Properties.load skips the blanks that start each physical line and keeps the rest;
        # its text is ISO-8859-1, one character per byte
        lines = [line.lstrip(BLANKS).encode("latin-1") for line in split_lines(source.text)]
        return _Reading(lines, spans)
    env = source.env
    records = [
        (record.line, record.end_line)
        for record in [*(env.entries if env else ()), *(env.errors if env else ())]
        if record.line is not None and record.end_line is not None
    ]
    spans = _spans(records)
    # decoded so that each byte comes back as it was: the reader's U+FFFD for every byte that is not
    # UTF-8 would make two different files read the same
    text = source.raw.decode("utf-8", "surrogateescape")
    if source.kind == "json":  # blanks between JSON tokens are nothing; a string cannot span lines
        physical = [line.strip(" \t\r") for line in split_json_lines(text)]
    else:  # the reader strips a setting's line; the next lines of a quoted value are part of the value
        inside_value = {number for number, (first, _) in spans.items() if number != first}
        physical = [
            line if number in inside_value else line.strip()
            for number, line in enumerate(split_lines(text), start=1)
        ]
    return _Reading([line.encode("utf-8", "surrogateescape") for line in physical], spans)


def _spans(records: Iterable[tuple[int, int]]) -> dict[int, tuple[int, int]]:
    spans: dict[int, tuple[int, int]] = {}
    for first, last in records:
        if last > first:
            spans.update(dict.fromkeys(range(first, last + 1), (first, last)))
    return spans


def _entry_text(path: str, line: int | None, cache: dict[str, _Reading | None]) -> bytes | None:
    """Every physical line of the entry on ``line`` of ``path``; None when not tied to a readable line."""
    if line is None or path.startswith("<") or path == "-":
        return None
    if path not in cache:
        try:
            cache[path] = _reading(read_file(Path(path), path))
        except (InputError, ValueError):  # ValueError: a name the system refuses (a NUL in it)
            cache[path] = None
    reading = cache[path]
    if reading is None or not 0 < line <= len(reading.lines):
        return None
    first, last = reading.spans.get(line, (line, line))
    return b"\n".join(reading.lines[first - 1 : last])


def _fingerprint(finding: Finding, text: bytes | None) -> str:
    if text is not None:
        basis = text
    elif finding.line is None:
        basis = _NUMBERS.sub("#", finding.message).encode("utf-8", "surrogatepass")
    else:  # a line that cannot be read again: every number of the message may be the changed value
        basis = finding.message.encode("utf-8", "surrogatepass")
    return hashlib.sha256(basis).hexdigest()[:16]


def _directory_resolved(path: str) -> str:
    """``path`` made absolute with the links of its directory resolved and its own name kept, so
    that one file reached through a linked directory or its target is one file."""
    absolute = os.path.abspath(path)
    return os.path.join(os.path.realpath(os.path.dirname(absolute)), os.path.basename(absolute))


def _relative(path: str, base: str) -> str:
    if path in ("-", "<stdin>") or path.startswith("<"):
        return path
    resolved = _directory_resolved(path)
    try:
        return Path(os.path.relpath(resolved, base)).as_posix()
    except ValueError:  # another drive than the baseline's (Windows): no relative path
        return Path(resolved).as_posix()


def _identity(finding: Finding, base: str, cache: dict[str, _Reading | None]) -> Identity:
    text = _entry_text(finding.path, finding.line, cache)
    return (_relative(finding.path, base), finding.code, finding.key or "", _fingerprint(finding, text))


def _base(baseline_path: str | os.PathLike[str]) -> str:
    return os.path.dirname(_directory_resolved(os.fspath(baseline_path)))


def baseline_document(findings: Iterable[Finding], baseline_path: Path) -> str:
    """The JSON text of a baseline holding ``findings`` (sorted, so the file diffs well)."""
    base = _base(baseline_path)
    cache: dict[str, _Reading | None] = {}
    counted = Counter(_identity(finding, base, cache) for finding in findings)
    entries = [
        {"path": path, "code": code, "key": key or None, "fingerprint": fingerprint, "count": count}
        for (path, code, key, fingerprint), count in sorted(counted.items())
    ]
    return dump_json({"lmi_config_baseline": FORMAT_VERSION, "findings": entries}, indent=1)


class _Malformed(ValueError):
    """What is wrong in a baseline, and where: a top-level field or the number of a finding entry."""

    def __init__(self, problem: str, where: str | int, advice: str = _WRITE_AGAIN) -> None:
        super().__init__(problem)
        self.where = where  # "" for the document itself
        self.advice = advice


def load_baseline(path: str) -> Counter[Identity]:
    """The recorded findings of a baseline file; :class:`InputError` naming the file, the line, the
    entry and what to do for a file that is not one :func:`baseline_document` writes."""
    from lmi_config.io import read_bounded
    from lmi_config.strict_json import parse_json

    try:
        raw = read_bounded(path)
    except InputError as error:
        raise InputError(f"{error}; --baseline takes a file that lint --write-baseline wrote") from None
    try:
        # strict: a count of 1e400 read as infinity was a traceback when made an integer
        document = parse_json(raw, path)
    except InputError as error:
        raise InputError(f"{error}; or {_WRITE_AGAIN}") from None
    try:
        return _recorded(document)
    except _Malformed as error:
        text = raw.decode("utf-8")  # parse_json read it as UTF-8
        line = _line_of(text, error.where)
        place = f"{path}:{line}" if line is not None else path
        entry = f'entry {error.where} of "findings": ' if isinstance(error.where, int) else ""
        raise InputError(f"{place}: {entry}{error}; {error.advice}") from None


def _recorded(document: Any) -> Counter[Identity]:
    if not isinstance(document, dict):
        raise _Malformed(f"a JSON {_kind(document)}, not an lmi-config baseline (a JSON object)", "")
    if "lmi_config_baseline" not in document:
        raise _Malformed(f'not an lmi-config baseline (no "lmi_config_baseline": {FORMAT_VERSION})', "")
    version = document["lmi_config_baseline"]
    if type(version) is int and version > FORMAT_VERSION:
        raise _Malformed(
            f"a baseline of format {version}, newer than this lmi-config reads ({FORMAT_VERSION})",
            "lmi_config_baseline",
            f"upgrade lmi-config, or {_WRITE_AGAIN}",
        )
    if type(version) is not int or version != FORMAT_VERSION:
        raise _Malformed(
            f'"lmi_config_baseline" is {_shown(version)}, not {FORMAT_VERSION}', "lmi_config_baseline"
        )
    for name in document:
        if name not in ("lmi_config_baseline", "findings"):
            raise _Malformed(
                f'unknown field {_shown(name)} (a baseline holds "lmi_config_baseline" and "findings")', name
            )
    if "findings" not in document:
        raise _Malformed('has no "findings" list', "")
    findings = document["findings"]
    if not isinstance(findings, list):
        raise _Malformed(f'"findings" is a JSON {_kind(findings)}, not a list', "findings")
    recorded: Counter[Identity] = Counter()
    first_entry: dict[Identity, int] = {}
    for number, entry in enumerate(findings, start=1):
        identity, count = _entry(entry, number)
        if identity in first_entry:
            raise _Malformed(
                f"repeats entry {first_entry[identity]} (the same path, code, key and fingerprint)", number
            )
        first_entry[identity] = number
        recorded[identity] = count
    return recorded


def _entry(entry: Any, number: int) -> tuple[Identity, int]:
    """One entry's identity and count, or :class:`_Malformed` saying what is wrong with it."""
    if not isinstance(entry, dict):
        raise _Malformed(f"a JSON {_kind(entry)}, not an object with {', '.join(_FIELDS)}", number)
    for name in entry:
        if name not in _FIELDS:
            raise _Malformed(f"unknown field {_shown(name)} (the fields are {', '.join(_FIELDS)})", number)
    path, code, fingerprint = (_string(entry, name, number) for name in ("path", "code", "fingerprint"))
    key = entry.get("key")
    if key is not None:
        key = _string(entry, "key", number, empty=True)
    if not _FINGERPRINT.fullmatch(fingerprint):
        raise _Malformed(f'"fingerprint" is {_shown(fingerprint)}, not 16 hexadecimal digits', number)
    count = entry.get("count", 1)
    if type(count) is not int or not 1 <= count <= MAX_COUNT:
        raise _Malformed(f'"count" is {_shown(count)}, not a whole number from 1 to {MAX_COUNT}', number)
    return (path, code, key or "", fingerprint), count


def _string(entry: dict[str, Any], name: str, number: int, *, empty: bool = False) -> str:
    if name not in entry:
        raise _Malformed(f"has no {_shown(name)}", number)
    value = entry[name]
    if not isinstance(value, str):
        raise _Malformed(f"{_shown(name)} is a JSON {_kind(value)}, not a string", number)
    if not value and not empty:
        raise _Malformed(f"{_shown(name)} is empty", number)
    if "\x00" in value:  # no file name, rule code or key holds one
        raise _Malformed(f"{_shown(name)} holds a NUL character ({_shown(value)})", number)
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "string"


def _shown(value: Any) -> str:
    """A value as JSON writes it (control characters escaped), cut short."""
    return shorten(json.dumps(value, ensure_ascii=True), 60)


def _line_of(text: str, where: str | int) -> int | None:
    """The JSON line of a top-level field (its name) or of a finding entry (its number); 1 for the
    document itself; None where the text cannot be followed."""
    if where == "":
        return 1
    for landmark, offset in _landmarks(text):
        if landmark == where:
            return text.count("\n", 0, offset) + 1
    return None


def _landmarks(text: str) -> Iterator[tuple[str | int, int]]:
    """(top-level field name, offset) and (finding entry number, offset) in document order, read
    from text that is known to be JSON (only to name the line of a problem)."""
    decoder = json.JSONDecoder()

    def skip(offset: int) -> int:
        match = _JSON_BLANKS.match(text, offset)
        return match.end() if match else offset

    offset = skip(0)
    if text[offset : offset + 1] != "{":
        return
    offset = skip(offset + 1)
    try:
        while text[offset : offset + 1] == '"':
            name, after = decoder.raw_decode(text, offset)
            yield name, offset
            offset = skip(skip(after) + 1)  # past the colon
            if name == "findings" and text[offset : offset + 1] == "[":
                offset = skip(offset + 1)
                number = 0
                while text[offset : offset + 1] not in ("]", ""):
                    number += 1
                    yield number, offset
                    offset = skip(decoder.raw_decode(text, offset)[1])
                    offset = skip(offset + 1) if text[offset : offset + 1] == "," else offset
                offset += 1
            else:
                offset = decoder.raw_decode(text, offset)[1]
            offset = skip(offset)
            offset = skip(offset + 1) if text[offset : offset + 1] == "," else offset
    except (ValueError, RecursionError):
        return


def new_findings(
    findings: list[Finding], recorded: Counter[Identity], baseline_path: str
) -> tuple[list[Finding], int]:
    """The findings the baseline does not hold, and how many it held."""
    base = _base(baseline_path)
    cache: dict[str, _Reading | None] = {}
    left = Counter(recorded)
    kept, held = [], 0
    for finding in findings:
        identity = _identity(finding, base, cache)
        if left[identity] > 0:
            left[identity] -= 1
            held += 1
        else:
            kept.append(finding)
    return kept, held
