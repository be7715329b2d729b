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


if __name__ == "__main__":  # pragma: no cover
    main()
