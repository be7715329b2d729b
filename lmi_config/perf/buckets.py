"""The shapes transformers-neuronx compiles: a Neuron graph has fixed shapes, so the engine compiles
one graph per bucket and runs each request on the smallest bucket that holds it, padded up to it.

- decode (token generation) attends over a bucket of positions: powers of two from 128 up to the
  compiled sequence length, which is the last bucket (``bucket.token_sizes`` →
  ``utils.power_of_two_bucket_sizes(128, n_positions)``);
- prefill (context encoding) buckets are, by default, half of each decode bucket
  (``bucket.context_sizes`` when no ``context_length_estimate`` is given): a prompt is padded up to
  the smallest of them that holds it.

Source: https://github.com/aws-neuron/transformers-neuronx/blob/main/src/transformers_neuronx/bucket.py
(``token_sizes``, ``context_sizes``, ``find``) and ``utils.py`` (``power_of_two_bucket_sizes``).
So a prompt one token past a bucket costs the next bucket's prefill, and a decode step reads the KV
cache of the whole bucket it runs in, not only of the tokens written so far.
"""

from __future__ import annotations

SMALLEST_TOKEN_BUCKET = 128


def token_buckets(sequence_length: int) -> list[int]:
    """Decode buckets: powers of two from 128 below the compiled sequence length, then that length."""
    sizes = []
    size = SMALLEST_TOKEN_BUCKET
    while size < sequence_length:
        sizes.append(size)
        size *= 2
    sizes.append(sequence_length)
    return sizes


def context_buckets(sequence_length: int) -> list[int]:
    """Prefill buckets by default: half of each decode bucket."""
    return [max(size // 2, 1) for size in token_buckets(sequence_length)]


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
