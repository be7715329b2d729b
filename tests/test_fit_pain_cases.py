"""The parallelism and memory pain cases of sagemaker-and-user-pain.md §4, each as the user wrote it.

| issue | fixture | slug |
|---|---|---|
| #1 optimum-neuron#619 | optimum-neuron-619 | tp-unsupported-degree (error: trn1 runtime) |
| #2 optimum-neuron#424 | optimum-neuron-424 | tp-unsupported-degree |
| #3 vllm-neuron#7 | vllm-neuron-7 | tp-exceeds-devices |
| #4 aws-neuron-sdk#749 | aws-neuron-sdk-749 | tp-exceeds-devices |
| #5 transformers-neuronx#45, seeds/001 | seed-001 | memory-exceeds-budget |
| #7 djl-serving#1847 | djl-serving-1847 | memory-exceeds-budget |
| #8 huggingface-inferentia2-samples#12 | huggingface-inferentia2-samples-12 | memory-exceeds-budget |
| #9 aws-neuron-sdk#1289 | aws-neuron-sdk-1289 | kv-heads-sharding (warning) |
| #10 neuronx-distributed#53 | neuronx-distributed-53 | host-memory-insufficient (warning) |
| #11 vllm#2652 | vllm-2652 | tp-heads-divisibility |
| #12 djl-serving#1092 | djl-serving-1092 | model-copies (info) |
| #19 fmbench-orchestrator#28 | fmbench-orchestrator-28 | loading-timeout-too-short |
| known-bad vllm#6452 | vllm-6452 | memory-exceeds-budget |

Not covered here: #6 (DMA rings of SDK 2.14 growing to 6.5 GB: see tests/test_ground_truth.py),
#13-#17 (pre-compiled artifact and cache mismatches need the artifacts), #20-#22 (SageMaker
endpoint settings: the deploy command).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES

from lmi_config.api import lint_paths

CASES = {
    "optimum-neuron-619": ("tp-unsupported-degree", "error", "1, 2, 8, 16"),
    "optimum-neuron-424": ("tp-unsupported-degree", "error", "multiple of 32"),
    "vllm-neuron-7": ("tp-exceeds-devices", "error", "has 24"),
    # TP 8 (40 heads divide), not 12 (pads them to 48: a warning TP 8 avoids)
    "aws-neuron-sdk-749": ("tp-exceeds-devices", "error", "option.tensor_parallel_degree=8"),
    "seed-001": ("memory-exceeds-budget", "error", "; set option.tensor_parallel_degree=2"),
    "djl-serving-1847": ("memory-exceeds-budget", "error", "GiB"),
    "huggingface-inferentia2-samples-12": ("memory-exceeds-budget", "error", "larger instance"),
    "aws-neuron-sdk-1289": ("kv-heads-sharding", "warning", "KV memory"),
    "neuronx-distributed-53": ("host-memory-insufficient", "warning", "host RAM"),
    "vllm-2652": ("tp-heads-divisibility", "error", "; set option.tensor_parallel_degree=4 (or 2)"),
    "djl-serving-1092": ("model-copies", "info", "2 copies"),
    "fmbench-orchestrator-28": ("loading-timeout-too-short", "warning", "compile ahead of time"),
    "vllm-6452": ("memory-exceeds-budget", "error", "; set option.tensor_parallel_degree=2"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_pain_case_gets_its_slug_with_advice(name: str) -> None:
    slug, severity, advice = CASES[name]
    path = FIXTURES / "pain-fit" / f"{name}.serving.properties"
    result = lint_paths([str(path)])
    matching = [f for f in result.findings if f.rule == slug]
    assert matching, [(f.rule, f.message) for f in result.findings]
    assert matching[0].severity == severity
    assert advice in matching[0].message


def test_every_fixture_is_in_the_table() -> None:
    names = {path.name.removesuffix(".serving.properties") for path in Path(FIXTURES / "pain-fit").iterdir()}
    assert names == set(CASES)
