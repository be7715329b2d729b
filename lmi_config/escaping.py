"""One writer per output format: a key and value as that format's file carries them, or a refusal.

What lmi-config guarantees for each file it writes (``render``, ``convert``):

**serving.properties** is read by two programs in the LMI container: DJL Serving's
``java.util.Properties.load`` (escapes, ``:`` and blanks as separators, ISO-8859-1) and LMI's own
Python tools, which split each line at the first ``=`` and strip it without unescaping anything
(``djl_python`` ``load_properties``: partition and test_model). A line is written as
``key=value`` with no escape at all, so both read the same text. A value that would need an
escape is refused: a backslash, a character outside printable ASCII (Java reads the file as
ISO-8859-1 and needs ``\\uXXXX``, Python reads it as UTF-8 and keeps ``\\uXXXX`` as six
characters), or blanks at either end (Java keeps trailing blanks, Python strips them). A key must
be printable ASCII without ``= : \\``, blanks, or a leading ``#`` / ``!``.

**env file** is read by ``sh`` / ``bash`` (``set -a; . FILE``), by ``docker run --env-file``
(``KEY=VALUE`` taken literally to the end of the line: no quote, escape or ``$`` processing), by
docker compose and python-dotenv, and by lmi-config. No quoting means the same to all of them
(docker keeps quotes that ``sh`` removes), so every value is written bare and a value is carried
only when it is made of ``A-Z a-z 0-9 _ . / : @ % + , = -``: nothing a shell expands, splits,
quotes or runs (``$``, backticks, quotes, ``\\``, ``~``, blanks, ``; & | < > ( )``) and nothing a
reader trims. Any other value is refused. Variable names must be shell names
(``[A-Za-z_][A-Za-z0-9_]*``).

**SageMaker Environment JSON** carries any text (JSON escapes are exact), except a lone UTF-16
surrogate, which is not a character and cannot be encoded; it is refused.

A refusal is :class:`ValueNotCarried` (the CLI's exit code 2, naming the key and the flag or file
it came from): a file whose readers disagree is never written. Newlines and other control
characters are refused before this (render) or reported (convert). A value any format refuses can
go into the SageMaker Environment JSON, which carries all of them.
"""

from __future__ import annotations

import re

from lmi_config.strict_json import json_text

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ENV_BARE_VALUE = re.compile(r"[A-Za-z0-9_./:@%+,=\-]*")
_PRINTABLE_ASCII = re.compile(r"[\x20-\x7e]*")
_PROPERTIES_KEY = re.compile(r"[!-~]+")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
JSON_ADVICE = "use --format json (convert: --to json): the SageMaker Environment JSON carries any text"


class ValueNotCarried(ValueError):
    """A key or value the output format cannot carry so that all its readers read the same text."""

    def __init__(self, key: str, reason: str, advice: str = JSON_ADVICE) -> None:
        super().__init__(f"{key}: {reason}; {advice}")
        self.key = key
        self.reason = reason


def _describe(character: str) -> str:
    names = {" ": "a blank", "\\": "a backslash", "`": "a backtick", "$": "a dollar sign", '"': "a quote"}
    names.update({"\n": "a newline", "\r": "a carriage return", "\t": "a tab"})
    return names.get(character, f"{character!r} (U+{ord(character):04X})")


def properties_line(key: str, value: str) -> tuple[str, str]:
    """``(key, value)`` as written on a ``key=value`` line that Java's ``Properties.load`` and LMI's
    Python line reader read alike (no escapes), or :class:`ValueNotCarried`."""
    if not _PROPERTIES_KEY.fullmatch(key) or key[0] in "#!" or any(char in key for char in "=:\\"):
        bad = next((char for char in key if not ("!" <= char <= "~") or char in "=:\\"), key[:1] or " ")
        raise ValueNotCarried(
            key or "(empty key)",
            f"a serving.properties key cannot hold {_describe(bad)} that DJL (java.util.Properties) and "
            "LMI's Python tools read alike",
        )
    if not _PRINTABLE_ASCII.fullmatch(value) or "\\" in value:
        bad = next(char for char in value if char == "\\" or not (" " <= char <= "~"))
        raise ValueNotCarried(
            key,
            f"the value contains {_describe(bad)}, which DJL (java.util.Properties) and LMI's Python tools "
            "read differently in serving.properties",
        )
    if value != value.strip(" "):
        raise ValueNotCarried(
            key,
            "the value starts or ends with a blank, which java.util.Properties keeps at the end and LMI's "
            "Python tools strip",
        )
    return key, value


def env_line(name: str, value: str) -> tuple[str, str]:
    """``(name, value)`` as written on a ``NAME=VALUE`` line that ``sh``, ``bash``, ``docker run
    --env-file``, dotenv and lmi-config read alike (always bare), or :class:`ValueNotCarried`."""
    if not _ENV_NAME.fullmatch(name):
        raise ValueNotCarried(
            name,
            "is not a shell variable name ([A-Za-z_][A-Za-z0-9_]*), so sh cannot set it from an env file",
        )
    if not _ENV_BARE_VALUE.fullmatch(value):
        bad = next(char for char in value if not _ENV_BARE_VALUE.fullmatch(char))
        raise ValueNotCarried(
            name,
            f"the value contains {_describe(bad)}; an env file is read both by sh (which would need it quoted "
            "or would expand it) and by docker --env-file (which keeps quotes literally), so lmi-config writes "
            "only values both read alike",
        )
    return name, value


def json_environment(items: list[tuple[str, str]]) -> str:
    """The SageMaker ``Environment`` object, exact for any text, or :class:`ValueNotCarried` for a
    lone surrogate (not a character: it cannot be encoded)."""
    for name, value in items:
        if _SURROGATE.search(name) or _SURROGATE.search(value):
            raise ValueNotCarried(
                name.encode("utf-8", "backslashreplace").decode("ascii", "replace"),
                "contains a lone UTF-16 surrogate (a malformed \\uD800-\\uDFFF escape in the input), "
                "which is not a character and cannot be written as UTF-8",
                "fix the escape in the input",
            )
    return json_text(dict(items), ensure_ascii=False)
