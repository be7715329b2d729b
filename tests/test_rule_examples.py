"""Every rule's documented examples are executed: the bad one is reported, the good one is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmi_config.configfile.loader import LintTarget, parse_source
from lmi_config.lint import LintOptions, build_unit, lint_unit
from lmi_config.rules import load_rules
from lmi_config.rules.base import Example, Finding

RULES = load_rules()


REPOSITORY = Path(__file__).resolve().parent.parent


def lint_example(example: Example, directory: Path) -> list[Finding]:
    name = {"properties": "serving.properties", "env": "model.env", "json": "environment.json"}[example.kind]
    sources = [parse_source(name, example.text.encode("utf-8"), directory, example.kind)]
    if example.paired_env is not None:
        sources.append(parse_source("model.env", example.paired_env.encode("utf-8"), directory, "env"))
    args = dict(example.args)
    if "model" in args and args["model"].startswith("tests/"):
        args["model"] = str(REPOSITORY / args["model"])  # a model directory among the test fixtures
    options = LintOptions(**args)
    unit = build_unit(LintTarget(sources), options)
    return lint_unit(unit, options)


@pytest.mark.parametrize("rule", RULES, ids=[rule.code for rule in RULES])
def test_bad_example_is_reported(rule, tmp_path: Path) -> None:
    findings = lint_example(rule.bad, tmp_path)
    assert rule.code in {finding.code for finding in findings}, findings


@pytest.mark.parametrize("rule", RULES, ids=[rule.code for rule in RULES])
def test_good_example_is_clean(rule, tmp_path: Path) -> None:
    findings = lint_example(rule.good, tmp_path)
    assert rule.code not in {finding.code for finding in findings}, findings
    assert not [finding for finding in findings if finding.severity == "error"], findings


@pytest.mark.parametrize("rule", RULES, ids=[rule.code for rule in RULES])
def test_rule_is_documented(rule) -> None:
    assert rule.code.startswith("LMI") and len(rule.code) == 6
    assert rule.slug == rule.slug.lower() and " " not in rule.slug
    assert rule.severity in ("error", "warning", "info")
    assert rule.summary and rule.why and rule.source
