"""Every configuration that ran in djl-serving's own CI lints without an error."""

from __future__ import annotations

import pytest
from conftest import load_shared_json
from env_writer import dump_env

from lmi_config.api import lint_text
from lmi_config.configfile.properties import dump_properties
from lmi_config.lint import LintOptions

CONFIGS = [
    entry
    for entry in load_shared_json("reference", "djl_ci_configs.json")
    if entry.get("serving_properties") or entry.get("env")
]


def _value(value: object) -> str:
    # the CI writer (tests/integration/llm/prepare.py) writes f"{key}={value}": Python reprs
    return str(value)


@pytest.mark.parametrize("entry", CONFIGS, ids=[entry["name"] for entry in CONFIGS])
def test_ci_config_has_no_error(entry: dict) -> None:
    options = LintOptions(instance=entry.get("instance_type"))
    if entry.get("serving_properties"):
        text = dump_properties([(key, _value(value)) for key, value in entry["serving_properties"].items()])
        result = lint_text(text, "properties", options, name=f"{entry['name']}/serving.properties")
    else:
        text = dump_env([(key, _value(value)) for key, value in entry["env"].items()])
        result = lint_text(text, "env", options, name=f"{entry['name']}.env")
    errors = [finding for finding in result.findings if finding.severity == "error"]
    assert not errors, "\n".join(f"{f.code} {f.rule}: {f.message}" for f in errors)


@pytest.mark.parametrize(
    "entry", [e for e in CONFIGS if e.get("serving_properties")], ids=lambda e: e["name"]
)
def test_ci_config_written_as_environment_variables_has_no_error(entry: dict) -> None:
    """The same configuration as OPTION_* variables, the way SageMaker users pass it: a model's
    Environment (JSON carries every value; an env file refuses JSON values, lmi_config.escaping)."""
    from lmi_config.formats import format_output

    items = [(key, _value(value)) for key, value in entry["serving_properties"].items()]
    text, _ = format_output(items, "json", header=[])
    result = lint_text(
        text, "json", LintOptions(instance=entry.get("instance_type")), name=f"{entry['name']}.json"
    )
    errors = [finding for finding in result.findings if finding.severity == "error"]
    assert not errors, "\n".join(f"{f.code} {f.rule}: {f.message}" for f in errors)


def test_every_ci_config_is_covered() -> None:
    assert len(CONFIGS) >= 50
