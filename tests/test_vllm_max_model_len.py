"""max_model_len against the length vLLM derives from config.json, as each release's
``_get_and_verify_max_len`` derives it (rules read from its code into data/vllm_capabilities.json
``max_model_len`` by scripts/gen_vllm_capabilities.py)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import ROOT

from lmi_config.api import lint_text
from lmi_config.knowledge.capabilities import vllm_capabilities

QWEN = ROOT / "tests" / "fixtures" / "models" / "qwen2.5-7b" / "config.json"
VLLM = "https://github.com/vllm-project/vllm/blob/"


def errors(text: str, lmi: str, model: str | None = None) -> list:
    found = lint_text(text, backend="vllm", lmi_version=lmi, model=model).findings
    return [finding for finding in found if finding.code == "LMI307" and finding.severity == "error"]


def test_the_rules_are_read_from_each_releases_code() -> None:
    # vllm/config.py:1134 of 0.4.2: `rope_scaling["type"] != "su"`, yarn from original_max_position_embeddings
    old = vllm_capabilities("0.4.2").max_len
    assert (
        old.not_scaled_types == {"su"}
        and old.original_positions_types == {"yarn"}
        and old.type_keys == ("type",)
    )
    assert old.source.startswith("vllm/config.py:1134 ")
    # from 0.5.3: `rope_type not in ("su", "longrope", "llama3")`; from 0.8.4 Gemma 3 is left alone
    assert vllm_capabilities("0.5.3.post1").max_len.not_scaled_types == {"su", "longrope", "llama3"}
    assert vllm_capabilities("0.7.3").max_len.not_scaled_model_types == ()
    assert vllm_capabilities("0.8.4").max_len.not_scaled_model_types == ("gemma3",)
    assert "model_max_length" in vllm_capabilities("0.23.0").max_len.possible_keys


def test_a_yarn_scaling_stretches_its_original_length(tmp_path: Path) -> None:
    # Qwen2.5's documented long-context set-up: 32768 positions, yarn x4 -> vLLM derives 131072
    config = json.loads(QWEN.read_text(encoding="utf-8"))
    config["max_position_embeddings"] = 32768
    config["rope_scaling"] = {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"}
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    text = "option.model_id=Qwen/Qwen2.5-7B-Instruct\noption.rolling_batch=vllm\noption.max_model_len={n}\n"
    assert not errors(text.format(n=131072), "0.31.0", str(tmp_path))
    [finding] = errors(text.format(n=262144), "0.31.0", str(tmp_path))
    assert "131072" in finding.message


GEMMA = "option.model_id=google/gemma-3-27b-it\noption.rolling_batch=vllm\noption.max_model_len=262144\n"


def test_gemma_3s_scaling_is_left_alone_from_vllm_0_8_4() -> None:
    # vLLM 0.7.3 multiplies 131072 by the linear factor 8; 0.8.4 skips "gemma3" model types
    assert not errors(GEMMA, "0.32.0")
    [finding] = errors(GEMMA, "0.33.0")
    assert (
        "'User-specified max_model_len (262144) is greater than the derived max_model_len" in finding.message
    )
    assert VLLM + "v0.8.4/vllm/config.py#L" in finding.message and finding.key == "option.max_model_len"
