"""What one vLLM release does at start-up, from ``data/vllm_memory.json`` ``versions``.

The facts are generated from each release's sources (``scripts/gen_vllm_memory_defaults.py``):
the engine and its profiler, the default token budget with and without chunked prefill, the block
size, whether CUDA graphs count in the budget, the NCCL it runs and how many communicators a TP
worker opens, latent attention, the defaults each entry point gets; plus the memory PyTorch sees
on each GPU.
"""

import math
from functools import cache
from typing import Any, NamedTuple

from lmi_config.knowledge import version_tuple
from lmi_config.knowledge.instances import Instance
from lmi_config.knowledge.memory import vllm_memory
from lmi_config.sizing.model import GIB


@cache
def memory_data() -> dict[str, Any]:
    return vllm_memory()


class VllmVersion(NamedTuple):
    """What one vLLM release does at start-up (one ``versions`` entry)."""

    version: str
    engine: str  # v0 | v1
    profiler: str
    long_context_threshold: int | None
    chunked_default_tokens: int | None
    unchunked_floor_tokens: int
    block_size: int
    cudagraphs_in_budget: bool
    nccl: str | None  # the NCCL of the torch wheel the release pins
    attention_output_copy: bool  # the backend copies the kernel's output into its own (0.4-0.6)
    mla: bool  # caches DeepSeek's latent attention compressed (ModelConfig.use_mla, 0.7.1+)
    expanded_latent_head_size: int | None  # before that: every head padded to this size (0.5-0.6: 256)
    communicators: int  # NCCL communicators a TP worker opens
    # kv_cache_dtype=auto follows a ModelOpt checkpoint's kv_cache_quant_algo through this map (0.14+)
    checkpoint_kv_cache_dtypes: dict[str, str] | None


class ProfilerCounts(NamedTuple):
    """What a profiling scheme counts against the budget (``vllm_memory.json`` ``profilers``)."""

    non_torch: bool  # NCCL buffers and other memory outside PyTorch's allocator
    cuda_context: bool  # the CUDA context, created before the worker's first reading
    allocator_cache: bool  # the allocator's reserved segments, not only the live tensors


def profiler_counts(scheme: str) -> ProfilerCounts:
    """The accounting of one profiling scheme (``VllmVersion.profiler``)."""
    entry = memory_data()["profilers"][scheme]
    return ProfilerCounts(
        non_torch=entry["counts_non_torch"],
        cuda_context=entry["counts_cuda_context"],
        allocator_cache=entry["counts_allocator_cache"],
    )


@cache
def vllm_version(version: str | None) -> VllmVersion:
    """The newest known release at or below ``version`` (the newest LMI one when unknown)."""
    known = memory_data()["versions"]
    ordered = sorted(known, key=version_tuple)
    chosen = ordered[-1]
    if version:
        wanted = version_tuple(version)
        at_or_below = [name for name in ordered if version_tuple(name) <= wanted]
        chosen = at_or_below[-1] if at_or_below else ordered[0]
    entry = known[chosen]

    def value(name: str) -> Any:
        return (entry.get(name) or {}).get("value")

    return VllmVersion(
        version=chosen,
        engine=value("engine"),
        profiler=value("profiler"),
        long_context_threshold=value("long_context_threshold"),
        chunked_default_tokens=value("chunked_default_tokens"),
        unchunked_floor_tokens=value("unchunked_floor_tokens") or 2048,
        block_size=value("block_size_default") or 16,
        cudagraphs_in_budget=bool(value("cudagraphs_in_budget")),
        nccl=value("nccl"),
        attention_output_copy=bool(value("attention_output_copy")),
        mla=bool(value("mla_kv_cache")),
        expanded_latent_head_size=value("expanded_latent_head_size"),
        communicators=value("nccl_communicators") or 2,
        checkpoint_kv_cache_dtypes=value("checkpoint_kv_cache_dtypes"),
    )


ENGINE_CONTEXT = "ENGINE_CONTEXT"  # an engine built with from_engine_args: what LMI's handlers do


def usage_context_defaults(
    version: str | None, context: str, instance: Instance
) -> tuple[int | None, int | None]:
    """(max_num_batched_tokens, max_num_seqs) a V1 release picks when neither is set, by entry point.

    ``vllm serve`` is ``OPENAI_API_SERVER``, ``LLM(...)`` is ``LLM_CLASS``; on a large GPU (the
    release's rule: H100/H200 by name, later 70 GiB or more except A100) both take bigger budgets.
    LMI builds its engine with ``from_engine_args`` (``ENGINE_CONTEXT``), which no table lists:
    (None, None), the scheduler's own defaults apply.
    """
    profile = vllm_version(version)
    entry = (memory_data()["versions"][profile.version].get("usage_context_defaults") or {}).get("value")
    if profile.engine != "v1" or not entry or context == ENGINE_CONTEXT:
        return None, None
    rule = entry["large_gpu"]
    name = instance.accelerator_name.lower()
    if "min_memory_gib" in rule:
        large = torch_visible_bytes(instance)[0] >= rule["min_memory_gib"] * GIB and not any(
            excluded in name for excluded in rule["excluded_names"]
        )
    else:
        large = any(wanted in name for wanted in rule["names"])
    defaults = entry["large" if large else "other"].get(context) or {}
    return defaults.get("max_num_batched_tokens"), defaults.get("max_num_seqs")


def cuda_context_bytes() -> int:
    """What the CUDA context takes of a GPU (``non_torch.cuda_context_gib``, an estimate)."""
    return int(memory_data()["non_torch"]["cuda_context_gib"]["value"] * GIB)


def startup_utilization_limit(instance: Instance) -> float:
    """The highest gpu_memory_utilization (two decimals) whose request fits in what a GPU has free once
    the CUDA context exists: what vLLM's V1 worker asks of the device before anything loads."""
    total, _ = torch_visible_bytes(instance)
    return math.floor((1 - cuda_context_bytes() / total) * 100) / 100


def torch_visible_bytes(instance: Instance) -> tuple[int, str]:
    """Memory per GPU as ``torch.cuda.mem_get_info`` reports it (less than nvidia-smi's total)."""
    table = memory_data()["torch_visible_memory_gib"]
    entry = table.get(instance.accelerator_name)
    if entry:
        return int(
            entry["value"] * GIB
        ), f"{entry['value']} GiB PyTorch sees on a {instance.accelerator_name}"
    driver = instance.memory_per_core_bytes
    shortfall = table["default_shortfall_gib"]["value"]
    return int(driver - shortfall * GIB), f"nvidia-smi {driver / GIB:.2f} GiB - {shortfall} GiB (estimate)"
