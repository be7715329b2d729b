"""Recognise credentials so they can be reported without ever being printed.

This module is the one place that decides what is secret; everything that prints a value asks it.

A **value** is a credential when it has a known credential format (``data/env_vars.json``: Hugging
Face tokens, AWS access key ids, ``sk-`` API keys, GitHub tokens) or carries one inside a URL: the
password of ``scheme://user:password@host`` (RFC 3986 userinfo) or a query parameter with a secret
name (``?token=…``, ``&X-Amz-Signature=…``). Only that part of a URL is masked; the rest of the
value (host, path) stays readable.

A **name** holds a credential, whatever its value looks like, when it is a credential variable of
``data/env_vars.json`` (``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY`` …) or when its words (split at
``_ . -`` and camelCase, after ``option.`` / ``OPTION_``) say so:

- a word containing ``PASSWORD``, ``PASSWD``, ``PASSPHRASE`` or ``SECRET``, or a word
  ``CREDENTIAL(S)``, ``AUTHORIZATION``, ``SIGNATURE`` (``DB_PASSWORD``, ``clientSecret``);
- a word ending in ``TOKEN`` (``MY_API_TOKEN``, ``option.use_auth_token``) — not ``TOKENS`` or
  ``TOKENIZER`` (``option.max_tokens``, ``option.tokenizer``);
- a last word ``KEY`` or ending in ``APIKEY`` (``option.api_key``, ``OPENAI_API_KEY``,
  ``STRIPE_KEY``), except keys that name a record rather than unlock one (``PUBLIC_KEY``,
  ``SORT_KEY``, ``CACHE_KEY``, ``S3_KEY`` …).

Not secret: a name whose last word says the value only points at a credential (``HF_TOKEN_PATH``,
``API_KEY_FILE``, ``DB_SECRET_ARN``, ``SECRET_NAME``); a prompt marker
(``option.image_placeholder_token``); and catalogue options whose type is a number or a boolean
(``option.max_prompt_adapter_token``, ``option.smoothquant_per_token``). The option catalogue has
no option whose name ends in ``_key``.

Where secrets go: ``lint``, ``explain``, ``render``'s messages and every report format mask them;
``render`` refuses a spec that holds one (a spec and its output are committed and printed: pass
credentials at deploy time); ``convert`` writes the real value into a file named with ``-o`` (the
user's own data, already in their input, is not lost) and leaves it out of standard output,
saying so (:mod:`lmi_config.convert`).
"""

from __future__ import annotations

import os
import re
from functools import cache, lru_cache
from typing import Any

from lmi_config.knowledge.environment import secret_patterns, secret_variables

