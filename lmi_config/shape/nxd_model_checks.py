"""NxD Inference's start-up checks of the model itself, against the NeuronConfig the configuration builds.

The attention geometry every NxDI model builds (hidden_size a multiple of the heads; flash decoding's
heads and KV heads over TP); Mllama's own limits (its cross-attention's heads and replicated KV heads over
TP, one logical NeuronCore, no speculation, a known checkpoint format, its vision tower's heads); the MoE
models' GLU MLP; the dtype names NeuronConfig takes; the attributes each model's InferenceConfig requires
of config.json (through transformers' configuration class of its model type); and NxDI's LoRA serving
(``lora_config``). The facts are ``data/nxd_loader.json`` (scripts/gen_nxd_loader.py); what is judged here
is in ``shape/nxd_checks.py``'s module docstring.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lmi_config.shape.nxd_config import DRAFT_KEY, OVERRIDE_KEY, UNKNOWN, NxdConfig, raw_model_config, truthy
from lmi_config.shape.nxd_lora import lora_problems
from lmi_config.shape.nxd_refusals import (
    MODEL_SETTING,
    SHARDING,
    SPECULATION,
    UNCONFIRMED,
    check,
    refusal,
    speculation_rule,
)
from lmi_config.shape.problems import TP_KEY, Problem

if TYPE_CHECKING:
    from lmi_config.shape.dimensions import Target

MODEL_KEY = "option.model_id"
MLLAMA = "models/mllama/modeling_mllama.py"
MLLAMA_VISION = "models/mllama/modeling_mllama_vision.py"


def model_problems(nxd: NxdConfig, target: Target) -> list[Problem]:
    """The model's own checks (see the module)."""
    problems = _torch_dtype(nxd)
    if nxd.model is None:
        return problems
    raw = raw_model_config(target)
    problems += _required_attributes(nxd, target, raw)
    problems += _attention(nxd, target)
    problems += _glu(nxd)
    if _file(nxd) == MLLAMA:
        problems += _mllama(nxd, target, raw)
    problems += lora_problems(nxd)
    return problems


def _file(nxd: NxdConfig) -> str:
    return str(nxd.model["file"]).removeprefix("neuronx_distributed_inference/") if nxd.model else ""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --- dtype names (models/config.py:20) -------------------------------------------------------------


def _torch_dtype(nxd: NxdConfig) -> list[Problem]:
    value = nxd.value("torch_dtype")
    names = nxd.facts["torch_dtypes"]["names"]
    if not nxd.written("torch_dtype") or not isinstance(value, str) or value in names:
        return []
    found = [check(MODEL_SETTING, nxd, "models/config.py", "to_torch_dtype")]
    return refusal(
        MODEL_SETTING,
        nxd,
        found,
        f"{nxd.said('torch_dtype')} is not a dtype name NeuronConfig takes ({', '.join(names)})",
        {"dtype_str": value},
        f"remove torch_dtype (vllm-neuronx passes option.dtype as one of {', '.join(names)})",
    )


# --- config.json attributes the model's InferenceConfig requires (models/config.py:326) ----------


def _present(attribute: str, classes: Mapping[str, Any], raw: Mapping[str, Any]) -> bool:
    head, _, tail = attribute.partition(".")
    if not tail:
        return head in classes["sets"] or head in raw
    nested = raw.get(head)
    sub = (classes.get("sub_configs") or {}).get(head, [])
    return tail in sub or (isinstance(nested, Mapping) and tail in nested)


def _required_attributes(nxd: NxdConfig, target: Target, raw: Mapping[str, Any] | None) -> list[Problem]:
    from lmi_config.knowledge.nxd_loader import transformers_configs

    assert nxd.model is not None
    if raw is None:
        return []  # a catalog entry: the keys config.json defines are not at hand
    model_type = str(raw.get("model_type") or "")
    transformers = transformers_configs()
    classes = transformers["model_types"].get(model_type)
    if classes is None:
        return []  # AutoConfig refuses the model type first (model-type-unsupported)
    missing = [item for item in nxd.model["required_attributes"] if not _present(item, classes, raw)]
    if not missing:
        return []
    function = f"{nxd.model['config_class']}.validate_config"
    path = "models/config.py" if "." not in missing[0] else _file(nxd)
    found = [
        check(MODEL_SETTING, nxd, path, function)
        or check(MODEL_SETTING, nxd, "models/config.py", "InferenceConfig.validate_config")
    ]
    return refusal(
        MODEL_SETTING,
        nxd,
        found,
        f"{target.model_id}'s config.json (model_type {model_type!r}) lacks {', '.join(missing)}, which NxD "
        f"Inference's {nxd.model['config_class']} requires ({nxd.model['required_source']}) and transformers "
        f"{transformers['version']}'s configuration class of {model_type!r} does not set",
        {"": missing},
        "serve a checkpoint whose config.json defines them (or add them to it)",
        key=MODEL_KEY,
    )


