"""``deploy --delete NAME`` (plan, show, confirm, remove, report) and the progress display deploy shares."""

from __future__ import annotations

import sys
from typing import Any

import click

from lmi_config.cli.common import _emit, _fail_input
from lmi_config.errors import SpecError

DEPLOY_FAILED = 3


class ProgressPrinter:
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


def delete_command(name: str, flags: dict[str, Any]) -> None:
    """``--delete NAME``: plan, show, confirm (always: a terminal's answer or --yes), remove, report."""
    from lmi_config import api
    from lmi_config.deploy.report import deletion_document, format_deletion_plan, format_removal_result
    from lmi_config.errors import DeployError
    from lmi_config.strict_json import dump_json

    dry_run, json_output = flags["dry_run"], flags["output_format"] == "json"
    if not (flags["yes"] or dry_run or sys.stdin.isatty()):
        # the same rule as create: nobody can answer, so nothing destructive happens unasked
        _fail_input(
            f"deploy --delete {name} removes resources and standard input is not a terminal, so nothing "
            "was asked and nothing was removed: pass --yes to remove them (--dry-run shows what would go)"
        )

    def show(plan: Any) -> None:
        if json_output and dry_run:
            _emit(dump_json(deletion_document(plan)))
        else:
            click.echo(format_deletion_plan(plan, dry_run=dry_run), nl=False, err=json_output)

    def confirm(plan: Any) -> bool:
        return bool(flags["yes"]) or click.confirm(
            f"Remove these {len(plan.remove)} resources in {plan.region}?", default=False, err=True
        )

    try:
        result = api.delete_endpoint(
            name,
            region=flags["region"],
            endpoint_url=flags["endpoint_url"],
            purge_s3=flags["purge_s3"],
            dry_run=dry_run,
            show=show,
            confirm=confirm,
            progress=ProgressPrinter(),
        )
    except SpecError as error:
        _fail_input(str(error))
        return
    except DeployError as error:
        click.echo(f"lmi-config: deploy --delete {name}: {error}", err=True)
        sys.exit(DEPLOY_FAILED)
    removal = result.removal
    if removal is not None:
        where = (result.plan.region, flags["endpoint_url"])
        if json_output:
            _emit(dump_json(deletion_document(result.plan, removal, where)))
        else:
            _emit(format_removal_result(removal, where))
    if removal is not None and removal.interrupted_by is not None:
        sys.exit(128 + removal.interrupted_by)
    if removal is not None and removal.failed:
        sys.exit(DEPLOY_FAILED)
    # declined, or the endpoint itself is not lmi-config's: it is still there
    sys.exit(1 if result.declined or (result.plan.target_kept and not dry_run) else 0)
