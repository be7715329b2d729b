"""The workload a plan is ranked for: tokens per request, requests in flight, and the limits a
user puts on latency and on the longest request. Its defaults are printed with every plan."""

from __future__ import annotations

from dataclasses import dataclass

from lmi_config.errors import InputError
from lmi_config.perf import Workload

DEFAULT_INPUT_TOKENS = 1024
DEFAULT_OUTPUT_TOKENS = 256


@dataclass(frozen=True)
class PlanWorkload:
    """What users send and what they will accept.

    ``concurrency`` None means every sequence slot of a copy is busy (the throughput a saturated
    endpoint reaches); ``max_model_len`` is the longest request the configuration must serve,
    by default input + output tokens.
    """

    input_tokens: int = DEFAULT_INPUT_TOKENS
    output_tokens: int = DEFAULT_OUTPUT_TOKENS
    concurrency: int | None = None
    max_ttft_ms: float | None = None
    max_tpot_ms: float | None = None
    max_model_len: int | None = None

    def __post_init__(self) -> None:
        if self.input_tokens < 1 or self.output_tokens < 1:
            raise InputError("--input-tokens and --output-tokens must be at least 1")
        if self.concurrency is not None and self.concurrency < 1:
            raise InputError("--concurrency must be at least 1")
        for name, limit in (("--max-ttft-ms", self.max_ttft_ms), ("--max-tpot-ms", self.max_tpot_ms)):
            if limit is not None and not limit > 0:
                raise InputError(f"{name} must be a positive number of milliseconds")
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
    def longest_request(self) -> int:
        """The sequence length every ranked configuration must serve."""
        return self.max_model_len or self.request_tokens

    def performance(self) -> Workload:
        """The performance model's view of the workload."""
        return Workload(self.input_tokens, self.output_tokens, self.concurrency)

    def constraint_violations(self, ttft_ms: float, tpot_ms: float) -> tuple[str, ...]:
        """The limits a predicted TTFT and TPOT break, as the options that set them."""
        broken = []
        if self.max_ttft_ms is not None and ttft_ms > self.max_ttft_ms:
            broken.append(f"TTFT {ttft_ms:,.0f} ms over --max-ttft-ms {self.max_ttft_ms:g}")
        if self.max_tpot_ms is not None and tpot_ms > self.max_tpot_ms:
            broken.append(f"TPOT {tpot_ms:,.1f} ms over --max-tpot-ms {self.max_tpot_ms:g}")
        return tuple(broken)

    def describe(self) -> str:
        """One line: the workload as ranked (printed with every plan)."""
        busy = (
            f"{self.concurrency} requests in flight per copy"
            if self.concurrency
            else "every sequence slot busy"
        )
        limits = [
            f"{name} {value:g}"
            for name, value in (("--max-ttft-ms", self.max_ttft_ms), ("--max-tpot-ms", self.max_tpot_ms))
            if value is not None
        ]
        return (
            f"workload: {self.input_tokens} input + {self.output_tokens} output tokens per request, {busy}; "
            f"every configuration serves {self.longest_request}-token requests"
            + (f"; {', '.join(limits)}" if limits else "")
        )


def default_workload(fixed_sequence_length: int | None = None) -> PlanWorkload:
    """Plan's default workload; shortened to fit a sequence length the user fixed (an explicit
    length wins over a default request), keeping a quarter of it for the output."""
    if fixed_sequence_length is None or fixed_sequence_length >= DEFAULT_INPUT_TOKENS + DEFAULT_OUTPUT_TOKENS:
        return PlanWorkload()
    output = max(min(DEFAULT_OUTPUT_TOKENS, fixed_sequence_length // 4), 1)
    return PlanWorkload(input_tokens=max(fixed_sequence_length - output, 1), output_tokens=output)
