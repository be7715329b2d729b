"""Command line: parse arguments, call the API, print. Nothing else.

Exit codes (a stable interface): 0 no error-level findings, 1 error-level findings (or warnings
with ``--strict``; nothing fits), 2 unusable input (files, specs, templates, settings, output).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from lmi_config import __version__
from lmi_config.errors import InputError, OutputError, PlanningError, SpecError, TemplateProblem

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
USAGE_ERRORS = (InputError, OutputError, SpecError, TemplateProblem)


def _fail_input(message: str) -> None:
    click.echo(f"lmi-config: error: {message}", err=True)
    sys.exit(2)


def _split(values: tuple[str, ...]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _emit(text: str, output: str | None = None, what: str = "") -> None:
    """Print to stdout, or write ``output`` safely (``-`` is stdout)."""
    from lmi_config.io import write_output

    if output is None:
        output = "-"
    try:
        shown = write_output(output, text)
    except OutputError as error:
        _fail_input(str(error))
        return
    if output != "-":
        click.echo(f"wrote {shown}{f' ({what})' if what else ''}", err=True)


def target_options(*, env: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The options every command that judges a configuration shares, defined once."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        decorators = [
            click.option(
                "--instance",
                metavar="TYPE",
                help="Instance type, e.g. ml.inf2.24xlarge: enables parallelism and memory checks.",
            ),
            click.option(
                "--model",
                metavar="ID",
                help="Model id or local directory with config.json (default: option.model_id).",
            ),
            click.option(
                "--backend",
                metavar="NAME",
                help="vllm, lmi-dist, tensorrt-llm, transformers-neuronx (tnx), nxdi, huggingface … (default: inferred).",
            ),
            click.option(
                "--lmi-version",
                metavar="VERSION",
                help="0.30.0, v12 or an image tag (default: inferred from the file or the backend).",
            ),
            click.option(
                "--hub",
                is_flag=True,
                help="Look up models outside the built-in catalog on the Hugging Face Hub (needs lmi-config[hub]).",
            ),
            click.option(
                "--lnc",
                type=click.IntRange(1, 2),
                default=None,
                help="Trainium2 logical NeuronCore setting (default: NEURON_LOGICAL_NC_CONFIG from an env file, else 2).",
            ),
        ]
        if env:
            decorators.append(
                click.option(
                    "--env",
                    "env_files",
                    multiple=True,
                    metavar="FILE",
                    help="An env file the container sees together with each PATH.",
                )
            )
        for decorator in reversed(decorators):
            function = decorator(function)
        return function

    return decorate


def _lint_options(
    *,
    select: tuple[str, ...] = (),
    ignore: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
    settings_file: str | None = None,
    isolated: bool = False,
    **target: Any,
) -> Any:
    """LintOptions from the flags and the project settings; exit 2 for a bad settings file or rule name."""
    from lmi_config import api

    try:
        return api.lint_options(
            select=_split(select),
            ignore=_split(ignore),
            exclude=_split(exclude),
            settings_file=settings_file,
            isolated=isolated,
            **target,
        )
    except InputError as error:
        _fail_input(str(error))


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "-V", "--version", prog_name="lmi-config")
def main() -> None:
    """Check and write DJL Serving / LMI configurations offline, in milliseconds.

    \b
    Examples:
      lmi-config lint serving.properties --instance ml.inf2.8xlarge
      lmi-config lint deploy/ --format github
      lmi-config explain serving.properties --instance ml.inf2.24xlarge
      lmi-config render spec.yaml -o serving.properties
      lmi-config convert serving.properties --to json
      lmi-config rules unknown-option
    """


@main.command(context_settings=CONTEXT_SETTINGS)
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "sarif", "github"]),
    default="text",
    show_default=True,
)
@click.option(
    "--select",
    multiple=True,
    metavar="RULES",
    help="Only these rules (codes, slugs or prefixes such as LMI1; comma-separated).",
)
@click.option("--ignore", multiple=True, metavar="RULES", help="Skip these rules (codes, slugs or prefixes).")
@click.option(
    "--exclude",
    multiple=True,
    metavar="PATTERNS",
    help="Skip files and directories matching these fnmatch patterns (added to the settings' exclude).",
)
@click.option("--strict", is_flag=True, help="Exit 1 on warnings too.")
@target_options()
@click.option(
    "--stdin-kind",
    type=click.Choice(["properties", "env", "json"]),
    default=None,
    help="How to read `-` (default: guessed).",
)
@click.option(
    "--config",
    "settings_file",
    metavar="FILE",
    help="Settings file (default: .lmi-config.toml or pyproject.toml, searched upwards).",
)
@click.option("--isolated", is_flag=True, help="Ignore every settings file.")
@click.option(
    "--color/--no-color", default=None, help="Colour the text output (default: when writing to a terminal)."
)
def lint(
    paths: tuple[str, ...],
    output_format: str,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    exclude: tuple[str, ...],
    strict: bool,
    stdin_kind: str | None,
    settings_file: str | None,
    isolated: bool,
    color: bool | None,
    env_files: tuple[str, ...],
    **target: Any,
) -> None:
    """Lint serving.properties files, env files, Environment JSON and directories.

    A directory is searched for serving.properties, *.properties, .env and *.env;
    serving.properties and the env files beside it are checked as the pair the
    container reads. `-` reads standard input. Settings (select, ignore, exclude,
    per-path instance/backend/version/model) come from .lmi-config.toml or a
    [tool.lmi-config] table in pyproject.toml.

    Exit status: 0 no errors (warnings allowed), 1 errors (or warnings with --strict),
    2 unusable input.

    \b
    Examples:
      lmi-config lint serving.properties
      lmi-config lint model/ --instance ml.inf2.8xlarge
      lmi-config lint serving.properties --env sagemaker.env --format json
      cat serving.properties | lmi-config lint - --backend tnx --lmi-version 0.30.0
      lmi-config lint . --ignore LMI005,trailing-whitespace --exclude 'tests/*' --strict
    """
    from lmi_config import api, report
    from lmi_config.rules import load_rules

    options = _lint_options(
        **target,
        select=select,
        ignore=ignore,
        exclude=exclude,
        settings_file=settings_file,
        isolated=isolated,
    )
    stdin_bytes = sys.stdin.buffer.read() if "-" in paths else None
    try:
        result = api.lint_paths(
            list(paths), options, env_files=list(env_files), stdin_bytes=stdin_bytes, stdin_kind=stdin_kind
        )
    except InputError as error:
        _fail_input(str(error))
        return
    summary = report.summarize(result.findings, result.files, result.notes)
    if output_format == "json":
        output = report.format_json(result.findings, summary)
    elif output_format == "sarif":
        output = report.format_sarif(result.findings, load_rules())
    elif output_format == "github":
        output = report.format_github(result.findings)
    else:
        use_color = sys.stdout.isatty() if color is None else color
        output = report.format_text(result.findings, summary, color=use_color)
    _emit(output)
    failing = result.errors + (result.warnings if strict else 0)
    sys.exit(1 if failing else 0)


@main.command(context_settings=CONTEXT_SETTINGS)
@click.argument("path")
@target_options()
@click.option(
    "--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def explain(path: str, env_files: tuple[str, ...], output_format: str, **target: Any) -> None:
    """Show how the container reads a configuration and what it needs per core or GPU.

    Prints the effective configuration (value, default or not, where each key came
    from), the shape the container builds (TP, batch, sequence length, copies, with
    the source of each), and with --instance the memory per NeuronCore or GPU, item by
    item, against the budget, the verdict, and the nearest configurations that fit.

    \b
    Examples:
      lmi-config explain serving.properties --instance ml.inf2.8xlarge
      lmi-config explain model/ --instance trn1.32xlarge --model meta-llama/Llama-3.1-70B-Instruct
      lmi-config explain serving.properties --instance g5.12xlarge --format json
    """
    import json

    from lmi_config import api
    from lmi_config.report.explain import format_explain_text

    options = _lint_options(**target)
    try:
        stdin_bytes = sys.stdin.buffer.read() if path == "-" else None
        result = api.explain_paths([path], options, env_files=list(env_files), stdin_bytes=stdin_bytes)
    except InputError as error:
        _fail_input(str(error))
        return
    documents = result.documents
    if output_format == "json":
        _emit(json.dumps(documents if len(documents) > 1 else documents[0], indent=2) + "\n")
    else:
        _emit("\n".join(format_explain_text(document) for document in documents))
    sys.exit(1 if result.errors else 0)


@main.command(context_settings=CONTEXT_SETTINGS)
@click.argument("spec_file", required=False, metavar="SPEC.yaml")
@click.option(
    "--model", metavar="ID", help="Model (Hub id, s3:// prefix or local directory); overrides the spec's."
)
@click.option(
    "--model-architecture",
    metavar="ID",
    help="Catalog id or local directory with config.json, when --model is s3:// or private.",
)
@click.option("--instance", metavar="TYPE", help="Instance type, e.g. ml.inf2.24xlarge.")
@click.option(
    "--backend",
    metavar="NAME",
    help="vllm, tensorrt-llm, lmi-dist, transformers-neuronx (tnx), nxdi, huggingface.",
)
@click.option("--lmi-version", metavar="VERSION", help="0.30.0, v12 or an image tag.")
@click.option(
    "--set",
    "settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="An option (the option. prefix is optional); repeatable. VALUE may be auto.",
)
@click.option(
    "--env",
    "env_settings",
    multiple=True,
    metavar="NAME=VALUE",
    help="An extra environment variable (env and json outputs); repeatable.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["properties", "env", "json"]),
    default=None,
    help="Output format (default: the spec's, else properties).",
)
@click.option(
    "--objective",
    type=click.Choice(["throughput", "latency"]),
    default=None,
    help="What auto optimizes (default: throughput).",
)
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    default=None,
    help="Write to FILE atomically instead of stdout (- is stdout).",
)
@click.option(
    "--template-dir",
    type=click.Path(file_okay=False, exists=True),
    default=None,
    help="Your own templates (same names as templates/); rendered in jinja2's sandbox.",
)
@click.option("--force", is_flag=True, help="Write even with error-level findings (they are still printed).")
@click.option("--hub", is_flag=True, help="Look up models outside the catalog on the Hugging Face Hub.")
def render(
    spec_file: str | None,
    model: str | None,
    model_architecture: str | None,
    instance: str | None,
    backend: str | None,
    lmi_version: str | None,
    settings: tuple[str, ...],
    env_settings: tuple[str, ...],
    output_format: str | None,
    objective: str | None,
    output: str | None,
    template_dir: str | None,
    force: bool,
    hub: bool,
) -> None:
    """Render a validated serving.properties, env file or SageMaker Environment JSON.

    From a YAML spec (see `lmi-config schema`) and/or flags. tensor_parallel_degree, the
    batch size and the sequence length may be `auto`: the memory model picks the
    configuration that serves the most sequences per instance (--objective latency: the
    largest TP that fits), and writes it with the keys the container reads. The result is
    linted; with error-level findings nothing is written (exit 1) unless --force.
    Warnings go to stderr.

    \b
    Examples:
      lmi-config render samples/specs/llama-3.1-8b-inf2-xlarge.yaml
      lmi-config render spec.yaml --format json -o environment.json
      lmi-config render --model mistralai/Mistral-7B-Instruct-v0.2 --instance ml.inf2.8xlarge \\
          --set tensor_parallel_degree=auto --set max_rolling_batch_size=auto --set n_positions=4096
    """
    from pathlib import Path

    from lmi_config import api
    from lmi_config.spec import build_spec

    name = spec_file or "command line"
    try:
        spec, name = build_spec(
            spec_file,
            overrides={
                "model": model,
                "model_architecture": model_architecture,
                "instance": instance,
                "backend": backend,
                "lmi_version": lmi_version,
                "objective": objective,
            },
            settings=settings,
            env_settings=env_settings,
        )
        rendered = api.render(
            spec,
            name=name,
            output_format=output_format,
            template_dir=Path(template_dir) if template_dir else None,
            hub=hub,
        )
    except USAGE_ERRORS as error:
        _fail_input(str(error))
        return
    except PlanningError as error:
        click.echo(f"lmi-config: error: {name}: {error}", err=True)
        sys.exit(1)
    for note in rendered.notes:
        click.echo(f"note: {note}", err=True)
    for finding in rendered.findings:
        if finding.severity != "info" or finding.code == "LMI310":
            click.echo(f"{finding.code} {finding.severity} [{finding.rule}] {finding.message}", err=True)
    for problem in rendered.problems:
        click.echo(f"error: {problem}", err=True)
    blocked = bool(rendered.errors or rendered.problems)
    if blocked and not force:
        click.echo(
            "lmi-config: nothing written: the rendered configuration has errors (fix the spec, or --force)",
            err=True,
        )
        sys.exit(1)
    _emit(rendered.text, output, rendered.format)
    sys.exit(1 if blocked else 0)


@main.command(context_settings=CONTEXT_SETTINGS)
@click.argument("path")
@click.option(
    "--to", "target", type=click.Choice(["properties", "env", "json"]), required=True, help="Target format."
)
@click.option(
    "--env",
    "env_files",
    multiple=True,
    metavar="FILE",
    help="An env file the container sees together with PATH.",
)
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    default=None,
    help="Write to FILE atomically instead of stdout (- is stdout).",
)
def convert(path: str, target: str, env_files: tuple[str, ...], output: str | None) -> None:
    """Convert serving.properties, an env file or Environment JSON into another of them.

    Uses the container's mapping (option.x <-> OPTION_X, option.model_id <-> HF_MODEL_ID,
    engine <-> OPTION_ENGINE); the effective values are converted, after precedence. What
    the target cannot express is reported on stderr (exit 1), never dropped silently;
    credentials are never copied.

    \b
    Examples:
      lmi-config convert serving.properties --to env
      lmi-config convert model.env --to properties -o serving.properties
      lmi-config convert serving.properties --to json -o environment.json
    """
    from lmi_config import api

    try:
        stdin_bytes = sys.stdin.buffer.read() if path == "-" else None
        result = api.convert_path(path, target, env_files=list(env_files), stdin_bytes=stdin_bytes)
    except USAGE_ERRORS as error:
        _fail_input(str(error))
        return
    for problem in result.lost:
        click.echo(f"not converted: {problem}", err=True)
    _emit(result.text, output, target)
    sys.exit(1 if result.lost else 0)


@main.command(context_settings=CONTEXT_SETTINGS)
def schema() -> None:
    """Print the JSON Schema of the render spec (for editors).

    \b
    Example:
      lmi-config schema > lmi-config.schema.json
    """
    import json

    from lmi_config.spec import json_schema

    _emit(json.dumps(json_schema(), indent=2) + "\n")


@main.command(context_settings=CONTEXT_SETTINGS)
@click.option(
    "--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def models(output_format: str) -> None:
    """List the built-in model catalog (offline architectures the checks use).

    \b
    Examples:
      lmi-config models
      lmi-config models --format json
    """
    import json

    from lmi_config.report.listings import format_models, model_rows

    rows = model_rows()
    _emit(json.dumps(rows, indent=2) + "\n" if output_format == "json" else format_models(rows))


@main.command(context_settings=CONTEXT_SETTINGS)
@click.option(
    "--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def instances(output_format: str) -> None:
    """List the instance types the checks know (accelerators, memory per core or GPU, host RAM).

    \b
    Examples:
      lmi-config instances
      lmi-config instances --format json
    """
    import json

    from lmi_config.report.listings import format_instances, instance_rows

    rows = instance_rows()
    _emit(json.dumps(rows, indent=2) + "\n" if output_format == "json" else format_instances(rows))


@main.command(context_settings=CONTEXT_SETTINGS)
@click.argument("name", required=False)
@click.option(
    "--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def rules(name: str | None, output_format: str) -> None:
    """List the rules, or explain one (by code or slug).

    \b
    Examples:
      lmi-config rules
      lmi-config rules LMI101
      lmi-config rules memory-exceeds-budget --format json
    """
    from lmi_config.report.listings import format_rule, format_rule_list
    from lmi_config.rules import load_rules
    from lmi_config.rules.base import find_rule

    all_rules = load_rules()
    if name is None:
        _emit(format_rule_list(all_rules, output_format))
        return
    found = find_rule(name)
    if found is None:
        _fail_input(f"no rule {name!r}; run `lmi-config rules` for the list")
        return
    _emit(format_rule(found, output_format))


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
    type=click.IntRange(min=1),
    default=None,
    help="Only sequence lengths at least this long.",
)
@click.option(
    "--min-batch-size", type=click.IntRange(min=1), default=None, help="Only batches at least this large."
)
@click.option(
    "--objective",
    type=click.Choice(["throughput", "latency", "cost"]),
    default="throughput",
    show_default=True,
    help="throughput: most sequences at once (copies x batch); latency: largest TP; cost: cheapest per sequence-hour.",
)
@click.option(
    "--prices",
    type=click.Choice(["sagemaker", "ec2"]),
    default="sagemaker",
    show_default=True,
    help="Price list for --objective cost.",
)
@click.option(
    "--top",
    type=click.IntRange(min=0),
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
@click.option(
    "--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True
)
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
    topology and heads, host RAM). Exit status: 0 something fits, 1 nothing fits,
    2 unusable input.

    \b
    Examples:
      lmi-config plan --model mistralai/Mistral-7B-Instruct-v0.2 --instance ml.inf2.8xlarge --all
      lmi-config plan --model meta-llama/Llama-3.1-8B-Instruct --family inf2 --family trn1 --top 5
      lmi-config plan --model Qwen/Qwen2.5-7B-Instruct --objective cost --min-sequence-length 8192
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
            price_kind=prices,
            **request,
        )
        merged = api.plan_cache_config(result, cache_config, cache_format) if cache_config else None
    except USAGE_ERRORS as error:
        _fail_input(str(error))
        return
    except PlanningError as error:
        click.echo(f"lmi-config: error: {error}", err=True)
        sys.exit(1)
    _emit(format_plan_json(result) if output_format == "json" else format_plan_text(result))
    if emit_spec:
        try:
            Path(emit_spec).mkdir(parents=True, exist_ok=True)
        except OSError as error:
            _fail_input(f"cannot create {emit_spec}: {error.strerror or error}")
        for name, text in api.plan_specs(result, request["top"] or len(result.feasible)):
            _emit(text, str(Path(emit_spec) / name), "render spec")
    if merged is not None and cache_config:
        text, added, notes = merged
        for note in notes:
            click.echo(f"note: {note}", err=True)
        _emit(text, cache_config, f"{added} new entr{'ies' if added != 1 else 'y'}, {cache_format} format")


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
    help="seed: the seed's exact order; guided: skip what cannot fit, probe each boundary.",
)
@click.option(
    "--instance", metavar="TYPE", default=None, help="Instance type (default: detected by optimum-neuron)."
)
@click.option(
    "--cores",
    type=click.IntRange(min=1),
    default=None,
    help="NeuronCores available (default: detected, else the instance's).",
)
@click.option(
    "--cores-per-device",
    type=click.IntRange(min=1),
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
    type=click.IntRange(min=1),
    default=None,
    help="Seconds per export (default: the judge's compile estimate x its margin, at least 600).",
)
@click.option(
    "--load-timeout", type=click.IntRange(min=1), default=None, help="Seconds per load (default: 600)."
)
@click.option("--keep-artifacts", is_flag=True, help="Keep each trial's exported directory and logs.")
@click.option(
    "--require-free-gib",
    type=click.FloatRange(min=0),
    default=None,
    help="Free disk space to require before each export (default: 2 x the checkpoint).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="List the candidates in order with the memory model's prediction; run nothing.",
)
@click.option("--hub", is_flag=True, help="Look up models outside the catalog on the Hugging Face Hub.")
def search(python_command: str, require_free_gib: float | None, **options: Any) -> None:
    """Find the valid export configurations of a model on this Neuron machine.

    Runs the optimal-export-configuration workflow: each candidate TP, batch and
    sequence length is exported (optimum-cli export neuron) and loaded, each in its own
    process. Valid ones are saved after every success (optimum-neuron cache-config
    format); failures (with their class and last lines) and skips go to a journal
    beside the results. Run the same command again to resume: no trial is repeated.
    Ctrl-C ends the running trial's processes and stops (exit 130).

    \b
    Examples:
      lmi-config search --model meta-llama/Llama-3.1-8B-Instruct
      lmi-config search --model Qwen/Qwen2.5-7B-Instruct --dry-run --instance trn1.32xlarge
      lmi-config search --model ./my-model --strategy seed --output my-model.json
      LMI_CONFIG_EXPORTER="python fake_exporter.py" lmi-config search --model Qwen/Qwen2.5-0.5B --instance inf2.8xlarge
    """
    from lmi_config import api

    try:
        result = api.search(
            python=python_command,
            required_free_bytes=int(require_free_gib * 2**30) if require_free_gib is not None else None,
            report=lambda line: click.echo(line, err=True),
            **options,
        )
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


if __name__ == "__main__":  # pragma: no cover
    main()
