"""The real-failures corpus (tests/fixtures/real-failures/) is well formed, and its benchmark runs.

What is held here is the shape of the data: every case has its metadata, a source URL and a class
from the vocabulary, every configuration parses, the pragma says what the metadata says, and
benchmarks/real_failures.py runs on a few cases and ends with its JSON line. The catch rate is not
tested: the corpus is development data, its figures are reported, not pinned.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from functools import cache
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

from lmi_config.api import lint_paths
from lmi_config.rules import load_rules
from lmi_config.rules.base import find_rule

CORPUS = FIXTURES / "real-failures"
KINDS = {"failure", "known-good"}
PRAGMA = re.compile(r"^#\s*lmi-config:\s*(?P<body>.*)$", re.MULTILINE)
CONFIG_SUFFIXES = (".properties", ".env")


@cache
def corpus() -> dict:
    return json.loads((CORPUS / "cases.json").read_text(encoding="utf-8"))


def cases() -> list[dict]:
    return corpus()["cases"]


def case_ids(kind: str | None = None) -> list[str]:
    return [case["id"] for case in cases() if kind is None or case["kind"] == kind]


def config_files(case: dict) -> list[Path]:
    return [CORPUS / case["id"] / name for name in case["files"] if name.endswith(CONFIG_SUFFIXES)]


def by_id(case_id: str) -> dict:
    return next(case for case in cases() if case["id"] == case_id)


def test_the_corpus_holds_the_cases_the_issue_asks_for() -> None:
    assert len(case_ids("failure")) >= 120
    assert len(case_ids("known-good")) >= 20


def test_case_ids_are_unique_and_each_has_its_directory() -> None:
    ids = case_ids()
    assert len(ids) == len(set(ids))
    directories = {path.name for path in CORPUS.iterdir() if path.is_dir()}
    assert directories == set(ids), sorted(directories ^ set(ids))


@pytest.mark.parametrize("case_id", case_ids())
def test_every_case_has_its_metadata_and_source(case_id: str) -> None:
    case = by_id(case_id)
    assert case["kind"] in KINDS
    assert case["source"]["url"].startswith("https://"), case["source"]
    assert case["source"]["part"]
    for key in ("engine", "engine_version", "platform"):
        assert case[key], key
    assert isinstance(case["decidable"], bool) and isinstance(case["complete"], bool)
    assert isinstance(case["start_up"], bool)
    assert isinstance(case["not_in_report"], list)
    if not case["decidable"]:
        assert case["undecidable_reason"], "an undecidable case says why"
    if case["kind"] == "failure":
        assert case["class"] in corpus()["classes"], case["class"]
        assert case["error"] and case["root_cause"]
    else:
        assert case["ran_evidence"], "a known-good case quotes what shows it ran"
        assert "error" not in case and "root_cause" not in case


def test_every_class_names_rules_the_linter_has() -> None:
    load_rules()
    for name, entry in corpus()["classes"].items():
        assert entry["description"], name
        for slug in entry["rules"]:
            assert find_rule(slug) is not None, f"class {name}: no rule {slug}"


@pytest.mark.parametrize("case_id", case_ids())
def test_every_listed_file_exists_and_a_configuration_is_among_them(case_id: str) -> None:
    case = by_id(case_id)
    directory = CORPUS / case_id
    assert all((directory / name).is_file() for name in case["files"]), case["files"]
    on_disk = {str(path.relative_to(directory)) for path in directory.rglob("*") if path.is_file()}
    assert on_disk == set(case["files"])
    assert config_files(case), "a case holds a serving.properties or an env file"
    for path in directory.rglob("*.json"):
        json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("case_id", case_ids())
def test_the_pragma_says_what_the_metadata_says(case_id: str) -> None:
    case = by_id(case_id)
    pragmas = [
        match["body"] for path in config_files(case) for match in PRAGMA.finditer(path.read_text("utf-8"))
    ]
    assert len(pragmas) == 1, "one pragma per case"
    values = dict(token.split("=", 1) for token in pragmas[0].split())
    wanted = case["reproduced_as"]
    assert values["backend"] == wanted["backend"]
    assert values["lmi-version"] == wanted["lmi_version"]
    assert values.get("instance") == wanted["instance"]


@pytest.mark.parametrize("case_id", case_ids())
def test_every_configuration_parses(case_id: str) -> None:
    result = lint_paths([str(CORPUS / case_id)])
    assert not result.problems, result.problems
    assert result.files == len(config_files(by_id(case_id)))
    unparsed = [finding.message for finding in result.findings if finding.rule == "parse-error"]
    assert not unparsed, unparsed


@cache
def load_benchmark():
    spec = importlib.util.spec_from_file_location("real_failures", ROOT / "benchmarks" / "real_failures.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses resolve their annotations through it
    spec.loader.exec_module(module)
    return module


def test_the_benchmark_runs_on_a_few_cases_and_ends_with_its_json_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    chosen = [
        "vllm-596-llama2-13b-tp3",  # caught
        "vllm-2847-lora-rank64",  # caught since LMI622 (lora-rank-above-max)
        "vllm-3676-command-r-max-model-len",  # missed: the checkpoint's config.json is not at hand offline
        "vllm-9515-broken-install-llama-arch",  # undecidable
        "vllm-1153-g4dn-xlarge-bf16",  # incomplete
        "vllm-6689-kg-llama31-8b-l4",  # known-good
    ]
    argv = [argument for case_id in chosen for argument in ("--case", case_id)]
    assert load_benchmark().main(argv) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    summary = json.loads(lines[-1])
    assert summary["failures"] == 5 and summary["known_good"] == 1
    assert summary["undecidable"] == 1 and summary["incomplete"] == 1 and summary["counted"] == 3
    assert 0 <= summary["caught"] <= summary["caught_any_error"] <= summary["counted"]
    assert any(line.startswith("missed [max-model-len]") for line in lines), (
        "a missed case is listed by class"
    )


def test_the_benchmark_refuses_an_unknown_case(capsys: pytest.CaptureFixture[str]) -> None:
    assert load_benchmark().main(["--case", "no-such-case"]) == 2
    assert "no-such-case" in capsys.readouterr().err
