"""The coordinator of ``search --on sagemaker``: the command the user runs, which starts the jobs
it was asked to start, watches them and merges what they publish — and which can be stopped and
started again at any moment, because everything it knows is somewhere else:

- which jobs exist and how they ended: SageMaker (jobs are named for the search and the shard,
  ``-r1``, ``-r2`` … for retries, so a restarted coordinator finds them by name);
- what the jobs found: their shard objects in S3, merged into the results file and the journal
  beside it with the local search's guarantees (:mod:`lmi_config.search.shard_merge`);
- how many jobs each shard has had: ``attempts.json`` in the results location
  (:mod:`lmi_config.search.attempts`), or the names SageMaker lists, whichever counts more;
- that only one coordinator watches a search: the lease (:mod:`lmi_config.search.lease`).

A failed or stopped job is journaled once, with SageMaker's reason and the last lines of its
CloudWatch log, and started again only with ``--retry-failed`` (the retry resumes its shard), and
only while its shard has had fewer than ``--max-attempts`` jobs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from lmi_config.errors import DeployError, InputError
from lmi_config.search.attempts import AttemptLog
from lmi_config.search.lease import Lease
from lmi_config.search.results_store import S3Store
from lmi_config.search.sagemaker_jobs import JobPlan, PlannedJob, split_s3
from lmi_config.search.shard_merge import MergeReport, merge_journal_entries, merge_results
from lmi_config.search.shard_objects import SearchDefinition, join_search, now
from lmi_config.secrets import redact

LOG_GROUP = "/aws/sagemaker/TrainingJobs"
LOG_LINES = 20
TERMINAL = ("Completed", "Failed", "Stopped")
UNSUCCESSFUL = ("Failed", "Stopped")


@dataclass
class JobState:
    """The latest attempt of one planned job."""

    job: PlannedJob
    name: str | None = None  # None: never started
    status: str = "NotStarted"
    attempts: int = 0
    hours: float = 0.0  # every attempt's: SageMaker's billable time where it gives one, else elapsed
    billed_attempts: int = 0  # attempts whose hours are SageMaker's BillableTimeInSeconds
    failure_reason: str = ""


@dataclass
class CoordinatorResult:
    """How the coordinator ended."""

    states: list[JobState] = field(default_factory=list)
    merge: MergeReport | None = None
    created: list[str] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    exhausted: list[str] = field(default_factory=list)  # shards not retried: --max-attempts reached
    declined: bool = False

    @property
    def finished(self) -> bool:
        return bool(self.states) and all(state.status in TERMINAL for state in self.states)


class Coordinator:
    """Starts, watches and merges the jobs of one plan."""

    def __init__(
        self, plan: JobPlan, clients: Any, output: str | None, report: Callable[[str], None]
    ) -> None:
        from lmi_config.deploy.aws import aws_errors

        self.plan, self.clients, self.output = plan, clients, output
        self.secret_values = plan.secret_values()
        # every line this coordinator hands on passes here: a job can echo its environment in its log
        self.report = lambda line: report(redact(line, self.secret_values))
        self.errors = aws_errors()
        bucket, prefix = split_s3(str(plan.request.s3_prefix), "--s3-prefix")
        self.store = S3Store(bucket, prefix, clients("s3"), self.errors)
        self.attempts = AttemptLog(self.store)
        self.billed_seconds: dict[str, float] = {}  # ended jobs' BillableTimeInSeconds (it no longer changes)

    def _call(self, service: str, operation: str, **parameters: Any) -> Any:
        from lmi_config.deploy.aws import describe_error

        try:
            return getattr(self.clients(service), operation)(**parameters)
        except self.errors as error:
            # a refused CreateTrainingJob can quote its parameters, the Environment among them
            raise DeployError(redact(describe_error(error), self.secret_values)) from None

    def states(self, record: bool = True) -> list[JobState]:
        """The latest attempt of every planned job, found by name in SageMaker (and, with ``record``,
        counted with ``attempts.json``)."""
        listed: dict[str, dict[str, Any]] = {}
        paginator = self.clients("sagemaker").get_paginator("list_training_jobs")
        try:
            for page in paginator.paginate(NameContains=f"-{self.plan.search_tag}-"):
                listed.update({row["TrainingJobName"]: row for row in page["TrainingJobSummaries"]})
        except self.errors as error:
            from lmi_config.deploy.aws import describe_error

            raise DeployError(redact(describe_error(error), self.secret_values)) from None
        if record:
            self.attempts.load()
        states = []
        for job in self.plan.jobs:
            state = JobState(job)
            recorded = self.attempts.count(job.shard.name)
            # every name an attempt may have had: one SageMaker no longer lists leaves a gap
            for attempt, name in enumerate(attempt_names(job.name, len(listed) + recorded + 1)):
                row = listed.get(name)
                if row is None:
                    continue
                state.name, state.status, state.attempts = name, str(row["TrainingJobStatus"]), attempt + 1
                billed = self.billed_hours(name, state.status)
                state.hours += _hours(row) if billed is None else billed
                state.billed_attempts += billed is not None
            # the search's own record counts attempts SageMaker does not list (yet: a job just created)
            state.attempts = max(state.attempts, recorded)
            last = self.attempts.last(job.shard.name)
            if state.name is None and last is not None:
                state.name, state.status = str(last.get("job")), str(last.get("status") or "InProgress")
            states.append(state)
        return states

    def billed_hours(self, name: str, status: str) -> float | None:
        """The hours SageMaker bills an ended job for (DescribeTrainingJob's ``BillableTimeInSeconds``
        times its one instance, as botocore's service model documents it); None while it runs or when
        SageMaker gives none — its elapsed time since creation is the estimate then."""
        if status not in TERMINAL:
            return None
        if name not in self.billed_seconds:
            try:
                described = self.clients("sagemaker").describe_training_job(TrainingJobName=name)
            except self.errors:
                return None  # the estimate falls back to elapsed time; the next poll asks again
            seconds = described.get("BillableTimeInSeconds")
            if not isinstance(seconds, (int, float)):
                return None
            self.billed_seconds[name] = float(seconds)
        return self.billed_seconds[name] / 3600

    def upload_package(self) -> None:
        """Put the lmi-config the jobs install under the search's prefix (named by its content, so an
        unchanged package is not uploaded twice)."""
        from lmi_config.search.job_package import job_package
        from lmi_config.search.sagemaker_jobs import package_uri

        bucket, key = split_s3(package_uri(self.plan), "--s3-prefix")
        try:
            self.clients("s3").head_object(Bucket=bucket, Key=key)
            return
        except self.errors:
            pass  # not there yet (or not readable: the put says which)
        self._call("s3", "put_object", Bucket=bucket, Key=key, Body=job_package().data)

    def startable(
        self, states: list[JobState], retry_failed: bool, max_attempts: int
    ) -> tuple[list[JobState], list[str]]:
        """(the jobs to start: never started, or failed and asked to retry below ``max_attempts``;
        the failed shards at ``max_attempts``, each with its last failure)."""
        starting, exhausted = [], []
        for state in states:
            if state.name is None:
                starting.append(state)
            elif retry_failed and state.status in UNSUCCESSFUL:
                if state.attempts < max_attempts:
                    starting.append(state)
                else:
                    exhausted.append(
                        f"{state.job.shard.name} ({state.attempts} job(s), last {self._last_failure(state)})"
                    )
        return starting, exhausted

    def _last_failure(self, state: JobState) -> str:
        if self.attempts.count(state.job.shard.name):
            return self.attempts.last_failure(state.job.shard.name)
        return f"{state.name} {state.status}"

    def start(self, states: list[JobState]) -> list[str]:
        """Create a job (the next attempt) for each of ``states``; each is recorded in ``attempts.json``."""
        created: list[str] = []
        for state in states:
            if not created:
                self.upload_package()
            name = attempt_names(state.job.name, state.attempts + 1)[state.attempts]
            self._call("sagemaker", "create_training_job", **attempt_request(state.job.request, name))
            self.attempts.started(state.job.shard.name, name)
            state.name, state.status, state.attempts = name, "InProgress", state.attempts + 1
            created.append(name)
        return created

    def record_endings(self, states: list[JobState]) -> None:
        """Record in ``attempts.json`` how each ended job ended (written only when that is news)."""
        for state in states:
            if state.name is not None and state.status in TERMINAL:
                self.attempts.ended(state.job.shard.name, state.name, state.status, state.failure_reason)

    def stop(self) -> list[str]:
        """Stop every running job of the search; returns their names."""
        stopped = []
        # SageMaker's list alone: a damaged attempts.json must not keep anyone from stopping the jobs
        for state in self.states(record=False):
            if state.name is not None and state.status == "InProgress":
                self._call("sagemaker", "stop_training_job", TrainingJobName=state.name)
                stopped.append(state.name)
        return stopped

    def merge(self) -> MergeReport:
        """Merge every shard object published so far into the results file and the journal."""
        return merge_results(
            self.store, self.output, self.plan.request.search.model, secret_values=self.secret_values
        )

    def journal_failures(self, states: list[JobState], merged: MergeReport) -> list[dict[str, Any]]:
        """A journal entry (once per job) for every failed or stopped job, with its last log lines."""
        entries = []
        for state in states:
            if state.name is None or state.status not in UNSUCCESSFUL:
                continue
            described = self._call("sagemaker", "describe_training_job", TrainingJobName=state.name)
            state.failure_reason = redact(str(described.get("FailureReason", "")), self.secret_values)
            entries.append(
                {
                    "model": self.plan.request.search.model,
                    "outcome": "job-failed",
                    "job": state.name,
                    "shard": state.job.shard.name,
                    "instance": f"ml.{state.job.shard.instance_type}",
                    "status": state.status,
                    "failure_reason": state.failure_reason,
                    "last_lines": self.last_log_lines(state.name),
                    "at": now(),
                }
            )
        if entries:
            merge_journal_entries(merged.journal, entries)
        return entries

    def last_log_lines(self, job_name: str) -> list[str]:
        """The last lines of the job's CloudWatch log (or why there are none)."""
        try:
            logs = self.clients("logs")
            streams = logs.describe_log_streams(logGroupName=LOG_GROUP, logStreamNamePrefix=f"{job_name}/")
            lines: list[str] = []
            for stream in streams.get("logStreams", []):
                events = logs.get_log_events(
                    logGroupName=LOG_GROUP,
                    logStreamName=stream["logStreamName"],
                    limit=LOG_LINES,
                    startFromHead=False,
                )
                lines.extend(str(event.get("message", "")).rstrip() for event in events.get("events", []))
            shown = [redact(line, self.secret_values) for line in lines[-LOG_LINES:]]
            return shown or [f"(no log lines in {LOG_GROUP} for {job_name})"]
        except self.errors as error:
            from lmi_config.deploy.aws import describe_error

            return [f"(its log could not be read: {describe_error(error)})"]

    def progress(self, states: list[JobState], merged: MergeReport) -> str:
        """Jobs running, trials done, valid configurations so far, estimated cost so far."""
        counts: dict[str, int] = {}
        for state in states:
            counts[state.status] = counts.get(state.status, 0) + 1
        jobs = ", ".join(f"{count} {status}" for status, count in sorted(counts.items()))
        spent = sum(state.hours * (state.job.usd_per_hour or 0.0) for state in states)
        billed = sum(state.billed_attempts for state in states)
        elapsed = sum(state.attempts for state in states) - billed
        basis = [f"SageMaker's billable time of {billed} ended job(s)"] if billed else []
        basis += [f"the elapsed time of {elapsed} job(s)"] if elapsed else []
        return (
            f"jobs: {jobs}; {merged.trials} trial(s) done, {merged.valid} valid configuration(s) so far "
            f"(in {merged.results}); estimated cost so far ${spent:,.2f} of at most ${self.plan.cost_bound_usd:,.2f}"
            + (f" (from {' and '.join(basis)})" if basis else "")
        )

    def run(
        self,
        *,
        retry_failed: bool,
        wait: bool,
        poll_seconds: float,
        confirm: Callable[[list[str]], bool],
        max_attempts: int = 2,
    ) -> CoordinatorResult:
        """Start what is to be started (after ``confirm``), then watch and merge until every job has
        ended (or once, without ``wait``). :class:`InputError` when ``retry_failed`` finds only
        failed shards that have had ``max_attempts`` jobs (named, with their last failure)."""
        options = self.plan.request.search
        definition = SearchDefinition(
            options.model, options.strategy, options.task, options.backend, options.dtype
        )
        lease = Lease(self.store, max(120.0, 5 * poll_seconds))
        lease.acquire()
        result = CoordinatorResult()
        try:
            states = self.states()
            starting, result.exhausted = self.startable(states, retry_failed, max_attempts)
            if result.exhausted:
                refusal = (
                    f"--max-attempts {max_attempts}: not started again: {'; '.join(result.exhausted)}; "
                    "give a larger --max-attempts to run them once more"
                )
                if not starting:
                    raise InputError(redact(refusal + " (nothing was started)", self.secret_values))
                self.report(refusal)
            pending = [state.job.name for state in starting]
            if pending and not confirm(pending):
                result.declined, result.states = True, states
                return result
            join_search(self.store, definition)  # before any job: the jobs join this search
            result.created = self.start(starting)
            while True:
                result.states = self.states()
                result.merge = self.merge()
                result.failures = self.journal_failures(result.states, result.merge)
                self.record_endings(result.states)
                self.report(self.progress(result.states, result.merge))
                if result.finished or not wait:
                    return result
                time.sleep(poll_seconds)
                lease.renew()
        finally:
            lease.release()


def attempt_request(request: dict[str, Any], name: str) -> dict[str, Any]:
    """The CreateTrainingJob parameters of one attempt: its own name, also in the job's environment
    (a retry's proofs name the retry, the job whose log holds them)."""
    from lmi_config.search.shard_run import JOB_NAME_VARIABLE

    environment = {**request["Environment"], JOB_NAME_VARIABLE: name}
    return {**request, "TrainingJobName": name, "Environment": environment}


def attempt_names(base: str, count: int) -> list[str]:
    """``base``, ``base-r1``, ``base-r2`` …: the names of a job's first ``count`` attempts."""
    return [base] + [f"{base}-r{number}" for number in range(1, count)]


def _hours(row: dict[str, Any]) -> float:
    started = row.get("CreationTime")
    ended = row.get("TrainingEndTime") or datetime.now(UTC)
    if not isinstance(started, datetime) or not isinstance(ended, datetime):
        return 0.0
    return max((ended - started).total_seconds(), 0.0) / 3600
