"""The GPU budget as vLLM computes it at start-up, per vLLM version (and lmi-dist, TensorRT-LLM).

vLLM loads the weights, runs one profiling forward pass with ``max_num_batched_tokens``
tokens spread over ``max_num_seqs`` sequences (and samples them with top-k/top-p), and
gives the KV cache what is left of ``gpu_memory_utilization`` x the memory PyTorch sees.
What counts against that budget changed between releases: each release's profiling scheme is
generated from vLLM's sources (``data/vllm_memory.json`` ``versions.*.profiler``) and what each
scheme counts is data too (``profilers``, with the line of vLLM it is read from):

- ``torch_allocated_peak`` (<= 0.2.4): weights + activation peak, nothing else;
- ``device_used`` (0.2.5-0.2.7): everything in use on the device, CUDA context included;
- ``free_memory_since_init`` (0.3-0.6.3): what the worker took since it started: weights,
  activations, NCCL and other non-torch buffers, not the CUDA context;
- ``torch_peak_plus_device_non_torch`` (0.6.4, V1 0.8): the torch peak plus all non-torch
  memory on the device, CUDA context included;
- ``since_init_snapshot`` (0.6.5+, V1 0.9+): weights + activation peak + non-torch growth
  since the worker started; from 0.21 the CUDA graphs too.

The two that read device memory (``device_used``, ``free_memory_since_init``) count every segment
PyTorch's caching allocator reserved during the profile run, not only the tensors alive at the
peak: ``sizing/allocator.py`` replays one decoder layer to find how much that is.
"""

from __future__ import annotations

import math
from typing import Any

from lmi_config.knowledge import version_tuple
from lmi_config.knowledge.instances import Instance
from lmi_config.knowledge.models import architecture_family
from lmi_config.modelarch import ModelArch
from lmi_config.sizing.allocator import LayerSizes, Rounding, reserved_bytes
from lmi_config.sizing.model import (
    GIB,
    MIB,
    MemoryBreakdown,
    MemoryItem,
    RankMemory,
    Shape,
    dtype_bytes,
    kv_layout,
)
from lmi_config.sizing.vllm_release import (
    VllmVersion,
    memory_data,
    profiler_counts,
    torch_visible_bytes,
    vllm_version,
)


def _quant_format(shape: Shape) -> str | None:
    name = (shape.quantize or "").strip().lower()
    return None if name in ("", "none", "false") else name


def _declared_layout(arch: ModelArch) -> tuple[int, int, bool] | None:
    """(bits, group size, whether the group size is stated) of a grouped integer checkpoint's
    quantization_config (GPTQ ``bits``, AutoAWQ ``w_bit``); a group size it does not state is 128."""
    declared = arch.loading.get("quantization_config")
    if not isinstance(declared, dict):
        return None
    bits = declared.get("bits", declared.get("w_bit"))
    group = declared.get("group_size", declared.get("q_group_size"))
    if isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= 16:
        return None
    if isinstance(group, int) and not isinstance(group, bool):
        return bits, group, True
    return bits, 128, False


def _packed_bytes(bits: int, group_size: int, quant: dict[str, Any], zero_point: bool = True) -> float:
    """Bytes per weight of a grouped integer layout: the weight, and a scale (and a zero point, unless
    symmetric) per group."""
    per_group = quant["packed_weight"]["scale_bytes"] + (bits / 8 if zero_point else 0.0)
    return bits / 8 + (per_group / group_size if group_size > 0 else 0.0)  # -1: one scale per channel


def compressed_tensors_bytes(arch: ModelArch) -> tuple[float, str] | None:
    """Bytes per quantized weight of a compressed-tensors checkpoint, as vLLM's schemes allocate the
    weights scheme its config groups state (``data/vllm_memory.json``); None when the groups differ or
    state a scheme not sized here."""
    declared = arch.declared_quantization
    groups = declared.get("config_groups") if isinstance(declared, dict) else None
    if not isinstance(groups, dict) or not groups:
        return None
    schemes = {_weights_scheme(group) for group in groups.values()}
    scheme = schemes.pop() if len(schemes) == 1 else None
    if scheme is None:
        return None
    kind, bits, group, symmetric = scheme
    quant = memory_data()["quantization"]
    if kind == "float" and bits == 8:  # the fp8 layout
        return float(quant["fp8"]["bytes_per_weight"]), "8-bit float weights"
    if kind == "float" and bits == 4:  # NVFP4: vLLM's scheme fixes ModelOpt's layout (an FP8 scale per 16)
        return float(quant["modelopt_fp4"]["bytes_per_weight"]), "4-bit float weights (NVFP4)"
    if kind == "int" and bits in (4, 8):  # the grouped integer layout, a zero point only when asymmetric
        layout = f", group {group}" if group else ""
        return _packed_bytes(
            bits, group or -1, quant, zero_point=not symmetric
        ), f"{bits}-bit integer weights{layout}"
    return None


