"""The vocabulary of ``plan``: the request, a judged candidate, the result, an (instance, TP)
group of the grid, and the ranking keys."""

from __future__ import annotations

from dataclasses import dataclass, field

from lmi_config.knowledge import Release
from lmi_config.knowledge.instances import Instance
from lmi_config.planner import Candidate, CandidateWriter
from lmi_config.shape import Assessment

OBJECTIVES = ("throughput", "latency", "cost")
NEURON_BATCH_CAP = 128
MEMORY_CHECKS = ("memory-exceeds-budget", "memory-headroom-low", "vllm-kv-capacity")


@dataclass(frozen=True)
class PlanRequest:
    """What to plan: the model, where, with what, and how to rank."""

    model: str
    instances: tuple[str, ...] = ()
    families: tuple[str, ...] = ()
    backend: str | None = None
    lmi_version: str | None = None
    dtype: str | None = None
    options: tuple[tuple[str, str], ...] = ()  # canonical key, value (``--set``)
    min_sequence_length: int | None = None
    min_batch_size: int | None = None
    objective: str = "throughput"
    top: int = 10  # 0: every feasible candidate
    include_infeasible: bool = False  # --all: judge the whole grid
    complete: bool = False  # every feasible staircase point (for a cache config)
    hub: bool = False
    price_kind: str = "sagemaker"


@dataclass
class PlannedCandidate:
    """One judged configuration and where it ranks."""

    instance: str
    backend: str
    lmi_version: str
    tensor_parallel_degree: int
    batch_size: int
    sequence_length: int
    copies: int
    feasible: bool
    unit: str
    peak_bytes: int
    budget_bytes: int
    headroom_fraction: float
    blocked_by: tuple[str, ...]
    problems: tuple[str, ...]
    warnings: tuple[str, ...]  # a feasible candidate at the edge of the estimate (memory-headroom-low …)
    items: tuple[tuple[str, str], ...]
    usd_per_hour: float | None = None
    reason: str = ""
    rank: int | None = None
    assessment: Assessment | None = field(default=None, repr=False)

    @property
    def concurrency(self) -> int:
        """Sequences served at once per instance: copies x batch."""
        return self.copies * self.batch_size

    @property
    def usd_per_sequence_hour(self) -> float | None:
        return self.usd_per_hour / self.concurrency if self.usd_per_hour is not None else None


@dataclass
class PlanResult:
    """The ranked candidates (top N first), every feasible one found, and what was assumed."""

    model: str
    objective: str
    candidates: list[PlannedCandidate]
    feasible: list[PlannedCandidate]
    notes: list[str]
    evaluated: int
    task: str  # text-generation | feature-extraction (optimum-neuron's)
    auto_cast_type: str  # bf16 | fp16: --dtype, else the model's torch_dtype (the legacy cache format)


@dataclass
class Group:
    """The candidates of one instance at one TP degree."""

    instance: Instance
    degree: int
    writer: CandidateWriter
    release: Release
    batches: list[int]
    sequences: list[int | None]
    bound: tuple[float, ...] = ()
    price: float | None = None
    checked: bool = True  # False: the judge has not yet said whether this TP degree may be chosen


def sequence_grid(maximum: int | None, minimum: int | None) -> list[int]:
    """Powers of two from 1024 up to the model's maximum, the maximum itself, and the minimum asked
    for (even beyond the maximum: with RoPE scaling people run longer, and the judge sizes it)."""
    top = max(maximum or 2048, minimum or 0)
    values = {top}
    length = 1024
    while length < top:
        values.add(length)
        length *= 2
    if minimum is not None:
        values.add(minimum)
    return sorted(value for value in values if minimum is None or value >= minimum)


def batch_grid(cap: int, minimum: int | None) -> list[int]:
    """Powers of two up to ``cap`` and the minimum asked for."""
    values = {2**power for power in range(cap.bit_length()) if 2**power <= cap}
    if minimum is not None:
        values.add(minimum)
    return sorted(value for value in values if minimum is None or value >= minimum)


