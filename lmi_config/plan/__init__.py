"""``plan``: the configurations of a model (instance, TP, batch) that serve a workload, ranked by
predicted performance.

Every candidate is a configuration as it would be written (the candidate writer of
:mod:`lmi_config.plan.writer`) judged by the one judge (:func:`lmi_config.shape.assess`); a
candidate the judge refuses, or whose predicted TTFT / TPOT breaks the workload's limits, is never
ranked. Every candidate serves the workload's longest request (one sequence length per plan), and
ranks by the objective's metric from the performance model (:mod:`lmi_config.perf`).

Groups (instance, TP) are expanded best bound first (the performance model's figure at the
group's best batch) and the walk stops once no remaining group can reach the top N; ``--all``
ranks exactly the same way and adds what the judge refuses, so the two never disagree.
"""

from __future__ import annotations

from dataclasses import replace

from lmi_config.errors import InputError, PlanningError
from lmi_config.plan.candidates import (
    OBJECTIVES,
    Group,
    PlannedCandidate,
    PlanRequest,
    PlanResult,
    blocked_by,
    model_refusal,
    planned,
    rank_key,
    unsized_refusal,
)
from lmi_config.plan.ranking import allowed, default_objective, describe, rank_groups
from lmi_config.plan.targets import plan_groups, price_notes
from lmi_config.plan.ties import tie_note
from lmi_config.plan.walks import Judge, group_candidates
from lmi_config.plan.workload import PlanWorkload, for_objective

__all__ = [
    "OBJECTIVES",
    "PlanRequest",
    "PlanResult",
    "PlanWorkload",
    "PlannedCandidate",
    "blocked_by",
    "plan_model",
    "rank_key",
    "rank_groups",
]


def plan_model(request: PlanRequest) -> PlanResult:
    """Judge and rank the candidates; raises :class:`InputError` for a bad request and
    :class:`PlanningError` when nothing fits anywhere."""
    from lmi_config.modelarch import ModelResolutionError, resolve_model

    if request.objective is not None and request.objective not in OBJECTIVES:
        raise InputError(f"unknown objective {request.objective!r}; choose {', '.join(OBJECTIVES)}")
    try:
        arch = resolve_model(request.model, allow_hub=request.hub)
    except ModelResolutionError as error:
        raise InputError(str(error)) from None
    groups, notes = plan_groups(request, arch)
    objective, why_objective = default_objective(request.objective, groups)
    if why_objective:
        notes.insert(0, why_objective)
    request = replace(request, objective=objective)
    workload = for_objective(request.workload, objective)
    if workload is not request.workload:
        notes.insert(0, "objective latency without --concurrency: one request at a time (its TPOT alone)")
    evaluated = 0

    def judge(group: Group, batch: int, sequence: int | None, reason: str) -> PlannedCandidate:
        nonlocal evaluated
        evaluated += 1
        candidate = group.writer.judge(group.degree, batch, sequence)
        return planned(group, candidate, sequence, workload, reason)

    if arch.memory_not_estimated and not request.include_infeasible:
        # nothing ranks without a memory figure; what refuses the model itself (its type, the image's
        # SDK) does not depend on TP or batch, so one candidate per instance type says whether it does
        first = {group.instance.instance_type: group for group in reversed(groups)}.values()
        probes = [
            judge(group, (group.batches or [group.minimum_batch])[0], group.sequence, "") for group in first
        ]
        refusal = model_refusal(probes) or unsized_refusal(arch)
        raise PlanningError(f"no configuration of {request.model} can be planned: {refusal}")
    exhaustive = request.complete or request.top <= 0
    ranked, judged = rank_groups(groups, judge, objective, workload, request.top, exhaustive)
    if not ranked and not request.include_infeasible:
        refusal = model_refusal(judged) or unsized_refusal(arch, judged)
        if refusal:
            raise PlanningError(f"no configuration of {request.model} can be planned: {refusal}")
        raise PlanningError(
            f"no configuration of {request.model} serves {workload.longest_request}-token requests on any of the "
            f"{len({g.instance.instance_type for g in groups})} instance types planned"
            + (" within the latency limits" if workload.max_ttft_ms or workload.max_tpot_ms else "")
            + (f" at {workload.request_rate:g} requests/s" if workload.request_rate is not None else "")
            + "; try --all to see what blocks each, larger instances, or a shorter --max-model-len"
            + (" or a lower --request-rate" if workload.request_rate is not None else "")
        )
    infeasible = _refused(groups, judge, workload, judged) if request.include_infeasible else []
    for position, candidate in enumerate(ranked, start=1):
        candidate.rank = position
    notes.extend(tie_note(ranked, objective))
    for candidate in ranked + infeasible:
        candidate.reason = describe(candidate)
    notes.insert(0, workload.describe())
    if ranked and ranked[0].target_misses:
        notes.append(
            "no configuration meets the latency target: the rows rank by the objective regardless "
            f"({'; '.join(ranked[0].target_misses)} for the first)"
        )
    elif ranked and ranked[0].target_edges:
        notes.append(
            "the first row meets the latency target by less than the model's error "
            f"({'; '.join(ranked[0].target_edges)}): a load test at this workload (on Neuron, after "
            "`lmi-config search`) decides whether it holds"
        )
    notes.extend(price_notes(request.price_kind, ranked + infeasible))
    planned_instances = len({group.instance.instance_type for group in groups})
    rest = "" if exhaustive else "; the others cannot rank higher"
    notes.append(f"judged {evaluated} candidates on {planned_instances} instance types{rest}")
    # where measured runs of this kind were far from the figures, once for the table
    notes.extend(
        dict.fromkeys(c.figures.caveat for c in ranked + infeasible if c.figures and c.figures.caveat)
    )
    task = "text-generation" if arch.is_text_generation else "feature-extraction"
    model_dtype = "fp16" if (arch.torch_dtype or "").lower() in ("float16", "fp16") else "bf16"
    auto_cast = request.dtype if request.dtype in ("bf16", "fp16") else model_dtype
    feasible = ranked if exhaustive else [candidate for candidate in judged if candidate.feasible]
    result = PlanResult(
        request.model,
        objective,
        ranked + infeasible,
        feasible,
        notes,
        evaluated,
        task,
        auto_cast,
        workload,
    )
    if request.complete:  # a cache config: every exportable length, not only the workload's
        from lmi_config.plan.exportable import exportable

        result.exportable = exportable(request, arch, feasible)
    return result


def _refused(
    groups: list[Group], judge: Judge, workload: PlanWorkload, judged: list[PlannedCandidate]
) -> list[PlannedCandidate]:
    """``--all``: what the judge or the limits refuse in every group — the first batch that does not
    fit, a TP degree the judge blocks (judged at the smallest batch)."""
    seen = {id(candidate) for candidate in judged}
    walked = {(candidate.instance, candidate.tensor_parallel_degree) for candidate in judged}
    refused = [candidate for candidate in judged if not candidate.feasible]
    for group in groups:
        if (group.instance.instance_type, group.degree) in walked:
            continue
        if allowed(group):
            found = group_candidates(group, judge, workload)
        else:
            smallest = group.batches[0] if group.batches else (group.writer.default_batch or 1)
            found = [judge(group, smallest, group.sequence, "")]
        refused.extend(
            candidate for candidate in found if not candidate.feasible and id(candidate) not in seen
        )
    return refused