MASK = "…(redacted)"
# set by ``search --on sagemaker`` on its jobs: the --secret-env names, whatever their names look like
SECRET_NAMES_VARIABLE = "LMI_CONFIG_SECRET_NAMES"
_SECRET_SUBSTRINGS = ("PASSWORD", "PASSWD", "PASSPHRASE", "SECRET")
_SECRET_WORDS = frozenset({"CREDENTIAL", "CREDENTIALS", "AUTHORIZATION", "SIGNATURE", "SIG"})
# words after which KEY names a record (a sort key, an object key), not something that unlocks
_RECORD_KEY_QUALIFIERS = frozenset(
    {"PUBLIC", "SORT", "PARTITION", "CACHE", "HASH", "PRIMARY", "FOREIGN", "OBJECT", "S3", "ROUTING"}
    | {"DICT", "LOOKUP", "GROUP", "SHARD", "IDEMPOTENCY", "RANGE", "ROW", "CONFIG", "JSON", "INPUT"}
    | {"OUTPUT", "LABEL", "METRIC", "SEQUENCE", "BATCH", "RENDER", "VALUE", "DATA", "TEXT", "PROMPT"}
)
# last words that make the value a pointer to a credential (a path, an ARN, a name), not the credential
_POINTER_WORDS = frozenset(
    {"PATH", "FILE", "DIR", "ARN", "NAME", "LENGTH", "LEN", "SIZE", "COUNT", "TYPE", "TYPES", "ENV", "VAR"}
    | {"ID", "IDS", "URL", "URI", "ENDPOINT", "HEADER", "FIELD", "PREFIX", "LOCATION", "REF", "PARAM"}
)
# the cheap test first: a name without any of these is never secret (files of a million keys)
_HINTS = ("TOKEN", "SECRET", "PASSW", "PASSPHRASE", "KEY", "CREDENTIAL", "AUTHORIZATION", "SIG")
# tokenizer tokens, not credentials: a prompt marker such as <image> (catalogue: option.image_placeholder_token)
_NOT_CREDENTIALS = frozenset({"IMAGE_PLACEHOLDER_TOKEN"})
_TYPES_WITHOUT_CREDENTIALS = frozenset({"int", "int_or_max", "float", "bool", "list_int"})
# an EngineArgs annotation that admits only numbers or booleans: int, float, bool, Optional[int], int | None
_NUMERIC_ANNOTATION = re.compile(r"(Optional\[)?(int|float|bool)\]?( \| None)?")
# RFC 3986: scheme "://" userinfo "@"; the password is what follows the first ":" of the userinfo
URL_CREDENTIALS = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^\s/?#@:]*:)(?P<password>[^\s/?#@]+)@")
_QUERY_PARAMETER = re.compile(r"(?P<head>[?&;](?P<name>[A-Za-z0-9_.\-]+)=)(?P<value>[^?&#;\s]+)")
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD_SEPARATORS = re.compile(r"[^A-Za-z0-9]+")


@cache
def secret_pattern() -> re.Pattern[str]:
    """One regex matching every known credential format (data/env_vars.json)."""
    patterns = [row["regex"] for row in secret_patterns()]
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns))


@cache
def secret_variable_names() -> frozenset[str]:
    """The credential variables the data names (``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY`` …)."""
    return frozenset(secret_variables())


def _words(name: str) -> list[str]:
    return [word for word in _WORD_SEPARATORS.split(_CAMEL_BOUNDARY.sub("_", name).upper()) if word]


def _words_say_secret(words: list[str]) -> bool:
    if not words or words[-1] in _POINTER_WORDS:
        return False
    for word in words:
        if any(part in word for part in _SECRET_SUBSTRINGS) or word in _SECRET_WORDS:
            return True
        if word.endswith("TOKEN"):
            return True
    last = words[-1]
    if last.endswith("APIKEY"):
        return True
    return last == "KEY" and (len(words) < 2 or words[-2] not in _RECORD_KEY_QUALIFIERS)


