"""From a spec to a deployment plan, without calling AWS.

The spec is rendered by render (with the full lint) exactly as ``lmi-config render`` renders
it; the configuration reaches the container as its ``Environment`` when SageMaker's limits allow
(the default) or as ``serving.properties`` (plus ``model.py`` / ``requirements.txt``) uploaded
uncompressed to an S3 prefix. The image comes from the image table, the timeouts and the volume
from the judge's assessment, and every limit is checked before anything is called.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from lmi_config.deploy.image_choice import choose_image
from lmi_config.deploy.limits import check_plan
from lmi_config.deploy.names import STAMP_LENGTH, name_length, stamped
from lmi_config.deploy.plan import VARIANT_NAME, ApiCall, DeployPlan, DeployRequest, PlannedFile
from lmi_config.deploy.sizing import EndpointSizing, size_endpoint
from lmi_config.deploy.tags import owner_tags, user_tag_problems
from lmi_config.errors import InputError, SpecError
from lmi_config.io import read_bounded
from lmi_config.knowledge import parse_lmi_version, resolve_backend
from lmi_config.knowledge.images import images
from lmi_config.knowledge.instances import resolve_instance
from lmi_config.knowledge.sagemaker import deploy_policy, sagemaker_limits
from lmi_config.secrets import environment_secrets
from lmi_config.spec import Spec

if TYPE_CHECKING:
    from lmi_config.render import Rendered

PROPERTIES_FILE = "serving.properties"
_S3_URI = re.compile(r"^s3://(?P<bucket>[a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:/(?P<prefix>.*))?$")


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


def _render(spec: Spec, name: str, output_format: str, hub: bool) -> Rendered:
    from lmi_config.render import render_spec

    if output_format == "properties":
        # environment variables go into the container's Environment, never into serving.properties
        spec = spec.model_copy(update={"env": {}})
    return render_spec(spec, name=name, output_format=output_format, hub=hub)


def _render_for_delivery(spec: Spec, name: str, request: DeployRequest, hub: bool) -> tuple[Rendered, str]:
    """Render as the container Environment when it fits, else as serving.properties for S3."""
    if request.delivery not in ("auto", "environment", "s3"):
        raise SpecError(f"--delivery {request.delivery!r}: choose auto, environment or s3")
    if request.files or request.delivery == "s3":
        if not request.s3_prefix:
            why = "--file needs" if request.files else "--delivery s3 needs"
            raise SpecError(f"{why} --s3-prefix s3://BUCKET/PREFIX (where serving.properties is uploaded)")
        return _render(spec, name, "properties", hub), "s3"
    rendered = _render(spec, name, "json", hub)
    problems = list(rendered.problems)
    if not problems:
        return rendered, "environment"
    if request.delivery == "environment" or not request.s3_prefix:
        raise SpecError(
            f"{name}: the configuration cannot be the container's Environment: {'; '.join(problems)}; give "
            "--s3-prefix s3://BUCKET/PREFIX to upload it as serving.properties instead"
        )
    return _render(spec, name, "properties", hub), "s3"


def _read_upload(path: str) -> bytes:
    """A file to upload beside serving.properties: through the one bounded reader (a FIFO with no
    writer, /dev/zero, a huge file or a directory is refused at once), and text, as the container
    reads model.py and requirements.txt."""
    data = read_bounded(path, shown=f"--file {path}")
    if b"\0" in data:
        offset = data.index(b"\0")
        raise InputError(
            f"--file {path}: is a binary file (a NUL byte at offset {offset}); --file uploads "
            "text files read by the container (model.py, requirements.txt); put weights in the model's "
            "own S3 location"
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(
            f"--file {path}: is not UTF-8 text (byte {error.start}); --file uploads text files "
            "(model.py, requirements.txt)"
        ) from None
    return data


def _files(paths: tuple[str, ...], rendered_text: str, bucket_prefix: str) -> list[PlannedFile]:
    planned = [PlannedFile(PROPERTIES_FILE, bucket_prefix + PROPERTIES_FILE, rendered_text.encode("utf-8"))]
    for path in paths:
        data = _read_upload(path)
        file = Path(path)
        if file.name == PROPERTIES_FILE or any(item.name == file.name for item in planned):
            raise SpecError(f"--file {path}: {file.name} is already uploaded; give each file once")
        planned.append(PlannedFile(file.name, bucket_prefix + file.name, data))
    return planned


def _split_s3(uri: str) -> tuple[str, str]:
    match = _S3_URI.match(uri.strip())
    if match is None:
        raise SpecError(
            f"--s3-prefix {uri!r}: write s3://BUCKET/PREFIX (a bucket name of 3-63 lower-case characters)"
        )
    prefix = (match.group("prefix") or "").strip("/")
    return match.group("bucket"), f"{prefix}/" if prefix else ""


def _requested_tag(spec: Spec) -> str | None:
    """The spec's lmi_version when it is an image tag the table knows (then exactly that image)."""
    text = (spec.lmi_version or "").strip().rsplit(":", 1)[-1]
    return text if any(image.tag == text for image in images()) else None


