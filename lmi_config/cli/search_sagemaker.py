"""``search --on sagemaker``: show the plan of jobs and its cost bound, confirm, start, watch, merge;
``--dry-run`` prints the exact API calls; ``--stop`` stops every job of the search."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from lmi_config.cli.common import _emit
from lmi_config.strict_json import json_text

DEPLOY_FAILED = 3  # as deploy: AWS refused a call, or a job failed


def run_sagemaker(flags: dict[str, Any], options: dict[str, Any], report: Callable[[str], None]) -> None:
    """Parse into a request, call the API, print; exits 0, 2 (input), 3 (a job failed or AWS refused)."""
    from lmi_config import api
    from lmi_config.errors import DeployError, InputError
    from lmi_config.search.sagemaker_jobs import RemoteRequest, format_plan
    from lmi_config.search.session import SearchOptions

    dry_run = bool(options.get("dry_run"))
    search = {
        name: value for name, value in options.items() if name not in ("instances", "dry_run", "instance")
    }
    request = RemoteRequest(
        SearchOptions(**search),
        tuple(options["instances"]),
        max_jobs=flags["max_jobs"],
        max_hours=flags["max_hours"],
        role=flags["role"],
        s3_prefix=flags["s3_prefix"],
        image=flags["image"],
        region=flags["region"],
        endpoint_url=flags["endpoint_url"],
        secret_env=tuple(flags["secret_env"]),
        optimum_neuron=flags["optimum_neuron"],
        stopping=bool(flags["stop"]),
    )
    plan = api.plan_search_jobs(request)
    if flags["stop"]:
        _stop(plan)
        return
    click.echo(format_plan(plan), nl=False, err=not dry_run)
    if dry_run:
        _emit(format_calls(plan))
        return

    def confirm(pending: list[str]) -> bool:
        # asked only when a job is to be started: watching and merging cost nothing
        if flags["yes"]:
            return True
        if not sys.stdin.isatty():
            # as deploy --delete: nobody can answer, so nothing that costs money starts unasked
            raise InputError(
                f"search --on sagemaker would start {len(pending)} paid job(s) and standard input is not a "
                "terminal, so nothing was asked and nothing was started: pass --yes to start them "
                "(--dry-run shows the plan and the calls)"
            )
        return click.confirm(
            f"Start {len(pending)} training job(s) ({', '.join(pending)})?", default=False, err=True
        )

    try:
        result = api.run_search_jobs(
            plan,
            output=options["output"],
            retry_failed=flags["retry_failed"],
            max_attempts=flags["max_attempts"],
            wait=not flags["no_wait"],
            poll_seconds=flags["poll_seconds"],
            confirm=confirm,
            report=report,
        )
    except DeployError as error:
        click.echo(f"lmi-config: search --on sagemaker: {error}", err=True)
        sys.exit(DEPLOY_FAILED)
    except KeyboardInterrupt:
        click.echo(
            "stopped watching; the jobs keep running: run the same command to watch and merge again", err=True
        )
        sys.exit(130)
    _print_result(result, flags["max_attempts"])


def _stop(plan: Any) -> None:
    from lmi_config import api
    from lmi_config.errors import DeployError

    try:
        stopped = api.stop_search_jobs(plan)
    except DeployError as error:
        click.echo(f"lmi-config: search --stop: {error}", err=True)
        sys.exit(DEPLOY_FAILED)
    click.echo(
        f"stopped {len(stopped)} job(s)" + (f": {', '.join(stopped)}" if stopped else " (none was running)")
    )


def format_calls(plan: Any) -> str:
    """The exact calls, one JSON document per line after its name: the upload of the lmi-config the jobs
    install (its body shown by size and digest), then each CreateTrainingJob."""
    from lmi_config import api

    upload = api.search_job_package_upload(plan)
    calls = [f"s3.put_object {json_text(upload, indent=None, sort_keys=True)}\n"] if plan.jobs else []
    calls += [
        f"sagemaker.create_training_job {json_text(plan.shown_request(job), indent=None, sort_keys=True)}\n"
        for job in plan.jobs
    ]
    return "".join(calls)


def _print_result(result: Any, max_attempts: int) -> None:
    if result.declined:
        click.echo("nothing was started", err=True)
        sys.exit(1)
    for name in result.created:
        click.echo(f"started {name}", err=True)
    for refusal in result.merge.refused if result.merge else []:
        click.echo(f"lmi-config: error: {refusal}", err=True)
    for failure in result.failures:
        click.echo(
            f"job {failure['job']} ({failure['shard']}) {failure['status']}: {failure['failure_reason']}",
            err=True,
        )
        click.echo("".join(f"  | {line}\n" for line in failure["last_lines"]), err=True, nl=False)
    merged = result.merge
    if merged is not None:
        click.echo(f"{merged.valid} valid configuration(s) in {merged.results} (journal {merged.journal})")
    if result.failures and result.finished:
        failed = [state for state in result.states if state.status in ("Failed", "Stopped")]
        if any(state.attempts < max_attempts for state in failed):
            click.echo(
                "run again with --retry-failed to start the failed shards again (they resume)", err=True
            )
        else:
            click.echo(
                f"every failed shard has had --max-attempts {max_attempts} job(s); give a larger "
                "--max-attempts with --retry-failed to run them once more",
                err=True,
            )
        sys.exit(DEPLOY_FAILED)
    if merged is not None and merged.refused:
        sys.exit(2)