@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether a key or variable name holds a credential by its name (``hf_token``, ``*_TOKEN``,
    ``*SECRET*``, ``*PASSWORD*``, ``*_API_KEY``, ``*_KEY``, in option keys and variable names
    alike; see the module docstring for what is not)."""
    upper = name.upper()
    if not any(hint in upper for hint in _HINTS):
        return False
    if upper in secret_variable_names():
        return True
    bare = name[len("option.") :] if name.startswith("option.") else name
    bare = bare[len("OPTION_") :] if bare.upper().startswith("OPTION_") else bare
    words = _words(bare)
    if "_".join(words) in _NOT_CREDENTIALS or not _words_say_secret(words):
        return False
    from lmi_config.knowledge.options import catalogue

    specs = (
        catalogue().get(name, ())
        or catalogue().get("option." + bare, ())
        or catalogue().get("option." + "_".join(words).lower(), ())
    )
    if specs:
        return not all(spec.type in _TYPES_WITHOUT_CREDENTIALS for spec in specs)
    return not _numeric_engine_argument("_".join(words).lower())


def _numeric_engine_argument(name: str) -> bool:
    """Whether ``name`` is a vLLM engine argument LMI passes through that every release types as a
    number or a boolean (``long_prefill_token_threshold: int``): a count, never a credential."""
    from lmi_config.knowledge.options import engine_arg_table

    annotations = [row["fields"][name].get("annotation") for row in engine_arg_table().values()
                   if name in row.get("fields", {})]  # fmt: skip
    return bool(annotations) and all(_NUMERIC_ANNOTATION.fullmatch(text or "") for text in annotations)


def hugging_face_token_names() -> frozenset[str]:
    """The variables a Hugging Face download reads a token from (``HF_TOKEN``, ``HUGGING_FACE_HUB_TOKEN``:
    what the pinned huggingface_hub releases read, generated from their code). ``HF_API_TOKEN`` is
    masked as a credential but is no token: nothing reads it."""
    from lmi_config.knowledge.environment import hub_token_names

    return frozenset(hub_token_names())


def environment_secrets(names: tuple[str, ...], option: str = "--secret-env") -> dict[str, str]:
    """Credentials a container or job needs (``HF_TOKEN`` …), copied from this shell by name — never
    from a file or an argument, so they are in no command line and no shell history. Raises
    :class:`SpecError` naming a variable that is not a variable name or is not set."""
    from lmi_config.errors import SpecError
    from lmi_config.knowledge.sagemaker import sagemaker_limits

    values = {}
    for name in names:
        if not re.fullmatch(sagemaker_limits().environment_key.pattern or ".*", name):
            raise SpecError(f"{option} {name!r} is not an environment variable name")
        value = os.environ.get(name)
        if not value:
            raise SpecError(f"{option} {name}: {name} is not set in this shell; export it first")
        values[name] = value
    return values


def environment_secret_values(environment: dict[str, str] | None = None) -> frozenset[str]:
    """The values of this process's credential variables (by name, :func:`is_secret_name`, or
    listed in ``LMI_CONFIG_SECRET_NAMES``): what a tool this process starts may echo into its log."""
    environment = dict(os.environ) if environment is None else environment
    listed = set(filter(None, environment.get(SECRET_NAMES_VARIABLE, "").split(",")))
    return frozenset(
        value
        for name, value in environment.items()
        if value and (name in listed or (name != SECRET_NAMES_VARIABLE and is_secret_name(name)))
    )


def redact_document(value: Any, values: frozenset[str]) -> Any:
    """A JSON-able document with every string in it redacted (:func:`redact`), deeply."""
    if isinstance(value, str):
        return redact(value, values)
    if isinstance(value, dict):
        return {key: redact_document(item, values) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_document(item, values) for item in value]
    return value


def _url_secret_spans(value: str) -> list[tuple[int, int]]:
    """Where the credentials inside URLs of ``value`` are: passwords and secret query values."""
    spans = [match.span("password") for match in URL_CREDENTIALS.finditer(value)]
    if "://" in value:
        spans.extend(
            match.span("value")
            for match in _QUERY_PARAMETER.finditer(value)
            if is_secret_name(match.group("name"))
        )
    return spans


def credential_format(value: str, name: str | None = None) -> bool:
    """A value in a known credential format, holding a credential in a URL, or (for a credential
    variable) in that variable's format."""
    if secret_pattern().search(value) or _url_secret_spans(value):
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
    """A credential: a known credential format, one inside a URL, or any real value under a
    secret-named key."""
    if credential_format(value, name):
        return True
    return name is not None and is_secret_name(name) and not is_reference(value)


def mask_value(value: str, name: str | None = None) -> str:
    """A value as it may be printed: the mask for a secret-named key's value, else the value with
    every credential inside it masked (a URL keeps its host and path)."""
    if name is not None and is_secret_name(name) and not is_reference(value):
        return MASK
    return redact(value)


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
    text = _redact_urls(text)
    return secret_pattern().sub(_mask_match, text)


def _redact_urls(text: str) -> str:
    if "://" not in text:
        return text
    spans = sorted(_url_secret_spans(text), reverse=True)
    for start, end in spans:
        text = text[:start] + MASK + text[end:]
    return text


@lru_cache(maxsize=64)
def _longest_first(values: frozenset[str]) -> tuple[str, ...]:
    return tuple(sorted((value for value in values if len(value) >= 4), key=len, reverse=True))


def _mask_match(match: re.Match[str]) -> str:
    return match.group()[:3] + MASK
