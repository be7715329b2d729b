"""The offline model catalog: configs, aliases, per-type defaults and the architecture families the
parameter count needs.

Two files: ``data/models.json`` (hand-curated, with sources checked by hand) and
``data/models_generated.json`` (written by ``scripts/gen_model_catalog.py`` from the config.json
copies in NVIDIA's aiconfigurator wheels). Hand entries come first, so they win a shared id."""

from __future__ import annotations

from functools import cache
from typing import Any

from lmi_config.knowledge import load_data


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
