"""SageMaker's API limits (``data/sagemaker_api.json``, generated from botocore's service model
by ``scripts/gen_sagemaker_api.py``): what ``deploy`` checks before its first call."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from lmi_config.knowledge import load_data


@dataclass(frozen=True)
class Bounds:
    """A shape's limits: lengths for strings, values for integers; the pattern, when there is one."""

    minimum: int | None
    maximum: int | None
    pattern: str | None = None


@dataclass(frozen=True)
class InferenceAmi:
    """One ``InferenceAmiVersion`` and the drivers its documentation lists."""

    name: str
    accelerator: str  # gpu | neuron
    nvidia_driver: str | None
    cuda: str | None
    neuron_driver: str | None


@dataclass(frozen=True)
class SageMakerLimits:
    """The limits of CreateModel / CreateEndpointConfig / CreateEndpoint that deploy checks."""

    names: dict[str, Bounds]  # model_name, endpoint_name, endpoint_config_name, variant_name
    environment_entries: int
    environment_key: Bounds
    environment_value: Bounds
    environment_total_bytes: int | None
    variant: dict[str, Bounds]  # container_startup_health_check_timeout_seconds, ...
    instance_types: frozenset[str]
    inference_amis: dict[str, InferenceAmi]
    tag_count: int
    tag_key: Bounds
    tag_value: Bounds
    role_arn: Bounds
    waiter_delay_seconds: int
    waiter_max_attempts: int
    botocore_version: str
    source: str


def _bounds(row: dict[str, Any]) -> Bounds:
    return Bounds(row.get("min"), row.get("max"), row.get("pattern"))


@cache
def sagemaker_limits() -> SageMakerLimits:
    """The limits, typed (read once)."""
    data = load_data("sagemaker_api.json")
    environment = data["environment"]
    return SageMakerLimits(
        names={key: _bounds(row) for key, row in data["names"].items()},
        environment_entries=int(environment["max_entries"]),
        environment_key=_bounds(environment["key"]),
        environment_value=_bounds(environment["value"]),
        environment_total_bytes=environment.get("total_max_bytes"),
        variant={key: _bounds(row) for key, row in data["variant"].items()},
        instance_types=frozenset(data["instance_types"]),
        inference_amis={
            row["name"]: InferenceAmi(
                row["name"], row["accelerator"], row["nvidia_driver"], row["cuda"], row["neuron_driver"]
            )
            for row in data["inference_amis"]
        },
        tag_count=int(data["tags"]["max_count"]),
        tag_key=_bounds(data["tags"]["key"]),
        tag_value=_bounds(data["tags"]["value"]),
        role_arn=_bounds(data["role_arn"]),
        waiter_delay_seconds=int(data["endpoint_waiter"]["delay_seconds"]),
        waiter_max_attempts=int(data["endpoint_waiter"]["max_attempts"]),
        botocore_version=data["botocore_version"],
        source=data["source"],
    )


@dataclass(frozen=True)
class DeployPolicy:
    """How deploy sizes what SageMaker does not size from the model (``data/deploy.json``)."""

    volume_factor_compiling: float
    volume_factor_loading: float
    provisioning_seconds: int
    log_lines: int
    log_group_prefix: str
    autoscaling_metric: str
    autoscaling_target: float
    scale_in_cooldown_seconds: int
    scale_out_cooldown_seconds: int


@cache
def deploy_policy() -> DeployPolicy:
    """The policy, typed (read once)."""
    data = load_data("deploy.json")
    volume, scaling = data["volume"], data["autoscaling"]
    return DeployPolicy(
        volume_factor_compiling=float(volume["weights_factor_compiling"]),
        volume_factor_loading=float(volume["weights_factor_loading"]),
        provisioning_seconds=int(data["wait"]["provisioning_seconds"]),
        log_lines=int(data["logs"]["lines"]),
        log_group_prefix=data["logs"]["log_group_prefix"],
        autoscaling_metric=scaling["metric"],
        autoscaling_target=float(scaling["target_invocations_per_instance"]),
        scale_in_cooldown_seconds=int(scaling["scale_in_cooldown_seconds"]),
        scale_out_cooldown_seconds=int(scaling["scale_out_cooldown_seconds"]),
    )
