"""The spec's ``deploy:`` section: what ``deploy`` needs besides the configuration — the network,
KMS keys, data capture, an asynchronous endpoint and its scaling, inference components, how an
update shifts traffic — one key per ``deploy`` flag (``lmi-config schema`` shows them). render
ignores it. SageMaker's own limits on these values are judged by deploy against botocore's
service model, naming the line; the models here state the types and what lmi-config decides.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

OptionValue = str | int | float | bool | dict[str, Any] | list[Any] | None
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _one_line_texts(value: Any) -> Any:
    """Refuse a newline or control character in any string of a deploy section (names, ARNs, URIs)."""
    items = value if isinstance(value, list) else list(value.values()) if isinstance(value, dict) else [value]
    for item in items:
        if isinstance(item, str) and _CONTROL.search(item):
            raise ValueError("contains a newline or control character")
    return value


class _DeploySection(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=(), populate_by_name=True)

    @field_validator("*")
    @classmethod
    def _one_line(cls, value: Any) -> Any:
        return _one_line_texts(value)


class SpecNetwork(_DeploySection):
    """Where the endpoint's containers run and what they can reach (``--subnet`` …)."""

    subnets: list[str] = Field(
        default_factory=list, description="VPC subnet ids (VpcConfig.Subnets); two in different zones."
    )
    security_groups: list[str] = Field(
        default_factory=list, description="Security group ids (VpcConfig.SecurityGroupIds), with subnets."
    )
    isolation: bool = Field(
        default=False,
        description="EnableNetworkIsolation: the container reaches nothing, not even S3; the weights must be "
        "an s3:// model, which SageMaker downloads into /opt/ml/model.",
    )
    egress: Literal["internet", "s3", "none"] | None = Field(
        default=None,
        description="What the subnets reach: internet (a NAT gateway), s3 (an S3 gateway endpoint only), none. "
        "Unset: not judged.",
    )


class SpecEncryption(_DeploySection):
    """KMS keys (``--volume-kms-key``, ``--output-kms-key``)."""

    volume_kms_key: str | None = Field(
        default=None,
        description="KmsKeyId of the ML storage volume; refused on families with instance storage.",
    )
    output_kms_key: str | None = Field(
        default=None,
        description="Key for data-capture files and asynchronous results unless they name their own.",
    )


CaptureMode = Literal["input", "output"]


def _input_and_output() -> list[CaptureMode]:
    return ["input", "output"]


class SpecDataCapture(_DeploySection):
    """Request and response capture to S3 (``--data-capture`` …)."""

    destination: str = Field(description="s3://BUCKET/PREFIX for captured requests (DestinationS3Uri).")
    sampling_percentage: int = Field(default=100, description="InitialSamplingPercentage.")
    capture: list[CaptureMode] = Field(default_factory=_input_and_output, description="What to capture.")
    json_content_types: list[str] = Field(
        default_factory=list, description="Content types captured as JSON (CaptureContentTypeHeader)."
    )
    csv_content_types: list[str] = Field(default_factory=list, description="Content types captured as CSV.")
    kms_key: str | None = Field(default=None, description="Key for the captured files (else output_kms_key).")


class SpecAsync(_DeploySection):
    """An asynchronous endpoint (``--async-output`` …): requests queue, results go to S3."""

    output: str = Field(description="s3://… for results (S3OutputPath).")
    failure: str | None = Field(default=None, description="s3://… for failures (S3FailurePath).")
    success_topic: str | None = Field(default=None, description="SNS topic ARN told of each result.")
    error_topic: str | None = Field(default=None, description="SNS topic ARN told of each failure.")
    max_concurrent_invocations_per_instance: int | None = Field(
        default=None, description="Requests each instance takes from the queue at once."
    )
    kms_key: str | None = Field(default=None, description="Key for the results (else output_kms_key).")


class SpecAutoscale(_DeploySection):
    """Application Auto Scaling (``--autoscale MIN:MAX``, ``--autoscale-target``)."""

    min: int = Field(description="Fewest instances; 0 only for an asynchronous endpoint (scale to zero).")
    max: int = Field(description="Most instances.")
    target: float | None = Field(
        default=None,
        allow_inf_nan=False,
        description="Invocations per instance per minute; for an asynchronous endpoint, queued requests per "
        "instance (ApproximateBacklogSizePerInstance).",
    )


class SpecComponent(_DeploySection):
    """One inference component: a model (or an adapter) with its own accelerators, memory and copies."""

    name: str = Field(description="Component name; the inference component is ENDPOINT-NAME.")
    model: str | None = Field(default=None, description="Model of this component (default: the spec's).")
    model_architecture: str | None = Field(default=None, description="As the spec's, for this model.")
    options: dict[str, OptionValue] = Field(
        default_factory=dict, description="Options over the spec's (tensor_parallel_degree …)."
    )
    env: dict[str, str] = Field(default_factory=dict, description="Variables over the spec's.")
    accelerators: int | None = Field(
        default=None,
        description="GPUs or Neuron devices per copy (NumberOfAcceleratorDevicesRequired); default: from TP.",
    )
    memory_mb: int | None = Field(
        default=None, description="Host memory per copy (MinMemoryRequiredInMb); default: the weights."
    )
    cpu_cores: float | None = Field(
        default=None, allow_inf_nan=False, description="NumberOfCpuCoresRequired."
    )
    copies: int = Field(default=1, description="Copies (RuntimeConfig.CopyCount).")
    adapter: str | None = Field(
        default=None, description="s3:// of a LoRA adapter served on component `base` (no model of its own)."
    )
    base: str | None = Field(default=None, description="The component an adapter runs on.")


class SpecUpdate(_DeploySection):
    """How ``--update`` shifts traffic (blue/green) and rolls back (``--traffic`` …)."""

    traffic: Literal["all-at-once", "canary", "linear"] = Field(
        default="all-at-once", description="Blue/green traffic shifting."
    )
    step_percent: int | None = Field(
        default=None, description="Canary size or linear step, as a percentage of the capacity."
    )
    step_instances: int | None = Field(default=None, description="Canary size or linear step, in instances.")
    wait_seconds: int | None = Field(
        default=None, description="WaitIntervalInSeconds: between steps (and the bake before the rest)."
    )
    termination_wait_seconds: int | None = Field(
        default=None, description="How long the old fleet stays after the shift."
    )
    max_execution_seconds: int | None = Field(
        default=None, description="MaximumExecutionTimeoutInSeconds of the whole update."
    )
    rollback_alarms: list[str] = Field(
        default_factory=list, description="CloudWatch alarms that roll the update back (they must exist)."
    )


class SpecServerless(_DeploySection):
    """A serverless endpoint: refused for LMI models (serverless has no GPU or Neuron device)."""

    memory_mb: int = Field(description="MemorySizeInMB.")
    max_concurrency: int = Field(default=1, description="MaxConcurrency.")


class SpecDeploy(_DeploySection):
    """What ``deploy`` needs besides the configuration: network, encryption, capture, async, components."""

    network: SpecNetwork | None = None
    encryption: SpecEncryption | None = None
    data_capture: SpecDataCapture | None = None
    async_inference: SpecAsync | None = Field(default=None, alias="async")
    autoscale: SpecAutoscale | None = None
    components: list[SpecComponent] = Field(default_factory=list)
    update: SpecUpdate | None = None
    serverless: SpecServerless | None = None
