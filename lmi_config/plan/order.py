"""The planner's order of value over (TP, batch) pairs: what ``search`` spends its trials on first.

Each pair is written by the search's candidate writer at the workload's planned sequence length,
judged by the one judge and scored by the planner's own ranking (:func:`planned` and
:func:`rank_key`, the same figures and keys ``plan`` ranks by), so the search and ``plan`` never
disagree on which configuration is worth more. Pairs the judge refuses at that length, or that the
performance model cannot predict, come after every scored one, in the order they were given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lmi_config.knowledge import Release
from lmi_config.knowledge.instances import Instance
from lmi_config.knowledge.planning import on_demand_price
from lmi_config.plan.candidates import Group, PlannedCandidate, planned, rank_key
from lmi_config.plan.performance import describe_figures
from lmi_config.plan.targets import planned_sequence_length
from lmi_config.plan.workload import PlanWorkload, for_objective
from lmi_config.plan.writer import CandidateWriter


@dataclass(frozen=True)
class PairValue:
    """One (TP, batch) pair, its place in the planner's order, and the figures that put it there."""

    tensor_parallel_size: int
    batch_size: int
    rank: int  # 1-based position in the order
    sequence_length: int  # the length it was judged and predicted at
    candidate: PlannedCandidate

    @property
    def pair(self) -> tuple[int, int]:
        return (self.tensor_parallel_size, self.batch_size)

    def describe(self) -> str:
        """The planner's figure for the pair, or why it is ordered after the scored ones."""
        candidate = self.candidate
        where = f"at {self.sequence_length} tokens"
        if not candidate.feasible:
            return f"not ranked {where} (blocked by {', '.join(candidate.blocked_by)})"
        if candidate.figures is None:
            return f"not ranked {where} (no performance prediction: {candidate.not_predicted})"
        return f"{describe_figures(candidate.figures)} {where}"


def order_pairs(
    writer: CandidateWriter,
    instance: Instance,
    release: Release,
    pairs: Sequence[tuple[int, int]],
    workload: PlanWorkload,
    objective: str,
) -> list[PairValue]:
    """``pairs`` in the planner's order of value for ``objective`` on ``workload``: the scored ones
    best first (``plan``'s rank key), then the rest in the order given."""
    arch = writer.target.arch
    assert arch is not None
    workload = for_objective(workload, objective)
    sequence = planned_sequence_length(workload, arch.max_position_embeddings, None)
    price = on_demand_price(instance.instance_type)
    judged = []
    for position, (tensor_parallel, batch) in enumerate(pairs):
        group = Group(instance, tensor_parallel, writer, release, None, sequence, price=price)
        row = planned(group, writer.judge(tensor_parallel, batch, sequence), sequence, workload)
        judged.append((position, tensor_parallel, batch, row))
    scored = sorted(
        (item for item in judged if item[3].feasible and item[3].figures is not None),
        key=lambda item: (tuple(-value for value in rank_key(item[3], objective)), item[0]),
    )
    rest = [item for item in judged if not (item[3].feasible and item[3].figures is not None)]
    return [
        PairValue(tensor_parallel, batch, rank, sequence, row)
        for rank, (_, tensor_parallel, batch, row) in enumerate(scored + rest, start=1)
    ]


__all__ = ["PairValue", "order_pairs"]
