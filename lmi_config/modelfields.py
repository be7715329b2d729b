"""The fields of a model's ``config.json``: their names in each family, and their validation.

Heads, layers and sizes must be positive integers (a boolean is an integer to Python, not a
count; NaN and infinity are floats); anything else is a :class:`ModelResolutionError` naming
the field and the file, so that no size check ever divides by zero or "fits" a negative model.
"""

from __future__ import annotations

import json
import math
from typing import Any

# each field under the names the families use, the first one set wins
HEADS = ("num_attention_heads", "n_head", "num_heads", "n_heads", "num_head")
HIDDEN = ("hidden_size", "n_embd", "d_model", "model_dim", "dim")
LAYERS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
KV_HEADS = ("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num")
INTERMEDIATE = ("intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size", "inner_hidden_size")
EXPERTS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
EXPERTS_PER_TOKEN = ("num_experts_per_tok", "num_experts_per_token", "moe_top_k")
POSITIONS = ("max_position_embeddings", "n_positions", "n_ctx", "max_sequence_length", "seq_length")


MAX_COUNT = 2**53  # the largest count a float holds exactly
JAVA_INT_MAX = 2**31 - 1  # the container's sequence lengths are Java / C int


class ModelResolutionError(ValueError):
    """A model that cannot be described: not in the catalog, offline, gated, or a bad config."""


class UnusableModelName(ModelResolutionError):
    """A name that cannot be a model at all: not a path, not a catalog id, not a Hub id."""


class ModelUnavailable(ModelResolutionError):
    """A plausible model this run cannot describe: not in the catalog and the Hub is off, offline or gated."""


def is_count_integer(value: Any) -> bool:
    """An ``int`` that is not a ``bool`` (True is an int to Python, not a count)."""
    return isinstance(value, int) and not isinstance(value, bool)


def count_field(
    config: dict[str, Any], names: tuple[str, ...], *, where: str, minimum: int = 1, required: bool = False
) -> int | None:
    """The first of ``names`` that is set, checked to be an integer >= ``minimum`` (None when unset).

    A boolean, a float (NaN included), a string or a number below the minimum is a
    :class:`ModelResolutionError` naming the field and the file.
    """
    for name in names:
        value = config.get(name)
        if value is None:
            continue
        if not is_count_integer(value) or value < minimum:
            kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
            raise ModelResolutionError(f"{where}: {name} must be {kind}, not {_shown(value)}; fix the config")
        if value > MAX_COUNT:
            # past 2**53 a count is no longer exact as a float, and the sizes computed from it overflow
            raise ModelResolutionError(
                f"{where}: {name} must be at most {MAX_COUNT}, not {_shown(value)}; fix the config"
            )
        return int(value)
    if required:
        raise ModelResolutionError(
            f"{where}: config.json lacks the attention heads, hidden size or layer count "
            "(num_attention_heads/n_head, hidden_size/n_embd, num_hidden_layers/n_layer)"
        )
    return None


def _shown(value: Any) -> str:
    text = (
        json.dumps(value)
        if isinstance(value, bool | int | float | str) or value is None
        else type(value).__name__
    )
    return text if len(text) <= 40 else text[:39] + "…"


def key_value_heads(config: dict[str, Any], model_type: str, heads: int, where: str, notes: list[str]) -> int:
    """KV heads by the family's convention (Falcon's multi_query, GQA's num_key_value_heads …)."""
    if model_type == "falcon" or "RefinedWeb" in str(config.get("model_type")):
        if config.get("new_decoder_architecture"):
            written = count_field(config, ("num_kv_heads", "n_head_kv", "num_key_value_heads"), where=where)
            return _grouping(written or heads, heads, where)
        if config.get("multi_query", True):
            if config.get("num_kv_heads") not in (None, 1):
                notes.append("multi_query=true means one KV head although num_kv_heads says otherwise")
            return 1
        return heads
    if config.get("multi_query") is True:
        return 1
    return _grouping(count_field(config, KV_HEADS, where=where) or heads, heads, where)


