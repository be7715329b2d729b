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


NORMALIZE_0_10 = """
def _parse_quant_hf_config(self, hf_config):
    quant_cfg = getattr(hf_config, "quantization_config", None)
    if quant_cfg is not None:
        producer_name = quant_cfg.get("producer", {}).get("name")
        if producer_name == "modelopt":
            quant_algo = quant_cfg.get("quantization", {}).get("quant_algo")
            if quant_algo == "FP8":
                quant_cfg["quant_method"] = "modelopt"
            elif quant_algo == "NVFP4":
                quant_cfg["quant_method"] = "modelopt_fp4"
            elif quant_algo is not None:
                raise ValueError(f"Unknown ModelOpt quant algo: {quant_algo}")
    return quant_cfg
"""
NORMALIZE_0_14 = """
def _normalize_quantization_config(self, config):
    quant_cfg = getattr(config, "quantization_config", None)
    producer_name = quant_cfg.get("producer", {}).get("name")
    if producer_name == "modelopt":
        quant_algo = quant_cfg.get("quantization", {}).get("quant_algo")
        if quant_algo is not None:
            quant_algo_upper = str(quant_algo).upper()
            if quant_algo_upper in {"FP8", "FP8_PB_WO"}:
                quant_cfg["quant_method"] = "modelopt"
            elif quant_algo_upper == "NVFP4":
                quant_cfg["quant_method"] = "modelopt_fp4"
    return quant_cfg
"""
LOADER = """
def get_config(model, revision):
    if quantization_config is None and file_or_path_exists(model, "hf_quant_config.json", revision):
        quantization_config = get_hf_file_to_dict("hf_quant_config.json", model, revision)
"""


def test_the_modelopt_algorithms_each_release_names_are_read_from_its_normalization() -> None:
    older = generator.modelopt_quant_algos({"vllm/config/__init__.py": NORMALIZE_0_10}, "0.10.2")
    assert older is not None and older["value"] == {"FP8": "modelopt", "NVFP4": "modelopt_fp4"}
    assert older["case_insensitive"] is False and older["source"].endswith("vllm/config/__init__.py#L6")
    newer = generator.modelopt_quant_algos({"vllm/transformers_utils/convertor.py": NORMALIZE_0_14}, "0.14.0")
    assert newer is not None and newer["case_insensitive"] is True
    assert newer["value"] == {"FP8": "modelopt", "FP8_PB_WO": "modelopt", "NVFP4": "modelopt_fp4"}
    assert generator.modelopt_quant_algos({"vllm/config.py": "x = 1\n"}, "0.6.2") is None


def test_a_release_reads_hf_quant_config_json_unasked_only_where_its_config_loader_says_so() -> None:
    found = generator.modelopt_detection({"vllm/transformers_utils/config.py": LOADER}, "0.10.2")
    assert found["value"] is True and found["source"].endswith("vllm/transformers_utils/config.py#L3")
    absent = generator.modelopt_detection({"vllm/transformers_utils/config.py": "x = 1\n"}, "0.8.4")
    assert absent["value"] is False and "only with --quantization modelopt" in absent["source"]
