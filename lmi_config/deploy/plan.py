"""What a deployment will do: the request (flags), and the plan — every API call with its
parameters, in order — that ``deploy`` shows before it calls anything (secrets masked)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from lmi_config.deploy.image_choice import ImageChoice
from lmi_config.deploy.request_limits import Deferred
from lmi_config.deploy.sizing import EndpointSizing, SizingOverrides
from lmi_config.deploy.tags import OWNER_TAG as OWNER_TAG
from lmi_config.strict_json import dump_json

MASK = "****"
VARIANT_NAME = "AllTraffic"
DELIVERIES = ("auto", "environment", "s3")


@dataclass(frozen=True)
class DeployRequest:
    """Everything ``deploy`` is told besides the spec (one field per command-line flag)."""

    region: str | None = None
    role: str | None = None
    endpoint_name: str | None = None
    s3_prefix: str | None = None  # s3://bucket/prefix: where serving.properties and files go
    instance_count: int = 1
    delivery: str = "auto"  # auto | environment | s3
    files: tuple[str, ...] = ()  # model.py, requirements.txt … uploaded beside serving.properties
    secret_env: tuple[str, ...] = ()  # variables copied from this shell into the container, never shown
    tags: tuple[tuple[str, str], ...] = ()
    autoscale: tuple[int, int] | None = None  # (min, max) instances
    autoscale_target: float | None = None  # invocations per instance per minute
    image: str | None = None  # an image URI instead of the table's
    sizing: SizingOverrides = field(default_factory=SizingOverrides)
    update: bool = False  # roll an existing endpoint to the new configuration
    endpoint_url: str | None = None  # one URL for every AWS service (private endpoints, tests)
    wait: bool = True
    wait_timeout_seconds: int | None = None
    poll_seconds: float | None = None
    keep_on_failure: bool = False


class Reference(Deferred):
    """A parameter an earlier call returns (the step scaling policy's ARN for the alarm that
    triggers it): shown in the plan as such, filled in when the calls run."""

    def __init__(self, call: str, field: str) -> None:
        self.call = call  # the ApiCall.returns of the call that answers it
        self.field = field

    def __str__(self) -> str:
        return f"<{self.field} returned by {self.call}>"

    __repr__ = __str__


class NotGiven(Deferred):
    """A parameter the run needs and the dry run was not given (``--role``)."""

    def __init__(self, flag: str) -> None:
        self.flag = flag

    def __str__(self) -> str:
        return f"(not given: {self.flag})"

    __repr__ = __str__


@dataclass(frozen=True)
class ApiCall:
    """One call: ``service.operation(**parameters)``, what it is for, and what it creates."""

    service: str  # s3 | sagemaker | application-autoscaling | cloudwatch
    operation: str
    parameters: dict[str, Any]
    purpose: str
    creates: tuple[str, str] | None = None  # (kind, name): what to remove when a later step fails
    returns: str | None = None  # a name later calls' References use for this call's answer
    waits_for: str | None = None  # "endpoint" | "inference-component": wait for InService after it


@dataclass(frozen=True)
class PlannedFile:
    """A file uploaded to the model's S3 prefix."""

    name: str
    key: str
    data: bytes

    def public(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "key": self.key,
            "bytes": len(self.data),
            "sha256": hashlib.sha256(self.data).hexdigest(),
        }


