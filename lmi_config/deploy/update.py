"""``--update`` done safely: a blue/green deployment configuration (all at once, canary or linear
traffic shifting, auto-rollback on named CloudWatch alarms), and what a dry run shows before it —
which resources stay, which are replaced, and what the two fleets cost while traffic shifts.

During a blue/green update SageMaker runs the new fleet beside the old one: from when the new
instances start until the old ones end, after the last traffic step's wait and the termination
wait. That window is at least the new fleet's start-up (its health check allows
``ContainerStartupHealthCheckTimeoutInSeconds``) plus the shifting (canary: one wait before the
rest; linear: one wait per step) plus ``TerminationWaitInSeconds``; the cost shown is both fleets'
on-demand price for that window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from lmi_config.deploy.request_limits import field_problems
from lmi_config.knowledge.planning import on_demand_price
from lmi_config.knowledge.sagemaker_requests import sagemaker_fact
from lmi_config.spec import Spec
from lmi_config.spec_deploy import SpecUpdate

_UPDATE = "sagemaker.UpdateEndpoint"
TRAFFIC_TYPES = {"all-at-once": "ALL_AT_ONCE", "canary": "CANARY", "linear": "LINEAR"}
_SIZE_MEMBER = {"canary": "CanarySize", "linear": "LinearStepSize"}


def deployment_config(spec: Spec, update: SpecUpdate) -> tuple[dict[str, Any], list[str]]:
    """The ``DeploymentConfig`` of ``update_endpoint`` and what is wrong with it (each named where written)."""
    where = spec.origin
    problems: list[str] = []
    routing: dict[str, Any] = {"Type": TRAFFIC_TYPES[update.traffic]}
    if update.wait_seconds is None:
        problems.append(
            f"{where('deploy.update')}: give wait_seconds (--traffic-wait): how long SageMaker watches each "
            "traffic step (and the alarms) before the next (WaitIntervalInSeconds)"
        )
    else:
        routing["WaitIntervalInSeconds"] = update.wait_seconds
    given = [key for key in ("step_percent", "step_instances") if getattr(update, key) is not None]
    if update.traffic == "all-at-once" and given:
        problems.append(
            f"{where('deploy.update.' + given[0])}: all-at-once shifts every request at once; {given[0]} is for "
            "traffic canary or linear"
        )
    elif update.traffic != "all-at-once":
        if len(given) != 1:
            problems.append(
                f"{where('deploy.update.traffic')}: traffic {update.traffic} needs one of step_percent or "
                f"step_instances (--traffic-step PERCENT% or INSTANCES): the "
                f"{'canary' if update.traffic == 'canary' else 'size of each step'}"
            )
        else:
            value = getattr(update, given[0])
            kind = "CAPACITY_PERCENT" if given[0] == "step_percent" else "INSTANCE_COUNT"
            routing[_SIZE_MEMBER[update.traffic]] = {"Type": kind, "Value": value}
            problems.extend(
                field_problems(
                    _UPDATE,
                    f"DeploymentConfig.BlueGreenUpdatePolicy.TrafficRoutingConfiguration.{_SIZE_MEMBER[update.traffic]}.Value",
                    value,
                    where(f"deploy.update.{given[0]}"),
                )
            )
            if kind == "CAPACITY_PERCENT" and not 0 < value <= 100:
                problems.append(
                    f"{where('deploy.update.step_percent')}: a percentage of the capacity: 1 to 100"
                )
    policy: dict[str, Any] = {"TrafficRoutingConfiguration": routing}
    for key, member in (
        ("termination_wait_seconds", "TerminationWaitInSeconds"),
        ("max_execution_seconds", "MaximumExecutionTimeoutInSeconds"),
    ):
        value = getattr(update, key)
        if value is not None:
            policy[member] = value
            problems.extend(
                field_problems(
                    _UPDATE,
                    f"DeploymentConfig.BlueGreenUpdatePolicy.{member}",
                    value,
                    where(f"deploy.update.{key}"),
                )
            )
    if "WaitIntervalInSeconds" in routing:
        problems.extend(
            field_problems(
                _UPDATE,
                "DeploymentConfig.BlueGreenUpdatePolicy.TrafficRoutingConfiguration.WaitIntervalInSeconds",
                update.wait_seconds,
                where("deploy.update.wait_seconds"),
            )
        )
    config: dict[str, Any] = {"BlueGreenUpdatePolicy": policy}
    if update.rollback_alarms:
        alarms = [{"AlarmName": name} for name in dict.fromkeys(update.rollback_alarms)]
        config["AutoRollbackConfiguration"] = {"Alarms": alarms}
        problems.extend(
            field_problems(
                _UPDATE,
                "DeploymentConfig.AutoRollbackConfiguration.Alarms",
                alarms,
                where("deploy.update.rollback_alarms"),
            )
        )
    return config, problems


def describe_traffic(update: SpecUpdate) -> str:
    """``canary 10% for 600 s, then the rest; roll back on alarm latency-p99``."""
    step = (
        f"{update.step_percent}%"
        if update.step_percent is not None
        else f"{update.step_instances} instances"
        if update.step_instances is not None
        else ""
    )
    wait = f"{update.wait_seconds} s" if update.wait_seconds is not None else "?"
    text = {
        "all-at-once": f"blue/green, all at once, then {wait} of baking",
        "canary": f"blue/green canary: {step} for {wait}, then the rest",
        "linear": f"blue/green linear: {step} at a time, {wait} each",
    }[update.traffic]
    if update.termination_wait_seconds:
        text += f"; the old fleet stays {update.termination_wait_seconds} s more"
    if update.rollback_alarms:
        text += f"; rolls back on alarm {', '.join(update.rollback_alarms)}"
    return text


def shift_seconds(update: SpecUpdate | None, instance_count: int) -> int:
    """How long traffic shifts and the old fleet waits (the start-up comes on top)."""
    if update is None:
        return 0
    wait = update.wait_seconds or 0
    steps = 1
    if update.traffic == "linear":
        if update.step_percent:
            steps = math.ceil(100 / update.step_percent)
        elif update.step_instances:
            steps = math.ceil(instance_count / update.step_instances)
    return wait * steps + (update.termination_wait_seconds or 0)


@dataclass
class UpdatePreview:
    """What ``--update`` keeps, replaces and costs, read from the endpoint as it is now."""

    endpoint_name: str
    stays: list[tuple[str, str, str]] = field(default_factory=list)  # kind, name, why
    replaced: list[tuple[str, str, str, str]] = field(default_factory=list)  # kind, old, new, what then
    changes: list[str] = field(default_factory=list)
    cost: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # the update would be refused
    unavailable: str | None = None  # why the current endpoint could not be read

    def public(self) -> dict[str, Any]:
        return {
            "endpoint_name": self.endpoint_name,
            "stays": [{"kind": kind, "name": name, "why": why} for kind, name, why in self.stays],
            "replaced": [
                {"kind": kind, "old": old, "new": new, "then": then} for kind, old, new, then in self.replaced
            ],
            "changes": list(self.changes),
            "cost": list(self.cost),
            "problems": list(self.problems),
            "unavailable": self.unavailable,
        }


def _fleet(variants: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [
        (str(variant.get("InstanceType", "?")), int(variant.get("InitialInstanceCount", 1)))
        for variant in variants
        if variant.get("InstanceType")
    ]


def _price_text(fleet: list[tuple[str, int]]) -> tuple[float | None, str]:
    total = 0.0
    parts = []
    for instance_type, count in fleet:
        price = on_demand_price(instance_type)
        if price is None:
            return None, f"{count} x {instance_type} (no price known)"
        total += price.usd_per_hour * count
        listed = "" if price.kind == "sagemaker" else f", {price.kind} price"
        parts.append(f"{count} x {instance_type} (${price.usd_per_hour:.2f}/h{listed}, {price.date})")
    return total, " + ".join(parts)


def cost_lines(
    old: list[tuple[str, int]], new: list[tuple[str, int]], startup_seconds: int, shifting_seconds: int
) -> list[str]:
    """Both fleets' price during the shift, with the window it is charged for."""
    window = startup_seconds + shifting_seconds
    old_hourly, old_text = _price_text(old) if old else (0.0, "unknown (not read)")
    new_hourly, new_text = _price_text(new)
    lines = [
        f"during the update both fleets run: old {old_text} + new {new_text}",
        f"for up to {window // 60} min: the new fleet's start-up (up to {startup_seconds} s) and the shifting "
        f"({shifting_seconds} s)",
    ]
    if old_hourly is not None and new_hourly is not None and old:
        both = old_hourly + new_hourly
        lines.append(
            f"${both:.2f}/h while both run (${new_hourly:.2f}/h after): about ${both * window / 3600:.2f} for the "
            f"update, ${new_hourly * window / 3600:.2f} of it beyond the old fleet's own cost"
        )
    return lines


