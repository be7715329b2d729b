"""`lmi-config deploy` against a real moto server on 127.0.0.1, driven as a user drives it.

moto's ThreadedMotoServer runs in this process, so its gaps can be patched here: its 2019-era
instance-type list (no inf2, trn1, g5 …) is relaxed, an endpoint whose name starts with
`broken-` is created `Failed` (as SageMaker marks one whose container never answers the ping),
and UpdateEndpoint, which moto does not implement, switches the endpoint's config. One test
keeps moto unpatched to show the rejection, so a moto release that fixes it is noticed.

The CLI runs in a subprocess with fake credentials, every AWS call sent to the server
(`--endpoint-url`), AWS_ENDPOINT_URL pointing at a closed port (a client that forgot the URL
fails instead of reaching AWS), no instance-metadata look-up and no proxy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from conftest import ROOT, moto_server
from moto.core.responses import ActionResult
from moto.sagemaker.exceptions import ValidationError
from moto.sagemaker.models import FakeEndpoint, FakeEndpointConfig
from moto.sagemaker.responses import SageMakerResponse

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/SageMakerExecution"
BUCKET = "lmi-artifacts"
ACCESS_KEY = "AKIAFAKEFAKEFAKEFAKE"
SECRET_KEY = "fake/Secret+Access/Key0123456789abcdefghij"
HF_TOKEN = "hf_" + "FakeTokenForTheTests0123456789ab"
FAILURE_REASON = (
    "The primary container for production variant AllTraffic did not pass the ping health check. "
    "Please check CloudWatch logs for this endpoint."
)
DEVICE_ERROR = (
    "RuntimeError: Failed to allocate 17.2 GiB of device memory on NeuronCore 0 (RESOURCE_EXHAUSTED)"
)
QWEN = ROOT / "samples" / "specs" / "qwen2.5-7b-vllm-g5-12xlarge.yaml"
LLAMA_INF2 = ROOT / "samples" / "specs" / "llama-3.1-8b-inf2-24xlarge.yaml"
ORIGINAL_VALIDATE = FakeEndpointConfig.validate_instance_type
ORIGINAL_ENDPOINT_INIT = FakeEndpoint.__init__


def _relaxed_instance_types(self: Any, instance_type: str) -> None:
    if not instance_type.startswith("ml."):
        ORIGINAL_VALIDATE(self, instance_type)


def _endpoint_init(self: Any, *args: Any, **kwargs: Any) -> None:
    ORIGINAL_ENDPOINT_INIT(self, *args, **kwargs)
    if self.endpoint_name.startswith("broken-"):
        self.endpoint_status = "Failed"
        self.failure_reason = FAILURE_REASON


def _update_endpoint(self: Any) -> ActionResult:
    backend = self.sagemaker_backend
    name, config_name = self._get_param("EndpointName"), self._get_param("EndpointConfigName")
    endpoint = backend.endpoints.get(name)
    if endpoint is None:
        raise ValidationError(message=f"Could not find endpoint {name}.")
    config = backend.describe_endpoint_config(config_name)
    endpoint.endpoint_config_name = config_name
    endpoint.production_variants = endpoint._process_production_variants(config["ProductionVariants"])
    return ActionResult({"EndpointArn": endpoint.arn})


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with moto_server(
        (FakeEndpointConfig, "validate_instance_type", _relaxed_instance_types),
        (FakeEndpoint, "__init__", _endpoint_init),
        (SageMakerResponse, "update_endpoint", _update_endpoint),
    ) as url:
        yield url


@pytest.fixture(scope="module")
def clients(server: str) -> dict[str, Any]:
    """boto3 clients for the checks (made once: each takes a fifth of a second)."""
    session = boto3.session.Session(
        aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY, region_name=REGION
    )
    services = ("s3", "sagemaker", "logs", "application-autoscaling")
    return {name: session.client(name, endpoint_url=server) for name in services}


@pytest.fixture
def aws(server: str, clients: dict[str, Any]) -> dict[str, Any]:
    """A clean server with the artifact bucket."""
    urllib.request.urlopen(urllib.request.Request(f"{server}/moto-api/reset", method="POST"), timeout=10)
    clients["s3"].create_bucket(Bucket=BUCKET)
    return clients


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def deploy(server: str, *arguments: str, tmp: Path, extra_env: dict[str, str] | None = None) -> Run:
    """The real CLI in a fresh interpreter, every AWS call to the server, nothing to AWS."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AWS_", "HF_", "XDG_")) and key.lower() not in ("http_proxy", "https_proxy")
    }
    environment.update(
        {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_CONFIG_FILE": str(tmp / "no-aws-config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(tmp / "no-aws-credentials"),
            "AWS_ENDPOINT_URL": "http://127.0.0.1:9",  # a client without --endpoint-url fails here
            "NO_PROXY": "127.0.0.1,localhost",
            "XDG_CONFIG_HOME": str(tmp / "config"),
            **(extra_env or {}),
        }
    )
    completed = subprocess.run(
        [sys.executable, "-m", "lmi_config", "deploy", *arguments, "--endpoint-url", server],
        capture_output=True,
        env=environment,
        cwd=tmp,
        timeout=180,
    )
    return Run(completed.returncode, completed.stdout.decode(), completed.stderr.decode())


