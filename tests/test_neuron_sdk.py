"""The image's Neuron SDK against the instance's NeuronCores (LMI612): Trainium2 runs from Neuron 2.21.0
(aws-neuron-sdk v2.21.0 release-notes/index.rst L23); the last published Neuron LMI image, 0.30.0,
installs 2.20.1 — so a trn2 endpoint on it cannot start, and plan must not propose one."""

from __future__ import annotations

import json

from conftest import run_cli

from lmi_config.api import lint_text
from lmi_config.lint import LintOptions

TNX = (
    "option.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.entryPoint=djl_python.transformers_neuronx\n"
    "option.tensor_parallel_degree=8\n"
)


def _codes(version: str, instance: str) -> set[str]:
    result = lint_text(TNX, "properties", LintOptions(lmi_version=version, instance=instance))
    return {finding.code for finding in result.findings if finding.severity == "error"}


def test_an_image_older_than_trainium2_is_refused_there_and_nowhere_else() -> None:
    assert "LMI612" in _codes("0.30.0-neuronx-sdk2.20.1", "ml.trn2.48xlarge")
    assert "LMI612" in _codes("0.31.0", "ml.trn2.3xlarge")  # 0.31.0 still installs 2.20.1
    assert "LMI612" not in _codes("0.32.0", "ml.trn2.48xlarge")  # 2.21.1
    assert "LMI612" not in _codes("0.30.0", "ml.trn1.32xlarge")
    assert "LMI612" not in _codes("0.30.0", "ml.inf2.24xlarge")


def test_plan_names_the_sdk_and_ranks_only_the_instances_the_image_runs_on() -> None:
    model = ("--model", "meta-llama/Llama-3.1-8B-Instruct", "--lmi-version", "0.30.0")
    refused = run_cli("plan", *model, "--instance", "ml.trn2.48xlarge")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "installs Neuron SDK 2.20.1" in refused.stderr and "use LMI 0.32.0 or later" in refused.stderr
    both = run_cli("plan", *model, "--family", "trn1,trn2", "--format", "json")
    assert both.returncode == 0, both.stderr
    ranked = {row["instance"] for row in json.loads(both.stdout)["candidates"] if row["rank"]}
    assert ranked and all(name.startswith(("trn1", "ml.trn1")) for name in ranked)
    newer = run_cli("plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--lmi-version", "0.32.0",
                    "--instance", "ml.trn2.48xlarge")  # fmt: skip
    assert newer.returncode == 0, newer.stderr
