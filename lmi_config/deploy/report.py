"""The plan and the outcome as text (the plan's JSON is :meth:`DeployPlan.as_json`); secrets masked."""

from __future__ import annotations

from typing import Any

from lmi_config.deploy.cleanup import Removal, removal_command
from lmi_config.deploy.deletion import DeletionPlan
from lmi_config.deploy.plan import DeployPlan
from lmi_config.deploy.run import Outcome
from lmi_config.secrets import redact
from lmi_config.strict_json import json_text


def _parameters(plan: DeployPlan, parameters: dict[str, Any]) -> str:
    text = json_text(plan.masked(parameters), default=str)
    return "\n".join("       " + line for line in text.splitlines())


def format_plan(plan: DeployPlan, *, dry_run: bool) -> str:
    """Every call with its parameters, and why the image, timeouts and volume are what they are."""
    lines = [
        f"{'Dry run: ' if dry_run else ''}{'update' if plan.update else 'create'} endpoint {plan.endpoint_name} "
        f"in {plan.region}",
        f"  instance   {plan.instance_count} x ml.{plan.instance_type}",
        f"  image      {plan.image.uri}",
    ]
    if plan.delivery == "environment":
        lines.append(f"  config     as the container Environment ({len(plan.environment)} variables)")
    else:
        lines.append(f"  config     serving.properties uploaded to {plan.model_data_uri} (uncompressed)")
    lines.extend(f"  sizing     {reason}" for reason in plan.sizing.reasons)
    lines.extend(f"  {label:<10} {text}" for label, text in plan.production)
    lines.extend(_component_lines(plan))
    if plan.preview is not None:
        lines.extend(format_preview(plan.preview))
    lines.extend(f"  note       {note}" for note in plan.notes)
    lines.extend(f"  warning    {warning}" for warning in plan.warnings)
    for planned in plan.files:
        lines.append(f"\n--- {planned.name} ({len(planned.data)} bytes) ---")
        lines.append(planned.data.decode("utf-8", "replace").rstrip("\n"))
    lines.append("\nAPI calls, in order:")
    for number, call in enumerate(plan.calls, 1):
        lines.append(f"  {number}. {call.service}.{call.operation} — {call.purpose}")
        lines.append(_parameters(plan, call.parameters))
    return redact("\n".join(lines), plan.secret_values()) + "\n"


def _component_lines(plan: DeployPlan) -> list[str]:
    if not plan.components:
        return []
    lines = [f"  components {len(plan.components)} on {plan.instance_count} x ml.{plan.instance_type}:"]
    for item in plan.components:
        if item.adapter:
            lines.append(f"    {item.component_name}: adapter {item.adapter} on {item.base}")
            continue
        lines.append(
            f"    {item.component_name}: {item.copies} x ({item.accelerators} accelerators, {item.memory_mb} MB, "
            f"TP {item.tensor_parallel_degree}) {item.rendered.target.get('model') if item.rendered else ''}"
        )
        lines.extend(f"      {reason}" for reason in item.reasons)
    return lines


def format_preview(preview: Any) -> list[str]:
    """What ``--update`` keeps, replaces and costs (read from the endpoint as it is)."""
    lines = ["  preview    what stays and what is replaced:"]
    if preview.unavailable:
        lines.append(f"    {preview.unavailable}: what stays and what is replaced is not shown")
    lines.extend(f"    stays     {kind} {name}: {why}" for kind, name, why in preview.stays)
    lines.extend(f"    replaced  {kind} {old} -> {new} ({then})" for kind, old, new, then in preview.replaced)
    lines.extend(f"    changes   {change}" for change in preview.changes)
    lines.extend(f"    cost      {line}" for line in preview.cost)
    lines.extend(f"    refused   {problem}" for problem in preview.problems)
    return lines


Where = tuple[str, "str | None"]  # (region, endpoint URL): what the removal commands need


def left_behind(resources: list[tuple[str, str]], where: Where) -> list[str]:
    """One line per resource left in AWS, with the exact command that removes it."""
    return [f"  {kind} {name}:  {removal_command(kind, name, *where)}" for kind, name in resources]


def format_removal(removal: Removal, where: Where) -> list[str]:
    """What could not be removed, each with why and the command that removes it."""
    lines = []
    for kind, name, why in removal.failed:
        lines.append(f"  NOT removed {kind} {name}: {why}")
        lines.append(f"    remove it with: {removal_command(kind, name, *where)}")
    return lines


