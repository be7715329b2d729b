"""The judge of memory and time: the per-core or per-GPU budget and its headroom, the KV cache vLLM
is left with, host RAM, and loading time against the timeouts."""

import math
from typing import NamedTuple

from lmi_config.knowledge.instances import Instance, instances
from lmi_config.knowledge.memory import headroom_warning_fraction, loading_constants
from lmi_config.modelarch import ModelArch
from lmi_config.shape.parallelism import ParallelTarget
from lmi_config.shape.problems import Problem
from lmi_config.shape.values import read_count
from lmi_config.sizing import (
    GIB,
    MemoryBreakdown,
    Shape,
    download_seconds,
    host_memory_needed_bytes,
    loading_seconds,
)
from lmi_config.sizing.model import VLLM_BACKENDS, headroom


def gib(value: float) -> str:
    return f"{value / GIB:.1f} GiB"


def describe_shape(shape: Shape, memory: MemoryBreakdown) -> str:
    """``TP 8, batch 4, 4096 tokens: 9.1 GiB of 16 GiB per NeuronCore (43% headroom)``."""
    return (
        f"TP {shape.tensor_parallel_degree}, batch {shape.batch_size}, {shape.sequence_length} tokens: "
        f"{memory.peak_bytes / 2**30:.1f} GiB of {memory.budget_bytes / 2**30:.1f} GiB per {memory.unit} "
        f"({memory.headroom_fraction:.0%} headroom)"
    )


def memory_acceptable(memory: MemoryBreakdown, sequence_length: int, lenient: bool = False) -> bool:
    """Fits with headroom; on vLLM, the KV cache holds one sequence of ``sequence_length`` outside the
    estimate's error margin.

    ``lenient`` ignores the items the sources do not settle (estimates, rank 0's whole
    embeddings measured once) and, on GPU, the error margin.
    """
    if memory.fits_certainly_not or (not lenient and not memory.fits):
        return False
    if memory.kv_cache_tokens is not None:
        from lmi_config.sizing.gpu import kv_capacity_verdict

        verdict = kv_capacity_verdict(memory, sequence_length)
        return verdict is None or (lenient and verdict == "warning")
    if memory.kv_cache_capacity_bytes is not None:
        return (
            memory.kv_bytes_per_sequence is not None
            and memory.kv_cache_capacity_bytes >= memory.kv_bytes_per_sequence
        )
    peak = memory.certain_peak_bytes if lenient else memory.peak_bytes
    return headroom(memory.budget_bytes, peak) >= headroom_warning_fraction()


class MemoryTarget(NamedTuple):
    """What a memory breakdown is judged against."""

    arch: ModelArch
    instance: Instance
    backend: str  # the memory model's backend
    parallel: ParallelTarget


def judge_memory(target: MemoryTarget, shape: Shape, memory: MemoryBreakdown) -> list[Problem]:
    """Over the budget (error, or warning when only estimated items push it over), at the edge,
    or — for vLLM — no room left in the KV cache for one sequence of max_model_len."""
    problems = []
    if not memory.fits:
        problems.append(_over_budget(target.arch, shape, memory))
    elif memory.unit == "NeuronCore" and memory.headroom_fraction < headroom_warning_fraction():
        problems.append(
            Problem(
                "memory-headroom-low",
                "warning",
                f"{describe_shape(shape, memory)}: under {headroom_warning_fraction():.0%} left, within the estimate's error",
            )
        )
    if memory.unit == "GPU" and target.backend in VLLM_BACKENDS and memory.fits:
        problems.extend(_kv_capacity(target, shape, memory))
    return problems


def _over_budget(arch: ModelArch, shape: Shape, memory: MemoryBreakdown) -> Problem:
    worst = max(memory.ranks, key=lambda rank: rank.total_bytes)
    uncertain = not memory.fits_certainly_not
    demands = [item for item in worst.items if not item.name.startswith("KV cache (what")]
    parts = ", ".join(f"{item.name} {gib(item.bytes)}" for item in demands if item.bytes >= 0.05 * GIB)
    estimated = ", ".join(item.name for item in demands if item.estimated and item.bytes)
    caveat = f" (over only with the estimated or once-measured items: {estimated})" if uncertain else ""
    return Problem(
        "memory-exceeds-budget",
        "warning" if uncertain else "error",
        f"{arch.model_id} needs {gib(memory.peak_bytes)} per {memory.unit} ({worst.label}: {parts}) at TP "
        f"{shape.tensor_parallel_degree}, batch {shape.batch_size}, {shape.sequence_length} tokens, but the budget is "
        f"{gib(memory.budget_bytes)} ({memory.budget_note}){caveat}",
    )


def _kv_capacity(target: MemoryTarget, shape: Shape, memory: MemoryBreakdown) -> list[Problem]:
    from lmi_config.sizing.gpu import kv_capacity_verdict  # imported with the first memory figure

    length = shape.sequence_length
    verdict = kv_capacity_verdict(memory, length)
    if verdict is None:
        return []
    what = (
        "vLLM will refuse to start"
        if verdict == "error"
        else f"within the estimate's {memory.kv_error_margin_fraction or 0:.0%} error margin, vLLM may refuse to start"
    )
    return [
        Problem(
            "vllm-kv-capacity",
            verdict,
            f"max_model_len {length} but the KV cache holds about {memory.kv_cache_tokens or 0} tokens per replica "
            f"({gib(memory.kv_cache_capacity_bytes or 0)} left of {memory.budget_note}): {what}",
            key="option.max_model_len",
        )
    ]


