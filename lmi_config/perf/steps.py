"""The roofline of one step of one TP group: a decode step (weights and KV cache read, or computed,
whichever is longer, plus all-reduces and overheads) and a prefill (2 FLOPs per parameter and token
plus causal attention), each as itemized terms, at the achieved shares of peak an engine family was
fitted to (``Efficiency``)."""

from __future__ import annotations

import math

from lmi_config.perf.buckets import ENGINES
from lmi_config.perf.costs import Costs
from lmi_config.perf.types import Efficiency, Phase, Term, Workload

MS = 1e3
ACTIVATION_BYTES = 2  # all-reduce payloads are bf16/fp16 activations


def count_text(number: float) -> str:
    """A count as printed: whole numbers without decimals, a mean load with one."""
    return f"{number:.0f}" if float(number).is_integer() else f"{number:.1f}"


def flops_seconds(costs: Costs, params: Efficiency, linear: float, attention: float = 0.0) -> float:
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


def bytes_seconds(costs: Costs, params: Efficiency, size: float) -> float:
    rate = costs.device.memory_bandwidth_bytes_per_second * costs.chips * params.decode_bandwidth_fraction
    return size / rate if rate > 0 else math.inf


def all_reduces_seconds(costs: Costs, params: Efficiency, tp: int, tokens: float) -> tuple[float, str]:
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


def decode_step(
    costs: Costs,
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
    weight_s = bytes_seconds(costs, params, weights)
    kv_s = bytes_seconds(costs, params, rows * context * costs.kv_bytes_per_token)
    linear_flops = rows * 2 * (costs.active_params + costs.head_params)
    attention_flops = rows * 4 * costs.attention_width * context
    flops = linear_flops + attention_flops
    compute_s = flops_seconds(costs, params, linear_flops, attention_flops)
    collectives_s, collectives_note = all_reduces_seconds(costs, params, tp, rows)
    memory_s = weight_s + kv_s
    overlapped = compute_s <= memory_s
    terms = [
        Term("weight reads", weight_s * MS if overlapped else 0.0, f"{weights / 1e9:.2f} GB of weights"),
        Term(
            "KV reads",
            kv_s * MS if overlapped else 0.0,
            f"{count_text(rows)} {'compiled slots' if rows > running else 'sequences'} x {context:.0f} tokens",
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
            f"{count_text(running)} sequences x {params.sequence_overhead_us:.0f} us (sampling, bookkeeping; fitted)",
        ),
    ]
    if not static:
        share = running / workload.output_tokens  # prompts prefilled per step
        prefill_s = flops_seconds(costs, params, *prefill_flops(costs, workload.input_tokens)) * share
        terms.append(
            Term(
                "prefill of arriving requests",
                prefill_s * MS,
                f"{share * workload.input_tokens:.1f} prompt tokens per step",
            )
        )
    return phase("TPOT", terms)


def prefill_flops(costs: Costs, tokens: int) -> tuple[float, float]:
    """(linear, attention) FLOPs of one prompt: 2 per active layer parameter and token, the LM head for
    the last token only; causal attention (QK and PV, half the square)."""
    return 2 * (costs.active_params * tokens + costs.head_params), 2 * costs.attention_width * tokens * tokens


def decoding_ms(tpot: Phase) -> float:
    """The time of a decode step of the running sequences alone (without the prefill it carries)."""
    return sum(term.milliseconds for term in tpot.terms if term.name != "prefill of arriving requests")


def first_token(costs: Costs, params: Efficiency, sequences: float, tokens: int) -> list[Term]:
    """The engine's own time to the first token of ``sequences`` prompts prefilled one after the other
    (1 under continuous batching; a static batch's whole batch): prefill, its all-reduces and the fixed
    overhead per request. The waits a loaded engine adds come from :mod:`lmi_config.perf.model`."""
    tp = costs.tensor_parallel_degree
    one_s = flops_seconds(costs, params, *prefill_flops(costs, tokens))
    weight_s = bytes_seconds(costs, params, costs.weight_bytes - costs.gathered_bytes)
    collectives_s, collectives_note = all_reduces_seconds(costs, params, tp, tokens)
    compute_s = max(one_s, weight_s) * sequences
    bound_name = "compute" if one_s >= weight_s else "weight reads"
    return [
        Term(bound_name, compute_s * MS, f"{count_text(sequences)} x {tokens} prompt tokens"),
        Term("collectives", collectives_s * sequences * MS, collectives_note),
        Term("fixed overhead", params.request_overhead_ms, "per request (fitted at one request)"),
    ]


def prefill_seconds(costs: Costs, params: Efficiency, tokens: int) -> float:
    """One prompt's prefill and its all-reduces: the service time of the prefill queue."""
    collectives_s, _ = all_reduces_seconds(costs, params, costs.tensor_parallel_degree, tokens)
    return flops_seconds(costs, params, *prefill_flops(costs, tokens)) + collectives_s


def phase(name: str, terms: list[Term]) -> Phase:
    return Phase(name, sum(term.milliseconds for term in terms), tuple(terms), dominant(terms))


def dominant(terms: tuple[Term, ...] | list[Term]) -> str:
    """The bound: memory bandwidth (weights + KV together), compute, collectives or an overhead."""
    groups: dict[str, float] = {}
    for term in terms:
        group = "memory bandwidth" if term.name in ("weight reads", "KV reads") else term.name
        groups[group] = groups.get(group, 0.0) + term.milliseconds
    return max(groups, key=lambda group: groups[group])
