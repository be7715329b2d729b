"""``models``, ``instances`` and ``rules``: what lmi-config knows."""

from __future__ import annotations

from typing import Any

import click

from lmi_config.cli.common import (
    CONTEXT_SETTINGS,
    _emit,
    _fail_input,
    format_option,
    main,
)


@main.command(context_settings=CONTEXT_SETTINGS)
@format_option
def models(output_format: str) -> None:
    """List the built-in model catalog (offline architectures the checks use).

    \b
    Examples:
      lmi-config models
      lmi-config models --format json
    """
    from lmi_config.report.listings import format_models, model_rows
    from lmi_config.strict_json import dump_json

    rows = model_rows()
    _emit(dump_json(rows) if output_format == "json" else format_models(rows))


@main.command(context_settings=CONTEXT_SETTINGS)
@format_option
def instances(output_format: str) -> None:
    """List the instance types the checks know (accelerators, memory per core or GPU, host RAM).

    \b
    Examples:
      lmi-config instances
      lmi-config instances --format json
    """
    from lmi_config.report.listings import format_instances, instance_rows
    from lmi_config.strict_json import dump_json

    rows = instance_rows()
    _emit(dump_json(rows) if output_format == "json" else format_instances(rows))


@main.command(context_settings=CONTEXT_SETTINGS)
@click.argument("name", required=False)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
)
@click.option(
    "--output-dir",
    metavar="DIR",
    help="With --format markdown: write one page per rule and an index (README.md) into DIR.",
)
def rules(name: str | None, output_format: str, output_dir: str | None) -> None:
    """List the rules, or explain one (by code or slug).

    \b
    Examples:
      lmi-config rules
      lmi-config rules LMI101
      lmi-config rules memory-exceeds-budget --format json
      lmi-config rules --format markdown --output-dir docs/rules   # the rule pages SARIF links to
    """
    from lmi_config.report.listings import format_rule, format_rule_list
    from lmi_config.report.rule_pages import rule_page, rules_index
    from lmi_config.rules import load_rules
    from lmi_config.rules.base import find_rule

    all_rules = load_rules()
    if output_dir is not None:
        if output_format != "markdown" or name is not None:
            _fail_input(
                "--output-dir writes every rule's page: use it with --format markdown and no rule name"
            )
        _write_rule_pages(output_dir, all_rules)
        return
    if name is None:
        if output_format == "markdown":
            _emit(rules_index(all_rules) + "".join("\n" + rule_page(item) for item in all_rules))
            return
        _emit(format_rule_list(all_rules, output_format))
        return
    found = find_rule(name)
    if found is None:
        _fail_input(f"no rule {name!r}; run `lmi-config rules` for the list")
        return
    _emit(rule_page(found) if output_format == "markdown" else format_rule(found, output_format))


def _write_rule_pages(output_dir: str, all_rules: tuple[Any, ...]) -> None:
    from lmi_config import api
    from lmi_config.errors import OutputError

    try:
        written = api.write_rule_pages(output_dir, all_rules)
    except OutputError as error:
        _fail_input(str(error))
        return
    click.echo(f"wrote {written - 1} rule pages and README.md to {output_dir}", err=True)


# deploy and images (issue 12). Exit codes of deploy: 0 deployed (or a dry run printed),
# 1 the rendered configuration has errors or the plan was declined (nothing called),
# 2 unusable input or refused before any AWS call (limits, image, sizing),
# 3 AWS refused or the endpoint failed (what the run created is removed unless --keep-on-failure).
