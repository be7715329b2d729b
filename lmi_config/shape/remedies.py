"""What would make a judged shape run, searched by the judge itself: the longest sequence the model
and the KV cache hold, the gpu_memory_utilization or TP that leaves vLLM room for one sequence.

These are the alternatives findings offer as fixes; rules never compute them, so that no two
findings name different numbers for the same key.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from lmi_config.shape.parallelism import judge_tensor_parallel
from lmi_config.shape.sequence import model_sequence_limit
from lmi_config.sizing import estimate_memory
from lmi_config.sizing.gpu import kv_capacity_verdict
from lmi_config.sizing.vllm_release import torch_visible_bytes

if TYPE_CHECKING:
    from lmi_config.modelarch import ModelArch
    from lmi_config.shape.resources import MemoryTarget
    from lmi_config.sizing import MemoryBreakdown, Shape

KV_LENGTH_STEP = 256  # lengths offered are whole blocks of 256 tokens (vLLM's block sizes divide it)
MAX_UTILIZATION = 0.98  # above it vLLM leaves the CUDA context and other processes no room


def kv_longest_sequence(memory: MemoryBreakdown | None) -> int | None:
    """The longest max_model_len vLLM's KV cache holds outside the estimate's error margin (None:
    the breakdown has no KV capacity, as on Neuron)."""
    if memory is None or memory.kv_cache_tokens is None:
        return None
    margin = memory.kv_error_margin_fraction or 0.0
    return int(memory.kv_cache_tokens * (1 - margin)) // KV_LENGTH_STEP * KV_LENGTH_STEP


def longest_sequence_length(arch: ModelArch | None, memory: MemoryBreakdown | None) -> int | None:
    """The one longest sequence length for this model and memory: the model's limit and, on vLLM, the
    KV cache's — the number every finding about the length names."""
    limits = [
        limit
        for limit in (model_sequence_limit(arch) if arch else None, kv_longest_sequence(memory))
        if limit is not None and limit >= KV_LENGTH_STEP
    ]
    return min(limits) if limits else None


def kv_utilization_needed(target: MemoryTarget, shape: Shape, memory: MemoryBreakdown) -> float | None:
    """The gpu_memory_utilization that leaves room for one ``shape.sequence_length`` sequence, when
    that is at most :data:`MAX_UTILIZATION`."""
    length = shape.sequence_length
    margin = memory.kv_error_margin_fraction or 0.0
    per_token = (memory.kv_bytes_per_sequence or 0) / max(length, 1)
    missing = per_token * length / (1 - margin) - (memory.kv_cache_capacity_bytes or 0)
    visible, _ = torch_visible_bytes(target.instance)
    utilization = math.ceil((shape.gpu_memory_utilization + missing / visible) * 100) / 100
    return utilization if utilization <= MAX_UTILIZATION else None


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
