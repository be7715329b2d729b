"""Recognise credentials so they can be reported without ever being printed."""

from __future__ import annotations

import re
from functools import cache

from lmi_config.knowledge import load_data


@cache
def secret_pattern() -> re.Pattern[str]:
    """One regex matching every known credential format (data/env_vars.json)."""
    patterns = [row["regex"] for row in load_data("env_vars.json")["secret_patterns"]]
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns))


@cache
def secret_variable_names() -> frozenset[str]:
    return frozenset(row["name"] for row in load_data("env_vars.json")["secrets"])


def looks_like_secret(value: str) -> bool:
    return bool(secret_pattern().search(value))


def redact(text: str) -> str:
    """Replace anything that looks like a credential with a fixed mask."""
    return secret_pattern().sub(lambda match: match.group()[:3] + "…(redacted)", text)