def format_deletion_plan(plan: DeletionPlan, *, dry_run: bool) -> str:
    """What ``--delete`` removes (newest first) and what it keeps, each with why."""
    lines = [f"{'Dry run: ' if dry_run else ''}delete {plan.target} in {plan.region}"]
    if not plan.endpoint_found:
        lines.append(f"  (no endpoint {plan.target}: what an earlier run made for it)")
    lines.append("remove, in this order:" if plan.remove else "nothing to remove")
    lines.extend(f"  {kind} {name}" for kind, name in reversed(plan.remove))
    if plan.kept:
        lines.append("keep:")
        lines.extend(f"  {kind} {name}: {why}" for kind, name, why in plan.kept)
    return "\n".join(lines) + "\n"


def format_removal_result(removal: Removal, where: Where) -> str:
    """After ``--delete``: removed, not removed (with commands), kept."""
    lines = ["removed: " + (", ".join(f"{kind} {name}" for kind, name in removal.removed) or "nothing")]
    lines.extend(format_removal(removal, where))
    lines.extend(f"kept: {kind} {name}: {why}" for kind, name, why in removal.kept)
    return "\n".join(lines) + "\n"


def deletion_document(
    plan: DeletionPlan, removal: Removal | None = None, where: Where | None = None
) -> dict[str, Any]:
    """``--delete --format json``: the plan, and after a run what was and was not removed."""
    document = plan.public()
    if removal is not None and where is not None:
        document["removed"] = [{"kind": kind, "name": name} for kind, name in removal.removed]
        document["not_removed"] = [
            {"kind": kind, "name": name, "why": why, "command": removal_command(kind, name, *where)}
            for kind, name, why in removal.failed
        ]
    return document


def format_outcome(outcome: Outcome, plan: DeployPlan) -> str:
    """What happened: InService (and how to call it), or the failure with its log lines and clean-up."""
    secrets = plan.secret_values()
    minutes = outcome.elapsed_seconds / 60
    where = f"--region {outcome.region}" + (
        f" --endpoint-url {outcome.endpoint_url}" if outcome.endpoint_url else ""
    )
    if outcome.succeeded and outcome.status == "InService":
        body = '\'{"inputs": "Hello"}\''
        lines = [
            f"endpoint {outcome.endpoint_name} is InService ({minutes:.1f} min)",
            *_invoke_lines(outcome.endpoint_name, where, body, plan),
            f"  remove:  lmi-config deploy --delete {outcome.endpoint_name} {where}",
        ]
    elif outcome.succeeded:
        lines = [
            f"endpoint {outcome.endpoint_name} is {outcome.status}; not waiting (--no-wait)",
            f"  follow:  aws sagemaker describe-endpoint {where} --endpoint-name {outcome.endpoint_name}",
            f"  remove:  lmi-config deploy --delete {outcome.endpoint_name} {where}",
        ]
    else:
        step = f" at {outcome.failed_step}" if outcome.failed_step else ""
        lines = [f"deploy {'stopped' if outcome.interrupted_by else 'failed'}{step}: {outcome.failure}"]
        if outcome.log_lines:
            lines.append(f"last lines of /aws/sagemaker/Endpoints/{outcome.endpoint_name}:")
            lines.extend(f"  | {line}" for line in outcome.log_lines)
        elif outcome.log_note:
            lines.append(f"  ({outcome.log_note})")
    if outcome.retired is not None and outcome.retired.removed:
        lines.append("retired: " + ", ".join(f"{kind} {name}" for kind, name in outcome.retired.removed))
    if outcome.retired is not None:
        lines.extend(f"kept the previous {kind} {name}: {why}" for kind, name, why in outcome.retired.kept)
        lines.extend(format_removal(outcome.retired, (outcome.region, outcome.endpoint_url)))
    lines.append("created: " + (", ".join(f"{kind} {name}" for kind, name in outcome.created) or "nothing"))
    lines.extend(_clean_up_lines(outcome))
    return redact("\n".join(lines), secrets) + "\n"