def _weights_scheme(group: Any) -> tuple[str, int, int | None, bool] | None:
    """(type, bits, group size, symmetric) of one config group's weights, None when it is not stated."""
    weights = group.get("weights") if isinstance(group, dict) else None
    if not isinstance(weights, dict):
        return None
    bits, kind, size = weights.get("num_bits"), weights.get("type"), weights.get("group_size")
    if isinstance(bits, bool) or not isinstance(bits, int) or kind not in ("int", "float"):
        return None
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
        return None
    return str(kind), bits, size, bool(weights.get("symmetric", True))


def weight_bytes(arch: ModelArch, shape: Shape) -> tuple[int, str]:
    """Bytes of all the weights as vLLM holds them, and how they were obtained."""
    quant = memory_data()["quantization"]
    runtime = dtype_bytes(shape.weight_dtype)
    fmt = _quant_format(shape)
    if arch.weight_bytes and (fmt is None or fmt in quant["prequantized"]["values"]):
        checkpoint = dtype_bytes(arch.torch_dtype, 2) if fmt is None else runtime
        scale = runtime / checkpoint if checkpoint else 1.0
        return int(arch.weight_bytes * scale), "checkpoint size (safetensors index total_size)"
    embeddings = arch.embedding_params
    linear = max(arch.total_params - embeddings, 0)
    if fmt is None:
        return int(arch.total_params * runtime), f"{arch.total_params / 1e9:.2f} B parameters x {runtime:g} B"
    per_weight = float(quant.get(fmt, {}).get("bytes_per_weight", dtype_bytes(fmt)))
    scheme = compressed_tensors_bytes(arch) if fmt == "compressed-tensors" else None
    if scheme is not None:
        per_weight = scheme[0]
    declared = _declared_layout(arch)
    layout = quant.get(fmt, {}).get("layout")
    if declared and layout:
        # the checkpoint's own bits and group size (8-bit GPTQ is twice the table's 4-bit layout)
        per_weight *= _packed_bytes(declared[0], declared[1], quant) / _packed_bytes(
            layout["bits"], layout["group_size"], quant
        )
    kept = 0
    if fmt == "fbgemm_fp8":
        attention = (
            arch.hidden_size * arch.head_dim * 2 * (arch.num_attention_heads + arch.num_key_value_heads)
        )
        mlp_layer = (linear - arch.num_layers * attention) / max(arch.num_layers, 1)
        kept = int(arch.num_layers * attention + 2 * mlp_layer)
    total = (linear - kept) * per_weight + (kept + embeddings) * runtime
    stated = ""
    if declared and layout:
        group = f"group {declared[1]}" + ("" if declared[2] else " assumed")
        stated = f" ({declared[0]}-bit, {group}, as {arch.quantization_basis} states)"
    if scheme is not None:
        stated = f" ({scheme[1]}, as config.json's config_groups state)"
    return int(
        total
    ), f"{fmt}: {per_weight:.3g} B per quantized weight{stated}, embeddings and kept layers at {runtime:g} B"


def profile_tokens(shape: Shape, profile: VllmVersion) -> tuple[int, bool]:
    """(tokens of the profile run, chunked prefill on) as this release's defaults decide."""
    chunked = shape.enable_chunked_prefill
    if chunked is None:
        chunked = profile.engine == "v1" or bool(
            profile.long_context_threshold
            and profile.chunked_default_tokens
            and shape.sequence_length > profile.long_context_threshold
        )
    if shape.max_num_batched_tokens:
        return shape.max_num_batched_tokens, chunked
    if chunked and profile.chunked_default_tokens:
        return profile.chunked_default_tokens, True
    return max(shape.sequence_length, profile.unchunked_floor_tokens), False


