"""Recognise credentials so they can be reported without ever being printed.

A value is treated as a credential when it has a known credential format (a Hugging Face token,
an AWS access key id) or when it sits under a secret-named key, whatever it looks like:
``HF_TOKEN`` and the other credential variables of ``data/env_vars.json``, and any option key or
variable name ending in ``TOKEN`` or ``PASSWORD`` or containing ``SECRET`` (``option.hf_token``,
``OPTION_HF_ACCESS_TOKEN``, ``MY_API_SECRET_KEY``, ``DB_PASSWORD``). Catalogue options whose
type is a number or a boolean (``option.max_prompt_adapter_token``) hold no credential.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache

from lmi_config.knowledge.environment import secret_patterns, secret_variables

MASK = "…(redacted)"
# the naming convention people use for credentials, after option./OPTION_ and separators are removed
_SECRET_NAME = re.compile(r"(?:^|_)(?:TOKEN|PASSWORD|PASSWD)$|(?:^|_)SECRET")
# tokenizer tokens, not credentials: a prompt marker such as <image> (catalogue: option.image_placeholder_token)
_NOT_CREDENTIALS = frozenset({"IMAGE_PLACEHOLDER_TOKEN"})
_TYPES_WITHOUT_CREDENTIALS = frozenset({"int", "int_or_max", "float", "bool", "list_int"})


@cache
def secret_pattern() -> re.Pattern[str]:
    """One regex matching every known credential format (data/env_vars.json)."""
    patterns = [row["regex"] for row in secret_patterns()]
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns))


@cache
def secret_variable_names() -> frozenset[str]:
    """The credential variables the data names (``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY`` …)."""
    return frozenset(secret_variables())


def is_secret_name(name: str) -> bool:
    """Whether a key or variable name holds a credential by its name (``hf_token``, ``*_TOKEN``,
    ``*SECRET*``, ``*_PASSWORD``, in option keys and variable names alike)."""
    upper = name.upper()
    if "TOKEN" not in upper and "SECRET" not in upper and "PASSW" not in upper:
        return False  # the common case, decided without a regex (files of a million keys)
    if upper in secret_variable_names():
        return True
    bare = name[len("option.") :] if name.startswith("option.") else name
    bare = bare[len("OPTION_") :] if bare.upper().startswith("OPTION_") else bare
    normalized = re.sub(r"[^A-Za-z0-9]+", "_", bare).upper()
    if normalized in _NOT_CREDENTIALS or not _SECRET_NAME.search(normalized):
        return False
    from lmi_config.knowledge.options import catalogue

    specs = catalogue().get("option." + normalized.lower(), ())
    return not (specs and all(spec.type in _TYPES_WITHOUT_CREDENTIALS for spec in specs))


def credential_format(value: str, name: str | None = None) -> bool:
    """A value in a known credential format (or, for a credential variable, in that variable's format)."""
    if secret_pattern().search(value):
        return True
    if name is not None:
        row = secret_variables().get(name.upper())
        if row and row.get("value_regex") and re.fullmatch(row["value_regex"], value.strip()):
            return True
    return False


def is_reference(value: str) -> bool:
    """A value that names a credential instead of holding one (``${HF_TOKEN}``, ``{{token}}``, ``HF_TOKEN``)."""
    from lmi_config.knowledge.options import VARIABLE_NAME, is_placeholder

    stripped = value.strip()
    return not stripped or is_placeholder(stripped) or bool(VARIABLE_NAME.fullmatch(stripped))


def looks_like_secret(value: str, name: str | None = None) -> bool:
    """A credential: a known credential format, or any real value under a secret-named key."""
    if credential_format(value, name):
        return True
    return name is not None and is_secret_name(name) and not is_reference(value)


def redact(text: str, values: frozenset[str] = frozenset()) -> str:
    """Replace anything that looks like a credential, and the given secret values, with a mask.

    A text that is exactly one of ``values`` is masked whatever its length; inside a longer text
    only values of 4 characters or more are (a shorter one would mask ordinary words).
    """
    if values:
        if text.strip() in values:
            return MASK
        for value in _longest_first(values):
            text = text.replace(value, MASK)
    return secret_pattern().sub(_mask_match, text)


@lru_cache(maxsize=64)
def _longest_first(values: frozenset[str]) -> tuple[str, ...]:
    return tuple(sorted((value for value in values if len(value) >= 4), key=len, reverse=True))


def _mask_match(match: re.Match[str]) -> str:
    return match.group()[:3] + MASK
