"""``search --on sagemaker --secret-env HF_TOKEN``: a gated model's token reaches every job, and only
there — against moto's real HTTP server, driven as a user drives it (``tests/search_jobs_harness.py``)."""

from __future__ import annotations

import gzip
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from search_jobs_harness import BUCKET, LOG_GROUP, TOKEN, Search, aws, end, jobs, named, server
from shard_machines import MISTRAL

from lmi_config.secrets import MASK

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="the fake machines run real processes")
__all__ = ["aws", "server"]  # fixtures


def stored_objects(aws: dict[str, Any]) -> dict[str, bytes]:
    """Every object of the results bucket, archives unpacked to their bytes."""
    listed = aws["s3"].list_objects_v2(Bucket=BUCKET).get("Contents", [])
    bodies = {}
    for row in listed:
        body = aws["s3"].get_object(Bucket=BUCKET, Key=row["Key"])["Body"].read()
        bodies[row["Key"]] = gzip.decompress(body) if row["Key"].endswith(".gz") else body
    return bodies


def printed(*runs: subprocess.CompletedProcess[str]) -> str:
    return "".join(run.stdout + run.stderr for run in runs)


def test_the_token_is_in_each_jobs_environment_and_in_no_printed_line_journal_or_s3_object(
    aws: dict[str, Any], server: str, tmp_path: Path
) -> None:
    # the export of one trial prints its environment before failing, as a tool's debug output can
    search = Search(server, tmp_path, {"2,16,8192": {"export": "crash", "echo": ["HF_TOKEN"]}})
    dry = search.coordinate("--dry-run")
    assert dry.returncode == 0, dry.stderr
    requests = [
        json.loads(line.split(" ", 1)[1])
        for line in dry.stdout.splitlines()
        if line.startswith("sagemaker.create_training_job ")
    ]
    assert len(requests) == 3 and all(request["Environment"]["HF_TOKEN"] == MASK for request in requests)
    started = search.coordinate("--yes", "--no-wait")
    assert started.returncode == 0, started.stderr
    # the one place it must be: the job's environment (which DescribeTrainingJob shows, as --help says)
    for name in jobs(aws):
        described = aws["sagemaker"].describe_training_job(TrainingJobName=name)
        assert described["Environment"]["HF_TOKEN"] == TOKEN
    small, first = named(aws, "trn1-2xlarge-1of1"), named(aws, "32xlarge-1of2")
    search.play(aws, small)
    stream = f"{first}/algo-1-1700000000"
    aws["logs"].create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)
    aws["logs"].put_log_events(
        logGroupName=LOG_GROUP,
        logStreamName=stream,
        logEvents=[{"timestamp": int(time.time() * 1000), "message": f"downloading with token {TOKEN}"}],
    )
    end(first, "Failed", f"AlgorithmError: 401 for token {TOKEN}")
    watched = search.coordinate("--no-wait")
    assert watched.returncode == 0, watched.stderr
    assert f"token {MASK}" in watched.stderr  # the failure and its log line, masked
    journal = json.dumps(json.loads(search.journal.read_text()), ensure_ascii=False)
    assert f"HF_TOKEN={MASK}" in journal  # the failed trial's own lines, masked by the job itself
    assert f"token {MASK}" in journal
    assert TOKEN not in printed(dry, started, watched)
    assert TOKEN not in journal and TOKEN not in search.results.read_text()
    objects = stored_objects(aws)
    assert any(key.endswith("shards/trn1.2xlarge-1of1.json") for key in objects)
    assert [key for key, body in objects.items() if TOKEN.encode() in body] == []


def test_a_missing_secret_variable_is_exit_2_naming_it_and_nothing_starts(
    aws: dict[str, Any], server: str, tmp_path: Path
) -> None:
    search = Search(server, tmp_path)
    for extra in (("--dry-run",), ("--yes",)):
        result = search.coordinate(*extra, unset=("HF_TOKEN",))
        assert result.returncode == 2, result.stderr
        assert "--secret-env HF_TOKEN: HF_TOKEN is not set in this shell" in result.stderr
        assert "Traceback" not in result.stderr
    assert jobs(aws) == {} and "Contents" not in aws["s3"].list_objects_v2(Bucket=BUCKET)


def test_a_gated_model_without_a_token_is_refused_before_any_job_starts(
    aws: dict[str, Any], server: str, tmp_path: Path
) -> None:
    search = Search(server, tmp_path)
    for extra in (("--dry-run",), ("--yes",)):
        result = search.coordinate(*extra, secret_env=())
        assert result.returncode == 2, result.stderr
        assert f"--model {MISTRAL}: a gated Hugging Face repository" in result.stderr
        assert "--secret-env HF_TOKEN" in result.stderr and "Traceback" not in result.stderr
    assert jobs(aws) == {} and "Contents" not in aws["s3"].list_objects_v2(Bucket=BUCKET)
    # stopping a search starts nothing, so it needs no token
    stopped = search.coordinate("--stop", secret_env=(), unset=("HF_TOKEN",))
    assert stopped.returncode == 0 and "stopped 0 job(s)" in stopped.stdout, stopped.stderr
    # a model anyone may download needs no token
    command = search.coordinator_command("--dry-run", secret_env=())
    command[command.index(MISTRAL)] = (
        "deepseek-ai/DeepSeek-R1-Distill-Llama-8B"  # open, a llama every image exports
    )
    open_model = subprocess.run(
        command, env=search.environment(), capture_output=True, text=True, timeout=120
    )
    assert open_model.returncode == 0, open_model.stderr
    assert "HF_TOKEN" not in open_model.stdout


def test_secret_env_without_sagemaker_jobs_is_refused(
    aws: dict[str, Any], server: str, tmp_path: Path
) -> None:
    search = Search(server, tmp_path)
    result = subprocess.run(
        search.machines.command(
            [
                "search",
                "--model",
                MISTRAL,
                "--instance",
                "trn1.2xlarge",
                "--secret-env",
                "HF_TOKEN",
                "--dry-run",
            ],
            tmp_path / "here",
        ),
        env=search.environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "use it with --on sagemaker" in result.stderr, result.stderr
