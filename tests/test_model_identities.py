"""Model ids the catalog lacks, judged on the architecture their checkpoint declares (vLLM's test registry)."""

from __future__ import annotations

import sys

from conftest import ROOT

from lmi_config.knowledge.models import model_identity
from lmi_config.lint import LintOptions, lint_text

sys.path.insert(0, str(ROOT / "scripts"))

import gen_model_identities as generator  # noqa: E402

REGISTRY = """
_TEXT_GENERATION_EXAMPLE_MODELS = {
    "BloomForCausalLM": _HfExamplesInfo("bigscience/bloom-560m", {"1b": "bigscience/bloomz-1b1"}),
    "ChatGLMModel": _HfExamplesInfo("zai-org/chatglm3-6b", trust_remote_code=True),
    "BambaForCausalLM": _HfExamplesInfo(
        "ibm-ai-platform/Bamba-9B-v1", extras={"tiny": "hmellor/tiny-random-BambaForCausalLM"}
    ),
    "FutureForCausalLM": _HfExamplesInfo("org/not-yet", is_available_online=False),
}
_AUTOMATIC_CONVERTED_MODELS = {
    "GemmaForSequenceClassification": _HfExamplesInfo(
        "BAAI/bge-reranker-v2-gemma", hf_overrides={"architectures": ["GemmaForSequenceClassification"]}
    ),
}
_SPECULATIVE_DECODING_EXAMPLE_MODELS = {
    "EagleLlamaForCausalLM": _HfExamplesInfo("yuhuili/EAGLE-LLaMA3-Instruct-8B"),
}
"""


def test_the_generator_reads_each_checkpoint_and_leaves_out_what_is_not_its_own_architecture() -> None:
    rows, left_out = generator.examples(REGISTRY)
    found = {row["model_id"]: (row["architecture"], row["table"], row["trust_remote_code"]) for row in rows}
    assert found == {
        "bigscience/bloom-560m": ("BloomForCausalLM", "text_generation", False),
        "bigscience/bloomz-1b1": (
            "BloomForCausalLM",
            "text_generation",
            False,
        ),  # an extra: the same architecture
        "zai-org/chatglm3-6b": ("ChatGLMModel", "text_generation", True),
        "ibm-ai-platform/Bamba-9B-v1": ("BambaForCausalLM", "text_generation", False),
    }  # no tiny test repository, no draft model, no repository that is not online
    assert any("hf_overrides replace" in line for line in left_out)
    assert any("is_available_online=False" in line for line in left_out)


def _findings(model_id: str, lmi_version: str) -> dict[str, tuple[str, str]]:
    text = f"option.model_id={model_id}\noption.rolling_batch=vllm\noption.dtype=fp16\noption.max_model_len=4096\n"
    result = lint_text(
        text, options=LintOptions(backend="vllm", lmi_version=lmi_version, instance="ml.g5.12xlarge")
    )
    return {finding.code: (finding.severity, finding.message) for finding in result.findings}


def test_a_model_outside_the_catalog_is_judged_on_its_architecture() -> None:
    # Phi3VForCausalLM entered vLLM's registry after 0.4.2 (LMI 0.28): the start-up stops there
    severity, message = _findings("microsoft/Phi-3.5-vision-instruct", "0.28.0")["LMI606"]
    assert severity == "error" and "Phi3VForCausalLM" in message and "vLLM 0.4.2" in message
    assert "LMI606" not in _findings("microsoft/Phi-3.5-vision-instruct", "0.29.0")
    # qwen2_5_vl is newer than the transformers of LMI 0.30's image: AutoConfig fails before vLLM looks
    severity, message = _findings("Qwen/Qwen2.5-VL-3B-Instruct", "0.30.0")["LMI206"]
    assert severity == "error" and "qwen2_5_vl" in message and "transformers 4.45.2" in message
    assert not {"LMI206", "LMI606"} & set(_findings("Qwen/Qwen2.5-VL-3B-Instruct", "0.36.0"))


