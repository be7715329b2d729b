"""No orphans: remove what a failed or interrupted run created, and carry out ``deploy --delete``.

Each created resource is recorded as it is created and removed in reverse order when a later
step fails or the run is interrupted. What could not be removed is listed with the exact command
that removes it. What ``--delete`` removes is decided by :mod:`.deletion` before anything goes.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from lmi_config.deploy.aws import Clients, aws_errors, describe_error, is_missing
from lmi_config.deploy.deletion import DeletionPlan
from lmi_config.deploy.interrupt import INTERRUPTIONS, signal_of, termination_raises
from lmi_config.deploy.progress import wait_until_component_deleted, wait_until_deleted
from lmi_config.errors import DeployError

Report = Callable[[str, bool], None]
DELETE_WAIT_SECONDS = 900.0
_SCALABLE_DIMENSION = "sagemaker:variant:DesiredInstanceCount"
_BEHIND_AN_ENDPOINT = ("endpoint-config", "model", "s3-object")


@dataclass
class Removal:
    """What was removed, what could not be (each with the reason), and what was kept on purpose."""

    removed: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str, str]] = field(default_factory=list)  # kind, name, why
    kept: list[tuple[str, str, str]] = field(default_factory=list)  # kind, name, why (--delete)
    interrupted_by: int | None = None  # the signal that stopped the removal part-way


def removal_command(kind: str, name: str, region: str, endpoint_url: str | None = None) -> str:
    """The AWS CLI command that removes one resource (shown for what deploy could not remove)."""
    where = f"--region {shlex.quote(region)}" + (
        f" --endpoint-url {shlex.quote(endpoint_url)}" if endpoint_url else ""
    )
    quoted = shlex.quote(name)
    commands = {
        "model": f"aws sagemaker delete-model {where} --model-name {quoted}",
        "endpoint-config": f"aws sagemaker delete-endpoint-config {where} --endpoint-config-name {quoted}",
        "endpoint": f"aws sagemaker delete-endpoint {where} --endpoint-name {quoted}",
        "s3-object": f"aws s3 rm {where} {shlex.quote('s3://' + name)}",
        "scalable-target": (
            f"aws application-autoscaling deregister-scalable-target {where} --service-namespace sagemaker "
            f"--resource-id {quoted} --scalable-dimension {_SCALABLE_DIMENSION}"
        ),
        "inference-component": f"aws sagemaker delete-inference-component {where} --inference-component-name {quoted}",
        "alarm": f"aws cloudwatch delete-alarms {where} --alarm-names {quoted}",
    }
    if kind == "scaling-policy":
        resource, _, policy = name.partition("|")
        return (
            f"aws application-autoscaling delete-scaling-policy {where} --service-namespace sagemaker "
            f"--resource-id {shlex.quote(resource)} --scalable-dimension {_SCALABLE_DIMENSION} "
            f"--policy-name {shlex.quote(policy)}"
        )
    return commands[kind]


def _remove_one(clients: Clients, kind: str, name: str, poll_seconds: float) -> None:
    sagemaker = clients("sagemaker")
    if kind == "scalable-target":
        clients("application-autoscaling").deregister_scalable_target(
            ServiceNamespace="sagemaker", ResourceId=name, ScalableDimension=_SCALABLE_DIMENSION
        )
    elif kind == "scaling-policy":
        resource, _, policy = name.partition("|")
        clients("application-autoscaling").delete_scaling_policy(
            PolicyName=policy,
            ServiceNamespace="sagemaker",
            ResourceId=resource,
            ScalableDimension=_SCALABLE_DIMENSION,
        )
    elif kind == "alarm":
        clients("cloudwatch").delete_alarms(AlarmNames=[name])
    elif kind == "inference-component":
        sagemaker.delete_inference_component(InferenceComponentName=name)
        if not wait_until_component_deleted(
            sagemaker, name, timeout_seconds=DELETE_WAIT_SECONDS, poll_seconds=poll_seconds
        ):
            raise DeployError(f"inference component {name} still exists after {int(DELETE_WAIT_SECONDS)} s")
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


def _try_remove(clients: Clients, kind: str, name: str, poll_seconds: float) -> str | None:
    """None when the resource is gone (removed now, or already gone), else why it is not."""
    try:
        _remove_one(clients, kind, name, poll_seconds)
    except aws_errors() as error:
        return None if is_missing(error) else describe_error(error)
    except DeployError as error:
        return str(error)
    return None


def remove(
    clients: Clients, resources: list[tuple[str, str]], report: Report, *, poll_seconds: float = 5.0
) -> Removal:
    """Remove resources newest first; a resource already gone counts as removed. When the endpoint
    cannot be removed, what it runs on (config, model, files) is kept: it may still be starting on
    them. An interruption (a second Ctrl-C, SIGTERM) stops here: the rest is listed, never lost."""
    result = Removal()
    pending = list(reversed(resources))
    stuck_endpoint: str | None = None
    while pending:
        kind, name = pending.pop(0)
        if stuck_endpoint is not None and kind in _BEHIND_AN_ENDPOINT:
            result.failed.append(
                (kind, name, f"kept: endpoint {stuck_endpoint} was not removed and may use it")
            )
            continue
        try:
            problem = _try_remove(clients, kind, name, poll_seconds)
        except INTERRUPTIONS as interruption:
            result.interrupted_by = signal_of(interruption)
            left = [(kind, name), *pending]
            result.failed.extend((what, item, "interrupted before it was removed") for what, item in left)
            report("  interrupted: the rest is not removed", False)
            return result
        if problem is None:
            result.removed.append((kind, name))
            report(f"  removed {kind} {name}", False)
            continue
        result.failed.append((kind, name, problem))
        report(f"  could not remove {kind} {name}: {problem}", False)
        if kind == "endpoint":
            stuck_endpoint = name
    return result


def carry_out(clients: Clients, plan: DeletionPlan, report: Report, *, poll_seconds: float = 5.0) -> Removal:
    """Remove what ``plan`` removes (newest first); what it keeps is carried into the result.
    SIGTERM or Ctrl-C part-way stops it, and what is left is listed (never silently dropped)."""
    with termination_raises():
        removal = remove(clients, plan.remove, report, poll_seconds=poll_seconds)
    removal.kept = list(plan.kept)
    return removal
