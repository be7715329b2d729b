"""The harness of the ``search --on sagemaker`` tests: moto's real HTTP server on 127.0.0.1, the
user's coordinator run as a subprocess, and the jobs' machines.

moto does not run containers, so the tests play each job's part: they read the job's own command
from DescribeTrainingJob (``ContainerArguments``) and run it — ``lmi-config search --shard K/N
--results s3://…`` — with the fake exporter, then set the job's status on the server as SageMaker
would. moto's gaps are patched in-process (ThreadedMotoServer shares the process): its training
jobs are born ``Completed`` (here ``InProgress``), keep no ``Environment`` (here they keep the one
they were created with, which DescribeTrainingJob returns as SageMaker's does) and StopTrainingJob
is not implemented.
"""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from conftest import moto_server
from moto.sagemaker.models import FakeTrainingJob, sagemaker_backends
from moto.sagemaker.responses import SageMakerResponse
from shard_machines import MISTRAL, Machines, truth

REGION = "us-east-1"
ACCOUNT = "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/SageMakerExecution"
BUCKET = "lmi-searches"
PREFIX = f"s3://{BUCKET}/mistral"
ACCESS_KEY = "AKIAFAKEFAKEFAKEFAKE"
SECRET_KEY = "fake/Secret+Access/Key0123456789abcdefghij"
LOG_GROUP = "/aws/sagemaker/TrainingJobs"
FAILURE_LINES = [
    "Downloading model…",
    "RuntimeError: Neuron runtime could not allocate NeuronCore 0 (NRT_RESOURCE)",
]
# no credential format (not hf_…): only --secret-env can tell it is one, so masking it is this code's doing
TOKEN = "Recognisable-Search-Token-7f3a9c"
ORIGINAL_INIT = FakeTrainingJob.__init__
ORIGINAL_CREATE = SageMakerResponse.create_training_job


def _born_running(self: Any, *args: Any, **kwargs: Any) -> None:
    ORIGINAL_INIT(self, *args, **kwargs)
    self.training_job_status = "InProgress"


def _create_keeping_environment(self: Any) -> Any:
    created = ORIGINAL_CREATE(self)
    job = self.sagemaker_backend.training_jobs[self._get_param("TrainingJobName")]
    job.environment = self._get_param("Environment") or {}
    return created


def _stop_training_job(self: Any) -> str:
    job = self.sagemaker_backend.training_jobs[self._get_param("TrainingJobName")]
    job.training_job_status = "Stopped"
    return "{}"  # StopTrainingJob has no output; a JSON body every moto from the declared floor accepts


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with moto_server(
        (FakeTrainingJob, "__init__", _born_running),
        (SageMakerResponse, "create_training_job", _create_keeping_environment),
        (SageMakerResponse, "stop_training_job", _stop_training_job),
    ) as url:
        yield url


@pytest.fixture
def aws(server: str) -> dict[str, Any]:
    """A clean server with the results bucket and the jobs' log group."""
    urllib.request.urlopen(urllib.request.Request(f"{server}/moto-api/reset", method="POST"), timeout=10)
    session = boto3.session.Session(
        aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY, region_name=REGION
    )
    clients = {name: session.client(name, endpoint_url=server) for name in ("s3", "sagemaker", "logs")}
    clients["s3"].create_bucket(Bucket=BUCKET)
    clients["logs"].create_log_group(logGroupName=LOG_GROUP)
    return clients


class Search:
    """The user's coordinator and the jobs' machines, all sending AWS calls to the server."""

    def __init__(self, server: str, root: Path, trials: dict[str, dict[str, Any]] | None = None) -> None:
        """``trials``: "tp,batch,length" -> how its export or load behaves, over the default table."""
        self.server, self.root = server, root
        behaviour = {"2,128,16384": {"export": "compiler-error"}, **(trials or {})}
        self.machines = Machines(root, truth(MISTRAL, "trn1.32xlarge", 0.9, behaviour))
        self.results = root / "mistral.json"
        self.journal = root / "mistral.journal.json"

    def environment(self, **extra: str) -> dict[str, str]:
        environment = {
            key: value
            for key, value in self.machines.environment().items()
            if not key.startswith(("AWS_", "HF_")) and key.lower() not in ("http_proxy", "https_proxy")
        }
        return {
            **environment,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_CONFIG_FILE": str(self.root / "no-aws-config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(self.root / "no-aws-credentials"),
            "AWS_ENDPOINT_URL": "http://127.0.0.1:9",  # a client without --endpoint-url fails here
            "NO_PROXY": "127.0.0.1,localhost",
            "HF_TOKEN": TOKEN,
            **extra,
        }

    def coordinator_command(self, *extra: str, secret_env: tuple[str, ...] = ("HF_TOKEN",)) -> list[str]:
        secrets = [part for name in secret_env for part in ("--secret-env", name)]
        return [
            sys.executable, "-m", "lmi_config", "search", "--model", MISTRAL, "--on", "sagemaker",
            "--instance", "ml.trn1.32xlarge", "--instance", "ml.trn1.2xlarge", "--max-jobs", "3", "--max-hours", "8",
            "--role", ROLE, "--s3-prefix", PREFIX, "--region", REGION, "--endpoint-url", self.server,
            "--output", str(self.results), "--poll-seconds", "0.05", *secrets, *extra,
        ]  # fmt: skip

    def coordinate(
        self, *extra: str, secret_env: tuple[str, ...] = ("HF_TOKEN",), unset: tuple[str, ...] = ()
    ) -> subprocess.CompletedProcess[str]:
        """Run the user's command (``unset``: variables not in the user's shell)."""
        environment = {key: value for key, value in self.environment().items() if key not in unset}
        return subprocess.run(
            self.coordinator_command(*extra, secret_env=secret_env),
            env=environment,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )

    def play(self, aws: dict[str, Any], name: str, status: str = "Completed") -> None:
        """Be job ``name``: run the command it was created with (the fake machine's tools appended),
        then end it as SageMaker would."""
        described = aws["sagemaker"].describe_training_job(TrainingJobName=name)
        arguments = [
            *described["AlgorithmSpecification"]["ContainerArguments"],
            "--endpoint-url",
            self.server,
        ]
        # the job's environment is the one it was created with (the job name, the --secret-env values)
        completed = subprocess.run(
            self.machines.command(arguments, self.root / name),
            env=self.environment(
                **{k: v for k, v in described["Environment"].items() if k != "LMI_CONFIG_PACKAGE"}
            ),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert completed.returncode == 0, completed.stderr
        end(name, status)


def usd(price: Any) -> float:
    return price.usd_per_hour if price is not None else 0.0


def end(name: str, status: str, reason: str | None = None, billable_seconds: int | None = None) -> None:
    """End job ``name`` as SageMaker would: its status, its failure reason, the time it bills (moto
    keeps none: DescribeTrainingJob returns ``BillableTimeInSeconds`` only when given here)."""
    job = sagemaker_backends[ACCOUNT][REGION].training_jobs[name]
    job.training_job_status = status
    if reason:
        job.failure_reason = reason
    if billable_seconds is not None:
        job.billable_time_in_seconds = billable_seconds


def jobs(aws: dict[str, Any]) -> dict[str, str]:
    summaries = aws["sagemaker"].list_training_jobs()["TrainingJobSummaries"]
    return {row["TrainingJobName"]: row["TrainingJobStatus"] for row in summaries}


def named(aws: dict[str, Any], fragment: str) -> str:
    (name,) = [name for name in jobs(aws) if name.endswith(fragment)]
    return name
