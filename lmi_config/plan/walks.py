"""Walks of one (instance, TP) group: the staircase of the grid in rank order, or the whole grid.

Memory grows with the batch and the sequence length, so every point of the grid off the
staircase is dominated by a point on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from lmi_config.plan.candidates import Group, PlannedCandidate, memory_only, rank_key
from lmi_config.planner import GPU_BATCH_CAP, largest_gpu_batch

Judge = Callable[[Group, int, "int | None"], PlannedCandidate]


def _neuron_walk(group: Group, judge: Judge, by_batch: bool) -> Iterator[PlannedCandidate]:
    """The staircase of a Neuron group: for each batch, the longest sequence length that fits.

    Memory grows with the batch and the sequence length, so the staircase costs at most
    batches + lengths judgements. ``by_batch`` walks the batches from the largest (best
    throughput first), else from the smallest (longest sequence first).
    """
    batches, sequences = group.batches, group.sequences
    if by_batch:
        index = 0
        for batch in reversed(batches):
            candidate = judge(group, batch, sequences[index])
            if not candidate.feasible:
                if not memory_only(candidate):
                    return
                continue
            while index + 1 < len(sequences):
                longer = judge(group, batch, sequences[index + 1])
                if not longer.feasible:
                    break
                candidate, index = longer, index + 1
            yield candidate
        return
    index = len(sequences) - 1
    for batch in batches:
        while index >= 0:
            candidate = judge(group, batch, sequences[index])
            if candidate.feasible:
                yield candidate
                break
            if not memory_only(candidate):
                return
            index -= 1
        if index < 0:
            return


def _gpu_walk(group: Group, judge: Judge, shortest_first: bool) -> Iterator[PlannedCandidate]:
    """For each sequence length, the largest batch the KV cache holds (the judge's own figures)."""
    minimum = group.batches[0]
    guess = minimum
    ordered = group.sequences if shortest_first else list(reversed(group.sequences))
    for sequence in ordered:
        candidate = judge(group, guess, sequence)
        if not candidate.feasible:
            if not memory_only(candidate) or shortest_first:
                return  # a shorter length did not fit either, or something else blocks the group
            continue
        assert candidate.assessment is not None and candidate.assessment.memory is not None
        batch = max(minimum, largest_gpu_batch(candidate.assessment.memory))
        while batch != candidate.batch_size and batch > minimum:
            other = judge(group, batch, sequence)
            if other.feasible:
                candidate = other
                break
            batch //= 2
        yield candidate
        if not shortest_first and candidate.batch_size >= GPU_BATCH_CAP:
            return  # shorter sequences would be served at the same batch: dominated
        guess = candidate.batch_size if shortest_first else min(GPU_BATCH_CAP, candidate.batch_size * 2)


def walk(group: Group, judge: Judge, objective: str) -> Iterator[PlannedCandidate]:
    """The group's staircase in rank order (best first), so that groups can be merged lazily."""
    latency = objective == "latency"
    if group.instance.accelerator == "gpu":
        steps = _gpu_walk(group, judge, shortest_first=not latency)
    else:
        steps = _neuron_walk(group, judge, by_batch=not latency)
    # steps share a batch (GPU) or a length (Neuron, latency) in runs; best first inside a run
    run: list[PlannedCandidate] = []
    for candidate in steps:
        if run and _run_of(run[-1], latency) != _run_of(candidate, latency):
            yield from sorted(run, key=lambda item: rank_key(item, objective), reverse=True)
            run = []
        run.append(candidate)
    yield from sorted(run, key=lambda item: rank_key(item, objective), reverse=True)


def _run_of(candidate: PlannedCandidate, latency: bool) -> int:
    return candidate.sequence_length if latency else candidate.batch_size


def whole_grid(group: Group, judge: Judge) -> Iterator[PlannedCandidate]:
    """Every point of the group's grid (``--all``), infeasible ones included."""
    for batch in group.batches:
        for sequence in group.sequences:
            yield judge(group, batch, sequence)
