"""NxD Inference's own start-up checks, judged offline for djl-neuronx 0.32-0.34 (NxD Inference 0.1.1 through
vllm-neuronx): each finding quotes NxDI's message and cites its line at the v0.1.1 tag, and each test is
pinned to that line. The NeuronConfig judged is the one the configuration builds: option.override_neuron_config
over vllm-neuronx's defaults (neuronx_distributed.py) over NeuronConfig's own (models/config.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from lmi_config.configfile.loader import LintTarget, parse_source
from lmi_config.lint import LintOptions, build_unit, lint_targets, lint_unit
from lmi_config.rules.base import Finding

NXD = "https://github.com/aws-neuron/neuronx-distributed-inference/blob/v0.1.1/src/neuronx_distributed_inference/"
LOADER = "https://github.com/aws-neuron/upstreaming-to-vllm/blob/22c56ee68f8ee367db854d7dbb0bbfcf594a3599/"
MLLAMA = ROOT / "tests" / "fixtures" / "models" / "llama-3.2-11b-vision"
MIXTRAL = ROOT / "tests" / "fixtures" / "models" / "mixtral-8x7b"
BASE = (
    "engine=Python\noption.entryPoint=djl_python.transformers_neuronx\noption.rolling_batch=vllm\n"
    "option.model_loader=nxdi\noption.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.tensor_parallel_degree=8\n"
    "option.n_positions=4096\noption.max_rolling_batch_size=4\n"
)
NXD_CODES = {f"LMI6{n}" for n in range(45, 53)}


def lint(text: str, tmp_path: Path, **options: Any) -> list[Finding]:
    args = {"backend": "nxdi", "lmi_version": "0.33.0", "instance": "ml.inf2.24xlarge", **options}
    source = parse_source("serving.properties", text.encode("utf-8"), tmp_path, "properties")
    return lint_targets([LintTarget([source])], LintOptions(**args)).findings  # with the judged fixes


def override(text: str) -> str:
    return BASE + f"option.override_neuron_config={text}\n"


def of(findings: list[Finding], code: str) -> list[Finding]:
    return [finding for finding in findings if finding.code == code]


def only(findings: list[Finding], code: str, line: str) -> Finding:
    """The one finding of ``code``, which cites NxD Inference 0.1.1's ``line``."""
    [finding] = of(findings, code)
    assert NXD + line in finding.message, finding.message
    return finding


def model_dir(tmp_path: Path, source: Path | None, **changes: Any) -> str:
    """A copy of a fixture's config.json (or a new one) with keys changed; None values remove them."""
    config = json.loads((source / "config.json").read_text(encoding="utf-8")) if source else {}
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            config[key] = {**config[key], **value}
        elif value is None:
            config.pop(key, None)
        else:
            config[key] = value
    directory = tmp_path / "model"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(directory)


# --- NeuronConfig (models/config.py) -------------------------------------------------------------------


def test_a_bucket_longer_than_its_length_is_refused(tmp_path: Path) -> None:
    findings = lint(override("{'context_encoding_buckets': [1024, 2048, 8192]}"), tmp_path)
    finding = only(findings, "LMI645", "models/config.py#L117")
    assert finding.severity == "error" and finding.line == 9
    assert "'Context bucket 8192 should be <= 4096'" in finding.message
    # max_context_length is vllm-neuronx's max_model_len, which LMI takes from option.n_positions
    assert LOADER + "vllm/model_executor/model_loader/neuronx_distributed.py#L429" in finding.message
    assert finding.fix is not None and "context_encoding_buckets" not in finding.fix.changes[0].value
    findings = lint(override("{'token_generation_buckets': [128, 512, 5000]}"), tmp_path)
    assert (
        "'Token generation bucket 5000 should be <= 4096'"
        in only(findings, "LMI645", "models/config.py#L122").message
    )
    # at n_positions 8192 the same buckets fit
    longer = override("{'context_encoding_buckets': [1024, 2048, 8192]}").replace(
        "n_positions=4096", "n_positions=8192"
    )
    assert not of(lint(longer, tmp_path), "LMI645")
    # seq_len and max_context_length of the override are what NxD Inference compares with
    raised = override("{'context_encoding_buckets': [8192], 'max_context_length': 8192, 'seq_len': 8192}")
    assert not of(lint(raised, tmp_path), "LMI645")


