"""Carry out a plan: check the name, make the calls in order, wait, and clean up after a failure."""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lmi_config.deploy.aws import Clients, aws_errors, describe_error, is_missing
from lmi_config.deploy.cleanup import Removal, carry_out, remove
from lmi_config.deploy.deletion import plan_retirement
from lmi_config.deploy.interrupt import INTERRUPTIONS, signal_of, termination_raises
from lmi_config.deploy.plan import ApiCall, DeployPlan, Reference
from lmi_config.deploy.progress import (
    Progress,
    clock_text,
    last_log_lines,
    wait_for_component,
    wait_for_endpoint,
)
from lmi_config.errors import DeployError
from lmi_config.knowledge.sagemaker import deploy_policy
from lmi_config.secrets import redact


@dataclass
class Outcome:
    """What a run did: the endpoint's state, what it created and removed, and why it failed."""

    endpoint_name: str
    region: str
    endpoint_url: str | None = None  # where the calls went (repeated in the commands shown)
    status: str = "not started"
    succeeded: bool = False
    created: list[tuple[str, str]] = field(default_factory=list)
    removal: Removal | None = None
    retired: Removal | None = None  # after --update: the previous config and model, when deploy made them
    failure: str | None = None
    failed_step: str | None = None
    log_lines: list[str] = field(default_factory=list)
    log_note: str | None = None
    elapsed_seconds: float = 0.0
    interrupted_by: int | None = None  # the signal (SIGINT for Ctrl-C) that stopped the run
    kept_why: str | None = None  # why what the run created was left in place


class _StepFailed(Exception):
    """A call was refused or the endpoint did not come up."""

    def __init__(self, message: str, *, nothing_made: bool = False) -> None:
        super().__init__(message)
        self.nothing_made = nothing_made  # AWS refused the call: what it would create does not exist


def _check_alarms(plan: DeployPlan, clients: Clients) -> None:
    """The alarms an update rolls back on must exist: SageMaker would watch nothing."""
    if not plan.rollback_alarms:
        return
    try:
        found = clients("cloudwatch").describe_alarms(
            AlarmNames=list(plan.rollback_alarms), AlarmTypes=["MetricAlarm", "CompositeAlarm"]
        )
    except aws_errors() as error:
        raise DeployError(
            f"cannot read the rollback alarms ({describe_error(error)}); nothing was created"
        ) from None
    names = {row["AlarmName"] for key in ("MetricAlarms", "CompositeAlarms") for row in found.get(key, [])}
    missing = [name for name in plan.rollback_alarms if name not in names]
    if missing:
        raise DeployError(
            f"rollback alarm {', '.join(missing)} does not exist in {plan.region}: the update would roll back on "
            "nothing; create it (aws cloudwatch put-metric-alarm) or name an alarm that exists"
        )


def _check_variants(plan: DeployPlan, clients: Clients, config_name: str) -> None:
    """A blue/green update keeps the variant names (SageMaker refuses a config with others)."""
    from lmi_config.knowledge.sagemaker_requests import sagemaker_fact

    try:
        current = clients("sagemaker").describe_endpoint_config(EndpointConfigName=config_name)
    except aws_errors() as error:
        if is_missing(error):
            return  # the config was deleted by hand: SageMaker says so itself
        raise DeployError(describe_error(error)) from None
    names = sorted(str(row.get("VariantName")) for row in current.get("ProductionVariants", []))
    if names and names != [plan.variant_name]:
        fact = sagemaker_fact("blue_green")
        raise DeployError(
            f"--update: endpoint {plan.endpoint_name} runs variant {', '.join(names)} and deploy's config names "
            f"{plan.variant_name}: {fact.statement} ({fact.source}); nothing was created"
        )


