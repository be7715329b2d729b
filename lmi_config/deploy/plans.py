"""The plan's resources: one model behind the endpoint, or a model per inference component behind
an endpoint config of its own; their sizing and environment."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from lmi_config.deploy.components import ComponentContext, ComponentPlan, plan_components
from lmi_config.deploy.names import stamped
from lmi_config.deploy.plan import VARIANT_NAME, DeployPlan, DeployRequest, PlannedFile
from lmi_config.deploy.production import Production, judge_weights
from lmi_config.deploy.rendering import image_for, planned_files, render_for_delivery, split_s3
from lmi_config.deploy.sizing import EndpointSizing, size_endpoint
from lmi_config.errors import SpecError
from lmi_config.knowledge import resolve_backend
from lmi_config.knowledge.instances import resolve_instance
from lmi_config.knowledge.sagemaker import deploy_policy, sagemaker_limits
from lmi_config.spec import Spec

if TYPE_CHECKING:
    from lmi_config.render import Rendered


def _environment(spec: Spec, rendered: Rendered, delivery: str, secrets: dict[str, str]) -> dict[str, str]:
    environment = dict(json.loads(rendered.text)) if delivery == "environment" else dict(spec.env)
    clashing = sorted(set(secrets) & set(environment))
    if clashing:
        raise SpecError(f"--secret-env {', '.join(clashing)}: already set by the configuration")
    environment.update(secrets)
    return environment


def _wait_timeout(request: DeployRequest, sizing: EndpointSizing) -> int:
    return request.wait_timeout_seconds or (
        deploy_policy().provisioning_seconds
        + sizing.health_check_timeout_seconds
        + (sizing.download_timeout_seconds or 0)
    )


def model_plan(
    spec: Spec,
    request: DeployRequest,
    name: str,
    hub: bool,
    region: str,
    secrets: dict[str, str],
    endpoint_name: str,
    moment: float,
    production: Production,
) -> DeployPlan:
    """One model behind the endpoint (the configuration of the spec itself)."""
    rendered, delivery = render_for_delivery(spec, name, request, hub)
    target = dict(rendered.target)
    instance = resolve_instance(target["instance"])
    image = image_for(spec, rendered, region, request.image)
    environment = _environment(spec, rendered, delivery, secrets)
    model_id = dict(rendered.items).get("option.model_id", spec.model)
    weights = judge_weights(
        spec, model_id, environment, label="the model", delivery=delivery, result=production
    )
    environment.update(weights.environment)
    model_name = stamped(endpoint_name, moment)
    bucket = prefix = None
    files: list[PlannedFile] = []
    if delivery == "s3":
        bucket, base = split_s3(request.s3_prefix or "")
        prefix = f"{base}{model_name}/"
        files = planned_files(request.files, rendered.text, prefix)
    sizing = size_endpoint(
        assessment=rendered.assessment,
        items=dict(rendered.items),
        backend=resolve_backend(target["backend"]).id,
        instance=instance,
        model_data_in_s3=delivery == "s3" or weights.uri is not None,
        overrides=request.sizing,
    )
    return DeployPlan(
        region=region,
        endpoint_name=endpoint_name,
        model_name=model_name,
        endpoint_config_name=model_name,
        variant_name=VARIANT_NAME,
        instance_type=instance.instance_type,
        instance_count=request.instance_count,
        image=image,
        delivery=delivery,
        bucket=bucket,
        prefix=prefix,
        files=files,
        environment=environment,
        secret_names=frozenset(secrets),
        sizing=sizing,
        calls=[],
        update=request.update,
        role=request.role,
        wait_timeout_seconds=_wait_timeout(request, sizing),
        poll_seconds=request.poll_seconds or float(sagemaker_limits().waiter_delay_seconds),
        rendered=rendered,
        target=target,
        notes=list(rendered.notes),
        warnings=[*image.warnings, *sizing.warnings],
        weights_uri=weights.uri,
    )


def _combined_sizing(plans: list[ComponentPlan], instance: Any) -> EndpointSizing:
    """The endpoint's sizing for its components: the longest start-up, the volumes of every copy."""
    sized = [plan.sizing for plan in plans if plan.sizing is not None]
    volumes = [(plan.sizing.volume_size_gb, plan.copies) for plan in plans if plan.sizing is not None]
    volume = (
        sum(size * copies for size, copies in volumes if size is not None)
        if volumes and all(size is not None for size, _ in volumes)
        else None
    )
    downloads = [item.download_timeout_seconds for item in sized if item.download_timeout_seconds is not None]
    reasons: tuple[str, ...] = ()
    if volume is not None:
        reasons = (f"volume {volume} GB: every copy's weights (the components' volumes added up)",)
    return EndpointSizing(
        health_check_timeout_seconds=max((item.health_check_timeout_seconds for item in sized), default=600),
        download_timeout_seconds=max(downloads) if downloads else None,
        volume_size_gb=volume,
        inference_ami=sized[0].inference_ami if sized else None,
        reasons=reasons,
        warnings=tuple(dict.fromkeys(warning for item in sized for warning in item.warnings)),
    )


def component_plan(
    spec: Spec,
    request: DeployRequest,
    name: str,
    hub: bool,
    region: str,
    secrets: dict[str, str],
    endpoint_name: str,
    moment: float,
    production: Production,
) -> DeployPlan:
    """Inference components: a model per component, an endpoint config with no model of its own."""
    instance = resolve_instance(spec.instance or "")
    environment_request = replace(request, delivery="environment", files=())

    def render_component(component_spec: Spec) -> Rendered:
        rendered, _ = render_for_delivery(component_spec, name, environment_request, hub)
        return rendered

    context = ComponentContext(
        spec=spec,
        endpoint_name=endpoint_name,
        instance=instance,
        instance_count=request.instance_count,
        now=moment,
        secrets=secrets,
        production=production,
        render=render_component,
        image_for=lambda component_spec, rendered: image_for(component_spec, rendered, region, request.image),
        sizing_overrides=request.sizing,
    )
    components, problems = plan_components(context)
    production.problems.extend(problems)
    first = next(plan for plan in components if plan.rendered is not None)
    assert first.image is not None and first.model_name is not None
    sizing = _combined_sizing(components, instance)
    config_name = stamped(endpoint_name, moment)
    return DeployPlan(
        region=region,
        endpoint_name=endpoint_name,
        model_name=first.model_name,
        endpoint_config_name=config_name,
        variant_name=VARIANT_NAME,
        instance_type=instance.instance_type,
        instance_count=request.instance_count,
        image=first.image,
        delivery="environment",
        bucket=None,
        prefix=None,
        files=[],
        environment=first.environment,
        secret_names=frozenset(secrets),
        sizing=sizing,
        calls=[],
        update=request.update,
        role=request.role,
        wait_timeout_seconds=_wait_timeout(request, sizing),
        poll_seconds=request.poll_seconds or float(sagemaker_limits().waiter_delay_seconds),
        rendered=first.rendered,
        target=dict(first.rendered.target),
        notes=list(
            dict.fromkeys(note for plan in components if plan.rendered for note in plan.rendered.notes)
        ),
        warnings=[
            *dict.fromkeys(warning for plan in components if plan.image for warning in plan.image.warnings),
            *sizing.warnings,
        ],
        components=components,
    )
