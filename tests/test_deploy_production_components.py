"""Inference components: one endpoint hosting several models and an adapter, each with its own
accelerators, memory and copies — through the real CLI, against moto's HTTP server on 127.0.0.1
behind the SageMaker stand-in (tests/sagemaker_standin.py). moto does not implement inference
components (HTTP 500), so the stand-in serves them over SageMaker's wire protocol, validating each
request against botocore's service model; everything else (models, endpoint configs, endpoints)
is moto's. Each test checks the requests SageMaker received and what stays after delete or rollback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from conftest import FIXTURES
from sagemaker_standin import StandIn, production_server, reset
from test_deploy_server import ACCESS_KEY, REGION, ROLE, SECRET_KEY, Run, deploy

COMPONENTS = FIXTURES / "deploy" / "qwen-components-g5.yaml"
NEURON_COMPONENTS = FIXTURES / "deploy" / "llama-components-inf2.yaml"
COMMON = ("--region", REGION, "--role", ROLE, "--yes", "--poll-seconds", "0.05")
EMPTY = {"models": [], "configs": [], "endpoints": [], "components": []}


@pytest.fixture(scope="module")
def standin() -> Iterator[StandIn]:
    with production_server() as state:
        yield state


@pytest.fixture(scope="module")
def sagemaker(standin: StandIn) -> Any:
    session = boto3.session.Session(
        aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY, region_name=REGION
    )
    return session.client("sagemaker", endpoint_url=standin.url)


@pytest.fixture
def clean(standin: StandIn) -> StandIn:
    reset(standin)
    return standin


def inventory(sagemaker: Any) -> dict[str, list[str]]:
    return {
        "models": sorted(row["ModelName"] for row in sagemaker.list_models()["Models"]),
        "configs": sorted(
            row["EndpointConfigName"] for row in sagemaker.list_endpoint_configs()["EndpointConfigs"]
        ),
        "endpoints": sorted(row["EndpointName"] for row in sagemaker.list_endpoints()["Endpoints"]),
        "components": sorted(
            row["InferenceComponentName"]
            for row in sagemaker.list_inference_components()["InferenceComponents"]
        ),
    }


def run(standin: StandIn, *arguments: str, tmp: Path) -> Run:
    return deploy(standin.url, *arguments, tmp=tmp)


def spec_with(tmp: Path, text: str) -> Path:
    path = tmp / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_two_models_and_an_adapter_share_one_endpoint_each_with_its_accelerators_memory_and_copies(
    clean: StandIn, sagemaker: Any, tmp_path: Path
) -> None:
    deployed = run(clean, str(COMPONENTS), *COMMON, "--endpoint-name", "qwen-shared", tmp=tmp_path)
    assert deployed.returncode == 0, deployed.output
    [config] = clean.requests("CreateEndpointConfig")
    [variant] = config["ProductionVariants"]
    assert "ModelName" not in variant and variant["InstanceType"] == "ml.g5.12xlarge"
    assert config["ExecutionRoleArn"] == ROLE  # an endpoint of components carries the role itself
    models = {
        body["ModelName"]: body["PrimaryContainer"]["Environment"] for body in clean.requests("CreateModel")
    }
    assert len(models) == 2
    created = {body["InferenceComponentName"]: body for body in clean.requests("CreateInferenceComponent")}
    assert list(created) == [
        "qwen-shared-chat",
        "qwen-shared-batch",
        "qwen-shared-support-lora",
    ]  # the adapter last
    chat, batch, lora = created.values()
    assert chat["Specification"]["ComputeResourceRequirements"]["NumberOfAcceleratorDevicesRequired"] == 2
    assert chat["RuntimeConfig"] == {"CopyCount": 1}
    assert models[chat["Specification"]["ModelName"]]["OPTION_TENSOR_PARALLEL_DEGREE"] == "2"
    # TP auto became the one accelerator the component is given
    assert batch["Specification"]["ComputeResourceRequirements"]["NumberOfAcceleratorDevicesRequired"] == 1
    assert batch["RuntimeConfig"] == {"CopyCount": 2}
    assert models[batch["Specification"]["ModelName"]]["OPTION_TENSOR_PARALLEL_DEGREE"] == "1"
    # host memory per copy: the weights of Qwen2.5-7B in bf16, as the memory model counts them
    assert 14_000 < batch["Specification"]["ComputeResourceRequirements"]["MinMemoryRequiredInMb"] < 15_000
    assert batch["Specification"]["StartupParameters"]["ContainerStartupHealthCheckTimeoutInSeconds"] == 1800
    assert lora["Specification"] == {
        "BaseInferenceComponentName": "qwen-shared-chat",
        "Container": {"ArtifactUrl": "s3://lmi-artifacts/adapters/support/"},
    }
    assert "RuntimeConfig" not in lora
    assert inventory(sagemaker)["components"] == sorted(created)

    deleted = run(clean, "--delete", "qwen-shared", "--region", REGION, "--yes", tmp=tmp_path)
    assert deleted.returncode == 0, deleted.output
    order = [body["InferenceComponentName"] for body in clean.requests("DeleteInferenceComponent")]
    assert order[0] == "qwen-shared-support-lora" and sorted(order) == sorted(
        created
    )  # the adapter before its base
    assert inventory(sagemaker) == EMPTY


def test_a_component_that_fails_to_load_rolls_back_the_components_endpoint_config_and_models(
    clean: StandIn, sagemaker: Any, tmp_path: Path
) -> None:
    spec = spec_with(tmp_path, COMPONENTS.read_text(encoding="utf-8").replace("name: batch", "name: broken"))
    failed = run(clean, str(spec), *COMMON, "--endpoint-name", "qwen-shared", tmp=tmp_path)
    assert failed.returncode == 3, failed.output
    assert (
        "inference component qwen-shared-broken is Failed: The container did not pass the ping health check"
        in failed.stdout
    )
    # removed newest first: the components before the endpoint (SageMaker refuses the endpoint first)
    assert [body["InferenceComponentName"] for body in clean.requests("DeleteInferenceComponent")] == [
        "qwen-shared-broken", "qwen-shared-chat",
    ]  # fmt: skip
    assert inventory(sagemaker) == EMPTY


def test_a_refused_component_call_rolls_back_what_the_run_made(
    clean: StandIn, sagemaker: Any, tmp_path: Path
) -> None:
    clean.fail("SageMaker.CreateInferenceComponent", nth=2)
    failed = run(clean, str(COMPONENTS), *COMMON, "--endpoint-name", "qwen-shared", tmp=tmp_path)
    assert failed.returncode == 3, failed.output
    assert "deploy failed at sagemaker.create_inference_component" in failed.stdout
    assert inventory(sagemaker) == EMPTY


def test_delete_keeps_an_endpoint_running_a_component_lmi_config_did_not_make(
    clean: StandIn, sagemaker: Any, tmp_path: Path
) -> None:
    deployed = run(clean, str(COMPONENTS), *COMMON, "--endpoint-name", "qwen-shared", tmp=tmp_path)
    assert deployed.returncode == 0, deployed.output
    model = clean.requests("CreateModel")[0]["ModelName"]
    sagemaker.create_inference_component(
        InferenceComponentName="team-b-experiment", EndpointName="qwen-shared", VariantName="AllTraffic",
        Specification={"ModelName": model, "ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1, "MinMemoryRequiredInMb": 1024}},
        RuntimeConfig={"CopyCount": 1},
    )  # fmt: skip
    before = inventory(sagemaker)
    kept = run(clean, "--delete", "qwen-shared", "--region", REGION, "--yes", tmp=tmp_path)
    assert kept.returncode == 1, kept.output
    assert (
        "endpoint qwen-shared: inference component team-b-experiment (not lmi-config's) runs on it"
        in kept.output
    )
    assert inventory(sagemaker) == before


@pytest.mark.parametrize(
    ("replace", "expected"),
    [
        pytest.param(
            ("tensor_parallel_degree: 2", "tensor_parallel_degree: 4"),
            "deploy.components.0.options.tensor_parallel_degree: tensor_parallel_degree 4 but component chat is "
            "given 2 GPUs: the container shards the model over 4 GPUs and SageMaker hands each copy 2; set accelerators: 4",
            id="tp-differs-from-accelerators",
        ),
        pytest.param(
            ("copies: 2", "copies: 3"),
            "the components need 5 accelerators (chat 1 x 2, batch 3 x 1) and 1 x ml.g5.12xlarge has 4",
            id="more-than-the-instance-has",
        ),
        pytest.param(
            ("accelerators: 2\n", "accelerators: 8\n"),
            "component chat: a copy needs 8 GPUs and ml.g5.12xlarge has 4 GPUs",
            id="a-copy-larger-than-the-instance",
        ),
        pytest.param(
            ("base: chat", "base: nothing"),
            "adapter s3://lmi-artifacts/adapters/support/ needs base: the name of a component with a model of its own",
            id="adapter-without-base",
        ),
    ],
)
def test_components_that_cannot_fit_or_shard_are_refused_before_any_call(
    clean: StandIn, tmp_path: Path, replace: tuple[str, str], expected: str
) -> None:
    text = COMPONENTS.read_text(encoding="utf-8")
    assert replace[0] in text
    spec = spec_with(tmp_path, text.replace(*replace, 1))
    refused = run(clean, str(spec), *COMMON, "--endpoint-name", "qwen-shared", tmp=tmp_path)
    assert refused.returncode == 2, refused.output
    assert expected in refused.stderr
    assert clean.received == []


def test_each_component_is_judged_by_the_memory_model_on_the_accelerators_it_is_given(
    clean: StandIn, tmp_path: Path
) -> None:
    text = COMPONENTS.read_text(encoding="utf-8").replace(
        "    - name: batch\n", "    - name: batch\n      model: Qwen/Qwen2.5-72B-Instruct\n"
    )
    refused = run(
        clean, str(spec_with(tmp_path, text)), *COMMON, "--endpoint-name", "qwen-shared", tmp=tmp_path
    )
    assert refused.returncode == 1, refused.output
    assert (
        "component batch: LMI301 error [memory-exceeds-budget] Qwen/Qwen2.5-72B-Instruct needs"
        in refused.stderr
    )
    assert "at TP 1" in refused.stderr
    assert "nothing deployed" in refused.stderr and clean.received == []


def test_on_neuron_a_component_is_given_devices_and_its_tensor_parallelism_counts_their_cores(
    tmp_path: Path,
) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "lmi_config", "deploy", str(NEURON_COMPONENTS), "--dry-run", "--format", "json",
         "--region", REGION, "--endpoint-name", "llama-pair", "--secret-env", "HF_TOKEN"],
        capture_output=True, cwd=tmp_path, timeout=180,
        env={**os.environ, "HF_TOKEN": "hf_" + "FakeTokenForTheTests0123456789ab"},  # a gated model needs one
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr.decode()
    plan = json.loads(completed.stdout)
    components = [
        call["parameters"] for call in plan["calls"] if call["operation"] == "create_inference_component"
    ]
    assert [
        item["Specification"]["ComputeResourceRequirements"]["NumberOfAcceleratorDevicesRequired"]
        for item in components
    ] == [2, 2]
    models = {
        call["parameters"]["ModelName"]: call["parameters"]
        for call in plan["calls"]
        if call["operation"] == "create_model"
    }
    for item in components:
        environment = models[item["Specification"]["ModelName"]]["PrimaryContainer"]["Environment"]
        assert environment["OPTION_TENSOR_PARALLEL_DEGREE"] == "4"  # 2 Neuron devices x 2 NeuronCores
    assert (
        plan["sizing"]["volume_size_gb"] == 60
    )  # inf2 takes a volume: both copies' weights x 2 for the compile


def test_moto_itself_still_does_not_serve_inference_components(standin: StandIn) -> None:
    """The stand-in serves them because moto does not; a moto release that does is noticed here."""
    from botocore.config import Config

    session = boto3.session.Session(
        aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY, region_name=REGION
    )
    moto = session.client(
        "sagemaker", endpoint_url=standin.upstream, config=Config(retries={"max_attempts": 1})
    )
    with pytest.raises(moto.exceptions.ClientError, match="500"):
        moto.list_inference_components()


def test_ctrl_c_while_the_components_are_created_removes_them_before_the_endpoint(
    clean: StandIn, sagemaker: Any, tmp_path: Path
) -> None:
    from test_deploy_safety import injected

    arguments = (str(COMPONENTS), *COMMON, "--endpoint-name", "qwen-shared")
    stopped = injected(
        clean.url, *arguments, tmp=tmp_path, at="CreateInferenceComponent:2", action="SIGINT", when="after"
    )
    assert stopped.returncode == 130, stopped.output
    assert sorted(body["InferenceComponentName"] for body in clean.requests("DeleteInferenceComponent")) == [
        "qwen-shared-batch", "qwen-shared-chat",
    ]  # fmt: skip
    assert inventory(sagemaker) == EMPTY