def test_quantized_without_a_checkpoint_path_is_refused(tmp_path: Path) -> None:
    finding = only(lint(override("{'quantized': True}"), tmp_path), "LMI646", "models/config.py#L130")
    assert "'quantized_checkpoints_path is required'" in finding.message
    assert finding.fix is not None and finding.fix.changes[0].action == "remove"
    # a truthy value other than True skips __init__'s `is True` and fails _verify_quantized_config
    only(lint(override("{'quantized': 1}"), tmp_path), "LMI646", "models/config.py#L240")
    with_path = override("{'quantized': True, 'quantized_checkpoints_path': '/opt/ml/model/q.pt'}")
    assert not of(lint(with_path, tmp_path), "LMI646")


def test_the_rmsnorm_quantize_kernel_without_the_quantized_mlp_kernel_is_refused(tmp_path: Path) -> None:
    findings = lint(override("{'rmsnorm_quantize_kernel_enabled': True}"), tmp_path)
    finding = only(findings, "LMI646", "models/config.py#L219")
    assert "'quantized_mlp_kernel must be enabled to use rmsomrm_quantize_kernel!'" in finding.message


def test_the_quantized_mlp_kernel_needs_f8e4m3_weights(tmp_path: Path) -> None:
    text = "{'quantized': True, 'quantized_checkpoints_path': '/q.pt', 'quantized_mlp_kernel_enabled': True}"
    finding = only(lint(override(text), tmp_path), "LMI646", "models/config.py#L244")
    assert "quantization_dtype='int8' (NeuronConfig's default" in finding.message
    fixed = text[:-1] + ", 'quantization_dtype': 'f8e4m3'}"
    assert not of(lint(override(fixed), tmp_path), "LMI646")


def test_a_quantization_type_nxdi_does_not_build_is_refused(tmp_path: Path) -> None:
    text = "{'quantized': True, 'quantized_checkpoints_path': '/q.pt', 'quantization_type': 'per_group'}"
    finding = only(lint(override(text), tmp_path), "LMI646", "models/model_wrapper.py#L577")
    assert (
        "'per_group is not supported'" in finding.message
        and NXD + "models/model_wrapper.py#L508" in finding.message
    )
    ok = text.replace("per_group", "per_channel_symmetric")
    assert not of(lint(override(ok), tmp_path), "LMI646")
    # not quantized: the type is never read
    assert not of(lint(override("{'quantization_type': 'per_group'}"), tmp_path), "LMI646")


def test_speculation_with_async_mode_is_refused(tmp_path: Path) -> None:
    finding = only(
        lint(override("{'speculation_length': 4, 'async': True}"), tmp_path),
        "LMI647",
        "models/config.py#L152",
    )
    assert "'Speculative Decoding is not yet supported with async.'" in finding.message
    assert finding.fix is not None and "'async'" not in finding.fix.changes[0].value
    # with a draft model the length is vLLM's num_speculative_tokens: a warning, since lmi-config's option
    # catalogue lists option.speculative_model for vLLM on GPUs only, while djl-serving passes it on
    drafted = (
        BASE + "option.speculative_model=meta-llama/Llama-3.2-1B-Instruct\noption.num_speculative_tokens=5\n"
    )
    findings = lint(drafted + "option.override_neuron_config={'async': True}\n", tmp_path)
    warned = only(findings, "LMI652", "models/config.py#L152")
    assert warned.severity == "warning" and "vllm_rb_properties.py:243-248" in warned.message
    assert not of(findings, "LMI647")
    assert not of(lint(override("{'async': True}"), tmp_path), "LMI647")