def render(spec: Path, output_format: str) -> str:
    completed = subprocess.run(
        [sys.executable, "-m", "lmi_config", "render", str(spec), "--format", output_format],
        capture_output=True,
        check=True,
    )
    return completed.stdout.decode()


def everything(aws: Any) -> dict[str, list[str]]:
    """What exists on the server: models, endpoint configs, endpoints, objects, scalable targets."""
    sagemaker = aws["sagemaker"]
    return {
        "models": [row["ModelName"] for row in sagemaker.list_models()["Models"]],
        "configs": [
            row["EndpointConfigName"] for row in sagemaker.list_endpoint_configs()["EndpointConfigs"]
        ],
        "endpoints": [row["EndpointName"] for row in sagemaker.list_endpoints()["Endpoints"]],
        "objects": [row["Key"] for row in aws["s3"].list_objects_v2(Bucket=BUCKET).get("Contents", [])],
        "targets": [
            row["ResourceId"]
            for row in aws["application-autoscaling"].describe_scalable_targets(ServiceNamespace="sagemaker")[
                "ScalableTargets"
            ]
        ],
    }


EMPTY = {"models": [], "configs": [], "endpoints": [], "objects": [], "targets": []}
COMMON = ("--region", REGION, "--role", ROLE, "--yes", "--poll-seconds", "0.05")


