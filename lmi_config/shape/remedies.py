"""What would make a judged shape run, searched by the judge itself: the longest sequence the model
and the KV cache hold, the gpu_memory_utilization or TP that leaves vLLM room for one sequence.

These are the alternatives findings offer as fixes; rules never compute them, so that no two
findings name different numbers for the same key.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from lmi_config.shape import sizing_backend
from lmi_config.shape.parallelism import judge_tensor_parallel
from lmi_config.shape.sequence import model_sequence_limit
from lmi_config.sizing import estimate_memory
from lmi_config.sizing.gpu import kv_capacity_verdict
from lmi_config.sizing.vllm_release import startup_utilization_limit, torch_visible_bytes

if TYPE_CHECKING:
    from lmi_config.shape import Assessment
    from lmi_config.shape.resources import MemoryTarget
    from lmi_config.sizing import MemoryBreakdown, Shape

KV_LENGTH_STEP = 256  # lengths offered are whole blocks of 256 tokens (vLLM's block sizes divide it)
MAX_UTILIZATION = 0.98  # above it vLLM leaves the CUDA context and other processes no room


def longest_sequence_length(assessment: Assessment) -> int | None:
    """The one longest sequence length for this judged configuration: the model's limit and, on vLLM,
    the longest whose KV cache the memory model (re-estimated at that length: the profile run's
    activations grow with it) says holds one sequence — the number every finding about the length names."""
    target = assessment.target
    limit = model_sequence_limit(target.arch) if target.arch is not None else None
    shape = assessment.shape.sizing_shape()
    memory = assessment.memory
    if memory is None or memory.kv_cache_tokens is None or shape is None:
        return limit
    assert target.arch is not None and target.instance is not None
    arch, instance, backend = target.arch, target.instance, sizing_backend(target)

    def holds(length: int) -> bool:
        candidate = shape._replace(sequence_length=length)
        estimate = estimate_memory(arch, instance, backend, candidate)
        return estimate.fits and kv_capacity_verdict(estimate, length) is None

    low, high = 0, min(limit or shape.sequence_length, shape.sequence_length) // KV_LENGTH_STEP
    while (
        low < high
    ):  # the largest multiple of the step that holds (a longer one never holds when a shorter does not)
        middle = (low + high + 1) // 2
        if holds(middle * KV_LENGTH_STEP):
            low = middle
        else:
            high = middle - 1
    return low * KV_LENGTH_STEP if low else None


def kv_utilization_needed(target: MemoryTarget, shape: Shape, memory: MemoryBreakdown) -> float | None:
    """The gpu_memory_utilization that leaves room for one ``shape.sequence_length`` sequence, when
    that is at most :data:`MAX_UTILIZATION`."""
    length = shape.sequence_length
    margin = memory.kv_error_margin_fraction or 0.0
    per_token = (memory.kv_bytes_per_sequence or 0) / max(length, 1)
    missing = per_token * length / (1 - margin) - (memory.kv_cache_capacity_bytes or 0)
    visible, _ = torch_visible_bytes(target.instance)
    utilization = math.ceil((shape.gpu_memory_utilization + missing / visible) * 100) / 100
    # vLLM 0.10+ also refuses a request above what the device has free at start (LMI659)
    highest = min(MAX_UTILIZATION, startup_utilization_limit(target.instance))
    return utilization if utilization <= highest else None


def kv_wider_degree(target: MemoryTarget, shape: Shape) -> int | None:
    """The smallest TP (doubling) the judge lets run whose KV cache holds one sequence."""
    degree = shape.tensor_parallel_degree * 2
    while degree <= target.instance.num_cores:
        blocked = any(problem.blocking for problem in judge_tensor_parallel(target.parallel, degree))
        wider = estimate_memory(
            target.arch, target.instance, target.backend, shape._replace(tensor_parallel_degree=degree)
        )
        if not blocked and kv_capacity_verdict(wider, shape.sequence_length) is None:
            return degree
        degree *= 2
    return None