def _grouping(kv: int, heads: int, where: str) -> int:
    """KV heads that split the attention heads into equal groups (grouped-query attention): every
    attention implementation repeats each KV head ``heads // kv`` times, so another count is a
    config no engine loads, and no size can be computed from it."""
    if kv > heads or heads % kv:
        divisors = [count for count in range(1, min(heads, 4096) + 1) if heads % count == 0]
        shown = ", ".join(map(str, divisors[:12])) + (" …" if len(divisors) > 12 else "")
        raise ModelResolutionError(
            f"{where}: num_key_value_heads {kv} does not divide num_attention_heads {heads} into equal groups; "
            f"grouped-query attention needs a divisor of {heads} ({shown}); fix the config"
        )
    return kv


def rope_factor(config: dict[str, Any], where: str, max_positions: int | None) -> float | None:
    """``rope_scaling.factor`` as a finite positive number that keeps the scaled context within the
    container's integers (None when the config sets none)."""
    rope = config.get("rope_scaling")
    if not isinstance(rope, dict) or rope.get("factor") is None:
        return None
    factor = rope["factor"]
    if isinstance(factor, bool) or not isinstance(factor, int | float) or not _finite_positive(factor):
        raise ModelResolutionError(
            f"{where}: rope_scaling.factor must be a finite number above 0, not {_shown(factor)}; fix the config"
        )
    if max_positions and float(factor) * max_positions > JAVA_INT_MAX:
        raise ModelResolutionError(
            f"{where}: rope_scaling.factor {_shown(factor)} stretches max_position_embeddings {max_positions} past "
            f"{JAVA_INT_MAX} positions, more than any engine can address; fix the config"
        )
    return float(factor)


def _finite_positive(number: float) -> bool:
    try:
        return math.isfinite(float(number)) and number > 0
    except OverflowError:  # an integer past what a float holds
        return False


# layer kinds the KV-cache formula sizes: every other kind (Mamba, linear attention) keeps a
# different state per layer
_ATTENTION_LAYER_KINDS = frozenset({"full_attention", "sliding_attention"})


def layout_not_modelled(config: dict[str, Any]) -> str | None:
    """Why the parameter and KV-cache formulas do not describe this config's layers, or None.

    Each marker is a config.json field of a layout the formulas ignore: Mamba layers mixed with
    attention (``hybrid_override_pattern``, Nemotron-H), per-layer blocks of different widths
    (``block_configs``, Nemotron-NAS), linear-attention layers (``layer_types``, Qwen3.5), MoE
    only every n-th layer (``interleave_moe_layer_step``, Llama-4 Maverick) and a sparse-attention
    indexer with its own cache (``index_topk``, DeepSeek-V3.2 / GLM-5).
    """
    if (
        config.get("hybrid_override_pattern")
        or config.get("hybrid_layer_pattern")
        or config.get("layers_block_type")
    ):
        return "hybrid layers (attention mixed with Mamba or other layers): the KV-cache formula counts attention only"
    if config.get("block_configs"):
        return "layers of different widths (block_configs): the parameter formula assumes identical layers"
    kinds = config.get("layer_types")
    if isinstance(kinds, list) and set(map(str, kinds)) - _ATTENTION_LAYER_KINDS:
        others = sorted(set(map(str, kinds)) - _ATTENTION_LAYER_KINDS)
        return f"{', '.join(others)} layers keep a state the KV-cache formula does not size"
    step = config.get("interleave_moe_layer_step")
    if isinstance(step, int) and not isinstance(step, bool) and step > 1:
        return f"experts in one layer of every {step} only: the parameter formula puts them in every layer"
    if config.get("index_topk"):
        return "sparse attention with an indexer (index_topk) whose cache the KV formula does not size"
    return None