def _preflight(plan: DeployPlan, clients: Clients) -> str | None:
    """Refuse before creating anything: an existing name (or a missing one with --update), no bucket,
    an update's alarms that do not exist or variants it would not keep."""
    sagemaker = clients("sagemaker")
    try:
        existing = sagemaker.describe_endpoint(EndpointName=plan.endpoint_name)
    except aws_errors() as error:
        if not is_missing(error):
            raise DeployError(describe_error(error)) from None
        existing = None
    if existing is not None and not plan.update:
        raise DeployError(
            f"endpoint {plan.endpoint_name} already exists ({existing.get('EndpointStatus')}); choose another "
            f"--endpoint-name, roll it to this configuration with --update, or remove it with --delete "
            f"{plan.endpoint_name}"
        )
    if existing is None and plan.update:
        raise DeployError(f"--update: there is no endpoint {plan.endpoint_name} in {plan.region} to update")
    if existing is not None and plan.update:
        _check_variants(plan, clients, str(existing["EndpointConfigName"]))
    _check_alarms(plan, clients)
    if plan.bucket:
        try:
            clients("s3").head_bucket(Bucket=plan.bucket)
        except aws_errors() as error:
            raise DeployError(
                f"S3 bucket {plan.bucket} is not usable ({describe_error(error)}); create it or give another "
                "--s3-prefix"
            ) from None
    return str(existing["EndpointConfigName"]) if existing else None


def _retire_previous(clients: Clients, endpoint_name: str, previous: str, say: Progress) -> Removal:
    """After an update: remove the previous endpoint config and its models, if deploy created them
    and nothing else uses them (decided as ``--delete`` decides)."""
    plan = plan_retirement(clients, endpoint_name, previous)
    if plan.remove:
        say("removing the previous configuration, no longer used:", False)
    return carry_out(clients, plan, say)


def _resolved(value: Any, answers: dict[str, dict[str, Any]]) -> Any:
    """``value`` with each :class:`Reference` replaced by what the earlier call answered."""
    if isinstance(value, Reference):
        return answers[value.call][value.field]
    if isinstance(value, dict):
        return {key: _resolved(item, answers) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolved(item, answers) for item in value]
    return value


def _invoke(clients: Clients, call: ApiCall, answers: dict[str, dict[str, Any]]) -> None:
    try:
        answer = getattr(clients(call.service), call.operation)(**_resolved(call.parameters, answers))
    except aws_errors() as error:
        # a response from AWS means the call was refused; a connection error may hide a success
        raise _StepFailed(describe_error(error), nothing_made=hasattr(error, "response")) from None
    if call.returns:
        answers[call.returns] = dict(answer)


def execute(
    plan: DeployPlan,
    progress: Progress,
    *,
    endpoint_url: str | None = None,
    wait: bool = True,
    keep_on_failure: bool = False,
    sleep: Callable[[float], None] = time.sleep,
) -> Outcome:
    """Make the plan's calls. Raises :class:`DeployError` when nothing could start (the name, the
    bucket, credentials); a later failure is in the returned :class:`Outcome`, after clean-up."""
    if plan.role is None:
        raise DeployError("no execution role: give --role arn:aws:iam::ACCOUNT:role/NAME")
    secrets = plan.secret_values()
    clients = Clients(plan.region, endpoint_url)
    outcome = Outcome(plan.endpoint_name, plan.region, endpoint_url)
    started = time.monotonic()

    def say(message: str, transient: bool = False) -> None:
        # the terminal may be gone (SIGHUP, a closed pipe): the clean-up must still run
        with contextlib.suppress(OSError):
            progress(redact(message, secrets), transient)

    with termination_raises():
        try:
            _run_calls(plan, clients, outcome, say, wait=wait, started=started, sleep=sleep)
        except _StepFailed as failure:
            outcome.failure = redact(str(failure), secrets)
            if outcome.status not in ("not started",):
                lines, note = last_log_lines(clients("logs"), plan.endpoint_name)
                outcome.log_lines = [redact(line, secrets) for line in lines]
                outcome.log_note = note
            _roll_back(clients, outcome, say, keep=keep_on_failure)
        except INTERRUPTIONS as interruption:
            outcome.interrupted_by = signal_of(interruption)
            outcome.failure = f"interrupted by {signal.Signals(outcome.interrupted_by).name}"
            # once the endpoint runs on (or rolls to) what this run made, removing it would break it
            if (outcome.succeeded or outcome.status == "Updating") and not keep_on_failure:
                outcome.kept_why = f"endpoint {plan.endpoint_name} runs on or may be rolling to them"
            _roll_back(clients, outcome, say, keep=keep_on_failure or outcome.kept_why is not None)
        except DeployError:
            if outcome.created:  # only the preflight raises it today, before anything exists
                _roll_back(clients, outcome, say, keep=keep_on_failure)
            raise  # nothing could start: the name, the bucket, credentials
        except Exception as error:  # a local failure part-way (a bug, an answer of an unexpected shape)
            outcome.failure = redact(f"unexpected {type(error).__name__}: {error}", secrets)
            _roll_back(clients, outcome, say, keep=keep_on_failure)
    outcome.elapsed_seconds = time.monotonic() - started
    return outcome


