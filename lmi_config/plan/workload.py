"""The workload a plan is ranked for: tokens per request, requests in flight, and the limits a
user puts on latency and on the longest request. Its defaults are printed with every plan."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import NamedTuple

from lmi_config.arguments import count, optional_count, optional_positive_number, positive_number
from lmi_config.errors import InputError, InvalidArgument
from lmi_config.knowledge.perf_data import latency_targets
from lmi_config.perf import Workload

DEFAULT_INPUT_TOKENS = 1024
DEFAULT_OUTPUT_TOKENS = 256
SECONDS_PER_YEAR = 365 * 86_400
# below one request a year no prediction means anything (and 1e-320 requests/s made the cost per
# token overflow to infinity): such a rate is refused, not predicted
MIN_REQUEST_RATE = 1 / SECONDS_PER_YEAR


class LatencyTarget(NamedTuple):
    """The latency target a plan ranks within unless the user gives a limit or removes it
    (``data/latency_targets.json``, generated from MLPerf Inference LoadGen's ``mlperf.conf``)."""

    ttft_ms: float
    tpot_ms: float
    percentile: float  # of the requests: TTFT is compared at it (TPOT is a mean over a request's steps)
    benchmark: str
    source: str

    def describe(self) -> str:
        """Where the target comes from, as printed with a plan."""
        return (
            f"p{self.percentile:g} of requests, as MLPerf Inference's server scenario holds {self.benchmark}"
        )


@cache
def default_latency_target() -> LatencyTarget:
    """The default latency target: the data file's ``default`` benchmark."""
    document = latency_targets()
    entry = next(target for target in document["targets"] if target["benchmark"] == document["default"])
    return LatencyTarget(
        float(entry["ttft_ms"]),
        float(entry["tpot_ms"]),
        float(entry["percentile"]),
        str(entry["benchmark"]),
        str(entry["source"]),
    )


@dataclass(frozen=True)
class PlanWorkload:
    """What users send and what they will accept.

    ``concurrency`` is the requests in flight at the instance, spread over its copies; None means
    every sequence slot of every copy is busy (the throughput a saturated endpoint reaches) unless
    ``request_rate`` (requests/s arriving at the instance, shared by its copies) says how loaded it
    is instead; ``max_model_len`` is the longest request the configuration must serve, by default
    input + output tokens. ``max_ttft_ms`` / ``max_tpot_ms`` leave out the rows whose predicted
    (median) TTFT / TPOT break them; where one is not given, the default latency target
    (``latency_target``, held at its percentile of the requests: :func:`default_latency_target`)
    ranks the rows that break it after every row within it.
    """

    input_tokens: int = DEFAULT_INPUT_TOKENS
    output_tokens: int = DEFAULT_OUTPUT_TOKENS
    concurrency: int | None = None
    request_rate: float | None = None
    max_ttft_ms: float | None = None
    max_tpot_ms: float | None = None
    max_model_len: int | None = None
    latency_target: bool = True  # False: no default target where no limit is given

    def __post_init__(self) -> None:
        # a Python caller has no click in front: a NaN, a bool or a float where a count goes would
        # otherwise be ranked (NaN compares false with every limit) and predicted as NaN
        count("--input-tokens", self.input_tokens)
        count("--output-tokens", self.output_tokens)
        optional_count("--concurrency", self.concurrency)
        optional_count("--max-model-len", self.max_model_len)
        if not isinstance(self.latency_target, bool):
            raise InvalidArgument(f"latency_target must be True or False, not {self.latency_target!r}")
        if self.request_rate is not None:
            rate = positive_number("--request-rate", self.request_rate, unit="requests per second")
            if rate < MIN_REQUEST_RATE:
                raise InvalidArgument(
                    f"--request-rate {rate!r} is less than one request a year ({MIN_REQUEST_RATE:.3g} "
                    "requests/s): no endpoint is sized for so little, and no figure predicted for it would "
                    f"mean anything (its cost per token is beyond any number); give at least {MIN_REQUEST_RATE:.3g}"
                )
        if self.request_rate is not None and self.concurrency is not None:
            raise InputError(
                "give --concurrency (requests in flight per copy) or --request-rate (requests/s), not both"
            )
        for name, limit in (("--max-ttft-ms", self.max_ttft_ms), ("--max-tpot-ms", self.max_tpot_ms)):
            optional_positive_number(name, limit, unit="milliseconds")
        if self.max_model_len is not None and self.max_model_len < self.request_tokens:
            raise InputError(
                f"--max-model-len {self.max_model_len} is shorter than the workload's longest request "
                f"({self.input_tokens} input + {self.output_tokens} output = {self.request_tokens} tokens); "
                "raise it or lower --input-tokens / --output-tokens"
            )

    @property
    def request_tokens(self) -> int:
        """Tokens one request holds at its end: input + output."""
        return self.input_tokens + self.output_tokens

    @property
    def mean_request_tokens(self) -> int:
        """Tokens a running request holds on average while it decodes: its input and half its output."""
        return self.input_tokens + (self.output_tokens + 1) // 2

    @property
    def longest_request(self) -> int:
        """The sequence length every ranked configuration must serve."""
        return self.max_model_len or self.request_tokens

    def performance(self, copies: int = 1) -> Workload:
        """The performance model's view of the workload: the instance's load, which the model spreads
        over the ``copies`` (kept for callers that pass them; the load does not depend on them)."""
        del copies
        return Workload(self.input_tokens, self.output_tokens, self.concurrency, self.request_rate)

    def constraint_violations(
        self,
        ttft_ms: float,
        tpot_ms: float,
        capacity_requests_per_second: float | None = None,
        overloaded: bool = False,
    ) -> tuple[str, ...]:
        """The limits a predicted TTFT and TPOT break, as the options that set them, and a request
        rate the configuration cannot serve (``overloaded``, the performance model's verdict; its
        ``capacity_requests_per_second`` per instance)."""
        broken = []
        capacity = capacity_requests_per_second
        if self.request_rate is not None and overloaded:
            broken.append(
                f"--request-rate {self.request_rate:g} is more than the {capacity:.3g} requests/s it completes "
                "(the queue would grow without bound)"
                if capacity is not None and self.request_rate >= capacity
                else f"--request-rate {self.request_rate:g} is more than its sequence slots hold at that load "
                "(the queue would grow without bound)"
            )
        if self.max_ttft_ms is not None and ttft_ms > self.max_ttft_ms:
            broken.append(f"TTFT {ttft_ms:,.0f} ms over --max-ttft-ms {self.max_ttft_ms:g}")
        if self.max_tpot_ms is not None and tpot_ms > self.max_tpot_ms:
            broken.append(f"TPOT {tpot_ms:,.1f} ms over --max-tpot-ms {self.max_tpot_ms:g}")
        return tuple(broken)

    def target(self) -> tuple[float | None, float | None]:
        """(TTFT, TPOT) ms of the default latency target where the user gave no limit (None: a limit
        was given, which leaves out what breaks it, or the target was removed)."""
        if not self.latency_target:
            return None, None
        target = default_latency_target()
        return (
            target.ttft_ms if self.max_ttft_ms is None else None,
            target.tpot_ms if self.max_tpot_ms is None else None,
        )

    def target_misses(self, ttft_at_percentile_ms: float, tpot_ms: float) -> tuple[str, ...]:
        """What of the default latency target a predicted TTFT at the target's percentile (p99: the
        mean with its waits' tails) and TPOT break (such a row still ranks, after every row within)."""
        ttft, tpot = self.target()
        percentile = default_latency_target().percentile
        missed = []
        if ttft is not None and ttft_at_percentile_ms > ttft:
            missed.append(f"TTFT p{percentile:g} {ttft_at_percentile_ms:,.0f} ms over the target {ttft:g}")
        if tpot is not None and tpot_ms > tpot:
            missed.append(f"TPOT {tpot_ms:,.1f} ms over the target {tpot:g}")
        return tuple(missed)

    def target_edges(
        self, ttft_at_percentile_ms: float, tpot_ms: float, ttft_high: float | None, tpot_high: float | None
    ) -> tuple[str, ...]:
        """What of the default latency target a prediction meets by less than the model's error: the
        figure is within it, the high end of its interval (``*_high``: measured / predicted, 9 of 10
        sources left out) is not. Such a row ranks as within; plan says that a measurement decides."""
        ttft, tpot = self.target()
        edges = []
        for name, value, high, limit, digits in (
            (f"TTFT p{default_latency_target().percentile:g}", ttft_at_percentile_ms, ttft_high, ttft, 0),
            ("TPOT", tpot_ms, tpot_high, tpot, 1),
        ):
            if limit is not None and high is not None and value <= limit < value * high:
                edges.append(
                    f"{name} {value:,.{digits}f} ms, up to {value * high:,.{digits}f} within the model's error, "
                    f"against the target {limit:g}"
                )
        return tuple(edges)

    def describe_target(self) -> str:
        """The latency a plan ranks within, as printed with it."""
        ttft, tpot = self.target()
        limits = [
            f"{name} {value:g}"
            for name, value in (("--max-ttft-ms", self.max_ttft_ms), ("--max-tpot-ms", self.max_tpot_ms))
            if value is not None
        ]
        default = [
            f"{name} {value:g} ms" for name, value in (("TTFT", ttft), ("TPOT", tpot)) if value is not None
        ]
        if default:
            limits.append(
                f"default target {' and '.join(default)} ({default_latency_target().describe()}; rows over it "
                "rank after the rest; --max-ttft-ms / --max-tpot-ms set a limit on the median, "
                "--no-latency-target removes it)"
            )
        return ", ".join(limits) if limits else "no latency target (--no-latency-target)"

    def describe(self) -> str:
        """One line: the workload as ranked (printed with every plan)."""
        if self.request_rate is not None:
            busy = f"{self.request_rate:g} requests/s arriving at the instance"
        elif self.concurrency:
            busy = (
                f"{self.concurrency} request{'s' if self.concurrency != 1 else ''} in flight at the instance "
                "(spread over its copies)"
            )
        else:
            busy = "every sequence slot busy"
        return (
            f"workload: {self.input_tokens} input + {self.output_tokens} output tokens per request, {busy}; "
            f"every configuration serves {self.longest_request}-token requests; latency: {self.describe_target()}"
        )


def for_objective(workload: PlanWorkload, objective: str) -> PlanWorkload:
    """The workload an objective ranks by: ``latency`` without a concurrency or a request rate means
    one request at a time (the latency a user sees alone, not that of a saturated endpoint)."""
    if objective == "latency" and workload.concurrency is None and workload.request_rate is None:
        return replace(workload, concurrency=1)
    return workload


def default_workload(fixed_sequence_length: int | None = None) -> PlanWorkload:
    """Plan's default workload; shortened to fit a sequence length the user fixed (an explicit
    length wins over a default request), keeping a quarter of it for the output."""
    if fixed_sequence_length is None or fixed_sequence_length >= DEFAULT_INPUT_TOKENS + DEFAULT_OUTPUT_TOKENS:
        return PlanWorkload()
    output = max(min(DEFAULT_OUTPUT_TOKENS, fixed_sequence_length // 4), 1)
    return PlanWorkload(input_tokens=max(fixed_sequence_length - output, 1), output_tokens=output)
