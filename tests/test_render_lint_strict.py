"""What render writes passes ``lint --strict`` on the same target (issue 34): the GPU loading
timeout is written as the Neuron one is, and a file that cannot carry its target says so."""

from __future__ import annotations

from pathlib import Path

from conftest import ROOT, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lmi_config import api
from lmi_config.errors import PlanningError
from lmi_config.lint import LintOptions
from lmi_config.spec import build_spec

# models of the catalog that are not gated (a gated one warns for its missing token, rightly)
MODELS = ["Qwen/Qwen2.5-72B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-32B-Instruct"]
GPU_INSTANCES = ["ml.g5.12xlarge", "ml.g5.48xlarge", "ml.g6e.12xlarge", "ml.g6e.48xlarge", "ml.p4d.24xlarge"]


def test_a_large_model_rendered_for_a_gpu_passes_lint_strict(tmp_path: Path) -> None:
    output = tmp_path / "serving.properties"
    rendered = run_cli(
        "render", "--model", "Qwen/Qwen2.5-72B-Instruct", "--instance", "ml.g6e.12xlarge",
        "--set", "tensor_parallel_degree=auto", "-o", str(output),
    )  # fmt: skip
    assert rendered.returncode == 0, rendered.stderr
    assert "option.model_loading_timeout=" in output.read_text()
    linted = run_cli("lint", str(output), "--strict", "--instance", "ml.g6e.12xlarge")
    assert linted.returncode == 0, linted.stdout


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=st.sampled_from(MODELS), instance=st.sampled_from(GPU_INSTANCES))
def test_rendered_gpu_configurations_have_no_warning_lint_would_add(model: str, instance: str) -> None:
    spec, name = build_spec(
        None, overrides={"model": model, "instance": instance}, settings=["tensor_parallel_degree=auto"]
    )
    try:
        rendered = api.render(spec, name=name)
    except PlanningError:
        return  # nothing fits: render refuses, and writes nothing
    linted = api.lint_text(rendered.text, options=LintOptions(instance=instance))
    assert linted.errors == 0 and linted.warnings == 0, [f.message for f in linted.findings]


def test_an_environment_json_says_what_lint_could_not_check_without_its_instance(tmp_path: Path) -> None:
    output = tmp_path / "environment.json"
    rendered = run_cli(
        "render", str(ROOT / "samples" / "specs" / "qwen2.5-7b-vllm-g5-12xlarge.yaml"), "--format", "json",
        "-o", str(output),
    )  # fmt: skip
    assert rendered.returncode == 0, rendered.stderr
    linted = run_cli("lint", str(output))
    assert "no instance type given" in linted.stdout and "were not checked" in linted.stdout
    with_target = run_cli("lint", str(output), "--instance", "ml.g5.12xlarge")
    assert "no instance type given" not in with_target.stdout
