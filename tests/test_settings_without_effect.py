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


def _mpi(extra: str, instance: str = "ml.g5.12xlarge") -> dict[str, str]:
    text = (
        "engine=MPI\noption.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.rolling_batch=lmi-dist\n"
        f"option.tensor_parallel_degree=2\noption.max_model_len=4096\n{extra}"
    )
    result = lint_text(text, options=LintOptions(lmi_version="0.30.0", instance=instance))
    return {finding.key or "": finding.message for finding in result.findings if finding.code == "LMI201"}


def test_more_workers_than_engine_mpi_can_place_fails_the_load() -> None:
    # PyModel.java (0.23.0-0.36.0): mpiWorkers = GPUs x nodes / (TP x PP); a larger gpu.maxWorkers (or the
    # maxWorkers it is copied from) throws "We can only expand worker to N but the value is set to M"
    found = _mpi("gpu.maxWorkers=4\n")  # 4 A10Gs / TP 2 = 2 workers
    assert "We can only expand worker to 2 but the value is set to 4" in found["gpu.maxWorkers"]
    assert "maxWorkers" in _mpi("maxWorkers=3\n")
    assert not _mpi("gpu.maxWorkers=2\n") and not _mpi("maxWorkers=1\n")
    assert not _mpi("gpu.maxWorkers=4\n", instance="ml.p4d.24xlarge")  # 8 GPUs / TP 2 = 4
    # a number no integer holds is the invalid-value finding, not a crash of this check
    huge = lint_text(
        "engine=MPI\noption.model_id=gpt2\noption.rolling_batch=lmi-dist\ngpu.maxWorkers="
        + "9" * 5000
        + "\n",
        options=LintOptions(lmi_version="0.30.0", instance="ml.g5.12xlarge"),
    )
    assert any(finding.code == "LMI102" and finding.key == "gpu.maxWorkers" for finding in huge.findings)
    # the Python engine places its workers another way: not this check
    text = "engine=Python\noption.model_id=gpt2\noption.rolling_batch=vllm\noption.tensor_parallel_degree=2\n"
    result = lint_text(
        text + "gpu.maxWorkers=4\n", options=LintOptions(lmi_version="0.30.0", instance="ml.g5.12xlarge")
    )
    assert not [
        finding for finding in result.findings if finding.key == "gpu.maxWorkers" and finding.code == "LMI201"
    ]
