"""Recognise credentials so they can be reported without ever being printed."""

from __future__ import annotations

import re
from functools import cache

from lmi_config.knowledge.environment import secret_patterns, secret_variables


@cache
def secret_pattern() -> re.Pattern[str]:
    """One regex matching every known credential format (data/env_vars.json)."""
    patterns = [row["regex"] for row in secret_patterns()]
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns))


@cache
def secret_variable_names() -> frozenset[str]:
    return frozenset(secret_variables())


def looks_like_secret(value: str, name: str | None = None) -> bool:
    """A value in a known credential format (or, for a credential variable, in that variable's format)."""
    if secret_pattern().search(value):
        return True
    if name is not None:
        row = secret_variables().get(name.upper())
        if row and row.get("value_regex") and re.fullmatch(row["value_regex"], value.strip()):
            return True
    return False


def redact(text: str, values: frozenset[str] = frozenset()) -> str:
    """Replace anything that looks like a credential, and the given secret values, with a mask."""
    for value in sorted(values, key=len, reverse=True):
        if len(value) >= 4:
            text = text.replace(value, "…(redacted)")
    return secret_pattern().sub(lambda match: match.group()[:3] + "…(redacted)", text)
