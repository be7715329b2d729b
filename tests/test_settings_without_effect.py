"""Settings the container ignores or replaces are reported with the value that takes effect."""

from __future__ import annotations

from conftest import run_cli

from lmi_config.lint import LintOptions, lint_text

TNX = (
    "option.model_id=mistralai/Mistral-7B-v0.1\noption.entryPoint=djl_python.transformers_neuronx\n"
    "option.tensor_parallel_degree=2\noption.n_positions=2048\n"
)


def findings(text: str, lmi_version: str) -> list:
    result = lint_text(text, options=LintOptions(lmi_version=lmi_version, instance="inf2.8xlarge"))
    return [finding for finding in result.findings if finding.code == "LMI214"]


def test_lmi_dist_on_transformers_neuronx_runs_the_handlers_own_rolling_batch(tmp_path) -> None:
    text = TNX + "option.rolling_batch=lmi-dist\noption.max_rolling_batch_size=4\n"
    (found,) = findings(text, "0.29.0")
    assert found.key == "option.rolling_batch" and found.line == 5 and "runs tnx" in found.message
    (tmp_path / "serving.properties").write_text(text)
    explained = run_cli(
        "explain",
        str(tmp_path / "serving.properties"),
        "--lmi-version",
        "0.29.0",
        "--instance",
        "inf2.8xlarge",
    )
    assert explained.returncode == 0
    built = [line for line in explained.stdout.splitlines() if line.strip().startswith("rolling_batch")]
    assert built and built[0].split()[1] == "tnx"  # explain shows what is built, not what is written
    assert not findings(TNX + "option.rolling_batch=tnx\noption.max_rolling_batch_size=4\n", "0.29.0")


def test_max_rolling_batch_size_with_rolling_batch_off_compiles_batch_one() -> None:
    # up to LMI 0.29 transformers-neuronx leaves rolling batch off unless the file asks for it
    (found,) = findings(TNX + "option.max_rolling_batch_size=3\n", "0.29.0")
    assert found.key == "option.max_rolling_batch_size" and "batches 1" in found.message
    assert "option.rolling_batch=auto" in found.message
    # from 0.30 rolling batch is the default: the same file compiles batch 3, nothing to report
    assert not findings(TNX + "option.max_rolling_batch_size=3\n", "0.30.0")
