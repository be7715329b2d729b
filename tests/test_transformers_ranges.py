"""A model type the image's transformers does not know, where the image installs transformers from a range
(LMI 0.36.0-lmi20: '>= 4.56.0, < 5') instead of a pin (rule LMI206): judged on the range's lowest release
and the newest it admits (data/transformers_range_tops.json), and never for a model type the image's vLLM
reads with its own configuration class (_CONFIG_REGISTRY)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import ROOT

from lmi_config.api import lint_text
from lmi_config.knowledge.transformers_ranges import known_in_range

LMI20 = "0.36.0-lmi20.0.0-cu128"
RANGE = ">= 4.56.0, < 5"


def unsupported(model: str, lmi: str = LMI20) -> list:
    text = f"option.model_id={model}\noption.rolling_batch=vllm\noption.max_model_len=4096\n"
    result = lint_text(text, backend="vllm", lmi_version=lmi, model=model)
    return [finding for finding in result.findings if finding.code == "LMI206"]


def test_a_model_type_no_release_of_the_range_knows_stops_autoconfig() -> None:
    # vllm-project/vllm#36217: qwen3_5 is in neither transformers 4.56.0 nor 4.57.6, the newest below 5
    [finding] = unsupported("Qwen/Qwen3.5-27B")
    assert finding.severity == "error"
    assert "neither 4.56.0 nor the newest release it admits, 4.57.6, knows it" in finding.message
    assert "https://github.com/huggingface/transformers/blob/v4.57.6/" in finding.message
    # HFConfigParser.parse passes AutoConfig's ValueError on for a type outside vLLM's _CONFIG_REGISTRY
    assert (
        "https://github.com/vllm-project/vllm/blob/v0.15.1/vllm/transformers_utils/config.py#L187"
        in finding.message
    )
    # vLLM 0.17 reads qwen3_5 itself: https://github.com/vllm-project/vllm/blob/v0.17.0/vllm/transformers_utils/config.py
    assert "use LMI 0.36.0 (LMI v27) or later" in finding.message


def test_a_model_type_the_range_knows_is_not_refused() -> None:
    assert known_in_range("qwen3", RANGE).known is True
    assert not unsupported("Qwen/Qwen3-8B")


def test_a_model_type_vllm_reads_itself_needs_no_transformers_class(tmp_path: Path) -> None:
    # deepseek_v32 is unknown to transformers 4.x; vLLM 0.15.1 reads it with DeepseekV3Config:
    # https://github.com/vllm-project/vllm/blob/v0.15.1/vllm/transformers_utils/config.py#L73
    assert known_in_range("deepseek_v32", RANGE).known is False
    config = json.loads((ROOT / "tests/fixtures/models/llama-3.1-8b/config.json").read_text(encoding="utf-8"))
    (tmp_path / "config.json").write_text(
        json.dumps({**config, "model_type": "deepseek_v32"}), encoding="utf-8"
    )
    assert not unsupported(str(tmp_path))


def test_a_range_without_an_upper_bound_cannot_tell() -> None:
    # LMI v25 on: '>= 4.56.0, != 5.0.*, …' admits every later release
    assert (
        known_in_range(
            "qwen3_5", ">= 4.56.0, != 5.0.*, != 5.1.*, != 5.2.*, != 5.3.*, != 5.4.*, != 5.5.0"
        ).known
        is None
    )
