"""``lint`` and ``explain``: judge configurations that exist."""

from __future__ import annotations

import sys
from typing import Any

import click

from lmi_config.cli.common import (
    CONTEXT_SETTINGS,
    FiniteFloat,
    _emit,
    _fail_input,
    _lint_options,
    _stdin_bytes,
    count_range,
    format_option,
    main,
    target_options,
)
from lmi_config.errors import InputError, OutputError


@main.command(context_settings=CONTEXT_SETTINGS)
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "sarif", "github", "gitlab"]),
    default="text",
    show_default=True,
    help="text; json; sarif (code scanning); github (workflow annotations); gitlab (a Code Quality report).",
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
    "--fix", is_flag=True, help="Apply the safe fixes (each judged before it is applied), then lint."
)
@click.option(
    "--unsafe-fixes",
    is_flag=True,
    help="With --fix or --diff: also fixes that change what the container does.",
)
@click.option(
    "--diff",
    "show_diff",
    is_flag=True,
    help="Show the fixes as a unified diff; write nothing (exit 1 if any).",
)
@click.option(
    "--baseline",
    "baseline_file",
    metavar="FILE",
    help="Report only findings this baseline does not hold (see --write-baseline).",
)
@click.option(
    "--write-baseline",
    "write_baseline_file",
    metavar="FILE",
    help="Record every finding in FILE as accepted, then exit 0 (adopt lmi-config on a repository with history).",
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
    fix: bool,
    unsafe_fixes: bool,
    show_diff: bool,
    baseline_file: str | None,
    write_baseline_file: str | None,
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
      lmi-config lint . --write-baseline .lmi-config-baseline.json   # accept what is there today
      lmi-config lint . --baseline .lmi-config-baseline.json         # then report only new findings
      lmi-config lint deploy/ --diff                                 # what --fix would change
      lmi-config lint deploy/ --fix --unsafe-fixes                   # apply, typo renames included
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
    # a baseline is matched against every finding, before the text output's per-rule cap
    capped = output_format == "text" and not (baseline_file or write_baseline_file)
    options.max_findings = max_findings if capped else 0  # json lists every finding
    if fix and "-" in paths:
        _fail_input("--fix rewrites files and cannot rewrite standard input; name the file, or use --diff")
    fixed_short = False  # --fix stopped before its fixed point: the run fails, as the files are not done
    if fix or show_diff:
        fixed_short = not _apply_fixes(
            list(paths), options, list(env_files), unsafe=unsafe_fixes, write=not show_diff
        )
    stdin_bytes = _stdin_bytes() if "-" in paths else None
    try:
        result = api.lint_paths(
            list(paths), options, env_files=list(env_files), stdin_bytes=stdin_bytes, stdin_kind=stdin_kind
        )
        if write_baseline_file:
            count = api.write_baseline(result, write_baseline_file)
            click.echo(f"wrote {write_baseline_file}: {count} finding(s) recorded as accepted", err=True)
            sys.exit(2 if result.problems else 0)
        held = api.apply_baseline(result, baseline_file) if baseline_file else 0
    except (InputError, OutputError) as error:
        _fail_input(str(error))
        return
    if held:
        result.notes.append(f"{held} finding(s) held by the baseline {baseline_file} are not shown")
    if result.problems and not result.files:
        _fail_input("\n".join(result.problems))
    summary = report.summarize(result.findings, result.files, result.notes, result.problems, result.hidden)
    if output_format == "json":
        output = report.format_json(result.findings, summary)
    elif output_format == "sarif":
        output = report.format_sarif(result.findings, load_rules())
    elif output_format == "github":
        output = report.format_github(result.findings)
    elif output_format == "gitlab":
        output = report.format_gitlab(result.findings)
    else:
        use_color = sys.stdout.isatty() if color is None else color
        output = report.format_text(
            result.findings,
            summary,
            color=use_color,
            max_findings=max_findings,
            hidden=result.hidden,
            unjudged=result.unjudged,
        )
    _emit(output)
    if result.problems:  # the readable files were reported; the unreadable ones make the run unusable
        _fail_input("\n".join(result.problems))
    failing = result.errors + (result.warnings if strict else 0)
    sys.exit(1 if failing or fixed_short else 0)


def _apply_fixes(paths: list[str], options: Any, env_files: list[str], *, unsafe: bool, write: bool) -> bool:
    """--fix writes the fixed files and says what it fixed, and what is left and why; --diff prints
    the diff and exits. Returns whether --fix reached its fixed point."""
    import difflib

    from lmi_config import api

    try:
        outcome = api.fix_paths(paths, options, env_files=env_files, unsafe=unsafe, write=write)
    except (InputError, OutputError) as error:
        _fail_input(str(error))
        raise AssertionError from None  # _fail_input exits
    if not write:
        for path, (before, after) in sorted(outcome.changed.items()):
            diff = difflib.unified_diff(
                before.splitlines(keepends=True),
                after.splitlines(keepends=True),
                fromfile=f"a/{path}",
                tofile=f"b/{path}",
            )
            _emit("".join(diff))
        _stopped_short(outcome)
        sys.exit(1 if outcome.changed or not outcome.complete else 0)
    fixed = sum(outcome.applied.values())
    per_rule = ", ".join(f"{code} x{count}" for code, count in sorted(outcome.applied.items()))
    click.echo(
        f"fixed {fixed} finding(s) in {len(outcome.written)} file(s)" + (f" ({per_rule})" if fixed else ""),
        err=True,
    )
    _stopped_short(outcome)
    return outcome.complete


def _stopped_short(outcome: Any) -> None:
    """Say how much --fix left and why, when it stopped before its fixed point."""
    if outcome.complete:
        return
    left = []
    if outcome.left:
        left.append(f"{outcome.left} judged fix(es) not applied")
    if outcome.unjudged:
        left.append(f"{outcome.unjudged} finding(s) not yet judged")
    click.echo(
        f"lmi-config: --fix stopped before everything fixable was fixed: {' and '.join(left) or 'fixes left'}; "
        f"{outcome.stopped}" + ("." if outcome.final else ". Run it again to go on."),
        err=True,
    )


@main.command(context_settings=CONTEXT_SETTINGS)
@click.argument("path")
@target_options()
@format_option
@click.option(
    "--input-tokens",
    type=count_range(),
    default=None,
    help="Workload: input tokens per request (default 1024, as plan).",
)
@click.option(
    "--output-tokens",
    type=count_range(),
    default=None,
    help="Workload: output tokens per request (default 256, as plan).",
)
@click.option(
    "--concurrency",
    type=count_range(),
    default=None,
    help="Workload: requests in flight per model copy (default: every sequence slot busy).",
)
@click.option(
    "--request-rate",
    type=FiniteFloat(min=0, min_open=True),
    default=None,
    help="Workload: requests per second arriving at the instance, instead of --concurrency.",
)
def explain(
    path: str,
    env_files: tuple[str, ...],
    output_format: str,
    input_tokens: int | None,
    output_tokens: int | None,
    concurrency: int | None,
    request_rate: float | None,
    **target: Any,
) -> None:
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
      lmi-config explain serving.properties --instance g5.12xlarge --input-tokens 4096 --output-tokens 512
    """

    from lmi_config import api
    from lmi_config.report.explain import format_explain_text

    options = _lint_options(**target)
    try:
        stdin_bytes = _stdin_bytes() if path == "-" else None
        workload = {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "concurrency": concurrency,
            "request_rate": request_rate,
        }
        result = api.explain_paths(
            [path],
            options,
            env_files=list(env_files),
            stdin_bytes=stdin_bytes,
            workload={name: value for name, value in workload.items() if value is not None},
        )
    except InputError as error:
        _fail_input(str(error))
        return
    documents = result.documents
    if output_format == "json":
        from lmi_config.report.explain import format_explain_json

        _emit(format_explain_json(documents))
    else:
        _emit("\n".join(format_explain_text(document) for document in documents))
    sys.exit(1 if result.errors else 0)