def test_fused_speculation_without_a_draft_model_is_refused(tmp_path: Path) -> None:
    for key in ("enable_fused_speculation", "enable_eagle_speculation"):
        finding = only(
            lint(override(f"{{'{key}': True}}"), tmp_path), "LMI647", "models/application_base.py#L222"
        )
        assert "set option.speculative_model" in finding.message
    drafted = (
        BASE + "option.speculative_model=meta-llama/Llama-3.2-1B-Instruct\noption.num_speculative_tokens=5\n"
    )
    assert not of(
        lint(drafted + "option.override_neuron_config={'enable_eagle_speculation': True}\n", tmp_path),
        "LMI647",
    )


def test_fused_speculation_without_on_device_sampling_is_refused(tmp_path: Path) -> None:
    drafted = (
        BASE + "option.speculative_model=meta-llama/Llama-3.2-1B-Instruct\noption.num_speculative_tokens=5\n"
    )
    findings = lint(drafted + "option.override_neuron_config={'on_device_sampling_config': None}\n", tmp_path)
    finding = only(findings, "LMI647", "modules/generation/sampling.py#L113")
    assert "'on device configs is not initialized'" in finding.message
    assert NXD + "models/model_base.py#L749" in finding.message
    # without a draft model vllm-neuronx builds no fused model: on-device sampling may be off
    assert not of(lint(override("{'on_device_sampling_config': None}"), tmp_path), "LMI647")


def test_medusa_without_on_device_sampling_is_refused(tmp_path: Path) -> None:
    text = "{'is_medusa': True, 'on_device_sampling_config': None}"
    finding = only(lint(override(text), tmp_path), "LMI647", "models/model_wrapper.py#L222")
    assert "'Medusa speculation must use on-device sampling'" in finding.message


def test_medusa_with_several_buckets_is_refused(tmp_path: Path) -> None:
    text = "{'medusa_speculation_length': 4, 'buckets': [1024, 4096]}"
    finding = only(lint(override(text), tmp_path), "LMI647", "models/model_wrapper.py#L71")
    assert "'The supplied tag: medusa_speculation_model is not supported for Bucketing." in finding.message
    # NeuronConfig's own buckets are one, the sequence length
    assert not of(lint(override("{'medusa_speculation_length': 4}"), tmp_path), "LMI647")


def test_mllama_refuses_speculation(tmp_path: Path) -> None:
    text = BASE.replace("Llama-3.1-8B-Instruct", "Llama-3.2-11B-Vision-Instruct").replace("=8\n", "=32\n", 1)
    drafted = (
        text + "option.speculative_model=meta-llama/Llama-3.2-1B-Instruct\noption.num_speculative_tokens=4\n"
    )
    options = {"instance": "ml.trn1.32xlarge", "model": str(MLLAMA)}
    written = lint(text + "option.override_neuron_config={'speculation_length': 4}\n", tmp_path, **options)
    finding = only(written, "LMI647", "models/mllama/modeling_mllama.py#L161")
    assert "speculation_length was set to 4" in finding.message and finding.severity == "error"
    # through a draft model: the route of option.speculative_model is said, as a warning
    warned = only(lint(drafted, tmp_path, **options), "LMI652", "models/mllama/modeling_mllama.py#L161")
    assert warned.key == "option.speculative_model" and "speculation_length was set to 4" in warned.message
    assert not {f.code for f in lint(text, tmp_path, **options)} & {"LMI647", "LMI652"}


# --- NKI kernels ---------------------------------------------------------------------------------------


def test_the_fused_residual_mlp_kernel_with_sequence_parallelism_is_refused(tmp_path: Path) -> None:
    text = "{'mlp_kernel_enabled': True, 'mlp_kernel_fuse_residual_add': True}"
    finding = only(lint(override(text), tmp_path), "LMI648", "models/llama/modeling_llama.py#L790")
    assert (
        "'mlp_kernel_fuse_residual_add should be off when sequence parallelism is enabled'" in finding.message
    )
    # sequence parallelism is vllm-neuronx's default, said as such
    assert "sequence_parallel_enabled=True (vllm-neuronx's default" in finding.message
    assert LOADER + "vllm/model_executor/model_loader/neuronx_distributed.py#L437" in finding.message
    assert not of(lint(override(text[:-1] + ", 'sequence_parallel_enabled': False}"), tmp_path), "LMI648")
    quantized = text[:-1] + ", 'quantized_mlp_kernel_enabled': True}"
    assert (
        NXD + "models/llama/modeling_llama.py#L303"
        in of(lint(override(quantized), tmp_path), "LMI648")[0].message
    )


