"""Read and write ``serving.properties`` exactly as ``java.util.Properties.load`` does.

DJL Serving reads a model's ``serving.properties`` with ``Properties.load(InputStream)``
(djl-serving.md §7), so this reader follows that algorithm: ISO-8859-1 bytes, ``#``/``!``
comment lines, ``=``/``:``/whitespace separators, odd trailing backslashes continue a line,
``\\t \\n \\r \\f \\uXXXX`` escapes, trailing whitespace kept in values, last duplicate wins.

Every entry remembers the physical lines it came from and the details a lint rule needs
(separator, continuation, raw value text) so that findings point at the right line.
"""

import re
from dataclasses import dataclass, field
from typing import NamedTuple

from lmi_config.configfile.text import collector_paused, split_lines

BLANKS = " \t\f"  # what Properties.load skips at the start of every physical line


class PropertiesSyntaxError(ValueError):
    """A logical line ``Properties.load`` itself would refuse (malformed ``\\uXXXX``)."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line  # 1-based physical line where the logical line starts
        self.end_line = line  # and where it ends (continuations): set by the parser


class PropertyEntry(NamedTuple):
    """One key/value pair as the container reads it, with where it came from."""

    key: str
    value: str
    line: int  # 1-based physical line where the logical line starts
    end_line: int  # 1-based physical line where it ends (continuations)
    separator: str  # "=", ":", " " (whitespace) or "" (a key with no value)
    raw_value: str  # the value text before unescaping, continuations joined
    continued: bool  # the logical line spans more than one physical line


class Comment(NamedTuple):
    """A comment line (``#`` or ``!``), kept for pragmas."""

    text: str  # without the leading marker
    line: int


@dataclass(repr=False, eq=False)
class PropertiesDocument:
    """Everything read from one properties text."""

    entries: list[PropertyEntry] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)
    errors: list[PropertiesSyntaxError] = field(default_factory=list)

    def as_dict(self) -> dict[str, str]:
        """The mapping ``Properties`` would hold: last duplicate wins."""
        return {entry.key: entry.value for entry in self.entries}


def decode_properties_bytes(data: bytes) -> str:
    """Decode bytes the way ``Properties.load(InputStream)`` does: ISO-8859-1, never fails."""
    return data.decode("latin-1")


def _ends_with_odd_backslashes(text: str) -> bool:
    if not text.endswith("\\"):
        return False
    count = len(text) - len(text.rstrip("\\"))
    return count % 2 == 1


def _unescape(text: str, line: int) -> str:
    if "\\" not in text:
        return text  # the common case, without a loop over every character
    out: list[str] = []
    index = 0
    length = len(text)
    while index < length:
        char = text[index]
        index += 1
        if char != "\\":
            out.append(char)
            continue
        if index >= length:
            # A lone trailing backslash: Java drops it (the continuation was already handled).
            break
        char = text[index]
        index += 1
        if char == "u":
            digits = text[index : index + 4]
            if len(digits) < 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise PropertiesSyntaxError("malformed \\uXXXX escape", line)
            out.append(chr(int(digits, 16)))
            index += 4
        elif char == "t":
            out.append("\t")
        elif char == "n":
            out.append("\n")
        elif char == "r":
            out.append("\r")
        elif char == "f":
            out.append("\f")
        else:
            out.append(char)
    joined = "".join(out)
    try:
        # \uD83D\uDE00 (a UTF-16 surrogate pair) is one character, as in Java
        return joined.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        return joined  # a lone surrogate stays as Java keeps it


_KEY_END = re.compile(r"[=: \t\f]")
_AFTER_EQUALS = re.compile(r"[ \t\f]*")
_AFTER_BLANK = re.compile(r"[ \t\f]*(?:([=:])[ \t\f]*)?")


def _split_key_value(logical: str) -> tuple[str, str, str]:
    """Return (raw key, separator, raw value) following ``Properties.load0``."""
    match = _KEY_END.search(logical)
    if match is None or "\\" not in logical[: match.start()]:
        # no escape in the key: the first separator ends it (regexes instead of a loop per character)
        if match is None:
            return logical, "", ""
        key_end = match.start()
        separator = match.group()
        if separator in "=:":
            value_start = _AFTER_EQUALS.match(logical, key_end + 1)
            assert value_start is not None
            return logical[:key_end], separator, logical[value_start.end() :]
        after = _AFTER_BLANK.match(logical, key_end + 1)
        assert after is not None
        return logical[:key_end], after.group(1) or " ", logical[after.end() :]
    return _split_escaped_key_value(logical)


