"""Env-file writers for the readers' tests: KEY=VALUE text (double-quoted with escapes where needed) and
SageMaker Environment JSON that lmi-config's parsers must read back to the same pairs. Test input only: the
project's own output goes through lmi_config/escaping.py, which refuses what sh and docker would read apart."""

from __future__ import annotations

import json
import re


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
