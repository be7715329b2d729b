"""The vocabulary of ``plan``: the request, a judged candidate, the result, an (instance, TP)
group of the grid, and the ranking keys."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from lmi_config.arguments import (
    choice,
    count,
    fields_of,
    flag,
    instance_of,
    optional_choice,
    optional_count,
    optional_text,
    pairs,
    text,
    texts,
)
from lmi_config.knowledge import Release
from lmi_config.knowledge.instances import Instance
from lmi_config.knowledge.planning import PRICE_KINDS, Price
from lmi_config.modelarch import ModelArch
from lmi_config.plan.performance import Figures, predicted
from lmi_config.plan.workload import PlanWorkload
from lmi_config.plan.writer import Candidate, CandidateWriter
from lmi_config.shape import Assessment

OBJECTIVES = ("throughput", "latency", "cost")
DTYPES = ("bf16", "fp16", "fp32")  # the weights dtypes plan writes (--dtype)
# warnings of a feasible candidate that rank it after every clean one: memory or a KV cache within
# the estimate's margin, host RAM too small to compile on the instance (pre-compiled artifacts load)
EDGE_CHECKS = ("memory-headroom-low", "vllm-kv-capacity", "host-memory-insufficient")


@dataclass(frozen=True)
class PlanRequest:
    """What to plan: the model, where, with what, for which workload, and how to rank."""

    model: str
    instances: tuple[str, ...] = ()
    families: tuple[str, ...] = ()
    backend: str | None = None
    lmi_version: str | None = None
    dtype: str | None = None
    options: tuple[tuple[str, str], ...] = ()  # canonical key, value (``--set``)
    min_sequence_length: int | None = None
    min_batch_size: int | None = None
    # None: cost ($/M output tokens) across instance types, throughput within one (plan_model decides)
    objective: str | None = None
    top: int = 10  # 0: every feasible candidate
    include_infeasible: bool = False  # --all: also list what the judge or the limits refuse
    complete: bool = False  # every feasible candidate (for a cache config)
    # for an optimum-neuron export (a cache config): its exporter, not the LMI image, must know the model
    optimum_neuron_export: bool = False
    hub: bool = False
    price_kind: str = "sagemaker"
    workload: PlanWorkload = field(default_factory=PlanWorkload)

    def __post_init__(self) -> None:
        # the API's callers build requests themselves: what the CLI's flags would refuse is refused
        # here, naming the field, rather than met deep in the planner as a KeyError or a NaN
        fields_of(
            "PlanRequest",
            self,
            {
                "model": lambda name, value: text(name, value, empty=False),
                "instances": lambda name, value: texts(name, value, empty=False),
                "families": lambda name, value: texts(name, value, empty=False),
                "backend": lambda name, value: optional_text(name, value, empty=False),
                "lmi_version": lambda name, value: optional_text(name, value, empty=False),
                "dtype": lambda name, value: optional_choice(name, value, DTYPES),
                "options": pairs,
                "min_sequence_length": optional_count,
                "min_batch_size": optional_count,
                "objective": lambda name, value: optional_choice(name, value, OBJECTIVES),
                "top": lambda name, value: count(name, value, minimum=0),
                "include_infeasible": flag,
                "complete": flag,
                "optimum_neuron_export": flag,
                "hub": flag,
                "price_kind": lambda name, value: choice(name, value, PRICE_KINDS),
                "workload": lambda name, value: instance_of(name, value, PlanWorkload, "a PlanWorkload"),
            },
        )


@dataclass
class PlannedCandidate:
    """One judged configuration, its predicted performance and where it ranks."""

    instance: str
    backend: str
    lmi_version: str
    tensor_parallel_degree: int
    batch_size: int
    sequence_length: int
    copies: int
    feasible: bool  # the judge's verdict and the workload's limits
    unit: str
    peak_bytes: int
    budget_bytes: int
    headroom_fraction: float
    blocked_by: tuple[str, ...]
    problems: tuple[str, ...]
    warnings: tuple[str, ...]  # a feasible candidate at the edge of the estimate (memory-headroom-low …)
    items: tuple[tuple[str, str], ...]
    usd_per_hour: float | None = None
    price_kind: str | None = None  # sagemaker | ec2: which list the price comes from
    figures: Figures | None = None
    not_predicted: str = ""  # why the performance model has no figures
    batch_reason: str = ""  # how the batch was chosen from the workload (vLLM, TensorRT-LLM)
    # what of the default latency target the figures break: such a row ranks after every row within it
    target_misses: tuple[str, ...] = ()
    # what of the default latency target the figures meet by less than the model's error (ranked as
    # within; a measurement decides)
    target_edges: tuple[str, ...] = ()
    price_stand_in: bool = False  # priced from another list than the one asked for (or not at all)
    tie_with: int | None = None  # the rank it cannot be told apart from within the model's error
    reason: str = ""
    rank: int | None = None
    assessment: Assessment | None = field(default=None, repr=False)

    @property
    def concurrency(self) -> int:
        """Sequence slots per instance: copies x batch."""
        return self.copies * self.batch_size


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
    workload: PlanWorkload = field(default_factory=PlanWorkload)
    # with ``complete`` (a cache config): the longest feasible length per (instance, TP, batch)
    exportable: list[PlannedCandidate] = field(default_factory=list)


@dataclass
class Group:
    """The candidates of one instance at one TP degree, all at one sequence length."""

    instance: Instance
    degree: int
    writer: CandidateWriter
    release: Release
    batches: list[int] | None  # None: the batch the workload asks for (paged KV cache)
    sequence: int | None
    bound: tuple[float, ...] = ()
    price: Price | None = None
    checked: bool = True  # False: the judge has not yet said whether this TP degree may be chosen
    allowed: bool = True  # the judge lets a planner choose this TP degree
    minimum_batch: int = 1  # --min-batch-size
    price_kind: str = "sagemaker"  # the list prices were asked from

    @property
    def listed(self) -> bool:
        """Whether the group's price is from the list asked for (a stand-in's is not ranked beside it)."""
        return self.price is not None and self.price.kind == self.price_kind


def neuron_batch_cap() -> int:
    """The largest batch planned where the batch is compiled in: the largest the optimal-export workflow
    tries (its seed grid, ``data/search.json``), so that plan and search walk the same batches."""
    from lmi_config.knowledge.planning import search_constants

    return max(search_constants().grid.batch_sizes)


def batch_grid(cap: int, minimum: int | None) -> list[int]:
    """Powers of two up to ``cap`` and the minimum asked for."""
    values = {2**power for power in range(cap.bit_length()) if 2**power <= cap}
    if minimum is not None:
        values.add(minimum)
    return sorted(value for value in values if minimum is None or value >= minimum)


def unsized_refusal(arch: ModelArch, judged: Sequence[PlannedCandidate] = ()) -> str | None:
    """Why nothing was ranked when the model's memory is not estimated (a layout the formulas do not
    cover, or a checkpoint stored quantized that no judged backend's memory model sizes): every
    candidate lacks a memory figure, which is not the same as not fitting."""
    reasons = [candidate.assessment.memory_not_estimated for candidate in judged if candidate.assessment]
    why = arch.memory_not_estimated or (reasons[0] if reasons and all(reasons) else None)
    if not why:
        return None
    return (
        f"memory is not estimated for {arch.model_id} ({why}), so no configuration can "
        "be ranked; lint and explain still judge a configuration you write (TP against heads, dtype, "
        "quantization, the image's engine)"
    )


def model_refusal(judged: list[PlannedCandidate]) -> str | None:
    """What refuses the model or the image itself, when every judged candidate is refused for it (what
    loads the model does not know its type; the image's Neuron SDK predates the instance): no TP or
    batch helps, so a search that found nothing says that."""
    from lmi_config.shape.engines import MODEL_CHECKS, REMOTE_CODE_CHECK
    from lmi_config.shape.neuron_sdk import CHECK as SDK_CHECK

    refusing = {*MODEL_CHECKS, SDK_CHECK}
    if not judged or not all(set(candidate.blocked_by) & refusing for candidate in judged):
        return None
    problems = [
        problem
        for candidate in judged
        if candidate.assessment is not None
        for problem in candidate.assessment.problems
        if problem.check in refusing
    ]
    refusal = "; ".join(sorted({problem.message for problem in problems}))
    if any(problem.check == REMOTE_CODE_CHECK for problem in problems):
        # the planner does not trust a repository's code on the user's behalf: it says how to
        refusal += (
            " (plan: --set option.trust_remote_code=true; a render spec: options: {trust_remote_code: true})"
        )
    return refusal


def blocked_by(assessment: Assessment) -> tuple[str, ...]:
    """The rule slugs that make a candidate infeasible (empty when it is feasible).

    Feasible is what the judge does not refuse: no error, no warning the planner avoids (an
    untested TP degree), and memory that fits. A configuration at the edge of the estimate
    (``memory-headroom-low``, a vLLM KV cache within the margin) or whose compile may not fit the
    host RAM is feasible with a warning (:func:`edge_warnings`) and ranks after every clean one.
    """
    memory = assessment.memory
    blocking = [problem.check for problem in assessment.problems if problem.blocking]
    if memory is not None and not memory.fits:
        blocking.append("memory-exceeds-budget")
    if not blocking and (memory is None or not assessment.shape.complete):
        blocking.append("memory-exceeds-budget")
    return tuple(dict.fromkeys(blocking))


def edge_warnings(assessment: Assessment) -> tuple[str, ...]:
    """The warnings of a feasible candidate that rank it after the clean ones (``EDGE_CHECKS``)."""
    return tuple(
        dict.fromkeys(
            problem.check
            for problem in assessment.problems
            if problem.check in EDGE_CHECKS and not problem.blocking
        )
    )


def planned(
    group: Group, candidate: Candidate, sequence: int | None, workload: PlanWorkload, batch_reason: str = ""
) -> PlannedCandidate:
    """The judge's assessment of one candidate of a group, with its predicted figures."""
    assessment = candidate.assessment
    shape = assessment.shape.sizing_shape()
    memory = assessment.memory
    slugs = blocked_by(assessment)
    release = group.release
    price = group.price
    row = PlannedCandidate(
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
        usd_per_hour=price.usd_per_hour if price else None,
        price_kind=price.kind if price else None,
        batch_reason=batch_reason,
        price_stand_in=not group.listed,
        assessment=assessment,
    )
    if slugs:
        return row
    figures = predicted(assessment, row.copies, workload, row.usd_per_hour)
    if isinstance(figures, str):
        row.not_predicted = figures
        return row
    row.figures = figures
    broken = workload.constraint_violations(
        figures.ttft_ms, figures.tpot_ms, figures.capacity_requests_per_second, figures.overloaded
    )
    if broken:
        row.feasible = False
        row.blocked_by = ("workload-limits",)
        row.problems = broken
    else:
        row.target_misses = workload.target_misses(figures.ttft_p99_ms, figures.tpot_ms)
        ttft, tpot = figures.interval("ttft"), figures.interval("tpot")
        row.target_edges = workload.target_edges(
            figures.ttft_p99_ms,
            figures.tpot_ms,
            ttft.high if ttft is not None else None,
            tpot.high if tpot is not None else None,
        )
    return row


WORST = float("-inf")


def rank_key(candidate: PlannedCandidate, objective: str) -> tuple[float, ...]:
    """Larger is better. For cost, rows priced from the list asked for before any other (a stand-in
    price is never ranked against it); then clean before the edge of the estimate, rows within the
    latency target before those over it, predicted before not predicted, then the objective's
    metric — throughput: output tokens/s per instance; latency: TPOT, then TTFT; cost: dollars per
    million output tokens — and the smaller TP on a tie."""
    listed = 0.0 if objective == "cost" and candidate.price_stand_in else 1.0
    clean = 0.0 if candidate.warnings else 1.0
    figures = candidate.figures
    if figures is None:
        # no prediction (a configuration the performance model refuses): ranked after every predicted
        # row, among themselves by what each objective favours -- more sequences at once for
        # throughput and cost, fewer and a larger TP for latency -- never by the order they were tried
        if objective == "latency":
            return (listed, clean, 0.0, 0.0, -candidate.batch_size, candidate.tensor_parallel_degree, 0.0)
        return (listed, clean, 0.0, 0.0, candidate.concurrency, -candidate.tensor_parallel_degree, 0.0)
    within = 0.0 if candidate.target_misses else 1.0
    return (listed, clean, within, 1.0, *metric_key(figures, objective), -candidate.tensor_parallel_degree)


def rank_class(candidate: PlannedCandidate, objective: str) -> tuple[float, ...]:
    """What a row's rank is decided by before its figures (price list, target, edge, prediction):
    rows of one class are compared by their figures, and only they can tie."""
    return rank_key(candidate, objective)[:4]


def metric_key(figures: Figures, objective: str) -> tuple[float, float]:
    """The objective's metric, larger is better, and the figure that breaks its ties."""
    if objective == "latency":
        return (-figures.tpot_ms, -figures.ttft_ms)
    if objective == "cost":
        cost = figures.usd_per_million_tokens
        return (-cost if cost is not None else WORST, figures.output_tokens_per_second)
    return (throughput_metric(figures), -figures.tpot_ms)


def throughput_metric(figures: Figures) -> float:
    """What the throughput objective ranks: output tokens/s per instance; under a request rate every
    ranked row delivers the rate, so the requests/s it could complete (its headroom) instead."""
    capacity = figures.capacity_requests_per_second
    return capacity if capacity is not None else figures.output_tokens_per_second
