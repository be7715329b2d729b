"""The judge's verdict on NxD Inference's own start-up checks, as the djl-neuronx image's NxDI makes them.

Each judgement covers checks of ``data/nxd_checks.json`` (generated from the code of every NxD Inference
version a djl-neuronx image pins; ``data/nxd_check_coverage.json`` says which checks each covers). It
judges the NeuronConfig the configuration builds (``shape/nxd_config.py``: option.override_neuron_config
over vllm-neuronx's defaults over NxDI's), quotes NxDI's message with the values filled in and cites its
file and line at the version's tag. Each problem's ``check`` is the slug of the rule that reports it
(``rules/nxd.py``); errors block the planner like every other error of the judge. The checks of the
model itself (attention geometry, Mllama, config.json, LoRA) are in ``shape/nxd_model_checks.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lmi_config.shape.nxd_config import UNKNOWN, NxdConfig, nxd_config, truthy
from lmi_config.shape.nxd_model_checks import model_problems
from lmi_config.shape.nxd_refusals import (
    BUCKETS,
    KERNELS,
    QUANTIZATION,
    SPECULATION,
    check,
    integer_value,
    refusal,
    speculation_rule,
)

if TYPE_CHECKING:
    from lmi_config.configfile.canonical import CanonicalConfig
    from lmi_config.shape.dimensions import Target
    from lmi_config.shape.problems import Problem
    from lmi_config.shape.types import ContainerShape


def judge_nxd_checks(config: CanonicalConfig, target: Target, shape: ContainerShape) -> list[Problem]:
    """The start-up checks of the image's NxD Inference this configuration fails."""
    nxd = nxd_config(config, target, shape)
    if nxd is None:
        return []
    return [
        *_buckets(nxd),
        *_quantization(nxd),
        *_speculation(nxd),
        *_kernels(nxd),
        *model_problems(nxd, target),
    ]


# --- buckets above the lengths they are for (models/config.py:117, :122) ------------------------------


def _buckets(nxd: NxdConfig) -> list[Problem]:
    problems: list[Problem] = []
    pairs = (
        ("context_encoding_buckets", "max_context_length", "Context bucket"),
        ("token_generation_buckets", "max_length", "Token generation bucket"),
    )
    for buckets_name, length_name, hint in pairs:
        buckets, length = nxd.value(buckets_name), integer_value(nxd.value(length_name))
        if not isinstance(buckets, list) or not buckets or length is None:
            continue
        numbers = [integer_value(item) for item in buckets]
        if any(number is None for number in numbers):
            continue  # NxDI would fail otherwise (sorting or comparing), not at this check
        largest = max(number for number in numbers if number is not None)
        if largest <= length:
            continue
        found = check(BUCKETS, nxd, "models/config.py", "NeuronConfig.__init__", hint)
        problems += refusal(
            BUCKETS,
            nxd,
            [found],
            f"{nxd.said(buckets_name)} has a bucket of {largest}, longer than {nxd.said(length_name)}",
            {f"{buckets_name}[-1]": largest, buckets_name: largest, length_name: length},
            f"keep every bucket at most {length}, raise the length (option.n_positions), or remove {buckets_name} "
            "(NxD Inference then compiles powers of two up to the length)",
        )
    return problems


# --- quantization (models/config.py:130, :219, :240, :244; model_wrapper.py:508, :577) -----------------


def _quantization(nxd: NxdConfig) -> list[Problem]:
    problems: list[Problem] = []
    quantized = nxd.value("quantized")
    if truthy(nxd.value("rmsnorm_quantize_kernel_enabled")) and not truthy(
        nxd.value("quantized_mlp_kernel_enabled")
    ):
        found = check(QUANTIZATION, nxd, "models/config.py", "NeuronConfig.__init__", "rmsomrm")
        problems += refusal(
            QUANTIZATION,
            nxd,
            [found],
            f"{nxd.said('rmsnorm_quantize_kernel_enabled')} without quantized_mlp_kernel_enabled",
            {},
            "remove rmsnorm_quantize_kernel_enabled, or enable quantized_mlp_kernel_enabled with a quantized checkpoint",
        )
    if not truthy(quantized):
        return problems
    path = nxd.value("quantized_checkpoints_path")
    if path is None:
        function = "NeuronConfig.__init__" if quantized is True else "NeuronConfig._verify_quantized_config"
        found = check(QUANTIZATION, nxd, "models/config.py", function, "quantized_checkpoints_path")
        return problems + refusal(
            QUANTIZATION,
            nxd,
            [found],
            f"{nxd.said('quantized')} without quantized_checkpoints_path",
            {},
            "give quantized_checkpoints_path (the checkpoint NxD Inference's quantization step wrote), or remove "
            "quantized",
        )
    if truthy(nxd.value("quantized_mlp_kernel_enabled")) and nxd.value("quantization_dtype") != "f8e4m3":
        found = check(
            QUANTIZATION, nxd, "models/config.py", "NeuronConfig._verify_quantized_config", "f8e4m3"
        )
        problems += refusal(
            QUANTIZATION,
            nxd,
            [found],
            f"quantized_mlp_kernel_enabled with {nxd.said('quantization_dtype')}: the quantized MLP kernel takes "
            "only f8e4m3 weights",
            {},
            "set quantization_dtype to f8e4m3 (with a checkpoint quantized so), or remove quantized_mlp_kernel_enabled",
        )
    kind = nxd.value("quantization_type")
    names = nxd.facts["quantization_types"]["names"]
    if quantized is True and kind is not UNKNOWN and kind not in names:
        wrappers = [
            check(QUANTIZATION, nxd, "models/model_wrapper.py", "get_trace_callable"),
            check(QUANTIZATION, nxd, "models/model_wrapper.py", "DecoderModelInstance.load_module"),
        ]
        problems += refusal(
            QUANTIZATION,
            nxd,
            wrappers,
            f"{nxd.said('quantization_type')}: NxD Inference builds a quantized model only as "
            f"{' or '.join(names)} (neuronx-distributed's QuantizationType refuses another name before this)",
            {"quantization_type": kind},
            f"set quantization_type to {names[-1]} (NeuronConfig's default) or {names[0]}",
        )
    return problems


