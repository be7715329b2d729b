"""Waiting for an endpoint with a progress display, and the CloudWatch lines that say why it failed.

SageMaker's ``FailureReason`` is usually a sentence about the health check; the container's own
error (out of device memory, a compile that timed out, a missing file) is in the endpoint's log
group ``/aws/sagemaker/Endpoints/<name>``, so a failure prints its last lines.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lmi_config.deploy.aws import aws_errors, is_missing
from lmi_config.knowledge.sagemaker import deploy_policy

Progress = Callable[[str, bool], None]  # (message, transient: may be overwritten by the next one)

_STEPS = {
    "Creating": "provisioning the instance, pulling the image, starting the container",
    "Updating": "starting the new configuration beside the old one",
    "SystemUpdating": "SageMaker is updating the endpoint",
    "RollingBack": "the update failed; SageMaker is returning to the previous configuration",
    "Deleting": "deleting",
}
FAILED_STATES = ("Failed", "OutOfService", "UpdateRollbackFailed")


@dataclass(frozen=True)
class WaitResult:
    """How waiting ended: InService, a failed state, or Timeout; the reason when it failed."""

    status: str
    failure_reason: str | None
    elapsed_seconds: float


def clock_text(seconds: float) -> str:
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes:d}:{rest:02d}"


def wait_for_endpoint(
    sagemaker: Any,
    name: str,
    *,
    expected_config: str | None,
    health_check_seconds: int,
    timeout_seconds: float,
    poll_seconds: float,
    progress: Progress,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> WaitResult:
    """Poll ``describe_endpoint`` until InService on ``expected_config``, a failed state, or the timeout."""
    started = clock()
    while True:
        described = sagemaker.describe_endpoint(EndpointName=name)
        status = str(described.get("EndpointStatus", "?"))
        reason = described.get("FailureReason")
        elapsed = clock() - started
        on_config = expected_config is None or described.get("EndpointConfigName") == expected_config
        step = _STEPS.get(status, "")
        if status == "Creating" or status == "Updating":
            step += f" (the health check allows {health_check_seconds} s once the container runs)"
        progress(f"  [{clock_text(elapsed)}] {name}: {status}{' — ' + step if step else ''}", True)
        if status == "InService" and on_config:
            return WaitResult(status, None, elapsed)
        if status in FAILED_STATES:
            return WaitResult(status, reason or "SageMaker gave no reason", elapsed)
        if status == "InService" and reason:
            # an update that failed and was rolled back: the endpoint serves the old config again
            return WaitResult("Failed", f"update rolled back: {reason}", elapsed)
        if elapsed >= timeout_seconds:
            return WaitResult(
                "Timeout",
                f"not InService after {int(timeout_seconds)} s (still {status}); see --wait-timeout",
                elapsed,
            )
        sleep(max(0.0, min(poll_seconds, timeout_seconds - elapsed)))


def wait_for_component(
    sagemaker: Any,
    name: str,
    *,
    health_check_seconds: int,
    timeout_seconds: float,
    poll_seconds: float,
    progress: Progress,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> WaitResult:
    """Poll ``describe_inference_component`` until InService, Failed, or the timeout."""
    started = clock()
    while True:
        described = sagemaker.describe_inference_component(InferenceComponentName=name)
        status = str(described.get("InferenceComponentStatus", "?"))
        elapsed = clock() - started
        step = (
            f" — loading (the health check allows {health_check_seconds} s)" if status == "Creating" else ""
        )
        progress(f"  [{clock_text(elapsed)}] component {name}: {status}{step}", True)
        if status == "InService":
            return WaitResult(status, None, elapsed)
        if status == "Failed":
            return WaitResult(status, described.get("FailureReason") or "SageMaker gave no reason", elapsed)
        if elapsed >= timeout_seconds:
            return WaitResult(
                "Timeout", f"not InService after {int(timeout_seconds)} s (still {status})", elapsed
            )
        sleep(max(0.0, min(poll_seconds, timeout_seconds - elapsed)))


def wait_until_component_deleted(
    sagemaker: Any,
    name: str,
    *,
    timeout_seconds: float,
    poll_seconds: float,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> bool:
    """Whether the inference component is gone before the timeout (the endpoint can go only then)."""
    return _until_missing(
        lambda: sagemaker.describe_inference_component(InferenceComponentName=name),
        timeout_seconds,
        poll_seconds,
        sleep,
        clock,
    )


def wait_until_deleted(
    sagemaker: Any,
    name: str,
    *,
    timeout_seconds: float,
    poll_seconds: float,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> bool:
    """Whether the endpoint is gone before the timeout (its config can be deleted only then)."""
    return _until_missing(
        lambda: sagemaker.describe_endpoint(EndpointName=name), timeout_seconds, poll_seconds, sleep, clock
    )


def _until_missing(
    describe: Callable[[], Any],
    timeout_seconds: float,
    poll_seconds: float,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> bool:
    """Whether ``describe`` reports the resource missing before the timeout (polled every ``poll_seconds``)."""
    started = clock()
    while clock() - started < timeout_seconds:
        try:
            describe()
        except aws_errors() as error:
            if is_missing(error):
                return True
            raise
        sleep(poll_seconds)
    return False


def last_log_lines(logs: Any, endpoint_name: str) -> tuple[list[str], str | None]:
    """The newest lines of the endpoint's CloudWatch log streams, and a note when there are none."""
    policy = deploy_policy()
    group = policy.log_group_prefix + endpoint_name
    try:
        streams = logs.describe_log_streams(
            logGroupName=group, orderBy="LastEventTime", descending=True, limit=5
        ).get("logStreams", [])
    except aws_errors() as error:
        if is_missing(error):
            return [], f"no log group {group}: the container never started (image pull, role or quota?)"
        return [], f"cannot read {group}: {error}"
    lines: list[tuple[int, str]] = []
    for stream in streams:
        try:
            events = logs.get_log_events(
                logGroupName=group,
                logStreamName=stream["logStreamName"],
                limit=policy.log_lines,
                startFromHead=False,
            ).get("events", [])
        except aws_errors() as error:
            return [], f"cannot read {group}: {error}"
        lines.extend(
            (int(event.get("timestamp", 0)), str(event.get("message", "")).rstrip()) for event in events
        )
    if not lines:
        return [], f"{group} has no log lines yet"
    lines.sort(key=lambda item: item[0])
    return [message for _, message in lines[-policy.log_lines :]], None
