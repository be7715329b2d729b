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

from lmi_config.configfile.text import split_lines

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


@dataclass(frozen=True)
class EnvEntry:
    """One variable with the line it was set on."""

    name: str
    value: str
    line: int | None
    quoted: bool = False
    inline_comment: str | None = None  # text after an unquoted `` #`` (dropped by dotenv)


@dataclass(frozen=True)
class EnvSyntaxError:
    """A line that is not ``KEY=VALUE``."""

    message: str
    line: int | None
    severity: str = "error"


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


def _parse_double_quoted(text: str) -> tuple[str, str] | None:
    """Return (value, rest after the closing quote) or None if unterminated."""
    out: list[str] = []
    index = 1
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            following = text[index + 1]
            out.append(_DOUBLE_QUOTE_ESCAPES.get(following, "\\" + following))
            index += 2
            continue
        if char == '"':
            return "".join(out), text[index + 1 :]
        out.append(char)
        index += 1
    return None


def parse_env_text(text: str) -> EnvDocument:
    """Parse an env file; bad lines become ``errors`` (never raised)."""
    document = EnvDocument()
    lines = split_lines(text)
    index = 0
    while index < len(lines):
        line_number = index + 1
        line = lines[index]
        index += 1
        stripped = line.strip()
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
        quoted = False
        inline_comment = None
        if rest.startswith("'"):
            closing = rest.find("'", 1)
            while closing == -1 and index < len(lines):  # a multi-line single-quoted value
                rest += "\n" + lines[index]
                index += 1
                closing = rest.find("'", 1)
            if closing == -1:
                document.errors.append(EnvSyntaxError("unterminated single quote", line_number))
                continue
            value = rest[1:closing]
            quoted = True
        elif rest.startswith('"'):
            parsed = _parse_double_quoted(rest)
            while parsed is None and index < len(lines):
                rest += "\n" + lines[index]
                index += 1
                parsed = _parse_double_quoted(rest)
            if parsed is None:
                document.errors.append(EnvSyntaxError("unterminated double quote", line_number))
                continue
            value = parsed[0]
            quoted = True
        else:
            match = re.search(r"\s#", rest)
            if match:
                inline_comment = rest[match.start() :].strip()
                rest = rest[: match.start()]
            value = rest.strip()
        document.entries.append(EnvEntry(name, value, line_number, quoted, inline_comment))
    return document


def _shorten(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _line_of_key(text: str, key: str) -> int | None:
    match = re.search(r'"' + re.escape(json.dumps(key)[1:-1]) + r'"\s*:', text)
    return text.count("\n", 0, match.start()) + 1 if match else None


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
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        document.errors.append(EnvSyntaxError(f"invalid JSON: {error.msg}", error.lineno))
        return document
    environment = _find_environment(data)
    if environment is None:
        document.errors.append(EnvSyntaxError("expected a JSON object of environment variables", 1))
        return document
    for name, value in environment.items():
        line = _line_of_key(text, name)
        if isinstance(value, bool | int | float):
            as_string = ("true" if value else "false") if isinstance(value, bool) else json.dumps(value)
            document.errors.append(
                EnvSyntaxError(
                    f"value of {name!r} is a JSON {type(value).__name__}; SageMaker's Environment takes strings "
                    f'only: write "{as_string}"',
                    line,
                    severity="warning",
                )
            )
            value = as_string
        elif not isinstance(value, str):
            document.errors.append(
                EnvSyntaxError(f"value of {name!r} must be a string, not {type(value).__name__}", line)
            )
            continue
        document.entries.append(EnvEntry(str(name), value, line, quoted=True))
    return document


def quote_env_value(value: str) -> str:
    """The value as written after ``NAME=``: bare when safe, else double-quoted with escapes."""
    if value and re.fullmatch(r"[A-Za-z0-9_./:@%+,=\-]+", value):
        return value
    escaped = (
        value.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
        .replace("$", "\\$")
    )
    return f'"{escaped}"'


def dump_env(items: list[tuple[str, str]], header: list[str] | None = None) -> str:
    """Write ``KEY=VALUE`` lines that :func:`parse_env_text` reads back to the same pairs."""
    lines = [f"# {comment}" if comment else "#" for comment in header or []]
    lines.extend(f"{name}={quote_env_value(value)}" for name, value in items)
    return "\n".join(lines) + "\n"


def dump_env_json(items: list[tuple[str, str]]) -> str:
    """Write a SageMaker ``Environment`` JSON object (stable order as given)."""
    return json.dumps(dict(items), indent=2, ensure_ascii=False) + "\n"
