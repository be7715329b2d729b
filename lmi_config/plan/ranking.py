"""The one ranking: groups (instance, TP) expanded best bound first, their candidates ranked by
the objective's predicted metric. ``plan`` and ``render auto`` both rank through it."""

from __future__ import annotations

import heapq
from typing import Any

from lmi_config.plan.candidates import Group, PlannedCandidate, rank_key
from lmi_config.plan.performance import describe_figures
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
    if candidate.warnings:
        return f"at the edge of the estimate ({', '.join(candidate.warnings)}); {served}"
    return served


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
        return ranked, judged
    return _best_first(groups, judge, objective, workload, top)


def allowed(group: Group) -> bool:
    if not group.checked:
        group.checked = True
        group.allowed = degree_allowed(group.writer.target, group.writer.backend_accelerator, group.degree)
    return group.allowed


def _best_first(
    groups: list[Group], judge: Judge, objective: str, workload: PlanWorkload, top: int
) -> tuple[list[PlannedCandidate], list[PlannedCandidate]]:
    """The top N by merging the groups lazily: a group is judged only while its bound (or, once
    judged, its next candidate) can still reach the top N."""
    heap: list[tuple[tuple[float, ...], int, int, Any]] = [
        (tuple(-value for value in group.bound), order, 0, group) for order, group in enumerate(groups)
    ]
    heapq.heapify(heap)
    chosen: list[PlannedCandidate] = []
    judged: list[PlannedCandidate] = []
    while heap and len(chosen) < top:
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
