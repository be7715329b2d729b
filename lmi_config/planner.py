"""Candidate enumeration and ranking over the one judge: resolves ``auto`` for TP, batch and
sequence length, and finds the nearest configurations that fit.

A candidate is a configuration as it will be written (the spec's keys plus the TP, batch and
sequence-length keys the container reads for this backend, from ``data/container_shape.json``);
the judge resolves and judges exactly that configuration, so what render says ``auto`` became is
what lint and explain read back. The default objective is the container's own (its Neuron smart
defaults aim for it): the most concurrent sequences per instance, copies x batch. ``latency``
prefers the largest TP that fits.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from lmi_config.configfile.canonical import CanonicalConfig, Origin, Setting
from lmi_config.errors import PlanningError as PlanningError
from lmi_config.knowledge.container import batch_keys, sequence_keys
from lmi_config.knowledge.memory import container_default
from lmi_config.shape import (
    Assessment,
    ParallelTarget,
    Target,
    assess,
    judge_tensor_parallel,
    memory_acceptable,
    resolve_shape,
    sizing_backend,
)
from lmi_config.shape.capability import runnable_dtype
from lmi_config.sizing import MemoryBreakdown, Shape, estimate_memory

NEURON_BATCHES = (1, 2, 4, 8, 16, 32, 64)
GPU_BATCH_CAP = 256
TP_KEY = "option.tensor_parallel_degree"
DIMENSIONS = ("tensor_parallel_degree", "batch_size", "sequence_length")


@dataclass(frozen=True)
class Candidate:
    """One configuration as written, and the judge's assessment of it."""

    items: tuple[tuple[str, str], ...]
    assessment: Assessment

    @property
    def shape(self) -> Shape:
        shape = self.assessment.shape.sizing_shape()
        assert shape is not None
        return shape

    @property
    def memory(self) -> MemoryBreakdown:
        assert self.assessment.memory is not None
        return self.assessment.memory

    @property
    def copies(self) -> int:
        copies = self.assessment.shape.copies
        return copies.value if copies else 1

    @property
    def concurrency(self) -> int:
        return self.copies * self.shape.batch_size


def configuration(items: dict[str, str], name: str = "spec") -> CanonicalConfig:
    """A canonical configuration holding ``items`` as if written in a file."""
    config = CanonicalConfig()
    for key, value in items.items():
        config.offer(Setting(key, value, Origin(name, None, "spec"), "file"))
    return config


def parallel_target(target: Target, backend_accelerator: str) -> ParallelTarget:
    return ParallelTarget(target.backend, backend_accelerator, target.instance, target.arch)


def valid_degrees(target: Target, backend_accelerator: str) -> list[int]:
    """TP degrees the judge does not block on this instance (runtime, documented, heads, KV heads)."""
    instance = target.instance
    if instance is None:
        return []
    judged = parallel_target(target, backend_accelerator)
    return [
        degree
        for degree in range(1, instance.num_cores + 1)
        if not any(problem.blocking for problem in judge_tensor_parallel(judged, degree))
    ]


def degree_allowed(target: Target, backend_accelerator: str, degree: int) -> bool:
    """Whether the judge lets a planner choose this TP degree (what :func:`valid_degrees` keeps)."""
    judged = parallel_target(target, backend_accelerator)
    return not any(problem.blocking for problem in judge_tensor_parallel(judged, degree))


def auto_sequence_lengths(target: Target) -> list[int]:
    """Neuron: the container's min(max_position_embeddings, 4096); GPU: the longest that fits first."""
    assert target.arch is not None
    maximum = target.arch.max_position_embeddings or 2048
    if target.accelerator != "gpu":
        return [min(maximum, container_default("smart_defaults_max_n_positions"))]
    return [maximum] + [
        length for length in (65536, 32768, 16384, 8192, 4096, 2048, 1024) if length < maximum
    ]


@dataclass(frozen=True)
class AutoRequest:
    """Which dimensions are ``auto`` and what stays fixed."""

    tensor_parallel_degree: bool
    batch_size: bool
    sequence_length: bool


