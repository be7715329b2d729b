"""What hangs on an endpoint besides its config, for ``--delete``: its inference components, its
scaling target and policies, the alarm deploy made to scale it from zero — and what stays, named:
the alarms an update rolled back on (the user's), the asynchronous results and the captured
requests (the user's data, never removed, not even with ``--purge-s3``).

A component, like everything else, goes only when it carries the ``lmi-config:version`` tag; one
that does not keeps the endpoint (SageMaker removes an endpoint only without components).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lmi_config.deploy.aws import Clients, aws_errors, is_missing
from lmi_config.deploy.scaling import DIMENSION, from_zero_alarm_name
from lmi_config.deploy.tags import OWNER_TAG

Resource = tuple[str, str]
Keep = Callable[[str, str, str], None]


@dataclass
class AttachedPlan:
    """What goes with the endpoint (in creation order) and why the endpoint must stay, if it must."""

    components: list[Resource] = field(default_factory=list)
    models: list[str | None] = field(default_factory=list)  # the components' models
    scaling: list[Resource] = field(default_factory=list)  # the target, then its policies
    alarms: list[Resource] = field(default_factory=list)
    blocking: str | None = None


def component_rows(clients: Clients, endpoint_name: str) -> list[dict[str, Any]]:
    """The inference components on an endpoint."""
    paginator = clients("sagemaker").get_paginator("list_inference_components")
    return [
        row
        for page in paginator.paginate(EndpointNameEquals=endpoint_name)
        for row in page.get("InferenceComponents", [])
    ]


def _describe_component(clients: Clients, name: str) -> dict[str, Any] | None:
    try:
        return dict(clients("sagemaker").describe_inference_component(InferenceComponentName=name))
    except aws_errors() as error:
        if is_missing(error):
            return None
        raise


def component_model(clients: Clients, row: dict[str, Any]) -> str | None:
    """The model an inference component runs (None for an adapter, or one already gone)."""
    described = _describe_component(clients, row["InferenceComponentName"]) or {}
    return (described.get("Specification") or {}).get("ModelName")


def _owned(clients: Clients, arn: str) -> bool:
    rows = clients("sagemaker").list_tags(ResourceArn=arn).get("Tags", [])
    return any(row.get("Key") == OWNER_TAG for row in rows)


def _components(
    clients: Clients, endpoint_name: str, components: dict[str, tuple[str, str | None]], keep: Keep
) -> AttachedPlan:
    found = AttachedPlan()
    bases: list[tuple[Resource, str | None]] = []
    adapters: list[Resource] = []
    foreign = []
    for name, (endpoint, model) in sorted(components.items()):
        if endpoint != endpoint_name:
            continue
        described = _describe_component(clients, name)
        if described is None:
            continue
        if not _owned(clients, described["InferenceComponentArn"]):
            foreign.append(name)
            keep("inference-component", name, f"it has no {OWNER_TAG} tag: lmi-config did not create it")
            continue
        specification = described.get("Specification") or {}
        if specification.get("BaseInferenceComponentName"):
            adapters.append(("inference-component", name))
        else:
            bases.append((("inference-component", name), model))
    if foreign:
        found.blocking = (
            f"inference component {', '.join(foreign)} (not lmi-config's) runs on it; SageMaker removes an "
            "endpoint only once its components are gone"
        )
        for (kind, name), _ in bases:
            keep(kind, name, f"endpoint {endpoint_name} stays")
        for kind, name in adapters:
            keep(kind, name, f"endpoint {endpoint_name} stays")
        return found
    # bases first, adapters after (removal runs newest first: adapters go before their base)
    found.components = [resource for resource, _ in bases] + adapters
    found.models = [model for _, model in bases]
    return found


def _scaling(clients: Clients, endpoint_name: str, described: dict[str, Any]) -> list[Resource]:
    """The scaling targets of the endpoint's variants, each followed by its policies."""
    variants = [variant["VariantName"] for variant in described.get("ProductionVariants", [])]
    resource_ids = [f"endpoint/{endpoint_name}/variant/{variant}" for variant in variants]
    if not resource_ids:
        return []
    scaling = clients("application-autoscaling")
    try:
        targets = scaling.describe_scalable_targets(ServiceNamespace="sagemaker", ResourceIds=resource_ids)[
            "ScalableTargets"
        ]
        found: list[Resource] = []
        for target in targets:
            found.append(("scalable-target", target["ResourceId"]))
            policies = scaling.describe_scaling_policies(
                ServiceNamespace="sagemaker", ResourceId=target["ResourceId"], ScalableDimension=DIMENSION
            )["ScalingPolicies"]
            found.extend(
                ("scaling-policy", f"{target['ResourceId']}|{policy['PolicyName']}")
                for policy in sorted(policies, key=lambda row: str(row.get("CreationTime", "")))
            )
    except aws_errors():
        return []  # no Application Auto Scaling access: nothing of ours to remove there
    return found


def _alarms(clients: Clients, endpoint_name: str, described: dict[str, Any], keep: Keep) -> list[Resource]:
    """The alarm deploy made to scale from zero (when it is deploy's); the rollback alarms stay."""
    rollback = ((described.get("LastDeploymentConfig") or {}).get("AutoRollbackConfiguration") or {}).get(
        "Alarms"
    ) or []
    for alarm in rollback:
        keep(
            "alarm",
            str(alarm.get("AlarmName")),
            "it rolled back the endpoint's updates; lmi-config did not make it",
        )
    name = from_zero_alarm_name(endpoint_name)
    cloudwatch = clients("cloudwatch")
    try:
        rows = cloudwatch.describe_alarms(AlarmNames=[name]).get("MetricAlarms", [])
        if not rows:
            return []
        tags = cloudwatch.list_tags_for_resource(ResourceARN=rows[0]["AlarmArn"]).get("Tags", [])
    except aws_errors():
        return []  # no CloudWatch access: nothing of ours to remove there
    if not any(tag.get("Key") == OWNER_TAG for tag in tags):
        keep("alarm", name, f"it has no {OWNER_TAG} tag: lmi-config did not create it")
        return []
    return [("alarm", name)]


def _user_data(clients: Clients, described: dict[str, Any], keep: Keep) -> None:
    """Asynchronous results and captured requests stay: they are the user's data, not deploy's."""
    name = described.get("EndpointConfigName")
    if not name:
        return
    try:
        config = clients("sagemaker").describe_endpoint_config(EndpointConfigName=name)
    except aws_errors():
        return
    output = (config.get("AsyncInferenceConfig") or {}).get("OutputConfig") or {}
    for key, what in (("S3OutputPath", "asynchronous results"), ("S3FailurePath", "asynchronous failures")):
        if output.get(key):
            keep("s3-prefix", output[key], f"the endpoint's {what}: the user's data, never removed")
    capture = (config.get("DataCaptureConfig") or {}).get("DestinationS3Uri")
    if capture:
        keep("s3-prefix", capture, "the endpoint's captured requests: the user's data, never removed")


def plan_attached(
    clients: Clients,
    endpoint_name: str,
    described: dict[str, Any],
    components: dict[str, tuple[str, str | None]],
    keep: Keep,
) -> AttachedPlan:
    """What goes with endpoint ``endpoint_name`` (``described``: its describe_endpoint) and what stays."""
    found = _components(clients, endpoint_name, components, keep)
    if found.blocking:
        return found
    found.scaling = _scaling(clients, endpoint_name, described)
    found.alarms = _alarms(clients, endpoint_name, described, keep)
    _user_data(clients, described, keep)
    return found
