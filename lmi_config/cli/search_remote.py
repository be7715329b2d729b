"""``search`` beyond one machine: ``--shard K/N --results LOCATION`` (one shard, on this machine or
as a SageMaker job's entry point), ``--merge`` (shards into a results file), and ``--on
sagemaker`` (one training job per shard, watched and merged by this command)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from lmi_config.cli.common import USAGE_ERRORS, FiniteFloat, _fail_input, count_range

DEPLOY_FAILED = 3  # as deploy: AWS refused a step, or a job failed
REMOTE_FLAGS = (
    "shard",
    "results_location",
    "merge",
    "on",
    "max_jobs",
    "max_hours",
    "role",
    "s3_prefix",
    "image",
    "yes",
    "retry_failed",
    "stop",
    "no_wait",
    "region",
    "endpoint_url",
    "poll_seconds",
    "secret_env",
    "optimum_neuron",
    "max_attempts",
)


def remote_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options of a search beyond one machine, added to ``search``."""
    options = [
        click.option(
            "--shard", metavar="K/N", default=None, help="Run only shard K of N (TP sizes split round robin)."
        ),
        click.option(
            "--results",
            "results_location",
            metavar="LOCATION",
            default=None,
            help="Where shards publish their results: s3://BUCKET/PREFIX or a shared directory.",
        ),
        click.option(
            "--merge", is_flag=True, help="Merge the shards in --results into --output, run nothing."
        ),
        click.option(
            "--on",
            type=click.Choice(["sagemaker"]),
            default=None,
            help="Run the shards as SageMaker training jobs.",
        ),
        click.option(
            "--max-jobs",
            type=count_range(1, 1000),
            default=4,
            show_default=True,
            help="At most this many jobs (shards).",
        ),
        click.option(
            "--max-hours",
            type=FiniteFloat(min=0.1, max=120),
            default=24.0,
            show_default=True,
            help="Each job's time limit (its MaxRuntimeInSeconds): bounds the cost.",
        ),
        click.option("--role", metavar="ARN", default=None, help="The jobs' SageMaker execution role."),
        click.option(
            "--s3-prefix", metavar="S3URI", default=None, help="s3://BUCKET/PREFIX for the jobs' results."
        ),
        click.option(
            "--image",
            metavar="URI",
            default=None,
            help="The jobs' image (default: the Neuron LMI image that ships the --optimum-neuron version).",
        ),
        click.option(
            "--optimum-neuron",
            "optimum_neuron",
            metavar="VERSION",
            default=None,
            help="The optimum-neuron the jobs export with, which picks their image (default: the one "
            "installed here, else the newest an image ships).",
        ),
        click.option(
            "--secret-env",
            multiple=True,
            metavar="NAME",
            help="Copy NAME (e.g. HF_TOKEN, needed for a gated model) from this shell into every job's "
            "Environment; never printed, but readable by anyone allowed sagemaker:DescribeTrainingJob.",
        ),
        click.option("--yes", is_flag=True, help="Start the jobs without asking (for scripts)."),
        click.option(
            "--retry-failed", is_flag=True, help="Start a failed or stopped job again (resumes its shard)."
        ),
        click.option(
            "--max-attempts",
            type=count_range(1, 100),
            default=2,
            show_default=True,
            help="Jobs per shard at most, the first one included: --retry-failed starts no more.",
        ),
        click.option("--stop", is_flag=True, help="Stop every running job of this search."),
        click.option(
            "--no-wait", is_flag=True, help="Start or check the jobs, merge what they wrote, and return."
        ),
        click.option("--region", default=None, help="AWS region (default: the AWS configuration's)."),
        click.option(
            "--endpoint-url", default=None, help="Send every AWS call to this URL (a private endpoint)."
        ),
        click.option(
            "--poll-seconds",
            type=FiniteFloat(min=0.01, max=3600),
            default=60.0,
            show_default=True,
            help="Seconds between two looks at the jobs.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def wants_remote(flags: dict[str, Any]) -> bool:
    """Whether a flag of this module was given (else ``search`` runs on this machine, as before)."""
    return bool(
        flags["shard"]
        or flags["results_location"]
        or flags["merge"]
        or flags["on"]
        or flags["stop"]
        or flags["secret_env"]
    )


def run_remote(flags: dict[str, Any], options: dict[str, Any], report: Callable[[str], None]) -> None:
    """Dispatch to a shard, a merge or the SageMaker coordinator; exits with the command's status."""
    from lmi_config import api

    try:
        if (flags["on"] or flags["stop"]) and (flags["shard"] or flags["merge"] or flags["results_location"]):
            _fail_input(
                "--on sagemaker plans the shards itself and merges into --output: give --s3-prefix, "
                "not --shard, --results or --merge"
            )
        if flags["secret_env"] and not (flags["on"] or flags["stop"]):
            _fail_input(
                "--secret-env gives credentials to SageMaker jobs: use it with --on sagemaker (a search on "
                "this machine reads HF_TOKEN from this shell as it is)"
            )
        if flags["on"] or flags["stop"]:
            from lmi_config.cli.search_sagemaker import run_sagemaker

            run_sagemaker(flags, options, report)
            return
        if not flags["results_location"]:
            _fail_input(
                "--shard and --merge need --results s3://BUCKET/PREFIX (or a directory the shards share)"
            )
        if flags["merge"]:
            merged = api.merge_search_results(
                flags["results_location"],
                options["output"],
                options["model"],
                region=flags["region"],
                endpoint_url=flags["endpoint_url"],
            )
            print_merge(merged)
            sys.exit(2 if merged.refused else 0)
        if not flags["shard"]:
            _fail_input("--results needs --shard K/N (this machine's shard) or --merge")
        result = api.search_shard(
            api_options(options),
            flags["shard"],
            flags["results_location"],
            region=flags["region"],
            endpoint_url=flags["endpoint_url"],
            report=report,
        )
    except USAGE_ERRORS as error:
        _fail_input(str(error))
        return
    if result.status == "dry-run":
        click.echo(result.dry_run_text, nl=False)
        return
    click.echo(
        f"shard {flags['shard']}: {len(result.valid)} valid configuration(s) published to {flags['results_location']}; "
        f"this run: {result.trials_run} trial(s), {result.failed} failed, {result.skipped} skipped"
    )
    if result.stop_signal is not None:
        sys.exit(128 + result.stop_signal)


def api_options(options: dict[str, Any]) -> Any:
    """The local search's options from the command's."""
    from lmi_config.search import SearchOptions

    return SearchOptions(**{name: value for name, value in options.items() if name != "instances"})


def print_merge(merged: Any) -> None:
    """What a merge read, added and refused."""
    for refusal in merged.refused:
        click.echo(f"lmi-config: error: {refusal}", err=True)
    click.echo(
        f"merged {len(merged.shards)} shard(s) into {merged.results}: {merged.valid} valid configuration(s), "
        f"{merged.added_results} new; journal {merged.journal}: {merged.added_journal} new entr"
        + ("y" if merged.added_journal == 1 else "ies")
    )
