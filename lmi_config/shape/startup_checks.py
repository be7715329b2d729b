"""The judge's verdict on vLLM's own start-up checks, as each image's vLLM makes them.

Each judgement here covers checks of ``data/vllm_checks.json`` (generated from every pinned vLLM
release's code; ``data/vllm_check_coverage.json`` says which checks each covers). It fires only where
the image's vLLM version has one of them, quotes the engine's message with the values filled in, and
cites the file and line at that release. Each problem's ``check`` is the slug of the rule that reports
it (``rules/startup.py``); errors block the planner like every other error of the judge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lmi_config.knowledge.engine_checks import EngineCheck, covered_checks
from lmi_config.shape.frontend import flag
from lmi_config.shape.problems import TP_KEY, Problem

if TYPE_CHECKING:
    from lmi_config.configfile.canonical import CanonicalConfig
    from lmi_config.shape.dimensions import Target
    from lmi_config.shape.types import ContainerShape

MODEL_KEY = "option.model_id"
BATCHED_TOKEN_KEYS = ("option.max_rolling_batch_prefill_tokens", "option.max_num_batched_tokens")
BATCHED_TOKENS = "batched-tokens-below-model-len"
BITSANDBYTES_TP = "bitsandbytes-tensor-parallel"
GROUP_MISALIGNED = "quantization-group-misaligned"
# quantization methods whose linear layers split their groups over the tensor-parallel ranks
GROUPED_METHODS = frozenset({"gptq", "awq", "gptq_marlin", "awq_marlin", "marlin", "auto-gptq", "auto_gptq"})


def judge_startup_checks(config: CanonicalConfig, target: Target, shape: ContainerShape) -> list[Problem]:
    """The start-up checks of the image's vLLM this configuration fails."""
    if target.backend != "vllm" or not target.release.vllm:
        return []
    return [
        *_batched_tokens(config, target, shape),
        *_bitsandbytes_tensor_parallel(config, target, shape),
        *_group_misaligned(config, target, shape),
    ]


def _cite(checks: tuple[EngineCheck, ...]) -> str:
    return ", ".join(check.cited for check in checks)


# --- max_num_batched_tokens below max_model_len without chunked prefill -------------------------


def chunked_prefill_on(config: CanonicalConfig, target: Target, shape: ContainerShape) -> bool:
    """Whether the image's vLLM runs with chunked prefill: forced on by its V1 defaults (0.8-0.10),
    as written, else the release's default (V1: on for generation models; V0: on past its long-context
    threshold when no LoRA is asked for)."""
    from lmi_config.knowledge.engine_checks import forces_chunked_prefill
    from lmi_config.sizing.vllm_release import vllm_version

    if forces_chunked_prefill(target.release.vllm):
        return True
    written = shape.engine.enable_chunked_prefill
    if written is not None:
        return written
    profile = vllm_version(target.release.vllm)
    if profile.engine == "v1":
        return True
    length = shape.sequence_length.value if shape.sequence_length else 0
    threshold = profile.long_context_threshold
    return bool(threshold and profile.chunked_default_tokens and length > threshold) and not flag(
        config, "option.enable_lora"
    )


def _batched_tokens(config: CanonicalConfig, target: Target, shape: ContainerShape) -> list[Problem]:
    tokens, length = shape.engine.max_num_batched_tokens, shape.sequence_length
    if tokens is None or length is None or tokens >= length.value:
        return []
    if chunked_prefill_on(config, target, shape):
        return []
    checks = covered_checks(BATCHED_TOKENS, target.release.vllm)
    if not checks:
        return []
    key = next((name for name in BATCHED_TOKEN_KEYS if config.has(name)), BATCHED_TOKEN_KEYS[0])
    said = checks[0].message_with({"max_num_batched_tokens": tokens, "max_model_len": length.value})
    chunked = (
        "option.enable_chunked_prefill=false"
        if shape.engine.enable_chunked_prefill is False
        else "chunked prefill off (this release's default here)"
    )
    message = (
        f"{key}={tokens} is below the sequence length {length.value} ({length.source}) with {chunked}: "
        f"vLLM {target.release.vllm} stops the start-up with '{said}' ({_cite(checks)}) — set {key} to at "
        f"least {length.value}, a shorter max_model_len, or option.enable_chunked_prefill=true"
    )
    return [Problem(BATCHED_TOKENS, "error", message, key)]


