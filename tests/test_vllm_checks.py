"""The catalogue of vLLM's start-up checks (data/vllm_checks.json) and its coverage by the judge.

Every check a pinned vLLM release makes is classified decidable or not; every decidable one is either
covered by a judgement (data/vllm_check_coverage.json ``covered``, a rule that exists, with the checks it
was found by) or listed as uncovered with a reason. A new release read into the catalogue brings new
identities, and this test fails until each is covered or listed: the gaps show up by themselves.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from functools import cache
from typing import Any

from conftest import ROOT

from lmi_config.rules import load_rules
from lmi_config.rules.base import find_rule

DATA = ROOT / "lmi_config" / "data"


@cache
def _load(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _text(entry: dict[str, Any]) -> str:
    return entry["message"] + " || " + " && ".join(entry["conditions"])


def test_every_decidable_check_is_covered_or_listed_with_a_reason() -> None:
    catalogue, coverage = _load("vllm_checks.json"), _load("vllm_check_coverage.json")
    covered = {identity for judgement in coverage["covered"] for identity in judgement["checks"]}
    uncovered = {identity for group in coverage["uncovered"] for identity in group["checks"]}
    decidable = {identity for identity, entry in catalogue["checks"].items() if entry["decidable"]}
    unlisted = sorted(decidable - covered - uncovered)
    assert not unlisted, (
        f"{len(unlisted)} decidable vLLM start-up checks have no covering judgement and are not listed as "
        f"uncovered (data/vllm_check_coverage.json): {unlisted[:10]}"
    )
    assert not covered & uncovered, sorted(covered & uncovered)[:10]
    listed = covered | uncovered
    assert listed <= set(catalogue["checks"]), sorted(listed - set(catalogue["checks"]))[:10]
    # an undecidable check is never "covered" nor "uncovered": it is out of the count, with its reason
    assert not listed - decidable, sorted(listed - decidable)[:10]


def test_each_covering_judgement_is_a_rule_and_its_checks_match_what_it_was_found_by() -> None:
    catalogue = _load("vllm_checks.json")
    load_rules()
    for judgement in _load("vllm_check_coverage.json")["covered"]:
        assert find_rule(judgement["rule"]) is not None, judgement["rule"]
        assert (ROOT / judgement["test"].split("::")[0]).is_file(), judgement["test"]
        matcher = judgement["matches"]
        pattern = re.compile(matcher["text"])
        for identity in judgement["checks"]:
            entry = catalogue["checks"][identity]
            assert entry["area"] in matcher["areas"], (judgement["rule"], identity)
            assert pattern.search(_text(entry)), (judgement["rule"], identity)


def test_reviewed_classifications_are_the_catalogues() -> None:
    catalogue = _load("vllm_checks.json")["checks"]
    for identity, reviewed in _load("vllm_check_review.json")["classifications"].items():
        entry = catalogue[identity]
        assert entry["why"] == "review" and entry["decidable"] == reviewed["decidable"], identity
        assert entry["reason"] == reviewed["reason"], identity


def test_every_pinned_vllm_version_is_read_and_counted() -> None:
    catalogue = _load("vllm_checks.json")
    pinned = _load("vllm_capabilities.json")["versions"]
    assert set(catalogue["versions"]) == set(pinned)
    for version, row in catalogue["versions"].items():
        assert row["read_from"] == pinned[version]["read_from"], version
        present = [entry for entry in catalogue["checks"].values() if row["read_from"] in entry["lines"]]
        assert row["checks"] == len(present), version
        assert row["decidable"] == sum(1 for entry in present if entry["decidable"]), version


def test_each_entry_cites_its_line_at_the_newest_release_that_has_it() -> None:
    for identity, entry in _load("vllm_checks.json")["checks"].items():
        newest = max(entry["lines"], key=lambda v: tuple(int(p) if p.isdigit() else -1 for p in v.split(".")))
        path = (entry.get("moved") or {}).get(newest, entry["file"])
        assert entry["source"] == (
            f"https://github.com/vllm-project/vllm/blob/v{newest}/{path}#L{entry['lines'][newest]}"
        ), identity


def test_the_classes_issue_31_names_are_decidable_and_covered() -> None:
    """The start-up checks behind real failures that a configuration check should have caught."""
    catalogue = _load("vllm_checks.json")["checks"]
    by_rule = {
        judgement["rule"]: set(judgement["checks"])
        for judgement in _load("vllm_check_coverage.json")["covered"]
    }
    expected = {
        "batched-tokens-below-model-len": r"^max_num_batched_tokens \(.*\) is smaller than max_model_len",
        "bitsandbytes-tensor-parallel": r"^Prequant BitsAndBytes models with (TP|tensor parallelism)",
        "quantization-group-misaligned": r"^The input size is not aligned with the quantized weight shape",
    }
    for rule, pattern in expected.items():
        found = [identity for identity in by_rule[rule] if re.search(pattern, catalogue[identity]["message"])]
        assert found, rule
        assert all(catalogue[identity]["decidable"] for identity in found), rule


def test_the_generator_prints_coverage_per_version_from_the_files() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_vllm_checks.py"), "--coverage"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    for version in _load("vllm_checks.json")["versions"]:
        assert re.search(
            rf"vllm {re.escape(version)}\s+\d+ checks, +\d+ decidable, .* covered +\d+ / \d+", run.stdout
        )
