"""The offline model catalog: configs, aliases, per-type defaults and the architecture families the
parameter count needs.

Two files: ``data/models.json`` (hand-curated, with sources checked by hand) and
``data/models_generated.json`` (written by ``scripts/gen_model_catalog.py`` from the config.json
copies in NVIDIA's aiconfigurator wheels). Hand entries come first, so they win a shared id."""

import marshal
import re
from functools import cache
from typing import Any, NamedTuple

from lmi_config.knowledge import load_data, load_derived


@cache
def catalog_rows() -> tuple[dict[str, Any], ...]:
    """Every catalog entry (model id, aliases, config, parameter count, source): hand-curated first."""
    return hand_catalog_rows() + generated_catalog_rows()


@cache
def hand_catalog_rows() -> tuple[dict[str, Any], ...]:
    """The hand-curated entries (``models.json``)."""
    return tuple(load_data("models.json")["models"])


@cache
def generated_catalog_rows() -> tuple[dict[str, Any], ...]:
    """The generated entries (``models_generated.json``); ``memory_not_estimated`` says why a row is unsized."""
    return tuple(load_data("models_generated.json")["models"])


def catalog_index_entries(document: dict[str, Any]) -> dict[str, bytes]:
    """A catalog file's rows by lower-case id, alias and last path part (the first row to name one
    wins), each row marshalled: kept in the data cache (:func:`load_derived`), so a lookup decodes
    the one row it finds and not the whole file."""
    index: dict[str, bytes] = {}
    for row in document["models"]:
        encoded = marshal.dumps(row)
        for name in [row["model_id"], *row.get("aliases", [])]:
            index.setdefault(name.lower(), encoded)
            index.setdefault(name.lower().split("/")[-1], encoded)
    return index


def generated_catalog_row(name: str) -> dict[str, Any] | None:
    """The generated entry (``models_generated.json``) a lower-case id, alias or last path part
    names, or None; a fresh copy each call."""
    encoded = load_derived("models_generated.json", catalog_index_entries).get(name)
    return None if encoded is None else marshal.loads(encoded)


@cache
def architecture_family(name: str) -> frozenset[str]:
    """Model types of an architecture family (``gated_mlp``, ``learned_positions``)."""
    return frozenset(load_data("models.json")["architecture_families"][name]["values"])


def type_defaults(model_type: str) -> dict[str, Any] | None:
    """Config defaults of a model type whose config.json omits them (Gemma 3 text), or None."""
    row = load_data("models.json").get("type_defaults", {}).get(model_type)
    return dict(row) if row else None


@cache
def gated_prefixes() -> tuple[tuple[str, str], ...]:
    """Hub repository id prefixes that are gated (a token with granted access is needed), with sources."""
    return tuple(
        (row["prefix"], row["source"]) for row in load_data("models.json").get("gated_repositories", [])
    )


def is_gated(model_id: str) -> bool:
    """Whether a Hub id is in a gated family (``meta-llama/…``, ``mistralai/…``, ``google/gemma…``)."""
    return any(model_id.startswith(prefix) for prefix, _ in gated_prefixes())


class ModelIdentity(NamedTuple):
    """What a Hub id is known to be without its config.json: the architecture its checkpoint declares,
    from the checkpoints vLLM's tests name per architecture (``data/model_identities.json``).

    ``sibling``: the id is not named there, but the same repository family at another size (or its
    quantized copy) is, and every size named has this architecture — an inference, not a fact."""

    model_id: str
    architecture: str
    model_type: str | None
    source: str
    sibling: str | None = None


# a parameter count in a repository name (7B, 0.5B, 8x7B, A3B, 125M) and the quantized-copy suffixes
_SIZE = re.compile(r"(?<![a-z0-9._])(?:\d+x)?a?\d+(?:[._]\d+)?[bm](?![a-z0-9])")
_QUANTIZED = re.compile(r"(?:-(?:awq|gptq(?:-int[48])?|fp8(?:-dynamic)?|int[48]|bnb-4bit|w4a16|w8a8))+$")


def quantized_copy_base(model_id: str) -> tuple[str, str] | None:
    """(the id without its quantized-copy suffix, the suffix in lower case, e.g. ``-awq-int4``) for a
    name such as ``nvidia/Llama-3.1-8B-Instruct-FP8`` or ``TheBloke/Llama-2-7B-Chat-AWQ``; None
    without one. Its layers, heads and widths are the base model's: quantization changes the stored
    weights only."""
    key = model_id.strip()
    if len(key) > 193:
        return None
    found = _QUANTIZED.search(key.lower())
    if not found or found.start() == 0:
        return None
    return key[: found.start()], found.group(0)


def _family(model_id: str) -> str:
    name = _QUANTIZED.sub("", model_id.strip().lower())
    return _SIZE.sub("{size}", name)


@cache
def _identities() -> dict[str, ModelIdentity]:
    return {
        row["model_id"].lower(): ModelIdentity(
            row["model_id"],
            row["architecture"],
            row["model_type"],
            row["source"],
        )
        for row in load_data("model_identities.json")["models"]
    }


@cache
def _families() -> dict[str, tuple[ModelIdentity, ...]]:
    families: dict[str, list[ModelIdentity]] = {}
    for identity in _identities().values():
        families.setdefault(_family(identity.model_id), []).append(identity)
    return {key: tuple(members) for key, members in families.items()}


def model_identity(model_id: str) -> ModelIdentity | None:
    """The architecture of a Hub id vLLM's tests name (case-insensitive); else, where its family (the
    name without its size or quantization suffix) is named at other sizes that all agree, that
    architecture marked as inferred from a sibling; else None."""
    key = model_id.strip().lower()
    if len(key) > 193 or key.count("/") != 1:
        return None  # not a Hub id (namespace/name, at most 96 characters each): an S3 prefix, a path
    known = _identities().get(key)
    if known is not None:
        return known
    family = _family(key)
    members = _families().get(family, ()) if family != key or _QUANTIZED.search(key) else ()
    if not members or len({member.architecture for member in members}) != 1:
        return None
    first = min(members, key=lambda member: member.model_id.lower())
    return first._replace(model_id=model_id.strip(), sibling=first.model_id)