# --- a bitsandbytes checkpoint or method with tensor parallelism -------------------------------


def _bitsandbytes_tensor_parallel(
    config: CanonicalConfig, target: Target, shape: ContainerShape
) -> list[Problem]:
    tp, pp = shape.tensor_parallel or 1, shape.pipeline_parallel_degree.value
    stored = target.arch.stored_quantization if target.arch is not None else None
    asked = next(
        (key for key in ("option.quantize", "option.quantization") if (config.get(key) or "").strip().lower()
         == "bitsandbytes"),
        None,
    )  # fmt: skip
    if stored != "bitsandbytes" and asked is None:
        return []
    if tp <= 1 and pp <= 1:
        return []
    checks = covered_checks(BITSANDBYTES_TP, target.release.vllm)
    # a check that names pre_quant refuses only a checkpoint stored in bitsandbytes (with TP; PP runs);
    # the older one refuses the method itself with TP or PP
    applying = tuple(
        check
        for check in checks
        if (stored == "bitsandbytes" and tp > 1) or not any("pre_quant" in text for text in check.conditions)
    )
    if not applying:
        return []
    check = applying[0]
    what = (
        f"{target.model_id} is stored in bitsandbytes (config.json quantization_config)"
        if stored == "bitsandbytes"
        else f"{asked}=bitsandbytes"
    )
    parallel = f"TP {tp}" + (f" x PP {pp}" if pp > 1 else "")
    message = (
        f"{what} with {parallel}: vLLM {target.release.vllm} stops the start-up with '{check.message_with({})}' "
        f"({check.cited}) — use option.tensor_parallel_degree=1"
        + (
            " (with pipeline parallelism where one GPU is too small)"
            if "pre_quant" in " ".join(check.conditions)
            else ""
        )
        + ", or a checkpoint in another format"
    )
    key = TP_KEY if config.has(TP_KEY) or tp > 1 else "option.pipeline_parallel_degree"
    return [Problem(BITSANDBYTES_TP, "error", message, key)]


# --- AWQ / GPTQ groups that a tensor-parallel slice cuts -----------------------------------------


def _group_misaligned(config: CanonicalConfig, target: Target, shape: ContainerShape) -> list[Problem]:
    arch, tp = target.arch, shape.tensor_parallel
    if arch is None or tp is None or tp <= 1 or arch.num_experts:
        return []  # the experts' groups are checked by the MoE methods, not judged here
    from lmi_config.shape.dimensions import checkpoint_method

    method = checkpoint_method(arch, target.release.vllm)
    declared = arch.declared_quantization
    if method not in GROUPED_METHODS or not hasattr(declared, "get"):
        return []
    group = declared.get("group_size", declared.get("q_group_size"))
    if isinstance(group, bool) or not isinstance(group, int) or group <= 0:
        return []  # -1: one scale per output channel, nothing to split
    # the row-parallel layers take a 1/TP slice of their inputs: the MLP's down projection and attention's output
    slices = {
        "intermediate_size": arch.intermediate_size,
        "num_attention_heads x head_dim": arch.num_attention_heads * arch.head_dim,
    }
    cut = {name: size for name, size in slices.items() if size % tp == 0 and (size // tp) % group}
    if not cut:
        return []
    checks = covered_checks(GROUP_MISALIGNED, target.release.vllm)
    family = "awq" if "awq" in method else "gptq"
    quoted = [check for check in checks if f"/{family}" in check.path or "marlin" in check.path]
    if not quoted:
        return []
    name, size = next(iter(cut.items()))
    values = {
        "input_size_per_partition": size // tp,
        "group_size": group,
        "min_thread_k": 128,
    }
    said = "' or '".join(dict.fromkeys(check.message_with(values) for check in quoted[:2]))
    message = (
        f"{arch.model_id} is quantized with {method} in groups of {group} (config.json quantization_config); at TP "
        f"{tp} each rank's slice of {name} ({size}) is {size // tp} inputs, not a multiple of {group}: vLLM "
        f"{target.release.vllm} stops the start-up with '{said}' ({_cite(tuple(quoted[:2]))}) — use a TP degree "
        f"that leaves a multiple of {group} per rank"
    )
    return [Problem(GROUP_MISALIGNED, "error", message, TP_KEY)]
