"""``models``, ``instances`` and ``rules``: what lmi-config knows."""

from __future__ import annotations

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
    import json

    from lmi_config.report.listings import format_models, model_rows

    rows = model_rows()
    _emit(json.dumps(rows, indent=2) + "\n" if output_format == "json" else format_models(rows))


@main.command(context_settings=CONTEXT_SETTINGS)
@format_option
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
@format_option
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
