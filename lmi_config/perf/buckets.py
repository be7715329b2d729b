"""The shapes transformers-neuronx compiles: a Neuron graph has fixed shapes, so the engine compiles
one graph per bucket and runs each request on the smallest bucket that holds it, padded up to it.

- decode (token generation) attends over a bucket of positions: from the smallest bucket, each the
  previous times the growth factor, up to the compiled sequence length, which is the last bucket;
- prefill (context encoding) buckets are, by default (no ``context_length_estimate``), each decode
  bucket floor-divided by the divisor: a prompt is padded up to the smallest that holds it.

The three numbers are read from transformers-neuronx's ``bucket.py`` and ``utils.py`` by
``scripts/gen_neuron_buckets.py`` into ``data/perf_devices.json`` (``engine_buckets``, with the
lines they come from). So a prompt one token past a bucket costs the next bucket's prefill, and a
decode step reads the KV cache of the whole bucket it runs in, not only of the tokens written so far.
"""

from __future__ import annotations

from functools import cache

from lmi_config.knowledge.perf_data import engine_buckets
from lmi_config.perf.devices import UnsupportedConfiguration

ENGINE = "transformers-neuronx"


@cache
def _facts() -> tuple[int, int, int]:
    facts = engine_buckets(ENGINE)
    if facts is None:
        raise UnsupportedConfiguration(f"no bucket facts for {ENGINE} in data/perf_devices.json")
    return facts["smallest_token_bucket"], facts["bucket_growth_factor"], facts["context_bucket_divisor"]


def token_buckets(sequence_length: int) -> list[int]:
    """Decode buckets: from the smallest, growing by the factor while below the compiled sequence
    length, then that length."""
    smallest, factor, _ = _facts()
    sizes = []
    size = smallest
    while size < sequence_length:
        sizes.append(size)
        size *= factor
    sizes.append(sequence_length)
    return sizes


def context_buckets(sequence_length: int) -> list[int]:
    """Prefill buckets by default: each decode bucket floor-divided by the divisor."""
    divisor = _facts()[2]
    return [max(size // divisor, 1) for size in token_buckets(sequence_length)]


def padded_prompt(input_tokens: int, sequence_length: int) -> int:
    """The prompt length prefill computes: the smallest context bucket that holds the prompt (a
    prompt longer than every bucket is counted as it is: how the engine splits it is not modelled)."""
    for size in context_buckets(sequence_length):
        if size >= input_tokens:
            return size
    return input_tokens


def mean_decode_bucket(input_tokens: int, output_tokens: int, sequence_length: int) -> float:
    """The mean number of positions a decode step attends over while a request generates
    ``output_tokens`` after ``input_tokens``: each step runs in the smallest bucket that holds the
    sequence so far (the last bucket where the sequence outgrows them all)."""
    first, last = input_tokens + 1, input_tokens + output_tokens  # attended lengths, inclusive
    total = 0
    lower = 0
    for size in token_buckets(sequence_length):
        start, stop = max(first, lower + 1), min(last, size)
        if stop >= start:
            total += (stop - start + 1) * size
        lower = size
    beyond = last - max(first, lower + 1) + 1
    if beyond > 0:
        total += beyond * sequence_length
    return total / output_tokens
