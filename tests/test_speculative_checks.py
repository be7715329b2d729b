"""vLLM's checks of a speculative-decoding configuration (LMI655), judged where the image's vLLM makes them:
the flat engine arguments LMI 0.30-0.32 pass to vLLM 0.6-0.7, option.speculative_config (JSON) from LMI
0.33. Each finding quotes vLLM's message and cites the line at the release (data/vllm_checks.json)."""

from __future__ import annotations

import json

import pytest

from lmi_config.api import lint_text

VLLM = "https://github.com/vllm-project/vllm/blob/"
LLAMA = (
    "option.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.rolling_batch=vllm\noption.max_model_len=8192\n"
)
DRAFT = "meta-llama/Llama-3.2-1B-Instruct"
# vLLM 0.10-0.14 run no plain draft model (LMI655 says so): checks of theirs are tried on an EAGLE head
EAGLE = "yuhuili/EAGLE-LLaMA3.1-Instruct-8B"


def findings(text: str, lmi: str, instance: str = "ml.g5.2xlarge") -> list:
    result = lint_text(text, backend="vllm", lmi_version=lmi, instance=instance)
    return [finding for finding in result.findings if finding.code == "LMI655"]


def speculative(**config: object) -> str:
    return LLAMA + f"option.speculative_config={json.dumps(config)}\n"


def test_a_token_count_without_a_draft_is_refused_unless_the_check_exempts_the_method() -> None:
    [finding] = findings(speculative(num_speculative_tokens=3), "0.35.0")  # vLLM 0.11.1
    assert finding.severity == "error" and finding.line == 4 and finding.key == "option.speculative_config"
    assert "'num_speculative_tokens was provided but without speculative model.'" in finding.message
    assert VLLM + "v0.11.1/vllm/config/speculative.py#L" in finding.message
    # methods that need no model, and an MTP alias vLLM renames to mtp before its check
    assert not findings(speculative(method="ngram", num_speculative_tokens=3, prompt_lookup_max=4), "0.35.0")
    assert not findings(speculative(method="deepseek_mtp", num_speculative_tokens=1), "0.35.0")
    # the flat engine arguments of LMI 0.31 (vLLM 0.6.3.post1)
    [flat] = findings(LLAMA + "option.num_speculative_tokens=3\n", "0.31.0")
    assert "'num_speculative_tokens was provided without speculative_model.'" in flat.message
    assert (
        flat.key == "option.num_speculative_tokens" and VLLM + "v0.6.3.post1/vllm/config.py#L" in flat.message
    )
    assert not findings(
        LLAMA + f"option.speculative_model={DRAFT}\noption.num_speculative_tokens=3\n", "0.31.0"
    )
    # LMI 0.29 does not pass the field to vLLM: nothing reaches the check
    assert not findings(LLAMA + "option.num_speculative_tokens=3\n", "0.29.0")


def test_speculative_decoding_with_chunked_prefill_is_refused_on_vllm_0_6() -> None:
    text = LLAMA + f"option.speculative_model={DRAFT}\noption.num_speculative_tokens=4\n"
    [finding] = findings(text + "option.enable_chunked_prefill=true\n", "0.31.0")
    assert (
        "'Speculative decoding and chunked prefill are currently mutually exclusive (enable_chunked_prefill=True).'"
        in (finding.message)
    )
    assert finding.key == "option.enable_chunked_prefill"
    assert not findings(text, "0.31.0")  # chunked prefill is not turned on beside speculation by default


@pytest.mark.parametrize(
    ("lmi", "text", "allowed"),
    [
        ("0.31.0", LLAMA + f"option.speculative_model={DRAFT}\noption.num_speculative_tokens=4\n"
         "option.speculative_draft_tensor_parallel_size=2\n", "1"),
        ("0.35.0", speculative(model=EAGLE, num_speculative_tokens=4, draft_tensor_parallel_size=2), "1 or 4"),
    ],
)  # fmt: skip
def test_a_draft_tensor_parallel_size_vllm_does_not_run_is_refused(lmi: str, text: str, allowed: str) -> None:
    text += "option.tensor_parallel_degree=4\n"
    [finding] = findings(text, lmi, instance="ml.g5.12xlarge")
    assert "'speculative_draft_tensor_parallel_size=4 cannot be other value than 1" in finding.message
    assert f"set the draft's tensor-parallel size to {allowed}" in finding.message
    fixed = text.replace("tensor_parallel_size=2", "tensor_parallel_size=1").replace(
        '"draft_tensor_parallel_size": 2', '"draft_tensor_parallel_size": 1'
    )
    assert not findings(fixed, lmi, instance="ml.g5.12xlarge")