def activation_bytes(arch: ModelArch, shape: Shape, tokens: int, profile: VllmVersion) -> tuple[int, str]:
    """The torch activation peak of the profile run: the MLP of one layer or the sampler."""
    constants = memory_data()["activation"]
    tp = shape.tensor_parallel_degree
    act = dtype_bytes(shape.weight_dtype) if not _quant_format(shape) else 2
    hidden = constants["hidden_copies"]["value"] * arch.hidden_size
    if arch.num_experts:
        chunk = min(tokens, constants["moe_chunk_tokens"]["value"])
        inter = arch.moe_intermediate_size or arch.intermediate_size
        mlp = arch.experts_per_token * (3 * inter / tp + arch.hidden_size) * chunk / max(tokens, 1)
    else:
        gated = arch.model_type in architecture_family("gated_mlp")
        copies = constants["gated_mlp_copies" if gated else "plain_mlp_copies"]
        mlp = copies["value"] * arch.intermediate_size / tp
    forward = tokens * (hidden + mlp) * act
    forward_note = f"one layer's MLP over {tokens} batched tokens"
    if profiler_counts(profile.profiler).allocator_cache and not arch.num_experts:
        reserved = _reserved_forward(arch, shape, tokens, act, profile.attention_output_copy)
        if reserved > forward:
            forward = reserved
            forward_note = (
                f"the segments PyTorch's allocator reserves for one layer over {tokens} batched tokens "
                f"(vLLM {profile.version} reads device memory)"
            )
    rows = shape.batch_size if profile.engine == "v0" else min(shape.batch_size, tokens)
    per_logit = constants["sampler_bytes_per_logit"][profile.engine]
    sampler = rows * arch.vocab_size * per_logit + tokens * arch.hidden_size * act * 2
    if sampler > forward:
        return int(sampler), f"sampler over {rows} sequences x {arch.vocab_size} logits (top-k/top-p sort)"
    return int(forward), forward_note


def _reserved_forward(arch: ModelArch, shape: Shape, tokens: int, act: float, attention_copy: bool) -> int:
    """What the caching allocator holds after the profile forward (device-reading profilers)."""
    tp = shape.tensor_parallel_degree
    _, _, kv_per_gpu = kv_layout(arch, tp, "vllm", None)
    heads = arch.num_attention_heads / tp
    gated = arch.model_type in architecture_family("gated_mlp")
    inter = arch.intermediate_size / tp
    per_token = act * tokens
    sizes = LayerSizes(
        hidden=int(arch.hidden_size * per_token),
        qkv=int((heads + 2 * kv_per_gpu) * arch.head_dim * per_token),
        attention=int(heads * arch.head_dim * per_token),
        mlp_up=int((2 if gated else 1) * inter * per_token),
        mlp_act=int(inter * per_token),
    )
    rounding = memory_data()["allocator"]
    return reserved_bytes(
        sizes,
        Rounding(
            small_request=int(rounding["small_request_mib"]["value"] * MIB),
            large_threshold=int(rounding["large_threshold_mib"]["value"] * MIB),
            mid_segment=int(rounding["mid_segment_mib"]["value"] * MIB),
            granularity=int(rounding["granularity_mib"]["value"] * MIB),
        ),
        attention_copy=attention_copy,
    )


def non_torch_bytes(instance: Instance, tp: int, profile: VllmVersion) -> tuple[int, str]:
    """Memory outside PyTorch's allocator that this release's profiler counts."""
    counts = profiler_counts(profile.profiler)
    if not counts.non_torch:
        return 0, "not counted by this vLLM's profiler"
    constants = memory_data()["non_torch"]
    total = constants["since_init_gib"]["value"] * GIB
    parts = ["runtime buffers"]
    if counts.cuda_context:
        total += constants["cuda_context_gib"]["value"] * GIB
        parts.append("CUDA context")
    if tp > 1:
        link = "nvlink" if instance.accelerator_name in constants["nvlink_gpus"]["values"] else "pcie"
        channels = constants["nccl_channels"][link]
        groups = profile.communicators
        per_channel = constants["nccl_mib_per_channel"]
        lazy = bool(profile.nccl) and version_tuple(profile.nccl) >= version_tuple(
            per_channel["lazy_from_nccl"]
        )
        total += groups * channels * per_channel["lazy" if lazy else "eager"] * MIB
        parts.append(
            f"NCCL {profile.nccl or '?'} ({groups} communicators x {channels} channels, "
            f"{'connected on first use' if lazy else 'all connected at start'})"
        )
        nvls = constants["nvls_mib_per_rank"]
        if instance.accelerator_name in nvls["gpus"] and tp >= nvls["min_tp"]:
            total += groups * nvls["value"] * MIB
            parts.append("NVLink SHARP buffers")
    return int(total), ", ".join(parts)


