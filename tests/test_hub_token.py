"""A gated model's start-up download with its Hugging Face token set only under a name the image's
huggingface_hub does not read (rule LMI640): huggingface_hub reads HF_TOKEN and HUGGING_FACE_HUB_TOKEN
(https://github.com/huggingface/huggingface_hub/blob/v0.25.2/src/huggingface_hub/utils/_token.py#L114)."""

from __future__ import annotations

import pytest

from lmi_config.api import lint_text

GATED = "HF_MODEL_ID=meta-llama/Meta-Llama-3-8B\nOPTION_ROLLING_BATCH=vllm\n"


def unread(text: str) -> list:
    result = lint_text(text, kind="env", backend="vllm", lmi_version="0.28.0")
    return [finding for finding in result.findings if finding.code == "LMI640"]


@pytest.mark.parametrize("name", ["HUGGINGFACEHUB_API_TOKEN", "HF_API_TOKEN", "HUGGINGFACE_TOKEN"])
def test_a_token_under_a_name_nothing_reads_fails_the_gated_download(name: str) -> None:
    [finding] = unread(GATED + f"{name}=${{HF_SECRET}}\n")
    assert finding.severity == "error" and finding.line == 1
    assert (
        f"set only as {name}" in finding.message and "HF_TOKEN or HUGGING_FACE_HUB_TOKEN" in finding.message
    )


@pytest.mark.parametrize(
    "text",
    [
        GATED
        + "HUGGINGFACEHUB_API_TOKEN=${HF_SECRET}\nHF_TOKEN=${HF_SECRET}\n",  # the read name is there too
        GATED + "HUGGINGFACEHUB_API_TOKEN=${HF_SECRET}\nHF_HOME=/opt/ml/hf-cache\n",  # a cache may hold it
        GATED + "HUGGINGFACEHUB_API_TOKEN=${HF_SECRET}\nHF_HUB_OFFLINE=1\n",  # nothing is downloaded
        "HF_MODEL_ID=s3://bucket/llama-3-8b/\nHUGGINGFACEHUB_API_TOKEN=${HF_SECRET}\n",  # not from the Hub
        "HF_MODEL_ID=Qwen/Qwen2.5-7B-Instruct\nHUGGINGFACEHUB_API_TOKEN=${HF_SECRET}\n",  # not gated
        GATED,  # no token at all: LMI205's warning, since the token may come from elsewhere
    ],
)
def test_no_error_where_the_download_may_not_need_that_token(text: str) -> None:
    assert not unread(text)