def largest_gpu_batch(memory: MemoryBreakdown) -> int:
    """The largest power of two (at most ``GPU_BATCH_CAP``) of max-length sequences the KV cache holds."""
    if not memory.kv_cache_capacity_bytes or not memory.kv_bytes_per_sequence:
        return 1
    fitting = memory.kv_cache_capacity_bytes // memory.kv_bytes_per_sequence
    return max(1, min(GPU_BATCH_CAP, 2 ** int(math.log2(max(fitting, 1)))))


class CandidateWriter:
    """Writes candidates as the configuration will be written and asks the judge about each.

    ``items`` are the fixed keys (a spec's, or the backend's render options); a candidate adds
    the TP key, every key that carries the batch in this backend's batching mode, and the key
    that carries the sequence length (``data/container_shape.json``).
    """

    def __init__(self, items: dict[str, str], target: Target, backend_accelerator: str):
        dtype = runnable_dtype(configuration(items), target)
        if dtype is not None:  # a bfloat16 checkpoint on a GPU without bfloat16: write the dtype it can run
            items = {**items, "option.dtype": dtype}
        self.items = items
        self.target = target
        self.backend_accelerator = backend_accelerator
        base = resolve_shape(configuration(items), target)
        self.batch_render_keys = batch_keys(target.backend, base.batching.mode).render_keys
        self.sequence_key = sequence_keys(target.backend).render_key
        self.base = base

    def written(self, degree: int | None, batch: int | None, sequence: int | None) -> dict[str, str]:
        """The configuration of one candidate, key by key (None leaves a dimension to the container)."""
        items = dict(self.items)
        if degree is not None:
            items[TP_KEY] = str(degree)
        if batch is not None:
            for key in self.batch_render_keys:
                items[key] = str(batch)
        if sequence is not None and self.sequence_key:
            items[self.sequence_key] = str(sequence)
        return items

    def judge(self, degree: int | None, batch: int | None, sequence: int | None) -> Candidate:
        """The judge's assessment of the candidate as written."""
        items = self.written(degree, batch, sequence)
        assessment = assess(configuration(items), self.target, backend_accelerator=self.backend_accelerator)
        return Candidate(tuple(sorted(items.items())), assessment)


class _Search(CandidateWriter):
    """Searches the ``auto`` dimensions over the judge for render."""

    def __init__(self, items: dict[str, str], request: AutoRequest, target: Target, backend_accelerator: str):
        super().__init__(items, target, backend_accelerator)
        self.request = request

    def fits(self, candidate: Candidate, lenient: bool) -> bool:
        assessment = candidate.assessment
        if assessment.memory is None or not assessment.shape.complete:
            return False
        if any(
            problem.blocking
            for problem in assessment.problems
            if not problem.check.startswith(("memory", "vllm"))
        ):
            return False
        return memory_acceptable(assessment.memory, candidate.shape.sequence_length, lenient)

    def degrees(self) -> list[int]:
        if not self.request.tensor_parallel_degree:
            return [None]  # type: ignore[list-item]
        return valid_degrees(self.target, self.backend_accelerator)

    def sequences(self) -> list[int | None]:
        if not self.request.sequence_length:
            return [None]
        return list(auto_sequence_lengths(self.target))

    def gpu_batch(self, candidate: Candidate) -> int:
        return largest_gpu_batch(candidate.memory)

    def candidates_at(self, degree: int | None, sequence: int | None, lenient: bool) -> Iterable[Candidate]:
        if not self.request.batch_size:
            candidate = self.judge(degree, None, sequence)
            if self.fits(candidate, lenient):
                yield candidate
            return
        if self.target.accelerator == "gpu":
            probe = self.judge(degree, 1, sequence)
            if not self.fits(probe, lenient):
                return
            batch = self.gpu_batch(probe)
            while batch >= 1:
                candidate = self.judge(degree, batch, sequence)
                if self.fits(candidate, lenient):
                    yield candidate
                    return
                batch //= 2
            return
        for batch in NEURON_BATCHES:
            candidate = self.judge(degree, batch, sequence)
            if not self.fits(candidate, lenient):
                break  # memory grows with the batch
            yield candidate

    def search(self, lenient: bool) -> list[Candidate]:
        found: list[Candidate] = []
        for sequence in self.sequences():
            for degree in self.degrees():
                found.extend(self.candidates_at(degree, sequence, lenient))
            if found:
                break  # the longest sequence length that fits wins
        return found


