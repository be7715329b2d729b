"""What a production account asks of an endpoint, judged before any call: the VPC and network
isolation (and what the configuration then needs from the network), the KMS keys, data capture,
an asynchronous endpoint, and the refusal of a serverless one.

Each value is checked where the user wrote it (``spec.yaml:12: deploy.network.egress`` or the
flag) against SageMaker's own limits (:mod:`.request_limits`, botocore's service model) and
against what the instance family accepts (``instances.json``: the families with instance storage
that refuse ``VolumeSizeInGB`` are the ones whose volume a KMS key cannot encrypt).

The network rules: under ``EnableNetworkIsolation`` the container reaches nothing, not even S3,
so a Hugging Face Hub id cannot load and an ``s3://`` model must reach it as model data that
SageMaker downloads into ``/opt/ml/model`` (deploy attaches it, and the container reads it there);
in subnets without a NAT gateway (``egress: s3``) the Hub is out of reach but S3 is not, so
``option.model_id=s3://…`` works; with no egress at all (``egress: none``) neither is reachable,
and SageMaker downloads model data through those subnets too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lmi_config.deploy.request_limits import field_problems
from lmi_config.errors import SpecError
from lmi_config.knowledge.sagemaker_requests import sagemaker_fact
from lmi_config.spec import Spec
from lmi_config.spec_deploy import SpecAsync, SpecDataCapture, SpecDeploy, SpecEncryption, SpecNetwork

CONTAINER_MODEL_DIRECTORY = "/opt/ml/model"  # where SageMaker puts a model's data for the container
MODEL_ID_VARIABLES = ("HF_MODEL_ID", "OPTION_MODEL_ID")
_MODEL = "sagemaker.CreateModel"
_CONFIG = "sagemaker.CreateEndpointConfig"
_ACCELERATOR_WORDS = {"neuron": "a Neuron device (Inferentia2 / Trainium)", "gpu": "a GPU"}


@dataclass
class Production:
    """The production options, judged: the members they add to each call, and what the plan says."""

    model_fields: dict[str, Any] = field(default_factory=dict)  # CreateModel: VpcConfig, isolation
    config_fields: dict[str, Any] = field(default_factory=dict)  # CreateEndpointConfig: keys, capture, async
    summary: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    kept_locations: list[str] = field(default_factory=list)
    asynchronous: bool = False

    def refuse_if_any(self) -> None:
        if self.problems:
            raise SpecError("refused before any AWS call:\n  " + "\n  ".join(self.problems))


def settings_of(spec: Spec) -> SpecDeploy:
    return spec.deploy or SpecDeploy()


def refuse_serverless(spec: Spec, instance: Any | None) -> None:
    """Serverless endpoints have no GPU or Neuron device, and every LMI image needs one."""
    settings = settings_of(spec)
    if settings.serverless is None:
        return
    fact = sagemaker_fact("serverless")
    needs = (
        f"{spec.backend or 'the backend'} on ml.{instance.instance_type} needs "
        f"{_ACCELERATOR_WORDS.get(instance.accelerator, 'an accelerator')}"
        if instance is not None
        else "every LMI container image needs a GPU or a Neuron device"
    )
    raise SpecError(
        f"{spec.origin('deploy.serverless')}: a serverless endpoint has no GPU and no Neuron device, and {needs} "
        f"({fact.statement} {fact.source}); remove serverless and deploy on an instance; for an endpoint "
        "that costs nothing while idle, use async: with autoscale min 0 (it scales to zero instances)"
    )


def model_kind(model_id: str) -> str:
    """``s3`` (an S3 prefix), ``local`` (a path in the container) or ``hub`` (a Hub id)."""
    if model_id.startswith("s3://"):
        return "s3"
    if model_id.startswith(("/", "./", "../")):
        return "local"
    return "hub"


def _as_folder(uri: str) -> str:
    return uri if uri.endswith("/") else uri + "/"


@dataclass(frozen=True)
class Weights:
    """Where one configuration's weights come from, and what deploy must change for the network."""

    model_id: str
    label: str  # "the model" or "component NAME"
    uri: str | None = None  # attach as model data (network isolation)
    environment: dict[str, str] = field(default_factory=dict)  # replaces the model id variables