def _roll_back(clients: Clients, outcome: Outcome, say: Progress, *, keep: bool) -> None:
    if keep:
        say(
            "kept what this run created" + (" (--keep-on-failure)" if outcome.kept_why is None else ""), False
        )
        return
    say("removing what this run created:", False)
    outcome.removal = remove(clients, outcome.created, say)


def _run_calls(
    plan: DeployPlan,
    clients: Clients,
    outcome: Outcome,
    say: Progress,
    *,
    wait: bool,
    started: float,
    sleep: Callable[[float], None],
) -> None:
    """The calls in order; each resource is recorded before its call, so an interruption between
    AWS creating it and the answer arriving still removes it."""
    previous = _preflight(plan, clients)
    answers: dict[str, dict[str, Any]] = {}
    for call in plan.calls:
        outcome.failed_step = f"{call.service}.{call.operation}"
        say(
            f"[{clock_text(time.monotonic() - started)}] {call.purpose}: {call.service}.{call.operation}",
            False,
        )
        if call.creates:
            outcome.created.append(call.creates)
        if call.operation == "update_endpoint":
            # from here an interruption must not remove what the endpoint may be rolling to
            outcome.status = "Updating"
        try:
            _invoke(clients, call, answers)
        except _StepFailed as failure:
            if call.creates and failure.nothing_made:
                outcome.created.pop()
            raise
        if call.waits_for == "endpoint":
            outcome.status = "Creating" if call.operation == "create_endpoint" else "Updating"
            if not wait:
                break
            _wait(plan, clients, outcome, say, sleep)
        elif call.waits_for == "inference-component" and call.creates:
            _wait_component(plan, clients, call.creates[1], say, sleep)
    outcome.succeeded = True
    outcome.failed_step = None
    if plan.update and previous and wait and previous != plan.endpoint_config_name:
        outcome.retired = _retire_previous(clients, plan.endpoint_name, previous, say)
        outcome.interrupted_by = outcome.retired.interrupted_by  # what is left is listed with its commands


def _wait_component(
    plan: DeployPlan, clients: Clients, name: str, say: Progress, sleep: Callable[[float], None]
) -> None:
    component = next((item for item in plan.components if item.component_name == name), None)
    sizing = component.sizing if component is not None and component.sizing is not None else plan.sizing
    result = wait_for_component(
        clients("sagemaker"),
        name,
        health_check_seconds=sizing.health_check_timeout_seconds,
        timeout_seconds=deploy_policy().provisioning_seconds
        + sizing.health_check_timeout_seconds
        + (sizing.download_timeout_seconds or 0),
        poll_seconds=plan.poll_seconds,
        progress=say,
        sleep=sleep,
    )
    if result.status != "InService":
        raise _StepFailed(f"inference component {name} is {result.status}: {result.failure_reason}")


def _wait(
    plan: DeployPlan, clients: Clients, outcome: Outcome, say: Progress, sleep: Callable[[float], None]
) -> None:
    result = wait_for_endpoint(
        clients("sagemaker"),
        plan.endpoint_name,
        expected_config=plan.endpoint_config_name,
        health_check_seconds=plan.sizing.health_check_timeout_seconds,
        timeout_seconds=plan.wait_timeout_seconds,
        poll_seconds=plan.poll_seconds,
        progress=say,
        sleep=sleep,
    )
    outcome.status = result.status
    if result.status != "InService":
        raise _StepFailed(f"endpoint {plan.endpoint_name} is {result.status}: {result.failure_reason}")