def _invoke_lines(name: str, where: str, body: str, plan: DeployPlan) -> list[str]:
    """How to call what was deployed: the endpoint, each component, or the async queue."""
    common = f"--content-type application/json --cli-binary-format raw-in-base64-out --body {body} out.json"
    if plan.components:
        return [
            f"  invoke:  aws sagemaker-runtime invoke-endpoint {where} --endpoint-name {name} "
            f"--inference-component-name {item.component_name} {common}"
            for item in plan.components
        ]
    if plan.asynchronous:
        return [
            f"  invoke:  aws sagemaker-runtime invoke-endpoint-async {where} --endpoint-name {name} "
            "--content-type application/json --input-location s3://BUCKET/request.json "
            "(the result lands under the async output path)"
        ]
    return [f"  invoke:  aws sagemaker-runtime invoke-endpoint {where} --endpoint-name {name} {common}"]


def _clean_up_lines(outcome: Outcome) -> list[str]:
    """What the clean-up removed, and every resource left behind with the command that removes it."""
    where = (outcome.region, outcome.endpoint_url)
    if outcome.removal is not None:
        removed = ", ".join(f"{kind} {name}" for kind, name in outcome.removal.removed) or "nothing"
        lines = [f"removed: {removed}", *format_removal(outcome.removal, where)]
        if outcome.removal.failed:
            lines.append(f"still in AWS: {len(outcome.removal.failed)} resources (commands above)")
        return lines
    if outcome.kept_why is not None:  # in use: no removal command, it would break the endpoint
        return [
            f"kept ({outcome.kept_why}): " + ", ".join(f"{kind} {name}" for kind, name in outcome.created)
        ]
    if not outcome.succeeded and outcome.created:
        return ["kept (--keep-on-failure); to remove them:", *left_behind(outcome.created, where)]
    return []


def outcome_document(outcome: Outcome) -> dict[str, Any]:
    """The outcome as JSON (``--format json``)."""
    removal = outcome.removal
    return {
        "endpoint_name": outcome.endpoint_name,
        "region": outcome.region,
        "status": outcome.status,
        "succeeded": outcome.succeeded,
        "failed_step": outcome.failed_step,
        "failure": outcome.failure,
        "log_lines": outcome.log_lines,
        "created": [{"kind": kind, "name": name} for kind, name in outcome.created],
        "removed": [{"kind": kind, "name": name} for kind, name in removal.removed] if removal else [],
        "not_removed": [{"kind": kind, "name": name, "why": why} for kind, name, why in removal.failed]
        if removal
        else [],
        "retired": [{"kind": kind, "name": name} for kind, name in outcome.retired.removed]
        if outcome.retired
        else [],
        "interrupted_by": outcome.interrupted_by,
        "left_behind": [
            {
                "kind": kind,
                "name": name,
                "command": removal_command(kind, name, outcome.region, outcome.endpoint_url),
            }
            for kind, name in _left(outcome)
        ],
        "elapsed_seconds": round(outcome.elapsed_seconds, 1),
    }


def _left(outcome: Outcome) -> list[tuple[str, str]]:
    """What a failed or interrupted run left in AWS."""
    if outcome.removal is not None:
        return [(kind, name) for kind, name, _ in outcome.removal.failed]
    return [] if outcome.succeeded or outcome.kept_why else list(outcome.created)


def format_images(rows: list[dict[str, Any]], *, region: str | None) -> str:
    """The image table as text: one line per image, newest last per family."""
    origin = next(
        (row["regions_from"] for row in rows if row["regions_from"] and not row["regions_assumed"]), ""
    )
    lines = [f"LMI images (tags and regions: {origin or 'the package table'})"]
    framework = None
    for row in rows:
        if row["framework"] != framework:
            framework = row["framework"]
            lines.append(f"\n{framework} ({row['accelerator']})")
        tag = row["tag"] or f"{row['djl_version']} (LMI v{row['lmi_version']}): unpublished"
        versions = ", ".join(f"{name} {version}" for name, version in row["backend_versions"].items())
        where = row["uri"] if region and row["uri"] else (f"{row['regions']} regions" if row["tag"] else "")
        if region and row["tag"] and not row["uri"]:
            where = f"not in {region}"
        assumed = " (regions assumed)" if row["regions_assumed"] else ""
        lines.append(
            f"  {tag:<36} {', '.join(row['backends']):<40} {where}{assumed}"
            + (f"  [{versions}]" if versions else "")
        )
    return "\n".join(lines) + "\n"
