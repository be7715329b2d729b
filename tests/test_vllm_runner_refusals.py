"""Option combinations vLLM's model runner refuses on the first step that uses them, read from each pinned
release's vllm/worker/model_runner.py (data/vllm_runner_refusals.json): prefix caching with chunked prefill
in vLLM 0.4-0.5 (rule LMI627)."""

from __future__ import annotations

import pytest

from lmi_config.api import lint_text
from lmi_config.knowledge.runner_refusals import runner_refusal

VLLM = "https://github.com/vllm-project/vllm/blob/"
BOTH = (
    "option.model_id=meta-llama/Llama-3.1-8B\noption.rolling_batch=vllm\noption.max_model_len=8192\n"
    "option.enable_prefix_caching=true\noption.enable_chunked_prefill=true\n"
)
MODEL = "tests/fixtures/models/llama-3.1-8b"


def refusals(text: str, lmi: str) -> list:
    result = lint_text(text, backend="vllm", lmi_version=lmi, instance="ml.g5.2xlarge", model=MODEL)
    return [finding for finding in result.findings if finding.code == "LMI627"]


@pytest.mark.parametrize(
    ("lmi", "line"),
    [
        ("0.28.0", "v0.4.2/vllm/worker/model_runner.py#L257"),  # ModelRunner._prepare_prompt
        ("0.29.0", "v0.5.3.post1/vllm/worker/model_runner.py#L334"),  # _compute_for_prefix_cache_hit
    ],
)
def test_prefix_caching_with_chunked_prefill_is_refused_by_the_runner_of_vllm_0_4_and_0_5(
    lmi: str, line: str
) -> None:
    [finding] = refusals(BOTH, lmi)
    assert finding.severity == "error" and finding.line == 4
    assert "'chunked prefill cannot be used with prefix caching now.'" in finding.message
    assert VLLM + line in finding.message
    assert not refusals(BOTH.replace("enable_chunked_prefill=true", "enable_chunked_prefill=false"), lmi)
    assert not refusals(BOTH.replace("enable_prefix_caching=true", "enable_prefix_caching=false"), lmi)


def test_vllm_0_6_caches_prefixes_with_chunked_prefill() -> None:
    assert runner_refusal("0.6.2", "chunked-prefill-with-prefix-caching") is None
    assert not refusals(BOTH, "0.30.0")
