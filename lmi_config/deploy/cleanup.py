"""No orphans: remove what a failed run created, and ``deploy --delete NAME``.

A failed try used to leave a model and an endpoint config behind every time; here each created
resource is recorded as it is created and removed in reverse order when a later step fails. The
output lists what was created and what was removed (and what could not be).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lmi_config.deploy.aws import Clients, aws_errors, describe_error, is_missing
from lmi_config.deploy.progress import wait_until_deleted
from lmi_config.errors import DeployError

Report = Callable[[str, bool], None]
DELETE_WAIT_SECONDS = 900.0


@dataclass
class Removal:
    """What was removed and what could not be (each with the reason)."""

    removed: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str, str]] = field(default_factory=list)  # kind, name, why


def _remove_one(clients: Clients, kind: str, name: str, poll_seconds: float) -> None:
    sagemaker = clients("sagemaker")
    if kind == "scalable-target":
        clients("application-autoscaling").deregister_scalable_target(
            ServiceNamespace="sagemaker",
            ResourceId=name,
            ScalableDimension="sagemaker:variant:DesiredInstanceCount",
        )
    elif kind == "endpoint":
        sagemaker.delete_endpoint(EndpointName=name)
        if not wait_until_deleted(
            sagemaker, name, timeout_seconds=DELETE_WAIT_SECONDS, poll_seconds=poll_seconds
        ):
            raise DeployError(f"endpoint {name} still exists after {int(DELETE_WAIT_SECONDS)} s")
    elif kind == "endpoint-config":
        sagemaker.delete_endpoint_config(EndpointConfigName=name)
    elif kind == "model":
        sagemaker.delete_model(ModelName=name)
    elif kind == "s3-object":
        bucket, _, key = name.partition("/")
        clients("s3").delete_object(Bucket=bucket, Key=key)
    else:  # pragma: no cover - the kinds are ours
        raise ValueError(kind)


def remove(
    clients: Clients, resources: list[tuple[str, str]], report: Report, *, poll_seconds: float = 5.0
) -> Removal:
    """Remove resources newest first; a resource already gone counts as removed."""
    result = Removal()
    for kind, name in reversed(resources):
        try:
            _remove_one(clients, kind, name, poll_seconds)
        except aws_errors() as error:
            if not is_missing(error):
                result.failed.append((kind, name, describe_error(error)))
                report(f"  could not remove {kind} {name}: {describe_error(error)}", False)
                continue
        except DeployError as error:
            result.failed.append((kind, name, str(error)))
            continue
        result.removed.append((kind, name))
        report(f"  removed {kind} {name}", False)
    return result


def _variant_resources(clients: Clients, endpoint: str, config: dict[str, Any]) -> list[tuple[str, str]]:
    """The scalable targets registered for the endpoint's variants."""
    variants = [variant["VariantName"] for variant in config.get("ProductionVariants", [])]
    resource_ids = [f"endpoint/{endpoint}/variant/{variant}" for variant in variants]
    if not resource_ids:
        return []
    try:
        targets = clients("application-autoscaling").describe_scalable_targets(
            ServiceNamespace="sagemaker", ResourceIds=resource_ids
        )["ScalableTargets"]
    except aws_errors():
        return []  # no Application Auto Scaling access: nothing of ours to remove there
    return [("scalable-target", target["ResourceId"]) for target in targets]


def _model_data_objects(clients: Clients, models: list[str]) -> list[tuple[str, str]]:
    """Every object under the models' uncompressed S3 prefixes (for --purge-s3)."""
    objects: list[tuple[str, str]] = []
    for model in models:
        try:
            container = clients("sagemaker").describe_model(ModelName=model).get("PrimaryContainer", {})
        except aws_errors():
            continue
        source = (container.get("ModelDataSource") or {}).get("S3DataSource", {})
        uri = source.get("S3Uri") if source.get("S3DataType") == "S3Prefix" else None
        if not uri or not uri.startswith("s3://"):
            continue
        bucket, _, prefix = uri[len("s3://") :].partition("/")
        paginator = clients("s3").get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
            objects.extend(("s3-object", f"{bucket}/{item['Key']}") for item in page.get("Contents", []))
    return objects


def delete_endpoint(
    clients: Clients, name: str, report: Report, *, purge_s3: bool = False, poll_seconds: float = 5.0
) -> Removal:
    """Remove an endpoint with its config, its models, its scaling target (and with ``purge_s3``
    the objects under its models' S3 prefixes). Raises :class:`DeployError` when it does not exist."""
    sagemaker = clients("sagemaker")
    try:
        endpoint = sagemaker.describe_endpoint(EndpointName=name)
    except aws_errors() as error:
        if is_missing(error):
            raise DeployError(f"no endpoint {name} in {clients.region}") from None
        raise DeployError(describe_error(error)) from None
    config_name = endpoint["EndpointConfigName"]
    try:
        config = sagemaker.describe_endpoint_config(EndpointConfigName=config_name)
    except aws_errors() as error:
        if not is_missing(error):
            raise DeployError(describe_error(error)) from None
        config = {}
    models = [
        variant["ModelName"] for variant in config.get("ProductionVariants", []) if variant.get("ModelName")
    ]
    objects = _model_data_objects(clients, models) if purge_s3 else []
    # removed newest first: objects, models, config, endpoint, scaling target
    resources = [
        *objects,
        *[("model", model) for model in models],
        *([("endpoint-config", config_name)] if config else []),
        ("endpoint", name),
        *_variant_resources(clients, name, config),
    ]
    return remove(clients, resources, report, poll_seconds=poll_seconds)