def judge_weights(
    spec: Spec, model_id: str, environment: dict[str, str], *, label: str, delivery: str, result: Production
) -> Weights:
    """What the network lets the configuration load; refusals (with the fix) go to ``result``."""
    network = settings_of(spec).network or SpecNetwork()
    kind = model_kind(model_id)
    weights = Weights(model_id, label)
    if network.isolation:
        weights = _isolated(spec, weights, kind, environment, delivery, result)
    egress = network.egress
    if egress == "none":
        result.problems.append(
            f"{spec.origin('deploy.network.egress')}: egress none: from these subnets the container reaches "
            f"neither the Hugging Face Hub nor S3, and SageMaker downloads model data through them too, so "
            f"{label} {model_id} cannot arrive; add an S3 gateway endpoint to the VPC and say egress: s3 "
            "(with the weights in S3: model: s3://…)"
        )
    elif egress == "s3" and kind == "hub" and not network.isolation:
        result.problems.append(
            f"{spec.origin('deploy.network.egress')}: egress s3: the subnets reach S3 but not the Hugging Face "
            f"Hub (no NAT gateway), so the container cannot download {label} {model_id}; stage the weights "
            "in S3 and give model: s3://BUCKET/PREFIX/ (option.model_id=s3://…)"
        )
    elif egress is None and kind == "hub" and network.subnets and not network.isolation:
        result.warnings.append(
            f"{label} {model_id} downloads from the Hugging Face Hub: the subnets need a NAT gateway; say "
            "deploy.network.egress (s3 or none) when they have none, and deploy refuses now instead of after "
            "the health check"
        )
    return weights


def _isolated(
    spec: Spec, weights: Weights, kind: str, environment: dict[str, str], delivery: str, result: Production
) -> Weights:
    """Under network isolation: an s3:// model becomes the model's data, a Hub id is refused."""
    where = spec.origin("deploy.network.isolation")
    model_id, label = weights.model_id, weights.label
    if kind == "hub":
        result.problems.append(
            f"{where}: {label} is {model_id}, a Hugging Face Hub id, and under network isolation the "
            "container reaches nothing (neither the Hub nor S3); stage the weights in S3 and give "
            "model: s3://BUCKET/PREFIX/ (option.model_id=s3://…): deploy attaches that prefix as the "
            f"model's data, which SageMaker downloads into {CONTAINER_MODEL_DIRECTORY} before the container starts"
        )
        return weights
    if kind != "s3":
        return weights
    if delivery == "s3":
        result.problems.append(
            f"{where}: under network isolation the weights {model_id} are the model's data "
            f"({CONTAINER_MODEL_DIRECTORY}), so serving.properties cannot come from --s3-prefix as well; "
            "deliver the configuration as the container Environment (--delivery environment, no --file)"
        )
    replaced = {
        name: CONTAINER_MODEL_DIRECTORY for name in MODEL_ID_VARIABLES if environment.get(name) == model_id
    }
    result.notes.append(
        f"network isolation: the container cannot download {model_id}; SageMaker downloads it into "
        f"{CONTAINER_MODEL_DIRECTORY} ({label}: {', '.join(sorted(replaced)) or 'the model id'} = "
        f"{CONTAINER_MODEL_DIRECTORY})"
    )
    return Weights(model_id, label, _as_folder(model_id), replaced)


def _vpc(spec: Spec, network: SpecNetwork, result: Production) -> dict[str, Any] | None:
    if not network.subnets and not network.security_groups:
        if network.egress is not None:
            result.problems.append(
                f"{spec.origin('deploy.network.egress')}: egress describes the VPC's subnets; give subnets and "
                "security_groups (--subnet, --security-group)"
            )
        return None
    if not network.subnets or not network.security_groups:
        given, missing = (
            ("subnets", "security_groups (--security-group)")
            if network.subnets
            else ("security_groups", "subnets (--subnet)")
        )
        result.problems.append(
            f"{spec.origin('deploy.network.' + given)}: SageMaker's VpcConfig needs both Subnets and "
            f"SecurityGroupIds; give {missing} too"
        )
        return None
    vpc: dict[str, Any] = {
        "SecurityGroupIds": list(network.security_groups),
        "Subnets": list(network.subnets),
    }
    result.problems.extend(field_problems(_MODEL, "VpcConfig", vpc, spec.origin("deploy.network")))
    if len(network.subnets) == 1:
        result.warnings.append(
            f"{spec.origin('deploy.network.subnets')}: one subnet; SageMaker asks for at least two, in different "
            "availability zones, even for one instance (https://docs.aws.amazon.com/sagemaker/latest/dg/host-vpc.html)"
        )
    return vpc


