"""Command line: parse arguments, call the API, print. Nothing else."""

from __future__ import annotations

import sys

import click

from lmi_config import __version__
from lmi_config.configfile.loader import InputError

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _fail_input(message: str) -> None:
    click.echo(f"lmi-config: error: {message}", err=True)
    sys.exit(2)


def _split(values: tuple[str, ...]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


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
    "--env",
    "env_files",
    multiple=True,
    metavar="FILE",
    help="An env file the container sees together with each PATH.",
)
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
@click.option("--strict", is_flag=True, help="Exit 1 on warnings too.")
@click.option(
    "--backend",
    metavar="NAME",
    help="vllm, lmi-dist, tensorrt-llm, transformers-neuronx (tnx), nxdi, huggingface … (default: inferred).",
)
@click.option(
    "--lmi-version",
    metavar="VERSION",
    help="0.30.0, v12 or an image tag (default: inferred from the file or the backend).",
)
@click.option(
    "--instance",
    metavar="TYPE",
    help="Instance type, e.g. ml.inf2.24xlarge: enables parallelism and memory checks.",
)
@click.option(
    "--model", metavar="ID", help="Model id or local directory with config.json (default: option.model_id)."
)
@click.option(
    "--hub",
    is_flag=True,
    help="Look up models outside the built-in catalog on the Hugging Face Hub (needs lmi-config[hub]).",
)
@click.option(
    "--lnc",
    type=click.IntRange(1, 2),
    default=None,
    help="Trainium2 logical NeuronCore setting (default: NEURON_LOGICAL_NC_CONFIG from an env file, else 2).",
)
@click.option(
    "--stdin-kind",
    type=click.Choice(["properties", "env", "json"]),
    default=None,
    help="How to read `-` (default: guessed).",
)
@click.option(
    "--color/--no-color", default=None, help="Colour the text output (default: when writing to a terminal)."
)
def lint(
    paths: tuple[str, ...],
    env_files: tuple[str, ...],
    output_format: str,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    strict: bool,
    backend: str | None,
    lmi_version: str | None,
    instance: str | None,
    model: str | None,
    hub: bool,
    lnc: int | None,
    stdin_kind: str | None,
    color: bool | None,
) -> None:
    """Lint serving.properties files, env files, Environment JSON and directories.

    A directory is searched for serving.properties, *.properties, .env and *.env;
    serving.properties and the env files beside it are checked as the pair the
    container reads. `-` reads standard input.

    Exit status: 0 no errors (warnings allowed), 1 errors (or warnings with --strict),
    2 unusable input.

    \b
    Examples:
      lmi-config lint serving.properties
      lmi-config lint model/ --instance ml.inf2.8xlarge
      lmi-config lint serving.properties --env sagemaker.env --format json
      cat serving.properties | lmi-config lint - --backend tnx --lmi-version 0.30.0
      lmi-config lint . --ignore LMI005,trailing-whitespace --strict
    """
    from lmi_config import api, report
    from lmi_config.lint import LintOptions, normalize_rule_names
    from lmi_config.rules import load_rules

    options = LintOptions(
        backend=backend,
        lmi_version=lmi_version,
        instance=instance,
        model=model,
        select=_split(select),
        ignore=_split(ignore),
        hub=hub,
        lnc=lnc,
    )
    load_rules()
    try:
        normalize_rule_names(options.select + options.ignore)
    except ValueError as error:
        _fail_input(str(error))
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
    click.echo(output, nl=False)
    failing = result.errors + (result.warnings if strict else 0)
    sys.exit(1 if failing else 0)


