"""The one judge of a configuration's shape.

From a canonical configuration (and the backend, release, instance and model, as far as they are
known) to the shape the container builds — TP, PP, nodes, batch, sequence length, dtype, copies,
each with its provenance — and one verdict on it: TP against devices, topology and heads, memory
against the budget and its headroom, host RAM, loading time against the timeouts. lint rules
report the verdict, explain prints it, and render's ``auto`` and the planner search over it; no
other module judges TP, headroom or timeouts.
"""

from typing import NamedTuple

from lmi_config.configfile.canonical import CanonicalConfig
from lmi_config.configfile.text import shorten
from lmi_config.knowledge import Release
from lmi_config.knowledge.container import batch_keys, dynamic_batch_keys, precompiled_keys, sequence_keys
from lmi_config.knowledge.instances import Instance
from lmi_config.knowledge.models import ModelIdentity
from lmi_config.knowledge.options import JAVA_INT_MAX
from lmi_config.modelarch import ModelArch
from lmi_config.shape.attention_backend import judge_attention_backend
from lmi_config.shape.capability import judge_capabilities
from lmi_config.shape.dimensions import (
    NEURON_BACKENDS,
    Target,
    override_neuron_config,
    override_sequence_length,
    resolve_copies,
    resolve_dtype,
    resolve_engine_settings,
    resolve_nodes,
    resolve_pipeline,
    resolve_quantize,
    resolve_sequence_length,
    resolve_tensor_parallel_and_batch,
    unsized_checkpoint,
)
from lmi_config.shape.effects import judge_settings_without_effect
from lmi_config.shape.engines import judge_engine_registries
from lmi_config.shape.frontend import flag, integer, resolve_batching
from lmi_config.shape.lora_checks import judge_lora
from lmi_config.shape.neuron_sdk import judge_neuron_sdk
from lmi_config.shape.parallelism import ParallelTarget, judge_mpi_workers, judge_tensor_parallel
from lmi_config.shape.problems import Problem
from lmi_config.shape.resources import (
    Loading,
    MemoryTarget,
    describe_shape,
    estimate_loading,
    judge_host_memory,
    judge_loading,
    judge_memory,
    memory_acceptable,
    recommended_loading_timeout,
    weights_staged,
)
from lmi_config.shape.sequence import judge_sequence_length
from lmi_config.shape.startup_checks import judge_startup_checks
from lmi_config.shape.trtllm_limits import judge_trtllm_limits
from lmi_config.shape.types import Batching, ContainerShape, EngineSettings, Resolved
from lmi_config.shape.values import COUNT_KEYS, tensor_parallel_minimum, unusable_values
from lmi_config.shape.vllm_settings import judge_vllm_settings
from lmi_config.sizing import MemoryBreakdown, estimate_memory

__all__ = [
    "Assessment",
    "Batching",
    "ContainerShape",
    "EngineSettings",
    "Loading",
    "ParallelTarget",
    "Problem",
    "Resolved",
    "Target",
    "assess",
    "describe_shape",
    "judge_tensor_parallel",
    "memory_acceptable",
    "recommended_loading_timeout",
    "resolve_shape",
    "sizing_backend",
]


# a handler of the user's own decides how it loads (4-bit, offloading, its own engine): no backend's
# memory model describes it, so memory is not estimated (lint says so in a note)
UNSIZED_BACKENDS = ("custom",)


class Assessment(NamedTuple):
    """The shape, its memory (when model and instance are known) and the verdict."""

    target: Target
    shape: ContainerShape
    memory: MemoryBreakdown | None = None
    loading: Loading | None = None
    problems: tuple[Problem, ...] = ()

    def of(self, check: str) -> list[Problem]:
        """The problems one lint rule reports."""
        return [problem for problem in self.problems if problem.check == check]

    @property
    def acceptable(self) -> bool:
        """No blocking problem and memory that fits with headroom (what the planner requires)."""
        if any(problem.blocking for problem in self.problems if problem.check != "memory-exceeds-budget"):
            return False
        shape = self.shape.sizing_shape()
        return self.memory is None or shape is None or memory_acceptable(self.memory, shape.sequence_length)

    @property
    def memory_not_estimated(self) -> str | None:
        """Why the model's memory is not estimated for this target, if it is not: a layout the formulas
        do not describe (the catalog's reason), or a checkpoint stored quantized that the weight table
        cannot size for this backend."""
        arch = self.target.arch
        if arch is None:
            return None
        shape = self.shape.sizing_shape()
        return arch.memory_not_estimated or unsized_checkpoint(self.target, shape.quantize if shape else None)


