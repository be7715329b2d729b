"""CI wiring: lint reads only files that are LMI configurations by their content, says once what it
skipped and what it assumed, the pre-commit hook offers it every file it reads, and GitLab gets a
Code Quality report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from conftest import ROOT, run_cli

CLEAN = "option.model_id=Qwen/Qwen2.5-1.5B-Instruct\noption.rolling_batch=vllm\n"
BAD_TP = (
    "option.model_id=Qwen/Qwen2.5-7B-Instruct\noption.rolling_batch=vllm\noption.tensor_parallel_degree=3\n"
)
PINNED = ("--backend", "vllm", "--lmi-version", "0.30.0")


def _repository(root: Path) -> None:
    """A repository as CI sees it: one LMI configuration among files that only share its names."""
    (root / "src" / "main" / "resources").mkdir(parents=True)
    (root / "src" / "main" / "resources" / "log4j.properties").write_text(
        "log4j.rootLogger=INFO, stdout\nlog4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
    )
    (root / "src" / "main" / "resources" / "application.properties").write_text("server.port=8080\n")
    (root / "web").mkdir()
    (root / "web" / ".env").write_text("DATABASE_URL=postgres://db\nHF_TOKEN=hf_x\nDEBUG=1\n")
    (root / "web" / "package.json").write_text('{"name": "web", "dependencies": {"react": "19"}}\n')
    (root / "deploy").mkdir()
    (root / "deploy" / "serving.properties").write_text(CLEAN)
    (root / "deploy" / "model.env").write_text("OPTION_MAX_MODEL_LEN=4096\n")


def test_lint_of_a_repository_reads_only_lmi_configurations_and_passes_strict(tmp_path: Path) -> None:
    _repository(tmp_path)
    result = run_cli("lint", ".", "--strict", *PINNED, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "LMI101" not in result.stdout and "LMI202" not in result.stdout
    skipped = [line for line in result.stdout.splitlines() if "hold no LMI configuration" in line]
    assert len(skipped) == 1 and "skipped 3 file(s)" in skipped[0], result.stdout
    assert all(name in skipped[0] for name in ("log4j.properties", "application.properties", "web/.env"))
    assert "2 files checked: 0 errors, 0 warnings" in result.stdout  # serving.properties and model.env


def test_files_named_by_pre_commit_are_judged_by_content_too(tmp_path: Path) -> None:
    _repository(tmp_path)
    names = ["src/main/resources/log4j.properties", "web/.env", "web/package.json"]
    result = run_cli("lint", "--strict", "--force-exclude", *names, cwd=tmp_path)
    assert result.returncode == 0 and "0 files checked" in result.stdout, result.stdout
    assert "skipped 3 file(s)" in result.stdout
    # a broken LMI configuration is still one: its reader fails, but it names option keys
    (tmp_path / "broken.properties").write_text("option.model_id=x\\u12\n")
    broken = run_cli("lint", "broken.properties", cwd=tmp_path)
    assert broken.returncode == 1 and "LMI001" in broken.stdout


def test_a_misspelt_option_prefix_is_still_an_lmi_file(tmp_path: Path) -> None:
    (tmp_path / "model.properties").write_text("optoin.model_id=Qwen/Qwen2.5-1.5B-Instruct\n")
    result = run_cli("lint", str(tmp_path), *PINNED)
    assert "did you mean option.model_id" in result.stdout


def test_an_application_env_beside_serving_properties_is_not_read_as_the_containers(tmp_path: Path) -> None:
    (tmp_path / "serving.properties").write_text(CLEAN)
    (tmp_path / "app.env").write_text("DATABASE_URL=postgres://db\n")
    result = run_cli("lint", str(tmp_path), "--strict", *PINNED)
    assert result.returncode == 0, result.stdout
    assert "app.env" in result.stdout and "hold no LMI configuration" in result.stdout


def test_a_directory_run_says_each_assumption_once(tmp_path: Path) -> None:
    for index in range(6):
        (tmp_path / f"model{index}").mkdir()
        (tmp_path / f"model{index}" / "serving.properties").write_text(CLEAN)
    result = run_cli("lint", str(tmp_path))
    assumed = [line for line in result.stdout.splitlines() if "assumed" in line]
    assert len(assumed) == 1, assumed
    assert assumed[0].startswith("note: 6 files (") and "and 3 more" in assumed[0]


def test_the_pre_commit_hooks_offer_lint_every_kind_of_file_it_reads() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    for hook in hooks:
        pattern = re.compile(hook["files"])
        for name in ("serving.properties", "deploy/model.env", ".env", "sagemaker/environment.json"):
            assert pattern.search(name), (hook["id"], name)
        assert not pattern.search("deploy/model.yaml")


def test_gitlab_code_quality_report(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "serving.properties").write_text(BAD_TP)
    (tmp_path / "b.properties").write_text(BAD_TP)
    result = run_cli("lint", ".", "--format", "gitlab", *PINNED, cwd=tmp_path)
    assert result.returncode == 1
    issues = json.loads(result.stdout)
    assert isinstance(issues, list) and len(issues) >= 4
    for issue in issues:
        assert set(issue) == {"description", "check_name", "fingerprint", "severity", "location"}
        assert issue["severity"] in {"info", "minor", "major", "critical", "blocker"}
        assert issue["location"]["path"] in {"a/serving.properties", "b.properties"}
        assert issue["location"]["lines"]["begin"] >= 1
    assert len({issue["fingerprint"] for issue in issues}) == len(issues)
    tp = [issue for issue in issues if issue["check_name"].startswith("LMI305")]
    assert {issue["severity"] for issue in tp} == {"major"} and len(tp) == 2


def test_broken_json_is_reported_when_it_says_it_is_an_environment_and_skipped_otherwise(
    tmp_path: Path,
) -> None:
    (tmp_path / "tsconfig.json").write_text('{\n  // comments are not JSON\n  "compilerOptions": {}\n}\n')
    (tmp_path / "environment.json").write_text("[1, 2]\n")
    skipped = run_cli("lint", "--strict", "tsconfig.json", cwd=tmp_path)
    assert skipped.returncode == 0 and "skipped 1 file(s)" in skipped.stdout, skipped.stdout
    reported = run_cli("lint", "environment.json", cwd=tmp_path)
    assert reported.returncode == 1 and "not a JSON array" in reported.stdout


def test_plan_with_the_cache_config_on_standard_output_prints_one_json_document() -> None:
    for output_format in ("text", "json"):
        result = run_cli(
            "plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--family", "inf2", "--cache-config", "-",
            "--format", output_format,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        document = json.loads(result.stdout)  # the cache entries alone
        assert isinstance(document, dict | list) and document
        assert "TP" in result.stderr or "candidates" in result.stderr  # the plan went to stderr
