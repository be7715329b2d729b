"""Environment variables as the container reads them (``data/env_vars.json``): the ``OPTION_*``
prefix rules, named variables, TGI translations, credentials, runtime settings and SageMaker's
limits on a model's ``Environment``."""

import re
from functools import cache
from typing import Any, NamedTuple

from lmi_config.knowledge import load_data

Row = dict[str, Any]


def _rows(section: str) -> tuple[Row, ...]:
    return tuple(load_data("env_vars.json").get(section, []))


@cache
def named_variables() -> dict[str, Row]:
    """Variables with a fixed meaning (``HF_MODEL_ID``, ``TENSOR_PARALLEL_DEGREE`` …) by name."""
    return {row["name"]: row for row in _rows("variables")}


@cache
def prefix_rules() -> tuple[Row, ...]:
    """``OPTION_*``, ``ARGS_*``, ``SERVING_*``: prefix, target, role and the lower-casing rule."""
    return _rows("prefix_rules")


@cache
def tgi_translations() -> dict[str, Row]:
    """The GPU images' TGI → LMI variable translation, by TGI name."""
    return {row["name"]: row for row in _rows("tgi_translations")}


@cache
def foreign_variables() -> dict[str, Row]:
    """Variables of other servers that the container never reads, with what to use instead."""
    return {row["name"]: row for row in _rows("foreign_variables")}


@cache
def process_env_pattern() -> re.Pattern[str]:
    """Variables for the process (``HF_HOME``, ``NEURON_*`` …), not configuration keys."""
    return re.compile("|".join(row["pattern"] for row in _rows("process_env")))


@cache
def secret_variables() -> dict[str, Row]:
    """Credential variables (``HF_TOKEN``, AWS keys) by name."""
    return {row["name"]: row for row in _rows("secrets")}


@cache
def secret_patterns() -> tuple[Row, ...]:
    """Credential value formats (Hugging Face tokens, AWS access keys)."""
    return _rows("secret_patterns")


@cache
def runtime_settings() -> tuple[Row, ...]:
    """Runtime variables that change the instance's shape (``NEURON_LOGICAL_NC_CONFIG``)."""
    return _rows("runtime_settings")


@cache
def superseded_variables() -> dict[str, str]:
    """Variable -> the variable its reader takes instead when both are set (``NEURON_RT_NUM_CORES``)."""
    return {row["name"]: row["by"] for row in _rows("superseded_variables")}


def worker_variables(accelerator: str, djl_version: tuple[int, ...]) -> tuple[Row, ...]:
    """Variables the DJL Python engine sets for each worker it starts on this accelerator and release
    (``data/worker_environment.json``, generated from djl-serving's Connection.java): the container's
    value of one of them never reaches the worker."""
    from lmi_config.knowledge import version_tuple

    return tuple(
        row
        for row in load_data("worker_environment.json")["variables"]
        if row["accelerator"] == accelerator
        and version_tuple(row["since"]) <= djl_version
        and (row["until"] is None or djl_version <= version_tuple(row["until"]))
    )


class EnvironmentLimits(NamedTuple):
    """SageMaker's limits on a container's ``Environment``."""

    max_entries: int
    max_value_length: int
    key_pattern: str
    source: str


@cache
def sagemaker_environment_limits() -> EnvironmentLimits:
    """At most 100 entries, values up to 1,024 characters, keys matching a pattern."""
    row = load_data("env_vars.json")["sagemaker_environment_limits"]
    return EnvironmentLimits(
        int(row["max_entries"]), int(row["max_value_length"]), row["key_pattern"], row["source"]
    )


@cache
def hub_token_names() -> dict[str, str]:
    """The variables some pinned huggingface_hub reads a Hub token from, each with where its code reads it
    (``data/hub_token_variables.json``, generated from those releases): ``HF_TOKEN``,
    ``HUGGING_FACE_HUB_TOKEN``. A name none reads (``HF_API_TOKEN``) is no token to any image."""
    found: dict[str, str] = {}
    versions = load_data("hub_token_variables.json")["versions"]
    for version in sorted(versions, key=lambda v: tuple(int(part) for part in re.findall(r"\d+", v))):
        for name, row in versions[version]["variables"].items():
            found[name] = row["source"]  # the newest version's line
    return found


HUB_TOKEN_LIKE = re.compile(r"^(HF|HUGGING_?FACE)[A-Z0-9_]*TOKEN$")