# --- speculation (config.py:152; application_base.py:222; model_base.py; model_wrapper.py; sampling.py) -


def _speculation(nxd: NxdConfig) -> list[Problem]:
    problems: list[Problem] = []
    length = integer_value(nxd.value("speculation_length"))
    if length and length > 0 and truthy(nxd.value("async")):
        rule, severity, route = speculation_rule(nxd, "speculation_length")
        found = [check(SPECULATION, nxd, "models/config.py", "NeuronConfig.__init__", "Speculative Decoding")]
        problems += refusal(
            rule,
            nxd,
            found,
            f"{nxd.said('speculation_length')} with {nxd.said('async')}{route}",
            {},
            "remove async from option.override_neuron_config (speculative decoding runs synchronously)",
            severity=severity,
        )
    fused = truthy(nxd.value("enable_fused_speculation")) or truthy(nxd.value("enable_eagle_speculation"))
    if fused and not nxd.speculation:
        which = (
            "enable_eagle_speculation"
            if truthy(nxd.value("enable_eagle_speculation"))
            else "enable_fused_speculation"
        )
        found = [
            check(
                SPECULATION, nxd, "models/application_base.py", "NeuronApplicationBase.checkpoint_loader_fn"
            )
        ]
        problems += refusal(
            SPECULATION,
            nxd,
            found,
            f"{nxd.said(which)} without a draft model: vllm-neuronx builds the fused model's draft "
            "(fused_spec_config) only for option.speculative_model; NxD Inference fails on the missing draft where "
            "NeuronBaseForCausalLM.enable_fused_spec reads fused_spec_config.draft_config (an AttributeError at "
            "model_base.py:1193), before its checkpoint loader asserts it",
            {},
            f"set option.speculative_model (and option.num_speculative_tokens), or remove {which}",
        )
    sampling = nxd.value("on_device_sampling_config")
    if fused and sampling is not UNKNOWN and not sampling:
        found = [
            check(SPECULATION, nxd, "modules/generation/sampling.py", "Sampler.__init__"),
            check(SPECULATION, nxd, "models/model_base.py", "NeuronFusedSpecModel._context_encoding_forward"),
        ]
        problems += refusal(
            SPECULATION,
            nxd,
            found,
            f"fused speculation with {nxd.said('on_device_sampling_config')}: the fused model samples on the device",
            {},
            "remove on_device_sampling_config from option.override_neuron_config (vllm-neuronx sets one)",
        )
    if truthy(nxd.value("is_medusa")) and sampling is not UNKNOWN and not sampling:
        found = [check(SPECULATION, nxd, "models/model_wrapper.py", "ModelWrapper.input_generator")]
        problems += refusal(
            SPECULATION,
            nxd,
            found,
            f"{nxd.said('is_medusa')} with {nxd.said('on_device_sampling_config')}",
            {},
            "remove on_device_sampling_config from option.override_neuron_config (vllm-neuronx sets one)",
        )
    medusa = integer_value(nxd.value("medusa_speculation_length"))
    buckets = nxd.value("buckets")
    if medusa and medusa > 0 and isinstance(buckets, list) and len(buckets) > 1:
        found = [check(SPECULATION, nxd, "models/model_wrapper.py", "get_bucket_model_config_from_tag")]
        problems += refusal(
            SPECULATION,
            nxd,
            found,
            f"{nxd.said('medusa_speculation_length')} with {len(buckets)} buckets ({nxd.said('buckets')}): "
            "the Medusa model is not bucketed",
            {"tag": "medusa_speculation_model"},
            "remove buckets from option.override_neuron_config (one bucket, the sequence length)",
        )
    return problems


# --- NKI kernels (modeling_llama.py:790, :303, :439; gqa.py:435; attention_base.py:200) ---------------


