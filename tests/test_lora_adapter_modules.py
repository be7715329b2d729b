"""The modules an adapter under adapters/ puts a LoRA on, against those the image's vLLM loads for the model
class, and the whole modules_to_save weights the loader refuses before vLLM 0.7 (rule LMI623). Each test
pins the upstream line the finding cites."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from lmi_config.api import lint_options, lint_paths, lint_text

MODELS = ROOT / "tests" / "fixtures" / "models"
VLLM = "https://github.com/vllm-project/vllm/blob/"
EMBEDDINGS = {
    "peft_type": "LORA",
    "r": 8,
    "lora_alpha": 16,
    "target_modules": ["lm_head", "embed_tokens", "q_proj", "v_proj"],
    "bias": "none",
}
ATTENTION_ONLY = {**EMBEDDINGS, "target_modules": ["q_proj", "v_proj"]}


def lint_model_directory(
    tmp_path: Path, model_id: str, lmi: str, adapter: dict[str, object], config_of: str | None = None
) -> list:
    """LMI623 and LMI625 findings for serving.properties + adapters/<name>/ (+ config.json when given)."""
    directory = tmp_path / "model"
    (directory / "adapters" / "mine").mkdir(parents=True)
    (directory / "adapters" / "mine" / "adapter_config.json").write_text(
        json.dumps(adapter), encoding="utf-8"
    )
    if config_of is not None:
        shutil.copy(MODELS / config_of / "config.json", directory / "config.json")
    text = f"option.model_id={model_id}\noption.rolling_batch=vllm\noption.max_model_len=4096\noption.enable_lora=true\n"
    (directory / "serving.properties").write_text(text, encoding="utf-8")
    options = lint_options(backend="vllm", lmi_version=lmi, instance="ml.g5.12xlarge")
    result = lint_paths([str(directory / "serving.properties")], options)
    return [finding for finding in result.findings if finding.code in ("LMI623", "LMI625")]


@pytest.mark.parametrize(
    ("model_id", "lmi", "loader_line", "class_line"),
    [
        # vLLM 0.15.1: every linear layer plus the names of embedding_modules, which Qwen3 leaves empty
        (
            "Qwen/Qwen3-8B",
            "0.36.0-lmi20.0.0-cu128",
            "v0.15.1/vllm/lora/lora_model.py#L167",
            "v0.15.1/vllm/model_executor/models/interfaces.py#L522",
        ),
        # vLLM 0.6.2: the class's supported_lora_modules list, which names no embedding for Qwen2
        (
            "Qwen/Qwen2.5-7B",
            "0.30.0",
            "v0.6.2/vllm/lora/models.py#L221",
            "v0.6.2/vllm/model_executor/models/qwen2.py#L315",
        ),
    ],
)
def test_a_lora_on_the_embeddings_is_refused_where_the_model_class_serves_none(
    tmp_path: Path, model_id: str, lmi: str, loader_line: str, class_line: str
) -> None:
    [finding] = lint_model_directory(tmp_path, model_id, lmi, EMBEDDINGS)
    assert finding.code == "LMI623" and finding.severity == "error"
    assert "puts a LoRA on embed_tokens, lm_head (target_modules)" in finding.message
    assert "but received ['embed_tokens', 'lm_head']" in finding.message
    assert VLLM + loader_line in finding.message and VLLM + class_line in finding.message
    # an adapter on the attention projections only loads
    assert not lint_model_directory(tmp_path / "plain", model_id, lmi, ATTENTION_ONLY)


@pytest.mark.parametrize("lmi", ["0.30.0", "0.36.0-lmi20.0.0-cu128"])
def test_a_lora_on_the_embeddings_of_llama_loads(tmp_path: Path, lmi: str) -> None:
    # LlamaForCausalLM names both: embedding_modules (0.8+), supported_lora_modules (0.4-0.7)
    # https://github.com/vllm-project/vllm/blob/v0.15.1/vllm/model_executor/models/llama.py#L515
    assert not lint_model_directory(tmp_path, "meta-llama/Llama-3.1-8B", lmi, EMBEDDINGS, "llama-3.1-8b")


def test_qwen3_takes_a_lora_on_its_embeddings_from_vllm_0_23(tmp_path: Path) -> None:
    # vllm-project/vllm#33234 gave Qwen3ForCausalLM embedding_modules
    # https://github.com/vllm-project/vllm/blob/v0.23.0/vllm/model_executor/models/qwen3.py#L276
    assert not lint_model_directory(tmp_path, "Qwen/Qwen3-8B", "0.36.0-lmi27.0.0-cu129", EMBEDDINGS)


def test_a_regular_expression_of_target_modules_is_not_judged(tmp_path: Path) -> None:
    adapter = {**EMBEDDINGS, "target_modules": ".*(lm_head|q_proj)$"}
    assert not lint_model_directory(tmp_path, "Qwen/Qwen3-8B", "0.36.0-lmi20.0.0-cu128", adapter)


@pytest.mark.parametrize(
    ("lmi", "said", "line"),
    [
        (
            "0.30.0",
            "'base_model.model.lm_head.weight is unsupported LoRA weight'",
            "v0.6.2/vllm/lora/utils.py#L113",
        ),
        ("0.28.0", "'AssertionError on base_model.model.lm_head.weight'", "v0.4.2/vllm/lora/utils.py#L92"),
    ],
)
def test_modules_to_save_is_refused_by_the_weight_parser_before_peft_helper(
    tmp_path: Path, lmi: str, said: str, line: str
) -> None:
    # vllm-project/vllm#9280: PEFT saves modules_to_save whole (base_model.model.lm_head.weight) and
    # parse_fine_tuned_lora_name takes only lora_A / lora_B / lora_embedding_* weights
    adapter = {**ATTENTION_ONLY, "modules_to_save": ["lm_head"]}
    [finding] = lint_model_directory(tmp_path, "Qwen/Qwen2.5-7B", lmi, adapter)
    assert finding.code == "LMI623" and finding.severity == "error"
    assert said in finding.message and VLLM + line in finding.message
    assert "modules_to_save weights" in finding.message


def test_modules_to_save_from_vllm_0_7_is_peft_helpers_refusal(tmp_path: Path) -> None:
    adapter = {**ATTENTION_ONLY, "modules_to_save": ["lm_head"]}
    [finding] = lint_model_directory(tmp_path, "Qwen/Qwen2.5-7B", "0.34.0", adapter)
    assert "vLLM only supports modules_to_save being None." in finding.message
    assert VLLM + "v0.10.2/vllm/lora/peft_helper.py" in finding.message


def test_a_model_class_without_lora_inferred_from_a_sibling_is_a_warning() -> None:
    # Qwen/Qwen-14B-Chat is not named by vLLM's tests; Qwen/Qwen-7B-Chat is (QWenLMHeadModel), whose class
    # has no supported_lora_modules in vLLM 0.4.2:
    # https://github.com/vllm-project/vllm/blob/v0.4.2/vllm/model_executor/model_loader/loader.py#L70
    text = (
        "option.model_id=Qwen/Qwen-14B-Chat\noption.rolling_batch=vllm\noption.enable_lora=true\n"
        "option.trust_remote_code=true\n"
    )
    result = lint_text(text, backend="vllm", lmi_version="0.28.0")
    [finding] = [finding for finding in result.findings if finding.code == "LMI625"]
    assert finding.severity == "warning" and "inferred from Qwen/Qwen-7B-Chat" in finding.message
    assert "QWenLMHeadModel" in finding.message