def test_the_qkv_kernel_without_fused_qkv_is_refused(tmp_path: Path) -> None:
    finding = only(
        lint(override("{'qkv_kernel_enabled': True}"), tmp_path), "LMI648", "modules/attention/gqa.py#L435"
    )
    assert "'QKV kernel only supported when fused_qkv is TRUE'" in finding.message
    assert not of(lint(override("{'qkv_kernel_enabled': True, 'fused_qkv': True}"), tmp_path), "LMI648")
    # Mixtral's attention sets fused_qkv=False whatever the configuration (modeling_mixtral.py:176)
    mixtral = override("{'qkv_kernel_enabled': True, 'fused_qkv': True}").replace(
        "meta-llama/Llama-3.1-8B-Instruct", "mistralai/Mixtral-8x7B-v0.1"
    )
    finding = only(
        lint(mixtral, tmp_path, instance="ml.trn1.32xlarge", model=str(MIXTRAL)),
        "LMI648",
        "modules/attention/gqa.py#L435",
    )
    assert NXD + "models/mixtral/modeling_mixtral.py#L176" in finding.message


def test_left_padding_with_a_context_batch_and_the_flash_attention_kernel_is_refused(tmp_path: Path) -> None:
    text = "{'padding_side': 'left', 'ctx_batch_size': 4}"
    # a 4096-token context bucket runs the flash-attention kernel (get_flash_attention_strategy: q_len >= 4096)
    finding = only(lint(override(text), tmp_path), "LMI648", "modules/attention/attention_base.py#L200")
    assert "bucket of 4096 tokens" in finding.message
    # below 4096 tokens the kernel runs only when attn_kernel_enabled asks for it (from 512)
    short = override(text).replace("n_positions=4096", "n_positions=2048")
    assert not of(lint(short, tmp_path), "LMI648")
    asked = override(text[:-1] + ", 'attn_kernel_enabled': True}").replace(
        "n_positions=4096", "n_positions=2048"
    )
    assert "buckets of 512, 1024, 2048 tokens" in of(lint(asked, tmp_path), "LMI648")[0].message
    # vllm-neuronx's context batch is 1: left padding alone passes
    assert not of(lint(override("{'padding_side': 'left'}"), tmp_path), "LMI648")


# --- attention geometry --------------------------------------------------------------------------------


def test_a_hidden_size_the_heads_do_not_divide_is_refused(tmp_path: Path) -> None:
    model = model_dir(
        tmp_path,
        ROOT / "tests" / "fixtures" / "models" / "llama-3.1-8b",
        hidden_size=4100,
        head_dim=None,
    )
    finding = only(lint(BASE, tmp_path, model=model), "LMI649", "modules/attention/attention_base.py#L95")
    assert "'hidden_size must be divisible by num_heads (got `hidden_size`: 4100 and `num_heads`: 32).'" in (
        finding.message
    )
    assert finding.key == "option.model_id"


def test_flash_decoding_needs_heads_and_kv_heads_that_fit_the_tp_degree(tmp_path: Path) -> None:
    text = override("{'flash_decoding_enabled': True}")
    # Llama-3.1-8B: 32 heads, 8 KV heads; TP 4 is no multiple of the KV heads
    at_four = lint(text.replace("tensor_parallel_degree=8", "tensor_parallel_degree=4"), tmp_path)
    finding = only(at_four, "LMI649", "modules/attention/attention_base.py#L410")
    assert (
        "Flash decoding lives in the context of GQA" in finding.message
        and finding.key == "option.tensor_parallel_degree"
    )
    assert not of(lint(text, tmp_path), "LMI649")
    # TP 24 does not divide the 32 heads
    at_24 = lint(
        text.replace("tensor_parallel_degree=8", "tensor_parallel_degree=24"),
        tmp_path,
        instance="ml.inf2.48xlarge",
    )
    assert (
        "'expect num attention heads is multiples of tp degree but got 32 and 24'"
        in only(at_24, "LMI649", "modules/flashdecode/utils.py#L20").message
    )


