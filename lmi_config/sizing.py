"""The memory model: one pure function from (model, instance, backend, shape) to an itemized
per-NeuronCore or per-GPU breakdown against the budget.

Neuron: weights (sharded over TP, with query heads padded to a multiple of TP and KV heads
replicated as the backend's GQA strategy does), KV cache per core, fixed per-core overheads
(scratchpad, collectives, model code, DMA rings) and, for NxD Inference, the unsharded
embeddings on rank 0 and the context-encoding attention scratch. GPU (vLLM and friends):
weights per GPU plus activation, CUDA-graph and non-torch memory against
``gpu_memory_utilization`` x memory; what is left is the KV cache.

Every constant comes from ``data/memory.json`` (GPU: ``data/vllm_memory.json``) with its evidence. lint, explain, plan and
render all call :func:`estimate_memory`; there is no second estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from lmi_config.knowledge import load_data
from lmi_config.knowledge.instances import Instance
from lmi_config.modelarch import ModelArch

MIB = 1024**2
GIB = 1024**3
NEURON_BACKENDS = ("transformers-neuronx", "nxdi")
UNSHARDED_EMBEDDINGS = "embeddings kept whole on rank 0"


@dataclass(frozen=True)
class Shape:
    """What the container will compile or allocate for."""

    tensor_parallel_degree: int
    batch_size: int
    sequence_length: int
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    quantize: str | None = None
    gqa_strategy: str | None = (
        None  # transformers-neuronx: shard-over-heads, shard-over-batch, replicated-heads, all-gather-heads
    )
    shard_over_sequence: bool = False
    chunked_prefill: bool = False
    gpu_memory_utilization: float = 0.9
    max_num_batched_tokens: int | None = None
    enforce_eager: bool = False
    pipeline_parallel_degree: int = 1
    kv_cache_dtype: str | None = None  # vLLM option.kv_cache_dtype (auto: the model dtype)
    block_size: int | None = None  # vLLM option.block_size (None: the release's default)
    vllm_version: str | None = None  # the vLLM bundled in the LMI image (releases.json)
    enable_chunked_prefill: bool | None = None  # explicit setting; None: vLLM's default for the release
    kv_cache_free_gpu_mem_fraction: float | None = None  # TensorRT-LLM


@dataclass(frozen=True)
class MemoryItem:
    """One line of the breakdown."""

    name: str
    bytes: int
    note: str = ""
    estimated: bool = False  # not settled by a measurement: an excess caused by it is a warning


@dataclass(frozen=True)
class RankMemory:
    """The items of one rank (or of every rank alike)."""

    label: str
    items: tuple[MemoryItem, ...]

    @property
    def total_bytes(self) -> int:
        return sum(item.bytes for item in self.items)


@dataclass(frozen=True)
class MemoryBreakdown:
    """Per-core (or per-GPU) memory against the budget."""

    unit: str  # NeuronCore | GPU
    budget_bytes: int
    budget_note: str
    ranks: tuple[RankMemory, ...]
    kv_strategy: str
    query_heads_padded: int
    kv_heads_per_core: float
    weight_bytes_total: int
    kv_cache_capacity_bytes: int | None = None  # GPU: what is left for the KV cache
    kv_bytes_per_sequence: int | None = None  # GPU: one max-length sequence
    notes: tuple[str, ...] = field(default_factory=tuple)
    kv_cache_tokens: int | None = None  # GPU: tokens the KV cache holds per replica
    max_concurrent_sequences: float | None = None  # GPU: max_model_len sequences that fit at once
    kv_error_margin_fraction: float | None = None  # GPU: how far off the KV capacity estimate may be

    @property
    def peak_bytes(self) -> int:
        return max(rank.total_bytes for rank in self.ranks)

    @property
    def certain_peak_bytes(self) -> int:
        """The peak without the items the sources do not settle (estimates, rank 0's whole embeddings)."""
        return max(sum(item.bytes for item in rank.items if not item.estimated) for rank in self.ranks)

    @property
    def fits(self) -> bool:
        return self.peak_bytes <= self.budget_bytes

    @property
    def fits_certainly_not(self) -> bool:
        """Over the budget even without the unsettled items: an error, not a warning."""
        return self.certain_peak_bytes > self.budget_bytes

    @property
    def headroom_fraction(self) -> float:
        return (self.budget_bytes - self.peak_bytes) / self.budget_bytes


@cache
def _constants() -> dict[str, Any]:
    return load_data("memory.json")


def dtype_bytes(name: str | None, default: float = 2) -> float:
    """Bytes per element of a dtype or quantization name (``bf16`` → 2, ``awq`` → 0.5)."""
    if not name:
        return default
    table = _constants()["dtype_bytes"]
    return float(table.get(name.strip().lower(), default))


def kv_layout(arch: ModelArch, tp: int, backend: str, strategy: str | None) -> tuple[str, int, float]:
    """(strategy name, padded query heads, KV heads stored per core).

    transformers-neuronx and NxD Inference pad query heads to a multiple of TP and replicate
    KV heads that cannot be split (neuron-ground-truth.md §5.2).
    """
    heads = arch.num_attention_heads
    kv = arch.num_key_value_heads
    padded = math.ceil(heads / tp) * tp
    if backend not in NEURON_BACKENDS:
        if kv >= tp:
            return "split over TP", heads, kv / tp
        return "replicated to TP", heads, 1.0
    if kv == heads:
        return "MHA (heads padded to TP)" if padded != heads else "MHA", padded, padded / tp
    if backend == "nxdi":
        if kv % tp == 0:
            return "split over TP", padded, kv / tp
        if tp % kv == 0:
            return "REPLICATE_TO_TP_DEGREE", padded, 1.0
        return "CONVERT_TO_MHA", padded, padded / tp
    chosen = (strategy or "shard-over-heads").lower()
    if chosen == "shard-over-batch":
        return "shard-over-batch", padded, float(kv)
    if chosen == "all-gather-heads":
        return "all-gather-heads", padded, kv / tp
    if chosen == "shard-over-heads" and kv % tp == 0:
        return "shard-over-heads", padded, kv / tp
    if kv < tp and tp % kv == 0:
        return "replicated-heads (one KV head per core)", padded, 1.0
    return "replicated-heads (KV replicated to the query heads)", padded, padded / tp


def _weights_bytes(
    arch: ModelArch, shape: Shape, padded_heads: int, kv_per_core: float, neuron: bool
) -> tuple[int, int]:
    """(total weight bytes after padding/replication, of which embeddings)."""
    quantized = shape.quantize and shape.quantize.lower() not in ("none", "false", "")
    linear_bytes = dtype_bytes(shape.quantize) if quantized else dtype_bytes(shape.weight_dtype)
    embedding_bytes = dtype_bytes(shape.weight_dtype)
    embedding_params = arch.embedding_params
    params = arch.total_params
    if neuron:
        tp = shape.tensor_parallel_degree
        per_layer_q = 2 * arch.hidden_size * arch.head_dim  # q and o projection rows per head
        per_layer_kv = 2 * arch.hidden_size * arch.head_dim  # k and v rows per KV head
        extra_q = (padded_heads - arch.num_attention_heads) * per_layer_q
        stored_kv = (
            max(kv_per_core * tp, arch.num_key_value_heads) if kv_per_core >= 1 else arch.num_key_value_heads
        )
        extra_kv = (stored_kv - arch.num_key_value_heads) * per_layer_kv
        params += int(arch.num_layers * (extra_q + extra_kv))
    linear_params = max(params - embedding_params, 0)
    total = int(linear_params * linear_bytes + embedding_params * embedding_bytes)
    return total, int(embedding_params * embedding_bytes)


def _item(name: str, mib: float, note: str, estimated: bool = False) -> MemoryItem:
    return MemoryItem(name, int(mib * MIB), note, estimated)


def estimate_memory(arch: ModelArch, instance: Instance, backend: str, shape: Shape) -> MemoryBreakdown:
    """The itemized per-core (Neuron) or per-GPU memory of a configuration."""
    if instance.accelerator == "neuron":
        return _neuron(arch, instance, "nxdi" if backend == "nxdi" else "transformers-neuronx", shape)
    return _gpu(arch, instance, backend, shape)


def _neuron(arch: ModelArch, instance: Instance, backend: str, shape: Shape) -> MemoryBreakdown:
    constants = _constants()["neuron"][backend]
    tp = shape.tensor_parallel_degree
    strategy, padded, kv_per_core = kv_layout(arch, tp, backend, shape.gqa_strategy)
    weights_total, embeddings = _weights_bytes(arch, shape, padded, kv_per_core, neuron=True)
    weights_per_core = weights_total // tp
    batch = shape.batch_size
    cache_length = shape.sequence_length
    notes = []
    if backend == "nxdi" and arch.sliding_window and arch.sliding_window < cache_length:
        cache_length = arch.sliding_window
        notes.append(f"KV cache length is the sliding window ({arch.sliding_window})")
    kv_heads = kv_per_core
    batch_per_core: float = batch
    if strategy == "shard-over-batch":
        batch_per_core = math.ceil(batch / tp)
    if (
        shape.shard_over_sequence
        and backend == "transformers-neuronx"
        and kv_per_core >= 1
        and arch.num_key_value_heads < tp
    ):
        kv_heads = arch.num_key_value_heads / tp  # replication undone by sharding the sequence
        strategy += " + shard_over_sequence"
    kv_bytes = int(
        2
        * arch.num_layers
        * batch_per_core
        * cache_length
        * kv_heads
        * arch.head_dim
        * dtype_bytes(shape.kv_dtype)
    )
    kv_note = f"2 x {arch.num_layers} layers x batch {batch_per_core:g} x {cache_length} tokens x {kv_heads:g} KV heads x {arch.head_dim} x {dtype_bytes(shape.kv_dtype):g} B ({strategy})"
    weight_note = f"{weights_total / GIB:.2f} GiB / TP {tp}" + (
        f"; query heads padded {arch.num_attention_heads}→{padded}"
        if padded != arch.num_attention_heads
        else ""
    )

    def fixed(rank0: bool) -> list[MemoryItem]:
        items = []
        for name, label in (
            ("shared_scratchpad_mib", "shared scratchpad"),
            ("collectives_mib", "collectives"),
            ("model_code_mib", "model code (NEFFs)"),
            ("dma_rings_mib", "DMA rings"),
            ("other_mib", "other"),
        ):
            entry = constants.get(name)
            if not entry:
                continue
            value = entry.get("rank0", entry["value"]) if rank0 else entry["value"]
            items.append(
                _item(
                    label,
                    value,
                    f"{value} MiB, {'rank 0 ' if rank0 and 'rank0' in entry else ''}fixed per core (data/memory.json)",
                )
            )
        return items

    def scratch(items: list[MemoryItem]) -> list[MemoryItem]:
        attention = constants.get("attention_scratch")
        if not attention:
            return items
        heads_per_rank = padded / tp
        if shape.chunked_prefill:
            needed = (
                heads_per_rank
                * attention["chunk_tokens"]
                * shape.sequence_length
                * attention["standard_bytes_per_element"]
            )
            kind = f"chunked prefill: {heads_per_rank:g} heads x {attention['chunk_tokens']} x {shape.sequence_length} x 2 B"
        else:
            needed = heads_per_rank * shape.sequence_length**2 * attention["standard_bytes_per_element"]
            kind = f"context encoding: {heads_per_rank:g} heads x {shape.sequence_length}² x 2 B"
        result = []
        for item in items:
            if item.name == "shared scratchpad" and needed > item.bytes:
                result.append(MemoryItem("attention scratchpad", int(needed), kind))
            else:
                result.append(item)
        return result

    other_ranks = [
        MemoryItem("weights", weights_per_core, weight_note),
        MemoryItem("KV cache", kv_bytes, kv_note),
    ]
    ranks = []
    if constants.get("rank0_unsharded_embeddings") and tp > 1:
        extra = int(embeddings * (1 - 1 / tp))
        rank0 = [
            other_ranks[0],
            MemoryItem(
                UNSHARDED_EMBEDDINGS,
                extra,
                "measured once (Llama-3.1-8B, optimum NxD, on-device sampling)",
                estimated=True,
            ),
            other_ranks[1],
        ]
        ranks.append(RankMemory("rank 0", tuple(scratch(rank0 + fixed(True)))))
        ranks.append(RankMemory(f"ranks 1-{tp - 1}", tuple(scratch(other_ranks + fixed(False)))))
    else:
        ranks.append(
            RankMemory("every core" if tp > 1 else "the core", tuple(scratch(other_ranks + fixed(False))))
        )
    budget = instance.memory_per_core_bytes
    return MemoryBreakdown(
        unit="NeuronCore",
        budget_bytes=budget,
        budget_note=f"{budget / GIB:g} GiB HBM per NeuronCore of {instance.instance_type}",
        ranks=tuple(ranks),
        kv_strategy=strategy,
        query_heads_padded=padded,
        kv_heads_per_core=kv_heads,
        weight_bytes_total=weights_total,
        notes=tuple(notes),
    )


def _gpu(arch: ModelArch, instance: Instance, backend: str, shape: Shape) -> MemoryBreakdown:
    """vLLM / lmi-dist / TensorRT-LLM: :mod:`lmi_config.gpu_memory` (imported here to avoid a cycle)."""
    from lmi_config.gpu_memory import estimate_gpu

    return estimate_gpu(arch, instance, backend, shape)


def host_memory_needed_bytes(arch: ModelArch, shape: Shape, *, compile: bool = True) -> int:
    """Host RAM to load the model (weights once) or to load and compile it (about twice), plus a base."""
    host = _constants()["host"]
    weights, _ = _weights_bytes(arch, shape, arch.num_attention_heads, arch.num_key_value_heads, neuron=False)
    if not compile:
        return int(weights * host["load_factor"]["value"])
    return int(weights * host["compile_load_factor"]["value"] + host["base_gib"]["value"] * GIB)


def loading_seconds(arch: ModelArch, shape: Shape, neuron: bool) -> int:
    """A rough floor for download + compile + load (used to judge timeouts)."""
    loading = _constants()["loading"]
    weights, _ = _weights_bytes(arch, shape, arch.num_attention_heads, arch.num_key_value_heads, neuron=False)
    seconds = weights / GIB * loading["download_seconds_per_gib"]["value"]
    if neuron:
        seconds += arch.total_params / 1e9 * loading["neuron_compile_seconds_per_billion_params"]["value"]
    return int(seconds)
