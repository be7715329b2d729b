"""The start-up checks the attention backend vLLM picks (``shape/attention_selection.py``) makes on
the model: a head size outside its list, logits soft-capping (Gemma-2: every backend of 0.5.3 but
FlashInfer; xFormers of 0.6; FlexAttention), a sliding window (FlexAttention of 0.10), an FP8 KV cache
(FlexAttention), a block size that is not a multiple of 16, no backend at all (0.11+), and a
VLLM_ATTENTION_BACKEND the release does not know. Only what every backend the release may pick
refuses is reported: no guess becomes an error. Each problem's ``check`` is the slug of the rule that
reports it (``rules/attention.py``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lmi_config.knowledge.attention_backends import AttentionRelease, attention_release
from lmi_config.knowledge.engine_checks import EngineCheck, covered_checks
from lmi_config.shape.attention_selection import (
    ENV_KEY,
    AttentionInputs,
    Selection,
    attention_inputs,
    capability_text,
    select_backend,
    v0_sliding_window,
)
from lmi_config.shape.problems import Problem

if TYPE_CHECKING:
    from lmi_config.configfile.canonical import CanonicalConfig
    from lmi_config.shape.dimensions import Target
    from lmi_config.shape.types import ContainerShape

HEAD_SIZE = "attention-head-size-unsupported"
FEATURE = "attention-feature-unsupported"
BLOCK_SIZE = "attention-block-size-unsupported"
UNKNOWN_BACKEND = "attention-backend-unknown"
BLOCK_KEY = "option.block_size"
_FEATURE_WORDS = {
    "logits_soft_cap": "logits soft-capping (config.json attn_logit_softcapping={value})",
    "sliding_window": "a sliding window (config.json sliding_window={value})",
    "quantized_kv_cache": "a quantized KV cache (kv_cache_dtype={value})",
}


# --------------------------------------------------------------------------------------------
# the checks of the chosen backend
# --------------------------------------------------------------------------------------------


def judge_attention_backend(config: CanonicalConfig, target: Target, shape: ContainerShape) -> list[Problem]:
    """The attention checks of the image's vLLM this model fails on this GPU."""
    if target.backend != "vllm" or not target.release.vllm:
        return []
    facts = attention_release(target.release.vllm)
    inputs = attention_inputs(config, target, shape) if facts is not None else None
    if facts is None or inputs is None:
        return []
    if inputs.forced and inputs.forced not in facts.backend_names:
        return _unknown_backend(facts, inputs, target.release.vllm)
    selection = select_backend(facts, inputs, target.release.vllm)
    if selection is None:
        return []
    if not selection.possible:
        return _none_valid(selection, inputs, target.release.vllm)
    return [
        *_head_size(selection, inputs, target.release.vllm),
        *_features(selection, inputs, target.release.vllm, facts),
        *_block_size(selection, inputs, target.release.vllm, config),
    ]


def _checks(rule: str, vllm: str | None, identities: set[str]) -> tuple[EngineCheck, ...]:
    return tuple(check for check in covered_checks(rule, vllm) if check.identity in identities)


def _said(check: EngineCheck, values: dict[str, object]) -> str:
    return check.message_with(values)


def _head_size(selection: Selection, inputs: AttentionInputs, vllm: str | None) -> list[Problem]:
    refusing = [
        backend
        for backend in selection.possible
        if backend.impl_checks_head_size
        and backend.impl_head_sizes is not None
        and inputs.head_size not in backend.impl_head_sizes
    ]
    if not refusing or len(refusing) != len(selection.possible):
        return []
    backend = refusing[0]
    checks = _checks(HEAD_SIZE, vllm, set(backend.refuses.get("head_size", ())))
    if not checks:
        return []
    check = checks[0]
    sizes = list(backend.impl_head_sizes or ())
    said = _said(check, {"head_size": inputs.head_size, "suppored_head_sizes": sizes, "supported_head_sizes": sizes,
                         "support_head_sizes": sizes, "get_supported_head_sizes()": sizes})  # fmt: skip
    said = re.sub(r"\{[^{}]*get_supported_head_sizes\(\)\}", str(sizes), said)
    advice = (
        "set option.env=VLLM_USE_V1=0 (the V0 engine's xFormers takes it), or a model with another head size"
        if "VLLM_USE_V1=0" in said
        else f"a GPU or vLLM release whose backend takes head size {inputs.head_size}, or another model"
    )
    message = (
        f"the model's head size is {inputs.head_size} (config.json head_dim, else hidden_size / "
        f"num_attention_heads); vLLM {vllm} {selection.why}, which stops the start-up with '{said}' "
        f"({check.cited}; backend chosen by {selection.source}) — {advice}"
    )
    key = ENV_KEY if "VLLM_USE_V1=0" in said else "option.model_id"
    return [Problem(HEAD_SIZE, "error", message, key)]


