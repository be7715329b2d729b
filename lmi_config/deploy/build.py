"""From a spec to a deployment plan, without calling AWS.

The spec is rendered by render (with the full lint) exactly as ``lmi-config render`` renders
it; the configuration reaches the container as its ``Environment`` when SageMaker's limits allow
(the default) or as ``serving.properties`` (plus ``model.py`` / ``requirements.txt``) uploaded
uncompressed to an S3 prefix. The image comes from the image table, the timeouts and the volume
from the judge's assessment, and every limit is checked before anything is called.

The spec's ``deploy:`` section (or its flags) adds the production options: judged by
:mod:`.production` (network, keys, capture, async, serverless), :mod:`.components` (inference
components, each rendered and judged on its own) and :mod:`.update` (blue/green); the calls are
made by :mod:`.calls`, and each is checked against botocore's service model
(:mod:`.request_limits`) before the first one runs.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from lmi_config.deploy.calls import endpoint_calls
from lmi_config.deploy.limits import check_plan
from lmi_config.deploy.names import STAMP_LENGTH, name_length, stamped
from lmi_config.deploy.plan import DeployPlan, DeployRequest
from lmi_config.deploy.plans import component_plan, model_plan
from lmi_config.deploy.production import judge_production, refuse_serverless, settings_of
from lmi_config.deploy.rendering import render_for_delivery
from lmi_config.deploy.request_limits import call_problems
from lmi_config.deploy.scaling import describe_scaling
from lmi_config.deploy.tags import owner_tags, user_tag_problems
from lmi_config.deploy.update import deployment_config, describe_traffic
from lmi_config.errors import SpecError
from lmi_config.knowledge.instances import resolve_instance
from lmi_config.secrets import environment_secrets
from lmi_config.spec import Spec

__all__ = ["build_plan", "default_endpoint_name", "resolve_region", "stamped"]


def resolve_region(region: str | None) -> str:
    """``--region``, else ``AWS_REGION`` / ``AWS_DEFAULT_REGION`` (as boto3 reads them)."""
    found = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if not found:
        raise SpecError("no AWS region: give --region (or set AWS_REGION)")
    return found.strip()


def default_endpoint_name(model: str, instance_type: str) -> str:
    """``meta-llama/Llama-3.1-8B-Instruct`` on ``inf2.24xlarge`` → ``llama-3-1-8b-instruct-inf2-24xlarge``."""
    model_part = re.sub(r"[^a-zA-Z0-9]+", "-", model.rstrip("/").split("/")[-1]).strip("-").lower()
    instance_part = re.sub(r"[^a-zA-Z0-9]+", "-", instance_type.removeprefix("ml.")).strip("-")
    room = name_length() - STAMP_LENGTH - 2 - len(instance_part)
    return f"{model_part[:room].strip('-') or 'lmi'}-{instance_part}"


def _scaling(spec: Spec, request: DeployRequest) -> tuple[tuple[int, int] | None, float | None]:
    """--autoscale / --autoscale-target over the spec's deploy.autoscale."""
    written = (spec.deploy.autoscale if spec.deploy else None) or None
    bounds = request.autoscale or ((written.min, written.max) if written else None)
    target = request.autoscale_target or (written.target if written else None)
    return bounds, target


def _refuse_combinations(spec: Spec, request: DeployRequest, bounds: tuple[int, int] | None) -> None:
    settings = settings_of(spec)
    problems = []
    if bounds and not request.wait:
        problems.append(
            "--autoscale needs --wait: the variant can be registered only once the endpoint is InService"
        )
    if settings.components:
        where = spec.origin("deploy.components")
        if request.update:
            problems.append(
                f"{where}: --update of an endpoint with inference components is not built yet (each component "
                "would be updated on its own); delete and deploy again, or update without components"
            )
        if settings.async_inference is not None:
            problems.append(f"{where}: deploy does not combine inference components with async (not built)")
        if request.files or request.delivery == "s3":
            problems.append(
                f"{where}: each component's configuration is its container Environment; --file and --delivery s3 "
                "are for one model"
            )
        if not request.wait:
            problems.append(
                f"{where}: inference components are created once the endpoint is InService: drop --no-wait"
            )
        if bounds:
            problems.append(
                f"{where}: --autoscale scales instances; the copies of inference components scale on their own "
                "(not built): leave autoscale out"
            )
    if problems:
        raise SpecError("\n".join(problems))