def judge_host_memory(arch: ModelArch, instance: Instance, shape: Shape) -> list[Problem]:
    """Neuron loads and compiles on the host: the weights must fit once (error), twice to compile (warning)."""
    if instance.accelerator != "neuron" or not instance.host_memory_gib:
        return []
    available = instance.host_memory_gib * GIB
    to_load = host_memory_needed_bytes(arch, shape, compile=False)
    to_compile = host_memory_needed_bytes(arch, shape, compile=True)
    if to_compile <= available:
        return []
    needed = to_load if to_load > available else to_compile
    bigger = sorted(
        (
            item
            for item in instances().values()
            if item.platform == instance.platform
            and (item.host_memory_gib or 0) * GIB >= needed
            and item.num_cores >= shape.tensor_parallel_degree
        ),
        key=lambda item: item.host_memory_gib or 0,
    )
    suggestion = (
        f"{bigger[0].instance_type} has {bigger[0].host_memory_gib:g} GiB"
        if bigger
        else "no instance of this family has enough"
    )
    if to_load > available:
        message = (
            f"{arch.model_id}'s weights alone ({gib(to_load)}) are larger than the host RAM of "
            f"{instance.instance_type} ({instance.host_memory_gib:g} GiB); {suggestion}"
        )
        return [Problem("host-memory-insufficient", "error", message, key=None)]
    message = (
        f"loading and compiling {arch.model_id} takes about {gib(to_compile)} of host RAM (about 2 x the weights + 4 GiB) "
        f"but {instance.instance_type} has {instance.host_memory_gib:g} GiB: the compile may be killed; "
        f"load pre-compiled artifacts or use a larger instance ({suggestion})"
    )
    return [Problem("host-memory-insufficient", "warning", message, key=None)]


class Loading(NamedTuple):
    """How long downloading (and on Neuron compiling) takes, against the loading timeout."""

    needed_seconds: int
    download_seconds: int  # of which downloading the weights (SageMaker's model-data download)
    compiles: bool
    timeout_seconds: int
    timeout_source: str  # "option.model_loading_timeout=…" or the image default
    timeout_key: str | None
    recommended_seconds: int
    beyond_startup_limit: bool  # even the recommendation exceeds SageMaker's start-up limit


def recommended_loading_timeout(needed_seconds: int) -> int:
    """The timeout to set: the estimate x a margin, rounded up, at least the floor, at most SageMaker's limit."""
    constants = loading_constants()
    rounding = constants.timeout_rounding_seconds
    rounded = math.ceil(needed_seconds * constants.timeout_margin_factor / rounding) * rounding
    return min(
        constants.sagemaker_startup_limit_seconds, max(constants.minimum_recommended_timeout_seconds, rounded)
    )


def estimate_loading(
    arch: ModelArch,
    shape: Shape,
    *,
    neuron: bool,
    precompiled: bool,
    timeout_text: str | None,
    optimize_level: int | None = None,
    staged: bool = False,
) -> Loading:
    """Download + compile estimate against ``option.model_loading_timeout`` (or the image default).
    ``staged``: the weights are the model's data, already in /opt/ml/model when the container starts
    (SageMaker downloads them first, under its own timeout): only compiling and loading remain."""
    constants = loading_constants()
    compiles = neuron and not precompiled
    needed = loading_seconds(arch, shape, compiles, optimize_level)
    if staged:
        needed = max(needed - download_seconds(arch, shape), 0)
    written = read_count(timeout_text).value
    if written is not None:
        timeout = int(written)
        source, key = f"option.model_loading_timeout={timeout}", "option.model_loading_timeout"
    else:
        timeout = constants.default_model_loading_timeout_seconds
        source, key = f"the image default {timeout} s", None
    return Loading(
        needed_seconds=needed,
        download_seconds=download_seconds(arch, shape),
        compiles=compiles,
        timeout_seconds=timeout,
        timeout_source=source,
        timeout_key=key,
        recommended_seconds=recommended_loading_timeout(needed),
        beyond_startup_limit=needed * constants.timeout_margin_factor
        > constants.sagemaker_startup_limit_seconds,
    )


def weights_staged(model_id: str | None) -> bool:
    """Whether nothing is downloaded at start-up: no option.model_id (LMI loads the model's data in
    /opt/ml/model, which SageMaker downloads before the container starts) or a path on the machine."""
    value = (model_id or "").strip()
    return not value or value.startswith("/")


def beyond_startup_limit_fix(loading: Loading) -> str:
    """What to do when loading outlasts SageMaker's start-up health check: compile ahead of time where
    the container compiles; else (the download is the time) let SageMaker download the weights before
    the container starts."""
    if loading.compiles:
        return "compile ahead of time and point option.compiled_graph_path at the artifacts"
    return (
        "stage the weights in S3 and attach them as the model's data (ModelDataSource, an uncompressed S3Prefix, "
        "with option.model_id=/opt/ml/model): SageMaker downloads them before the container starts, under "
        "ModelDataDownloadTimeoutInSeconds, and the start-up check then covers loading only"
    )


def judge_loading(arch: ModelArch, loading: Loading) -> list[Problem]:
    """A loading timeout shorter than the estimate: the worker is killed after all that time."""
    if loading.needed_seconds <= loading.timeout_seconds:
        return []
    limit = loading_constants().sagemaker_startup_limit_seconds
    if loading.beyond_startup_limit:
        fix = (
            f"that is beyond SageMaker's {limit} s start-up health check: {beyond_startup_limit_fix(loading)}"
        )
    else:
        fix = (
            f"set option.model_loading_timeout={loading.recommended_seconds} (and the SageMaker container start-up "
            "health-check timeout at least as long)"
        )
    return [
        Problem(
            "loading-timeout-too-short",
            "warning",
            f"downloading{' and compiling' if loading.compiles else ''} {arch.model_id} takes roughly "
            f"{loading.needed_seconds // 60} min (an estimate), longer than {loading.timeout_source}; {fix}",
            key=loading.timeout_key,
        )
    ]
