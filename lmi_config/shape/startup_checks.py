"""The judge's verdict on vLLM's own start-up checks, as each image's vLLM makes them.

Each judgement here covers checks of ``data/vllm_checks.json`` (generated from every pinned vLLM
release's code; ``data/vllm_check_coverage.json`` says which checks each covers). It fires only where
the image's vLLM version has one of them, quotes the engine's message with the values filled in, and
cites the file and line at that release. Each problem's ``check`` is the slug of the rule that reports
it (``rules/startup.py``); errors block the planner like every other error of the judge.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from lmi_config.configfile.text import shorten
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
BITSANDBYTES_EXPERTS = "bitsandbytes-experts-unsupported"
GROUP_MISALIGNED = "quantization-group-misaligned"
# the coverage entry of the FP8 block checks (the same rule, another judgement: data/vllm_check_coverage.json)
BLOCK_MISALIGNED = GROUP_MISALIGNED
# quantization methods whose linear layers split their groups over the tensor-parallel ranks
GROUPED_METHODS = frozenset({"gptq", "awq", "gptq_marlin", "awq_marlin", "marlin", "auto-gptq", "auto_gptq"})


def judge_startup_checks(config: CanonicalConfig, target: Target, shape: ContainerShape) -> list[Problem]:
    """The start-up checks of the image's vLLM this configuration fails, and the config.json fields the
    image's transformers or vLLM cannot parse (``shape/rope_scaling.py``: any backend)."""
    from lmi_config.shape.model_class_checks import judge_model_class_checks
    from lmi_config.shape.quant_config_checks import judge_quant_config_checks
    from lmi_config.shape.rope_scaling import judge_rope_scaling

    parsed = judge_rope_scaling(config, target)
    if target.backend != "vllm" or not target.release.vllm:
        return parsed
    return [
        *parsed,
        *judge_model_class_checks(target),
        *judge_quant_config_checks(config, target, shape.tensor_parallel),
        *_batched_tokens(config, target, shape),
        *_bitsandbytes_tensor_parallel(config, target, shape),
        *_bitsandbytes_experts(config, target),
        *_group_misaligned(config, target, shape),
        *_block_misaligned(config, target, shape),
        *_sequence_beyond_release(target, shape),
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


def _asked_bitsandbytes(config: CanonicalConfig) -> str | None:
    """The option that names bitsandbytes as the method, if one does."""
    return next(
        (key for key in ("option.quantize", "option.quantization")
         if (config.get(key) or "").strip().lower() == "bitsandbytes"),
        None,
    )  # fmt: skip


def _bitsandbytes_tensor_parallel(
    config: CanonicalConfig, target: Target, shape: ContainerShape
) -> list[Problem]:
    tp, pp = shape.tensor_parallel or 1, shape.pipeline_parallel_degree.value
    stored = target.arch.stored_quantization if target.arch is not None else None
    asked = _asked_bitsandbytes(config)
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
        f"{target.model_id} is stored in bitsandbytes ({target.arch.quantization_basis})"
        if stored == "bitsandbytes" and target.arch is not None
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


def _bitsandbytes_experts(config: CanonicalConfig, target: Target) -> list[Problem]:
    """vLLM 0.10+'s bitsandbytes loader refuses a mixture of experts whose class (or a direct child) has
    no ``get_expert_mapping`` (``no_expert_mapping`` of data/vllm_model_classes.json, read from each
    release's model package)."""
    from lmi_config.knowledge.model_classes import model_classes

    arch, vllm = target.arch, target.release.vllm
    stored = arch.stored_quantization if arch is not None else None
    asked = _asked_bitsandbytes(config)
    checks = covered_checks(BITSANDBYTES_EXPERTS, vllm)
    classes = model_classes(vllm)
    if arch is None or not arch.num_experts or (stored != "bitsandbytes" and asked is None) or not checks:
        return []
    if classes is None:
        return []
    architecture = next((name for name in target.architectures if name in classes.modules), None)
    if architecture is None or architecture not in classes.no_expert_mapping:
        return []
    what = f"{asked}=bitsandbytes" if asked else f"{target.model_id} stored in bitsandbytes"
    said = checks[0].message.replace("{type(model).__name__}", architecture)
    message = (
        f"{what} for {architecture}, a mixture of {arch.num_experts} experts whose vLLM class has no "
        f"get_expert_mapping: vLLM {vllm} stops the start-up with '{said}' ({checks[0].cited}) — serve it "
        "unquantized, with a checkpoint in another method (AWQ, GPTQ, FP8), or on an image whose vLLM maps its "
        "experts"
    )
    return [Problem(BITSANDBYTES_EXPERTS, "error", message, asked or MODEL_KEY)]


# --- AWQ / GPTQ groups that a tensor-parallel slice cuts -----------------------------------------


def _group_misaligned(config: CanonicalConfig, target: Target, shape: ContainerShape) -> list[Problem]:
    arch, tp = target.arch, shape.tensor_parallel
    if arch is None or tp is None or tp <= 1 or arch.num_experts:
        return []  # the experts' groups are checked by the MoE methods, not judged here
    if not arch.config_verbatim:
        # widths from another model's description (a copy judged by its base): a quantizer may pad them so
        # that TP splits whole groups (Qwen's 72B AWQ and GPTQ copies store intermediate_size 29696 for the
        # base's 29568)
        return []
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
        f"{arch.model_id} is quantized with {method} in groups of {group} ({arch.quantization_basis}); at TP "
        f"{tp} each rank's slice of {name} ({size}) is {size // tp} inputs, not a multiple of {group}: vLLM "
        f"{target.release.vllm} stops the start-up with '{said}' ({_cite(tuple(quoted[:2]))}) — use a TP degree "
        f"that leaves a multiple of {group} per rank"
    )
    return [Problem(GROUP_MISALIGNED, "error", message, TP_KEY)]