def kv_bytes_per_token(arch: ModelArch, shape: Shape) -> int:
    """KV cache bytes per token on one GPU (K and V, every layer of this pipeline stage).

    Multi-head latent attention (DeepSeek-V2/V3) stores one compressed vector per token and layer
    (kv_lora_rank + qk_rope_head_dim), the same on every TP rank, in releases with ``use_mla``;
    earlier ones expand it to every head, padded to the release's head size (generated:
    ``expanded_latent_head_size``) or else at the query-key width.
    """
    _, _, kv_per_gpu = kv_layout(arch, shape.tensor_parallel_degree, "vllm", None)
    table = memory_data()["kv_cache_dtype_bytes"]
    chosen = (shape.kv_cache_dtype or "auto").strip().lower()
    element = table.get(chosen) or dtype_bytes(shape.weight_dtype if not _quant_format(shape) else "bf16")
    layers = math.ceil(arch.num_layers / max(shape.pipeline_parallel_degree, 1))
    if arch.kv_lora_rank:
        release = vllm_version(shape.vllm_version)
        if release.mla:
            return int(layers * (arch.kv_lora_rank + (arch.qk_rope_head_dim or 0)) * element)
        query_key = release.expanded_latent_head_size or (
            (arch.qk_nope_head_dim or arch.head_dim) + (arch.qk_rope_head_dim or 0)
        )
        heads = math.ceil(arch.num_attention_heads / shape.tensor_parallel_degree)
        return int(2 * layers * heads * query_key * element)
    return int(2 * layers * kv_per_gpu * arch.head_dim * element)


def estimate_gpu(arch: ModelArch, instance: Instance, backend: str, shape: Shape) -> MemoryBreakdown:
    """The per-GPU budget of vLLM / lmi-dist (as vLLM) or TensorRT-LLM, itemized."""
    if backend in ("tensorrt-llm", "trtllm"):
        return _tensorrt_llm(arch, instance, shape)
    profile = vllm_version(shape.vllm_version)
    tp, pp = shape.tensor_parallel_degree, max(shape.pipeline_parallel_degree, 1)
    strategy, padded, kv_per_gpu = kv_layout(arch, tp, "vllm", None)
    weights_total, weight_note = weight_bytes(arch, shape)
    tokens, chunked = profile_tokens(shape, profile)
    activation, activation_note = activation_bytes(arch, shape, tokens, profile)
    non_torch, non_torch_note = non_torch_bytes(instance, tp, profile)
    graphs = (
        0
        if shape.enforce_eager
        else int(memory_data()["cuda_graphs"][f"{profile.engine}_gib"]["value"] * GIB)
    )
    total, total_note = torch_visible_bytes(instance)
    budget = int(total * shape.gpu_memory_utilization)
    items = [
        MemoryItem(
            "weights", weights_total // (tp * pp), f"{weights_total / GIB:.2f} GiB / TP {tp}; {weight_note}"
        ),
        MemoryItem(
            "activations (profile run)",
            activation,
            f"{activation_note}; chunked prefill {'on' if chunked else 'off'} (vLLM {profile.version})",
            estimated=True,
        ),
        MemoryItem(
            "non-torch (NCCL, CUDA)", non_torch, f"{non_torch_note} ({profile.profiler})", estimated=True
        ),
    ]
    notes = [
        f"vLLM {profile.version} ({profile.engine.upper()} engine) fills the budget: the KV cache takes what is left"
    ]
    if graphs and profile.cudagraphs_in_budget:
        items.append(
            MemoryItem("CUDA graphs", graphs, "estimate; inside the budget from vLLM 0.21", estimated=True)
        )
    elif graphs:
        notes.append(
            f"CUDA graphs (~{graphs / GIB:.1f} GiB, estimate) are captured outside the budget: they must fit in the "
            f"{(1 - shape.gpu_memory_utilization):.0%} of memory gpu_memory_utilization leaves free"
        )
    budget_note = f"{shape.gpu_memory_utilization:g} x {total_note}"
    layout = (strategy, padded, kv_per_gpu, weights_total)
    memory = _with_kv(arch, shape, items, budget, budget_note, profile.block_size, layout, notes)
    return _vision_unknown(memory, arch, shape) if is_multimodal(arch, shape.vllm_version) else memory


def is_multimodal(arch: ModelArch, version: str | None) -> bool:
    """Whether the release's vLLM registers the model's architecture as multimodal."""
    from lmi_config.knowledge.capabilities import vllm_capabilities

    capabilities = vllm_capabilities(version)
    return capabilities is not None and any(
        name in capabilities.multimodal_architectures for name in arch.architectures
    )