def _kernels(nxd: NxdConfig) -> list[Problem]:
    problems: list[Problem] = []
    model = nxd.model
    fused_residual = truthy(nxd.value("mlp_kernel_enabled")) and truthy(
        nxd.value("mlp_kernel_fuse_residual_add")
    )
    if (
        model is not None
        and model["file"].endswith("models/llama/modeling_llama.py")
        and fused_residual
        and truthy(nxd.value("sequence_parallel_enabled"))
    ):
        found = [
            check(KERNELS, nxd, "models/llama/modeling_llama.py", "NeuronLlamaDecoderLayer.forward"),
            check(
                KERNELS,
                nxd,
                "models/llama/modeling_llama.py",
                "NeuronLlamaMLP._kernel_enabled_quantized_mlp"
                if truthy(nxd.value("quantized_mlp_kernel_enabled"))
                else "NeuronLlamaMLP._kernel_enabled_mlp",
            ),
        ]
        problems += refusal(
            KERNELS,
            nxd,
            found,
            f"mlp_kernel_enabled with {nxd.said('mlp_kernel_fuse_residual_add')} and "
            f"{nxd.said('sequence_parallel_enabled')}: the context-encoding model is traced with sequence "
            "parallelism",
            {},
            "remove mlp_kernel_fuse_residual_add, or set sequence_parallel_enabled to False in "
            "option.override_neuron_config",
        )
    if model is not None and truthy(nxd.value("qkv_kernel_enabled")):
        forced = model["fused_qkv"]["value"]
        fused = forced if forced is not None else nxd.value("fused_qkv")
        if fused is not UNKNOWN and not fused:
            why = (
                f"{nxd.architecture}'s attention sets fused_qkv={forced} whatever the configuration "
                f"({model['fused_qkv']['source']})"
                if forced is not None
                else nxd.said("fused_qkv")
            )
            found = [check(KERNELS, nxd, "modules/attention/gqa.py", "GroupQueryAttention_QKV.forward")]
            fix = (
                "remove qkv_kernel_enabled (this model's attention has no fused QKV)"
                if forced is not None
                else "set fused_qkv to True, or remove qkv_kernel_enabled"
            )
            problems += refusal(KERNELS, nxd, found, f"{nxd.said('qkv_kernel_enabled')} with {why}", {}, fix)
    problems += _flash_attention_padding(nxd)
    return problems


def context_buckets(nxd: NxdConfig) -> list[int] | None:
    """The context-encoding buckets NxD Inference compiles (NeuronBaseForCausalLM.enable_context_encoding:
    context_encoding_buckets with bucketing, else powers of two from 128 to max_context_length)."""
    from math import log2

    length = integer_value(nxd.value("max_context_length"))
    if length is None or length <= 0:
        return None
    if not truthy(nxd.value("enable_bucketing")):
        return [length]
    written = nxd.value("context_encoding_buckets")
    if isinstance(written, list) and written and all(integer_value(item) for item in written):
        return sorted(int(item) for item in written)
    from lmi_config.knowledge.perf_data import engine_buckets

    # autobucketing.generate_buckets(smallest, length), read from NxDI's code into data/perf_devices.json
    facts = engine_buckets("neuronx-distributed-inference")
    if (
        facts is None
        or facts.get("bucket_growth_factor") != 2
        or facts.get("last_bucket_rounding") != "round"
    ):
        return None
    smallest = int(facts["smallest_context_bucket"])
    if smallest >= length:
        return [length]
    return [2**i for i in range(int(log2(smallest)), round(log2(length)))] + [length]


def _flash_attention_padding(nxd: NxdConfig) -> list[Problem]:
    padding, batch = nxd.value("padding_side"), integer_value(nxd.value("ctx_batch_size"))
    if nxd.model is None or padding is UNKNOWN or padding == "right" or batch is None or batch == 1:
        return []
    buckets = context_buckets(nxd) or []
    cores = integer_value(nxd.value("logical_neuron_cores")) or 1
    kernel = truthy(nxd.value("attn_kernel_enabled"))

    def flash(length: int) -> bool:  # NeuronAttentionBase.get_flash_attention_strategy
        if cores > 1:
            return length >= 1024 and length % 1024 == 0
        return length >= 4096 or (kernel and length >= 512)

    flashed = [length for length in buckets if flash(length)]
    if not flashed:
        return []
    found = [
        check(KERNELS, nxd, "modules/attention/attention_base.py", "NeuronAttentionBase.perform_prefill")
    ]
    return refusal(
        KERNELS,
        nxd,
        found,
        f"{nxd.said('padding_side')} with {nxd.said('ctx_batch_size')}: context encoding runs the flash-attention "
        f"kernel for the bucket{'s' if len(flashed) > 1 else ''} of {', '.join(map(str, flashed))} tokens, which "
        "ignores the attention mask and so takes left padding only for one sequence at a time",
        {},
        "remove padding_side (vllm-neuronx pads right), or set ctx_batch_size to 1",
    )
