"""The performance model's vocabulary: what it is asked about (a configuration and a workload) and
what it answers with (an itemized prediction, each figure with its terms and the bound that
dominates it)."""

from __future__ import annotations

from typing import NamedTuple

from lmi_config.knowledge.instances import Instance
from lmi_config.modelarch import ModelArch
from lmi_config.sizing.model import Shape


class Configuration(NamedTuple):
    """One model copy as the container runs it, and how many copies share the instance."""

    arch: ModelArch
    instance: Instance
    backend: str  # transformers-neuronx | nxdi | vllm | lmi-dist | tensorrt-llm (aliases accepted)
    tensor_parallel_degree: int
    max_concurrent_sequences: int  # batch (static) or max_rolling_batch_size / max_num_seqs
    sequence_length: int | None = None  # compiled / max_model_len; None: input + output
    pipeline_parallel_degree: int = 1
    weight_dtype: str = "bf16"  # dtype the weights are stored and multiplied in
    quantization: str | None = (
        None  # fp8, int8, awq ...: weight storage (and fp8 GEMMs where the device has them)
    )
    kv_dtype: str | None = None  # None: the weight dtype (fp8 KV reads half the bytes of bf16)
    copies: int = 1  # model copies on the instance (data parallel)
    gqa_strategy: str | None = None  # transformers-neuronx only, as sizing.kv_layout reads it
    batching: str = (
        "continuous"  # continuous (rolling batch, LMI's default) | static (a batch starts and ends together)
    )


def configuration_from_shape(
    arch: ModelArch, instance: Instance, backend: str, shape: Shape, copies: int = 1
) -> Configuration:
    """The configuration of a memory-model shape (what the judge and the planner hold), so that one
    candidate is sized and timed from the same numbers."""
    return Configuration(
        arch=arch,
        instance=instance,
        backend=backend,
        tensor_parallel_degree=shape.tensor_parallel_degree,
        max_concurrent_sequences=shape.batch_size,
        sequence_length=shape.sequence_length,
        pipeline_parallel_degree=shape.pipeline_parallel_degree,
        weight_dtype=shape.weight_dtype,
        quantization=shape.quantize,
        kv_dtype=shape.kv_cache_dtype if shape.kv_cache_dtype not in (None, "auto") else shape.kv_dtype,
        copies=copies,
        gqa_strategy=shape.gqa_strategy,
    )


class Workload(NamedTuple):
    """What the users send: tokens per request and how loaded the whole instance is.

    Both loads are the system's, as a benchmark or an endpoint states them: a closed loop of
    ``concurrency`` users (requests in flight at the instance), or an open loop of ``request_rate``
    requests/s arriving at it; either is spread evenly over the model copies."""

    input_tokens: int
    output_tokens: int
    concurrency: float | None = (
        None  # requests in flight at the instance; None: every slot of every copy busy
    )
    request_rate: float | None = None  # requests/s arriving at the instance (instead of a concurrency)


class Harness(NamedTuple):
    """What a benchmark's harness adds to the engine's own times, fitted per source and never part of
    an engine's constants (``scripts/fit_perf.py``); a prediction for a user's endpoint has none."""

    # the harness starts its users together (in waves), so a request waits for this share of the
    # other users' prefills on top of the engine's own queue
    burst_wait_fraction: float = 0.0


class Term(NamedTuple):
    """One item of a time: what it is, how long, and how it was counted."""

    name: str  # compute | weight reads | KV reads | collectives | fixed overhead | ...
    milliseconds: float
    note: str


class Phase(NamedTuple):
    """One predicted time with its items; ``bound`` names the item that dominates."""

    name: str
    milliseconds: float
    terms: tuple[Term, ...]
    bound: str


class Prediction(NamedTuple):
    """Predicted performance of one configuration under one workload."""

    engine_family: str  # neuron-tnx | neuron-nxd | gpu-vllm | gpu-trtllm
    batching: str  # static | continuous
    running_sequences: int  # sequences decoded together per copy serving requests
    ttft: Phase  # time to first token (prefill, with waiting for other prefills where batched)
    tpot: Phase  # time per output token after the first (one decode step)
    end_to_end_ms: float  # one request: TTFT + (output - 1) x TPOT
    output_tokens_per_second: float  # per instance (all copies)
    requests_per_second: float  # per instance
    notes: tuple[str, ...] = ()
    # under a request rate: the requests/s the instance completes -- the fewer of what it completes with
    # every slot busy and the prompts it prefills per second (None otherwise)
    capacity_requests_per_second: float | None = None
    overloaded: bool = False  # the rate cannot all be served: the queue grows without bound
    caveat: str | None = None  # where measured runs of this kind were far from the figures, how far
    # requests in flight at the instance, waiting or served: requests/s x end-to-end (Little's law)
    requests_in_flight: float = 0.0
    # the 99th percentile of TTFT over requests: the mean with the tails of its waits (a static batch:
    # the mean; see lmi_config.perf.model); 0.0 where a caller built a Prediction without one
    ttft_p99_ms: float = 0.0

    @property
    def ttft_ms(self) -> float:
        return self.ttft.milliseconds

    @property
    def tpot_ms(self) -> float:
        return self.tpot.milliseconds


class Efficiency(NamedTuple):
    """The fitted parameters of one engine family; each has a physical meaning and a unit."""

    prefill_flops_fraction: (
        float  # achieved share of peak dense FLOPS in the linear layers (prefill and decode)
    )
    attention_flops_fraction: (
        float  # achieved share of peak dense FLOPS in attention's score and value products
    )
    decode_bandwidth_fraction: float  # achieved share of HBM bandwidth reading weights and KV in decode
    step_overhead_ms: float  # fixed time per decode step (launches, scheduling, host sync)
    sequence_overhead_us: float  # time per running sequence per step that TP does not divide (sampling over the vocabulary, bookkeeping)
    collective_latency_us: float  # fixed latency of one all-reduce across the TP group
    request_overhead_ms: float  # fixed time before the first token (tokenize, schedule, return)