def make_target(
    backend: str,
    backend_accelerator: str,
    release: Release,
    instance: Instance | None,
    arch: ModelArch | None,
    *,
    nodes: int | None = None,
    optimum_neuron_export: str | None = None,
    identity: ModelIdentity | None = None,
) -> Target:
    """The target of a judgement; the instance's accelerator wins over the backend's.

    ``optimum_neuron_export``: the configuration describes an export by that optimum-neuron version
    (``search``, ``plan --cache-config``; ``ANY_OPTIMUM_NEURON`` when the version is not known), judged
    against its exporter's registry; otherwise (None) against the LMI image's handler and loaders."""
    accelerator = instance.accelerator if instance is not None else backend_accelerator
    export = optimum_neuron_export if accelerator == "neuron" else None
    return Target(backend, accelerator, release, instance, arch, nodes, export, None if arch else identity)


def resolve_shape(config: CanonicalConfig, target: Target) -> ContainerShape:
    """The shape the container builds for this configuration, dimension by dimension."""
    batching = resolve_batching(config, target.backend, target.release, target.arch)
    pipeline = resolve_pipeline(config)
    nodes = resolve_nodes(target)
    sequence = resolve_sequence_length(config, target)
    tp, batch = resolve_tensor_parallel_and_batch(config, target, batching, sequence, pipeline.value)
    engine = resolve_engine_settings(config, target.release, target)
    return ContainerShape(
        backend=target.backend,
        batching=batching,
        tensor_parallel_degree=tp,
        pipeline_parallel_degree=pipeline,
        nodes=nodes,
        batch_size=batch,
        sequence_length=sequence,
        dtype=resolve_dtype(config, target),
        quantize=resolve_quantize(config, target),
        copies=resolve_copies(target, tp, pipeline.value, nodes.value, engine),
        engine=engine,
        unusable=tuple(_unusable(config, target.backend, batching.mode)),
    )


def _unusable(config: CanonicalConfig, backend: str, mode: str) -> list[Problem]:
    problems = unusable_values(config, _counts_read(backend, mode))
    overrides = override_neuron_config(config)
    if backend == "nxdi" and "seq_len" in overrides and override_sequence_length(config) is None:
        problems.append(
            Problem(
                "invalid-value",
                "error",
                f"option.override_neuron_config seq_len={shorten(repr(overrides['seq_len']))} is not an integer "
                f"from 1 to {JAVA_INT_MAX}; the judge cannot size a configuration from it",
                key="option.override_neuron_config",
            )
        )
    return problems


def _counts_read(backend: str, mode: str) -> dict[str, int]:
    """The integer keys this backend's shape is read from, each with the least value it takes."""
    counts = {"option.tensor_parallel_degree": tensor_parallel_minimum(backend), **COUNT_KEYS}
    counts.update(dict.fromkeys(sequence_keys(backend).keys, 1))
    counts.update(dict.fromkeys(batch_keys(backend, mode).keys, 1))
    counts.update(dict.fromkeys(dynamic_batch_keys(), 0))  # the recommender compares batch_size with 0
    return counts


def sizing_backend(target: Target) -> str:
    """The memory model to use: the backend's, or transformers-neuronx for a GPU backend on Neuron."""
    if target.backend in NEURON_BACKENDS or target.accelerator == "gpu":
        return target.backend
    return "transformers-neuronx"


