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

from lmi_config.knowledge.instances import Instance
from lmi_config.modelarch import ModelArch
from lmi_config.sizing.model import (
    GIB,
    MIB,
    NEURON_BACKENDS,
    UNSHARDED_EMBEDDINGS,
    MemoryBreakdown,
    MemoryItem,
    RankMemory,
    Shape,
    constants,
    dtype_bytes,
    kv_layout,
    weights_bytes,
)

__all__ = [
    "GIB",
    "MIB",
    "NEURON_BACKENDS",
    "UNSHARDED_EMBEDDINGS",
    "MemoryBreakdown",
    "MemoryItem",
    "RankMemory",
    "Shape",
    "download_seconds",
    "dtype_bytes",
    "estimate_memory",
    "host_memory_needed_bytes",
    "kv_layout",
    "loading_seconds",
]


def estimate_memory(arch: ModelArch, instance: Instance, backend: str, shape: Shape) -> MemoryBreakdown:
    """The itemized per-core (Neuron) or per-GPU memory of a configuration."""
    # each model is imported when a lint first sizes for its accelerator (benchmarks/lint_speed.py)
    if instance.accelerator == "neuron":
        from lmi_config.sizing.neuron import estimate_neuron

        return estimate_neuron(arch, instance, "nxdi" if backend == "nxdi" else "transformers-neuronx", shape)
    from lmi_config.sizing.gpu import estimate_gpu

    return estimate_gpu(arch, instance, backend, shape)


def host_memory_needed_bytes(arch: ModelArch, shape: Shape, *, compile: bool = True) -> int:
    """Host RAM to load the model (weights once) or to load and compile it (about twice), plus a base."""
    host = constants()["host"]
    weights, _ = weights_bytes(arch, shape, arch.num_attention_heads, arch.num_key_value_heads, neuron=False)
    if not compile:
        return int(weights * host["load_factor"]["value"])
    return int(weights * host["compile_load_factor"]["value"] + host["base_gib"]["value"] * GIB)


def download_seconds(arch: ModelArch, shape: Shape) -> int:
    """How long downloading the weights takes (from S3 or the Hub), roughly."""
    weights, _ = weights_bytes(arch, shape, arch.num_attention_heads, arch.num_key_value_heads, neuron=False)
    return int(weights / GIB * constants()["loading"]["download_seconds_per_gib"]["value"])


def loading_seconds(arch: ModelArch, shape: Shape, neuron: bool, optimize_level: int | None = None) -> int:
    """A rough floor for download + compile + load (used to judge timeouts); a higher Neuron
    compiler optimization level (``option.neuron_optimize_level``) compiles longer."""
    loading = constants()["loading"]
    seconds: float = download_seconds(arch, shape)
    if neuron:
        factors = loading["compile_factor_by_optimize_level"]["value"]
        factor = float(factors.get(str(optimize_level), 1.0)) if optimize_level else 1.0
        seconds += (
            arch.total_params / 1e9 * loading["neuron_compile_seconds_per_billion_params"]["value"] * factor
        )
    return int(seconds)