@main.command(context_settings=CONTEXT_SETTINGS)
@click.argument("path")
@click.option(
    "--env",
    "env_files",
    multiple=True,
    metavar="FILE",
    help="An env file the container sees together with PATH.",
)
@click.option(
    "--instance", metavar="TYPE", help="Instance type, e.g. ml.inf2.24xlarge: adds the memory table."
)
@click.option(
    "--model", metavar="ID", help="Model id or local directory with config.json (default: option.model_id)."
)
@click.option("--backend", metavar="NAME", help="Backend (default: inferred).")
@click.option("--lmi-version", metavar="VERSION", help="LMI version or image tag (default: inferred).")
@click.option("--hub", is_flag=True, help="Look up models outside the catalog on the Hugging Face Hub.")
@click.option("--lnc", type=click.IntRange(1, 2), default=None, help="Trainium2 logical NeuronCore setting.")
@click.option(
    "--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def explain(
    path: str,
    env_files: tuple[str, ...],
    instance: str | None,
    model: str | None,
    backend: str | None,
    lmi_version: str | None,
    hub: bool,
    lnc: int | None,
    output_format: str,
) -> None:
    """Show how the container reads a configuration and what it needs per core or GPU.

    Prints the effective configuration (value, default or not, where each key came
    from), the shape the container builds (TP, batch, sequence length, with the source
    of each), and with --instance the memory per NeuronCore or GPU, item by item,
    against the budget, the verdict, and the nearest configurations that fit.

    \b
    Examples:
      lmi-config explain serving.properties --instance ml.inf2.8xlarge
      lmi-config explain model/ --instance trn1.32xlarge --model meta-llama/Llama-3.1-70B-Instruct
      lmi-config explain serving.properties --instance g5.12xlarge --format json
    """
    import json

    from lmi_config import api
    from lmi_config.explain import explain_unit, format_explain_text
    from lmi_config.lint import LintOptions

    options = LintOptions(
        backend=backend, lmi_version=lmi_version, instance=instance, model=model, hub=hub, lnc=lnc
    )
    try:
        stdin_bytes = sys.stdin.buffer.read() if path == "-" else None
        result = api.lint_paths([path], options, env_files=list(env_files), stdin_bytes=stdin_bytes)
    except InputError as error:
        _fail_input(str(error))
        return
    documents = []
    for unit in result.units:
        findings = [
            finding for finding in result.findings if finding.path in {source.path for source in unit.sources}
        ]
        documents.append(explain_unit(unit, findings))
    if output_format == "json":
        click.echo(json.dumps(documents if len(documents) > 1 else documents[0], indent=2))
    else:
        click.echo("\n".join(format_explain_text(document) for document in documents), nl=False)
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
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write to FILE atomically instead of stdout.",
)
@click.option(
    "--template-dir",
    type=click.Path(file_okay=False, exists=True),
    default=None,
    help="Your own templates (same names as templates/).",
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
    largest TP that fits). The result is linted; with error-level findings nothing is
    written (exit 1) unless --force. Warnings go to stderr.

    \b
    Examples:
      lmi-config render samples/specs/llama-3.1-8b-inf2-xlarge.yaml
      lmi-config render spec.yaml --format json -o environment.json
      lmi-config render --model mistralai/Mistral-7B-Instruct-v0.2 --instance ml.inf2.8xlarge \\
          --set tensor_parallel_degree=auto --set max_rolling_batch_size=auto --set n_positions=4096
    """
    from pathlib import Path

    from lmi_config.planner import PlanningError
    from lmi_config.render import render_spec, write_atomically
    from lmi_config.spec import SpecError, load_spec, validate_spec

    try:
        if spec_file:
            spec = load_spec(Path(spec_file))
            name = spec_file
        elif model:
            spec = validate_spec({"model": model}, "command line")
            name = "command line"
        else:
            _fail_input("give a SPEC.yaml or at least --model (see `lmi-config render --help`)")
            return
        updates: dict[str, object] = {}
        for flag, value in (
            ("model", model),
            ("model_architecture", model_architecture),
            ("instance", instance),
            ("backend", backend),
            ("lmi_version", lmi_version),
            ("objective", objective),
        ):
            if value is not None:
                updates[flag] = value
        options = dict(spec.options)
        for item in settings:
            key, equals, value = item.partition("=")
            if not equals or not key.strip():
                _fail_input(f"--set {item!r}: write KEY=VALUE")
            options[key.strip()] = value
        env = dict(spec.env)
        for item in env_settings:
            key, equals, value = item.partition("=")
            if not equals or not key.strip():
                _fail_input(f"--env {item!r}: write NAME=VALUE")
            env[key.strip()] = value
        merged = spec.model_dump()
        merged.update(updates)
        merged["options"] = options
        merged["env"] = env
        spec = validate_spec(merged, name)
        rendered = render_spec(
            spec,
            name=name,
            output_format=output_format,
            template_dir=Path(template_dir) if template_dir else None,
            hub=hub,
        )
    except SpecError as error:
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
    if output:
        write_atomically(Path(output), rendered.text)
        click.echo(f"wrote {output} ({rendered.format})", err=True)
    else:
        click.echo(rendered.text, nl=False)
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
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write to FILE atomically instead of stdout.",
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
    from pathlib import Path

    from lmi_config import api
    from lmi_config.lint import LintOptions
    from lmi_config.render import convert_items, effective_settings, format_output, write_atomically

    try:
        stdin_bytes = sys.stdin.buffer.read() if path == "-" else None
        result = api.lint_paths([path], LintOptions(), env_files=list(env_files), stdin_bytes=stdin_bytes)
    except InputError as error:
        _fail_input(str(error))
        return
    unit = result.units[0]
    effective, process_env = effective_settings(unit)
    items, extra_env, lost = convert_items(effective, process_env, target)
    text, problems = format_output(
        items, target, header=[f"converted by lmi-config {__version__} from {path}"], extra_env=extra_env
    )
    lost.extend(problems)
    for problem in lost:
        click.echo(f"not converted: {problem}", err=True)
    if output:
        write_atomically(Path(output), text)
        click.echo(f"wrote {output} ({target})", err=True)
    else:
        click.echo(text, nl=False)
    sys.exit(1 if lost else 0)


@main.command(context_settings=CONTEXT_SETTINGS)
def schema() -> None:
    """Print the JSON Schema of the render spec (for editors).

    \b
    Example:
      lmi-config schema > lmi-config.schema.json
    """
    import json

    from lmi_config.spec import json_schema

    click.echo(json.dumps(json_schema(), indent=2))


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

    from lmi_config.knowledge import load_data
    from lmi_config.modelarch import from_catalog

    rows = []
    for row in load_data("models.json")["models"]:
        arch = from_catalog(row["model_id"])
        if arch is None:
            continue
        rows.append(
            {
                "model_id": arch.model_id,
                "aliases": row.get("aliases", []),
                "parameters": arch.total_params,
                "heads": arch.num_attention_heads,
                "kv_heads": arch.num_key_value_heads,
                "layers": arch.num_layers,
                "max_position_embeddings": arch.max_position_embeddings,
                "experts": arch.num_experts,
                "source": row["source"],
            }
        )
    if output_format == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(f"{'model':<48} {'params':>8} {'heads':>5} {'kv':>3} {'layers':>6} {'max len':>8}")
    for item in rows:
        experts = f"  ({item['experts']} experts)" if item["experts"] else ""
        click.echo(
            f"{item['model_id']:<48} {item['parameters'] / 1e9:>7.2f}B {item['heads']:>5} {item['kv_heads']:>3} "
            f"{item['layers']:>6} {item['max_position_embeddings'] or '-':>8}{experts}"
        )


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

    from lmi_config.knowledge.instances import instances as all_instances

    rows = []
    for item in all_instances().values():
        rows.append(
            {
                "instance_type": item.instance_type,
                "accelerator": item.accelerator,
                "accelerator_name": item.accelerator_name,
                "cores_or_gpus": item.num_cores,
                "memory_per_core_gib": round(item.memory_per_core_bytes / 2**30, 2) if item.num_cores else 0,
                "host_memory_gib": item.host_memory_gib,
                "source": item.source,
            }
        )
    if output_format == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(f"{'instance':<18} {'accelerator':<22} {'cores/GPUs':>10} {'GiB each':>9} {'host GiB':>9}")
    for row in rows:
        click.echo(
            f"{row['instance_type']:<18} {str(row['accelerator_name']) + ' (' + str(row['accelerator']) + ')':<22} "
            f"{row['cores_or_gpus']:>10} {row['memory_per_core_gib']:>9} {row['host_memory_gib'] or '-':>9}"
        )


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
    import json

    from lmi_config.rules import load_rules
    from lmi_config.rules.base import find_rule

    all_rules = load_rules()
    if name is None:
        if output_format == "json":
            click.echo(json.dumps([_rule_dict(item) for item in all_rules], indent=2))
            return
        for item in all_rules:
            click.echo(f"{item.code}  {item.slug:<28} {item.severity:<8} {item.summary}")
        return
    found = find_rule(name)
    if found is None:
        _fail_input(f"no rule {name!r}; run `lmi-config rules` for the list")
        return
    if output_format == "json":
        click.echo(json.dumps(_rule_dict(found), indent=2))
        return
    click.echo(f"{found.code} {found.slug} ({found.severity})\n")
    click.echo(f"What it does\n  {found.summary}\n")
    click.echo(f"Why it matters\n  {found.why}\n")
    click.echo(f"Example ({found.bad.kind}, reported){_args_text(found.bad.args)}")
    click.echo(_indent(found.bad.text))
    if found.bad.paired_env:
        click.echo("  with the env file\n" + _indent(found.bad.paired_env))
    click.echo(f"Use instead{_args_text(found.good.args)}")
    click.echo(_indent(found.good.text))
    if found.good.paired_env:
        click.echo("  with the env file\n" + _indent(found.good.paired_env))
    click.echo(f"Source\n  {found.source}")


def _rule_dict(item: object) -> dict[str, object]:
    from lmi_config.rules.base import Rule

    assert isinstance(item, Rule)
    return {
        "code": item.code,
        "rule": item.slug,
        "severity": item.severity,
        "summary": item.summary,
        "why": item.why,
        "bad": {
            "text": item.bad.text,
            "kind": item.bad.kind,
            "args": item.bad.args,
            "paired_env": item.bad.paired_env,
        },
        "good": {
            "text": item.good.text,
            "kind": item.good.kind,
            "args": item.good.args,
            "paired_env": item.good.paired_env,
        },
        "source": item.source,
    }


def _args_text(args: dict[str, str]) -> str:
    if not args:
        return ""
    return " with " + " ".join(f"--{key.replace('_', '-')} {value}" for key, value in args.items())


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.rstrip("\n").splitlines()) + "\n"


if __name__ == "__main__":  # pragma: no cover
    main()
