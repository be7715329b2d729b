"""``plan``: the best (instance, TP, batch, sequence length) configurations of a model, ranked.

Every candidate is a configuration as it would be written (the planner's
:class:`~lmi_config.planner.CandidateWriter`) judged by the one judge
(:func:`lmi_config.shape.assess`): feasible means :attr:`Assessment.acceptable`, and an
infeasible candidate carries the rule slugs of what blocks it.

Candidates are grouped by (instance, TP). Memory grows with the batch and the sequence length,
so a group is walked as a staircase: for each batch (Neuron) the longest sequence length of the
grid that fits, for each sequence length (GPU) the largest batch the KV cache holds — every
other point of the grid is dominated by one of those. Groups are evaluated best bound first and
the walk stops once no remaining group can reach the top N; ``--all`` judges the whole grid.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Any

from lmi_config.errors import InputError, PlanningError
from lmi_config.plan.candidates import (
    OBJECTIVES,
    Group,
    PlannedCandidate,
    PlanRequest,
    PlanResult,
    blocked_by,
    bound,
    planned,
    rank_key,
)
from lmi_config.plan.targets import plan_groups
from lmi_config.plan.walks import Judge, walk, whole_grid
from lmi_config.planner import degree_allowed

__all__ = [
    "OBJECTIVES",
    "PlanRequest",
    "PlanResult",
    "PlannedCandidate",
    "blocked_by",
    "plan_model",
    "rank_key",
]


def _reason(candidate: PlannedCandidate, objective: str) -> str:
    if not candidate.feasible:
        return f"blocked by {', '.join(candidate.blocked_by)}"
    if candidate.warnings:
        return f"at the edge of the estimate ({', '.join(candidate.warnings)}); " + _served(
            candidate, objective
        )
    return _served(candidate, objective)


def _served(candidate: PlannedCandidate, objective: str) -> str:
    copies = f"{candidate.copies} cop{'ies' if candidate.copies != 1 else 'y'}"
    served = f"{copies} x batch {candidate.batch_size} = {candidate.concurrency} sequences at once"
    if objective == "latency":
        return f"TP {candidate.tensor_parallel_degree} per request; {served}"
    if objective == "cost" and candidate.usd_per_sequence_hour is not None:
        return f"${candidate.usd_per_sequence_hour:.3f} per sequence-hour (${candidate.usd_per_hour:g}/h, {served})"
    return served


def plan_model(request: PlanRequest) -> PlanResult:
    """Judge and rank the candidates; raises :class:`InputError` for a bad request and
    :class:`PlanningError` when nothing fits anywhere."""
    from lmi_config.modelarch import ModelResolutionError, resolve_model

    if request.objective not in OBJECTIVES:
        raise InputError(f"unknown objective {request.objective!r}; choose {', '.join(OBJECTIVES)}")
    try:
        arch = resolve_model(request.model, allow_hub=request.hub)
    except ModelResolutionError as error:
        raise InputError(str(error)) from None
    groups, notes = plan_groups(request, arch)
    if request.objective == "cost":
        unpriced = sorted({group.instance.instance_type for group in groups if group.price is None})
        groups = [group for group in groups if group.price is not None]
        if unpriced:
            notes.append(
                f"cost: no {request.price_kind} on-demand price for {', '.join(unpriced)}; skipped (prices in data/instances.json)"
            )
    evaluated = 0

    def judge(group: Group, batch: int, sequence: int | None) -> PlannedCandidate:
        nonlocal evaluated
        evaluated += 1
        return planned(group, group.writer.judge(group.degree, batch, sequence), sequence)

    for group in groups:
        group.bound = bound(group, request.objective)
    if request.include_infeasible:
        found = [candidate for group in groups for candidate in whole_grid(group, judge)]
    elif request.complete or request.top <= 0:
        found = [candidate for group in groups for candidate in walk(group, judge, request.objective)]
    else:
        found = _best_first(groups, judge, request)
    feasible = sorted(
        (candidate for candidate in found if candidate.feasible),
        key=lambda candidate: rank_key(candidate, request.objective),
        reverse=True,
    )
    if not feasible and not request.include_infeasible:
        raise PlanningError(
            f"no configuration of {request.model} fits any of the {len({g.instance.instance_type for g in groups})} "
            "instance types planned; try --all to see what blocks each, or larger instances"
        )
    ranked = feasible[: request.top] if request.top > 0 else list(feasible)
    for position, candidate in enumerate(ranked, start=1):
        candidate.rank = position
    infeasible = [candidate for candidate in found if not candidate.feasible]
    for candidate in ranked + infeasible:
        candidate.reason = _reason(candidate, request.objective)
    task = "text-generation" if arch.is_text_generation else "feature-extraction"
    model_dtype = "fp16" if (arch.torch_dtype or "").lower() in ("float16", "fp16") else "bf16"
    auto_cast = request.dtype if request.dtype in ("bf16", "fp16") else model_dtype
    exhaustive = request.include_infeasible or request.complete or request.top <= 0
    rest = "" if exhaustive else "; the others cannot rank higher"
    planned_instances = len({group.instance.instance_type for group in groups})
    notes.append(f"judged {evaluated} candidates on {planned_instances} instance types{rest}")
    return PlanResult(
        request.model, request.objective, ranked + infeasible, feasible, notes, evaluated, task, auto_cast
    )


def _best_first(groups: list[Group], judge: Judge, request: PlanRequest) -> list[PlannedCandidate]:
    """The top N by merging the groups' rank-ordered walks lazily: a group is only walked while
    its next candidate (or, before its first, the best it could offer) can still reach the top N."""
    heap: list[tuple[tuple[float, ...], int, Iterator[PlannedCandidate] | None, Group, Any]] = []
    for order, group in enumerate(groups):
        heap.append((tuple(-value for value in group.bound), order, None, group, None))
    heapq.heapify(heap)
    chosen: list[PlannedCandidate] = []
    while heap and len(chosen) < request.top:
        _, order, steps, group, candidate = heapq.heappop(heap)
        if steps is None:
            if not group.checked and not degree_allowed(
                group.writer.target, group.writer.backend_accelerator, group.degree
            ):
                continue
            steps = walk(group, judge, request.objective)
        elif candidate is not None:
            chosen.append(candidate)
        following = next(steps, None)
        if following is not None:
            key = tuple(-value for value in rank_key(following, request.objective))
            heapq.heappush(heap, (key, order, steps, group, following))
    return chosen
