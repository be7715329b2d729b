"""From a configuration to the shape the container will build, and the fit of that shape.

:func:`resolve_shape` reads TP, batch, sequence length, dtype and the GQA/KV knobs from the
canonical configuration, filling what is missing the way the container does (its defaults
and, on Neuron from 0.30, its "smart defaults"). Every value remembers where it came from,
so ``explain`` can show it.
"""

from __future__ import annotations

import ast
import json
import math
from dataclasses import dataclass, field
from typing import Any

from lmi_config.configfile.canonical import CanonicalConfig
from lmi_config.knowledge import Release, load_data, version_tuple
from lmi_config.knowledge.instances import Instance
from lmi_config.modelarch import ModelArch
from lmi_config.sizing import NEURON_BACKENDS, MemoryBreakdown, Shape, estimate_memory


def _default(name: str) -> Any:
    """One of the container's defaults (data/memory.json, container_defaults)."""
    return load_data("memory.json")["container_defaults"][name]["value"]


@dataclass(frozen=True)
class ResolvedShape:
    """A :class:`Shape` plus where each value came from."""

    shape: Shape
    sources: dict[str, str] = field(default_factory=dict)
    problems: tuple[str, ...] = ()


def _int(config: CanonicalConfig, *keys: str) -> tuple[int | None, str | None]:
    for key in keys:
        value = config.get(key)
        if value is None:
            continue
        text = value.strip()
        if text.isdigit():
            return int(text), key
    return None, None


def _pow2floor(value: float) -> int:
    return 0 if value < 1 else 2 ** int(math.floor(math.log2(value)))