def test_another_size_of_a_named_family_is_a_warning_that_says_it_is_inferred() -> None:
    identity = model_identity("Qwen/Qwen2.5-VL-72B-Instruct-AWQ")
    assert identity is not None and identity.sibling is not None
    assert (
        identity.architecture == "Qwen2_5_VLForConditionalGeneration" and identity.model_type == "qwen2_5_vl"
    )
    severity, message = _findings("Qwen/Qwen2.5-VL-72B-Instruct-AWQ", "0.30.0")["LMI206"]
    assert severity == "warning" and identity.sibling in message and "--model or --hub" in message


def test_a_family_whose_sizes_disagree_infers_nothing() -> None:
    # gemma-3-1b-it is text only (Gemma3ForCausalLM), 4b and up are multimodal: 27b is not guessed
    assert model_identity("google/gemma-3-1b-it") is not None
    assert model_identity("google/gemma-3-27b-it") is None
    assert model_identity("someorg/finetune-7b") is None


def test_the_neuron_handler_refuses_a_model_type_known_only_from_its_identity() -> None:
    # PhiForCausalLM is transformers' phi; the transformers-neuronx handler of LMI 0.30 has no phi class
    text = (
        "option.model_id=microsoft/phi-2\noption.entryPoint=djl_python.transformers_neuronx\n"
        "option.tensor_parallel_degree=2\n"
    )
    result = lint_text(text, options=LintOptions(lmi_version="0.30.0", instance="ml.inf2.8xlarge"))
    found = {finding.code: finding for finding in result.findings}
    assert found["LMI206"].severity == "error" and "phi model" in found["LMI206"].message
    assert any("model type phi" in note for note in result.notes)


def test_a_model_type_inferred_from_a_sibling_is_a_warning_on_neuron_too() -> None:
    text = (
        "option.model_id=Qwen/Qwen2.5-VL-7B-Instruct\noption.entryPoint=djl_python.transformers_neuronx\n"
        "option.tensor_parallel_degree=2\n"
    )
    result = lint_text(text, options=LintOptions(lmi_version="0.30.0", instance="ml.inf2.8xlarge"))
    finding = next(finding for finding in result.findings if finding.code == "LMI206")
    assert finding.severity == "warning" and "Qwen/Qwen2.5-VL-3B-Instruct" in finding.message


def test_a_class_several_model_types_map_to_takes_the_type_its_name_starts_with() -> None:
    # modeling_auto.py maps both llama and code_llama to LlamaForCausalLM; Code Llama checkpoints say "llama"
    source = (
        "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES = OrderedDict([('code_llama', 'LlamaForCausalLM'), "
        "('llama', 'LlamaForCausalLM'), ('gpt2', 'GPT2LMHeadModel'), ('gpt-sw3', 'GPT2LMHeadModel'), "
        "('phi', 'PhiForCausalLM'), ('a', 'SharedModel'), ('b', 'SharedModel')])\n"
    )
    assert generator.class_model_types(source) == {
        "LlamaForCausalLM": "llama",
        "GPT2LMHeadModel": "gpt2",
        "PhiForCausalLM": "phi",
    }  # SharedModel: neither type is its name, so none


def test_a_size_written_with_an_underscore_is_a_size_of_the_family() -> None:
    # Qwen writes 1.8B as 1_8B: Qwen/Qwen-1_8B-Chat is the family of Qwen/Qwen-7B-Chat (QWenLMHeadModel),
    # whose vLLM 0.4.2 class takes no LoRA
    identity = model_identity("Qwen/Qwen-1_8B-Chat")
    assert identity is not None and identity.architecture == "QWenLMHeadModel"
    assert identity.sibling == "Qwen/Qwen-7B-Chat"
    text = "option.model_id=Qwen/Qwen-1_8B-Chat\noption.rolling_batch=vllm\noption.enable_lora=true\n"
    result = lint_text(text, options=LintOptions(lmi_version="0.28.0"))
    found = {finding.code: finding for finding in result.findings}
    assert found["LMI625"].severity == "warning" and "QWenLMHeadModel" in found["LMI625"].message
