"""Candidate enumeration and ranking: resolves ``auto`` for TP, batch and sequence length.

The default objective is the container's own (its Neuron smart defaults aim for it): the most
concurrent sequences per instance, copies x batch. ``latency`` prefers the largest TP that
fits. Every candidate is judged by the one memory model (:func:`sizing.estimate_memory`) and
the same TP rules the linter uses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lmi_config.knowledge import load_data
from lmi_config.knowledge.instances import Instance, degree_allowed, rules_for
from lmi_config.modelarch import ModelArch
from lmi_config.sizing import MemoryBreakdown, Shape, estimate_memory

NEURON_BATCHES = (1, 2, 4, 8, 16, 32, 64)
GPU_BATCH_CAP = 256


class PlanningError(ValueError):
    """No candidate fits; the message says what came closest."""


@dataclass(frozen=True)
class Candidate:
    """One (TP, batch, sequence length) with its memory and what it serves."""

    shape: Shape
    memory: MemoryBreakdown
    copies: int

    @property
    def concurrency(self) -> int:
        return self.copies * self.shape.batch_size


def valid_degrees(arch: ModelArch, instance: Instance, backend: str) -> list[int]:
    """TP degrees the runtime accepts, that are documented or known to run, and that the heads allow."""
    cores = instance.num_cores
    degrees = [d for d in range(1, cores + 1) if cores % d == 0 or instance.accelerator == "neuron"]
    result = []
    for degree in degrees:
        if instance.accelerator == "neuron":
            runtime = rules_for(instance.platform, backend, "runtime")
            if runtime and not all(degree_allowed(row, degree) for row in runtime):
                continue
            listed = rules_for(instance.platform, backend, "documented") + rules_for(
                instance.platform, backend, "observed"
            )
            if listed and not any(degree_allowed(row, degree) for row in listed):
                continue
        elif degree & (degree - 1):
            continue  # GPUs: powers of two
        heads = [
            row
            for row in rules_for(instance.platform, backend, "heads")
            if not row.get("model_types") or arch.model_type in row["model_types"]
        ]
        heads.sort(key=lambda row: 0 if row.get("model_types") else 1)
        if heads and heads[0].get("policy") == "error" and arch.num_attention_heads % degree:
            continue
        kv = arch.num_key_value_heads
        if instance.accelerator == "gpu" and (
            (kv >= degree and kv % degree) or (kv < degree and degree % kv)
        ):
            continue
        result.append(degree)
    return result


def acceptable(memory: MemoryBreakdown, lenient: bool = False) -> bool:
    """Fits with headroom; ``lenient`` ignores the items the sources do not settle."""
    if memory.fits_certainly_not or (not lenient and not memory.fits):
        return False
    if memory.kv_cache_capacity_bytes is not None:
        return (
            memory.kv_bytes_per_sequence is not None
            and memory.kv_cache_capacity_bytes >= memory.kv_bytes_per_sequence
        )
    threshold = load_data("memory.json")["headroom_warning_fraction"]["value"]
    peak = memory.certain_peak_bytes if lenient else memory.peak_bytes
    return (memory.budget_bytes - peak) / memory.budget_bytes >= threshold


def _gpu_batch(memory: MemoryBreakdown) -> int:
    # every sequence may reach max_model_len at once without preemption
    if not memory.kv_cache_capacity_bytes or not memory.kv_bytes_per_sequence:
        return 1
    fitting = memory.kv_cache_capacity_bytes // memory.kv_bytes_per_sequence
    return max(1, min(GPU_BATCH_CAP, 2 ** int(math.log2(max(fitting, 1)))))


def enumerate_candidates(
    arch: ModelArch,
    instance: Instance,
    backend: str,
    base: Shape,
    *,
    tensor_parallel_degree: int | None,
    batch: int | None,
    sequence_lengths: list[int],
    lenient: bool = False,
) -> list[Candidate]:
    """Every fitting candidate for the free dimensions (fixed ones stay as given)."""
    from dataclasses import replace

    degrees = [tensor_parallel_degree] if tensor_parallel_degree else valid_degrees(arch, instance, backend)
    found: list[Candidate] = []
    for sequence in sequence_lengths:
        for degree in degrees:
            if degree > instance.num_cores:
                continue
            copies = instance.num_cores // degree
            if instance.accelerator == "gpu":
                shape = replace(
                    base, tensor_parallel_degree=degree, batch_size=batch or 1, sequence_length=sequence
                )
                memory = estimate_memory(arch, instance, backend, shape)
                if not acceptable(memory, lenient):
                    continue
                if batch is None:
                    shape = replace(shape, batch_size=_gpu_batch(memory))
                    memory = estimate_memory(arch, instance, backend, shape)
                found.append(Candidate(shape, memory, copies))
                continue
            batches = [batch] if batch else list(NEURON_BATCHES)
            for size in batches:
                shape = replace(
                    base, tensor_parallel_degree=degree, batch_size=size, sequence_length=sequence
                )
                memory = estimate_memory(arch, instance, backend, shape)
                if acceptable(memory, lenient):
                    found.append(Candidate(shape, memory, copies))
        if found:
            break  # the longest sequence length that fits wins
    return found


def choose(candidates: list[Candidate], objective: str) -> Candidate:
    """Rank: throughput = most sequences per instance; latency = largest TP, then batch."""
    if objective == "latency":
        return max(
            candidates,
            key=lambda c: (c.shape.tensor_parallel_degree, c.shape.batch_size, c.memory.headroom_fraction),
        )
    return max(
        candidates, key=lambda c: (c.concurrency, -c.shape.tensor_parallel_degree, c.memory.headroom_fraction)
    )


def auto_sequence_lengths(arch: ModelArch, instance: Instance) -> list[int]:
    """Neuron: the container's min(max_position_embeddings, 4096); GPU: longest first."""
    maximum = arch.max_position_embeddings or 2048
    if instance.accelerator == "neuron" or instance.accelerator != "gpu":
        return [min(maximum, 4096)]
    lengths = [maximum] + [
        length for length in (65536, 32768, 16384, 8192, 4096, 2048, 1024) if length < maximum
    ]
    return lengths


def describe_choice(candidate: Candidate, objective: str, instance: Instance) -> str:
    """One line for the rendered file's comment."""
    shape = candidate.shape
    goal = (
        "largest TP that fits (objective latency)"
        if objective == "latency"
        else "most concurrent sequences per instance"
    )
    return (
        f"{goal}: {candidate.copies} cop{'ies' if candidate.copies != 1 else 'y'} x batch {shape.batch_size} at TP "
        f"{shape.tensor_parallel_degree}, {shape.sequence_length} tokens; {candidate.memory.peak_bytes / 2**30:.1f} of "
        f"{candidate.memory.budget_bytes / 2**30:.1f} GiB per {candidate.memory.unit} on {instance.instance_type}"
    )
