"""trust_remote_code is reported by what lmi-config can see: code the model ships, or that it cannot tell."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import ROOT

from lmi_config.lint import LintOptions, lint_text

TRUSTED = "option.model_id={model}\noption.rolling_batch=vllm\noption.trust_remote_code=true\n"


def severities(text: str, **options: str) -> dict[str, str]:
    result = lint_text(text, options=LintOptions(backend="vllm", lmi_version="0.30.0", **options))
    return {
        finding.code: finding.severity for finding in result.findings if finding.code in ("LMI501", "LMI503")
    }


def test_a_model_transformers_runs_natively_gets_no_warning() -> None:
    assert severities(TRUSTED.format(model="mistralai/Mistral-7B-v0.1")) == {}


def test_a_model_that_ships_code_is_a_warning_until_the_revision_is_pinned(tmp_path: Path) -> None:
    config = json.loads((ROOT / "tests" / "fixtures" / "models" / "qwen2.5-7b" / "config.json").read_text())
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_custom.CustomForCausalLM"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    text = TRUSTED.format(model="someone/custom-qwen")
    assert severities(text, model=str(tmp_path)) == {"LMI501": "warning"}
    assert severities(text + "option.revision=4b1c2d3\n", model=str(tmp_path)) == {}


def test_a_model_lmi_config_cannot_look_up_is_an_info() -> None:
    assert severities(TRUSTED.format(model="{{model_id}}")) == {"LMI503": "info"}
    assert severities(TRUSTED.format(model="s3://bucket/private-model/")) == {"LMI503": "info"}