def test_mllama_cross_attention_heads_must_divide_over_tp(tmp_path: Path) -> None:
    text = BASE.replace("Llama-3.1-8B-Instruct", "Llama-3.2-11B-Vision-Instruct")
    options = {"instance": "ml.trn1.32xlarge", "model": str(MLLAMA)}
    # TP 24: 8 KV heads x 3 = 24 do not divide the 32 heads (the block asserts first)
    at_24 = lint(text.replace("degree=8", "degree=24"), tmp_path, **options)
    finding = only(at_24, "LMI649", "models/mllama/modeling_mllama.py#L667")
    assert finding.severity == "error" and "x3 (24)" in finding.message
    # TP 12: 8 KV heads (x1) over TP 12
    at_12 = lint(text.replace("degree=8", "degree=12"), tmp_path, **options)
    assert (
        of(at_12, "LMI649")
        and NXD + "models/mllama/modeling_mllama.py#L415" in of(at_12, "LMI649")[0].message
    )
    for degree in (8, 16, 32):
        assert not of(lint(text.replace("degree=8", f"degree={degree}"), tmp_path, **options), "LMI649"), (
            degree
        )


def test_an_mllama_vision_tower_whose_heads_do_not_divide_is_refused(tmp_path: Path) -> None:
    model = model_dir(tmp_path, MLLAMA, vision_config={"attention_heads": 12})
    text = BASE.replace("Llama-3.1-8B-Instruct", "Llama-3.2-11B-Vision-Instruct")
    findings = lint(text, tmp_path, instance="ml.trn1.32xlarge", model=model)
    finding = only(findings, "LMI649", "models/mllama/modeling_mllama_vision.py#L281")
    assert "hidden_size 1280 and 12 attention heads" in finding.message


# --- the model's settings and config.json -------------------------------------------------------------


def test_a_torch_dtype_name_neuronconfig_does_not_take_is_refused(tmp_path: Path) -> None:
    finding = only(lint(override("{'torch_dtype': 'bf16'}"), tmp_path), "LMI650", "models/config.py#L20")
    assert "'Unsupported dtype: bf16'" in finding.message
    assert finding.fix is not None and finding.fix.changes[0].action == "remove"
    assert not of(lint(override("{'torch_dtype': 'bfloat16'}"), tmp_path), "LMI650")


def test_moe_models_refuse_glu_mlp_false(tmp_path: Path) -> None:
    text = override("{'glu_mlp': False}").replace(
        "meta-llama/Llama-3.1-8B-Instruct", "mistralai/Mixtral-8x7B-v0.1"
    )
    finding = only(
        lint(text, tmp_path, instance="ml.trn1.32xlarge", model=str(MIXTRAL)),
        "LMI650",
        "models/mixtral/modeling_mixtral.py#L55",
    )
    assert "'Only GLU MLP is supported for Mixtral Top-K model'" in finding.message
    # Llama reads no glu_mlp (NeuronConfig passes it on as an unexpected keyword)
    assert not of(lint(override("{'glu_mlp': False}"), tmp_path), "LMI650")


def test_mllama_needs_one_logical_neuron_core(tmp_path: Path) -> None:
    text = BASE.replace("Llama-3.1-8B-Instruct", "Llama-3.2-11B-Vision-Instruct")
    text += "option.override_neuron_config={'logical_neuron_cores': 2}\n"
    finding = only(
        lint(text, tmp_path, instance="ml.trn1.32xlarge", model=str(MLLAMA)),
        "LMI650",
        "models/mllama/modeling_mllama.py#L166",
    )
    assert "'This model currently only support logical_neuron_cores=1'" in finding.message
    assert NXD + "models/mllama/modeling_mllama_vision.py#L251" in finding.message