def build_plan(
    spec: Spec, request: DeployRequest, *, name: str = "spec", hub: bool = False, now: float | None = None
) -> DeployPlan:
    """The plan for ``spec``; nothing is called. Raises :class:`SpecError` for a refusal (image,
    limits, sizing, network, encryption, components) with every reason,
    :class:`lmi_config.errors.PlanningError` when nothing fits."""
    if spec.files:  # named in the spec, relative to it; --file adds more
        spec_directory = Path(name).parent if Path(name).is_file() else Path(".")
        named = tuple(str(spec_directory / item) for item in spec.files)
        request = replace(request, files=named + tuple(request.files))
    region = resolve_region(request.region)
    if not spec.instance:
        raise SpecError(f"{name}: deploy needs `instance:` (or --instance)")
    instance = _known_instance(spec.instance)
    refuse_serverless(spec, instance)
    if instance is None:  # render names the instance type and the nearest known ones
        render_for_delivery(spec, name, request, hub)
        raise SpecError(f"{name}: unknown instance type {spec.instance!r}")
    bounds, scaling_target = _scaling(spec, request)
    _refuse_combinations(spec, request, bounds)
    secrets = environment_secrets(request.secret_env)
    moment = time.time() if now is None else now
    endpoint_name = request.endpoint_name or default_endpoint_name(spec.model, instance.instance_type)
    production = judge_production(spec, instance)
    if settings_of(spec).components:
        plan = component_plan(spec, request, name, hub, region, secrets, endpoint_name, moment, production)
    else:
        plan = model_plan(spec, request, name, hub, region, secrets, endpoint_name, moment, production)
    plan.autoscale = bounds
    plan.asynchronous = production.asynchronous
    plan.production = list(production.summary)
    plan.kept_locations = tuple(production.kept_locations)
    plan.notes.extend(production.notes)
    plan.warnings.extend(production.warnings)
    if not request.role:
        plan.warnings.append("no --role: a run needs one (inside SageMaker: lmi-config[sagemaker] finds it)")
    update = settings_of(spec).update
    if update is not None and request.update:
        plan.deployment_config, problems = deployment_config(spec, update)
        production.problems.extend(problems)
        plan.rollback_alarms = tuple(dict.fromkeys(update.rollback_alarms))
        plan.production.append(("update", describe_traffic(update)))
    elif update is not None:
        plan.notes.append(
            f"{spec.origin('deploy.update')}: applies to --update; this run creates the endpoint"
        )
    if bounds:
        plan.production.append(("scaling", describe_scaling(bounds, scaling_target, plan.asynchronous)))
    tag_refusals = user_tag_problems(request.tags, secret_values=secrets)
    if tag_refusals:  # first and alone: the limit checks below would quote the values
        raise SpecError("refused before any AWS call:\n  " + "\n  ".join(tag_refusals))
    production.refuse_if_any()
    tags = (*owner_tags(endpoint_name), *request.tags)
    problems = check_plan(plan, tags)
    if problems:
        raise SpecError("refused before any AWS call:\n  " + "\n  ".join(problems))
    tag_list = [{"Key": key, "Value": value} for key, value in tags]
    plan.calls = endpoint_calls(plan, tag_list, production, scaling_target)
    problems = [
        problem
        for call in plan.calls
        for problem in call_problems(call.service, call.operation, call.parameters, plan.secret_values())
    ]
    if problems:
        raise SpecError("refused before any AWS call:\n  " + "\n  ".join(problems))
    return plan


def _known_instance(instance_type: str) -> Any:
    try:
        return resolve_instance(instance_type)
    except ValueError:
        return None
