"""Command line: parse arguments, call the API, print. Nothing else.

Exit codes (a stable interface): 0 no error-level findings, 1 error-level findings (or warnings
with ``--strict``; nothing fits), 2 unusable input (files, specs, templates, settings, output).
"""

from __future__ import annotations

import errno
import sys
from collections.abc import Callable
from typing import Any

import click

from lmi_config import __version__
from lmi_config.errors import InputError, OutputError, PlanningError, SpecError, TemplateProblem

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
USAGE_ERRORS = (InputError, OutputError, SpecError, TemplateProblem)


def _fail_input(message: str) -> None:
    from lmi_config.report import visible

    for line in message.splitlines() or [""]:
        click.echo(f"lmi-config: error: {visible(line)}", err=True)
    sys.exit(2)


def _stdin_bytes() -> bytes:
    """Standard input, read with the same cap as any file (exit 2 beyond it)."""
    from lmi_config.io import read_stdin

    try:
        return read_stdin()
    except InputError as error:
        _fail_input(str(error))
        raise


class _GuardedGroup(click.Group):
    """Every command behind one guard: exhausted memory or recursion, a closed or full standard
    output become one line on stderr and exit code 2, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemoryError:
            _fail_input("ran out of memory; the input is too large or too deeply nested")
        except RecursionError:
            _fail_input("the input is nested too deeply to read")
        except OSError as error:
            if error.errno not in (errno.EPIPE, errno.ENOSPC, errno.EIO, errno.EBADF):
                raise
            from lmi_config.io import silence_stdout

            silence_stdout()
            _fail_input(f"cannot write the output: {error.strerror or error}")


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
    force_exclude: bool = False,
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
            force_exclude=force_exclude,
            **target,
        )
    except InputError as error:
        _fail_input(str(error))


@click.group(cls=_GuardedGroup, context_settings=CONTEXT_SETTINGS)
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
@click.option(
    "--force-exclude",
    is_flag=True,
    help="Apply the exclusions to files named on the command line too (for pre-commit).",
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
@click.option(
    "--max-findings",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    metavar="N",
    help="Text output: at most N findings of one rule per file, the rest counted (0: all).",
)
def lint(
    paths: tuple[str, ...],
    output_format: str,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    exclude: tuple[str, ...],
    force_exclude: bool,
    strict: bool,
    stdin_kind: str | None,
    settings_file: str | None,
    isolated: bool,
    color: bool | None,
    max_findings: int,
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
        force_exclude=force_exclude,
        settings_file=settings_file,
        isolated=isolated,
    )
    options.max_findings = max_findings if output_format == "text" else 0  # json lists every finding
    stdin_bytes = _stdin_bytes() if "-" in paths else None
    try:
        result = api.lint_paths(
            list(paths), options, env_files=list(env_files), stdin_bytes=stdin_bytes, stdin_kind=stdin_kind
        )
    except InputError as error:
        _fail_input(str(error))
        return
    if result.problems and not result.files:
        _fail_input("\n".join(result.problems))
    summary = report.summarize(result.findings, result.files, result.notes, result.problems, result.hidden)
    if output_format == "json":
        output = report.format_json(result.findings, summary)
    elif output_format == "sarif":
        output = report.format_sarif(result.findings, load_rules())
    elif output_format == "github":
        output = report.format_github(result.findings)
    else:
        use_color = sys.stdout.isatty() if color is None else color
        output = report.format_text(
            result.findings, summary, color=use_color, max_findings=max_findings, hidden=result.hidden
        )
    _emit(output)
    if result.problems:  # the readable files were reported; the unreadable ones make the run unusable
        _fail_input("\n".join(result.problems))
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
        stdin_bytes = _stdin_bytes() if path == "-" else None
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
        stdin_bytes = _stdin_bytes() if path == "-" else None
        result = api.convert_path(path, target, env_files=list(env_files), stdin_bytes=stdin_bytes)
    except USAGE_ERRORS as error:
        _fail_input(str(error))
        return
    from lmi_config.report import visible

    for problem in result.lost:
        click.echo(f"not converted: {visible(problem)}", err=True)
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


# deploy and images (issue 12). Exit codes of deploy: 0 deployed (or a dry run printed),
# 1 the rendered configuration has errors or the plan was declined (nothing called),
# 2 unusable input or refused before any AWS call (limits, image, sizing),
# 3 AWS refused or the endpoint failed (what the run created is removed unless --keep-on-failure).
DEPLOY_FAILED = 3


def _key_values(values: tuple[str, ...], flag: str) -> tuple[tuple[str, str], ...]:
    pairs = []
    for item in values:
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            _fail_input(f"{flag} {item!r}: write KEY=VALUE")
        pairs.append((key.strip(), value))
    return tuple(pairs)


def _autoscale_range(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    low, colon, high = text.partition(":")
    if not colon or not low.strip().isdigit() or not high.strip().isdigit():
        _fail_input(f"--autoscale {text!r}: write MIN:MAX, e.g. 1:4")
    return int(low), int(high)


class _ProgressPrinter:
    """Progress on stderr; on a terminal, the waiting line is rewritten in place."""

    def __init__(self) -> None:
        self.terminal = sys.stderr.isatty()
        self.open_line = False

    def __call__(self, message: str, transient: bool) -> None:
        if transient and self.terminal:
            click.echo("\r\033[K" + message, nl=False, err=True)
            self.open_line = True
            return
        if self.open_line:
            click.echo("", err=True)
            self.open_line = False
        click.echo(message, err=True)


def _deploy_delete(name: str, region: str | None, endpoint_url: str | None, purge_s3: bool) -> None:
    from lmi_config import api
    from lmi_config.errors import DeployError

    try:
        removal = api.delete_endpoint(
            name, region=region, endpoint_url=endpoint_url, purge_s3=purge_s3, progress=_ProgressPrinter()
        )
    except SpecError as error:
        _fail_input(str(error))
        return
    except DeployError as error:
        click.echo(f"lmi-config: deploy --delete {name}: {error}", err=True)
        sys.exit(DEPLOY_FAILED)
    click.echo(f"removed: {', '.join(f'{kind} {item}' for kind, item in removal.removed) or 'nothing'}")
    for kind, item, why in removal.failed:
        click.echo(f"NOT removed: {kind} {item}: {why}")
    sys.exit(DEPLOY_FAILED if removal.failed else 0)


@main.command(context_settings=CONTEXT_SETTINGS)
@click.argument("spec_file", required=False, metavar="SPEC.yaml")
@click.option("--model", metavar="ID", help="Model (Hub id or s3:// prefix); overrides the spec's.")
@click.option("--model-architecture", metavar="ID", help="Catalog id or directory with config.json.")
@click.option("--instance", metavar="TYPE", help="Instance type, e.g. ml.inf2.24xlarge.")
@click.option(
    "--backend", metavar="NAME", help="vllm, tensorrt-llm, lmi-dist, transformers-neuronx, nxdi, huggingface."
)
@click.option("--lmi-version", metavar="VERSION", help="0.30.0, v12 or an image tag (picks the image).")
@click.option(
    "--set", "settings", multiple=True, metavar="KEY=VALUE", help="An option, as in render; repeatable."
)
@click.option(
    "--env", "env_settings", multiple=True, metavar="NAME=VALUE", help="A container variable; repeatable."
)
@click.option(
    "--objective", type=click.Choice(["throughput", "latency"]), default=None, help="What auto optimizes."
)
@click.option("--hub", is_flag=True, help="Look up models outside the catalog on the Hugging Face Hub.")
@click.option("--region", metavar="REGION", help="AWS region (default: AWS_REGION / AWS_DEFAULT_REGION).")
@click.option(
    "--role",
    metavar="ARN",
    help="Execution role (default inside SageMaker notebooks: found with lmi-config[sagemaker]).",
)
@click.option("--endpoint-name", metavar="NAME", help="Endpoint name (default: from the model and instance).")
@click.option(
    "--s3-prefix", metavar="S3URI", help="s3://BUCKET/PREFIX for serving.properties and --file uploads."
)
@click.option(
    "--delivery",
    type=click.Choice(["auto", "environment", "s3"]),
    default="auto",
    show_default=True,
    help="Configuration as the container Environment, or serving.properties in S3 (auto: Environment when it fits).",
)
@click.option(
    "--file",
    "files",
    multiple=True,
    metavar="FILE",
    help="model.py, requirements.txt … uploaded beside serving.properties.",
)
@click.option(
    "--secret-env",
    multiple=True,
    metavar="NAME",
    help="Copy NAME (e.g. HF_TOKEN) from this shell into the container; never printed.",
)
@click.option("--instance-count", type=click.IntRange(1), default=1, show_default=True)
@click.option(
    "--tag",
    "tags",
    multiple=True,
    metavar="KEY=VALUE",
    help="A tag on the model, config and endpoint; repeatable.",
)
@click.option(
    "--autoscale",
    metavar="MIN:MAX",
    help="Register the variant with Application Auto Scaling (target tracking).",
)
@click.option(
    "--autoscale-target",
    type=click.FloatRange(min=0.01),
    default=None,
    help="Invocations per instance per minute.",
)
@click.option(
    "--image",
    metavar="URI",
    help="Use this image instead of the table's (checked against instance and backend).",
)
@click.option(
    "--health-check-timeout",
    type=int,
    default=None,
    metavar="SECONDS",
    help="Default: from the loading estimate.",
)
@click.option(
    "--volume-size",
    type=int,
    default=None,
    metavar="GB",
    help="Default: from the weights, where the family allows it.",
)
@click.option(
    "--inference-ami",
    metavar="VERSION",
    help="InferenceAmiVersion, e.g. al2-ami-sagemaker-inference-neuron-2.",
)
@click.option(
    "--update", is_flag=True, help="Roll an existing endpoint to this configuration (update_endpoint)."
)
@click.option(
    "--endpoint-url", metavar="URL", help="Send every AWS call to this URL (private endpoints, moto_server)."
)
@click.option("--wait/--no-wait", default=True, show_default=True, help="Wait until InService (or failed).")
@click.option(
    "--wait-timeout",
    type=click.IntRange(1),
    default=None,
    metavar="SECONDS",
    help="Default: provisioning + health check.",
)
@click.option(
    "--poll-seconds", type=click.FloatRange(min=0.01), default=None, metavar="SECONDS", help="Default: 30."
)
@click.option("--keep-on-failure", is_flag=True, help="Leave what a failed run created (to inspect it).")
@click.option("-y", "--yes", is_flag=True, help="Proceed without asking (CI).")
@click.option("--dry-run", is_flag=True, help="Print the plan; call nothing.")
@click.option(
    "--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "--delete", "delete_name", metavar="NAME", help="Remove endpoint NAME with its config and model."
)
@click.option(
    "--purge-s3", is_flag=True, help="With --delete: also remove the objects under the model's S3 prefix."
)
def deploy(spec_file: str | None, **flags: Any) -> None:
    """Create a SageMaker endpoint for a validated configuration (boto3).

    Renders the spec exactly as `render` does (refusing error findings), picks the
    LMI image for the backend, instance and region (refusing a mismatch), sizes the
    start-up health check from the loading estimate and the volume from the weights
    (only where the instance family accepts one), checks every SageMaker limit, prints
    every API call with its parameters (secrets masked) and asks before calling. The
    configuration goes in the container Environment, or as serving.properties
    uploaded uncompressed to --s3-prefix. On failure it prints SageMaker's reason and
    the endpoint's last CloudWatch log lines, and removes what the run created.

    Exit status: 0 deployed (or dry run), 1 configuration errors or declined,
    2 refused before any AWS call, 3 AWS refused or the endpoint failed.

    \b
    Example:
      lmi-config deploy samples/specs/llama-3.1-8b-inf2-24xlarge.yaml --dry-run \
          --region us-east-1 --role arn:aws:iam::123456789012:role/SageMakerRole
      lmi-config deploy samples/specs/qwen2.5-7b-vllm-g5-12xlarge.yaml --yes \
          --region us-east-1 --role arn:aws:iam::123456789012:role/SageMakerRole \
          --endpoint-name qwen-chat --secret-env HF_TOKEN --tag team=search --autoscale 1:4
      lmi-config deploy spec.yaml --s3-prefix s3://my-bucket/lmi --file model.py --yes --role ...
      lmi-config deploy --delete qwen-chat --region us-east-1 --purge-s3
    """
    import json

    from lmi_config import api
    from lmi_config.deploy import DeployRequest, SizingOverrides
    from lmi_config.deploy.report import format_outcome, format_plan, outcome_document
    from lmi_config.errors import DeployError
    from lmi_config.spec import build_spec

    if flags["delete_name"]:
        _deploy_delete(flags["delete_name"], flags["region"], flags["endpoint_url"], flags["purge_s3"])
        return
    dry_run, json_output = flags["dry_run"], flags["output_format"] == "json"
    request = DeployRequest(
        region=flags["region"],
        role=flags["role"],
        endpoint_name=flags["endpoint_name"],
        s3_prefix=flags["s3_prefix"],
        instance_count=flags["instance_count"],
        delivery=flags["delivery"],
        files=tuple(flags["files"]),
        secret_env=tuple(flags["secret_env"]),
        tags=_key_values(flags["tags"], "--tag"),
        autoscale=_autoscale_range(flags["autoscale"]),
        autoscale_target=flags["autoscale_target"],
        image=flags["image"],
        sizing=SizingOverrides(flags["health_check_timeout"], flags["volume_size"], flags["inference_ami"]),
        update=flags["update"],
        endpoint_url=flags["endpoint_url"],
        wait=flags["wait"],
        wait_timeout_seconds=flags["wait_timeout"],
        poll_seconds=flags["poll_seconds"],
        keep_on_failure=flags["keep_on_failure"],
    )

    def show(plan: Any) -> None:
        if json_output and dry_run:
            _emit(plan.as_json())
        else:
            click.echo(format_plan(plan, dry_run=dry_run), nl=False, err=json_output)

    def confirm(plan: Any) -> bool:
        if flags["yes"]:
            return True
        if not sys.stdin.isatty():
            click.echo("lmi-config: not a terminal, so nothing was called: pass --yes to proceed", err=True)
            return False
        return click.confirm(f"Create these resources in {plan.region}?", default=False, err=True)

    name = spec_file or "command line"
    overrides = {
        key: flags[key]
        for key in ("model", "model_architecture", "instance", "backend", "lmi_version", "objective")
    }
    try:
        spec, name = build_spec(
            spec_file, overrides=overrides, settings=flags["settings"], env_settings=flags["env_settings"]
        )
        result = api.deploy(
            spec,
            request,
            name=name,
            hub=flags["hub"],
            dry_run=dry_run,
            show=show,
            confirm=confirm,
            progress=_ProgressPrinter(),
        )
    except USAGE_ERRORS as error:
        _fail_input(str(error))
        return
    except PlanningError as error:
        click.echo(f"lmi-config: error: {name}: {error}", err=True)
        sys.exit(1)
    except DeployError as error:
        click.echo(f"lmi-config: deploy: {error}", err=True)
        sys.exit(DEPLOY_FAILED)
    for finding in result.plan.rendered.findings:
        if finding.severity != "info":
            click.echo(f"{finding.code} {finding.severity} [{finding.rule}] {finding.message}", err=True)
    if result.refused:
        for problem in result.plan.rendered.problems:
            click.echo(f"error: {problem}", err=True)
        click.echo(
            "lmi-config: nothing deployed: the rendered configuration has errors (fix the spec)", err=True
        )
        sys.exit(1)
    if result.declined:
        sys.exit(1)
    outcome = result.outcome
    if outcome is None:
        sys.exit(0)
    if json_output:
        _emit(
            json.dumps(
                {"plan": result.plan.public(), "outcome": outcome_document(outcome)}, indent=2, default=str
            )
            + "\n"
        )
    else:
        _emit(format_outcome(outcome, result.plan))
    sys.exit(0 if outcome.succeeded else DEPLOY_FAILED)


@main.command(context_settings=CONTEXT_SETTINGS)
@click.option("--framework", metavar="NAME", help="Only this family: djl-lmi, djl-neuronx, djl-tensorrtllm …")
@click.option(
    "--region",
    metavar="REGION",
    help="Show the image URI in this region (or that it is not published there).",
)
@click.option(
    "--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "--refresh",
    is_flag=True,
    help="Read tags and regions from the installed SageMaker SDK into a local override.",
)
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    default=None,
    help="With --refresh: where (default ~/.config/lmi-config/images.json).",
)
def images(
    framework: str | None, region: str | None, output_format: str, refresh: bool, output: str | None
) -> None:
    """List the LMI container images deploy chooses from (tags, backends, regions).

    The table ships with lmi-config (generated from the SageMaker SDK's own image data
    and djl-serving's release notes). --refresh reads the installed SDK (pip install
    'lmi-config[sagemaker]') and writes a local override file, never the package;
    LMI_CONFIG_IMAGES_FILE points at another one.

    \b
    Examples:
      lmi-config images
      lmi-config images --framework djl-neuronx --region ap-northeast-2
      lmi-config images --format json
      lmi-config images --refresh
    """
    import json

    from lmi_config import api
    from lmi_config.deploy.report import format_images
    from lmi_config.errors import DeployError

    try:
        if refresh:
            path, summary = api.refresh_images(output)
            click.echo(
                f"wrote {path} from {summary['package']}: {summary['versions']}, {summary['regions']} regions"
            )
            return
        rows = api.images(framework=framework, region=region)
    except (InputError, OutputError) as error:
        _fail_input(str(error))
        return
    except DeployError as error:
        _fail_input(str(error))
        return
    _emit(
        json.dumps(rows, indent=2) + "\n" if output_format == "json" else format_images(rows, region=region)
    )


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