def blocked_by(assessment: Assessment) -> tuple[str, ...]:
    """The rule slugs that make a candidate infeasible (empty when it is feasible).

    Feasible is what the judge does not refuse: no error, no warning the planner avoids (an
    untested TP degree), and memory that fits. A configuration at the edge of the estimate
    (``memory-headroom-low``, a vLLM KV cache within the margin) is feasible with a warning
    (:func:`edge_warnings`) and ranks after the clean ones: known-good configurations have run
    there.
    """
    memory = assessment.memory
    blocking = [problem.check for problem in assessment.problems if problem.blocking]
    if memory is not None and not memory.fits:
        blocking.append("memory-exceeds-budget")
    if not blocking and (memory is None or not assessment.shape.complete):
        blocking.append("memory-exceeds-budget")
    return tuple(dict.fromkeys(blocking))


def edge_warnings(assessment: Assessment) -> tuple[str, ...]:
    """The memory warnings of a feasible candidate: it fits, but within the estimate's error."""
    return tuple(
        dict.fromkeys(
            problem.check
            for problem in assessment.problems
            if problem.check in MEMORY_CHECKS and not problem.blocking
        )
    )


def planned(group: Group, candidate: Candidate, sequence: int | None) -> PlannedCandidate:
    """The judge's assessment of one candidate of a group, as plan reports it."""
    assessment = candidate.assessment
    shape = assessment.shape.sizing_shape()
    memory = assessment.memory
    slugs = blocked_by(assessment)
    release = group.release
    return PlannedCandidate(
        instance=group.instance.instance_type,
        backend=assessment.target.backend,
        lmi_version=f"lmi{release.lmi}" if release.lmi else release.djl,
        tensor_parallel_degree=group.degree,
        batch_size=shape.batch_size if shape else 0,
        sequence_length=shape.sequence_length if shape else sequence or 0,
        copies=candidate.copies,
        feasible=not slugs,
        unit=memory.unit if memory else group.instance.core_word,
        peak_bytes=memory.peak_bytes if memory else 0,
        budget_bytes=memory.budget_bytes if memory else 0,
        headroom_fraction=memory.headroom_fraction if memory else 0.0,
        blocked_by=slugs,
        problems=tuple(problem.message for problem in assessment.problems if problem.check in slugs),
        warnings=() if slugs else edge_warnings(assessment),
        items=candidate.items,
        usd_per_hour=group.price,
        assessment=assessment,
    )


def memory_only(candidate: PlannedCandidate) -> bool:
    """Whether only memory stands in the way (a shorter length or a smaller batch may fit)."""
    return all(slug in MEMORY_CHECKS for slug in candidate.blocked_by)


def rank_key(candidate: PlannedCandidate, objective: str) -> tuple[float, ...]:
    """Larger is better: clean before the edge of the estimate, then throughput = sequences at once;
    latency = largest TP; cost = cheapest per sequence."""
    clean = 0.0 if candidate.warnings else 1.0
    return (clean, *_objective_key(candidate, objective))


def _objective_key(candidate: PlannedCandidate, objective: str) -> tuple[float, ...]:
    if objective == "latency":
        return (
            candidate.tensor_parallel_degree,
            candidate.sequence_length,
            candidate.batch_size,
            candidate.headroom_fraction,
        )
    if objective == "cost":
        cost = candidate.usd_per_sequence_hour
        return (
            -(cost if cost is not None else float("inf")),
            candidate.sequence_length,
            candidate.headroom_fraction,
        )
    return (
        candidate.concurrency,
        candidate.sequence_length,
        -candidate.tensor_parallel_degree,
        candidate.headroom_fraction,
    )


def bound(group: Group, objective: str) -> tuple[float, ...]:
    """The best key any candidate of the group could have (compared with a key's first items)."""
    return (1.0, *_objective_bound(group, objective))


def _objective_bound(group: Group, objective: str) -> tuple[float, ...]:
    copies = max(group.instance.num_cores // group.degree, 1)
    best_batch = group.batches[-1]
    longest = group.sequences[-1] or 0
    if objective == "latency":
        return (group.degree, longest, best_batch, 1.0)
    if objective == "cost":
        assert group.price is not None
        return (-(group.price / (copies * best_batch)), longest, 1.0)
    return (copies * best_batch, longest, 0.0, 1.0)