def test_token_counts_and_thresholds_below_what_vllm_accepts_are_refused() -> None:
    [zero] = findings(speculative(model=EAGLE, num_speculative_tokens=0), "0.35.0")
    assert "'Expected num_speculative_tokens to be greater than zero (0).'" in zero.message
    [threshold] = findings(
        speculative(model=EAGLE, num_speculative_tokens=4, disable_by_batch_size=1), "0.35.0"
    )
    assert "but got self.disable_by_batch_size=1" in threshold.message
    flat = LLAMA + f"option.speculative_model={DRAFT}\noption.num_speculative_tokens=4\n"
    [old] = findings(flat + "option.speculative_disable_by_batch_size=1\n", "0.31.0")
    assert "but got speculative_disable_by_batch_size=1" in old.message
    assert old.key == "option.speculative_disable_by_batch_size"
    assert not findings(flat + "option.speculative_disable_by_batch_size=8\n", "0.31.0")


def test_tensor_parallel_size_inside_speculative_config_is_refused_from_vllm_0_15() -> None:
    text = speculative(model=DRAFT, num_speculative_tokens=4, tensor_parallel_size=1)
    [finding] = findings(text, "0.36.0-lmi27.0.0-cu130")  # vLLM 0.23.0
    assert "Please pass 'draft_tensor_parallel_size' instead." in finding.message
    eagle = speculative(model=EAGLE, num_speculative_tokens=4, tensor_parallel_size=1)
    assert not findings(eagle, "0.35.0")  # vLLM 0.11.1 makes no such check


def test_a_plain_draft_model_is_refused_before_vllm_0_15() -> None:
    # vLLM 0.10-0.14 run EAGLE, medusa, ngram and MTP but no separate draft model; 0.15 runs one
    text = speculative(model=DRAFT, num_speculative_tokens=4)
    for lmi, line in (("0.34.0", "v0.10.2/vllm/config/__init__.py#L"), ("0.35.0", "v0.11.1/vllm/")):
        [finding] = findings(text, lmi)
        assert "'Speculative decoding with draft model is not supported yet." in finding.message
        assert VLLM + line in finding.message and finding.key == "option.speculative_config"
    assert not findings(text, "0.36.0-lmi27.0.0-cu130")  # vLLM 0.23.0
    # a head vLLM recognises by its name, and a method that needs no model, are not draft models
    assert not findings(speculative(model=EAGLE, num_speculative_tokens=4), "0.35.0")
    assert not findings(speculative(method="ngram", num_speculative_tokens=3, prompt_lookup_max=4), "0.35.0")


def test_a_draft_model_of_another_vocabulary_is_refused_from_vllm_0_15() -> None:
    target = "option.model_id=meta-llama/Llama-3.1-70B-Instruct\noption.rolling_batch=vllm\n"
    target += "option.tensor_parallel_degree=8\noption.max_model_len=8192\n"
    text = (
        target
        + 'option.speculative_config={"model": "TinyLlama/TinyLlama-1.1B-Chat-v1.0", "num_speculative_tokens": 5}\n'
    )
    [finding] = findings(text, "0.36.0-lmi27.0.0-cu130", instance="ml.p4de.24xlarge")
    assert "Target model vocab_size=128256. Draft model vocab_size=32000." in finding.message
    assert VLLM + "v0.23.0/vllm/config/speculative.py#L" in finding.message
    # Llama-3.2-1B shares Llama 3.1's 128256-token vocabulary
    same = text.replace("TinyLlama/TinyLlama-1.1B-Chat-v1.0", DRAFT)
    assert not findings(same, "0.36.0-lmi27.0.0-cu130", instance="ml.p4de.24xlarge")
    # Qwen2.5's small models have 151936 tokens, its 7B and larger 152064: not a draft for them in vLLM
    qwen = text.replace("meta-llama/Llama-3.1-70B-Instruct", "Qwen/Qwen2.5-72B-Instruct")
    qwen = qwen.replace("TinyLlama/TinyLlama-1.1B-Chat-v1.0", "Qwen/Qwen2.5-0.5B-Instruct")
    [mismatch] = findings(qwen, "0.36.0-lmi27.0.0-cu130", instance="ml.p4de.24xlarge")
    assert "Target model vocab_size=152064. Draft model vocab_size=151936." in mismatch.message


def test_an_ngram_window_whose_minimum_is_above_its_maximum_is_refused() -> None:
    text = speculative(method="ngram", num_speculative_tokens=3, prompt_lookup_min=5, prompt_lookup_max=2)
    [finding] = findings(text, "0.35.0")
    assert "'prompt_lookup_min=5 must be <= prompt_lookup_max=2'" in finding.message
    assert not findings(
        speculative(method="ngram", num_speculative_tokens=3, prompt_lookup_min=2, prompt_lookup_max=5),
        "0.35.0",
    )
