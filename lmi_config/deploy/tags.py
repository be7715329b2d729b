"""The tags deploy puts on what it creates, and the checks on the tags a user adds (``--tag``).

Tags are plain-text metadata: anyone allowed ``sagemaker:ListTags`` reads them, AWS Cost Explorer
copies them, and they outlive the endpoint in CloudTrail. So a tag never carries a credential —
neither a value that looks like one (``hf_…``, ``AKIA…``) nor any value under a key that means one
(``apikey``, ``db_password``, ``x-auth-token``) — and the refusal never prints the value.

``lmi-config:`` is deploy's own namespace: ``lmi-config:version`` marks what deploy created (only
that is ever deleted) and ``lmi-config:endpoint`` names the endpoint a model or endpoint config
was made for (so ``--delete NAME`` finds what an interrupted run left without an endpoint). A user
tag in that namespace could make deploy delete what it did not create, so it is refused.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

from lmi_config import __version__
from lmi_config.secrets import is_secret_name, looks_like_secret

OWNER_TAG = "lmi-config:version"  # on everything deploy creates: what --delete and --update may remove
ENDPOINT_TAG = "lmi-config:endpoint"  # the endpoint a model or config was made for
RESERVED_PREFIX = "lmi-config"

# Words that make a key mean a credential, beyond the variable-naming convention of
# lmi_config.secrets (which decides `HF_TOKEN`, `*_SECRET*`, `*_PASSWORD`): tag keys are free
# text (`apikey`, `x-api-key`, `AuthToken`), so they are split into words first.
_CREDENTIAL_WORDS = frozenset(
    {"APIKEY", "PASSWORD", "PASSWD", "PWD", "PASSPHRASE", "CREDENTIAL", "CREDENTIALS", "AUTH", "BEARER"}
)
_CREDENTIAL_PAIRS = frozenset({("API", "KEY"), ("ACCESS", "KEY"), ("PRIVATE", "KEY"), ("SECRET", "KEY")})
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# A generated credential without a known prefix (an AWS secret access key, most API keys) is a run
# of 24 or more base64 characters mixing upper case, lower case and digits that changes character
# class at least 4 times in 10 (random base62 does about 6 in 10). Words do not: a camel-case model
# name changes about 3 in 10, and a commit id (hex, one case), a UUID or an ARN has no such run.
_SEPARATORS = re.compile(r"[-_.:@ ,;]+")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/=]{24,}")
_GENERATED_SWITCH_RATE = 0.4


def owner_tags(endpoint_name: str) -> tuple[tuple[str, str], ...]:
    """The tags deploy adds to every resource it creates."""
    return ((OWNER_TAG, __version__), (ENDPOINT_TAG, endpoint_name))


def _key_words(key: str) -> list[str]:
    """``x-api-key`` → X API KEY; ``AuthToken`` → AUTH TOKEN; ``apikey`` → APIKEY."""
    return [word.upper() for word in _WORD.findall(key)]


def key_means_credential(key: str) -> bool:
    """Whether a tag key names a credential, by the secrets module's convention or by its words."""
    if is_secret_name(key):
        return True
    words = _key_words(key)
    if any(word in _CREDENTIAL_WORDS or word in ("TOKEN", "SECRET") for word in words):
        return True
    return any(pair in _CREDENTIAL_PAIRS for pair in zip(words, words[1:], strict=False))


def value_is_credential(key: str, value: str) -> bool:
    """Whether a tag's value is a credential: by its key, its known format, or its generated look."""
    return key_means_credential(key) or looks_like_secret(value, key) or looks_generated(value)


def _character_class(character: str) -> int:
    return 0 if character.isupper() else 1 if character.islower() else 2 if character.isdigit() else 3


def looks_generated(value: str) -> bool:
    """Whether some separator-free part of ``value`` looks like a generated key (see above)."""
    for part in _SEPARATORS.split(value):
        if not _BASE64_RUN.fullmatch(part) or not {0, 1, 2} <= {_character_class(c) for c in part}:
            continue
        switches = sum(
            _character_class(a) != _character_class(b) for a, b in zip(part, part[1:], strict=False)
        )
        if switches >= _GENERATED_SWITCH_RATE * len(part):
            return True
    return False


def _shown(key: str, value: str, hidden: Collection[str]) -> str:
    """``--tag KEY=VALUE`` as a message may show it: a credential's value is never shown."""
    if value in hidden or value_is_credential(key, value):
        return f"--tag {key}=…"
    return f"--tag {key}={value}"


def user_tag_problems(
    tags: tuple[tuple[str, str], ...], *, secret_values: Mapping[str, str] | None = None
) -> list[str]:
    """Duplicate keys, keys in the reserved ``lmi-config`` namespace, credentials (values never
    printed), and values equal to a ``--secret-env`` variable's (``secret_values``: name → value)."""
    problems = []
    hidden = frozenset(value for value in (secret_values or {}).values() if value)
    for key, value in tags:
        names = sorted(name for name, secret in (secret_values or {}).items() if secret and value == secret)
        if names:
            problems.append(
                f"--tag {key}: the value is the value of --secret-env {', '.join(names)}; tags are stored and "
                "shown in plain text (the value is not shown here)"
            )
    first_of: dict[str, str] = {}
    for key, value in tags:
        if looks_like_secret(key):
            problems.append(
                "a --tag key is itself a credential (hf_…, AKIA…); tags are stored and shown in plain text "
                "(the key is not shown here)"
            )
            continue
        if key.strip().lower().startswith(RESERVED_PREFIX):
            problems.append(
                f"tag key {key!r}: keys starting with {RESERVED_PREFIX!r} are reserved for lmi-config's own "
                f"tags ({OWNER_TAG}, {ENDPOINT_TAG}), which decide what --delete removes; choose another key"
            )
        if value_is_credential(key, value):
            problems.append(
                f"--tag {key}: the value is a credential (by its key or its format) and tags are stored and "
                "shown in plain text; pass credentials to the container with --secret-env NAME instead "
                "(the value is not shown here)"
            )
        if key in first_of:
            problems.append(
                f"tag key {key!r} is given twice ({first_of[key]} and {_shown(key, value, hidden)}); "
                "give each key once"
            )
        else:
            first_of[key] = _shown(key, value, hidden)
    return problems
