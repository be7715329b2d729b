"""``plan`` and ``search``: the best configurations per instance."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from lmi_config.cli.common import (
    CONTEXT_SETTINGS,
    DAY_SECONDS,
    USAGE_ERRORS,
    FiniteFloat,
    _emit,
    _fail_input,
    _split,
    count_range,
    format_option,
    main,
)
from lmi_config.cli.search_remote import REMOTE_FLAGS, remote_options, run_remote, wants_remote
from lmi_config.errors import PlanningError

OBJECTIVE_HELP = (
    "throughput: most output tokens/s per instance; latency: lowest time per output token (then time to "
    "first token), one request at a time unless --concurrency or --request-rate says otherwise; cost: fewest "
    "dollars per million output tokens — each predicted for the workload."
)


def workload_options(command: Callable[..., Any], objective: str | None = "throughput") -> Callable[..., Any]:
    """``--objective``, ``--input-tokens`` and ``--output-tokens``: the ranking ``plan`` lists and
    the order ``search`` tries (one definition, so both read them alike). The defaults are
    ``plan.workload``'s, written out: importing the planner here would slow every command's start;
    ``plan``'s objective defaults to None (cost across instance types, throughput within one)."""
    options = [
        click.option(
            "--objective",
            type=click.Choice(["throughput", "latency", "cost"]),
            default=objective,
            show_default=objective is not None,
            help=OBJECTIVE_HELP
            + (
                ""
                if objective is not None
                else " Default: cost across instance types, throughput within one."
            ),
        ),
        click.option(
            "--input-tokens",
            type=count_range(),
            default=1024,
            show_default=True,
            help="Workload: input tokens per request.",
        ),
        click.option(
            "--output-tokens",
            type=count_range(),
            default=256,
            show_default=True,
            help="Workload: output tokens per request.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@main.command(context_settings=CONTEXT_SETTINGS)
@click.option(
    "--model",
    required=True,
    metavar="ID",
    help="Catalog id, local directory with config.json, or Hub id (--hub).",
)
@click.option(
    "--instance",
    "instance_names",
    multiple=True,
    metavar="TYPE",
    help="Instance type(s); repeatable or comma-separated.",
)
@click.option(
    "--family",
    "families",
    multiple=True,
    metavar="NAME",
    help="Instance family: inf2, trn1, trn2, g5, … (repeatable).",
)
@click.option("--backend", metavar="NAME", help="Default: transformers-neuronx on Neuron, vllm on GPU.")
@click.option(
    "--lmi-version", metavar="VERSION", help="0.30.0, v12 or an image tag (default: the backend's newest)."
)
@click.option(
    "--dtype",
    type=click.Choice(["bf16", "fp16", "fp32"]),
    default=None,
    help="Weights dtype (default: the container's).",
)
@click.option(
    "--set",
    "settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="Another option for every candidate; repeatable.",
)
@click.option(
    "--min-sequence-length",
    type=count_range(),
    default=None,
    help="Plan at least this sequence length (default: the workload's longest request).",
)
@click.option("--min-batch-size", type=count_range(), default=None, help="Only batches at least this large.")
@lambda command: workload_options(command, objective=None)
@click.option(
    "--concurrency",
    type=count_range(),
    default=None,
    help="Workload: requests in flight at the instance, spread over its copies (default: every sequence "
    "slot busy; with --objective latency, one).",
)
@click.option(
    "--request-rate",
    type=FiniteFloat(min=0, min_open=True),
    default=None,
    help="Workload: requests per second arriving at the instance (at least 3.17e-08, one a year), instead "
    "of --concurrency; a configuration that cannot complete them is not ranked.",
)
@click.option(
    "--max-ttft-ms",
    type=FiniteFloat(min=0, min_open=True),
    default=None,
    help="Only configurations predicted to give the first token within this many ms (default: a target "
    "of 2000 ms that rows over it rank after).",
)
@click.option(
    "--max-tpot-ms",
    type=FiniteFloat(min=0, min_open=True),
    default=None,
    help="Only configurations predicted to take at most this many ms per output token (default: a target "
    "of 100 ms that rows over it rank after).",
)
@click.option(
    "--no-latency-target",
    "latency_target",
    is_flag=True,
    default=True,
    flag_value=False,
    help="Rank without the default latency target (TTFT 2000 ms, TPOT 100 ms, MLPerf's server scenario).",
)
@click.option(
    "--max-model-len",
    type=count_range(),
    default=None,
    help="The longest request every configuration must serve (default: input + output tokens).",
)
@click.option(
    "--prices",
    type=click.Choice(["sagemaker", "ec2"]),
    default="sagemaker",
    show_default=True,
    help="Price list for $/M tokens (a missing SageMaker price falls back to EC2's, and says so).",
)
@click.option(
    "--top",
    type=count_range(0),
    default=10,
    show_default=True,
    help="How many to list (0: every feasible one).",
)
@click.option(
    "--all",
    "include_infeasible",
    is_flag=True,
    help="Judge the whole grid and list the infeasible candidates with the rules that block them.",
)
@format_option
@click.option(
    "--emit-spec", metavar="DIR", default=None, help="Write a render spec for each listed candidate into DIR."
)
@click.option(
    "--cache-config",
    metavar="FILE",
    default=None,
    help="Merge the feasible Neuron configurations into an optimum-neuron cache-config file.",
)
@click.option(
    "--cache-format",
    type=click.Choice(["current", "legacy"]),
    default="current",
    show_default=True,
    help="current: task/instance_type/tensor_parallel_size; legacy: num_cores/auto_cast_type.",
)
@click.option("--hub", is_flag=True, help="Look up models outside the catalog on the Hugging Face Hub.")
def plan(
    model: str,
    instance_names: tuple[str, ...],
    families: tuple[str, ...],
    settings: tuple[str, ...],
    output_format: str,
    emit_spec: str | None,
    cache_config: str | None,
    cache_format: str,
    prices: str,
    **request: Any,
) -> None:
    """Rank the instance, TP, batch and sequence-length configurations of a model.

    Every candidate is a configuration as render would write it, judged by the same
    rules as lint (memory per NeuronCore or GPU with headroom, TP against devices,
    topology and heads, host RAM), serving the workload's longest request, and ranked
    by the performance model's prediction for the workload (TTFT, TPOT, output
    tokens/s per instance, $ per million output tokens). Exit status: 0 something
    fits, 1 nothing fits, 2 unusable input.

    \b
    Examples:
      lmi-config plan --model mistralai/Mistral-7B-Instruct-v0.2 --instance ml.inf2.8xlarge --all
      lmi-config plan --model meta-llama/Llama-3.1-8B-Instruct --family inf2 --family trn1 --top 5
      lmi-config plan --model Qwen/Qwen2.5-7B-Instruct --objective cost --max-model-len 8192
      lmi-config plan --model meta-llama/Llama-3.1-8B-Instruct --objective latency --max-ttft-ms 500
      lmi-config plan --model meta-llama/Llama-3.1-8B-Instruct --family g6e --objective cost --request-rate 5
      lmi-config plan --model meta-llama/Llama-3.1-70B-Instruct --family trn1 --emit-spec specs/
      lmi-config plan --model meta-llama/Llama-3.1-8B-Instruct --family trn1 --cache-config llama3.json
    """
    from pathlib import Path

    from lmi_config import api
    from lmi_config.report.plan import format_plan_json, format_plan_text

    options = []
    for setting in settings:
        key, equals, value = setting.partition("=")
        if not equals or not key.strip():
            _fail_input(f"--set {setting!r}: expected KEY=VALUE")
        options.append((key.strip(), value.strip()))
    try:
        result = api.plan(
            model=model,
            instances=tuple(_split(instance_names)),
            families=tuple(_split(families)),
            options=tuple(options),
            complete=cache_config is not None,
            optimum_neuron_export=cache_config is not None,
            price_kind=prices,
            **request,
        )
        # merged and written under the file's lock before anything is printed: a file that cannot
        # be read or written stops the run (exit 2) with nothing half-done
        to_stdout = cache_config == "-"
        merged = api.plan_cache_config(result, "-", cache_format) if to_stdout else None
        written = (
            api.write_plan_cache_config(result, cache_config, cache_format)
            if cache_config and not to_stdout
            else None
        )
    except USAGE_ERRORS as error:
        _fail_input(str(error))
        return
    except PlanningError as error:
        click.echo(f"lmi-config: error: {error}", err=True)
        sys.exit(1)
    report = format_plan_json(result) if output_format == "json" else format_plan_text(result)
    if to_stdout:  # standard output is the cache-config document alone: `> cc.json` is valid JSON
        click.echo(report, err=True, nl=False)
    else:
        _emit(report)
    if emit_spec:
        try:
            Path(emit_spec).mkdir(parents=True, exist_ok=True)
        except OSError as error:
            _fail_input(f"cannot create {emit_spec}: {error.strerror or error}")
        for name, text in api.plan_specs(result, request["top"] or len(result.feasible)):
            _emit(text, str(Path(emit_spec) / name), "render spec")
    if merged is not None:
        text, _, notes = merged
        click.echo("".join(f"note: {note}\n" for note in notes), err=True, nl=False)
        _emit(text)
    elif written is not None:
        added, notes = written
        click.echo("".join(f"note: {note}\n" for note in notes), err=True, nl=False)
        entries = f"{added} new entr{'ies' if added != 1 else 'y'}"
        click.echo(f"wrote {cache_config} ({entries}, {cache_format} format)", err=True)


@main.command(context_settings=CONTEXT_SETTINGS)
@click.option(
    "--model",
    required=True,
    metavar="ID",
    help="Hub id or local directory to export (its architecture from the catalog, the directory or --hub).",
)
@click.option(
    "--output",
    "-o",
    metavar="FILE",
    default=None,
    help="Results file (cache-config format; default: <model name>.json).",
)
@click.option(
    "--strategy",
    type=click.Choice(["guided", "seed"]),
    default="guided",
    show_default=True,
    help="seed: the seed's exact order; guided: skip what cannot fit, probe each boundary, the (TP, batch) "
    "pairs plan ranks best for the workload first.",
)
@click.option(
    "--instance",
    multiple=True,
    metavar="TYPE",
    help="Instance type (default: detected by optimum-neuron); with --on sagemaker, one or more.",
)
@click.option(
    "--cores",
    type=count_range(1, 4096),
    default=None,
    help="NeuronCores available (default: detected, else the instance's).",
)
@click.option(
    "--cores-per-device",
    type=count_range(1, 4096),
    default=None,
    help="NeuronCores per device (default: detected, else the instance's).",
)
@click.option(
    "--task",
    type=click.Choice(["text-generation", "feature-extraction"]),
    default=None,
    help="Default: from the model's architecture.",
)
@click.option(
    "--backend",
    type=click.Choice(["nxdi", "transformers-neuronx"]),
    default="nxdi",
    show_default=True,
    help="Memory model of the predictions (optimum-neuron exports with NxD).",
)
@click.option(
    "--dtype",
    type=click.Choice(["bf16", "fp16"]),
    default=None,
    help="dtype of the predictions (default: the container's).",
)
@click.option(
    "--exporter",
    envvar="LMI_CONFIG_EXPORTER",
    default="optimum-cli",
    show_default=True,
    help="The export command (env LMI_CONFIG_EXPORTER).",
)
@click.option(
    "--python",
    "python_command",
    envvar="LMI_CONFIG_PYTHON",
    default="python",
    show_default=True,
    help="The interpreter of the load step and the detection (env LMI_CONFIG_PYTHON).",
)
@click.option("--work-dir", default="data", show_default=True, help="Where trials are exported.")
@click.option(
    "--export-timeout",
    type=count_range(1, 7 * DAY_SECONDS),
    default=None,
    help="Seconds per export (default: the judge's compile estimate x its margin, at least 600).",
)
@click.option(
    "--load-timeout",
    type=count_range(1, 7 * DAY_SECONDS),
    default=None,
    help="Seconds per load (default: 600).",
)
@click.option("--keep-artifacts", is_flag=True, help="Keep each trial's exported directory and logs.")
@click.option(
    "--require-free-gib",
    type=FiniteFloat(min=0, max=2**40),  # finite: int(nan * 2**30) raises
    default=None,
    help="Free disk space to require before each export (default: 2 x the checkpoint).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="List the candidates in order with the memory model's prediction; run nothing.",
)
@workload_options
@click.option("--hub", is_flag=True, help="Look up models outside the catalog on the Hugging Face Hub.")
@remote_options
def search(python_command: str, require_free_gib: float | None, **options: Any) -> None:
    """Find the valid export configurations of a model on this Neuron machine, or in shards.

    Runs the optimal-export-configuration workflow: each candidate TP, batch and
    sequence length is exported (optimum-cli export neuron) and loaded, each in its own
    process. Valid ones are saved after every success (optimum-neuron cache-config
    format); failures (with their class and last lines) and skips go to a journal
    beside the results. Run the same command again to resume: no trial is repeated.
    Ctrl-C ends the running trial's processes and stops (exit 130). The guided
    strategy settles the (TP, batch) pairs plan ranks best for the workload
    (--objective, --input-tokens, --output-tokens) first, so a search stopped early
    has proven the most valuable configurations; run to its end it finds the same.

    Beyond one machine: --shard K/N runs every N-th TP size and publishes to a
    shared --results location (s3:// or a directory); --merge merges the shards;
    --on sagemaker runs one training job per shard, shows the cost bound, asks,
    then watches and merges (exit 3 while a failed job is not retried).

    \b
    Examples:
      lmi-config search --model meta-llama/Llama-3.1-8B-Instruct
      lmi-config search --model Qwen/Qwen2.5-7B-Instruct --dry-run --instance trn1.32xlarge
      lmi-config search --model ./my-model --strategy seed --output my-model.json
      LMI_CONFIG_EXPORTER="python fake_exporter.py" lmi-config search --model Qwen/Qwen2.5-0.5B --instance inf2.8xlarge
      lmi-config search --model M --instance trn1.32xlarge --shard 2/3 --results s3://bucket/searches/m
      lmi-config search --model M --results s3://bucket/searches/m --merge --output m.json
      lmi-config search --model M --on sagemaker --instance trn1.32xlarge --instance trn1.2xlarge \\
          --max-jobs 3 --max-hours 8 --role ARN --s3-prefix s3://bucket/searches/m --dry-run
    """
    from lmi_config import api

    flags = {name: options.pop(name) for name in REMOTE_FLAGS}
    instances = _split(options.pop("instance"))
    if len(instances) > 1 and not flags["on"]:
        _fail_input("--instance: one instance type on this machine (several only with --on sagemaker)")
    options["instance"] = instances[0] if instances and not flags["on"] else None
    options["python"] = python_command
    options["required_free_bytes"] = int(require_free_gib * 2**30) if require_free_gib is not None else None
    report = lambda line: click.echo(line, err=True)  # noqa: E731
    if wants_remote(flags):
        run_remote(flags, {**options, "instances": tuple(instances)}, report)
        return
    try:
        result = api.search(report=report, **options)
    except USAGE_ERRORS as error:
        _fail_input(str(error))
        return
    if result.status == "dry-run":
        _emit(result.dry_run_text)
        return
    click.echo(
        f"{len(result.valid)} valid configuration(s) in {result.results}; this run: {result.trials_run} trial(s), "
        f"{result.failed} failed, {result.skipped} skipped (journal {result.journal})"
    )
    if result.stop_signal is not None:
        sys.exit(128 + result.stop_signal)
