"""The one planner's entry points for ``render auto`` and for the alternatives findings name.

``auto`` is resolved by the same search and ranking as ``plan`` (:mod:`lmi_config.plan.ranking`):
candidates written as the configuration will be written (:class:`CandidateWriter`), judged by the
one judge, every ranked one serving the workload's longest request, ordered by the objective's
predicted metric (output tokens/s per instance, TPOT, or dollars per million output tokens).
"""

from __future__ import annotations

from dataclasses import dataclass

from lmi_config.errors import PlanningError as PlanningError
from lmi_config.knowledge.memory import container_default
from lmi_config.knowledge.planning import on_demand_price
from lmi_config.plan.candidates import (
    Group,
    PlannedCandidate,
    batch_grid,
    model_refusal,
    neuron_batch_cap,
    planned,
    unsized_refusal,
)
from lmi_config.plan.performance import PAGED_BACKENDS, describe_figures
from lmi_config.plan.ranking import rank_groups
from lmi_config.plan.workload import PlanWorkload, for_objective
from lmi_config.plan.writer import TP_KEY as TP_KEY
from lmi_config.plan.writer import Candidate as Candidate
from lmi_config.plan.writer import CandidateWriter as CandidateWriter
from lmi_config.plan.writer import configuration as configuration
from lmi_config.plan.writer import degree_allowed as degree_allowed
from lmi_config.plan.writer import valid_degrees
from lmi_config.shape import Assessment, Target, memory_acceptable, sizing_backend
from lmi_config.shape.dimensions import UNKNOWN_CONTEXT_ASSUMED
from lmi_config.sizing import MemoryBreakdown, Shape, estimate_memory

DIMENSIONS = ("tensor_parallel_degree", "batch_size", "sequence_length")


def auto_sequence_lengths(target: Target, required: int) -> list[int]:
    """The lengths ``auto`` tries, preferred first, each serving ``required`` tokens: Neuron the
    container's min(max_position_embeddings, 4096) (or ``required`` when longer); GPU the longest
    that fits first."""
    assert target.arch is not None
    maximum = target.arch.max_position_embeddings or UNKNOWN_CONTEXT_ASSUMED
    if target.accelerator != "gpu":
        return [max(min(maximum, container_default("smart_defaults_max_n_positions")), required)]
    lengths = [maximum] + [
        length for length in (65536, 32768, 16384, 8192, 4096, 2048, 1024) if length < maximum
    ]
    return [length for length in lengths if length >= required] or [required]


@dataclass(frozen=True)
class AutoRequest:
    """Which dimensions are ``auto`` and what stays fixed."""

    tensor_parallel_degree: bool
    batch_size: bool
    sequence_length: bool


def plan_auto(
    items: dict[str, str],
    request: AutoRequest,
    target: Target,
    *,
    backend_accelerator: str,
    objective: str = "throughput",
    workload: PlanWorkload | None = None,
) -> PlannedCandidate:
    """The best configuration for the ``auto`` dimensions (the top of ``plan``'s ranking on this
    instance); raises :class:`PlanningError`."""
    if target.arch is None or target.instance is None:
        raise PlanningError("auto needs the instance and the model's architecture")
    workload = for_objective(workload or PlanWorkload(), objective)
    writer = CandidateWriter(items, target, backend_accelerator)
    if request.sequence_length and writer.sequence_key is None:
        raise PlanningError(
            f"`auto` sequence length is not supported for {target.backend}; set it explicitly"
        )
    judged: list[PlannedCandidate] = []
    lengths = _sequences(writer, request, workload)
    edge: PlannedCandidate | None = None  # the best at a length the estimate leaves at its edge
    while lengths:
        sequence = lengths.pop(0)
        groups = _groups(writer, request, sequence)

        def judge(group: Group, batch: int, length: int | None, reason: str) -> PlannedCandidate:
            candidate = group.writer.judge(group.degree, batch, length)
            return planned(group, candidate, length, workload, reason)

        ranked, found = rank_groups(groups, judge, objective, workload, top=1, complete=False)
        judged.extend(found)
        if not ranked:
            continue
        best = ranked[0]
        if not (request.sequence_length and best.warnings):
            return best
        # a length whose KV cache is within the estimate's error margin draws the warning lint gives it:
        # the longest length the judge says holds at that shape comes next, then the shorter ones
        edge = edge or best
        longest = _longest_clean(best, workload.longest_request)
        if longest is not None and sequence is not None and longest < sequence and longest not in lengths:
            lengths.insert(0, longest)
    if edge is not None:
        return edge
    raise PlanningError(_nothing_fits(target, judged, workload, writer, request))


def _longest_clean(candidate: PlannedCandidate, required: int) -> int | None:
    """The longest sequence length the judge says this candidate's shape holds (LMI312's figure)."""
    if candidate.assessment is None:
        return None
    from lmi_config.shape.remedies import longest_sequence_length

    longest = longest_sequence_length(candidate.assessment)
    return longest if longest is not None and longest >= required else None


