"""``render``, ``convert`` and ``schema``: write configurations."""

from __future__ import annotations

import sys
from typing import Any

import click

from lmi_config.cli.common import (
    CONTEXT_SETTINGS,
    USAGE_ERRORS,
    _emit,
    _fail_input,
    _stdin_bytes,
    main,
    output_option,
    spec_from_flags,
    spec_options,
)
from lmi_config.errors import PlanningError


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
@spec_options
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
@output_option
@click.option(
    "--template-dir",
    type=click.Path(file_okay=False, exists=True),
    default=None,
    help="Your own templates (same names as templates/); rendered in jinja2's sandbox, bounded in loops, "
    "sizes, time and memory.",
)
@click.option("--force", is_flag=True, help="Write even with error-level findings (they are still printed).")
def render(
    spec_file: str | None,
    output_format: str | None,
    output: str | None,
    template_dir: str | None,
    force: bool,
    hub: bool,
    **spec_flags: Any,
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

    name = spec_file or "command line"
    try:
        spec, name = spec_from_flags(spec_file, spec_flags)
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
    from lmi_config.report import visible  # masks credentials, escapes control characters

    for note in rendered.notes:
        click.echo(f"note: {visible(note)}", err=True)
    for finding in rendered.findings:
        if finding.severity != "info" or finding.code == "LMI310":
            click.echo(
                f"{finding.code} {finding.severity} [{finding.rule}] {visible(finding.message)}", err=True
            )
    for problem in rendered.problems:
        click.echo(f"error: {visible(problem)}", err=True)
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
@output_option
def convert(path: str, target: str, env_files: tuple[str, ...], output: str | None) -> None:
    """Convert serving.properties, an env file or Environment JSON into another of them.

    Uses the container's mapping (option.x <-> OPTION_X, option.model_id <-> HF_MODEL_ID,
    engine <-> OPTION_ENGINE); the effective values are converted, after precedence. What
    the target cannot express is reported on stderr (exit 1), never dropped silently;
    a value the target's readers would read differently is refused (exit 2). Credentials
    are copied into a file named with -o, never to standard output.

    \b
    Examples:
      lmi-config convert serving.properties --to env
      lmi-config convert model.env --to properties -o serving.properties
      lmi-config convert serving.properties --to json -o environment.json
    """
    from lmi_config import api

    try:
        stdin_bytes = _stdin_bytes() if path == "-" else None
        result = api.convert_path(
            path,
            target,
            env_files=list(env_files),
            stdin_bytes=stdin_bytes,
            keep_credentials=output not in (None, "-"),
        )
    except USAGE_ERRORS as error:
        _fail_input(str(error))
        return
    from lmi_config.report import visible

    for problem in result.lost:
        click.echo(f"not converted: {visible(problem)}", err=True)
    _emit(result.text, output, target)
    if result.credentials:
        click.echo(
            f"note: {output} holds the credentials of the input ({', '.join(result.credentials)}; values not "
            "shown): keep it out of version control and logs",
            err=True,
        )
    sys.exit(1 if result.lost else 0)


@main.command(context_settings=CONTEXT_SETTINGS)
def schema() -> None:
    """Print the JSON Schema of the render spec (for editors).

    \b
    Example:
      lmi-config schema > lmi-config.schema.json
    """
    from lmi_config.spec import json_schema
    from lmi_config.strict_json import dump_json

    _emit(dump_json(json_schema()))