@dataclass
class DeployPlan:
    """The calls deploy makes, with the choices behind them."""

    region: str
    endpoint_name: str
    model_name: str
    endpoint_config_name: str
    variant_name: str
    instance_type: str
    instance_count: int
    image: ImageChoice
    delivery: str  # environment | s3
    bucket: str | None
    prefix: str | None  # the model's own prefix inside the bucket (ends with /)
    files: list[PlannedFile]
    environment: dict[str, str]
    secret_names: frozenset[str]
    sizing: EndpointSizing
    calls: list[ApiCall]
    update: bool
    role: str | None
    wait_timeout_seconds: int
    poll_seconds: float
    rendered: Any  # lmi_config.render.Rendered
    target: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    autoscale: tuple[int, int] | None = None
    # production options (deploy.* in the spec): what the plan shows of them, line by line
    production: list[tuple[str, str]] = field(default_factory=list)  # (label, text)
    weights_uri: str | None = None  # network isolation: the weights SageMaker downloads into /opt/ml/model
    components: list[Any] = field(default_factory=list)  # lmi_config.deploy.components.ComponentPlan
    deployment_config: dict[str, Any] | None = None  # --update: blue/green and auto-rollback
    rollback_alarms: tuple[str, ...] = ()
    kept_locations: tuple[str, ...] = ()  # async results, captured data: the user's, never deleted
    asynchronous: bool = False
    preview: Any = None  # lmi_config.deploy.update.UpdatePreview (a --update dry run)

    @property
    def model_data_uri(self) -> str | None:
        if self.weights_uri:
            return self.weights_uri
        return f"s3://{self.bucket}/{self.prefix}" if self.bucket and self.prefix is not None else None

    def renderings(self) -> list[tuple[str | None, Any]]:
        """(component name or None, Rendered) of every configuration the plan deploys."""
        if not self.components:
            return [(None, self.rendered)]
        return [(item.name, item.rendered) for item in self.components if item.rendered is not None]

    @property
    def blocking(self) -> list[str]:
        """Error-level findings of the rendered configurations: deploy refuses, as render does. A gated
        model with no Hub token in the container's environment is refused too (a warning to lint, which
        cannot know the token deploy passes): the endpoint would start, pay for its instance, and fail
        its download with 401, as ``search --on sagemaker`` refuses the same case."""
        from lmi_config.secrets import hugging_face_token_names

        has_token = bool(
            hugging_face_token_names() & {name for name, value in self.environment.items() if value}
        )
        found: list[str] = []
        for component, rendered in self.renderings():
            prefix = f"component {component}: " if component else ""
            found.extend(
                f"{prefix}{finding.code} [{finding.rule}] {finding.message}" for finding in rendered.errors
            )
            found.extend(prefix + problem for problem in rendered.problems)
            if not has_token:
                found.extend(
                    f"{prefix}{finding.code} [{finding.rule}] {finding.message}; deploy refuses it (the endpoint "
                    "would fail its download with 401 once its instance is up): export HF_TOKEN and pass "
                    "--secret-env HF_TOKEN"
                    for finding in rendered.findings
                    if finding.rule == "gated-model-without-token"
                )
        return found

    def secret_values(self) -> frozenset[str]:
        """The values that must never be printed."""
        return frozenset(
            value for name, value in self.environment.items() if name in self.secret_names and value
        )

    def masked(self, value: Any) -> Any:
        """``value`` with the secret environment variables' values replaced by a mask (deeply)."""
        if isinstance(value, dict):
            return {
                key: MASK if key in self.secret_names and isinstance(item, str) else self.masked(item)
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [self.masked(item) for item in value]
        if isinstance(value, bytes):
            return f"<{len(value)} bytes, sha256 {hashlib.sha256(value).hexdigest()[:16]}…>"
        if isinstance(value, Deferred):
            return str(value)
        return value

    def public(self) -> dict[str, Any]:
        """The plan as one JSON-able document (what ``--format json`` prints), secrets masked."""
        return {
            "endpoint_name": self.endpoint_name,
            "region": self.region,
            "update": self.update,
            "model_name": self.model_name,
            "endpoint_config_name": self.endpoint_config_name,
            "variant_name": self.variant_name,
            "instance_type": f"ml.{self.instance_type}",
            "instance_count": self.instance_count,
            "target": self.target,
            "image": self.image.public(),
            "delivery": self.delivery,
            "model_data": self.model_data_uri,
            "files": [planned.public() for planned in self.files],
            "environment": self.masked(dict(self.environment)),
            "sizing": {
                "container_startup_health_check_timeout_seconds": self.sizing.health_check_timeout_seconds,
                "model_data_download_timeout_seconds": self.sizing.download_timeout_seconds,
                "volume_size_gb": self.sizing.volume_size_gb,
                "inference_ami_version": self.sizing.inference_ami,
                "reasons": list(self.sizing.reasons),
            },
            "autoscale": {"min": self.autoscale[0], "max": self.autoscale[1]} if self.autoscale else None,
            "wait_timeout_seconds": self.wait_timeout_seconds,
            "calls": [
                {
                    "service": call.service,
                    "operation": call.operation,
                    "purpose": call.purpose,
                    "parameters": self.masked(call.parameters),
                }
                for call in self.calls
            ],
            "production": [{"what": label, "detail": text} for label, text in self.production],
            "components": [item.public(self) for item in self.components],
            "deployment_config": self.deployment_config,
            "update_preview": self.preview.public() if self.preview is not None else None,
            "notes": list(self.notes),
            "warnings": list(self.warnings),
            "refused": self.blocking,
        }

    def as_json(self) -> str:
        return dump_json(self.public(), default=str)
