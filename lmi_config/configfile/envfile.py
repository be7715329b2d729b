"""Read and write environment-variable sets: ``.env`` files and SageMaker ``Environment`` JSON.

Env files follow the common dotenv convention (what ``docker compose --env-file`` and
python-dotenv read): ``KEY=VALUE`` lines, an optional ``export`` prefix, ``#`` comment lines,
single quotes taken literally, double quotes with ``\\n \\" \\\\`` escapes, and `` #`` starting a
comment after an unquoted value. SageMaker ``Environment`` JSON is a flat object of strings,
either alone or inside a ``CreateModel``-style document (``Environment``,
``PrimaryContainer.Environment`` or ``Containers[*].Environment``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import NamedTuple

from lmi_config.configfile.text import (
    MAX_JSON_DEPTH,
    collector_paused,
    json_nesting_depth,
    shorten,
    split_lines,
)

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


class EnvEntry(NamedTuple):
    """One variable with the line it was set on."""

    name: str
    value: str
    line: int | None
    quoted: bool = False
    inline_comment: str | None = None  # text after an unquoted `` #`` (dropped by dotenv)
    # the last physical line of the setting where it spans several (a quoted value over lines, a
    # JSON value below its key); None: it ends on ``line``
    end_line: int | None = None


@dataclass(frozen=True, slots=True)
class EnvSyntaxError:
    """A line that is not ``KEY=VALUE``."""

    message: str
    line: int | None
    severity: str = "error"
    end_line: int | None = None  # the last physical line of its setting (a JSON value below its key)


@dataclass
class EnvDocument:
    """Everything read from one env file or Environment JSON."""

    entries: list[EnvEntry] = field(default_factory=list)
    comments: list[tuple[str, int]] = field(default_factory=list)
    errors: list[EnvSyntaxError] = field(default_factory=list)

    def as_dict(self) -> dict[str, str]:
        """Last assignment wins, as in a shell."""
        return {entry.name: entry.value for entry in self.entries}


_DOUBLE_QUOTE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "$": "$"}
# the text of a double-quoted value up to its closing quote (backslash escapes skipped)
_DOUBLE_QUOTED_BODY = re.compile(r'(?:[^"\\]|\\.)*"')
_ASSIGNMENT = re.compile(r"\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_.\-]*\s*=")
_ESCAPE = re.compile(r"\\(.)", re.S)


def _closing_quote(text: str, start: int, quote: str) -> int:
    """Index of the quote that closes a value in ``text`` from ``start``, or -1."""
    if quote == "'":
        return text.find("'", start)
    match = _DOUBLE_QUOTED_BODY.match(text, start)
    return match.end() - 1 if match else -1


def _unescape_double(body: str) -> str:
    if "\\" not in body:
        return body
    return _ESCAPE.sub(lambda match: _DOUBLE_QUOTE_ESCAPES.get(match.group(1), match.group()), body)


@dataclass
class _Quoted:
    """A quoted value: its text, the index of the line after it, and what follows the closing quote."""

    value: str
    next_index: int
    after: str


def _read_quoted(rest: str, lines: list[str], index: int) -> _Quoted | None:
    """The quoted value that ``rest`` opens (``index``: the line after it), or None when the quote
    does not close properly: then it ends at the end of its own line.

    A value may span lines (as python-dotenv reads it) when its closing quote is followed by
    nothing but a comment and no line inside it looks like a ``NAME=`` setting; otherwise an
    unmatched quote would swallow every later setting. Each line is scanned once.
    """
    quote = rest[0]
    closing = _closing_quote(rest, 1, quote)
    pieces = [rest[1:closing] if closing != -1 else rest[1:]]
    after = rest[closing + 1 :] if closing != -1 else ""
    next_index = index
    while closing == -1 and next_index < len(lines):
        line = lines[next_index]
        next_index += 1
        if _ASSIGNMENT.match(line):
            return None  # a NAME= line: the quote was not meant to span it
        closing = _closing_quote(line, 0, quote)
        pieces.append(line if closing == -1 else line[:closing])
        after = line[closing + 1 :] if closing != -1 else ""
    if closing == -1 or (len(pieces) > 1 and not _only_comment(after)):
        return None
    body = "\n".join(pieces)
    return _Quoted(body if quote == "'" else _unescape_double(body), next_index, after)


def _only_comment(text: str) -> bool:
    stripped = text.strip()
    return not stripped or stripped.startswith("#")


def parse_env_text(text: str) -> EnvDocument:
    """Parse an env file; bad lines become ``errors`` (never raised)."""
    with collector_paused():
        return _parse_env_text(text)


def _parse_env_text(text: str) -> EnvDocument:
    document = EnvDocument()
    lines = split_lines(text)
    index = 0
    while index < len(lines):
        line_number = index + 1
        stripped = lines[index].strip()
        index += 1
        if not stripped:
            continue
        if stripped.startswith("#"):
            document.comments.append((stripped[1:], line_number))
            continue
        if stripped.startswith("export ") or stripped.startswith("export\t"):
            stripped = stripped[len("export") :].lstrip()
        name, equals, rest = stripped.partition("=")
        name = name.strip()
        if not equals:
            document.errors.append(
                EnvSyntaxError(f"line is not KEY=VALUE: {_shorten(stripped)!r}", line_number)
            )
            continue
        if not ENV_NAME.fullmatch(name):
            document.errors.append(
                EnvSyntaxError(f"{_shorten(name)!r} is not a valid variable name", line_number)
            )
            continue
        rest = rest.strip()
        if rest[:1] in ("'", '"'):
            quoted = _read_quoted(rest, lines, index)
            if quoted is None:
                kind = "single" if rest[0] == "'" else "double"
                document.errors.append(
                    EnvSyntaxError(
                        f"{name}: unterminated {kind} quote; the value ends at the end of this line and the "
                        f"next lines are read as settings — close the quote",
                        line_number,
                    )
                )
                continue
            index = quoted.next_index
            if not _only_comment(quoted.after):
                document.errors.append(
                    EnvSyntaxError(
                        f"{name}: text after the closing quote ({_shorten(quoted.after.strip())!r}) is not part of "
                        "the value; quote the whole value",
                        line_number,
                    )
                )
            # index, 0-based, of the line after the value is the 1-based number of its closing quote's line
            end_line = index if index > line_number else None
            document.entries.append(EnvEntry(name, quoted.value, line_number, True, None, end_line))
            continue
        inline_comment = None
        match = re.search(r"\s#", rest)
        if match:
            inline_comment = rest[match.start() :].strip()
            rest = rest[: match.start()]
        document.entries.append(EnvEntry(name, rest.strip(), line_number, False, inline_comment))
    return document


def _shorten(text: str, limit: int = 60) -> str:
    return shorten(text, limit)


_JSON_KEY = re.compile(r'"((?:[^"\\]|\\.)*)"\s*:\s*')  # up to the value
_JSON_VALUE = json.JSONDecoder()


def split_json_lines(text: str) -> list[str]:
    """Split JSON text into the lines its line numbers count: on ``\\n`` only, as ``json``'s error
    positions and the entries' lines (:func:`parse_env_json`) count them (a ``\\r`` stays in its line)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


