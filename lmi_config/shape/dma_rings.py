"""transformers-neuronx DMA rings that grow with what is compiled, on the Neuron SDK a log shows it for.

The memory model counts DMA rings as a fixed amount per NeuronCore (calibrated on SDKs where
configurations at the edge ran). One logged allocation failure (transformers-neuronx#49, SDK 2.14)
shows them growing with the KV cache each compiled bucket moves. The growth is modelled as a
multiple of the KV cache summed over the default buckets, the multiple taken from that log
(``data/memory.json`` ``dma_ring_growth``). Because only one log states it, the finding is a warning
and applies only to images of the SDK it was seen on.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from lmi_config.knowledge.images import neuron_sdk_of
from lmi_config.knowledge.instances import resolve_instance
from lmi_config.knowledge.memory import memory_constants
from lmi_config.modelarch import from_catalog
from lmi_config.shape.problems import Problem
from lmi_config.sizing import GIB, MemoryBreakdown, Shape, estimate_memory

if TYPE_CHECKING:
    from lmi_config.knowledge import Release

BACKEND = "transformers-neuronx"
KV_ITEM = "KV cache"


def _growth_facts() -> dict[str, Any] | None:
    return memory_constants()["neuron"][BACKEND].get("dma_ring_growth")


def bucket_factor(n_positions: int, start: int, context_fraction: float) -> float:
    """How many full-length KV caches the default buckets move together: token-generation buckets
    in powers of two from ``start`` below ``n_positions`` plus ``n_positions`` itself, and a
    context-encoding bucket at ``context_fraction`` of each."""
    buckets = []
    size = start
    while size < n_positions:
        buckets.append(size)
        size *= 2
    buckets.append(n_positions)
    return sum(buckets) * (1 + context_fraction) / n_positions


def _kv_bytes(memory: MemoryBreakdown) -> int:
    worst = max(memory.ranks, key=lambda rank: rank.total_bytes)
    return sum(item.bytes for item in worst.items if item.name == KV_ITEM)


def _fixed_dma_bytes(memory: MemoryBreakdown) -> int:
    worst = max(memory.ranks, key=lambda rank: rank.total_bytes)
    return sum(item.bytes for item in worst.items if item.name == "DMA rings")


@cache
def growth_ratio() -> float | None:
    """DMA-ring bytes per byte of KV cache moved by the buckets, from the logged failure; None when
    the data has no such log or its model is not in the catalog."""
    facts = _growth_facts()
    if facts is None:
        return None
    observed = facts["observed"]
    arch = from_catalog(observed["model_id"])
    if arch is None:
        return None
    shape = Shape(
        tensor_parallel_degree=observed["tensor_parallel_degree"],
        batch_size=observed["batch_size"],
        sequence_length=observed["n_positions"],
        weight_dtype=observed["dtype"],
        kv_dtype=observed["dtype"],
    )
    memory = estimate_memory(arch, resolve_instance(observed["instance"]), BACKEND, shape)
    moved = _kv_bytes(memory) * bucket_factor(
        observed["n_positions"], facts["token_bucket_start"], facts["context_bucket_fraction"]
    )
    return observed["dma_rings_gib"] * GIB / moved if moved else None


def _applies(sdk: str | None, sdks: list[str]) -> bool:
    return sdk is not None and any(sdk == seen or sdk.startswith(seen + ".") for seen in sdks)


def judge_dma_ring_growth(
    backend: str, release: Release, shape: Shape, memory: MemoryBreakdown
) -> list[Problem]:
    """A warning when the configuration fits with fixed DMA rings but not with the growth logged on
    this image's Neuron SDK."""
    facts = _growth_facts()
    if backend != BACKEND or facts is None or not memory.fits or memory.unit != "NeuronCore":
        return []
    sdk = neuron_sdk_of(release.djl)
    ratio = growth_ratio()
    if ratio is None or not _applies(sdk, facts["neuron_sdks"]):
        return []
    grown = (
        ratio
        * _kv_bytes(memory)
        * bucket_factor(shape.sequence_length, facts["token_bucket_start"], facts["context_bucket_fraction"])
    )
    extra = grown - _fixed_dma_bytes(memory)
    peak = memory.peak_bytes + max(0.0, extra)
    if peak <= memory.budget_bytes:
        return []
    return [
        Problem(
            "neuron-dma-rings-growth",
            "warning",
            f"on Neuron SDK {sdk} DMA rings grow with the KV cache each compiled bucket moves: at batch "
            f"{shape.batch_size} and {shape.sequence_length} positions about {grown / GIB:.1f} GiB per NeuronCore "
            f"instead of the {_fixed_dma_bytes(memory) / GIB:.1f} GiB counted, {peak / GIB:.1f} GiB in all against "
            f"{memory.budget_bytes / GIB:.0f} GiB (one logged failure states this growth, transformers-neuronx#49) — "
            "use an image with a newer Neuron SDK, or a smaller batch or sequence length",
        )
    ]