def _vision_unknown(memory: MemoryBreakdown, arch: ModelArch, shape: Shape) -> MemoryBreakdown:
    """A vision-language model: vLLM's profile run also runs the vision encoder on its largest inputs
    (a logged InternVL-class start-up shows ~15 GiB of activations), which this estimate does not size.
    The KV figure is then only an upper bound: what a text-only model of the same size would get."""
    note = (
        f"{arch.architectures[0]} is multimodal in vLLM {shape.vllm_version}: its profile run includes the vision "
        "encoder's activations, which this estimate does not size, so the KV cache holds fewer tokens than shown "
        "(an upper bound) — measure it (vLLM logs the KV cache size at start-up)"
    )
    (rank,) = memory.ranks
    items = tuple(
        item._replace(note=f"at most: {item.note}", estimated=True)
        if item.name.startswith("KV cache")
        else item
        for item in rank.items
    )
    return memory._replace(
        ranks=(rank._replace(items=items),), kv_upper_bound_only=True, notes=(*memory.notes, note)
    )


def _with_kv(
    arch: ModelArch,
    shape: Shape,
    items: list[MemoryItem],
    budget: int,
    budget_note: str,
    block_size: int,
    layout: tuple[str, int, float, int],
    notes: list[str],
) -> MemoryBreakdown:
    strategy, padded, kv_per_gpu, weights_total = layout
    capacity = max(budget - sum(item.bytes for item in items), 0)
    per_token = max(kv_bytes_per_token(arch, shape), 1)
    block = shape.block_size or block_size
    blocks = capacity // (per_token * block)
    tokens = blocks * block
    items.append(
        MemoryItem(
            "KV cache (what is left)",
            capacity,
            f"{blocks} blocks of {block} tokens x {per_token / 1024:.0f} KiB per token = {tokens} tokens",
            estimated=True,
        )
    )
    return MemoryBreakdown(
        unit="GPU",
        budget_bytes=budget,
        budget_note=budget_note,
        ranks=(RankMemory("each GPU", tuple(items)),),
        kv_strategy=strategy,
        query_heads_padded=padded,
        kv_heads_per_core=kv_per_gpu,
        weight_bytes_total=weights_total,
        kv_cache_capacity_bytes=capacity,
        kv_bytes_per_sequence=per_token * shape.sequence_length,
        notes=tuple(notes),
        kv_cache_tokens=tokens,
        max_concurrent_sequences=round(tokens / max(shape.sequence_length, 1), 2),
        kv_error_margin_fraction=memory_data()["error_margin_fraction"]["value"],
    )


def _tensorrt_llm(arch: ModelArch, instance: Instance, shape: Shape) -> MemoryBreakdown:
    """TensorRT-LLM: kv_cache_free_gpu_mem_fraction of what the engine leaves free (an estimate)."""
    constants = memory_data()["tensorrt_llm"]
    tp, pp = shape.tensor_parallel_degree, max(shape.pipeline_parallel_degree, 1)
    strategy, padded, kv_per_gpu = kv_layout(arch, tp, "vllm", None)
    weights_total, weight_note = weight_bytes(arch, shape)
    total, total_note = torch_visible_bytes(instance)
    fraction = shape.kv_cache_free_gpu_mem_fraction or constants["kv_cache_free_gpu_mem_fraction"]["value"]
    context = memory_data()["non_torch"]["cuda_context_gib"]["value"] * GIB
    activation = constants["activation_gib"]["value"] * GIB
    weights = weights_total // (tp * pp)
    free = max(total - weights - activation - context, 0)
    items = [
        MemoryItem("weights", weights, f"{weights_total / GIB:.2f} GiB / TP {tp}; {weight_note}"),
        MemoryItem("engine activations", int(activation), "estimate (build limits not read)", estimated=True),
        MemoryItem("CUDA context", int(context), "estimate", estimated=True),
        MemoryItem(
            "kept free", int(free * (1 - fraction)), f"1 - kv_cache_free_gpu_mem_fraction {fraction:g}"
        ),
    ]
    notes = [
        "TensorRT-LLM gives the KV cache kv_cache_free_gpu_mem_fraction of the memory free after loading (estimate)"
    ]
    layout = (strategy, padded, kv_per_gpu, weights_total)
    return _with_kv(arch, shape, items, total, total_note, 64, layout, notes)


def kv_capacity_verdict(memory: MemoryBreakdown, max_model_len: int) -> str | None:
    """``error`` when one max_model_len sequence exceeds the estimated KV capacity (vLLM refuses to
    start), ``warning`` when it is within the estimate's error margin, else None."""
    if memory.kv_cache_tokens is None:
        return None
    if max_model_len > memory.kv_cache_tokens:
        return "error"
    if memory.kv_upper_bound_only:
        return None  # below an upper bound: nothing certain either way
    margin = memory.kv_error_margin_fraction or 0.0
    if max_model_len > memory.kv_cache_tokens * (1 - margin):
        return "warning"
    return None