# --- attention geometry (attention_base.py:95; flash decoding: flashdecode/utils.py:20, attention_base.py:410)


def _attention(nxd: NxdConfig, target: Target) -> list[Problem]:
    arch = target.arch
    if arch is None:
        return []
    problems: list[Problem] = []
    heads, kv, hidden = arch.num_attention_heads, arch.num_key_value_heads, arch.hidden_size
    if heads and hidden % heads:
        found = [
            check(
                SHARDING,
                nxd,
                "modules/attention/attention_base.py",
                "NeuronAttentionBase.init_gqa_properties",
            )
        ]
        problems += refusal(
            SHARDING,
            nxd,
            found,
            f"{arch.model_id} has hidden_size {hidden} and {heads} attention heads: NxD Inference takes head_dim = "
            f"hidden_size // heads ({hidden // heads}), which does not give back hidden_size",
            {"hidden_size": hidden, "num_attention_heads": heads},
            "no configuration of NxD Inference serves this model",
            key=MODEL_KEY,
        )
        return problems
    tp = nxd.tp
    if not truthy(nxd.value("flash_decoding_enabled")) or tp is None or nxd.model is None:
        return problems
    if nxd.model["flash_decoding_derived"] is None:
        return problems  # this model's config never derives the flash-decoding groups
    if heads % tp:
        found = [check(SHARDING, nxd, "modules/flashdecode/utils.py", "calculate_num_cores_per_group")]
        return refusal(
            SHARDING,
            nxd,
            found,
            f"{nxd.said('flash_decoding_enabled')} at TP {tp} with {heads} attention heads",
            {"num_attn_heads": heads, "tp_degree": tp},
            f"use a TP degree that divides {heads} and is a multiple of the {kv} KV heads, or remove "
            "flash_decoding_enabled",
            key=TP_KEY,
        )
    if tp % kv:
        found = [check(SHARDING, nxd, "modules/attention/attention_base.py", "NeuronAttentionBase.forward")]
        return refusal(
            SHARDING,
            nxd,
            found,
            f"{nxd.said('flash_decoding_enabled')} at TP {tp} with {kv} KV heads: flash decoding needs the KV "
            f"heads replicated to the TP degree (GQA.REPLICATE_TO_TP_DEGREE, only when TP is a multiple of {kv}); "
            f"neuronx-distributed's divide({tp}, {kv}) in calculate_num_cores_per_group "
            f"({nxd.model['flash_decoding_derived']['source']}) fails first",
            {},
            f"use a TP degree that is a multiple of {kv} and divides {heads}, or remove flash_decoding_enabled",
            key=TP_KEY,
        )
    return problems


# --- MoE models' GLU MLP (modeling_dbrx.py:56, modeling_mixtral.py:55) -----------------------------


def _glu(nxd: NxdConfig) -> list[Problem]:
    if not nxd.written("glu_mlp") or nxd.value("glu_mlp") is True:
        return []
    from lmi_config.knowledge.nxd_loader import nxd_checks

    found = [
        item
        for item in nxd_checks(MODEL_SETTING, nxd.version)
        if item.short_path == _file(nxd) and "glu_mlp" in " ".join(item.conditions)
    ]
    return refusal(
        MODEL_SETTING,
        nxd,
        list(found[:1]),
        f"{nxd.said('glu_mlp')} on {nxd.architecture}: its experts' checkpoint is converted to a GLU MLP "
        "(glu_mlp must be True)",
        {},
        "remove glu_mlp (MoENeuronConfig's default is True)",
    )


# --- Mllama (modeling_mllama.py, modeling_mllama_vision.py) -----------------------------------------