def judge_network(spec: Spec, result: Production) -> None:
    """VpcConfig and EnableNetworkIsolation on the model (and the endpoint config for components)."""
    network = settings_of(spec).network
    if network is None:
        return
    vpc = _vpc(spec, network, result)
    if vpc is not None:
        result.model_fields["VpcConfig"] = vpc
    if network.isolation:
        result.model_fields["EnableNetworkIsolation"] = True
    parts = []
    if vpc is not None:
        parts.append(f"VPC: {len(network.subnets)} subnets, {len(network.security_groups)} security groups")
    if network.isolation:
        parts.append("network isolation (the container reaches nothing)")
    if network.egress is not None:
        parts.append(f"egress {network.egress}")
    if parts:
        result.summary.append(("network", "; ".join(parts)))


def judge_volume_key(spec: Spec, encryption: SpecEncryption, instance: Any, result: Production) -> None:
    """KmsKeyId of the ML storage volume: refused where the family has instance storage instead
    (the families whose VolumeSizeInGB SageMaker refuses, ``instances.json``)."""
    key = encryption.volume_kms_key
    if key is None:
        return
    where = spec.origin("deploy.encryption.volume_kms_key")
    supported = instance.ebs_volume_size_supported
    if supported is False:
        result.problems.append(
            f"{where}: ml.{instance.family} instances keep the model on local NVMe instance storage, which a volume "
            "key does not encrypt, and CreateEndpointConfig fails when one is given for them (its KmsKeyId "
            "documentation, https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateEndpointConfig.html); "
            "deploy refuses it, as "
            "it refuses VolumeSizeInGB there: remove it (the instance store is encrypted by the instance's "
            "hardware module) or choose a family with an ML storage volume (ml.inf2 …)"
        )
        return
    if supported is None:
        result.warnings.append(
            f"{where}: whether ml.{instance.family} has an ML storage volume (or instance storage) is not known; "
            "the key is passed as given"
        )
    result.problems.extend(field_problems(_CONFIG, "KmsKeyId", key, where))
    result.config_fields["KmsKeyId"] = key
    result.summary.append(("encryption", f"ML storage volume: KMS key {key}"))


def _data_capture(spec: Spec, capture: SpecDataCapture, output_key: str | None, result: Production) -> None:
    modes = {"input": "Input", "output": "Output"}
    config: dict[str, Any] = {
        "EnableCapture": True,
        "InitialSamplingPercentage": capture.sampling_percentage,
        "DestinationS3Uri": capture.destination,
        "CaptureOptions": [{"CaptureMode": modes[mode]} for mode in dict.fromkeys(capture.capture)],
    }
    key = capture.kms_key or output_key
    if key:
        config["KmsKeyId"] = key
    header: dict[str, Any] = {}
    if capture.json_content_types:
        header["JsonContentTypes"] = list(capture.json_content_types)
    if capture.csv_content_types:
        header["CsvContentTypes"] = list(capture.csv_content_types)
    if header:
        config["CaptureContentTypeHeader"] = header
    base = "deploy.data_capture"
    for member, key_name, value in (
        ("InitialSamplingPercentage", "sampling_percentage", capture.sampling_percentage),
        ("DestinationS3Uri", "destination", capture.destination),
        ("CaptureOptions", "capture", config["CaptureOptions"]),
        ("KmsKeyId", "kms_key", capture.kms_key),
        ("CaptureContentTypeHeader", "json_content_types", header or None),
    ):
        where = spec.origin(f"{base}.{key_name}")
        result.problems.extend(field_problems(_CONFIG, f"DataCaptureConfig.{member}", value, where))
    if not capture.destination.startswith("s3://"):
        result.problems.append(f"{spec.origin(base + '.destination')}: write s3://BUCKET/PREFIX")
    result.config_fields["DataCaptureConfig"] = config
    result.kept_locations.append(capture.destination)
    encrypted = f", KMS key {key}" if key else ""
    result.summary.append(
        (
            "capture",
            f"{capture.sampling_percentage}% of {' and '.join(capture.capture)} to {capture.destination}{encrypted}",
        )
    )