def test_an_mllama_checkpoint_format_nxdi_does_not_know_is_refused(tmp_path: Path) -> None:
    model = model_dir(tmp_path, MLLAMA, checkpoint="TORCHTUNE")
    text = BASE.replace("Llama-3.1-8B-Instruct", "Llama-3.2-11B-Vision-Instruct")
    finding = only(
        lint(text, tmp_path, instance="ml.trn1.32xlarge", model=model),
        "LMI650",
        "models/mllama/modeling_mllama.py#L89",
    )
    assert "'Uknown checkpoint: TORCHTUNE'" in finding.message


def test_config_json_attributes_the_model_class_requires_are_checked(tmp_path: Path) -> None:
    # a LlamaForCausalLM under model_type olmo: transformers 4.45.2's OlmoConfig sets no rms_norm_eps
    llama = ROOT / "tests" / "fixtures" / "models" / "llama-3.1-8b"
    model = model_dir(tmp_path, llama, model_type="olmo", rms_norm_eps=None, rope_scaling=None)
    finding = only(lint(BASE, tmp_path, model=model), "LMI650", "models/config.py#L326")
    assert "'Config must define ['rms_norm_eps']'" in finding.message
    # LlamaConfig sets every attribute LlamaInferenceConfig requires, whatever config.json leaves out
    (tmp_path / "b").mkdir()
    plain = model_dir(tmp_path / "b", llama, rms_norm_eps=None, rope_theta=None)
    assert not of(lint(BASE, tmp_path, model=plain), "LMI650")


# --- LoRA serving --------------------------------------------------------------------------------------


def test_nxdi_lora_target_modules_are_checked(tmp_path: Path) -> None:
    finding = only(
        lint(override("{'lora_config': {'max_loras': 2}}"), tmp_path),
        "LMI651",
        "modules/lora_serving/lora_model.py#L47",
    )
    assert "'Target modules are not set for the base model.'" in finding.message
    findings = lint(override("{'lora_config': {'target_modules': ['query_key_value']}}"), tmp_path)
    assert (
        "'Target modules ['query_key_value'] not found in the base model."
        in only(findings, "LMI651", "modules/lora_serving/lora_model.py#L60").message
    )
    assert not of(
        lint(override("{'lora_config': {'target_modules': ['q_proj', 'o_proj']}}"), tmp_path), "LMI651"
    )


def test_a_non_positive_nxdi_lora_rank_is_refused(tmp_path: Path) -> None:
    text = "{'lora_config': {'target_modules': ['q_proj'], 'max_lora_rank': 0}}"
    finding = only(lint(override(text), tmp_path), "LMI651", "modules/lora_serving/lora_module.py#L21")
    assert "AttributeError" in finding.message


def test_a_lora_target_nxdi_cannot_wrap_is_warned(tmp_path: Path) -> None:
    text = "{'lora_config': {'target_modules': ['q_proj', 'rotary_emb']}}"
    finding = only(lint(override(text), tmp_path), "LMI652", "modules/lora_serving/lora_model.py#L159")
    assert finding.severity == "warning" and "RotaryEmbedding" in finding.message


def test_a_quantized_mllama_checkpoint_is_warned(tmp_path: Path) -> None:
    text = BASE.replace("Llama-3.1-8B-Instruct", "Llama-3.2-11B-Vision-Instruct")
    text += "option.override_neuron_config={'quantized': True, 'quantized_checkpoints_path': '/opt/ml/model/q.pt'}\n"
    findings = lint(text, tmp_path, instance="ml.trn1.32xlarge", model=str(MLLAMA))
    finding = only(findings, "LMI652", "models/mllama/modeling_mllama.py#L1250")
    assert finding.severity == "warning"


# --- where the judgements apply ------------------------------------------------------------------------


def test_the_judgements_follow_djl_servings_parse_of_the_override(tmp_path: Path) -> None:
    """djl-serving reads option.override_neuron_config with ast.literal_eval (vllm_rb_properties.py:150): JSON's
    true never reaches NxD Inference, so no NxDI judgement is made on it."""
    assert (
        not {f.code for f in lint(override('{"torch_dtype": "bf16", "quantized": true}'), tmp_path)}
        & NXD_CODES
    )
    assert of(lint(override('{"torch_dtype": "bf16"}'), tmp_path), "LMI650")


