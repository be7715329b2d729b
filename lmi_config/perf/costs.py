"""What one TP group of one model copy moves and computes, whatever the engine's efficiency: bytes
of weights and KV cache from ``sizing`` (padded query heads, replicated KV heads, quantized weights,
as the memory table sizes them), parameters multiplied per token, and the lengths a Neuron engine's
compiled buckets make a step attend over and a prompt compute."""

from __future__ import annotations

from typing import Any, NamedTuple

from lmi_config.knowledge.models import architecture_family
from lmi_config.perf.buckets import ENGINES, mean_decode_bucket, padded_prompt
from lmi_config.perf.devices import Device, device_for, engine_family
from lmi_config.perf.types import Configuration, Workload
from lmi_config.sizing import Shape, dtype_bytes, kv_layout
from lmi_config.sizing.gpu import kv_bytes_per_token
from lmi_config.sizing.gpu import weight_bytes as gpu_weight_bytes
from lmi_config.sizing.model import weights_bytes as neuron_weight_bytes

FP8_NAMES = ("fp8", "fp8_e4m3", "fp8_e5m2", "fbgemm_fp8", "modelopt")  # methods that run FP8 GEMMs
FP4_NAMES = ("modelopt_fp4", "nvfp4")  # FP4 GEMMs where the device has them (Blackwell), else 16-bit
CACHED_CONFIGURATIONS = 4096  # a fit predicts the same few hundred rows thousands of times


class Costs(NamedTuple):
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


_CACHE: dict[tuple[Any, ...], tuple[Any, Any, Costs]] = {}


def costs_of(configuration: Configuration) -> Costs:
    """The costs of a configuration (remembered: they do not depend on the fitted parameters, and a fit
    predicts the same rows thousands of times). An entry holds the architecture and instance it was
    computed for, so their ids cannot be reused by other objects while it is cached."""
    key = (id(configuration.arch), id(configuration.instance), *configuration[2:])
    found = _CACHE.get(key)
    if found is not None and found[0] is configuration.arch and found[1] is configuration.instance:
        return found[2]
    if len(_CACHE) >= CACHED_CONFIGURATIONS:
        _CACHE.clear()
    computed = _computed(configuration)
    _CACHE[key] = (configuration.arch, configuration.instance, computed)
    return computed


def _computed(configuration: Configuration) -> Costs:
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
    return Costs(
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


def compiled_lengths(configuration: Configuration, costs: Costs, workload: Workload) -> tuple[float, int]:
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