def _sequences(writer: CandidateWriter, request: AutoRequest, workload: PlanWorkload) -> list[int | None]:
    required = workload.longest_request
    if request.sequence_length:
        return list(auto_sequence_lengths(writer.target, required))
    fixed = writer.base.sequence_length
    if fixed is not None and fixed.value < required:
        raise PlanningError(
            f"the sequence length {fixed.value} is shorter than the workload's longest request ({required} tokens); "
            "raise it, set it to auto, or give a smaller `workload:` in the spec"
        )
    return [None]


def _groups(writer: CandidateWriter, request: AutoRequest, sequence: int | None) -> list[Group]:
    target = writer.target
    instance = target.instance
    assert instance is not None
    base = writer.base
    if request.tensor_parallel_degree:
        degrees = valid_degrees(target, writer.backend_accelerator)
    else:
        degrees = [base.tensor_parallel_degree.value if base.tensor_parallel_degree else 1]
    paged = instance.accelerator == "gpu" and target.backend in PAGED_BACKENDS
    batches: list[int] | None
    if not request.batch_size:
        batches = [base.batch_size.value if base.batch_size else 1]
    else:
        batches = None if paged else batch_grid(neuron_batch_cap(), None)  # plan's grid
    price = on_demand_price(instance.instance_type)
    release = target.release
    return [Group(instance, degree, writer, release, batches, sequence, price=price) for degree in degrees]


def _nothing_fits(
    target: Target,
    judged: list[PlannedCandidate],
    workload: PlanWorkload,
    writer: CandidateWriter,
    request: AutoRequest,
) -> str:
    assert target.arch is not None and target.instance is not None
    refusal = model_refusal(judged) or unsized_refusal(target.arch, judged)
    if refusal:
        return f"{target.arch.model_id} cannot be planned on {target.planned_for}: {refusal}"
    reasons = sorted({slug for candidate in judged for slug in candidate.blocked_by})
    because = f" ({', '.join(reasons)})" if reasons else ""
    advice = "choose a larger instance (see `lmi-config explain`)"
    key = writer.sequence_key
    if not request.sequence_length and key is not None and "vllm-kv-capacity" in reasons:
        # the length is not auto: what the file writes, else the model's own maximum
        fixed = writer.base.sequence_length
        length = fixed.value if fixed is not None else judged[0].sequence_length if judged else None
        written = (
            "as written"
            if fixed is not None and fixed.key
            else "none is written: " + (fixed.source if fixed is not None else "the model's maximum")
        )
        name = key.removeprefix("option.")
        advice = (
            f"the KV cache holds no sequence of {length} tokens ({written}): set {name} to auto "
            f"(--set {name}=auto) or shorter, or " + advice
        )
    return (
        f"no tensor-parallel degree, batch and sequence length of {target.arch.model_id} serving "
        f"{workload.longest_request}-token requests fits {target.instance.instance_type} with {target.backend}"
        f"{because}; {advice}"
    )


OBJECTIVE_WORDS = {
    "throughput": "most output tokens/s per instance",
    "latency": "lowest time per output token",
    "cost": "fewest dollars per million output tokens",
}


def describe_choice(candidate: PlannedCandidate, objective: str, workload: PlanWorkload | None = None) -> str:
    """One line for the rendered file's comment: the objective, the predicted figures, the shape."""
    workload = workload or PlanWorkload()
    instance = candidate.instance
    memory = (
        f"{candidate.peak_bytes / 2**30:.1f} of {candidate.budget_bytes / 2**30:.1f} GiB per {candidate.unit}"
    )
    shape = (
        f"{candidate.copies} cop{'ies' if candidate.copies != 1 else 'y'} x batch {candidate.batch_size} at TP "
        f"{candidate.tensor_parallel_degree}, {candidate.sequence_length} tokens; {memory} on {instance}"
    )
    figures = (
        f"predicted {describe_figures(candidate.figures)}"
        if candidate.figures is not None
        else f"no performance prediction ({candidate.not_predicted})"
    )
    if candidate.figures is not None and candidate.price_kind == "ec2":
        figures += " (EC2 price: no SageMaker price published for it)"
    batch = f"; batch: {candidate.batch_reason}" if candidate.batch_reason else ""
    workload = for_objective(workload, objective)
    rate = f" at {workload.request_rate:g} requests/s" if workload.request_rate is not None else ""
    if workload.concurrency is not None:
        rate = f", {workload.concurrency} in flight at the instance"
    return (
        f"objective {objective} ({OBJECTIVE_WORDS.get(objective, objective)}) for "
        f"{workload.input_tokens} input + {workload.output_tokens} output tokens{rate}: {figures}; {shape}{batch}"
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
    # the longest length that holds first (the one every finding about the length names), then halvings
    from lmi_config.shape.remedies import longest_sequence_length

    longest = longest_sequence_length(assessment)
    sequences = [longest] if longest is not None and 0 < longest < shape.sequence_length else []
    sequence = shape.sequence_length
    while sequence > 256:
        sequence //= 2
        if not sequences or sequence < sequences[0]:
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
