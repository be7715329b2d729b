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

from lmi_config.knowledge.attention_backends import (
    UNKNOWN,
    AttentionRelease,
    attention_release,
    flash_attention_builds,
)
from lmi_config.knowledge.engine_checks import EngineCheck, covered_checks
from lmi_config.shape.attention_selection import (
    BACKEND_KEY,
    ENV_KEY,
    AttentionInputs,
    Selection,
    attention_inputs,
    capability_text,
    expression_values,
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
    "alibi": "ALiBi position biases (its model class passes alibi_slopes to the attention layers)",
}


# --------------------------------------------------------------------------------------------
# the checks of the chosen backend
# --------------------------------------------------------------------------------------------


def judge_attention_backend(config: CanonicalConfig, target: Target, shape: ContainerShape) -> list[Problem]:
    """The attention checks of the image's vLLM this model fails on the instance's GPU; for a file
    that names no instance, those it fails on every GPU of the SageMaker instances."""
    if target.backend != "vllm" or not target.release.vllm:
        return []
    facts = attention_release(target.release.vllm)
    if facts is None:
        return []
    if target.instance is None:
        return _on_every_gpu(config, target, shape, facts)
    inputs = attention_inputs(config, target, shape, facts=facts)
    return _judge(config, facts, inputs, target.release.vllm) if inputs is not None else []


def _judge(
    config: CanonicalConfig, facts: AttentionRelease, inputs: AttentionInputs, vllm: str | None
) -> list[Problem]:
    if (
        inputs.forced
        and inputs.forced_by == "VLLM_ATTENTION_BACKEND"
        and inputs.forced not in facts.backend_names
    ):
        return _unknown_backend(facts, inputs, vllm)
    selection = select_backend(facts, inputs, vllm)
    if selection is None:
        return []
    if not selection.possible:
        return (
            _forced_refused(selection, inputs, vllm)
            if selection.forced
            else _none_valid(selection, inputs, vllm)
        )
    return [
        *_head_size(selection, inputs, vllm),
        *_features(selection, inputs, vllm, facts),
        *_sinks(selection, inputs, vllm, facts),
        *_flash_attention_build(selection, inputs, vllm, facts),
        *_block_size(selection, inputs, vllm, config),
    ]


def _on_every_gpu(
    config: CanonicalConfig, target: Target, shape: ContainerShape, facts: AttentionRelease
) -> list[Problem]:
    """What the release refuses on each GPU of the SageMaker instances (one per compute capability),
    reported only where it refuses it on all of them: the file names no instance, so no guess about
    the GPU becomes an error."""
    from lmi_config.knowledge.capabilities import GpuDevice, gpu_device, gpu_device_names

    known = [gpu_device(name) for name in gpu_device_names()]
    devices: dict[int, GpuDevice] = {}
    for device in known:
        if device is not None:
            devices.setdefault(device.compute_capability, device)  # the first name of each capability
    verdicts = []
    for capability in sorted(devices):
        inputs = attention_inputs(config, target, shape, device=devices[capability], facts=facts)
        if inputs is None:
            return []
        verdicts.append(_judge(config, facts, inputs, target.release.vllm))
    common = set.intersection(*({problem.check for problem in problems} for problems in verdicts))
    if not verdicts or not common:
        return []
    names = ", ".join(devices[capability].name for capability in sorted(devices))
    # the message of a current data-centre GPU stands for the rest (the first of compute capability 8.0+)
    shown = next((v for c, v in zip(sorted(devices), verdicts, strict=True) if c >= 80), verdicts[0])
    reported: list[Problem] = []
    for problem in shown:
        if problem.check in common and problem.check not in {p.check for p in reported}:
            prefix = (
                f"on every GPU of the SageMaker instances ({names}; the file names no instance) — for one: "
            )
            reported.append(problem._replace(message=prefix + problem.message))
    return reported


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
    if inputs.requires_alibi is True:
        values["alibi"] = True
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


def _attention_check(vllm: str | None, prefix: str) -> EngineCheck | None:
    """The catalogue's check of the release whose message starts with ``prefix``, among those the
    attention rules cover."""
    for rule in (HEAD_SIZE, FEATURE):
        for check in covered_checks(rule, vllm):
            if check.message.startswith(prefix):
                return check
    return None


def _none_valid(selection: Selection, inputs: AttentionInputs, vllm: str | None) -> list[Problem]:
    check = _attention_check(vllm, "No valid attention backend")
    if check is None:
        return []
    sinks = any("sink" in reason for reason in selection.refused)
    what = (
        "attention sinks (its model class passes them to every attention layer)"
        if sinks
        else f"head size is {inputs.head_size}"
    )
    message = (
        f"the model's {what}: vLLM {vllm} finds no attention backend for it on the {inputs.gpu} "
        f"({selection.why}) and stops the start-up with 'No valid attention backend found for cuda …' "
        f"({check.cited}) — " + ("another GPU" if sinks else "a model with another head size, or another GPU")
    )
    return [Problem(FEATURE if sinks else HEAD_SIZE, "error", message, "option.model_id")]