def _feature_values(inputs: AttentionInputs, facts: AttentionRelease) -> dict[str, object]:
    values: dict[str, object] = {}
    if inputs.soft_cap is not None:
        values["logits_soft_cap"] = inputs.soft_cap
    window = v0_sliding_window(facts, inputs) if facts.kind == "selector" else inputs.sliding_window
    if window is not None:
        values["sliding_window"] = window
    if inputs.kv_cache_dtype not in ("auto", "float16", "bfloat16"):
        values["quantized_kv_cache"] = inputs.kv_cache_dtype
    return values


def _features(
    selection: Selection, inputs: AttentionInputs, vllm: str | None, facts: AttentionRelease
) -> list[Problem]:
    """One problem for every feature of the model the chosen backend refuses, quoting the check the
    backend makes first (in its code's order)."""
    backend = selection.possible[0]
    refused: list[tuple[EngineCheck, str, str]] = []
    for feature, value in _feature_values(inputs, facts).items():
        if not all(feature in candidate.refuses for candidate in selection.possible):
            continue
        for check in _checks(FEATURE, vllm, set(backend.refuses[feature]))[:1]:
            refused.append((check, feature, _FEATURE_WORDS[feature].format(value=value)))
    if not refused:
        return []
    refused.sort(key=lambda item: (item[0].path, item[0].line))
    check, feature, _ = refused[0]
    said = _said(check, {})
    if "VLLM_ATTENTION_BACKEND=FLASHINFER" in said:
        advice, key = "set option.env=VLLM_ATTENTION_BACKEND=FLASHINFER, as vLLM's message says", ENV_KEY
    elif [item[1] for item in refused] == ["quantized_kv_cache"]:
        advice, key = (
            "leave option.kv_cache_dtype at auto, or a GPU whose default backend takes it",
            "option.kv_cache_dtype",
        )
    else:
        advice, key = (
            f"a GPU of compute capability 8.0 or more (the {inputs.gpu} has {capability_text(inputs.capability)}), "
            "or an LMI release whose vLLM picks another backend on this GPU",
            "option.model_id",
        )
    others = "; then ".join(f"'{_said(other, {})}' ({other.cited})" for other, _, _ in refused[1:])
    message = (
        f"the model uses {' and '.join(words for _, _, words in refused)}; vLLM {vllm} {selection.why}, which "
        f"stops the start-up with '{said}' ({check.cited}; backend chosen by {selection.source})"
        + (f", and then {others}" if others else "")
        + f" — {advice}"
    )
    return [Problem(FEATURE, "error", message, key)]


def _block_size(
    selection: Selection, inputs: AttentionInputs, vllm: str | None, config: CanonicalConfig
) -> list[Problem]:
    required = [backend.block_size_multiple() for backend in selection.possible]
    if not all(required) or not config.has(BLOCK_KEY):
        return []
    multiple, identities = required[0]  # type: ignore[misc]
    if inputs.block_size % multiple == 0:
        return []
    checks = _checks(BLOCK_SIZE, vllm, set(identities))
    if not checks:
        return []
    check = checks[0]
    message = (
        f"{BLOCK_KEY}={inputs.block_size}: vLLM {vllm} {selection.why}, whose KV cache stops the start-up "
        f"with '{_said(check, {})}' ({check.cited}) — use a multiple of {multiple} (16 is vLLM's default)"
    )
    return [Problem(BLOCK_SIZE, "error", message, BLOCK_KEY)]


def _none_valid(selection: Selection, inputs: AttentionInputs, vllm: str | None) -> list[Problem]:
    checks = covered_checks(HEAD_SIZE, vllm)
    check = next((c for c in checks if "No valid attention backend" in c.message), None)
    if check is None:
        return []
    message = (
        f"the model's head size is {inputs.head_size}: vLLM {vllm} finds no attention backend for it on the "
        f"{inputs.gpu} ({selection.why}) and stops the start-up with 'No valid attention backend found for "
        f"cuda …' ({check.cited}) — a model with another head size, or another GPU"
    )
    return [Problem(HEAD_SIZE, "error", message, "option.model_id")]


def _unknown_backend(facts: AttentionRelease, inputs: AttentionInputs, vllm: str | None) -> list[Problem]:
    checks = covered_checks(UNKNOWN_BACKEND, vllm)
    if not checks:
        return []
    names = ", ".join(sorted(facts.backend_names))
    message = (
        f"option.env sets VLLM_ATTENTION_BACKEND={inputs.forced}, which vLLM {vllm} does not know: it stops the "
        f"start-up with '{checks[0].message_with({'backend_by_env_var': inputs.forced})[:160]}' ({checks[0].cited}) — "
        f"use one of {names} (case-sensitive), or leave it unset"
    )
    return [Problem(UNKNOWN_BACKEND, "error", message, ENV_KEY)]
