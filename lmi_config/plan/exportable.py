"""What ``plan --cache-config`` writes: every configuration optimum-neuron can export, as the seed's
search would record them — for each (instance, TP, batch) the judge accepts, its longest sequence
length among the workload's planned length and the longer powers of two below the model's maximum
positions (seed 000's candidate lengths). A cache config is a list of exportable configurations,
not one length per plan run: a configuration compiled for a longer length serves every shorter
request."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lmi_config.plan.candidates import Group, PlannedCandidate, PlanRequest, planned
from lmi_config.plan.ranking import rank_groups
from lmi_config.plan.targets import plan_groups, planned_sequence_length
from lmi_config.plan.workload import for_objective


def cache_lengths(request: PlanRequest, maximum: int | None) -> list[int]:
    """The plan's own length, then every longer power of two below ``maximum`` (the seed's lengths)."""
    first = planned_sequence_length(request.workload, maximum, request.min_sequence_length)
    lengths = [first]
    length = 1024
    while maximum is not None and length < maximum:
        if length > first:
            lengths.append(length)
        length *= 2
    return lengths


def exportable(request: PlanRequest, arch: Any, feasible: list[PlannedCandidate]) -> list[PlannedCandidate]:
    """The longest feasible Neuron configuration per (instance, TP, batch) over :func:`cache_lengths`,
    the plan's own ``feasible`` rows included (judged again only at the longer lengths)."""
    longest: dict[tuple[str, int, int], PlannedCandidate] = {}
    _keep_longest(longest, feasible)
    objective = request.objective or "throughput"
    workload = for_objective(request.workload, objective)
    for length in cache_lengths(request, arch.max_position_embeddings)[1:]:
        groups, _ = plan_groups(replace(request, min_sequence_length=length), arch)
        neuron = [group for group in groups if group.instance.accelerator == "neuron"]
        if not neuron:
            break

        def judge(group: Group, batch: int, sequence: int | None, reason: str) -> PlannedCandidate:
            return planned(
                group, group.writer.judge(group.degree, batch, sequence), sequence, workload, reason
            )

        ranked, _ = rank_groups(neuron, judge, objective, workload, 0, True)
        if not ranked:
            break  # nothing fits at this length, so nothing fits at a longer one
        _keep_longest(longest, ranked)
    return sorted(
        longest.values(),
        key=lambda row: (row.instance, row.tensor_parallel_degree, row.batch_size, row.sequence_length),
    )


def _keep_longest(
    longest: dict[tuple[str, int, int], PlannedCandidate], rows: list[PlannedCandidate]
) -> None:
    for row in rows:
        key = (row.instance, row.tensor_parallel_degree, row.batch_size)
        if row.feasible and (key not in longest or row.sequence_length > longest[key].sequence_length):
            longest[key] = row
