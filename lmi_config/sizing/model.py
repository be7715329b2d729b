"""The memory model's vocabulary: the shape it is asked about, the itemized breakdown it answers
with, and what the Neuron and GPU halves share (dtype sizes, KV layouts, weights)."""

import math
from functools import cache
from typing import Any, NamedTuple

from lmi_config.knowledge.memory import memory_constants
from lmi_config.modelarch import ModelArch

MIB = 1024**2
GIB = 1024**3
NEURON_BACKENDS = ("transformers-neuronx", "nxdi")
VLLM_BACKENDS = ("vllm", "lmi-dist")  # lmi-dist is built on vLLM: its memory, checkpoint loading and graphs
UNSHARDED_EMBEDDINGS = "embeddings kept whole on rank 0"


class Shape(NamedTuple):
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


class MemoryItem(NamedTuple):
    """One line of the breakdown."""

    name: str
    bytes: int
    note: str = ""
    estimated: bool = False  # not settled by a measurement: an excess caused by it is a warning


class RankMemory(NamedTuple):
    """The items of one rank (or of every rank alike)."""

    label: str
    items: tuple[MemoryItem, ...]

    @property
    def total_bytes(self) -> int:
        return sum(item.bytes for item in self.items)


class MemoryBreakdown(NamedTuple):
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
    notes: tuple[str, ...] = ()
    kv_cache_tokens: int | None = None  # GPU: tokens the KV cache holds per replica
    max_concurrent_sequences: float | None = None  # GPU: max_model_len sequences that fit at once
    kv_error_margin_fraction: float | None = None  # GPU: how far off the KV capacity estimate may be
    kv_upper_bound_only: bool = (
        False  # GPU: the KV figures are an upper bound (a VLM's vision encoder is not sized)
    )

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
        return headroom(self.budget_bytes, self.peak_bytes)


def headroom(budget_bytes: int, peak_bytes: int) -> float:
    """The budget's unused fraction; -1 (all of it short) for a budget of no bytes, which a tiny
    gpu_memory_utilization such as 1e-320 rounds to."""
    return (budget_bytes - peak_bytes) / budget_bytes if budget_bytes > 0 else -1.0


@cache
def constants() -> dict[str, Any]:
    return memory_constants()


def dtype_bytes(name: str | None, default: float = 2) -> float:
    """Bytes per element of a dtype or quantization name (``bf16`` → 2, ``awq`` → 0.5)."""
    if not name:
        return default
    table = constants()["dtype_bytes"]
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


def weights_bytes(
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


def item_mib(name: str, mib: float, note: str, estimated: bool = False) -> MemoryItem:
    return MemoryItem(name, int(mib * MIB), note, estimated)
