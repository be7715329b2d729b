"""The shapes a Neuron engine compiles: a Neuron graph has fixed shapes, so the engine compiles one
graph per bucket and runs each request on the smallest bucket that holds it, padded up to it.

- transformers-neuronx: decode (token generation) buckets grow from the smallest by a factor up to the
  compiled sequence length, which is the last bucket; prefill (context encoding) buckets are, by default
  (no ``context_length_estimate``), each decode bucket floor-divided by a divisor;
- NxD Inference: both kinds are powers of the factor from their smallest bucket, stopped at the
  rounded log2 of the compiled length (so no bucket sits just below it), then that length; without
  bucketing (NxD Inference's own default; the vLLM that serves it turns it on) one bucket, the length.

The facts are read from each engine's source by ``scripts/gen_neuron_buckets.py`` into
``data/perf_devices.json`` (``engine_buckets``, with the lines they come from). So a prompt one token
past a bucket costs the next bucket's prefill, and a decode step reads the KV cache of the whole
bucket it runs in, not only of the tokens written so far.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

from lmi_config.knowledge.perf_data import engine_buckets
from lmi_config.perf.devices import UnsupportedConfiguration

TNX = "transformers-neuronx"
NXDI = "neuronx-distributed-inference"
ENGINES = {"neuron-tnx": TNX, "neuron-nxd": NXDI}  # engine family -> the engine whose buckets it runs


@cache
def _facts(engine: str) -> dict[str, Any]:
    facts = engine_buckets(engine)
    if facts is None:
        raise UnsupportedConfiguration(f"no bucket facts for {engine} in data/perf_devices.json")
    return facts


def _powers(smallest: int, length: int, facts: dict[str, Any]) -> list[int]:
    """NxD Inference's ``generate_buckets(smallest, length)``."""
    if smallest >= length:
        return [length]
    factor = facts["bucket_growth_factor"]
    exponent = math.log2(length) / math.log2(factor)
    rule = facts["last_bucket_rounding"]
    high = (
        round(exponent)
        if rule == "round"
        else math.floor(exponent)
        if rule == "floor"
        else math.ceil(exponent)
    )
    low = int(math.log2(smallest) / math.log2(factor))
    return [factor**exponent for exponent in range(low, high)] + [length]


def _nxdi_buckets(smallest_key: str, sequence_length: int) -> list[int]:
    """NxD Inference's buckets of one kind: one, the compiled length, when bucketing is off."""
    facts = _facts(NXDI)
    if not facts["bucketing_default"]:
        return [sequence_length]
    return _powers(facts[smallest_key], sequence_length, facts)


def token_buckets(sequence_length: int, engine: str = TNX) -> list[int]:
    """Decode buckets up to the compiled sequence length (the last one)."""
    if engine == NXDI:
        return _nxdi_buckets("smallest_token_bucket", sequence_length)
    facts = _facts(engine)
    sizes = []
    size = facts["smallest_token_bucket"]
    while size < sequence_length:
        sizes.append(size)
        size *= facts["bucket_growth_factor"]
    sizes.append(sequence_length)
    return sizes


def context_buckets(sequence_length: int, engine: str = TNX) -> list[int]:
    """Prefill buckets by default."""
    if engine == NXDI:
        return _nxdi_buckets("smallest_context_bucket", sequence_length)
    divisor = _facts(engine)["context_bucket_divisor"]
    return [max(size // divisor, 1) for size in token_buckets(sequence_length, engine)]


def padded_prompt(input_tokens: int, sequence_length: int, engine: str = TNX) -> int:
    """The prompt length prefill computes: the smallest context bucket that holds the prompt (a
    prompt longer than every bucket is counted as it is: how the engine splits it is not modelled)."""
    for size in context_buckets(sequence_length, engine):
        if size >= input_tokens:
            return size
    return input_tokens


def mean_decode_bucket(
    input_tokens: int, output_tokens: int, sequence_length: int, engine: str = TNX
) -> float:
    """The mean number of positions a decode step attends over while a request generates
    ``output_tokens`` after ``input_tokens``: each step runs in the smallest bucket that holds the
    sequence so far (the last bucket where the sequence outgrows them all)."""
    first, last = input_tokens + 1, input_tokens + output_tokens  # attended lengths, inclusive
    total = 0
    lower = 0
    for size in token_buckets(sequence_length, engine):
        start, stop = max(first, lower + 1), min(last, size)
        if stop >= start:
            total += (stop - start + 1) * size
        lower = size
    beyond = last - max(first, lower + 1) + 1
    if beyond > 0:
        total += beyond * sequence_length
    return total / output_tokens
