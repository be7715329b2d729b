"""Per release, what lint says of a value is what the container's classes say (data/djl_properties.json).

For every backend whose handler path builds generated classes and every release that ships it,
the expected verdicts are computed here from the typed catalogue (class by class, as pydantic
builds them), independently of the compact index lint reads (data/container_checks.json): a value
outside what a class lets through is an LMI102 error carrying that class's message, every value
all the path's classes let through is accepted, and every combination of conflicts.json tied to a
validator still names a message of the code.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT

from lmi_config.knowledge import backends, releases
from lmi_config.knowledge.container_options import branch_of, container_view, fill, path_classes
from lmi_config.knowledge.djl_properties import djl_catalogue
from lmi_config.knowledge.options import conflict_rules
from lmi_config.lint import LintOptions, lint_text

BAD_VALUE = "not-a-value-lmi-config"


def shipped(backend: str) -> list:
    """Releases (of releases.json, with a branch) whose images ship the backend."""
    row = backends()[backend]
    found = []
    for release in releases():
        if branch_of(release) is None:
            continue
        if row.feature and not any(row.feature in names for names in release.features.values()):
            continue
        if row.since and release.djl_tuple < tuple(int(p) for p in row.since.split(".")):
            continue
        found.append(release)
    return found


CASES = [(name, release) for name in backends() if path_classes(name) for release in shipped(name)]


def expected_refusals(backend: str, branch: str) -> dict[str, tuple[str, str]]:
    """key -> (class, message) of the first class of the path that refuses BAD_VALUE, for keys with
    listed values; straight from the typed catalogue."""
    catalogue = djl_catalogue()
    found: dict[str, tuple[str, str]] = {}
    view = container_view(backend, next(r for r in releases() if branch_of(r) == branch))
    assert view is not None
    for class_name in path_classes(backend):
        if catalogue.class_at(class_name, branch) is None:
            continue
        for field in catalogue.fields_of(class_name, branch).values():
            key = f"option.{field.alias or field.field}"
            if key in found or key not in view.checks or view.checks[key][0].kind != "values":
                continue
            accepted, _case = catalogue.accepted_values(class_name, field.field, branch)
            if accepted is None:
                continue
            messages = [
                o.message
                for _v, o in catalogue.outcomes_for(class_name, field.field, branch)
                if o.kind == "error" and o.allowed_values is not None and o.message
            ]
            found[key] = (class_name, fill(messages[0], field.field, BAD_VALUE) if messages else "")
    return found


@pytest.mark.parametrize(
    ("backend", "release"), CASES, ids=lambda item: getattr(item, "label", lambda: item)()
)
def test_a_value_outside_what_a_class_lets_through_carries_that_class_message(backend: str, release) -> None:
    branch = branch_of(release)
    assert branch is not None
    expected = expected_refusals(backend, branch)
    if not expected:
        pytest.skip(f"no key of {backend} lists its values at {release.label()}")  # nothing to refuse
    text = "option.model_id=gpt2\n" + "".join(f"{key}={BAD_VALUE}\n" for key in sorted(expected))
    result = lint_text(
        text,
        options=LintOptions(backend=backend, lmi_version=f"v{release.lmi}" if release.lmi else release.djl),
    )
    refused = {f.key: f.message for f in result.findings if f.code == "LMI102"}
    for key, (class_name, message) in expected.items():
        assert key in refused, (key, [f.message for f in result.findings if f.key == key])
        assert class_name in refused[key] or key == "option.rolling_batch", refused[key]
        assert message in refused[key], (key, refused[key])


@pytest.mark.parametrize(
    ("backend", "release"), CASES, ids=lambda item: getattr(item, "label", lambda: item)()
)
def test_every_value_all_classes_of_the_path_let_through_is_accepted(backend: str, release) -> None:
    catalogue = djl_catalogue()
    branch = branch_of(release)
    view = container_view(backend, release)
    assert branch is not None and view is not None
    for key, checks in view.checks.items():
        field = checks[0].field
        sets = [
            catalogue.accepted_values(name, field, branch)
            for name in path_classes(backend)
            if catalogue.class_at(name, branch) is not None and field in catalogue.fields_of(name, branch)
        ]
        listed = [values for values, _case in sets if values is not None]
        if not listed:
            continue
        for value in sorted(frozenset.intersection(*listed)):
            assert view.judge(key, value) is None, (backend, release.label(), key, value)


def test_every_combination_tied_to_a_validator_names_a_message_of_the_code() -> None:
    catalogue = djl_catalogue()
    for conflict in conflict_rules():
        link = conflict.get("validator")
        if link is None:
            continue
        messages = [
            outcome.message
            for validator in catalogue.validators
            if validator.class_name == link["class"] and validator.name == link["name"]
            for outcome in validator.outcomes
            if outcome.message and outcome.message.startswith(link["message"])
        ]
        assert messages, conflict["id"]


def test_the_index_lint_reads_is_what_the_generator_writes_today() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_container_checks.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr


def test_the_option_catalogue_agrees_with_the_code() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "sync_options_from_code.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr


def test_entries_the_code_speaks_for_say_so_and_the_others_say_why_not() -> None:
    document = json.loads((ROOT / "lmi_config" / "data" / "options.json").read_text(encoding="utf-8"))
    for row in document["options"]:
        assert bool(row.get("from_code")) != bool(row.get("hand_written")), row["key"]
    by_key = {(row["key"], tuple(row["backends"])): row for row in document["options"]}
    cluster = by_key[("option.cluster_size", ("common",))]
    assert cluster["since"] == "0.29.0" and cluster["from_code"]["source"].startswith(
        "https://github.com/deepjavalibrary/djl-serving/blob/"
    )
