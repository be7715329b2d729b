"""lint --write-baseline / --baseline: adopt lmi-config on a repository with history, see only new findings."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

CONFIG = (
    "option.model_id=mistralai/Mistral-7B-v0.1\noption.rolling_batch=vllm\n"
    "option.tensor_parallel_degre=2\noption.max_rolling_batch_sise=8\n"
)


def codes_and_keys(result) -> list[tuple[str, str]]:
    return sorted((f["code"], f["key"]) for f in json.loads(result.stdout)["findings"])


def lint(directory: Path, *args: str):
    return run_cli("lint", ".", "--backend", "vllm", "--lmi-version", "0.30.0", *args, cwd=directory)


def test_a_baseline_holds_todays_findings_even_when_lines_move(tmp_path: Path) -> None:
    (tmp_path / "serving.properties").write_text(CONFIG)
    before = lint(tmp_path, "--format", "json")
    assert len(codes_and_keys(before)) == 2
    written = lint(tmp_path, "--write-baseline", "baseline.json")
    assert written.returncode == 0 and "2 finding(s)" in written.stderr
    assert lint(tmp_path, "--baseline", "baseline.json", "--format", "json").stdout.count('"code"') == 0
    # lines inserted above: the same findings on other lines stay baselined
    (tmp_path / "serving.properties").write_text("# tuned for g5\n# by the platform team\n" + CONFIG)
    moved = lint(tmp_path, "--baseline", "baseline.json", "--format", "json")
    assert codes_and_keys(moved) == [] and moved.returncode == 0


def test_a_changed_value_or_a_new_finding_is_reported(tmp_path: Path) -> None:
    (tmp_path / "serving.properties").write_text(CONFIG)
    lint(tmp_path, "--write-baseline", "baseline.json")
    changed = CONFIG.replace("degre=2", "degre=4") + "option.rolling_bach=vllm\n"
    (tmp_path / "serving.properties").write_text(changed)
    result = lint(tmp_path, "--baseline", "baseline.json", "--format", "json")
    assert codes_and_keys(result) == [
        ("LMI101", "option.rolling_bach"),
        ("LMI101", "option.tensor_parallel_degre"),
    ]


def test_an_unreadable_baseline_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "serving.properties").write_text(CONFIG)
    (tmp_path / "baseline.json").write_text('{"findings": []}')
    result = lint(tmp_path, "--baseline", "baseline.json")
    assert result.returncode == 2 and "baseline.json" in result.stderr and "Traceback" not in result.stderr
    missing = lint(tmp_path, "--baseline", "nowhere.json")
    assert missing.returncode == 2 and "nowhere.json" in missing.stderr


def test_a_count_no_json_reader_agrees_on_is_a_usage_error_naming_the_line(tmp_path: Path) -> None:
    (tmp_path / "serving.properties").write_text(CONFIG)
    assert lint(tmp_path, "--write-baseline", "baseline.json").returncode == 0
    baseline = tmp_path / "baseline.json"
    text = baseline.read_text().replace('"count": 1', '"count": 1e400', 1)
    baseline.write_text(text)
    result = lint(tmp_path, "--baseline", "baseline.json")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "baseline.json:9: the number 1e400" in result.stderr and baseline.read_text() == text
