"""A local stand-in for what moto's SageMaker does not serve, in front of moto's real HTTP server.

It listens on 127.0.0.1 and speaks SageMaker's wire protocol (JSON 1.1: ``POST /`` with
``X-Amz-Target: SageMaker.Operation``), so the CLI under test goes boto3 → HTTP → here:

- every SageMaker request is validated against botocore's service model — required members,
  types, lengths, value ranges, patterns and enums, what SageMaker checks and botocore does not —
  and refused with SageMaker's ``ValidationException`` when it breaks one; every request is
  recorded (:attr:`StandIn.received`), so a test checks the request SageMaker received even where
  moto drops a member (``EnableNetworkIsolation``, the endpoint config's ``ExecutionRoleArn`` and
  ``VpcConfig``, ``UpdateEndpoint``'s ``DeploymentConfig``);
- it serves inference components, which moto does not (``NotImplementedError``, HTTP 500):
  ``CreateInferenceComponent`` (the endpoint, its variant, a variant without a model of its own and
  the component's model must exist; an adapter's base component must exist), ``Describe``,
  ``Delete``, ``ListInferenceComponents`` (``EndpointNameEquals``, ``NameContains``) and
  ``ListTags`` of their ARNs; it refuses ``DeleteEndpoint`` while components remain on it, so the
  order of a clean-up is tested;
- everything else (S3, CloudWatch, CloudWatch Logs, Application Auto Scaling, the rest of
  SageMaker) is passed to moto byte for byte; :meth:`StandIn.fail` makes one JSON-protocol call
  fail with an AWS error, as a refused permission does.

Patched into moto in-process while it runs (:func:`production_server`), as the other deploy tests
do: its 2019 instance-type list is relaxed; an endpoint config whose variants name no model (the
inference-component kind) is accepted; ``UpdateEndpoint`` switches the endpoint to the new config,
keeps the ``DeploymentConfig`` as ``LastDeploymentConfig`` and, when one of its auto-rollback
alarms is in ``ALARM``, stays on the old config with a ``FailureReason``, as SageMaker rolls back.

What it does not model: where copies are placed and whether they fit (it never refuses a component
for want of accelerators or memory: deploy judges that before any call); status transitions (a
component is ``InService`` at once, except one whose name contains ``broken``, which is
``Failed``; a deletion is immediate); ``UpdateInferenceComponent`` and the scaling of copies;
invocations; whether an adapter's artifact, a KMS key, an SNS topic or an IAM role exists; the
blue/green traffic steps themselves (an update is one switch).
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import botocore.session
from conftest import moto_server
from moto.core.responses import ActionResult
from moto.sagemaker.exceptions import ValidationError
from moto.sagemaker.models import FakeEndpoint, FakeEndpointConfig, SageMakerModelBackend
from moto.sagemaker.responses import SageMakerResponse

try:  # botocore's patterns are Java's: \p{...} classes need the regex module
    import regex as _patterns
except ImportError:  # pragma: no cover - then those few patterns are not checked
    _patterns = re  # type: ignore[misc]

ACCOUNT = "123456789012"
REGION = "us-east-1"
SERVED = {
    "CreateInferenceComponent",
    "DescribeInferenceComponent",
    "DeleteInferenceComponent",
    "ListInferenceComponents",
}
_MODEL = botocore.session.get_session().get_service_model("sagemaker")
_SKIPPED = ("content-length", "transfer-encoding", "connection", "server", "date")


def _problems(shape: Any, value: Any, path: str) -> list[str]:
    """Why SageMaker would refuse ``value`` at ``path`` (botocore's shape, all its constraints)."""
    kind = shape.type_name
    metadata = shape.metadata
    found: list[str] = []
    if kind == "structure":
        if not isinstance(value, dict):
            return [f"{path}: expected a structure"]
        for member in shape.required_members:
            if member not in value:
                found.append(f"{path}.{member}: required")
        for member, item in value.items():
            if member not in shape.members:
                found.append(f"{path}.{member}: not a member of {shape.name}")
            else:
                found.extend(_problems(shape.members[member], item, f"{path}.{member}"))
        return found
    if kind in ("list", "map"):
        if "max" in metadata and len(value) > metadata["max"]:
            found.append(f"{path}: {len(value)} entries, at most {metadata['max']}")
        if "min" in metadata and len(value) < metadata["min"]:
            found.append(f"{path}: {len(value)} entries, at least {metadata['min']}")
        if kind == "list":
            for index, item in enumerate(value):
                found.extend(_problems(shape.member, item, f"{path}[{index}]"))
        else:
            for key, item in value.items():
                found.extend(_problems(shape.key, key, f"{path} key"))
                found.extend(_problems(shape.value, item, f"{path}[{key}]"))
        return found
    if kind == "string":
        if not isinstance(value, str):
            return [f"{path}: expected a string"]
        if "max" in metadata and len(value) > metadata["max"]:
            found.append(f"{path}: longer than {metadata['max']}")
        if "min" in metadata and len(value) < metadata["min"]:
            found.append(f"{path}: shorter than {metadata['min']}")
        if shape.enum and value not in shape.enum:
            found.append(f"{path}: {value!r} is not one of {shape.enum}")
        if "pattern" in metadata and not _patterns.fullmatch(metadata["pattern"], value):
            found.append(f"{path}: {value!r} does not match {metadata['pattern']}")
        return found
    if kind in ("integer", "long", "float", "double"):
        if "min" in metadata and value < metadata["min"]:
            found.append(f"{path}: {value} is below {metadata['min']}")
        if "max" in metadata and value > metadata["max"]:
            found.append(f"{path}: {value} is above {metadata['max']}")
    return found


def validate(operation: str, parameters: dict[str, Any]) -> list[str]:
    """What SageMaker refuses in a request to ``operation`` (botocore's input shape)."""
    shape = _MODEL.operation_model(operation).input_shape
    return _problems(shape, parameters, operation) if shape is not None else []


@dataclass
class Received:
    """One request as it arrived: its target (``SageMaker.CreateModel``) and its JSON body."""

    target: str
    body: dict[str, Any]

    @property
    def operation(self) -> str:
        return self.target.split(".", 1)[-1]


@dataclass
class StandIn:
    """The stand-in's state: what it received, the components it holds, the failures it injects."""

    upstream: str
    url: str = ""
    received: list[Received] = field(default_factory=list)
    components: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: dict[str, tuple[int, str]] = field(default_factory=dict)  # target -> (nth, code)
    counts: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        with self.lock:
            self.received.clear()
            self.components.clear()
            self.failures.clear()
            self.counts.clear()

    def fail(self, target: str, nth: int = 1, code: str = "AccessDeniedException") -> None:
        """The ``nth`` call to ``target`` (``AnyScaleFrontendService.PutScalingPolicy``) fails."""
        self.failures[target] = (nth, code)

    def requests(self, operation: str) -> list[dict[str, Any]]:
        """The bodies of the SageMaker requests to ``operation`` received so far."""
        return [item.body for item in self.received if item.target == f"SageMaker.{operation}"]

    def upstream_client(self) -> Any:
        session = boto3.session.Session(
            aws_access_key_id="AKIAFAKE", aws_secret_access_key="fake", region_name=REGION
        )
        return session.client("sagemaker", endpoint_url=self.upstream)


class _Refused(Exception):
    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


def _component_arn(name: str) -> str:
    return f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:inference-component/{name}"


def _missing(client: Any, call: str, **parameters: str) -> bool:
    try:
        getattr(client, call)(**parameters)
    except client.exceptions.ClientError:
        return True
    return False


def _create_component(state: StandIn, body: dict[str, Any]) -> dict[str, Any]:
    name = body["InferenceComponentName"]
    if name in state.components:
        raise _Refused("ValidationException", f"Cannot create already existing inference component {name}.")
    upstream = state.upstream_client()
    try:
        endpoint = upstream.describe_endpoint(EndpointName=body["EndpointName"])
    except upstream.exceptions.ClientError:
        raise _Refused("ValidationException", f"Could not find endpoint {body['EndpointName']}.") from None
    config = upstream.describe_endpoint_config(EndpointConfigName=endpoint["EndpointConfigName"])
    variant = next(
        (item for item in config["ProductionVariants"] if item["VariantName"] == body.get("VariantName")),
        None,
    )
    if variant is None:
        raise _Refused(
            "ValidationException",
            f"Endpoint {body['EndpointName']} has no variant {body.get('VariantName')}.",
        )
    if variant.get("ModelName"):
        raise _Refused(
            "ValidationException",
            f"Variant {variant['VariantName']} names a model: it cannot host inference components.",
        )
    specification = body.get("Specification") or {}
    base = specification.get("BaseInferenceComponentName")
    if base is not None and base not in state.components:
        raise _Refused("ValidationException", f"Could not find base inference component {base}.")
    model = specification.get("ModelName")
    if base is None and (model is None or _missing(upstream, "describe_model", ModelName=model)):
        raise _Refused("ValidationException", f"Could not find model {model}.")
    now = time.time()
    state.components[name] = {
        "InferenceComponentName": name,
        "InferenceComponentArn": _component_arn(name),
        "EndpointName": body["EndpointName"],
        "EndpointArn": endpoint["EndpointArn"],
        "VariantName": body.get("VariantName"),
        "Specification": specification,
        "RuntimeConfig": {
            "DesiredCopyCount": (body.get("RuntimeConfig") or {}).get("CopyCount", 1),
            "CurrentCopyCount": (body.get("RuntimeConfig") or {}).get("CopyCount", 1),
        },
        "InferenceComponentStatus": "Failed" if "broken" in name else "InService",
        "CreationTime": now,
        "LastModifiedTime": now,
        "Tags": list(body.get("Tags") or []),
    }
    if "broken" in name:
        state.components[name]["FailureReason"] = "The container did not pass the ping health check."
    return {"InferenceComponentArn": _component_arn(name)}


def _describe_component(state: StandIn, body: dict[str, Any]) -> dict[str, Any]:
    found = state.components.get(body["InferenceComponentName"])
    if found is None:
        raise _Refused(
            "ValidationException", f"Could not find inference component {body['InferenceComponentName']}."
        )
    return {key: value for key, value in found.items() if key != "Tags"}


def _serve(state: StandIn, operation: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """The answer for what the stand-in serves itself; None: moto's to answer."""
    if operation == "CreateInferenceComponent":
        return _create_component(state, body)
    if operation == "DescribeInferenceComponent":
        return _describe_component(state, body)
    if operation == "DeleteInferenceComponent":
        _describe_component(state, body)
        del state.components[body["InferenceComponentName"]]
        return {}
    if operation == "ListInferenceComponents":
        rows = [
            {
                key: value
                for key, value in item.items()
                if key not in ("Specification", "RuntimeConfig", "Tags")
            }
            for item in state.components.values()
            if body.get("EndpointNameEquals") in (None, item["EndpointName"])
            and body.get("NameContains", "") in item["InferenceComponentName"]
        ]
        return {"InferenceComponents": rows}
    if operation == "ListTags" and ":inference-component/" in body.get("ResourceArn", ""):
        name = body["ResourceArn"].rsplit("/", 1)[-1]
        if name not in state.components:
            raise _Refused("ValidationException", f"Could not find inference component {name}.")
        return {"Tags": state.components[name]["Tags"]}
    if operation == "DeleteEndpoint":
        on_it = sorted(
            name
            for name, item in state.components.items()
            if item["EndpointName"] == body.get("EndpointName")
        )
        if on_it:
            raise _Refused(
                "ValidationException",
                f"Endpoint {body.get('EndpointName')} has inference components ({', '.join(on_it)}); delete them first.",
            )
    return None


def _handler(state: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _send(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
            self.send_response(status)
            for key, value in headers:
                if key.lower() not in _SKIPPED:
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _json(self, status: int, document: dict[str, Any]) -> None:
            body = json.dumps(document, default=str).encode()
            self._send(status, [("Content-Type", "application/x-amz-json-1.1")], body)

        def _proxy(self, body: bytes) -> None:
            headers = {
                key: value
                for key, value in self.headers.items()
                if key.lower() not in ("host", "content-length")
            }
            request = urllib.request.Request(
                state.upstream + self.path, data=body if body or self.command in ("POST", "PUT") else None,
                method=self.command, headers=headers,
            )  # fmt: skip
            try:
                with urllib.request.urlopen(request, timeout=60) as answer:
                    self._send(answer.status, list(answer.headers.items()), answer.read())
            except urllib.error.HTTPError as error:
                self._send(error.code, list(error.headers.items()), error.read())

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            target = self.headers.get("X-Amz-Target", "")
            if target:
                with state.lock:
                    state.counts[target] = state.counts.get(target, 0) + 1
                    injected = state.failures.get(target)
                    if injected and injected[0] == state.counts[target]:
                        self._json(
                            400, {"__type": injected[1], "message": f"injected: {target} is not allowed"}
                        )
                        return
            if not target.startswith("SageMaker."):
                self._proxy(body)
                return
            operation = target.split(".", 1)[1]
            parameters = json.loads(body or b"{}")
            with state.lock:
                state.received.append(Received(target, parameters))
            problems = validate(operation, parameters)
            if problems:
                self._json(400, {"__type": "ValidationException", "message": "; ".join(problems)})
                return
            try:
                with state.lock:
                    answer = _serve(state, operation, parameters)
            except _Refused as refusal:
                self._json(refusal.status, {"__type": refusal.code, "message": refusal.message})
                return
            if answer is None:
                self._proxy(body)
            else:
                self._json(200, answer)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

    return Handler


# --- what moto lacks, patched into it in-process -------------------------------------------------

ORIGINAL_VALIDATE = FakeEndpointConfig.validate_instance_type
ORIGINAL_VARIANTS = SageMakerModelBackend.validate_production_variants


def _relaxed_instance_types(self: Any, instance_type: str) -> None:
    if not instance_type.startswith("ml."):
        ORIGINAL_VALIDATE(self, instance_type)


def _variants_without_models(self: Any, production_variants: list[dict[str, Any]]) -> None:
    ORIGINAL_VARIANTS(self, [variant for variant in production_variants if variant.get("ModelName")])


def _alarm_in_alarm(names: list[str]) -> str | None:
    from moto.cloudwatch.models import cloudwatch_backends

    alarms = cloudwatch_backends[ACCOUNT][REGION].alarms
    return next((name for name in names if name in alarms and alarms[name].state_value == "ALARM"), None)


def _update_endpoint(self: Any) -> ActionResult:
    backend = self.sagemaker_backend
    name, config_name = self._get_param("EndpointName"), self._get_param("EndpointConfigName")
    deployment = self._get_param("DeploymentConfig")
    endpoint = backend.endpoints.get(name)
    if endpoint is None:
        raise ValidationError(message=f"Could not find endpoint {name}.")
    config = backend.describe_endpoint_config(config_name)
    alarms = [
        row["AlarmName"]
        for row in ((deployment or {}).get("AutoRollbackConfiguration") or {}).get("Alarms", [])
    ]
    firing = _alarm_in_alarm(alarms)
    if deployment:
        endpoint.last_deployment_config = deployment
    if firing:
        endpoint.failure_reason = (
            f"Update rolled back: alarm {firing} went into ALARM during the traffic shift."
        )
        return ActionResult({"EndpointArn": endpoint.arn})
    endpoint.failure_reason = None
    endpoint.endpoint_config_name = config_name
    endpoint.production_variants = endpoint._process_production_variants(config["ProductionVariants"])
    return ActionResult({"EndpointArn": endpoint.arn})


@contextmanager
def production_server() -> Iterator[StandIn]:
    """moto on 127.0.0.1 with the patches above, and the stand-in in front of it (its ``url``)."""
    with moto_server(
        (FakeEndpointConfig, "validate_instance_type", _relaxed_instance_types),
        (SageMakerModelBackend, "validate_production_variants", _variants_without_models),
        (SageMakerResponse, "update_endpoint", _update_endpoint),
    ) as upstream:
        state = StandIn(upstream)
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        state.url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            yield state
        finally:
            server.shutdown()
            server.server_close()


def reset(state: StandIn) -> None:
    """A clean server: moto's state and the stand-in's."""
    urllib.request.urlopen(
        urllib.request.Request(f"{state.upstream}/moto-api/reset", method="POST"), timeout=10
    )
    state.reset()


def endpoint_has(standin: StandIn, name: str) -> bool:
    return not _missing(standin.upstream_client(), "describe_endpoint", EndpointName=name)


__all__ = ["StandIn", "production_server", "reset", "validate", "FakeEndpoint"]
