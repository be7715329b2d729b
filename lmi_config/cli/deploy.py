"""``deploy`` and ``images``: SageMaker endpoints with boto3."""

from __future__ import annotations

import re
import sys
from typing import Any

import click

from lmi_config.cli.common import (
    CONTEXT_SETTINGS,
    USAGE_ERRORS,
    FiniteFloat,
    _emit,
    _fail_input,
    format_option,
    main,
    spec_from_flags,
    spec_options,
)
from lmi_config.cli.deploy_delete import DEPLOY_FAILED, ProgressPrinter, delete_command
from lmi_config.cli.deploy_options import deploy_settings, production_options
from lmi_config.errors import InputError, OutputError, PlanningError
from lmi_config.secrets import redact


def _key_values(values: tuple[str, ...], flag: str) -> tuple[tuple[str, str], ...]:
    pairs = []
    for item in values:
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            _fail_input(f"{flag} {redact(item)!r}: write KEY=VALUE")
        pairs.append((key.strip(), value))
    return tuple(pairs)


_SMALL_COUNT = re.compile(r"[0-9]{1,10}")


def _autoscale_range(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    low, colon, high = text.partition(":")
    # ASCII digits, at most ten: "²" passes isdigit() and int() refuses 5,000 digits
    if not colon or not _SMALL_COUNT.fullmatch(low.strip()) or not _SMALL_COUNT.fullmatch(high.strip()):
        _fail_input(f"--autoscale {text!r}: write MIN:MAX, e.g. 1:4")
    return int(low), int(high)


@main.command(context_settings=CONTEXT_SETTINGS)
@click.argument("spec_file", required=False, metavar="SPEC.yaml")
@click.option("--model", metavar="ID", help="Model (Hub id or s3:// prefix); overrides the spec's.")
@click.option("--model-architecture", metavar="ID", help="Catalog id or directory with config.json.")
@spec_options
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
    type=FiniteFloat(min=0.01, max=10**9),
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
    "--poll-seconds",
    type=FiniteFloat(min=0.01, max=10**9),
    default=None,
    metavar="SECONDS",
    help="Default: 30.",
)
@production_options
@click.option("--keep-on-failure", is_flag=True, help="Leave what a failed run created (to inspect it).")
@click.option("-y", "--yes", is_flag=True, help="Proceed without asking (CI).")
@click.option("--dry-run", is_flag=True, help="Print the plan; call nothing.")
@format_option
@click.option(
    "--delete",
    "delete_name",
    metavar="NAME",
    help="Remove endpoint NAME with its config and model (only what lmi-config made and nothing else uses).",
)
@click.option(
    "--purge-s3",
    is_flag=True,
    help="With --delete: also remove the objects under the model's own S3 prefix.",
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
    2 refused before any AWS call (also: no terminal to ask and no --yes),
    3 AWS refused or the endpoint failed;
    interrupted (Ctrl-C, SIGTERM): 128 + the signal, after removing what the run made.

    --delete NAME removes only what lmi-config made (its lmi-config:version tag) and
    nothing else uses (every endpoint and config is checked); the rest is kept and
    named. It asks first (--yes without a terminal); --dry-run shows what would go.
    It also finds what an interrupted run made for NAME. Exit 1 when endpoint NAME
    itself was not made by lmi-config.

    \b
    Example:
      lmi-config deploy samples/specs/llama-3.1-8b-inf2-24xlarge.yaml --dry-run \\
          --region us-east-1 --role arn:aws:iam::123456789012:role/SageMakerRole
      lmi-config deploy samples/specs/qwen2.5-7b-vllm-g5-12xlarge.yaml --yes \\
          --region us-east-1 --role arn:aws:iam::123456789012:role/SageMakerRole \\
          --endpoint-name qwen-chat --secret-env HF_TOKEN --tag team=search --autoscale 1:4
      lmi-config deploy spec.yaml --s3-prefix s3://my-bucket/lmi --file model.py --yes --role ...
      lmi-config deploy --delete qwen-chat --region us-east-1 --purge-s3
    """
    from lmi_config import api
    from lmi_config.deploy import DeployRequest, SizingOverrides
    from lmi_config.deploy.report import format_outcome, format_plan, outcome_document
    from lmi_config.errors import DeployError
    from lmi_config.spec import with_deploy_settings
    from lmi_config.strict_json import dump_json

    if flags["delete_name"] is not None:
        delete_command(flags["delete_name"], flags)
        return
    if flags["purge_s3"]:
        _fail_input(
            "--purge-s3 goes with --delete NAME (it removes the deleted model's files); nothing was called"
        )
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

    unattended: list[bool] = []  # nobody could be asked: a refusal (2), not a "no" (1)

    def confirm(plan: Any) -> bool:
        if flags["yes"]:
            return True
        if not sys.stdin.isatty():
            unattended.append(True)
            return False
        question = (
            f"Roll endpoint {plan.endpoint_name} to this configuration in {plan.region} (its previous config "
            "and model are removed when lmi-config made them and nothing else uses them)?"
            if plan.update
            else f"Create these resources in {plan.region}?"
        )
        return click.confirm(question, default=False, err=True)

    name = spec_file or "command line"
    values, origins = deploy_settings(flags)
    try:
        spec, name = spec_from_flags(spec_file, flags)
        spec = with_deploy_settings(spec, values, origins, name)
        result = api.deploy(
            spec,
            request,
            name=name,
            hub=flags["hub"],
            dry_run=dry_run,
            show=show,
            confirm=confirm,
            progress=ProgressPrinter(),
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
    for component, rendered in result.plan.renderings():
        prefix = f"component {component}: " if component else ""
        for finding in rendered.findings:
            if finding.severity != "info":
                click.echo(
                    f"{prefix}{finding.code} {finding.severity} [{finding.rule}] {finding.message}", err=True
                )
    if result.refused:
        shown = {
            f"{f'component {component}: ' if component else ''}{finding.code} [{finding.rule}] {finding.message}"
            for component, rendered in result.plan.renderings()
            for finding in rendered.errors
        }
        for item in result.plan.blocking:  # problems, and what deploy refuses beyond lint's errors
            if item not in shown:
                click.echo(f"error: {item}", err=True)
        click.echo(
            "lmi-config: nothing deployed: the rendered configuration has errors (fix the spec)", err=True
        )
        sys.exit(1)
    if result.declined and unattended:
        _fail_input(
            "standard input is not a terminal, so nothing was asked and nothing was called: pass --yes to "
            "proceed (the plan is above; --dry-run shows it without asking)"
        )
    if result.declined:
        sys.exit(1)
    outcome = result.outcome
    if outcome is None:
        sys.exit(0)
    if json_output:
        _emit(dump_json({"plan": result.plan.public(), "outcome": outcome_document(outcome)}, default=str))
    else:
        _emit(format_outcome(outcome, result.plan))
    if outcome.interrupted_by is not None:
        sys.exit(128 + outcome.interrupted_by)  # the shell's convention: 130 after Ctrl-C, 143 after SIGTERM
    sys.exit(0 if outcome.succeeded else DEPLOY_FAILED)


@main.command(context_settings=CONTEXT_SETTINGS)
@click.option("--framework", metavar="NAME", help="Only this family: djl-lmi, djl-neuronx, djl-tensorrtllm …")
@click.option(
    "--region",
    metavar="REGION",
    help="Show the image URI in this region (or that it is not published there).",
)
@format_option
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
    from lmi_config import api
    from lmi_config.deploy.report import format_images
    from lmi_config.errors import DeployError
    from lmi_config.strict_json import dump_json

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
    _emit(dump_json(rows) if output_format == "json" else format_images(rows, region=region))
