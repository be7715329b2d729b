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
      lmi-config lint serving.properties
      lmi-config lint deploy/ --format github
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

    options = LintOptions(backend=backend, lmi_version=lmi_version, instance=instance, model=model, hub=hub)
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
