"""One schema for the production options: every deploy flag is a key of the spec's `deploy:`
section, `lmi-config schema` shows them, and the Python API (`api.deploy_spec`) takes the same keys.
Dry runs only: nothing here calls AWS."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import FIXTURES, run_cli

from lmi_config import api
from lmi_config.cli.deploy_options import SETTINGS
from lmi_config.deploy import DeployRequest
from lmi_config.errors import InvalidArgument, SpecError

PRIVATE = FIXTURES / "deploy" / "llama-inf2-private.yaml"
ROLE = "arn:aws:iam::123456789012:role/SageMakerExecution"
REQUEST = DeployRequest(region="us-east-1", role=ROLE)


def _schema_node(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """A property's schema with its $ref (or its Optional's $ref) followed."""
    for option in [node, *node.get("anyOf", [])]:
        if "$ref" in option:
            return dict(schema["$defs"][option["$ref"].rsplit("/", 1)[-1]])
    return node


def test_every_production_flag_is_a_key_of_the_schema_lmi_config_schema_prints() -> None:
    printed = run_cli("schema")
    assert printed.returncode == 0, printed.stderr
    schema = json.loads(printed.stdout)
    deploy = _schema_node(schema, schema["properties"]["deploy"])
    for key, flag in SETTINGS.values():
        node = deploy
        for part in key.split("."):
            assert part in node["properties"], f"{flag}: deploy.{key} is not in `lmi-config schema`"
            node = _schema_node(schema, node["properties"][part])
    components = _schema_node(schema, deploy["properties"]["components"]["items"])
    assert {"accelerators", "memory_mb", "copies", "adapter", "base"} <= set(components["properties"])


def plan_of(**arguments: Any) -> Any:
    return api.deploy_spec(PRIVATE, REQUEST, dry_run=True, **arguments).plan


def call(plan: Any, operation: str) -> dict[str, Any]:
    return next(item.parameters for item in plan.calls if item.operation == operation)


def test_deploy_spec_deploys_the_spec_file_with_its_production_options() -> None:
    plan = plan_of()
    model = call(plan, "create_model")
    assert model["VpcConfig"]["Subnets"] == ["subnet-0a1b2c3d", "subnet-0e5f6a7b"]
    assert model["EnableNetworkIsolation"] is True
    assert call(plan, "create_endpoint_config")["KmsKeyId"] == "alias/lmi-volume"


def test_deploy_spec_settings_replace_the_spec_values_key_by_key() -> None:
    plan = plan_of(
        settings={"data_capture.sampling_percentage": 5, "async.output": "s3://lmi-artifacts/elsewhere/"}
    )
    config = call(plan, "create_endpoint_config")
    assert config["DataCaptureConfig"]["InitialSamplingPercentage"] == 5
    assert config["AsyncInferenceConfig"]["OutputConfig"]["S3OutputPath"] == "s3://lmi-artifacts/elsewhere/"
    assert (
        config["AsyncInferenceConfig"]["OutputConfig"]["S3FailurePath"] == "s3://lmi-artifacts/async/failed/"
    )


@pytest.mark.parametrize(
    ("settings", "error", "expected"),
    [
        (
            {"network.isolation": "perhaps"},
            SpecError,
            "settings['network.isolation']: deploy.network.isolation",
        ),
        ({"network.egress": "none"}, SpecError, "settings['network.egress']: egress none"),
        ({"serverless.memory_mb": 2048}, SpecError, "a serverless endpoint has no GPU and no Neuron device"),
        ("network.isolation=true", InvalidArgument, "settings: str is not allowed"),
    ],
)
def test_deploy_spec_refuses_a_setting_naming_it(
    settings: Any, error: type[Exception], expected: str
) -> None:
    with pytest.raises(error) as raised:
        plan_of(settings=settings)
    assert expected in str(raised.value)


def test_an_update_plan_carries_its_deployment_config_and_a_preview_that_says_it_could_not_read() -> None:
    request = DeployRequest(region="us-east-1", role=ROLE, update=True, endpoint_url="http://127.0.0.1:9")
    settings = {"update.traffic": "linear", "update.step_percent": 25, "update.wait_seconds": 120}
    plan = api.deploy_spec(PRIVATE, request, settings=settings, dry_run=True).plan
    routing = plan.deployment_config["BlueGreenUpdatePolicy"]["TrafficRoutingConfiguration"]
    assert routing == {
        "Type": "LINEAR",
        "WaitIntervalInSeconds": 120,
        "LinearStepSize": {"Type": "CAPACITY_PERCENT", "Value": 25},
    }
    assert call(plan, "update_endpoint")["DeploymentConfig"] == plan.deployment_config
    assert plan.preview.unavailable.startswith("cannot read endpoint llama-3-1-8b-instruct-inf2-24xlarge")
    # four linear steps of 120 s on top of the start-up
    assert any("the shifting (480 s)" in line for line in plan.preview.cost)