# --- FP8 weight blocks that a tensor-parallel slice cuts ------------------------------------------


def fp8_block(declared: object) -> tuple[str, int, int] | None:
    """The method and ``(block_n, block_k)`` of a block-quantized FP8 checkpoint: quantization_config's
    ``weight_block_size`` (fp8), or a compressed-tensors group of 8-bit float weights with a
    ``block_structure``; None for any other checkpoint."""
    if not isinstance(declared, Mapping):
        return None
    method = str(declared.get("quant_method") or "").strip().lower()
    blocks: list[object] = []
    if method == "fp8":
        blocks = [declared.get("weight_block_size")]
    elif method == "compressed-tensors":
        groups = declared.get("config_groups")
        for group in groups.values() if isinstance(groups, Mapping) else ():
            weights = group.get("weights") if isinstance(group, Mapping) else None
            if (
                isinstance(weights, Mapping)
                and weights.get("strategy") == "block"
                and weights.get("type") == "float"
                and weights.get("num_bits") == 8
            ):
                blocks.append(weights.get("block_structure"))
    for block in blocks:
        if (
            isinstance(block, list)
            and len(block) == 2
            and all(isinstance(size, int) and not isinstance(size, bool) and size > 0 for size in block)
        ):
            return method, block[0], block[1]
    return None


def _block_checks(method: str, release: str | None) -> dict[str, EngineCheck]:
    """The release's block checks for the method's layers, by what they test: ``moe_n`` / ``moe_k`` (the
    experts' gate-up output, down input), ``output`` / ``input`` (a linear layer's partition)."""
    found: dict[str, EngineCheck] = {}
    for check in covered_checks(BLOCK_MISALIGNED, release):
        if "weight quantization block_" not in check.message:
            continue  # the AWQ / GPTQ group checks of the same rule
        moe = check.function.endswith("MoEMethod.create_weights")
        if moe and ("compressed_tensors" in check.path) != (method == "compressed-tensors"):
            continue  # each method's MoE layer has its own check
        if not moe and (
            "compressed_tensors" in check.path or (method != "fp8" and check.path.endswith("/fp8.py"))
        ):
            continue  # fp8.py's linear method is fp8's; from 0.11 both methods validate in fp8_utils.py
        side = "n" if "block_n" in check.message else "k"
        name = ("moe_" + side) if moe else ("output" if side == "n" else "input")
        found.setdefault(name, check)
    return found