def smart_defaults(
    arch: ModelArch,
    cores: int,
    *,
    tensor_parallel_degree: int | None,
    batch: int | None,
    quantized: bool,
    n_positions: int,
) -> tuple[int, int]:
    """The container's Neuron smart defaults (djl-serving.md §3, ``NeuronSmartDefaultUtils``).

    Returns (tp, max_rolling_batch_size). Uses this tool's parameter count instead of the
    container's llama-like formula (which over-counts 70B by ~2%).
    """
    model_gb = arch.total_params * (1 if quantized else 2) / 1e9
    seq_gb = n_positions * arch.hidden_size * arch.num_layers * (1 if quantized else 2) * 0.95 / 2**30

    def model_at(tp: int) -> float:
        return model_gb * (1 + (2 * tp - 2) / 100)

    def batch_at(tp: int) -> int:
        if seq_gb <= 0:
            return 0
        return _pow2floor(
            min(
                _default("smart_defaults_batch_cap"),
                (_default("smart_defaults_core_gb") * tp - model_at(tp)) / seq_gb,
            )
        )

    candidates = {1, 2, 4, 8} | ({cores} if cores > 8 else set())
    if cores == 32:
        candidates.discard(4)
    minimum = math.ceil(1.1 * model_gb / _default("smart_defaults_core_gb"))
    usable = sorted(tp for tp in candidates if minimum <= tp <= cores) or [cores]
    if tensor_parallel_degree is None and batch is None:
        tp = max(usable, key=lambda t: (batch_at(t) * (cores // t), -t))
    elif tensor_parallel_degree is None:
        fitting = [t for t in usable if batch_at(t) >= (batch or 0)]
        tp = fitting[0] if fitting else usable[-1]
    else:
        tp = tensor_parallel_degree
    return tp, batch if batch is not None else max(batch_at(tp), 1)


def _dtype(config: CanonicalConfig, backend: str, arch: ModelArch) -> tuple[str, str]:
    value = (config.get("option.dtype") or "").strip().lower()
    if value and value != "auto":
        return value, "option.dtype"
    if backend in NEURON_BACKENDS:
        return "fp16", "container default (transformers-neuronx dtype fp16)"
    model_dtype = (arch.torch_dtype or "bfloat16").lower()
    if model_dtype in ("float32", "fp32"):
        return "fp16", "dtype auto: vLLM loads float32 checkpoints as float16"
    return model_dtype, f"dtype auto: the model's torch_dtype ({model_dtype})"


def _override_neuron_config(config: CanonicalConfig) -> dict[str, object]:
    text = config.get("option.override_neuron_config")
    if not text:
        return {}
    for parser in (json.loads, ast.literal_eval):
        try:
            value = parser(text)
        except (ValueError, SyntaxError):
            continue
        if isinstance(value, dict):
            return value
    return {}


def resolve_shape(
    config: CanonicalConfig, arch: ModelArch, instance: Instance, backend: str, release: Release
) -> ResolvedShape:
    """The TP, batch, sequence length and dtypes the container will use for this configuration."""
    sources: dict[str, str] = {}
    neuron = instance.accelerator == "neuron"
    cores = instance.num_cores
    smart = (
        neuron
        and release.djl_tuple >= version_tuple(_default("smart_defaults_since"))
        and arch.is_text_generation
    )
    quantize = (config.get("option.quantize") or "").strip() or None
    if not quantize and (config.get("option.load_in_8bit") or "").strip().lower() == "true":
        quantize = "int8"
    quantized = bool(quantize)

    # sequence length
    overrides = _override_neuron_config(config)
    seq, key = (
        _int(config, "option.n_positions", "option.max_model_len")
        if neuron
        else _int(config, "option.max_model_len", "option.n_positions")
    )
    if seq is not None:
        sources["sequence_length"] = key or ""
    elif isinstance(overrides.get("seq_len"), int):
        seq = int(str(overrides["seq_len"]))
        sources["sequence_length"] = "option.override_neuron_config seq_len"
    elif neuron:
        if smart and arch.max_position_embeddings:
            cap = _default("smart_defaults_max_n_positions")
            seq = min(arch.max_position_embeddings, cap)
            sources["sequence_length"] = f"container smart default min(max_position_embeddings, {cap})"
        else:
            seq = _default("n_positions_before_smart_defaults")
            sources["sequence_length"] = f"container default n_positions={seq} (before the smart defaults)"
    else:
        seq = arch.max_position_embeddings or 2048
        sources["sequence_length"] = "vLLM default: the model's max_position_embeddings"

    # tensor parallel degree
    raw_tp = (config.get("option.tensor_parallel_degree") or "").strip()
    tp: int | None
    if raw_tp.isdigit():
        tp = int(raw_tp)
        sources["tensor_parallel_degree"] = "option.tensor_parallel_degree"
    elif raw_tp == "max":
        tp = cores
        sources["tensor_parallel_degree"] = f"max = {cores} {instance.core_word}s"
    else:
        tp = None

    # batch
    rolling = (config.get("option.rolling_batch") or "auto").strip().lower()
    static_batch, batch_key = _int(config, "batch_size", "max_dynamic_batch_size", "option.batch_size")
    batch: int | None
    if rolling == "disable" or (static_batch and static_batch > 1):
        batch = static_batch or 1
        sources["batch_size"] = batch_key or "container default batch_size=1"
    else:
        batch, key = _int(config, "option.max_rolling_batch_size", "option.max_num_seqs")
        if batch is not None:
            sources["batch_size"] = key or ""

    if smart and (tp is None or batch is None):
        chosen_tp, chosen_batch = smart_defaults(
            arch, cores, tensor_parallel_degree=tp, batch=batch, quantized=quantized, n_positions=seq
        )
        if tp is None:
            tp = chosen_tp
            sources["tensor_parallel_degree"] = "container smart default (most sequences per instance)"
        if batch is None:
            batch = chosen_batch
            sources["batch_size"] = "container smart default (largest power of two that fits, at most 32)"
    if tp is None:
        tp = cores
        sources["tensor_parallel_degree"] = f"container default max = {cores} {instance.core_word}s"
    if batch is None:
        large = load_data("memory.json")["container_defaults"]["rolling_batch_size_vllm_trtllm"]
        if backend in ("vllm", "tensorrt-llm", "lmi-dist") and release.in_range(None, large["until"]):
            batch = large["value"]
        else:
            batch = _default("rolling_batch_size_other")
        sources["batch_size"] = f"container default max_rolling_batch_size={batch}"

    dtype, dtype_source = _dtype(config, backend, arch)
    sources["dtype"] = dtype_source
    utilization_text = (config.get("option.gpu_memory_utilization") or "0.9").strip()
    try:
        utilization = float(utilization_text)
    except ValueError:
        utilization = 0.9
    chunked = (config.get("option.enable_chunked_prefill") or "").strip().lower() == "true" or bool(
        overrides.get("chunked_prefill_config") or overrides.get("is_chunked_prefill")
    )
    tokens, _ = _int(config, "option.max_rolling_batch_prefill_tokens", "option.max_num_batched_tokens")
    pp, _ = _int(config, "option.pipeline_parallel_degree")
    shape = Shape(
        tensor_parallel_degree=max(tp, 1),
        batch_size=max(batch, 1),
        sequence_length=max(seq, 1),
        weight_dtype=dtype,
        kv_dtype=dtype if dtype not in ("int8", "fp8") else "bf16",
        quantize=quantize,
        gqa_strategy=(config.get("option.group_query_attention") or "").strip() or None,
        shard_over_sequence=(config.get("option.shard_over_sequence") or "").strip().lower() == "true",
        chunked_prefill=chunked,
        gpu_memory_utilization=utilization,
        max_num_batched_tokens=tokens,
        enforce_eager=(config.get("option.enforce_eager") or "").strip().lower() == "true",
        pipeline_parallel_degree=pp or 1,
        **_gpu_memory_options(config, release),
    )
    return ResolvedShape(shape, sources)


def _gpu_memory_options(config: CanonicalConfig, release: Release) -> dict[str, Any]:
    """The options vLLM's KV budget reads (gpu_memory.py): KV dtype, block size, chunked prefill, version."""
    chunked = (config.get("option.enable_chunked_prefill") or "").strip().lower()
    block, _ = _int(config, "option.block_size")
    fraction = (config.get("option.kv_cache_free_gpu_mem_fraction") or "").strip()
    return {
        "kv_cache_dtype": (config.get("option.kv_cache_dtype") or "").strip() or None,
        "block_size": block,
        "vllm_version": release.vllm,
        "enable_chunked_prefill": {"true": True, "false": False}.get(chunked),
        "kv_cache_free_gpu_mem_fraction": float(fraction) if fraction.replace(".", "", 1).isdigit() else None,
    }


@dataclass(frozen=True)
class FitAnalysis:
    """The shape, the memory breakdown, and the instance it was judged against."""

    arch: ModelArch
    instance: Instance
    backend: str
    resolved: ResolvedShape
    memory: MemoryBreakdown

    @property
    def shape(self) -> Shape:
        return self.resolved.shape


def analyze(
    config: CanonicalConfig, arch: ModelArch, instance: Instance, backend: str, release: Release
) -> FitAnalysis:
    """Resolve the shape and estimate its memory."""
    resolved = resolve_shape(config, arch, instance, backend, release)
    sizing_backend = (
        backend if backend in NEURON_BACKENDS or instance.accelerator == "gpu" else "transformers-neuronx"
    )
    memory = estimate_memory(arch, instance, sizing_backend, resolved.shape)
    return FitAnalysis(arch, instance, sizing_backend, resolved, memory)


def alternatives(analysis: FitAnalysis, limit: int = 3) -> list[tuple[Shape, MemoryBreakdown]]:
    """Nearby shapes that fit: another TP degree first, then a smaller batch, then shorter sequences.

    TP degrees are the planner's valid ones (runtime, documented, heads), judged the planner's way.
    """
    from dataclasses import replace

    from lmi_config.planner import acceptable, valid_degrees

    shape = analysis.shape
    degrees = [
        d
        for d in valid_degrees(analysis.arch, analysis.instance, analysis.backend)
        if d != shape.tensor_parallel_degree
    ]
    batches = []
    batch = shape.batch_size
    while batch > 1:
        batch //= 2
        batches.append(batch)
    sequences = []
    sequence = shape.sequence_length
    while sequence > 256:
        sequence //= 2
        sequences.append(sequence)
    searches = [
        [
            replace(shape, tensor_parallel_degree=d)
            for d in sorted(degrees, key=lambda d: (d < shape.tensor_parallel_degree, d))
        ],
        [replace(shape, batch_size=b) for b in batches],
        [replace(shape, sequence_length=s) for s in sequences],
    ]
    found: list[tuple[Shape, MemoryBreakdown]] = []
    for candidates in searches:
        for candidate in candidates:
            memory = estimate_memory(analysis.arch, analysis.instance, analysis.backend, candidate)
            if acceptable(memory):
                found.append((candidate, memory))
                break
    return found[:limit]


def describe_shape(shape: Shape, memory: MemoryBreakdown) -> str:
    """``TP 8, batch 4, 4096 tokens: 9.1 GiB of 16 GiB per NeuronCore (43% headroom)``."""
    return (
        f"TP {shape.tensor_parallel_degree}, batch {shape.batch_size}, {shape.sequence_length} tokens: "
        f"{memory.peak_bytes / 2**30:.1f} GiB of {memory.budget_bytes / 2**30:.1f} GiB per {memory.unit} "
        f"({memory.headroom_fraction:.0%} headroom)"
    )