def assess(config: CanonicalConfig, target: Target, *, backend_accelerator: str | None = None) -> Assessment:
    """Resolve the shape and judge it with everything the target makes known."""
    shape = resolve_shape(config, target)
    parallel = ParallelTarget(
        backend=target.backend,
        backend_accelerator=backend_accelerator or target.accelerator,
        instance=target.instance,
        arch=target.arch,
        multi_node=flag(config, "option.multi_node"),
        nodes=shape.nodes.value,
    )
    problems: list[Problem] = list(shape.unusable)
    problems.extend(judge_sequence_length(shape.sequence_length, target.arch, target.accelerator))
    if shape.tensor_parallel is not None:
        problems.extend(
            judge_tensor_parallel(
                parallel,
                shape.tensor_parallel,
                shape.pipeline_parallel_degree.value,
                gqa_strategy=shape.engine.gqa_strategy,
                batch=shape.batch_size.value if shape.batch_size else None,
            )
        )
        # the engine reads gpu.maxWorkers, copied from maxWorkers when absent; an unusable number: invalid-value
        present = next((key for key in ("gpu.maxWorkers", "maxWorkers") if config.has(key)), None)
        count = integer(config, present)[0] if present else None
        workers = (present, count) if present and count is not None else None
        problems.extend(
            judge_mpi_workers(
                (config.get("engine") or "").strip(),
                workers,
                parallel,
                shape.tensor_parallel,
                shape.pipeline_parallel_degree.value,
            )
        )
    memory = loading = None
    sizing_shape = shape.sizing_shape()
    instance, arch = target.instance, target.arch
    if (
        sizing_shape is not None
        and instance is not None
        and arch is not None
        # a layout the formulas do not cover gets no figure rather than a wrong one
        and arch.memory_not_estimated is None
        and unsized_checkpoint(target, sizing_shape.quantize) is None
        and target.accelerator in ("neuron", "gpu")
        and target.backend not in UNSIZED_BACKENDS
    ):
        from lmi_config.shape.dma_rings import judge_dma_ring_growth  # only where memory is sized

        memory = estimate_memory(arch, instance, sizing_backend(target), sizing_shape)
        judged = MemoryTarget(arch, instance, sizing_backend(target), parallel)
        problems.extend(judge_memory(judged, sizing_shape, memory))
        problems.extend(judge_dma_ring_growth(sizing_backend(target), target.release, sizing_shape, memory))
        problems.extend(judge_host_memory(arch, instance, sizing_shape))
        loading = estimate_loading(
            arch,
            sizing_shape,
            neuron=target.accelerator == "neuron",
            precompiled=any(config.has(key) for key in precompiled_keys()),
            timeout_text=config.get("option.model_loading_timeout"),
            optimize_level=integer(config, "option.neuron_optimize_level")[0],
            staged=weights_staged(config.get("option.model_id")),
        )
        problems.extend(judge_loading(arch, loading))
    problems.extend(_copies(shape, target))
    problems.extend(judge_capabilities(config, target))
    problems.extend(judge_startup_checks(config, target, shape))
    problems.extend(judge_attention_backend(config, target, shape))
    problems.extend(judge_lora(config, target, shape))
    problems.extend(judge_vllm_settings(config, target, shape))
    problems.extend(judge_engine_registries(config, target, shape.batching.rolling_batch.value))
    problems.extend(judge_neuron_sdk(target))
    if target.accelerator == "neuron":  # NxD Inference runs only there: a GPU lint never imports its checks
        from lmi_config.shape.nxd_checks import judge_nxd_checks

        problems.extend(judge_nxd_checks(config, target, shape))
    problems.extend(judge_trtllm_limits(config, target, shape.batch_size.value if shape.batch_size else None))
    problems.extend(judge_settings_without_effect(config, shape, target))
    return Assessment(target, shape, memory, loading, tuple(problems))


def _copies(shape: ContainerShape, target: Target) -> list[Problem]:
    instance = target.instance
    tp = shape.tensor_parallel
    if instance is None or tp is None or shape.copies is None or tp > instance.num_cores * shape.nodes.value:
        return []
    copies = shape.copies.value
    idle = instance.num_cores * shape.nodes.value - copies * tp * shape.pipeline_parallel_degree.value
    if copies <= 1 and not idle:
        return []
    batch = shape.batch_size.value if shape.batch_size else None
    concurrency = f", up to {copies * batch} sequences at once" if batch else ""
    idle_text = f"; {idle} {instance.core_word}(s) stay idle" if idle else ""
    why = " (LoRA / stateful sessions: one worker)" if shape.engine.single_worker else ""
    return [
        Problem(
            "model-copies",
            "info",
            f"the container loads {copies} cop{'ies' if copies != 1 else 'y'} of the model ({instance.num_cores} "
            f"{instance.core_word}s / TP {tp}){why}{concurrency}{idle_text}",
        )
    ]
