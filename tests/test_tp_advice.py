"""Every TP degree a finding advises is one the judge accepts (issue 19: "use TP 1, 2, 4, 7" named a
degree that LMI306 then refused)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lmi_config.knowledge import load_data
from lmi_config.knowledge.instances import instances
from lmi_config.modelarch import from_catalog
from lmi_config.shape.parallelism import ParallelTarget, judge_tensor_parallel

MODELS = sorted(row["model_id"] for row in load_data("models.json")["models"])
TARGETS = sorted(
    (name, backend)
    for name, instance in instances().items()
    if instance.accelerator in ("gpu", "neuron")
    for backend in (("vllm",) if instance.accelerator == "gpu" else ("transformers-neuronx",))
)
_ADVICE = re.compile(r"use TP ([\d, ]+)")


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(MODELS), st.sampled_from(TARGETS), st.integers(2, 64))
def test_advised_degrees_pass_every_tp_check(model: str, target: tuple[str, str], degree: int) -> None:
    name, backend = target
    instance = instances()[name]
    parallel = ParallelTarget(backend, instance.accelerator, instance, from_catalog(model))
    for problem in judge_tensor_parallel(parallel, degree):
        for advised in _ADVICE.findall(problem.message):
            for choice in (int(text) for text in advised.split(",") if text.strip()):
                refused = [p.check for p in judge_tensor_parallel(parallel, choice) if p.blocking]
                assert not refused, (problem.message, choice, refused)


@pytest.mark.parametrize(
    ("model", "degree", "advice"),
    [
        ("Qwen/Qwen2.5-7B-Instruct", 8, "use TP 1, 2, 4"),  # 28 heads, 4 KV heads: 7 divides 28 but not 4
        ("Qwen/Qwen2.5-1.5B-Instruct", 3, "use TP 1, 2, 4, 6"),  # 2 KV heads: vLLM refuses 3
    ],
)
def test_the_reported_cases_name_only_runnable_degrees(model: str, degree: int, advice: str) -> None:
    instance = instances()["g5.48xlarge"]
    parallel = ParallelTarget("vllm", "gpu", instance, from_catalog(model))
    messages = [problem.message for problem in judge_tensor_parallel(parallel, degree) if problem.blocking]
    assert messages and all(message.endswith(advice) for message in messages), messages