def _forced_refused(selection: Selection, inputs: AttentionInputs, vllm: str | None) -> list[Problem]:
    """A backend the user names that its own validation refuses for the model on this GPU (0.11+)."""
    check = _attention_check(vllm, "Selected backend")
    if check is None or not selection.refused:
        return []
    what = []
    if any("sink" in reason for reason in selection.refused):
        what.append("attention sinks (its model class passes them to every attention layer)")
    if any("head_size" in reason for reason in selection.refused):
        what.append(f"head size {inputs.head_size}")
    key = BACKEND_KEY if inputs.forced_by == BACKEND_KEY else ENV_KEY
    message = (
        f"{inputs.forced_by}={inputs.forced}: vLLM {vllm} {selection.why}"
        + (f" — the model needs {' and '.join(what)}" if what else "")
        + f"; the start-up stops with 'Selected backend AttentionBackendEnum.{inputs.forced} is not valid for this "
        f"configuration. Reason: {list(selection.refused)}' ({check.cited}) — leave {inputs.forced_by} unset, so "
        "that vLLM picks the first backend of its list that takes the model"
    )
    return [Problem(FEATURE, "error", message, key)]


def _sinks(
    selection: Selection, inputs: AttentionInputs, vllm: str | None, facts: AttentionRelease
) -> list[Problem]:
    """Attention sinks (gpt-oss) on a backend whose implementation requires what this GPU lacks (0.10's
    FlashAttention: 'Sinks are only supported in FlashAttention 3', the version Hopper runs)."""
    if not inputs.has_sinks:
        return []
    values = expression_values(facts, inputs, vllm)
    if not all(
        backend.accepts_sink(values) is False and "sinks" in backend.refuses for backend in selection.possible
    ):
        return []
    backend = selection.possible[0]
    checks = _checks(FEATURE, vllm, set(backend.refuses["sinks"]))
    if not checks:
        return []
    check = checks[0]
    named = f" ({inputs.forced_by}={inputs.forced})" if selection.forced else ""
    message = (
        f"the model's attention layers use attention sinks; vLLM {vllm} {selection.why}{named}, which runs "
        f"FlashAttention {values['fa_version']} on the {inputs.gpu} (compute capability "
        f"{capability_text(inputs.capability)}) and stops the start-up with '{check.message}' ({check.cited}) — "
        + (
            f"leave {inputs.forced_by} unset (vLLM then takes Triton attention for sinks)"
            if selection.forced
            else "a Hopper GPU"
        )
    )
    key = (
        BACKEND_KEY
        if inputs.forced_by == BACKEND_KEY
        else (ENV_KEY if selection.forced else "option.model_id")
    )
    return [Problem(FEATURE, "error", message, key)]


_BUILD_WORDS = {
    "logits_soft_cap": "logits soft-capping (config.json attn_logit_softcapping={value})",
    "sliding_window": "a sliding window (config.json sliding_window={value})",
    "alibi": "ALiBi position biases",
}


def _flash_attention_build(
    selection: Selection, inputs: AttentionInputs, vllm: str | None, facts: AttentionRelease
) -> list[Problem]:
    """A feature of the model the FlashAttention build the release runs on this GPU is compiled
    without (vLLM 0.10-0.16 on Hopper: FA3 with FLASHATTENTION_DISABLE_SOFTCAP, so Gemma-2 stops with
    'This flash attention build does not support tanh softcapping.' in the profile run)."""
    builds = flash_attention_builds(vllm)
    if builds is None or not selection.possible or not all(b.flash_attn for b in selection.possible):
        return []
    values = expression_values(facts, inputs, vllm)
    version = values["fa_version"]
    build = builds.builds.get(version) if isinstance(version, int) and version is not UNKNOWN else None
    if build is None:
        return []
    window = v0_sliding_window(facts, inputs) if facts.kind == "selector" else inputs.sliding_window
    used = {
        "logits_soft_cap": inputs.soft_cap,
        "sliding_window": window,
        "alibi": inputs.requires_alibi or None,
    }
    refused = [
        (feature, build.refuses[feature])
        for feature, value in used.items()
        if value and feature in build.refuses
    ]
    if not refused:
        return []
    feature, refusal = refused[0]
    steps = facts.flash_attn_version or {}
    other = {**values, "env_VLLM_FLASH_ATTN_VERSION": 2}
    other["fa_version"] = facts.fa_version(other)
    fallback = builds.builds.get(2)
    advice = (
        "set option.env=VLLM_FLASH_ATTN_VERSION=2 (the FA2 build keeps it), or another GPU"
        if other["fa_version"] == 2 and fallback is not None and feature not in fallback.refuses
        else "another GPU, or an LMI release whose vLLM builds FlashAttention with it"
    )
    definition = FLASH_DEFINITIONS.get(feature, feature)
    message = (
        f"the model uses {_BUILD_WORDS[feature].format(value=used[feature])}; vLLM {vllm} {selection.why}, which "
        f"runs FlashAttention {version} on the {inputs.gpu} ({steps.get('source', 'get_flash_attn_version')}), and the "
        f"FA{version} build vLLM {vllm} compiles (vllm-project/flash-attention {builds.commit[:10]}, pinned at "
        f"{builds.commit_source}) sets {definition} ({build.source}): the start-up profile run stops with "
        f"'{refusal.message}' ({refusal.source}) — {advice}"
    )
    key = ENV_KEY if advice.startswith("set option.env") else "option.model_id"
    return [Problem(FEATURE, "error", message, key)]


FLASH_DEFINITIONS = {
    "logits_soft_cap": "FLASHATTENTION_DISABLE_SOFTCAP",
    "sliding_window": "FLASHATTENTION_DISABLE_LOCAL",
    "alibi": "FLASHATTENTION_DISABLE_ALIBI",
}


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
