"""The performance model: one pure function from (configuration, workload) to TTFT, TPOT,
end-to-end latency, tokens/s and requests/s, each itemized by what it spends time on.

Physics (a roofline per phase, per TP group):

- a decode step reads every weight once and every running sequence's KV cache once, and does
  2 FLOPs per active parameter and token plus the attention over the context: its time is the
  larger of memory time and compute time, plus two all-reduces per layer across the TP group and a
  fixed per-step overhead; under continuous batching it also carries the prefill of the requests
  that arrive meanwhile (one per sequence every ``output_tokens`` steps);
- prefill (the first token) is compute: 2 FLOPs per parameter and token plus causal attention,
  plus its all-reduces and a fixed per-request overhead; a static batch prefills all its sequences
  before the first token, continuous batching makes a new request wait for part of the others'.

Bytes come from ``sizing`` (the same padded weights, replicated KV heads and dtype sizes as the
memory table), and so do a Neuron core's FLOPs: it multiplies every weight it holds, padded query
heads and replicated KV heads included; device facts from ``data/perf_devices.json``; the few efficiencies of each engine
family from ``data/perf_fit.json`` (``scripts/fit_perf.py``). No I/O beyond those data files.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from lmi_config.knowledge.models import architecture_family
from lmi_config.knowledge.perf_data import measured_caveats
from lmi_config.perf.buckets import ENGINES, mean_decode_bucket, padded_prompt
from lmi_config.perf.devices import (
    Device,
    UnsupportedConfiguration,
    device_for,
    engine_family,
    fitted_efficiency,
)
from lmi_config.perf.types import Configuration, Efficiency, Phase, Prediction, Term, Workload
from lmi_config.sizing import Shape, dtype_bytes, kv_layout
from lmi_config.sizing.gpu import kv_bytes_per_token
from lmi_config.sizing.gpu import weight_bytes as gpu_weight_bytes
from lmi_config.sizing.model import weights_bytes as neuron_weight_bytes

MS = 1e3
ACTIVATION_BYTES = 2  # all-reduce payloads are bf16/fp16 activations
FP8_NAMES = ("fp8", "fp8_e4m3", "fp8_e5m2", "fbgemm_fp8", "modelopt")  # methods that run FP8 GEMMs
FP4_NAMES = ("modelopt_fp4", "nvfp4")  # FP4 GEMMs where the device has them (Blackwell), else 16-bit
RATE_BISECTIONS = 40  # halvings of [0, slots]: the load under a request rate to ~1e-12 of the slots


class _Costs(NamedTuple):
    """What one TP group of one model copy moves and computes, independent of the engine."""

    family: str
    device: Device
    chips: float  # chips (or GPUs) one token's work is spread over
    tensor_parallel_degree: int
    weight_bytes: float  # every weight, as stored (padded, replicated, quantized)
    gathered_bytes: float  # of which the input embedding of an untied model: rows gathered, never read whole
    expert_bytes: float  # of which routed experts (MoE), read only where a token is routed
    routed_fraction: float  # experts per token / experts (1 for a dense model)
    kv_bytes_per_token: float  # K and V of one token, all layers, all ranks
    active_params: float  # layer parameters one token multiplies (MoE: the routed experts only)
    head_params: float  # the LM head: multiplied for every generated token, once per prompt
    attention_width: float  # layers x query heads x head size: attention FLOPs per token pair / 2
    layers: int
    hidden_size: int
    compute_dtype: str
    window: int | None  # sliding-window attention caps the context read


def predict(
    configuration: Configuration, workload: Workload, efficiency: Efficiency | None = None
) -> Prediction:
    """Predicted TTFT, TPOT, end-to-end latency, output tokens/s and requests/s per instance.

    ``efficiency`` overrides the fitted parameters (the fit script evaluates candidates with it).
    Raises :class:`UnsupportedConfiguration` when the device or the backend has no facts.
    """
    _check(configuration, workload)
    costs = _costs(configuration)
    caveat = _measured_caveat(configuration, costs.family)
    if caveat is not None and caveat["verdict"] == "refuse":
        # no figures rather than wrong ones (data/perf_caveats.json)
        raise UnsupportedConfiguration(
            f"a mixture of experts on {caveat['on']} ({costs.device.accelerator_name}) is not predicted "
            f"({_how_far(caveat)}); measure it with `lmi-config search`"
        )
    params = efficiency or fitted_efficiency(costs.family)
    if workload.request_rate is not None:
        prediction = _at_rate(configuration, workload, costs, params, workload.request_rate)
    else:
        slots = configuration.max_concurrent_sequences
        prediction = _at_load(configuration, workload, costs, params, workload.concurrency or slots)
    if caveat is not None:
        prediction = prediction._replace(
            caveat=f"a mixture of experts on {caveat['on']} is predicted too fast: {_how_far(caveat)}; "
            "measure before relying on them"
        )
    return prediction


def _measured_caveat(configuration: Configuration, family: str) -> dict[str, Any] | None:
    """Where measured runs of this layout on this engine family were far from the figures, if they were."""
    if not configuration.arch.num_experts:
        return None
    return next((entry for entry in measured_caveats() if family in entry["families"]), None)


def _how_far(caveat: dict[str, Any]) -> str:
    """How far measured runs were from the figures, as the data file states it."""
    ttft, tpot = (f"{low:g}-{high:g}x" for low, high in (caveat["ttft_ratio"], caveat["tpot_ratio"]))
    return (
        f"measured runs ({caveat['measured']}) took {ttft} the predicted TTFT and {tpot} the TPOT "
        f"({caveat['statistic']})"
    )


def _at_load(
    configuration: Configuration,
    workload: Workload,
    costs: _Costs,
    params: Efficiency,
    in_flight: float,
    arrivals: float | None = None,
) -> Prediction:
    """The prediction with ``in_flight`` requests per copy (a mean: fractional under a request rate);
    ``arrivals`` (requests/s per copy) when they arrive spread out at that rate, else a closed loop."""
    static = configuration.batching == "static"
    slots = configuration.max_concurrent_sequences
    # a request is never served faster than alone; an arrival sees the others in flight (PASTA)
    running = min(max(in_flight, 1.0) if arrivals is not None else in_flight, slots)
    context, prompt = _compiled_lengths(configuration, costs, workload)
    tpot = _decode_step(costs, params, running, context, workload, static, slots)
    ttft = _first_token(
        costs, params, running, prompt, static, _decoding_ms(tpot), arrivals, min(in_flight, slots)
    )
    end_to_end = ttft.milliseconds + max(workload.output_tokens - 1, 0) * tpot.milliseconds
    notes = []
    if prompt != workload.input_tokens:
        notes.append(
            f"prefill computes the {workload.input_tokens}-token prompt padded to its {prompt}-token bucket"
        )
    if in_flight > slots:
        # Little's law: requests beyond the slots wait for a slot to free
        wait = (in_flight - slots) / slots * end_to_end
        ttft = ttft._replace(
            milliseconds=ttft.milliseconds + wait,
            terms=(
                *ttft.terms,
                Term("queueing", wait, f"{_count(in_flight - slots)} requests wait for {slots} slots"),
            ),
        )
        ttft = ttft._replace(bound=_dominant(ttft.terms))
        notes.append(f"concurrency {_count(in_flight)} is above the {slots} sequences a copy runs at once")
        end_to_end += wait
    per_copy = running * workload.output_tokens / (end_to_end / MS) if end_to_end > 0 else 0.0
    tokens_per_second = per_copy * configuration.copies
    if configuration.pipeline_parallel_degree > 1:
        notes.append("pipeline stages are counted one after the other (no micro-batch overlap)")
    return Prediction(
        engine_family=costs.family,
        batching="static" if static else "continuous",
        running_sequences=math.ceil(running),
        ttft=ttft,
        tpot=tpot,
        end_to_end_ms=end_to_end,
        output_tokens_per_second=tokens_per_second,
        requests_per_second=tokens_per_second / max(workload.output_tokens, 1),
        notes=tuple(notes),
    )


def _at_rate(
    configuration: Configuration, workload: Workload, costs: _Costs, params: Efficiency, rate: float
) -> Prediction:
    """The prediction when requests arrive at ``rate`` per second per copy: the mean number in flight
    is the rate times the request latency at that load (Little's law), found by bisection since the
    latency grows with the load; a request alone is never faster than at one in flight. The capacity
    is the fewer of what a copy completes with every slot busy and the prompts it prefills per
    second; a rate at or above it, or one whose load would not fit the slots, is overloaded: its
    queue grows without bound."""
    slots = configuration.max_concurrent_sequences
    copies = configuration.copies
    full = _at_load(configuration, workload, costs, params, slots)
    # the fewer of what a copy completes with every slot busy and the prompts it can prefill per second
    prompt = _compiled_lengths(configuration, costs, workload)[1]
    capacity = min(
        slots / (full.end_to_end_ms / MS) if full.end_to_end_ms > 0 else math.inf,
        1 / _prefill_seconds(costs, params, prompt),
    )

    def latency_s(in_flight: float) -> float:
        load = _at_load(configuration, workload, costs, params, in_flight, rate)
        return load.end_to_end_ms / MS

    if rate < capacity and rate * latency_s(slots) <= slots:
        low, high = 0.0, float(slots)
        for _ in range(RATE_BISECTIONS):
            middle = (low + high) / 2
            low, high = (middle, high) if rate * latency_s(middle) > middle else (low, middle)
        prediction = _at_load(configuration, workload, costs, params, high, rate)
    else:
        # what arrives cannot all be served: the queue grows without bound
        why = (
            f"the {capacity * copies:.3g} the instance completes"
            if rate >= capacity
            else f"its {slots} sequence slots per copy hold at that load"
        )
        note = f"{rate * copies:g} requests/s are more than {why}: the queue grows without bound"
        return full._replace(
            notes=(*full.notes, note),
            capacity_requests_per_second=capacity * copies,
            overloaded=True,
        )
    completed = rate * copies
    return prediction._replace(
        output_tokens_per_second=completed * workload.output_tokens,
        requests_per_second=completed,
        notes=(
            *prediction.notes,
            f"at {completed:g} requests/s, {high * copies:.1f} are in flight on average (Little's law)",
        ),
        capacity_requests_per_second=capacity * copies,
    )


def _count(number: float) -> str:
    """A count as printed: whole numbers without decimals, a mean load with one."""
    return f"{number:.0f}" if float(number).is_integer() else f"{number:.1f}"


def _check(configuration: Configuration, workload: Workload) -> None:
    if configuration.tensor_parallel_degree < 1 or configuration.pipeline_parallel_degree < 1:
        raise UnsupportedConfiguration("tensor and pipeline parallel degrees must be at least 1")
    if configuration.max_concurrent_sequences < 1 or configuration.copies < 1:
        raise UnsupportedConfiguration("max concurrent sequences and copies must be at least 1")
    if workload.input_tokens < 1 or workload.output_tokens < 1:
        raise UnsupportedConfiguration("a request needs at least one input and one output token")
    if workload.concurrency is not None and workload.concurrency < 1:
        raise UnsupportedConfiguration("concurrency must be at least 1")
    if workload.request_rate is not None and not (0 < workload.request_rate < math.inf):
        raise UnsupportedConfiguration("a request rate must be a positive number of requests per second")
    if workload.request_rate is not None and workload.concurrency is not None:
        raise UnsupportedConfiguration("give a concurrency or a request rate, not both")


def _compiled_lengths(configuration: Configuration, costs: _Costs, workload: Workload) -> tuple[float, int]:
    """(positions a decode step attends over on average, prompt tokens prefill computes).

    A Neuron engine runs every step on a compiled bucket (``perf/buckets.py``): decode reads the KV
    cache of the whole bucket and prefill computes the prompt padded up to its bucket. Engines with
    paged attention read only the tokens written so far; a sliding window caps them."""
    sequence_length = configuration.sequence_length
    engine = ENGINES.get(costs.family)
    if engine is not None and sequence_length:
        return (
            mean_decode_bucket(workload.input_tokens, workload.output_tokens, sequence_length, engine),
            padded_prompt(workload.input_tokens, sequence_length, engine),
        )
    context = workload.input_tokens + workload.output_tokens / 2
    if costs.window:
        context = min(context, costs.window)
    return context, workload.input_tokens


def _costs(configuration: Configuration) -> _Costs:
    arch = configuration.arch
    instance = configuration.instance
    family = engine_family(configuration.backend, instance)
    device = device_for(instance)
    tp = configuration.tensor_parallel_degree
    neuron = instance.accelerator == "neuron"
    sequence = configuration.sequence_length or 1
    shape = Shape(
        tensor_parallel_degree=tp,
        batch_size=configuration.max_concurrent_sequences,
        sequence_length=sequence,
        weight_dtype=configuration.weight_dtype,
        kv_dtype=configuration.kv_dtype or configuration.weight_dtype,
        quantize=configuration.quantization,
        gqa_strategy=configuration.gqa_strategy,
        pipeline_parallel_degree=configuration.pipeline_parallel_degree,
        kv_cache_dtype=configuration.kv_dtype,
    )
    if neuron:
        sizing_backend = "transformers-neuronx" if family == "neuron-tnx" else "nxdi"
        _, padded, kv_per_core = kv_layout(arch, tp, sizing_backend, configuration.gqa_strategy)
        weights, _ = neuron_weight_bytes(arch, shape, padded, kv_per_core, neuron=True)
        # every core multiplies the weights it holds: padded query heads and replicated KV heads
        # are computed as well as stored (the same layout the memory table sizes)
        unpadded, _ = neuron_weight_bytes(
            arch, shape, arch.num_attention_heads, arch.num_key_value_heads / tp, neuron=True
        )
        stored_share = weights / max(unpadded, 1)
        kv_token = 2 * arch.num_layers * kv_per_core * tp * arch.head_dim * dtype_bytes(shape.kv_dtype)
        # a logical NeuronCore is 1/cores_per_device of a chip (LNC=2 on trn2: a quarter)
        chips = tp / instance.cores_per_device
        heads = padded
    else:
        weights = gpu_weight_bytes(arch, shape)[0]
        kv_token = kv_bytes_per_token(arch, shape._replace(pipeline_parallel_degree=1)) * tp
        chips = float(tp)
        heads = arch.num_attention_heads
        stored_share = 1.0
    experts = _expert_params(configuration)
    bytes_per_weight = weights / max(arch.total_params, 1)
    # the input embedding is a lookup (a few rows gathered), the LM head a matmul; tied, one matrix is both
    head = arch.vocab_size * arch.hidden_size
    gathered = 0.0 if arch.tie_word_embeddings else head * dtype_bytes(configuration.weight_dtype)
    quantized = (configuration.quantization or "").strip().lower()
    compute_dtype = (
        "fp8"
        if quantized in FP8_NAMES
        else "fp4"
        if quantized in FP4_NAMES
        else configuration.weight_dtype.lower()
    )
    return _Costs(
        family=family,
        device=device,
        chips=chips,
        tensor_parallel_degree=tp,
        weight_bytes=float(weights),
        gathered_bytes=gathered,
        expert_bytes=experts * bytes_per_weight,
        routed_fraction=_routed_fraction(configuration),
        kv_bytes_per_token=float(kv_token),
        active_params=max(_active_params(configuration, experts) - arch.embedding_params, 0) * stored_share,
        head_params=float(head),
        attention_width=float(arch.num_layers * heads * arch.head_dim),
        layers=arch.num_layers,
        hidden_size=arch.hidden_size,
        compute_dtype="bf16" if compute_dtype in ("bfloat16", "auto") else compute_dtype,
        window=arch.sliding_window if family != "neuron-tnx" else None,
    )


def _expert_params(configuration: Configuration) -> float:
    """Parameters of the routed experts (0 for a dense model)."""
    arch = configuration.arch
    if not arch.num_experts:
        return 0.0
    gated = arch.model_type in architecture_family("gated_mlp")
    width = arch.moe_intermediate_size or arch.intermediate_size
    return float(arch.num_layers * arch.num_experts * (3 if gated else 2) * arch.hidden_size * width)


def _routed_fraction(configuration: Configuration) -> float:
    arch = configuration.arch
    if not arch.num_experts:
        return 1.0
    return min(arch.experts_per_token or 1, arch.num_experts) / arch.num_experts


def _active_params(configuration: Configuration, experts: float) -> float:
    return configuration.arch.total_params - experts * (1 - _routed_fraction(configuration))


def _flops_seconds(costs: _Costs, params: Efficiency, linear: float, attention: float = 0.0) -> float:
    """Seconds for FLOPs in the linear layers and in attention, each at its achieved share of peak
    (FP4 weights leave attention to run in FP8 at most: their KV cache is 8-bit)."""
    peak = costs.device.flops(costs.compute_dtype) * costs.chips
    attention_peak = (
        costs.device.flops("fp8" if costs.compute_dtype == "fp4" else costs.compute_dtype) * costs.chips
    )
    if peak <= 0 or attention_peak <= 0:
        return math.inf
    return linear / (peak * params.prefill_flops_fraction) + attention / (
        attention_peak * params.attention_flops_fraction
    )


def _bytes_seconds(costs: _Costs, params: Efficiency, size: float) -> float:
    rate = costs.device.memory_bandwidth_bytes_per_second * costs.chips * params.decode_bandwidth_fraction
    return size / rate if rate > 0 else math.inf


def _all_reduces_seconds(costs: _Costs, params: Efficiency, tp: int, tokens: float) -> tuple[float, str]:
    """Two all-reduces per layer (attention output, MLP output) across the TP group."""
    if tp <= 1:
        return 0.0, "TP 1: no all-reduce"
    count = 2 * costs.layers
    payload = tokens * costs.hidden_size * ACTIVATION_BYTES
    link = costs.device.interconnect_bytes_per_second
    transfer = 2 * (tp - 1) / tp * payload / link if link else 0.0
    seconds = count * (params.collective_latency_us / 1e6 + transfer)
    how = f"{count} all-reduces x ({params.collective_latency_us:.0f} us"
    how += (
        f" + {payload / 1e6:.2f} MB over {costs.device.interconnect})" if link else ", bandwidth not stated)"
    )
    return seconds, how


def _decode_step(
    costs: _Costs,
    params: Efficiency,
    running: float,
    context: float,
    workload: Workload,
    static: bool,
    slots: int,
) -> Phase:
    """One decode step of the running sequences. A Neuron graph has a fixed batch: its step computes
    and reads the KV cache of every compiled slot, busy or not; a GPU engine only the running ones."""
    tp = costs.tensor_parallel_degree
    rows = max(running, slots) if costs.family in ENGINES else running
    # the share of experts at least one running sequence is routed to (uniform routing)
    touched = 1 - (1 - costs.routed_fraction) ** running if costs.expert_bytes else 1.0
    weights = costs.weight_bytes - costs.gathered_bytes - costs.expert_bytes * (1 - touched)
    weight_s = _bytes_seconds(costs, params, weights)
    kv_s = _bytes_seconds(costs, params, rows * context * costs.kv_bytes_per_token)
    linear_flops = rows * 2 * (costs.active_params + costs.head_params)
    attention_flops = rows * 4 * costs.attention_width * context
    flops = linear_flops + attention_flops
    compute_s = _flops_seconds(costs, params, linear_flops, attention_flops)
    collectives_s, collectives_note = _all_reduces_seconds(costs, params, tp, rows)
    memory_s = weight_s + kv_s
    overlapped = compute_s <= memory_s
    terms = [
        Term("weight reads", weight_s * MS if overlapped else 0.0, f"{weights / 1e9:.2f} GB of weights"),
        Term(
            "KV reads",
            kv_s * MS if overlapped else 0.0,
            f"{_count(rows)} {'compiled slots' if rows > running else 'sequences'} x {context:.0f} tokens",
        ),
        Term(
            "compute",
            0.0 if overlapped else compute_s * MS,
            f"{flops / 1e12:.2f} TFLOP" + (" (overlapped with the memory reads)" if overlapped else ""),
        ),
        Term("collectives", collectives_s * MS, collectives_note),
        Term("fixed overhead", params.step_overhead_ms, "per decode step (fitted)"),
        Term(
            "per-sequence overhead",
            running * params.sequence_overhead_us / 1e3,
            f"{_count(running)} sequences x {params.sequence_overhead_us:.0f} us (sampling, bookkeeping; fitted)",
        ),
    ]
    if not static:
        share = running / workload.output_tokens  # prompts prefilled per step
        prefill_s = _flops_seconds(costs, params, *_prefill_flops(costs, workload.input_tokens)) * share
        terms.append(
            Term(
                "prefill of arriving requests",
                prefill_s * MS,
                f"{share * workload.input_tokens:.1f} prompt tokens per step",
            )
        )
    return _phase("TPOT", terms)


def _prefill_flops(costs: _Costs, tokens: int) -> tuple[float, float]:
    """(linear, attention) FLOPs of one prompt: 2 per active layer parameter and token, the LM head for
    the last token only; causal attention (QK and PV, half the square)."""
    return 2 * (costs.active_params * tokens + costs.head_params), 2 * costs.attention_width * tokens * tokens


def _decoding_ms(tpot: Phase) -> float:
    """The time of a decode step of the running sequences alone (without the prefill it carries)."""
    return sum(term.milliseconds for term in tpot.terms if term.name != "prefill of arriving requests")


def _first_token(
    costs: _Costs,
    params: Efficiency,
    running: float,
    tokens: int,
    static: bool,
    step_ms: float,
    arrivals: float | None = None,
    others: float = 0.0,
) -> Phase:
    """Prefill, its all-reduces and the fixed overhead; under continuous batching also the wait for
    the step in progress and for the prefills ahead. In a closed loop (a benchmark's fixed number of
    users, fitted) that wait grows with the requests in flight; when requests arrive spread out at
    ``arrivals`` per second it is a single server's queue (M/D/1): at utilisation rho = arrivals x
    prefill time, a mean wait of rho / (2 (1 - rho)) prefill times, unbounded at rho >= 1; and the
    step in progress only as often as ``others`` (the mean others in flight an arrival sees) are."""
    tp = costs.tensor_parallel_degree
    one_s = _flops_seconds(costs, params, *_prefill_flops(costs, tokens))
    weight_s = _bytes_seconds(costs, params, costs.weight_bytes - costs.gathered_bytes)
    collectives_s, collectives_note = _all_reduces_seconds(costs, params, tp, tokens)
    sequences = running if static else 1
    compute_s = max(one_s, weight_s) * sequences
    bound_name = "compute" if one_s >= weight_s else "weight reads"
    terms = [
        Term(bound_name, compute_s * MS, f"{_count(sequences)} x {tokens} prompt tokens"),
        Term("collectives", collectives_s * sequences * MS, collectives_note),
        Term("fixed overhead", params.request_overhead_ms, "per request (fitted)"),
    ]
    if not static and arrivals is not None:
        prefill_s = _prefill_seconds(costs, params, tokens)
        rho = arrivals * prefill_s
        wait_s = rho * prefill_s / (2 * (1 - rho)) if rho < 1 else math.inf
        terms.append(
            Term(
                "waiting for other prefills",
                wait_s * MS,
                f"queue of prefills at utilisation {rho:.2f} (M/D/1)",
            )
        )
        # a decode step is in progress as often as others are in flight (at most always)
        busy = min(others, 1.0)
        terms.append(
            Term("step in progress", busy * step_ms / 2, f"half a decode step, {busy:.0%} of the time")
        )
    elif not static and running > 1:
        wait_s = params.prefill_wait_fraction * (running - 1) * (one_s + collectives_s)
        terms.append(
            Term("waiting for other prefills", wait_s * MS, f"{_count(running - 1)} other requests in flight")
        )
        # a request that arrives while the others decode waits, on average, for half a step
        terms.append(Term("step in progress", step_ms / 2, "half a decode step of the running sequences"))
    return _phase("TTFT", terms)


def _prefill_seconds(costs: _Costs, params: Efficiency, tokens: int) -> float:
    """One prompt's prefill and its all-reduces: the service time of the prefill queue."""
    collectives_s, _ = _all_reduces_seconds(costs, params, costs.tensor_parallel_degree, tokens)
    return _flops_seconds(costs, params, *_prefill_flops(costs, tokens)) + collectives_s


def _phase(name: str, terms: list[Term]) -> Phase:
    return Phase(name, sum(term.milliseconds for term in terms), tuple(terms), _dominant(terms))


def _dominant(terms: tuple[Term, ...] | list[Term]) -> str:
    """The bound: memory bandwidth (weights + KV together), compute, collectives or an overhead."""
    groups: dict[str, float] = {}
    for term in terms:
        group = "memory bandwidth" if term.name in ("weight reads", "KV reads") else term.name
        groups[group] = groups.get(group, 0.0) + term.milliseconds
    return max(groups, key=lambda group: groups[group])
