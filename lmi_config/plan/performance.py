"""The predicted performance of a judged configuration under a workload, and the vLLM /
TensorRT-LLM batch a workload asks for.

Both come from the same numbers: the judge's shape and memory (``sizing``) and the performance
model (``perf.predict``). On a paged KV cache (vLLM, TensorRT-LLM) the sequences that run at once
are the fewer of max sequences and what the KV cache holds of the workload's requests; the rest
wait in the engine's queue.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from lmi_config.knowledge.engine_limits import CudaGraphBound
from lmi_config.perf import UnsupportedConfiguration, configuration_from_shape, predict
from lmi_config.perf.cost import usd_per_million_output_tokens
from lmi_config.perf.error import Interval, intervals
from lmi_config.plan.workload import PlanWorkload
from lmi_config.shape import Assessment
from lmi_config.sizing import MemoryBreakdown

CONTINUOUS_MODES = ("rolling", "async")
# engines whose KV cache is paged: max sequences is a scheduler limit, not memory reserved up front
PAGED_BACKENDS = ("vllm", "lmi-dist", "tensorrt-llm")


class Figures(NamedTuple):
    """What a configuration is predicted to do under the workload (per instance, all copies)."""

    ttft_ms: float
    tpot_ms: float
    end_to_end_ms: float
    output_tokens_per_second: float
    requests_per_second: float
    usd_per_million_tokens: float | None
    running_sequences: int  # sequences decoded together per copy
    tpot_bound: str  # what dominates a decode step
    ttft_bound: str
    # under a request rate: the requests/s the instance completes, and whether the rate is more
    capacity_requests_per_second: float | None = None
    overloaded: bool = False
    caveat: str | None = None  # how far measured runs of this kind were from the figures
    engine_family: str = ""  # whose cross-validated error the figures carry
    kv_sequences: int | None = None  # requests a paged KV cache holds at once, where fewer than the batch
    # the 99th percentile of TTFT over requests (the mean with its waits' tails): what the default
    # latency target is held at; 0.0 where built without one
    ttft_p99_ms: float = 0.0

    def interval(self, metric: str) -> Interval | None:
        """The error of one metric (ttft | tpot | throughput): measured / predicted, left out by source."""
        return intervals(self.engine_family).get(metric) if self.engine_family else None

    def ranges(self) -> dict[str, list[float]]:
        """Each figure's interval, as JSON carries it (cost from throughput's: $/M goes as its inverse)."""
        found: dict[str, list[float]] = {}
        for key, metric, value, digits in (
            ("ttft_ms", "ttft", self.ttft_ms, 1),
            ("tpot_ms", "tpot", self.tpot_ms, 2),
            ("output_tokens_per_second", "throughput", self.output_tokens_per_second, 1),
        ):
            interval = self.interval(metric)
            if interval is not None:
                found[key] = [round(bound, digits) for bound in interval.around(value)]
        throughput = self.interval("throughput")
        cost = self.usd_per_million_tokens
        if throughput is not None and cost is not None:
            found["usd_per_million_output_tokens"] = [
                round(cost / throughput.high, 4),
                round(cost / throughput.low, 4),
            ]
        return found

    def as_dict(self) -> dict[str, object]:
        """The figures as JSON carries them (rounded to what the model can tell)."""
        cost = self.usd_per_million_tokens
        return {
            "ttft_ms": round(self.ttft_ms, 1),
            "ttft_p99_ms": round(self.ttft_p99_ms, 1),
            "tpot_ms": round(self.tpot_ms, 2),
            "end_to_end_ms": round(self.end_to_end_ms, 1),
            "output_tokens_per_second": round(self.output_tokens_per_second, 1),
            "requests_per_second": round(self.requests_per_second, 3),
            "usd_per_million_output_tokens": round(cost, 4) if cost is not None else None,
            "running_sequences": self.running_sequences,
            "tpot_bound": self.tpot_bound,
            "ttft_bound": self.ttft_bound,
            "capacity_requests_per_second": (
                round(self.capacity_requests_per_second, 3)
                if self.capacity_requests_per_second is not None
                else None
            ),
            "overloaded": self.overloaded,
            "caveat": self.caveat,
            "engine_family": self.engine_family or None,
            "kv_cache_sequences": self.kv_sequences,
            # where 8 of 10 measurements fell when each source was left out of the fit
            "intervals": self.ranges(),
        }


def kv_sequences(memory: MemoryBreakdown | None, workload: PlanWorkload) -> int | None:
    """How many of the workload's requests a paged KV cache holds at once (None: not paged). A paged
    engine allocates blocks as a sequence grows, so the requests in flight hold their input and on
    average half their output (``benchmarks/kv_admission.py``: measured runs above that many queued,
    runs between it and the count at full length did not)."""
    if memory is None or memory.kv_cache_tokens is None:
        return None
    return max(memory.kv_cache_tokens // workload.mean_request_tokens, 1)


class BatchLimit(NamedTuple):
    """The largest batch worth asking the engine for, and why (a sentence for the batch's reason)."""

    batch: int
    why: str


def workload_batch(
    memory: MemoryBreakdown, workload: PlanWorkload, default: int, limit: BatchLimit | None
) -> tuple[int, str]:
    """Max sequences for a paged KV cache: what it holds of the workload's requests (a power of two,
    at most ``limit`` — vLLM's default CUDA-graph capture batch, past which it decodes eagerly, or
    TensorRT-LLM's tokens per step), never below the container's default — the engine queues what
    does not fit, so only a KV cache too small for one request would need less — and the reason."""
    held = kv_sequences(memory, workload) or 1
    tokens = f"{workload.mean_request_tokens} tokens (input + half the output)"
    if held <= default:
        return default, (
            f"the container's default {default}; the KV cache holds about {held} requests of {tokens} "
            "at once and the engine queues the rest"
        )
    power = 1 << (held.bit_length() - 1)
    cap = limit.batch if limit is not None else power
    batch = max(default, min(power, cap))
    capped = f" ({limit.why})" if limit is not None and power > cap else ""
    return batch, f"the KV cache holds about {held} requests of {tokens} at once{capped}"


def cuda_graph_limit(bound: CudaGraphBound | None) -> BatchLimit | None:
    """vLLM's default CUDA-graph capture batch as a batch limit."""
    if bound is None:
        return None
    nearest = "" if bound.stated_by_version else ", the nearest older version that states it"
    return BatchLimit(
        bound.max_capture_batch,
        f"the largest batch vLLM {bound.version}{nearest} captures a CUDA graph for by default: {bound.rule}",
    )


def predicted(
    assessment: Assessment, copies: int, workload: PlanWorkload, usd_per_hour: float | None
) -> Figures | str:
    """The predicted figures of a judged configuration, or why the model cannot predict them."""
    target = assessment.target
    shape = assessment.shape.sizing_shape()
    if shape is None or target.arch is None or target.instance is None:
        return "the shape is not complete"
    configuration = configuration_from_shape(target.arch, target.instance, target.backend, shape, copies)
    held = kv_sequences(assessment.memory, workload)
    running = min(shape.batch_size, held) if held is not None else shape.batch_size
    continuous = assessment.shape.batching.mode in CONTINUOUS_MODES
    configuration = configuration._replace(
        max_concurrent_sequences=max(running, 1), batching="continuous" if continuous else "static"
    )
    try:
        prediction = predict(configuration, workload.performance(copies))
    except UnsupportedConfiguration as error:
        return str(error)
    tokens = prediction.output_tokens_per_second
    figures = (
        prediction.ttft_ms,
        prediction.tpot_ms,
        prediction.end_to_end_ms,
        tokens,
        prediction.requests_per_second,
        prediction.capacity_requests_per_second or 0.0,
    )
    if not all(math.isfinite(figure) for figure in (*figures, prediction.ttft_p99_ms)):
        # no figure rather than Infinity or NaN, which JSON cannot carry and no table can rank
        return "the performance model gives no finite figure for this workload"
    return Figures(
        ttft_ms=prediction.ttft_ms,
        tpot_ms=prediction.tpot_ms,
        end_to_end_ms=prediction.end_to_end_ms,
        output_tokens_per_second=tokens,
        requests_per_second=prediction.requests_per_second,
        usd_per_million_tokens=(
            usd_per_million_output_tokens(usd_per_hour, tokens) if usd_per_hour is not None else None
        ),
        running_sequences=prediction.running_sequences,
        tpot_bound=prediction.tpot.bound,
        ttft_bound=prediction.ttft.bound,
        capacity_requests_per_second=prediction.capacity_requests_per_second,
        overloaded=prediction.overloaded,
        caveat=prediction.caveat,
        engine_family=prediction.engine_family,
        kv_sequences=held if held is not None and held < shape.batch_size else None,
        ttft_p99_ms=prediction.ttft_p99_ms,
    )


def describe_figures(figures: Figures) -> str:
    """One line: TTFT, TPOT, tokens/s and $/M tokens, each with its interval (from the rounded
    figures JSON carries, so that render's comment and explain print the same numbers)."""
    return describe_shown(figures.as_dict())


def describe_shown(shown: dict[str, Any]) -> str:
    """:func:`describe_figures` from the figures as JSON carries them (``Figures.as_dict``)."""
    ranges = shown.get("intervals") or {}

    def between(key: str, spec: str) -> str:
        found = ranges.get(key)
        return f" ({format(found[0], spec)}-{format(found[1], spec)})" if found else ""

    cost = shown["usd_per_million_output_tokens"]
    price = (
        f", ${cost:.3f}/M output tokens{between('usd_per_million_output_tokens', '.3f')}"
        if isinstance(cost, float)
        else ""
    )
    capacity = shown["capacity_requests_per_second"]
    headroom = f", {completes(capacity)}" if isinstance(capacity, float) else ""
    caveat = f" ({shown['caveat']})" if shown["caveat"] else ""
    return (
        f"TTFT {shown['ttft_ms']:,.0f} ms{between('ttft_ms', ',.0f')}, TPOT {shown['tpot_ms']:.1f} ms"
        f"{between('tpot_ms', '.1f')}, {shown['output_tokens_per_second']:,.0f} output tokens/s per instance"
        f"{between('output_tokens_per_second', ',.0f')}{price}{headroom}{caveat}"
    )


def describe_error(figures: Figures) -> str:
    """What the intervals are, for a note: where 8 of 10 measurements fell, each source left out."""
    parts = []
    for metric, name in (("ttft", "TTFT"), ("tpot", "TPOT"), ("throughput", "tokens/s")):
        interval = figures.interval(metric)
        if interval is not None:
            parts.append(f"{name} x{interval.low:.2f}-{interval.high:.2f} (from {interval.basis})")
    if not parts:
        return ""
    return (
        f"({figures.engine_family}): 8 of 10 measurements fell within the bracketed figures when each source was "
        "predicted by a fit that never saw it: " + ", ".join(parts)
    )


def completes(capacity: float) -> str:
    """What a copy set completes under a request rate, as plan's why column and the figures say it."""
    return f"completes up to {capacity:,.3g} requests/s"