def _mllama(nxd: NxdConfig, target: Target, raw: Mapping[str, Any] | None) -> list[Problem]:
    problems: list[Problem] = []
    medusa, length = nxd.value("is_medusa"), nxd.value("speculation_length")
    if medusa is not UNKNOWN and length is not UNKNOWN and not (medusa is False and length == 0):
        failing = [
            name
            for name, passing in (("is_medusa", medusa is False), ("speculation_length", length == 0))
            if nxd.written(name) and not passing
        ]
        rule, severity, route = speculation_rule(nxd, *failing)
        found = [check(SPECULATION, nxd, MLLAMA, "MllamaInferenceConfig.validate_config")]
        problems += refusal(
            rule,
            nxd,
            found,
            f"{nxd.architecture} with {nxd.said('is_medusa')} and {nxd.said('speculation_length')}{route}",
            {"is_medusa": medusa, "speculation_length": length},
            "serve Mllama without speculative decoding (remove option.speculative_model and the speculation keys "
            "of option.override_neuron_config)",
            key=DRAFT_KEY if nxd.speculation and not failing else OVERRIDE_KEY,
            severity=severity,
        )
    cores = nxd.value("logical_neuron_cores")
    try:
        count = int(cores) if cores is not UNKNOWN else 1
    except (TypeError, ValueError):
        count = 1  # int() refuses it elsewhere, not at this check
    if count != 1:
        found = [
            check(
                MODEL_SETTING, nxd, MLLAMA, "MllamaInferenceConfig.validate_config", "logical_neuron_cores"
            ),
            check(MODEL_SETTING, nxd, MLLAMA_VISION, "NeuronImageAttention.perform_prefill"),
        ]
        problems += refusal(
            MODEL_SETTING,
            nxd,
            found,
            f"{nxd.architecture} with {nxd.said('logical_neuron_cores')}",
            {},
            "remove logical_neuron_cores (1, NeuronConfig's default)",
        )
    formats = nxd.model["checkpoint_formats"] if nxd.model else []
    written = raw.get("checkpoint") if raw is not None else None
    if written is not None and formats and written not in formats:
        found = [check(MODEL_SETTING, nxd, MLLAMA, "MllamaInferenceConfig.__init__")]
        problems += refusal(
            MODEL_SETTING,
            nxd,
            found,
            f"{target.model_id}'s config.json says checkpoint {written!r}, not one of {', '.join(formats)}",
            {"checkpoint": written},
            "serve the Hugging Face checkpoint (without a 'checkpoint' key in config.json)",
            key=MODEL_KEY,
        )
    problems += _cross_attention(nxd, target)
    problems += _vision_heads(nxd, target, raw)
    if nxd.value("quantized") is True and nxd.value("quantized_checkpoints_path") is not None:
        found = [check(UNCONFIRMED, nxd, MLLAMA, "NeuronMllamaForCausalLM.load_hf_model")]
        problems += refusal(
            UNCONFIRMED,
            nxd,
            found,
            f"{nxd.architecture} with quantized=True: NxD Inference's own quantization step cannot write an Mllama "
            "checkpoint (NeuronApplicationBase.save_quantized_state_dict loads the model with load_hf_model, which "
            "Mllama does not implement), so the file at quantized_checkpoints_path must come from another tool; "
            "lmi-config cannot see whether it holds what NxD Inference loads",
            {},
            "check that quantized_checkpoints_path holds an Mllama state dict quantized for NxD Inference",
            severity="warning",
        )
    return problems


def _cross_attention(nxd: NxdConfig, target: Target) -> list[Problem]:
    """NeuronLlamaCrossAttentionBlock / NeuronLlamaCrossAttention: the KV heads replicated by TP // 8
    above TP 8, then the heads, the heads over TP and the replicated KV heads over TP."""
    arch, tp = target.arch, nxd.tp
    if arch is None or tp is None or tp < 1:
        return []
    heads, kv = arch.num_attention_heads, arch.num_key_value_heads
    factor = tp // 8 if tp > 8 else 1
    replicated = kv * factor
    if heads % replicated:
        function, hint, what = (
            "NeuronLlamaCrossAttentionBlock.__init__",
            "",
            f"{heads} heads over {replicated} KV heads",
        )
    elif heads % tp:
        function, hint, what = (
            "NeuronLlamaCrossAttention.__init__",
            "self.n_heads % self.model_parallel_size",
            f"{heads} heads over TP {tp}",
        )
    elif replicated % tp:
        function, hint, what = (
            "NeuronLlamaCrossAttention.__init__",
            "self.n_kv_heads % self.model_parallel_size",
            f"{replicated} KV heads over TP {tp}",
        )
    else:
        return []
    found = check(SHARDING, nxd, MLLAMA, function, hint)
    return refusal(
        SHARDING,
        nxd,
        [found],
        f"{arch.model_id}'s cross-attention at TP {tp}: its {kv} KV heads are replicated x{factor} "
        f"({replicated}), and {what} do not divide",
        {},
        f"use a TP degree that divides {heads} and {kv} (at most 8), or 16 or 32 where the heads allow",
        key=TP_KEY,
    )


def _vision_heads(nxd: NxdConfig, target: Target, raw: Mapping[str, Any] | None) -> list[Problem]:
    vision = raw.get("vision_config") if raw is not None else None
    if not isinstance(vision, Mapping):
        return []
    hidden, heads = _int(vision.get("hidden_size")), _int(vision.get("attention_heads"))
    if not hidden or not heads or hidden % heads == 0:
        return []
    found = [check(SHARDING, nxd, MLLAMA_VISION, "ImageTransformerBlock.__init__")]
    return refusal(
        SHARDING,
        nxd,
        found,
        f"{target.model_id}'s vision tower has hidden_size {hidden} and {heads} attention heads",
        {},
        "no configuration of NxD Inference serves this vision tower",
        key=MODEL_KEY,
    )
