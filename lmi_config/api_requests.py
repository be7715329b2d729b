"""The checks of the objects a caller hands :mod:`lmi_config.api` — lint options, search options,
the requests of a search on SageMaker and of a deploy — field by field, with the checks of
:mod:`lmi_config.arguments`: each raises :class:`InvalidArgument` naming ``Type.field``.

Kept apart from :mod:`lmi_config.arguments`, a leaf the planner uses too: these import the classes
they check, from every layer, and in one module with it would make an import cycle."""

from __future__ import annotations

from typing import Any

from lmi_config.arguments import (
    choice,
    count,
    fields_of,
    flag,
    instance_of,
    optional_count,
    optional_instance_of,
    optional_positive_number,
    optional_text,
    pairs,
    positive_number,
    shown,
    text,
    texts,
)
from lmi_config.errors import InvalidArgument

SEARCH_BACKENDS = ("nxdi", "transformers-neuronx")  # the memory models search predicts with (--backend)


def _non_empty_text(name: str, value: Any) -> str:
    return text(name, value, empty=False)


def _optional_non_empty_text(name: str, value: Any) -> str | None:
    return optional_text(name, value, empty=False)


def _texts(name: str, value: Any) -> list[str]:
    return texts(name, value, empty=False)


def _lnc(name: str, value: Any) -> int | None:
    return optional_count(name, value, minimum=1, maximum=2)


def _count_from_zero(name: str, value: Any) -> int:
    return count(name, value, minimum=0)


def _optional_bytes_count(name: str, value: Any) -> int | None:
    return optional_count(name, value, minimum=0, maximum=2**63 - 1)


def lint_options(name: str, value: Any) -> Any:
    """A :class:`lmi_config.lint.LintOptions` whose every field is of its type and range."""
    from lmi_config.lint import LintOptions
    from lmi_config.settings import ProjectSettings

    instance_of(name, value, LintOptions, "lmi_config.api.LintOptions (see lint_options())")
    fields_of(
        name,
        value,
        {
            "backend": _optional_non_empty_text,
            "lmi_version": _optional_non_empty_text,
            "instance": _optional_non_empty_text,
            "model": _optional_non_empty_text,
            "select": _texts,
            "ignore": _texts,
            "hub": flag,
            "lnc": _lnc,
            "settings": lambda field, given: optional_instance_of(
                field, given, ProjectSettings, "ProjectSettings"
            ),
            "exclude": _texts,
            "force_exclude": flag,
            "max_findings": _count_from_zero,
            "judge_fixes": flag,
        },
    )
    return value


def optional_lint_options(name: str, value: Any) -> Any:
    """None or :func:`lint_options`."""
    return None if value is None else lint_options(name, value)


def search_options(name: str, value: Any) -> Any:
    """A :class:`lmi_config.search.SearchOptions` whose every field is of its type and range."""
    from lmi_config.plan.candidates import OBJECTIVES
    from lmi_config.search.session import STRATEGIES, SearchOptions
    from lmi_config.search.shards import Shard

    instance_of(name, value, SearchOptions, "lmi_config.search.SearchOptions")
    fields_of(
        name,
        value,
        {
            "model": _non_empty_text,
            "output": _optional_non_empty_text,
            "strategy": lambda field, given: choice(field, given, STRATEGIES),
            "instance": _optional_non_empty_text,
            "cores": optional_count,
            "cores_per_device": optional_count,
            "task": _optional_non_empty_text,
            "backend": lambda field, given: choice(field, given, SEARCH_BACKENDS),
            "dtype": _optional_non_empty_text,
            "exporter": _non_empty_text,
            "python": _non_empty_text,
            "work_dir": _non_empty_text,
            "export_timeout": optional_count,
            "load_timeout": optional_count,
            "keep_artifacts": flag,
            "required_free_bytes": _optional_bytes_count,
            "dry_run": flag,
            "hub": flag,
            "shard": lambda field, given: optional_instance_of(
                field, given, Shard, "a Shard (parse_shard('K/N'))"
            ),
            "where": lambda field, given: optional_instance_of(field, given, dict, "a dict or None"),
            "objective": lambda field, given: choice(field, given, OBJECTIVES),
            "input_tokens": optional_count,
            "output_tokens": optional_count,
        },
    )
    return value


def remote_request(name: str, value: Any) -> Any:
    """A :class:`lmi_config.search.sagemaker_jobs.RemoteRequest` whose every field is of its type and range."""
    from lmi_config.search.sagemaker_jobs import RemoteRequest

    instance_of(name, value, RemoteRequest, "lmi_config.search.sagemaker_jobs.RemoteRequest")
    search_options(f"{name}.search", value.search)
    fields_of(
        name,
        value,
        {
            "instances": _texts,
            "max_jobs": count,
            "max_hours": lambda field, given: positive_number(field, given, unit="hours"),
            "role": _optional_non_empty_text,
            "s3_prefix": _optional_non_empty_text,
            "image": _optional_non_empty_text,
            "region": _optional_non_empty_text,
            "endpoint_url": _optional_non_empty_text,
            "secret_env": _texts,
            "optimum_neuron": _optional_non_empty_text,
            "stopping": flag,
        },
    )
    return value


def deploy_request(request: Any) -> None:
    """A :class:`lmi_config.deploy.DeployRequest` whose fields are of their types (the flags' ranges
    are the deploy plan's to judge: it names the limit)."""
    from lmi_config.deploy import DeployRequest, SizingOverrides

    instance_of("request", request, DeployRequest, "a DeployRequest (lmi_config.deploy)")
    fields_of(
        "DeployRequest",
        request,
        {
            "region": _optional_non_empty_text,
            "role": _optional_non_empty_text,
            "endpoint_name": _optional_non_empty_text,
            "s3_prefix": _optional_non_empty_text,
            "instance_count": count,
            "delivery": lambda name, value: choice(name, value, ("auto", "environment", "s3")),
            "files": lambda name, value: texts(name, value, empty=False),
            "secret_env": lambda name, value: texts(name, value, empty=False),
            "tags": pairs,
            "autoscale": _bounds,
            "autoscale_target": optional_positive_number,
            "image": _optional_non_empty_text,
            "sizing": lambda name, value: instance_of(name, value, SizingOverrides, "SizingOverrides"),
            "update": flag,
            "endpoint_url": _optional_non_empty_text,
            "wait": flag,
            "wait_timeout_seconds": optional_count,
            "poll_seconds": optional_positive_number,
            "keep_on_failure": flag,
        },
    )


def _bounds(name: str, value: Any) -> None:
    """None or a (minimum, maximum) pair of counts, minimum first."""
    if value is None:
        return
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise InvalidArgument(f"{name}: {shown(value)} is not allowed; expected (minimum, maximum) instances")
    # a minimum of 0 scales an asynchronous endpoint to zero (the plan refuses it for a real-time one)
    low, high = (count(f"{name}[{position}]", item, minimum=0) for position, item in enumerate(value))
    if low > high:
        raise InvalidArgument(f"{name}: {shown(value)} is not allowed; the minimum is more than the maximum")