def _variant(sizing: EndpointSizing, model_name: str, instance_type: str, count: int) -> dict[str, object]:
    variant: dict[str, object] = {
        "VariantName": VARIANT_NAME,
        "ModelName": model_name,
        "InstanceType": f"ml.{instance_type}",
        "InitialInstanceCount": count,
        "InitialVariantWeight": 1.0,
        "ContainerStartupHealthCheckTimeoutInSeconds": sizing.health_check_timeout_seconds,
    }
    optional = {
        "ModelDataDownloadTimeoutInSeconds": sizing.download_timeout_seconds,
        "VolumeSizeInGB": sizing.volume_size_gb,
        "InferenceAmiVersion": sizing.inference_ami,
    }
    variant.update({key: value for key, value in optional.items() if value is not None})
    return variant


def _calls(plan: DeployPlan, tags: list[dict[str, str]], request: DeployRequest) -> list[ApiCall]:
    calls = [
        ApiCall(
            "s3",
            "put_object",
            {"Bucket": plan.bucket, "Key": planned.key, "Body": planned.data},
            f"upload {planned.name}",
            ("s3-object", f"{plan.bucket}/{planned.key}"),
        )
        for planned in plan.files
    ]
    container: dict[str, object] = {"Image": plan.image.uri, "Environment": dict(plan.environment)}
    if plan.model_data_uri:
        container["ModelDataSource"] = {
            "S3DataSource": {
                "S3Uri": plan.model_data_uri,
                "S3DataType": "S3Prefix",
                "CompressionType": "None",
            }
        }
    model = {
        "ModelName": plan.model_name,
        "ExecutionRoleArn": plan.role or "(not given: --role)",
        "PrimaryContainer": container,
        "Tags": tags,
    }
    calls.append(
        ApiCall(
            "sagemaker",
            "create_model",
            model,
            "the model: image and configuration",
            ("model", plan.model_name),
        )
    )
    variant = _variant(plan.sizing, plan.model_name, plan.instance_type, plan.instance_count)
    config = {"EndpointConfigName": plan.endpoint_config_name, "ProductionVariants": [variant], "Tags": tags}
    calls.append(
        ApiCall(
            "sagemaker",
            "create_endpoint_config",
            config,
            "the endpoint config: instance, timeouts, volume",
            ("endpoint-config", plan.endpoint_config_name),
        )
    )
    names = {"EndpointName": plan.endpoint_name, "EndpointConfigName": plan.endpoint_config_name}
    if plan.update:
        calls.append(ApiCall("sagemaker", "update_endpoint", names, "roll the endpoint to the new config"))
    else:
        calls.append(
            ApiCall(
                "sagemaker",
                "create_endpoint",
                {**names, "Tags": tags},
                "the endpoint",
                ("endpoint", plan.endpoint_name),
            )
        )
    if plan.autoscale:
        calls.extend(_autoscaling_calls(plan, request))
    return calls


def _autoscaling_calls(plan: DeployPlan, request: DeployRequest) -> list[ApiCall]:
    assert plan.autoscale is not None
    policy = deploy_policy()
    target = {
        "ServiceNamespace": "sagemaker",
        "ResourceId": f"endpoint/{plan.endpoint_name}/variant/{plan.variant_name}",
        "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
    }
    return [
        ApiCall(
            "application-autoscaling",
            "register_scalable_target",
            {**target, "MinCapacity": plan.autoscale[0], "MaxCapacity": plan.autoscale[1]},
            "let Application Auto Scaling change the instance count",
            ("scalable-target", target["ResourceId"]),
        ),
        ApiCall(
            "application-autoscaling",
            "put_scaling_policy",
            {
                **target,
                "PolicyName": f"{plan.endpoint_name}-invocations",
                "PolicyType": "TargetTrackingScaling",
                "TargetTrackingScalingPolicyConfiguration": {
                    "TargetValue": request.autoscale_target or policy.autoscaling_target,
                    "PredefinedMetricSpecification": {"PredefinedMetricType": policy.autoscaling_metric},
                    "ScaleInCooldown": policy.scale_in_cooldown_seconds,
                    "ScaleOutCooldown": policy.scale_out_cooldown_seconds,
                },
            },
            "target tracking on invocations per instance",
        ),
    ]


