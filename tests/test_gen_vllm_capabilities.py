"""scripts/gen_vllm_capabilities.py on small sources: what it reads from each construct of vLLM's code."""

from __future__ import annotations

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))

import gen_vllm_capabilities as generator  # noqa: E402

WORKER = """
def _check_if_gpu_supports_dtype(torch_dtype):
    if torch_dtype == torch.bfloat16:
        if compute_capability[0] < 8:
            raise ValueError(
                "Bfloat16 is only supported on GPUs with compute capability "
                f"of at least 8.0. Your {gpu_name} GPU has compute capability")
"""
AWQ = """
class AWQConfig(QuantizationConfig):
    def get_name(self) -> str:
        return "awq"
    def get_supported_act_dtypes(self):
        return [torch.half]
    @classmethod
    def get_min_capability(cls) -> int:
        return 75
    @staticmethod
    def get_config_filenames():
        return ["quant_config.json", "quantize_config.json"]

class TpuConfig(QuantizationConfig):
    def get_name(self) -> str:
        return "tpu_int8"
    def get_min_capability(cls) -> int:
        raise NotImplementedError
"""
BNB = """
class BitsAndBytesConfig(QuantizationConfig):
    def get_name(self) -> str:
        return "bitsandbytes"
    def get_min_capability(cls) -> int:
        return 70
    def get_config_filenames():
        return ["adapter_config.json"]
"""
WEIGHT_UTILS = """
def get_quant_config(model_config, load_config):
    if model_config.quantization == "bitsandbytes":
        return quant_cls.from_config({})
"""
REGISTRY = """
_TEXT_GENERATION_MODELS = {"LlamaForCausalLM": ("llama", "LlamaForCausalLM")}
_MULTIMODAL_MODELS = {"LlavaForConditionalGeneration": ("llava", "Llava")}
_EMBEDDING_MODELS = {"BertModel": ("bert", "BertEmbeddingModel")}
_PREVIOUSLY_SUPPORTED_MODELS = {"JAISLMHeadModel": "0.10.1"}
_VLLM_MODELS = {**_TEXT_GENERATION_MODELS, **_MULTIMODAL_MODELS, **_EMBEDDING_MODELS}
"""
MODEL_CONFIG = """
_FLOAT16_NOT_SUPPORTED_MODELS = {"gemma2": "Numerical instability."}

class ModelConfig:
    def _resolve_auto_dtype(self):
        pass
"""


def sources() -> dict[str, str]:
    return {
        "vllm/worker/worker.py": WORKER,
        "vllm/model_executor/layers/quantization/awq.py": AWQ,
        "vllm/model_executor/layers/quantization/bitsandbytes.py": BNB,
        "vllm/model_executor/model_loader/weight_utils.py": WEIGHT_UTILS,
        "vllm/model_executor/models/registry.py": REGISTRY,
        "vllm/config/model.py": MODEL_CONFIG,
    }


def test_each_fact_is_read_with_its_line() -> None:
    facts = generator.facts_of("9.9.9", "9.9.9", sources())
    assert facts["bfloat16_min_capability"]["value"] == 80
    assert facts["bfloat16_min_capability"]["source"].startswith("vllm/worker/worker.py:6 ")
    assert facts["auto_dtype_resolution"]["value"] == "supported-by-gpu"
    assert facts["float16_unsupported_model_types"]["value"] == {"gemma2": "Numerical instability."}
    awq = facts["quantization"]["awq"]
    assert (awq["min_capability"], awq["activation_dtypes"]) == (75, ["float16"])
    assert awq["config_filenames"] == ["quant_config.json", "quantize_config.json"]
    assert "tpu_int8" not in facts["quantization"]  # no CUDA minimum: another platform's method
    assert facts["quantization"]["bitsandbytes"]["config_filenames"] == []  # in flight: no files read
    registry = facts["architectures"]
    assert registry["native"] == ["BertModel", "LlamaForCausalLM", "LlavaForConditionalGeneration"]
    assert registry["multimodal"] == ["LlavaForConditionalGeneration"]
    assert registry["previously_supported"] == ["JAISLMHeadModel"]


def test_an_older_release_keeps_the_checkpoint_dtype_and_has_no_table() -> None:
    old = {path: text for path, text in sources().items() if path != "vllm/config/model.py"}
    facts = generator.facts_of("0.4.2", "0.4.2", old)
    assert facts["auto_dtype_resolution"]["value"] == "checkpoint"
    assert facts["float16_unsupported_model_types"]["value"] == {}
    assert (
        "https://github.com/vllm-project/vllm/tree/v0.4.2/"
        in facts["float16_unsupported_model_types"]["source"]
    )


def test_a_development_build_reads_the_release_it_precedes() -> None:
    released = {"0.15.0", "0.15.1", "0.16.0"}
    assert generator.release_to_read("0.15.1.dev2", released) == "0.15.1"
    assert generator.release_to_read("0.16.1.dev6", released) == "0.16.0"
    assert generator.release_to_read("0.15.1", released) == "0.15.1"


def test_the_accepted_quantization_methods_are_read_in_each_form_vllm_wrote_them() -> None:
    # a dict before 0.5, a list up to 0.9, a Literal the list is built from later; and the refusing line
    refusal = {"vllm/config.py": 'x = 1\nraise ValueError(f"Unknown quantization method: {q}")\n'}
    forms = {
        "QUANTIZATION_METHODS: Dict[str, Type[QuantizationConfig]] = {'awq': AWQConfig, 'gptq': GPTQConfig}\n": [
            "awq",
            "gptq",
        ],
        'QUANTIZATION_METHODS: List[str] = ["awq", "fp8", "compressed-tensors"]\n': [
            "awq",
            "compressed-tensors",
            "fp8",
        ],
        'QuantizationMethods = Literal["awq", "mxfp4"]\nQUANTIZATION_METHODS: list[str] = list(get_args(QuantizationMethods))\n': [
            "awq",
            "mxfp4",
        ],
    }
    for text, names in forms.items():
        found = generator.known_quantization({generator.QUANTIZATION_INIT: text, **refusal}, "9.9.9")
        assert found is not None and found["values"] == names
        assert (
            found["refused_by"]
            == "vllm/config.py:2 https://github.com/vllm-project/vllm/blob/v9.9.9/vllm/config.py#L2"
        )
