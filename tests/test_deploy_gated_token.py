"""deploy refuses a gated model the container has no Hub token for, as search --on sagemaker does
(issue 34: deploy only warned, created the endpoint, and it failed with 401 once the instance was up)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SPEC = "model: meta-llama/Llama-3.1-8B-Instruct\ninstance: ml.g5.2xlarge\noptions:\n  max_model_len: 8192\n"
ROLE = ("--role", "arn:aws:iam::123456789012:role/SageMakerRole", "--region", "us-east-1")


def _deploy(spec: Path, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("HF_", "HUGGING"))}
    if token is not None:
        environment["HF_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "lmi_config", "deploy", str(spec), "--dry-run", *ROLE, *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )


def test_a_gated_model_without_a_token_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    refused = _deploy(spec)
    assert refused.returncode == 1, refused.stderr
    assert "deploy refuses it" in refused.stderr and "--secret-env HF_TOKEN" in refused.stderr
    assert "nothing deployed" in refused.stderr


def test_the_same_model_with_a_token_passed_to_the_container_is_planned(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    token = "hf_" + "x" * 34
    planned = _deploy(spec, "--secret-env", "HF_TOKEN", token=token)
    assert planned.returncode == 0, planned.stderr
    assert "deploy refuses it" not in planned.stderr
    assert token not in planned.stdout + planned.stderr  # never printed