def _async(spec: Spec, options: SpecAsync, output_key: str | None, result: Production) -> None:
    base = "deploy.async"
    output: dict[str, Any] = {"S3OutputPath": options.output}
    if options.failure:
        output["S3FailurePath"] = options.failure
    key = options.kms_key or output_key
    if key:
        output["KmsKeyId"] = key
    notification = {
        name: value
        for name, value in (("SuccessTopic", options.success_topic), ("ErrorTopic", options.error_topic))
        if value
    }
    if notification:
        output["NotificationConfig"] = notification
    config: dict[str, Any] = {"OutputConfig": output}
    if options.max_concurrent_invocations_per_instance is not None:
        config["ClientConfig"] = {
            "MaxConcurrentInvocationsPerInstance": options.max_concurrent_invocations_per_instance
        }
    for member, key_name, value in (
        ("OutputConfig.S3OutputPath", "output", options.output),
        ("OutputConfig.S3FailurePath", "failure", options.failure),
        ("OutputConfig.KmsKeyId", "kms_key", options.kms_key),
        ("OutputConfig.NotificationConfig.SuccessTopic", "success_topic", options.success_topic),
        ("OutputConfig.NotificationConfig.ErrorTopic", "error_topic", options.error_topic),
        (
            "ClientConfig.MaxConcurrentInvocationsPerInstance",
            "max_concurrent_invocations_per_instance",
            options.max_concurrent_invocations_per_instance,
        ),
    ):
        where = spec.origin(f"{base}.{key_name}")
        result.problems.extend(field_problems(_CONFIG, f"AsyncInferenceConfig.{member}", value, where))
    for key_name, uri in (("output", options.output), ("failure", options.failure)):
        if uri and not uri.startswith("s3://"):
            result.problems.append(f"{spec.origin(f'{base}.{key_name}')}: write s3://BUCKET/PREFIX")
        elif uri:
            result.kept_locations.append(uri)
    result.config_fields["AsyncInferenceConfig"] = config
    result.asynchronous = True
    topics = ", ".join(f"{name} {arn}" for name, arn in notification.items())
    result.summary.append(
        (
            "async",
            f"results to {options.output}"
            + (f", failures to {options.failure}" if options.failure else "")
            + (f", KMS key {key}" if key else "")
            + (f"; {topics}" if topics else "")
            + (
                f"; {options.max_concurrent_invocations_per_instance} requests per instance at once"
                if options.max_concurrent_invocations_per_instance is not None
                else ""
            ),
        )
    )


def judge_production(spec: Spec, instance: Any) -> Production:
    """The production options of ``spec`` on ``instance``, judged (the weights are judged apart,
    per configuration: :func:`judge_weights`)."""
    settings = settings_of(spec)
    result = Production()
    judge_network(spec, result)
    encryption = settings.encryption or SpecEncryption()
    judge_volume_key(spec, encryption, instance, result)
    output_key = encryption.output_kms_key
    if output_key is not None:
        if settings.data_capture is None and settings.async_inference is None:
            result.warnings.append(
                f"{spec.origin('deploy.encryption.output_kms_key')}: nothing to encrypt with it (no data_capture, "
                "no async)"
            )
        result.problems.extend(
            field_problems(
                _CONFIG,
                "AsyncInferenceConfig.OutputConfig.KmsKeyId",
                output_key,
                spec.origin("deploy.encryption.output_kms_key"),
            )
        )
    if settings.data_capture is not None:
        _data_capture(spec, settings.data_capture, output_key, result)
    if settings.async_inference is not None:
        _async(spec, settings.async_inference, output_key, result)
    return result
