"""Project settings as ruff and yamllint users expect them: .lmi-config.toml or [tool.lmi-config]
in pyproject.toml, found upwards from the current directory; flags win over the file."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import ROOT, run_cli

TYPO = "option.model_id=gpt2\noption.rolling_batch=vllm\noption.max_rolling_batch_szie=32\n"
INF2 = (
    "option.model_id=mistralai/Mistral-7B-Instruct-v0.2\noption.entryPoint=djl_python.transformers_neuronx\n"
    "option.tensor_parallel_degree=1\noption.n_positions=4096\noption.max_rolling_batch_size=1\n"
)


def _codes(result) -> list[str]:
    return [finding["code"] for finding in json.loads(result.stdout)["findings"]]


def test_this_repository_lints_without_errors_with_its_own_settings() -> None:
    result = run_cli("lint", ".", cwd=ROOT)
    assert result.returncode == 0, result.stdout
    assert " 0 errors" in result.stdout
    assert "tests/fixtures" not in result.stdout  # the deliberately bad fixtures are excluded


def test_pyproject_table_selects_ignores_and_excludes(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.lmi-config]\nignore = ["unknown-option"]\nexclude = ["broken/*"]\n'
    )
    (tmp_path / "serving.properties").write_text(TYPO)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "serving.properties").write_text(TYPO)
    result = run_cli("lint", ".", "--format", "json", cwd=tmp_path)
    assert "LMI101" not in _codes(result)
    assert all("broken" not in finding["path"] for finding in json.loads(result.stdout)["findings"])
    assert json.loads(result.stdout)["summary"]["files"] == 1
    # flags win: --select replaces the file's selection, --isolated ignores the file
    assert "LMI101" in _codes(
        run_cli("lint", "serving.properties", "--isolated", "--format", "json", cwd=tmp_path)
    )


def test_dot_lmi_config_toml_wins_and_is_found_from_a_subdirectory(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.lmi-config]\nselect = ["LMI0"]\n')
    (tmp_path / ".lmi-config.toml").write_text('select = ["LMI1"]\n')
    sub = tmp_path / "deploy"
    sub.mkdir()
    (sub / "serving.properties").write_text(TYPO)
    codes = _codes(run_cli("lint", "serving.properties", "--format", "json", cwd=sub))
    assert codes and all(code.startswith("LMI1") for code in codes)


def test_per_path_defaults_give_the_instance_and_flags_override_them(tmp_path: Path) -> None:
    (tmp_path / ".lmi-config.toml").write_text(
        '[per-path."inf2/*"]\ninstance = "ml.inf2.8xlarge"\nlmi-version = "0.30.0"\n'
    )
    (tmp_path / "inf2").mkdir()
    (tmp_path / "inf2" / "serving.properties").write_text(INF2)
    (tmp_path / "other.properties").write_text(INF2)
    result = run_cli("lint", ".", "--format", "json", cwd=tmp_path)
    by_path = {}
    for finding in json.loads(result.stdout)["findings"]:
        by_path.setdefault(finding["path"], []).append(finding["rule"])
    assert "memory-exceeds-budget" in by_path["inf2/serving.properties"]  # judged on inf2.8xlarge
    assert "memory-exceeds-budget" not in by_path.get("other.properties", [])  # no instance there
    bigger = run_cli("lint", "inf2", "--instance", "ml.inf2.48xlarge", "--format", "json", cwd=tmp_path)
    assert "memory-exceeds-budget" in [f["rule"] for f in json.loads(bigger.stdout)["findings"]]


def test_exclude_flag_adds_to_the_settings(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "serving.properties").write_text(TYPO)
    (tmp_path / "b.properties").write_text(TYPO)
    result = run_cli("lint", ".", "--exclude", "a", "--format", "json", "--isolated", cwd=tmp_path)
    assert json.loads(result.stdout)["summary"]["files"] == 1


def test_a_broken_settings_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "serving.properties").write_text(TYPO)
    (tmp_path / ".lmi-config.toml").write_text("select = [\n")
    result = run_cli("lint", "serving.properties", cwd=tmp_path)
    assert result.returncode == 2 and ".lmi-config.toml: not valid TOML" in result.stderr
    (tmp_path / ".lmi-config.toml").write_text('selct = ["LMI1"]\n')
    result = run_cli("lint", "serving.properties", cwd=tmp_path)
    assert result.returncode == 2 and "unknown setting selct" in result.stderr
    (tmp_path / ".lmi-config.toml").write_text('ignore = ["no-such-rule"]\n')
    result = run_cli("lint", "serving.properties", cwd=tmp_path)
    assert result.returncode == 2 and "no-such-rule" in result.stderr
    assert "Traceback" not in result.stderr


def test_excluded_files_named_explicitly_are_linted_unless_force_exclude(tmp_path: Path) -> None:
    (tmp_path / ".lmi-config.toml").write_text('exclude = ["legacy"]\n')
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "serving.properties").write_text(TYPO)
    walked = run_cli("lint", ".", "--format", "json", cwd=tmp_path)
    assert json.loads(walked.stdout)["summary"]["files"] == 0 or "LMI101" not in _codes(walked)
    named = run_cli("lint", "legacy/serving.properties", "--format", "json", cwd=tmp_path)
    assert "LMI101" in _codes(named)  # as ruff: a file named on the command line is linted
    forced = run_cli("lint", "legacy/serving.properties", "--force-exclude", "--format", "json", cwd=tmp_path)
    assert "LMI101" not in _codes(forced)
