"""The calls of a plan, in order: uploads, the model(s), the endpoint config, the endpoint (or the
update that rolls it), the inference components, and the scaling."""

from __future__ import annotations

from typing import Any

from lmi_config.deploy.components import ComponentPlan, component_calls
from lmi_config.deploy.plan import VARIANT_NAME, ApiCall, DeployPlan, NotGiven
from lmi_config.deploy.production import Production
from lmi_config.deploy.scaling import scaling_calls
from lmi_config.deploy.sizing import EndpointSizing


def _variant(
    sizing: EndpointSizing, model_name: str | None, instance_type: str, count: int
) -> dict[str, Any]:
    variant: dict[str, Any] = {
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
    if model_name is None:
        # an endpoint of inference components has no model of its own: each component brings its
        # own start-up timeouts (its StartupParameters)
        for key in ("ModelName", "InitialVariantWeight", "ContainerStartupHealthCheckTimeoutInSeconds"):
            variant.pop(key)
        variant.pop("ModelDataDownloadTimeoutInSeconds", None)
    return variant


def _model(
    name: str,
    image: str,
    environment: dict[str, str],
    data_uri: str | None,
    plan: DeployPlan,
    production: Production,
    tags: list[dict[str, str]],
) -> dict[str, Any]:
    container: dict[str, Any] = {"Image": image, "Environment": dict(environment)}
    if data_uri:
        container["ModelDataSource"] = {
            "S3DataSource": {"S3Uri": data_uri, "S3DataType": "S3Prefix", "CompressionType": "None"}
        }
    return {
        "ModelName": name,
        "ExecutionRoleArn": plan.role or NotGiven("--role"),
        "PrimaryContainer": container,
        "Tags": tags,
        **production.model_fields,
    }


def _models(plan: DeployPlan, production: Production, tags: list[dict[str, str]]) -> list[ApiCall]:
    if not plan.components:
        model = _model(
            plan.model_name, plan.image.uri, plan.environment, plan.model_data_uri, plan, production, tags
        )
        return [
            ApiCall(
                "sagemaker",
                "create_model",
                model,
                "the model: image and configuration",
                ("model", plan.model_name),
            )
        ]
    calls = []
    for component in plan.components:
        if (
            not isinstance(component, ComponentPlan)
            or component.model_name is None
            or component.image is None
        ):
            continue  # an adapter has no model of its own
        model = _model(
            component.model_name,
            component.image.uri,
            component.environment,
            component.weights_uri,
            plan,
            production,
            tags,
        )
        calls.append(
            ApiCall(
                "sagemaker",
                "create_model",
                model,
                f"component {component.name}'s model: image and configuration",
                ("model", component.model_name),
            )
        )
    return calls


def endpoint_calls(
    plan: DeployPlan, tags: list[dict[str, str]], production: Production, scaling_target: float | None
) -> list[ApiCall]:
    """Every call of the plan, in the order they run."""
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
    calls.extend(_models(plan, production, tags))
    variant = _variant(
        plan.sizing, None if plan.components else plan.model_name, plan.instance_type, plan.instance_count
    )
    config: dict[str, Any] = {
        "EndpointConfigName": plan.endpoint_config_name,
        "ProductionVariants": [variant],
        "Tags": tags,
        **production.config_fields,
    }
    if plan.components:
        # the endpoint hosts components: the role (and the network) are the endpoint config's
        config["ExecutionRoleArn"] = plan.role or NotGiven("--role")
        config.update(production.model_fields)
    calls.append(
        ApiCall(
            "sagemaker",
            "create_endpoint_config",
            config,
            "the endpoint config: instance, timeouts, volume"
            + (", keys, capture, async" if production.config_fields else ""),
            ("endpoint-config", plan.endpoint_config_name),
        )
    )
    names = {"EndpointName": plan.endpoint_name, "EndpointConfigName": plan.endpoint_config_name}
    if plan.update:
        parameters: dict[str, Any] = dict(names)
        purpose = "roll the endpoint to the new config"
        if plan.deployment_config is not None:
            parameters["DeploymentConfig"] = plan.deployment_config
            purpose += " (blue/green, as deploy.update says)"
        calls.append(ApiCall("sagemaker", "update_endpoint", parameters, purpose, waits_for="endpoint"))
    else:
        calls.append(
            ApiCall(
                "sagemaker",
                "create_endpoint",
                {**names, "Tags": tags},
                "the endpoint",
                ("endpoint", plan.endpoint_name),
                waits_for="endpoint",
            )
        )
    calls.extend(component_calls(plan.components, plan.endpoint_name, plan.variant_name, tags))
    if plan.autoscale:
        calls.extend(
            scaling_calls(
                plan.endpoint_name,
                plan.variant_name,
                plan.autoscale,
                scaling_target,
                asynchronous=plan.asynchronous,
                tags=tags,
            )
        )
    return calls