def test_only_the_nxdi_loader_on_an_image_that_ships_it_is_judged(tmp_path: Path) -> None:
    text = override("{'torch_dtype': 'bf16'}")
    assert of(lint(text, tmp_path), "LMI650")
    tnx = text.replace("option.model_loader=nxdi\n", "option.model_loader=tnx\n")
    assert not of(lint(tnx, tmp_path, backend="transformers-neuronx"), "LMI650")
    # djl-neuronx 0.31 installs no NxD Inference
    assert not of(lint(text, tmp_path, lmi_version="0.31.0", backend="transformers-neuronx"), "LMI650")


def test_the_shipped_nxdi_samples_and_known_good_cases_have_no_nxdi_finding(tmp_path: Path) -> None:
    """Each file is linted with what its own lmi-config pragma names (instance, backend, LMI version)."""
    cases = json.loads(
        (ROOT / "tests" / "fixtures" / "real-failures" / "cases.json").read_text(encoding="utf-8")
    )
    paths = [ROOT / "samples" / "rendered" / "llama-3.1-70b-trn1-32xlarge.serving.properties"]
    for row in cases["cases"]:
        path = ROOT / "tests" / "fixtures" / "real-failures" / row["id"] / "serving.properties"
        if (
            row["kind"] == "known-good"
            and path.is_file()
            and "model_loader=nxdi" in path.read_text(encoding="utf-8")
        ):
            paths.append(path)
    assert len(paths) >= 3
    for path in paths:
        source = parse_source(path.name, path.read_bytes(), path.parent, "properties")
        found = lint_unit(build_unit(LintTarget([source]), LintOptions()), LintOptions())
        assert not [finding for finding in found if finding.code in NXD_CODES], (path, found)


def test_the_loader_defaults_are_read_from_vllm_neuronx() -> None:
    """neuronx_distributed.py at the v0.6.x-neuron commit: sequence parallelism on, a context batch of 1,
    bucketing on, right padding, max_context_length and seq_len from max_model_len."""
    loader = json.loads((ROOT / "lmi_config" / "data" / "nxd_loader.json").read_text(encoding="utf-8"))[
        "loader"
    ]
    defaults = loader["defaults"]
    assert (
        defaults["sequence_parallel_enabled"]["value"] is True
        and defaults["sequence_parallel_enabled"]["line"] == 437
    )
    assert defaults["ctx_batch_size"]["value"] == 1 and defaults["padding_side"]["value"] == "right"
    assert defaults["seq_len"]["expression"] == "scheduler_config.max_model_len"
    assert loader["speculation_defaults"]["enable_fused_speculation"]["value"] is True
    assert set(loader["architectures"]) == {
        "LlamaForCausalLM",
        "DbrxForCausalLM",
        "MixtralForCausalLM",
        "MllamaForConditionalGeneration",
    }


WHEEL = Path("/tmp/transformers-wheels/transformers-4.45.2-py3-none-any.whl")


@pytest.mark.skipif(
    not (WHEEL.is_file() and Path("/work/.mirror/aws-neuron+upstreaming-to-vllm/repo").is_dir()),
    reason="no transformers 4.45.2 wheel or no mirror of aws-neuron/upstreaming-to-vllm",
)
def test_the_loader_facts_are_what_the_generator_reads() -> None:
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "gen_nxd_loader.py"),
            "--transformers-wheel",
            str(WHEEL),
            "--check",
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_nxd_coverage_is_at_least_95_percent_with_the_uncovered_listed() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_nxd_checks.py"), "--coverage"],
        capture_output=True,
        text=True,
    )
    printed = re.search(r"nxdi 0\.1\.1 .* covered +(\d+) / (\d+)", run.stdout)
    assert run.returncode == 0 and printed, run.stdout
    covered, decidable = map(int, printed.groups())
    assert covered / decidable >= 0.95 and decidable - covered <= 2
