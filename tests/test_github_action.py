"""The GitHub Action (action.yml): its composite step run locally on a fixture repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from conftest import ROOT

SCRIPT = ROOT / ".github" / "lmi-config-action.sh"


def run_action(repository: Path, **inputs: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    outputs = repository / "github_output"
    environment = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "LMI_CONFIG_SKIP_INSTALL": "1",
        "GITHUB_OUTPUT": str(outputs),
        **{f"INPUT_{name.upper()}": value for name, value in inputs.items()},
    }
    result = subprocess.run(
        ["bash", str(SCRIPT)], cwd=repository, env=environment, capture_output=True, text=True, timeout=120
    )
    written = (
        dict(line.split("=", 1) for line in outputs.read_text().splitlines()) if outputs.exists() else {}
    )
    return result, written


def test_the_composite_action_runs_this_repositorys_step_and_uploads_sarif() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    steps = action["runs"]["steps"]
    assert action["runs"]["using"] == "composite"
    assert any(".github/lmi-config-action.sh" in step.get("run", "") for step in steps)
    upload = [
        step for step in steps if str(step.get("uses", "")).startswith("github/codeql-action/upload-sarif")
    ]
    assert upload and upload[0]["with"]["sarif_file"] == "${{ inputs.sarif-file }}"


def test_the_step_writes_sarif_annotates_and_exits_as_lint(tmp_path: Path) -> None:
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    (deploy / "serving.properties").write_text(
        "option.model_id=mistralai/Mistral-7B-v0.1\noption.entryPoint=djl_python.transformers_neuronx\n"
        "option.tensor_parallel_degree=1\noption.n_positions=4096\noption.max_rolling_batch_size=1\n"
    )
    result, outputs = run_action(tmp_path, paths="deploy", args="--instance ml.inf2.8xlarge")
    assert result.returncode == 1, result.stderr
    sarif = json.loads((tmp_path / "lmi-config.sarif").read_text())
    codes = {finding["ruleId"] for finding in sarif["runs"][0]["results"]}
    assert "LMI301" in codes  # one NeuronCore cannot hold Mistral-7B: the finding the PR must see
    assert "::error file=deploy/serving.properties" in result.stdout
    assert outputs == {"exit-code": "1"}


def test_a_clean_repository_passes_and_unusable_input_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "serving.properties").write_text(
        "option.model_id=Qwen/Qwen2.5-1.5B-Instruct\noption.rolling_batch=vllm\n"
    )
    clean, outputs = run_action(tmp_path, args="--backend vllm --lmi-version 0.30.0")
    assert clean.returncode == 0 and outputs == {"exit-code": "0"}
    missing, outputs = run_action(tmp_path, paths="nowhere")
    assert missing.returncode == 2 and outputs == {"exit-code": "2"}


BAD_TP = (
    "option.model_id=Qwen/Qwen2.5-7B-Instruct\noption.rolling_batch=vllm\noption.tensor_parallel_degree=3\n"
)
GOOD = "option.model_id=Qwen/Qwen2.5-1.5B-Instruct\noption.rolling_batch=vllm\n"
PINNED = "--backend vllm --lmi-version 0.30.0"


def test_a_multi_line_paths_block_lints_every_line(tmp_path: Path) -> None:
    for name, text in (("first", GOOD), ("second", BAD_TP)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "serving.properties").write_text(text)
    result, outputs = run_action(tmp_path, paths="first\nsecond\n", args=PINNED)
    assert result.returncode == 1 and outputs == {"exit-code": "1"}, result.stderr
    assert "::error file=second/serving.properties,line=3,title=LMI305" in result.stdout
    sarif = json.loads((tmp_path / "lmi-config.sarif").read_text())
    assert {finding["ruleId"] for finding in sarif["runs"][0]["results"]} >= {"LMI305", "LMI306"}


def test_a_changed_file_named_like_an_option_is_a_file_not_an_option(tmp_path: Path) -> None:
    (tmp_path / "--ignore=LMI3").write_text(BAD_TP)  # a file name a pull request can choose
    (tmp_path / "serving.properties").write_text(BAD_TP)
    result, outputs = run_action(tmp_path, paths="--ignore=LMI3 serving.properties", args=PINNED)
    assert result.returncode == 1 and outputs == {"exit-code": "1"}, result.stderr
    assert "::error file=serving.properties,line=3,title=LMI305" in result.stdout  # TP rules still on
    assert "::error file=--ignore=LMI3,line=3,title=LMI305" in result.stdout  # and the file linted


def test_paths_with_glob_characters_are_taken_as_written(tmp_path: Path) -> None:
    (tmp_path / "serving.properties").write_text(BAD_TP)
    result, outputs = run_action(tmp_path, paths="*.properties", args=PINNED)
    assert result.returncode == 2 and outputs == {"exit-code": "2"}  # no file is named '*.properties'
    assert "*.properties" in result.stderr and "Traceback" not in result.stderr