class _KeyPlace(NamedTuple):
    """Where an object key first appears: its line, and the line and offset where its value starts."""

    line: int
    value_line: int
    value_offset: int


def _key_lines(text: str) -> dict[str, _KeyPlace]:
    """Where each object key first appears, in one pass over the text."""
    lines: dict[str, _KeyPlace] = {}
    line = 1
    position = 0
    for match in _JSON_KEY.finditer(text):
        line += text.count("\n", position, match.start())
        position = match.start()
        raw = match.group(1)
        try:
            key = json.loads(f'"{raw}"') if "\\" in raw else raw
        except ValueError:
            continue
        if key not in lines:
            lines[key] = _KeyPlace(line, line + text.count("\n", match.start(), match.end()), match.end())
    return lines


def _last_line(text: str, place: _KeyPlace | None, value: object) -> int | None:
    """The line where the value of a key placed at ``place`` ends, when not on the key's line."""
    if place is None:
        return None
    last = place.value_line
    if isinstance(value, dict | list):  # a string, number or literal is one line; these may be many
        try:
            end = _JSON_VALUE.raw_decode(text, place.value_offset)[1]
        except (ValueError, RecursionError):  # the key pattern matched inside a string
            end = place.value_offset
        last += text.count("\n", place.value_offset, end)
    return last if last != place.line else None


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return {"list": "array", "dict": "object", "str": "string"}.get(type(value).__name__, "value")


def _find_environment(data: object) -> dict | None:
    if not isinstance(data, dict):
        return None
    for key in ("Environment", "environment"):
        if isinstance(data.get(key), dict):
            return data[key]
    container = data.get("PrimaryContainer")
    if isinstance(container, dict) and isinstance(container.get("Environment"), dict):
        return container["Environment"]
    containers = data.get("Containers")
    if isinstance(containers, list):
        for item in containers:
            if isinstance(item, dict) and isinstance(item.get("Environment"), dict):
                return item["Environment"]
    return data


def parse_env_json(text: str) -> EnvDocument:
    """Parse a SageMaker ``Environment`` JSON object (alone or inside a CreateModel document)."""
    document = EnvDocument()
    depth = json_nesting_depth(text)
    if depth > MAX_JSON_DEPTH:
        document.errors.append(
            EnvSyntaxError(
                f"JSON nested {depth} levels deep; an Environment is a flat object of strings "
                f"(at most {MAX_JSON_DEPTH} levels are read)",
                1,
            )
        )
        return document
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        document.errors.append(EnvSyntaxError(f"invalid JSON: {error.msg}", error.lineno))
        return document
    except ValueError as error:  # an integer of more than 4300 digits
        document.errors.append(EnvSyntaxError(f"invalid JSON: {shorten(str(error))}", 1))
        return document
    environment = _find_environment(data)
    if environment is None:
        document.errors.append(
            EnvSyntaxError(
                f"expected a JSON object of environment variables, not a JSON {_json_kind(data)}", 1
            )
        )
        return document
    lines = _key_lines(text)
    for name, value in environment.items():
        place = lines.get(name)
        line, end_line = (place.line if place else None), _last_line(text, place, value)
        shown = shorten(name, 60)
        if isinstance(value, bool | int | float):
            as_string = ("true" if value else "false") if isinstance(value, bool) else json.dumps(value)
            document.errors.append(
                EnvSyntaxError(
                    f"value of {shown!r} is a JSON {_json_kind(value)}; SageMaker's Environment takes strings "
                    f'only: write "{shorten(as_string, 40)}"',
                    line,
                    severity="warning",
                    end_line=end_line,
                )
            )
            value = as_string
        elif not isinstance(value, str):
            document.errors.append(
                EnvSyntaxError(
                    f"value of {shown!r} must be a string, not a JSON {_json_kind(value)}",
                    line,
                    end_line=end_line,
                )
            )
            continue
        document.entries.append(EnvEntry(str(name), value, line, quoted=True, end_line=end_line))
    return document