def choose(candidates: list[Candidate], objective: str) -> Candidate:
    """Rank: throughput = most sequences per instance; latency = largest TP, then batch."""
    if objective == "latency":
        return max(
            candidates,
            key=lambda c: (c.shape.tensor_parallel_degree, c.shape.batch_size, c.memory.headroom_fraction),
        )
    return max(
        candidates, key=lambda c: (c.concurrency, -c.shape.tensor_parallel_degree, c.memory.headroom_fraction)
    )


def plan_auto(
    items: dict[str, str],
    request: AutoRequest,
    target: Target,
    *,
    backend_accelerator: str,
    objective: str = "throughput",
) -> Candidate:
    """The best configuration for the ``auto`` dimensions; raises :class:`PlanningError`."""
    if target.arch is None or target.instance is None:
        raise PlanningError("auto needs the instance and the model's architecture")
    search = _Search(items, request, target, backend_accelerator)
    if request.sequence_length and search.sequence_key is None:
        raise PlanningError(
            f"`auto` sequence length is not supported for {target.backend}; set it explicitly"
        )
    candidates = search.search(lenient=False)
    if not candidates:
        # only rank 0's whole embeddings (measured once) stand in the way: accept, and say so
        candidates = search.search(lenient=True)
    if not candidates:
        raise PlanningError(_nothing_fits(search))
    return choose(candidates, objective)


def _nothing_fits(search: _Search) -> str:
    target = search.target
    assert target.arch is not None and target.instance is not None
    reasons: set[str] = set()
    for degree in search.degrees():
        probe = search.judge(
            degree, 1, None if not search.request.sequence_length else search.sequences()[-1]
        )
        reasons.update(problem.check for problem in probe.assessment.problems if problem.blocking)
    because = f" ({', '.join(sorted(reasons))})" if reasons else ""
    return (
        f"no tensor-parallel degree, batch and sequence length of {target.arch.model_id} fits "
        f"{target.instance.instance_type} with {target.backend}{because}; choose a larger instance "
        "(see `lmi-config explain`)"
    )


def describe_choice(candidate: Candidate, objective: str) -> str:
    """One line for the rendered file's comment."""
    shape = candidate.shape
    instance = candidate.assessment.target.instance
    goal = (
        "largest TP that fits (objective latency)"
        if objective == "latency"
        else "most concurrent sequences per instance"
    )
    where = f" on {instance.instance_type}" if instance is not None else ""
    return (
        f"{goal}: {candidate.copies} cop{'ies' if candidate.copies != 1 else 'y'} x batch {shape.batch_size} at TP "
        f"{shape.tensor_parallel_degree}, {shape.sequence_length} tokens; {candidate.memory.peak_bytes / 2**30:.1f} of "
        f"{candidate.memory.budget_bytes / 2**30:.1f} GiB per {candidate.memory.unit}{where}"
    )


def alternatives(
    assessment: Assessment, backend_accelerator: str, limit: int = 3
) -> list[tuple[Shape, MemoryBreakdown]]:
    """Nearby shapes that fit: another TP degree first, then a smaller batch, then shorter sequences."""
    target = assessment.target
    shape = assessment.shape.sizing_shape()
    if shape is None or target.arch is None or target.instance is None or assessment.memory is None:
        return []
    backend = sizing_backend(target)
    degrees = [d for d in valid_degrees(target, backend_accelerator) if d != shape.tensor_parallel_degree]
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
            shape._replace(tensor_parallel_degree=d)
            for d in sorted(degrees, key=lambda d: (d < shape.tensor_parallel_degree, d))
        ],
        [shape._replace(batch_size=b) for b in batches],
        [shape._replace(sequence_length=s) for s in sequences],
    ]
    found: list[tuple[Shape, MemoryBreakdown]] = []
    for candidates in searches:
        for candidate in candidates:
            memory = estimate_memory(target.arch, target.instance, backend, candidate)
            if memory_acceptable(memory, candidate.sequence_length):
                found.append((candidate, memory))
                break
    return found[:limit]