def _block_misaligned(config: CanonicalConfig, target: Target, shape: ContainerShape) -> list[Problem]:
    arch, tp = target.arch, shape.tensor_parallel
    if arch is None or tp is None or tp <= 1:
        return []  # at TP 1 no slice is cut (a merged layer's own sizes are the checkpoint's)
    block = fp8_block(arch.declared_quantization)
    if block is None:
        return []
    method, block_n, block_k = block
    checks = _block_checks(method, target.release.vllm)
    # (what is sliced, its size, the check that tests the slice, the value names of its message)
    slices: list[tuple[str, int, str, str]] = []
    if arch.num_experts:
        size = arch.moe_intermediate_size or arch.intermediate_size
        if not flag(config, "option.enable_expert_parallel"):  # expert parallelism keeps each expert whole
            slices += [("the experts' intermediate size", size, "moe_n", "intermediate_size_per_partition")]
            slices += [("the experts' intermediate size", size, "moe_k", "intermediate_size_per_partition")]
    else:
        if not arch.kv_lora_rank:  # latent attention's projections have other shapes
            heads = arch.num_attention_heads * arch.head_dim
            slices += [
                ("num_attention_heads x head_dim (o_proj)", heads, "input", "input_size_per_partition")
            ]
        size = arch.intermediate_size
        slices += [("intermediate_size (gate_up_proj)", size, "output", "output_partition_size")]
        slices += [("intermediate_size (down_proj)", size, "input", "input_size_per_partition")]
    for name, size, test, value_name in slices:
        bound = block_n if test in ("moe_n", "output") else block_k
        check = checks.get(test)
        if check is None or size % tp or (size // tp) % bound == 0:
            continue  # a size TP does not divide is refused by another check
        said = check.message_with({value_name: size // tp, "block_n": block_n, "block_k": block_k})
        expert = (
            " or option.enable_expert_parallel=true"
            if arch.num_experts and _has_expert_parallel(target)
            else ""
        )
        message = (
            f"{arch.model_id} is FP8 in blocks of {block_n} x {block_k} ({arch.quantization_basis}); at TP {tp} "
            f"each rank's slice of {name} ({size}) is {size // tp}, not a multiple of {bound}: vLLM "
            f"{target.release.vllm} stops the start-up with '{said}' ({check.cited}) — use a TP degree that leaves "
            f"a multiple of {bound} per rank{expert}"
        )
        return [Problem(GROUP_MISALIGNED, "error", message, TP_KEY)]
    return []


def _has_expert_parallel(target: Target) -> bool:
    """Whether the image's vLLM takes enable_expert_parallel (and LMI passes it through)."""
    from lmi_config.knowledge import backends
    from lmi_config.knowledge.options import engine_args_for

    backend = backends().get(target.backend)
    return (
        backend is not None
        and backend.engine_args == "vllm"
        and target.release.in_range(backend.engine_args_since, None)
        and "enable_expert_parallel" in engine_args_for(target.release.vllm)
    )


# --- a max_model_len this release's derivation refuses, where another release's allows it ---------

SEQUENCE_TOO_LONG = "sequence-exceeds-model-max"


def _sequence_beyond_release(target: Target, shape: ContainerShape) -> list[Problem]:
    """judge_sequence_length (``shape/sequence.py``) refuses what every release refuses; this adds what the
    image's own release refuses on top (Gemma 3's scaling, left alone from vLLM 0.8.4), quoting it."""
    from lmi_config.shape.sequence import model_sequence_limit

    arch, sequence = target.arch, shape.sequence_length
    if arch is None or sequence is None or sequence.key is None or target.accelerator != "gpu":
        return []
    limit, permissive = model_sequence_limit(arch, target.release.vllm), model_sequence_limit(arch)
    if limit is None or permissive is None or not limit < sequence.value <= permissive:
        return []
    checks = covered_checks(SEQUENCE_TOO_LONG, target.release.vllm)
    if not checks:
        return []
    said = checks[0].message_with(
        {
            "max_model_len": sequence.value,
            "derived_max_model_len": limit,
            "max_len_key": "max_position_embeddings",
            # ModelArch keeps no model_max_length (vLLM lets a length up to one through): not read here
            "model_max_length": "(not read here)",
        }
    )
    message = (
        f"{sequence.key}={sequence.value} is longer than the {limit} tokens vLLM {target.release.vllm} derives "
        f"from {arch.model_id}'s config.json (max_position_embeddings {arch.max_position_embeddings} and its "
        f"rope_scaling, as this release applies it): the start-up stops with '{shorten(said, 240)}' "
        f"({checks[0].cited}) — set {sequence.key} to at most {limit}"
    )
    return [Problem(SEQUENCE_TOO_LONG, "error", message, sequence.key)]