def build_plan(
    spec: Spec, request: DeployRequest, *, name: str = "spec", hub: bool = False, now: float | None = None
) -> DeployPlan:
    """The plan for ``spec``; nothing is called. Raises :class:`SpecError` for a refusal (image,
    limits, sizing) with every reason, :class:`lmi_config.errors.PlanningError` when nothing fits."""
    if spec.files:  # named in the spec, relative to it; --file adds more
        spec_directory = Path(name).parent if Path(name).is_file() else Path(".")
        named = tuple(str(spec_directory / item) for item in spec.files)
        request = replace(request, files=named + tuple(request.files))
    region = resolve_region(request.region)
    if not spec.instance:
        raise SpecError(f"{name}: deploy needs `instance:` (or --instance)")
    if request.autoscale and not request.wait:
        raise SpecError(
            "--autoscale needs --wait: the variant can be registered only once the endpoint is InService"
        )
    rendered, delivery = _render_for_delivery(spec, name, request, hub)
    target = dict(rendered.target)
    backend = resolve_backend(target["backend"])
    release = parse_lmi_version(target["lmi_version"])
    instance = resolve_instance(target["instance"])
    image = choose_image(
        backend=backend.id,
        instance=instance,
        region=region,
        djl_version=release.djl,
        lmi_version=release.lmi,
        release_label=release.label(),
        requested_tag=_requested_tag(spec),
        image_uri=request.image,
    )
    if delivery == "environment":
        environment = dict(json.loads(rendered.text))
    else:
        environment = dict(spec.env)
    secrets = environment_secrets(request.secret_env)
    clashing = sorted(set(secrets) & set(environment))
    if clashing:
        raise SpecError(f"--secret-env {', '.join(clashing)}: already set by the configuration")
    environment.update(secrets)
    endpoint_name = request.endpoint_name or default_endpoint_name(spec.model, instance.instance_type)
    moment = time.time() if now is None else now
    model_name = stamped(endpoint_name, moment)
    bucket = prefix = None
    files: list[PlannedFile] = []
    if delivery == "s3":
        bucket, base = _split_s3(request.s3_prefix or "")
        prefix = f"{base}{model_name}/"
        files = _files(request.files, rendered.text, prefix)
    sizing = size_endpoint(
        assessment=rendered.assessment,
        items=dict(rendered.items),
        backend=backend.id,
        instance=instance,
        model_data_in_s3=delivery == "s3",
        overrides=request.sizing,
    )
    limits = sagemaker_limits()
    wait_timeout = request.wait_timeout_seconds or (
        deploy_policy().provisioning_seconds
        + sizing.health_check_timeout_seconds
        + (sizing.download_timeout_seconds or 0)
    )
    plan = DeployPlan(
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
        wait_timeout_seconds=wait_timeout,
        poll_seconds=request.poll_seconds or float(limits.waiter_delay_seconds),
        rendered=rendered,
        target=target,
        notes=list(rendered.notes),
        warnings=[*image.warnings, *sizing.warnings]
        + (
            []
            if request.role
            else ["no --role: a run needs one (inside SageMaker: lmi-config[sagemaker] finds it)"]
        ),
        autoscale=request.autoscale,
    )
    tag_refusals = user_tag_problems(request.tags, secret_values=secrets)
    if tag_refusals:  # first and alone: the limit checks below would quote the values
        raise SpecError("refused before any AWS call:\n  " + "\n  ".join(tag_refusals))
    tags = (*owner_tags(endpoint_name), *request.tags)
    problems = check_plan(plan, tags)
    if problems:
        raise SpecError("refused before any AWS call:\n  " + "\n  ".join(problems))
    plan.calls = _calls(plan, [{"Key": key, "Value": value} for key, value in tags], request)
    return plan