def _split_escaped_key_value(logical: str) -> tuple[str, str, str]:
    key_end = 0
    value_start = len(logical)
    separator = ""
    has_separator = False
    preceding_backslash = False
    length = len(logical)
    while key_end < length:
        char = logical[key_end]
        if char in "=:" and not preceding_backslash:
            value_start = key_end + 1
            separator = char
            has_separator = True
            break
        if char in BLANKS and not preceding_backslash:
            value_start = key_end + 1
            separator = " "
            break
        preceding_backslash = (not preceding_backslash) if char == "\\" else False
        key_end += 1
    while value_start < length:
        char = logical[value_start]
        if char not in BLANKS:
            if not has_separator and char in "=:":
                has_separator = True
                separator = char
            else:
                break
        value_start += 1
    return logical[:key_end], separator, logical[value_start:]


def parse_properties(text: str) -> PropertiesDocument:
    """Parse properties text; syntax problems are collected in ``errors``, never raised."""
    with collector_paused():
        return _parse_properties(text)


def _parse_properties(text: str) -> PropertiesDocument:
    document = PropertiesDocument()
    entries = document.entries
    lines = split_lines(text)
    count = len(lines)
    index = 0
    while index < count:
        start_line = index + 1
        stripped = lines[index].lstrip(BLANKS)
        index += 1
        if not stripped:
            continue
        if stripped[0] in "#!":
            document.comments.append(Comment(stripped[1:], start_line))
            continue
        continued = False
        if stripped[-1] == "\\" and _ends_with_odd_backslashes(stripped):
            parts = [stripped[:-1]]
            while index < count:
                parts.append(lines[index].lstrip(BLANKS))
                index += 1
                if not _ends_with_odd_backslashes(parts[-1]):
                    break
                parts[-1] = parts[-1][:-1]
            logical = "".join(parts)
            continued = len(parts) > 1
        else:
            logical = stripped
        raw_key, separator, raw_value = _split_key_value(logical)
        try:  # most keys and values hold no escape: no call for them
            key = _unescape(raw_key, start_line) if "\\" in raw_key else raw_key
            value = _unescape(raw_value, start_line) if "\\" in raw_value else raw_value
        except PropertiesSyntaxError as error:
            error.end_line = index
            document.errors.append(error)
            continue
        entries.append(
            PropertyEntry(
                key, value, start_line, index if continued else start_line, separator, raw_value, continued
            )
        )
    return document


def escape_properties_text(text: str, *, is_key: bool) -> str:
    """Escape a key or value as ``Properties.store`` does, so ``Properties.load`` reads it back."""
    out: list[str] = []
    for position, char in enumerate(text):
        code = ord(char)
        if char == "\\":
            out.append("\\\\")
        elif char == "\t":
            out.append("\\t")
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\f":
            out.append("\\f")
        elif char == " " and (is_key or position == 0):
            out.append("\\ ")
        elif char in "=:#!" and (is_key or position == 0):
            out.append("\\" + char)
        elif code < 0x20 or code > 0x7E:
            # \uXXXX of each UTF-16 code unit, as Properties.store writes it
            encoded = char.encode("utf-16-be")
            for unit in range(0, len(encoded), 2):
                out.append(f"\\u{int.from_bytes(encoded[unit : unit + 2], 'big'):04X}")
        else:
            out.append(char)
    return "".join(out)


def dump_properties(items: list[tuple[str, str]], header: list[str] | None = None) -> str:
    """Write ``key=value`` lines that ``Properties.load`` reads back to the same pairs.

    Keys and values are escaped as ``Properties.store`` does (non-ASCII as ``\\uXXXX``).
    """
    lines = [f"# {comment}" if comment else "#" for comment in header or []]
    for key, value in items:
        lines.append(
            f"{escape_properties_text(key, is_key=True)}={escape_properties_text(value, is_key=False)}"
        )
    return "\n".join(lines) + "\n"
