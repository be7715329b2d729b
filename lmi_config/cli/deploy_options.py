"""``deploy``'s production flags: each one a key of the spec's ``deploy:`` section (one schema, see
``lmi-config schema``), given on the command line over the spec's own value."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import click

from lmi_config.cli.common import _fail_input

# flag parameter -> (key under deploy:, the flag as the user writes it)
SETTINGS: dict[str, tuple[str, str]] = {
    "subnets": ("network.subnets", "--subnet"),
    "security_groups": ("network.security_groups", "--security-group"),
    "network_isolation": ("network.isolation", "--network-isolation"),
    "egress": ("network.egress", "--egress"),
    "volume_kms_key": ("encryption.volume_kms_key", "--volume-kms-key"),
    "output_kms_key": ("encryption.output_kms_key", "--output-kms-key"),
    "data_capture": ("data_capture.destination", "--data-capture"),
    "capture_percent": ("data_capture.sampling_percentage", "--capture-percent"),
    "capture": ("data_capture.capture", "--capture"),
    "async_output": ("async.output", "--async-output"),
    "async_failure": ("async.failure", "--async-failure"),
    "async_success_topic": ("async.success_topic", "--async-success-topic"),
    "async_error_topic": ("async.error_topic", "--async-error-topic"),
    "async_max_concurrency": ("async.max_concurrent_invocations_per_instance", "--async-max-concurrency"),
    "traffic": ("update.traffic", "--traffic"),
    "traffic_wait": ("update.wait_seconds", "--traffic-wait"),
    "termination_wait": ("update.termination_wait_seconds", "--termination-wait"),
    "rollback_alarms": ("update.rollback_alarms", "--rollback-alarm"),
    "serverless": ("serverless.memory_mb", "--serverless"),
}
_UPDATE_FLAGS = ("traffic", "traffic_step", "traffic_wait", "termination_wait", "rollback_alarms")
_STEP = re.compile(r"(?P<count>[0-9]{1,6})(?P<percent>%?)")


def production_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """The flags of the spec's ``deploy:`` section."""
    decorators = [
        click.option("--subnet", "subnets", multiple=True, metavar="ID", help="VPC subnet (repeatable)."),
        click.option(
            "--security-group",
            "security_groups",
            multiple=True,
            metavar="ID",
            help="VPC security group (repeatable).",
        ),
        click.option(
            "--network-isolation",
            is_flag=True,
            default=None,
            help="EnableNetworkIsolation: the weights must be an s3:// model (SageMaker downloads them).",
        ),
        click.option(
            "--egress",
            type=click.Choice(["internet", "s3", "none"]),
            default=None,
            help="What the subnets reach: internet (NAT), s3 (an S3 gateway endpoint only), none.",
        ),
        click.option("--volume-kms-key", metavar="KEY", help="KMS key of the ML storage volume."),
        click.option("--output-kms-key", metavar="KEY", help="KMS key of captured data and async results."),
        click.option(
            "--data-capture", metavar="S3URI", help="Capture requests and responses to this prefix."
        ),
        click.option(
            "--capture-percent", type=int, default=None, metavar="PERCENT", help="Sampling percentage."
        ),
        click.option(
            "--capture",
            multiple=True,
            type=click.Choice(["input", "output"]),
            help="What to capture (repeatable; default both).",
        ),
        click.option("--async-output", metavar="S3URI", help="An asynchronous endpoint: results go here."),
        click.option("--async-failure", metavar="S3URI", help="Where failed requests' errors go."),
        click.option("--async-success-topic", metavar="ARN", help="SNS topic told of each result."),
        click.option("--async-error-topic", metavar="ARN", help="SNS topic told of each failure."),
        click.option(
            "--async-max-concurrency",
            type=int,
            default=None,
            metavar="N",
            help="Requests per instance at once.",
        ),
        click.option(
            "--traffic",
            type=click.Choice(["all-at-once", "canary", "linear"]),
            default=None,
            help="With --update: blue/green traffic shifting.",
        ),
        click.option(
            "--traffic-step",
            metavar="PERCENT%|INSTANCES",
            help="Canary size or linear step (10% or 2 instances).",
        ),
        click.option("--traffic-wait", type=int, default=None, metavar="SECONDS", help="Wait at each step."),
        click.option(
            "--termination-wait",
            type=int,
            default=None,
            metavar="SECONDS",
            help="Keep the old fleet this long.",
        ),
        click.option(
            "--rollback-alarm",
            "rollback_alarms",
            multiple=True,
            metavar="NAME",
            help="CloudWatch alarm that rolls the update back (repeatable).",
        ),
        click.option(
            "--serverless",
            type=int,
            default=None,
            metavar="MEMORY_MB",
            help="A serverless endpoint (refused: it has no GPU or Neuron device).",
        ),
    ]
    for decorator in reversed(decorators):
        function = decorator(function)
    return function


def deploy_settings(flags: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """(values by key under ``deploy:``, the flag each came from) for the flags that were given."""
    if not flags["update"]:
        given = [parameter for parameter in _UPDATE_FLAGS if flags[parameter] not in (None, ())]
        if given:
            written = "--" + given[0].replace("_", "-").removesuffix("s")
            _fail_input(
                f"{written} goes with --update (it says how the update shifts traffic); nothing was called"
            )
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for parameter, (key, flag) in SETTINGS.items():
        value = flags[parameter]
        if value is None or value == ():
            continue
        values[key] = list(value) if isinstance(value, tuple) else value
        origins[key] = flag
    step = flags["traffic_step"]
    if step is not None:
        match = _STEP.fullmatch(step.strip())
        if match is None:
            _fail_input(f"--traffic-step {step!r}: write a percentage (10%) or a number of instances (2)")
            return values, origins
        key = "update.step_percent" if match.group("percent") else "update.step_instances"
        values[key] = int(match.group("count"))
        origins[key] = "--traffic-step"
    return values, origins