def variant_of(aws: Any, endpoint: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the endpoint config's only variant, the model's primary container) behind an endpoint."""
    sagemaker = aws["sagemaker"]
    config_name = sagemaker.describe_endpoint(EndpointName=endpoint)["EndpointConfigName"]
    variant = sagemaker.describe_endpoint_config(EndpointConfigName=config_name)["ProductionVariants"][0]
    container = sagemaker.describe_model(ModelName=variant["ModelName"])["PrimaryContainer"]
    return variant, container


def test_a_dry_run_prints_every_call_and_leaves_the_server_empty(
    aws: Any, server: str, tmp_path: Path
) -> None:
    run = deploy(server, str(QWEN), "--dry-run", "--region", REGION, "--role", ROLE, tmp=tmp_path)
    assert run.returncode == 0, run.output
    for call in ("sagemaker.create_model", "sagemaker.create_endpoint_config", "sagemaker.create_endpoint"):
        assert call in run.stdout
    assert everything(aws) == EMPTY
    as_json = deploy(server, str(QWEN), "--dry-run", "--format", "json", "--region", REGION, tmp=tmp_path)
    assert as_json.returncode == 0, as_json.output
    plan = json.loads(as_json.stdout)
    assert [call["operation"] for call in plan["calls"]] == [
        "create_model",
        "create_endpoint_config",
        "create_endpoint",
    ]
    assert everything(aws) == EMPTY


def test_the_environment_is_the_rendered_configuration_and_the_endpoint_comes_up(
    aws: Any, server: str, tmp_path: Path
) -> None:
    run = deploy(server, str(QWEN), *COMMON, "--endpoint-name", "qwen-chat", tmp=tmp_path)
    assert run.returncode == 0, run.output
    assert "endpoint qwen-chat is InService" in run.stdout
    variant, container = variant_of(aws, "qwen-chat")
    assert (
        container["Image"]
        == "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.36.0-lmi27.0.0-cu130"
    )
    assert container["Environment"] == json.loads(render(QWEN, "json"))
    assert "ModelDataSource" not in container
    assert variant["InstanceType"] == "ml.g5.12xlarge"
    assert variant["InitialInstanceCount"] == 1
    # 7B on a g5: the judge's recommended loading timeout (its 1800 s floor) bounds the health check;
    # g5 refuses VolumeSizeInGB, and without S3 model data there is nothing for SageMaker to download
    assert variant["ContainerStartupHealthCheckTimeoutInSeconds"] == 1800
    assert "VolumeSizeInGB" not in variant
    assert "ModelDataDownloadTimeoutInSeconds" not in variant
    assert aws["sagemaker"].describe_endpoint(EndpointName="qwen-chat")["EndpointStatus"] == "InService"


def test_serving_properties_and_files_are_uploaded_exactly_and_attached_uncompressed(
    aws: Any, server: str, tmp_path: Path
) -> None:
    (tmp_path / "model.py").write_text("def handle(inputs):\n    return None\n")
    (tmp_path / "requirements.txt").write_text("sentencepiece==0.2.0\n")
    arguments = (
        str(LLAMA_INF2),
        *COMMON,
        "--endpoint-name",
        "llama-inf2",
        "--s3-prefix",
        f"s3://{BUCKET}/lmi",
    )
    run = deploy(server, *arguments, "--file", "model.py", "--file", "requirements.txt", tmp=tmp_path)
    assert run.returncode == 0, run.output
    variant, container = variant_of(aws, "llama-inf2")
    source = container["ModelDataSource"]["S3DataSource"]
    assert source["S3DataType"] == "S3Prefix" and source["CompressionType"] == "None"
    prefix = f"lmi/{variant['ModelName']}/"
    assert source["S3Uri"] == f"s3://{BUCKET}/{prefix}"
    objects = {
        key: aws["s3"].get_object(Bucket=BUCKET, Key=key)["Body"].read() for key in everything(aws)["objects"]
    }
    assert objects == {
        prefix + "serving.properties": render(LLAMA_INF2, "properties").encode(),
        prefix + "model.py": (tmp_path / "model.py").read_bytes(),
        prefix + "requirements.txt": (tmp_path / "requirements.txt").read_bytes(),
    }
    assert container["Image"].endswith("/djl-inference:0.30.0-neuronx-sdk2.20.1")
    assert container["Environment"] == {}
    assert variant["InstanceType"] == "ml.inf2.24xlarge"
    # inf2 takes a volume: 15 GiB of bf16 weights x 2 for the compiled artifacts
    assert variant["VolumeSizeInGB"] == 30
    assert variant["ContainerStartupHealthCheckTimeoutInSeconds"] == 1800
    assert variant["ModelDataDownloadTimeoutInSeconds"] == 1800


def test_a_failed_endpoint_prints_the_reason_and_the_log_and_leaves_nothing(
    aws: Any, server: str, tmp_path: Path
) -> None:
    group = "/aws/sagemaker/Endpoints/broken-llama"
    aws["logs"].create_log_group(logGroupName=group)
    aws["logs"].create_log_stream(logGroupName=group, logStreamName="AllTraffic/i-0123456789")
    now_ms = int(time.time() * 1000)  # CloudWatch (and moto) drop events older than 14 days
    aws["logs"].put_log_events(
        logGroupName=group,
        logStreamName="AllTraffic/i-0123456789",
        logEvents=[
            {"timestamp": now_ms - 1000, "message": "Loading model with tensor_parallel_degree=4"},
            {"timestamp": now_ms, "message": DEVICE_ERROR},
        ],
    )
    arguments = (
        str(LLAMA_INF2),
        *COMMON,
        "--endpoint-name",
        "broken-llama",
        "--s3-prefix",
        f"s3://{BUCKET}/lmi",
        "--secret-env",
        "HF_TOKEN",  # a gated model: deploy refuses it without a token for the container
    )
    run = deploy(server, *arguments, tmp=tmp_path, extra_env={"HF_TOKEN": HF_TOKEN})
    assert run.returncode == 3, run.output
    assert FAILURE_REASON in run.stdout
    assert DEVICE_ERROR in run.stdout
    assert "removed: " in run.stdout and "endpoint broken-llama" in run.stdout
    assert everything(aws) == EMPTY


def test_moto_still_rejects_inf2_without_the_patch_and_the_model_is_removed(
    aws: Any, server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(FakeEndpointConfig, "validate_instance_type", ORIGINAL_VALIDATE)
    with pytest.raises(aws["sagemaker"].exceptions.ClientError, match="instanceType"):
        aws["sagemaker"].create_endpoint_config(
            EndpointConfigName="direct",
            ProductionVariants=[
                {"VariantName": "AllTraffic", "ModelName": "m", "InstanceType": "ml.inf2.24xlarge"}
            ],
        )
    run = deploy(
        server, str(LLAMA_INF2), *COMMON, "--endpoint-name", "llama-unpatched", "--secret-env", "HF_TOKEN",
        tmp=tmp_path, extra_env={"HF_TOKEN": HF_TOKEN},
    )  # fmt: skip
    assert run.returncode == 3, run.output
    assert "deploy failed at sagemaker.create_endpoint_config" in run.stdout
    assert "failed to satisfy constraint" in run.stdout
    assert "removed: model llama-unpatched-" in run.stdout
    assert everything(aws) == EMPTY


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (("--endpoint-name", "my_endpoint"), "endpoint name 'my_endpoint' does not match"),
        (("--health-check-timeout", "7200"), "ContainerStartupHealthCheckTimeoutInSeconds=7200 is above"),
        (("--volume-size", "100"), "ml.g5 instances do not accept VolumeSizeInGB"),
        (("--role", "SageMakerExecution"), "the execution role ARN 'SageMakerExecution' is 18 characters"),
        (
            ("--role", "role/SageMakerExecution"),
            "the execution role 'role/SageMakerExecution' does not match",
        ),
        (("--tag", "owner=a#b"), "only letters, digits, spaces"),
        (("--autoscale", "2:4"), "--instance-count 1 is outside --autoscale 2:4"),
        (("--env", "NOTE=" + "x" * 1100), "NOTE: value is 1100 characters; SageMaker allows 1024"),
        (
            ("--instance", "ml.inf2.24xlarge"),
            "LMI 0.36.0 (LMI v27) has no Inferentia2 / Trainium (Neuron) image",
        ),
    ],
)
def test_limit_violations_are_refused_before_any_call(
    aws: Any, server: str, tmp_path: Path, arguments: tuple[str, ...], expected: str
) -> None:
    run = deploy(server, str(QWEN), *COMMON, *arguments, tmp=tmp_path)
    assert run.returncode == 2, run.output
    assert expected in run.stderr
    assert everything(aws) == EMPTY


def test_too_many_environment_variables_are_refused_before_any_call(
    aws: Any, server: str, tmp_path: Path
) -> None:
    many = [part for index in range(95) for part in ("--env", f"EXTRA_{index}=x")]
    run = deploy(server, str(QWEN), *COMMON, *many, tmp=tmp_path)
    assert run.returncode == 2, run.output
    assert "SageMaker allows at most 100 environment variables" in run.stderr
    assert everything(aws) == EMPTY


def test_update_rolls_the_endpoint_to_a_new_config_and_retires_the_old_one(
    aws: Any, server: str, tmp_path: Path
) -> None:
    first = deploy(server, str(QWEN), *COMMON, "--endpoint-name", "qwen-rolling", tmp=tmp_path)
    assert first.returncode == 0, first.output
    before = aws["sagemaker"].describe_endpoint(EndpointName="qwen-rolling")["EndpointConfigName"]
    again = deploy(server, str(QWEN), *COMMON, "--endpoint-name", "qwen-rolling", tmp=tmp_path)
    assert again.returncode == 3 and "already exists" in again.stderr
    second = deploy(
        server, str(QWEN), *COMMON, "--endpoint-name", "qwen-rolling", "--set", "max_model_len=4096", "--update",
        tmp=tmp_path,
    )  # fmt: skip
    assert second.returncode == 0, second.output
    _, container = variant_of(aws, "qwen-rolling")
    after = aws["sagemaker"].describe_endpoint(EndpointName="qwen-rolling")["EndpointConfigName"]
    assert after != before
    assert container["Environment"]["OPTION_MAX_MODEL_LEN"] == "4096"
    state = everything(aws)
    assert state["configs"] == [after] and len(state["models"]) == 1


def test_update_of_a_missing_endpoint_is_refused(aws: Any, server: str, tmp_path: Path) -> None:
    run = deploy(server, str(QWEN), *COMMON, "--endpoint-name", "nothing-here", "--update", tmp=tmp_path)
    assert run.returncode == 3, run.output
    assert "there is no endpoint nothing-here" in run.stderr
    assert everything(aws) == EMPTY


def test_autoscaling_is_registered_and_delete_removes_everything(
    aws: Any, server: str, tmp_path: Path
) -> None:
    arguments = ("--endpoint-name", "qwen-scaled", "--autoscale", "1:3", "--s3-prefix", f"s3://{BUCKET}/lmi")
    run = deploy(server, str(QWEN), *COMMON, *arguments, "--delivery", "s3", tmp=tmp_path)
    assert run.returncode == 0, run.output
    targets = aws["application-autoscaling"].describe_scalable_targets(ServiceNamespace="sagemaker")[
        "ScalableTargets"
    ]
    assert [(row["ResourceId"], row["MinCapacity"], row["MaxCapacity"]) for row in targets] == [
        ("endpoint/qwen-scaled/variant/AllTraffic", 1, 3)
    ]
    policies = aws["application-autoscaling"].describe_scaling_policies(ServiceNamespace="sagemaker")
    metric = policies["ScalingPolicies"][0]["TargetTrackingScalingPolicyConfiguration"]
    assert (
        metric["PredefinedMetricSpecification"]["PredefinedMetricType"]
        == "SageMakerVariantInvocationsPerInstance"
    )
    removed = deploy(
        server, "--delete", "qwen-scaled", "--region", REGION, "--purge-s3", "--yes", tmp=tmp_path
    )
    assert removed.returncode == 0, removed.output
    assert everything(aws) == EMPTY
    missing = deploy(server, "--delete", "qwen-scaled", "--region", REGION, "--yes", tmp=tmp_path)
    assert missing.returncode == 3 and "no endpoint qwen-scaled" in missing.stderr


def test_no_secret_appears_in_any_output(aws: Any, server: str, tmp_path: Path) -> None:
    secret = {"HF_TOKEN": HF_TOKEN}
    runs = [
        deploy(server, str(QWEN), *COMMON, "--secret-env", "HF_TOKEN", "--dry-run", tmp=tmp_path, extra_env=secret),
        deploy(
            server, str(QWEN), *COMMON, "--secret-env", "HF_TOKEN", "--dry-run", "--format", "json",
            tmp=tmp_path, extra_env=secret,
        ),
        deploy(server, str(QWEN), *COMMON, "--secret-env", "HF_TOKEN", "--endpoint-name", "gated", tmp=tmp_path, extra_env=secret),
        deploy(
            server, str(QWEN), *COMMON, "--secret-env", "HF_TOKEN", "--endpoint-name", "broken-gated",
            "--format", "json", tmp=tmp_path, extra_env=secret,
        ),
    ]  # fmt: skip
    assert [run.returncode for run in runs] == [0, 0, 0, 3], [run.output for run in runs]
    for run in runs:
        assert HF_TOKEN not in run.output
        assert SECRET_KEY not in run.output
    assert json.loads(runs[1].stdout)["environment"]["HF_TOKEN"] == "****"
    _, container = variant_of(aws, "gated")
    assert container["Environment"]["HF_TOKEN"] == HF_TOKEN  # delivered, just never shown


def test_inside_a_notebook_the_role_comes_from_the_sagemaker_sdk(
    aws: Any, server: str, tmp_path: Path
) -> None:
    sdk = tmp_path / "sdk" / "sagemaker"
    sdk.mkdir(parents=True)
    notebook_role = "arn:aws:iam::123456789012:role/FromTheNotebook"
    (sdk / "__init__.py").write_text(f"def get_execution_role():\n    return {notebook_role!r}\n")
    arguments = (str(QWEN), "--region", REGION, "--yes", "--endpoint-name", "from-notebook", "--no-wait")
    run = deploy(server, *arguments, tmp=tmp_path, extra_env={"PYTHONPATH": str(tmp_path / "sdk")})
    assert run.returncode == 0, run.output
    assert "not waiting (--no-wait)" in run.stdout
    _, container = variant_of(aws, "from-notebook")
    model = aws["sagemaker"].list_models()["Models"][0]["ModelName"]
    assert aws["sagemaker"].describe_model(ModelName=model)["ExecutionRoleArn"] == notebook_role
    assert container["Image"].endswith(":0.36.0-lmi27.0.0-cu130")


def test_files_named_in_the_spec_are_uploaded_like_file_flags(aws: Any, server: str, tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text("def handle(inputs):\n    return None\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(LLAMA_INF2.read_text(encoding="utf-8") + "files:\n  - model.py\n")
    run = deploy(
        server,
        str(spec),
        *COMMON,
        "--endpoint-name",
        "llama-files",
        "--s3-prefix",
        f"s3://{BUCKET}/lmi",
        tmp=tmp_path,
    )
    assert run.returncode == 0, run.output
    variant, _ = variant_of(aws, "llama-files")
    prefix = f"lmi/{variant['ModelName']}/"
    objects = everything(aws)["objects"]
    assert prefix + "model.py" in objects and prefix + "serving.properties" in objects