def _variant_names(config: dict[str, Any]) -> list[str]:
    return [str(variant.get("VariantName")) for variant in config.get("ProductionVariants", [])]


def preview_update(plan: Any, clients: Any, update: SpecUpdate | None) -> UpdatePreview:
    """Read the endpoint (describe calls only) and say what the update keeps and replaces."""
    from lmi_config.deploy.aws import aws_errors, describe_error

    preview = UpdatePreview(plan.endpoint_name)
    new_config = next(call.parameters for call in plan.calls if call.operation == "create_endpoint_config")
    new_fleet = _fleet(new_config["ProductionVariants"])
    startup = plan.sizing.health_check_timeout_seconds + (plan.sizing.download_timeout_seconds or 0)
    sagemaker = clients("sagemaker")
    try:
        endpoint = sagemaker.describe_endpoint(EndpointName=plan.endpoint_name)
        old_name = endpoint["EndpointConfigName"]
        old = sagemaker.describe_endpoint_config(EndpointConfigName=old_name)
    except aws_errors() as error:
        preview.unavailable = f"cannot read endpoint {plan.endpoint_name} ({describe_error(error)})"
        preview.cost = cost_lines([], new_fleet, startup, shift_seconds(update, plan.instance_count))
        return preview
    preview.stays.append(
        ("endpoint", plan.endpoint_name, "same name and URL; traffic moves to the new fleet")
    )
    old_variants = _variant_names(old)
    new_variants = _variant_names(new_config)
    if sorted(old_variants) != sorted(new_variants):
        fact = sagemaker_fact("blue_green")
        preview.problems.append(
            f"endpoint {plan.endpoint_name} runs variants {', '.join(old_variants)} and the new config has "
            f"{', '.join(new_variants)}: {fact.statement} ({fact.source})"
        )
    old_models = sorted(
        {str(item.get("ModelName")) for item in old.get("ProductionVariants", []) if item.get("ModelName")}
    )
    then = "removed after the update when lmi-config made it and nothing else uses it"
    preview.replaced.append(("endpoint-config", old_name, plan.endpoint_config_name, then))
    new_models = (
        [plan.model_name]
        if not plan.components
        else [item.model_name for item in plan.components if item.model_name]
    )
    preview.replaced.append(("model", ", ".join(old_models) or "(none)", ", ".join(new_models), then))
    old_fleet = _fleet(old.get("ProductionVariants", []))
    if old_fleet != new_fleet:
        preview.changes.append(
            f"instances: {', '.join(f'{count} x {kind}' for kind, count in old_fleet)} -> "
            f"{', '.join(f'{count} x {kind}' for kind, count in new_fleet)}"
        )
    for member in ("KmsKeyId", "DataCaptureConfig", "AsyncInferenceConfig"):
        before, after = old.get(member) or None, new_config.get(member) or None  # {}: none
        if before != after:
            preview.changes.append(
                f"{member}: {before if before is not None else 'none'} -> {after if after is not None else 'none'}"
            )
    resource = f"endpoint/{plan.endpoint_name}/variant/{plan.variant_name}"
    try:
        targets = clients("application-autoscaling").describe_scalable_targets(
            ServiceNamespace="sagemaker", ResourceIds=[resource]
        )["ScalableTargets"]
    except aws_errors():
        targets = []
    for target in targets:
        preview.stays.append(
            (
                "scalable-target",
                target["ResourceId"],
                f"{target.get('MinCapacity')}-{target.get('MaxCapacity')} instances"
                + ("; registered again with the new range" if plan.autoscale else ""),
            )
        )
    for location in plan.kept_locations:
        preview.stays.append(("s3-prefix", location, "captured data and results stay the user's"))
    for alarm in plan.rollback_alarms:
        preview.stays.append(("alarm", alarm, "watched for auto-rollback; not lmi-config's"))
    preview.cost = cost_lines(old_fleet, new_fleet, startup, shift_seconds(update, plan.instance_count))
    return preview
