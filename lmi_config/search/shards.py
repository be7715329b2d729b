"""Splitting one search into shards that run independently, on one machine each.

The unit of a shard is a (instance type, TP size): both strategies decide the next trial of a TP
from that TP's own outcomes only (the seed's pruning — a success at (TP, batch, length) skips the
same TP and batch at shorter lengths — and the guided strategy's monotonicity never cross TP
sizes), so a shard that runs some of the TP sizes of the grid tries exactly the trials a single
search would have tried for them, and the union of the shards is the single search.

``--shard K/N`` takes every N-th TP size of the grid, starting at the K-th (round robin: the
large TP sizes, which compile the longest, are spread over the shards instead of all falling in
the last one). A shard with no TP size left is complete at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lmi_config.errors import InputError

_SHARD = re.compile(r"^\s*([0-9]+)\s*/\s*([0-9]+)\s*$", re.ASCII)
MAX_SHARDS = 999_999  # far beyond any grid's TP sizes; a shard past them is complete at once


@dataclass(frozen=True, order=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def label(self) -> str:
        """``2of3``: part of object keys and job names (no slash)."""
        return f"{self.index}of{self.count}"

    def sizes(self, tensor_parallel_sizes: tuple[int, ...]) -> tuple[int, ...]:
        """The TP sizes of the grid this shard runs."""
        return tuple(
            size
            for position, size in enumerate(tensor_parallel_sizes)
            if position % self.count == self.index - 1
        )


def parse_shard(text: str) -> Shard:
    """``K/N`` with 1 <= K <= N <= :data:`MAX_SHARDS`; :class:`InputError` saying what to give instead."""
    shown = text if text.isprintable() and len(text) <= 40 else repr(text[:40])
    found = _SHARD.match(text)
    if found is None:
        raise InputError(f"--shard {shown}: expected K/N, e.g. --shard 1/3 (the first of three shards)")
    index_digits, count_digits = (part.lstrip("0") or "0" for part in found.groups())
    limit = len(str(MAX_SHARDS))
    if len(count_digits) > limit or int(count_digits) > MAX_SHARDS:
        raise InputError(
            f"--shard {shown}: N is at most {MAX_SHARDS} (a shard past the grid's TP sizes runs nothing)"
        )
    count = int(count_digits)
    if count < 1:
        raise InputError(
            f"--shard {shown}: N is the number of shards, at least 1 (--shard 1/1 runs the whole search)"
        )
    index = int(index_digits) if len(index_digits) <= limit else MAX_SHARDS + 1
    if not 1 <= index <= count:
        raise InputError(
            f"--shard {shown}: K must be between 1 and N (shards are numbered 1/{count} to {count}/{count})"
        )
    return Shard(index, count)


def shard_name(instance_type: str, shard: Shard) -> str:
    """The shard's name in a results location: ``trn1.32xlarge-2of3``."""
    return f"{instance_type.removeprefix('ml.')}-{shard.label()}"


@dataclass(frozen=True)
class PlannedShard:
    """One shard of a search across instance types: where it runs and which TP sizes it tries."""

    instance_type: str
    shard: Shard
    tensor_parallel_sizes: tuple[int, ...]

    @property
    def name(self) -> str:
        return shard_name(self.instance_type, self.shard)


def plan_shards(grids: dict[str, tuple[int, ...]], max_jobs: int) -> list[PlannedShard]:
    """Shards for several instance types (instance type -> its grid's TP sizes), at most ``max_jobs``
    in all: one per instance type at least, then one more at a time to the instance type with the
    most TP sizes per shard, never more shards than TP sizes."""
    runnable = {name: sizes for name, sizes in grids.items() if sizes}
    if max_jobs < len(runnable):
        raise InputError(
            f"--max-jobs {max_jobs}: {len(runnable)} instance types need one job each at least; "
            f"raise --max-jobs to {len(runnable)} or give fewer --instance"
        )
    counts = dict.fromkeys(runnable, 1)
    while sum(counts.values()) < max_jobs:
        open_types = [name for name in runnable if counts[name] < len(runnable[name])]
        if not open_types:
            break
        busiest = max(open_types, key=lambda name: (len(runnable[name]) / counts[name], name))
        counts[busiest] += 1
    return [
        PlannedShard(name, Shard(index, counts[name]), Shard(index, counts[name]).sizes(runnable[name]))
        for name in sorted(runnable)
        for index in range(1, counts[name] + 1)
    ]
