"""The one ranking: groups (instance, TP) expanded best bound first, their candidates ranked by
the objective's predicted metric. ``plan`` and ``render auto`` both rank through it."""

from __future__ import annotations

import heapq
from typing import Any

from lmi_config.plan.candidates import Group, PlannedCandidate, rank_key
from lmi_config.plan.performance import describe_figures
from lmi_config.plan.ties import order_ties, tie_floor
from lmi_config.plan.walks import Judge, bound, group_candidates
from lmi_config.plan.workload import PlanWorkload
from lmi_config.plan.writer import degree_allowed


def describe(candidate: PlannedCandidate) -> str:
    """Why a candidate ranks where it does, or what refuses it."""
    if not candidate.feasible:
        return f"blocked by {', '.join(candidate.blocked_by)}"
    copies = f"{candidate.copies} cop{'ies' if candidate.copies != 1 else 'y'}"
    served = f"{copies} x {candidate.batch_size} sequences"
    if candidate.figures is None:
        served += f"; no performance prediction ({candidate.not_predicted})"
    else:
        served = f"{describe_figures(candidate.figures)}; {served}"
    if candidate.target_misses:
        served = f"over the latency target ({'; '.join(candidate.target_misses)}); {served}"
    elif candidate.target_edges:
        served = f"within the latency target by less than the model's error ({'; '.join(candidate.target_edges)}); {served}"
    if candidate.warnings:
        return f"at the edge of the estimate ({', '.join(candidate.warnings)}); {served}"
    return served


def default_objective(objective: str | None, groups: list[Group]) -> tuple[str, str]:
    """The objective asked for, else cost across instance types (dollars per million output tokens is
    what compares a small instance with a large one) and throughput per instance within one; and the
    note that says which default was taken ("" when one was asked for)."""
    if objective is not None:
        return objective, ""
    types = {group.instance.instance_type for group in groups}
    if len(types) > 1:
        return "cost", (
            f"objective cost (the default across {len(types)} instance types: $/M output tokens at on-demand "
            "prices; --objective throughput ranks tokens/s per instance)"
        )
    return "throughput", (
        "objective throughput (the default within one instance type: output tokens/s per instance; "
        "--objective cost ranks $/M output tokens)"
    )


def rank_groups(
    groups: list[Group], judge: Judge, objective: str, workload: PlanWorkload, top: int, complete: bool
) -> tuple[list[PlannedCandidate], list[PlannedCandidate]]:
    """The ranked candidates (best first; the top ``top``, or all when ``complete`` or ``top`` <= 0)
    and every candidate judged. The one ranking ``plan`` and ``render auto`` use."""
    for group in groups:
        group.bound = bound(group, objective, workload)
    if complete or top <= 0:
        judged = [
            candidate
            for group in groups
            if allowed(group)
            for candidate in group_candidates(group, judge, workload)
        ]
        ranked = sorted(
            (candidate for candidate in judged if candidate.feasible),
            key=lambda candidate: rank_key(candidate, objective),
            reverse=True,
        )
        return order_ties(ranked, objective), judged
    ranked, judged = _best_first(groups, judge, objective, workload, top)
    return order_ties(ranked, objective)[:top], judged


def allowed(group: Group) -> bool:
    if not group.checked:
        group.checked = True
        group.allowed = degree_allowed(group.writer.target, group.writer.backend_accelerator, group.degree)
    return group.allowed


def _best_first(
    groups: list[Group], judge: Judge, objective: str, workload: PlanWorkload, top: int
) -> tuple[list[PlannedCandidate], list[PlannedCandidate]]:
    """The top N by merging the groups lazily: a group is judged only while its bound (or, once
    judged, its next candidate) can still reach the top N -- or, for cost, tie with the first within
    the model's error (:func:`lmi_config.plan.ties.tie_floor`), since ties are ordered apart."""
    heap: list[tuple[tuple[float, ...], int, int, Any]] = [
        (tuple(-value for value in group.bound), order, 0, group) for order, group in enumerate(groups)
    ]
    heapq.heapify(heap)
    chosen: list[PlannedCandidate] = []
    judged: list[PlannedCandidate] = []
    floor: tuple[float, ...] | None = None
    while heap:
        if len(chosen) >= top:
            floor = floor or (tie_floor(chosen[0], objective) if chosen else None)
            if floor is None or tuple(-value for value in heap[0][0]) < floor:
                break
        _, order, step, item = heapq.heappop(heap)
        if isinstance(item, PlannedCandidate):
            chosen.append(item)
            continue
        if not allowed(item):
            continue
        found = group_candidates(item, judge, workload)
        judged.extend(found)
        for position, candidate in enumerate(found):
            if candidate.feasible:
                key = tuple(-value for value in rank_key(candidate, objective))
                heapq.heappush(heap, (key, order, position + 1, candidate))
    return chosen, judged
