"""Which variables hold a Hub token is read from the code of each huggingface_hub the images pin
(data/hub_token_variables.json): a name none reads (HF_API_TOKEN) is a warning and never counts as a token."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import run_cli

from lmi_config.errors import InputError

GATED = "HF_MODEL_ID=meta-llama/Llama-3.1-8B-Instruct\nOPTION_ROLLING_BATCH=vllm\n"


def lint_env(tmp_path: Path, text: str) -> list[dict]:
    path = tmp_path / "model.env"
    path.write_text(text, encoding="utf-8")
    result = run_cli("lint", str(path), "--format", "json")
    return json.loads(result.stdout)["findings"]


def test_a_token_under_a_name_huggingface_hub_does_not_read_is_no_token(tmp_path: Path) -> None:
    findings = lint_env(tmp_path, GATED + "HF_API_TOKEN=${HUB_SECRET}\n")
    codes = {finding["code"] for finding in findings}
    # the gated model is downloaded without a token: said once, as LMI640's error, not again as LMI205
    assert "LMI640" in codes and "LMI205" not in codes
    [unread] = [finding for finding in findings if finding["code"] == "LMI203"]
    assert unread["line"] == 3 and unread["severity"] == "warning"
    assert (
        "HF_API_TOKEN is not a variable the image's huggingface_hub reads a token from" in unread["message"]
    )
    # pinned to the line that reads the names: huggingface_hub 0.25.2 _get_token_from_environment
    assert (
        "https://github.com/huggingface/huggingface_hub/blob/v0.25.2/src/huggingface_hub/utils/_token.py#L114"
        in unread["message"]
    )


@pytest.mark.parametrize("name", ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"])
def test_the_names_huggingface_hub_reads_are_tokens(tmp_path: Path, name: str) -> None:
    findings = lint_env(tmp_path, GATED + f"{name}=${{HUB_SECRET}}\n")
    assert not [finding for finding in findings if finding["code"] in ("LMI203", "LMI205")]


def test_a_search_on_sagemaker_refuses_a_gated_model_whose_only_token_is_hf_api_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lmi_config.search.sagemaker_jobs import job_secrets

    monkeypatch.setenv("HF_API_TOKEN", "hf_" + "a" * 34)
    request = SimpleNamespace(
        stopping=False,
        secret_env=("HF_API_TOKEN",),
        search=SimpleNamespace(model="meta-llama/Llama-3.1-8B-Instruct"),
    )
    with pytest.raises(InputError, match="no job would have a token"):
        job_secrets(request)  # type: ignore[arg-type]
