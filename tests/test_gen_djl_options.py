"""scripts/gen_djl_options.py on a small git repository built from tests/fixtures/djl_options.

The fixture holds two made-up release branches: release_a (0.28.0-dlc) and release_b (0.29.0-dlc,
also master). The generator must read them with git, find the fields, validators, messages,
handlers and recommender defaults, and merge what is identical into one range.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lmi_config.knowledge.djl_properties import DjlCatalogue
from lmi_config.knowledge.schemas import schema_for

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "gen_djl_options.py"
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "djl_options"
PROPERTIES = "engines/python/setup/djl_python/properties_manager/properties.py"
GIT_ENVIRONMENT = {
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repository: Path, *arguments: str) -> str:
    environment = {**os.environ, **GIT_ENVIRONMENT}
    return subprocess.run(
        ["git", "-C", str(repository), *arguments],
        check=True,
        capture_output=True,
        text=True,
        env=environment,
    ).stdout.strip()


def commit_tree(repository: Path, source: Path, branch: str) -> str:
    """Replace the work tree with ``source`` and commit it on a new branch."""
    git(repository, "checkout", "-q", "--orphan", branch)
    for child in repository.iterdir():
        if child.name != ".git":
            shutil.rmtree(child)
    shutil.copytree(source, repository, dirs_exist_ok=True)
    git(repository, "add", "-A")
    git(repository, "commit", "-qm", f"{branch} from {source.name}")
    return git(repository, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def fixture_repository(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    repository = tmp_path_factory.mktemp("djl-serving")
    git(repository, "init", "-q")
    commits = {
        "0.24.0-dlc": commit_tree(repository, FIXTURE / "release_a", "0.24.0-dlc"),
        "feature-x": commit_tree(repository, FIXTURE / "release_a", "feature-x"),
        "0.28.0-dlc": commit_tree(repository, FIXTURE / "release_a", "0.28.0-dlc"),
        "0.29.0-dlc": commit_tree(repository, FIXTURE / "release_b", "0.29.0-dlc"),
        "master": commit_tree(repository, FIXTURE / "release_b", "master"),
    }
    releases = tmp_path_factory.mktemp("data") / "releases.json"
    releases.write_text(
        json.dumps({"releases": [{"djl": "0.28.0", "lmi": "10"}, {"djl": "0.29.0", "lmi": "11"}]}),
        encoding="utf-8",
    )
    output = releases.parent / "djl_properties.json"
    run = run_generator(repository, releases, output)
    assert run.returncode == 0, run.stderr
    return {
        "repository": repository,
        "commits": commits,
        "releases": releases,
        "document": json.loads(output.read_text()),
    }


def run_generator(
    repository: Path, releases: Path, output: Path, seed: str = "0"
) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        str(SCRIPT),
        str(repository),
        "--releases",
        str(releases),
        "--output",
        str(output),
    ]
    return subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": seed})


def entries(document: dict[str, Any], kind: str, **match: Any) -> list[dict[str, Any]]:
    return [entry for entry in document[kind] if all(entry.get(key) == value for key, value in match.items())]


def only(document: dict[str, Any], kind: str, **match: Any) -> dict[str, Any]:
    found = entries(document, kind, **match)
    assert len(found) == 1, found
    return found[0]


def test_release_branches_are_mapped_to_djl_and_lmi_and_others_are_skipped(
    fixture_repository: dict[str, Any],
) -> None:
    releases = fixture_repository["document"]["releases"]
    assert [(r["branch"], r["djl"], r["lmi"]) for r in releases] == [
        ("0.28.0-dlc", "0.28.0", "10"),
        ("0.29.0-dlc", "0.29.0", "11"),
        ("master", None, None),
    ]
    assert [r["commit"] for r in releases] == [fixture_repository["commits"][r["branch"]] for r in releases]


def test_an_identical_field_is_one_entry_over_its_whole_range(fixture_repository: dict[str, Any]) -> None:
    batch = only(
        fixture_repository["document"], "fields", **{"class": "BaseProperties", "field": "batch_size"}
    )
    assert (batch["first"], batch["last"], batch["annotation"], batch["default"]) == (
        "0.28.0-dlc",
        "master",
        "int",
        1,
    )


def test_a_changed_field_splits_into_ranges_and_a_new_one_starts_where_it_appears(
    fixture_repository: dict[str, Any],
) -> None:
    document = fixture_repository["document"]
    size = entries(document, "fields", **{"class": "EngineProperties", "field": "size_gb"})
    assert [(e["annotation"], e["default"], e["first"], e["last"]) for e in size] == [
        ("Optional[int]", 0, "0.28.0-dlc", "0.28.0-dlc"),
        ("float", 0.0, "0.29.0-dlc", "master"),
    ]
    cluster = only(document, "fields", field="cluster_size")
    assert (cluster["first"], cluster["last"]) == ("0.29.0-dlc", "master")


def test_enum_literal_alias_and_extra_policy_are_read(fixture_repository: dict[str, Any]) -> None:
    document = fixture_repository["document"]
    mode = only(document, "fields", field="mode")
    assert (mode["allowed"], mode["default"]) == (["fast", "slow", "off"], "off")
    assert only(document, "fields", field="layout")["allowed"] == ["row", "column"]
    assert only(document, "fields", field="renamed")["alias"] == "other_name"
    engine = only(document, "classes", **{"class": "EngineProperties"})
    base = only(document, "classes", **{"class": "BaseProperties"})
    assert (engine["extra"], engine["populate_by_name"], base["extra"]) == ("allow", True, "ignore")
    assert only(document, "extra_keys", key="threads")["conversion"] == "int"


def test_a_validator_records_what_it_reads_and_the_containers_message(
    fixture_repository: dict[str, Any],
) -> None:
    check = only(fixture_repository["document"], "validators", name="check_batch")
    assert check["reads"] == ["batch_size", "mode"]
    [outcome] = check["outcomes"]
    assert outcome["kind"] == "error"
    assert outcome["message"] == "Batching and a mode cannot be used together"
    assert outcome["when"][0] == "batch_size > 1"


def test_a_helper_functions_check_is_followed_to_the_field_it_is_given(
    fixture_repository: dict[str, Any],
) -> None:
    [outcome] = only(fixture_repository["document"], "validators", name="check_precision")["outcomes"]
    assert outcome["via"] == "parse_precision"
    assert outcome["subject"] == "precision"
    assert outcome["allowed_values"] == ["fp16", "fp32"]
    assert outcome["case_insensitive"] is True  # called with self.precision.lower()
    assert outcome["message"] == "Unknown precision: {precision}"


def test_a_coercion_records_the_value_it_becomes_and_the_rendered_warning(
    fixture_repository: dict[str, Any],
) -> None:
    coerce = only(fixture_repository["document"], "validators", name="coerce_mode")
    assert (coerce["first"], coerce["last"], coerce["mode"]) == ("0.28.0-dlc", "0.28.0-dlc", "before")
    [outcome] = coerce["outcomes"]
    assert outcome["kind"] == "coercion"
    assert outcome["coerces_to"] == "fast"
    assert outcome["allowed_values"] == ["fast", "off", "slow"]
    assert outcome["message"] == "engine supports modes ['fast', 'slow'], using fast"


def test_handler_modules_and_the_classes_they_build(fixture_repository: dict[str, Any]) -> None:
    document = fixture_repository["document"]
    handler = only(document, "modules", module="djl_python.my_handler")
    assert (handler["handler"], handler["instantiates"], handler["first"]) == (
        True,
        ["EngineProperties"],
        "0.28.0-dlc",
    )
    assert only(document, "modules", module="djl_python.async_service")["first"] == "0.29.0-dlc"
    assert not entries(document, "modules", module="djl_python.tests.echo_handler")


def test_recommender_defaults_come_only_from_tests_it_can_read(fixture_repository: dict[str, Any]) -> None:
    defaults = {
        (entry["rolling_batch"], entry["first"], entry["last"]): entry["value"]
        for entry in entries(
            fixture_repository["document"], "recommender_defaults", key="option.max_rolling_batch_size"
        )
    }
    # release_a: 32 unless vllm / lmi-dist (256) or trtllm (128); release_b adds an else (64), so
    # the declared 32 no longer holds for "any other" and is not recorded there
    assert defaults == {
        ("*", "0.28.0-dlc", "0.28.0-dlc"): 32,
        ("vllm", "0.28.0-dlc", "master"): 256,
        ("lmi-dist", "0.28.0-dlc", "master"): 256,
        ("trtllm", "0.28.0-dlc", "master"): 128,
    }
    mpi = only(fixture_repository["document"], "recommender_defaults", key="option.mpi_mode")
    assert (mpi["rolling_batch"], mpi["value"]) == ("trtllm", "true")


def test_java_comments_and_strings_are_not_read_as_code(fixture_repository: dict[str, Any]) -> None:
    method = entries(fixture_repository["document"], "recommender", method="setRollingBatchSize")[0]
    variables = {item["variable"] for item in method["assignments"]}
    assert variables == {"rollingBatchSize"}
    size_128 = next(item for item in method["assignments"] if item["value"] == 128)
    assert size_128["when"] == [
        '!("vllm".equals(rollingBatch) || "lmi-dist".equals(rollingBatch))',
        '"trtllm".equals(rollingBatch)',
    ]
    mpi = entries(fixture_repository["document"], "recommender", method="setMpiMode")[0]
    assert mpi["environment"] == [{"name": "TENSOR_PARALLEL_DEGREE", "default": "max", "when": []}]
    assert mpi["reads"][0]["default"] == "auto"


def test_every_source_is_the_line_at_the_first_branchs_commit(fixture_repository: dict[str, Any]) -> None:
    batch = only(fixture_repository["document"], "fields", field="batch_size")
    commit = fixture_repository["commits"]["0.28.0-dlc"]
    prefix = f"https://github.com/deepjavalibrary/djl-serving/blob/{commit}/{PROPERTIES}#L"
    assert batch["source"].startswith(prefix)
    line = int(batch["source"].removeprefix(prefix))
    text = git(fixture_repository["repository"], "show", f"{commit}:{PROPERTIES}")
    assert text.splitlines()[line - 1].strip() == "batch_size: int = 1"


def test_the_output_loads_with_the_typed_loader_and_answers_per_branch(
    fixture_repository: dict[str, Any],
) -> None:
    schema_for("djl_properties.json").model_validate(fixture_repository["document"])
    catalogue = DjlCatalogue(fixture_repository["document"])
    assert "batch_size" in catalogue.fields_of("EngineProperties", "0.29.0-dlc")  # inherited
    # on release_a a `before` validator coerces unknown modes, so nothing is rejected
    assert catalogue.accepted_values("EngineProperties", "mode", "0.28.0-dlc") == (None, False)
    assert catalogue.accepted_values("EngineProperties", "mode", "0.29.0-dlc") == (
        frozenset({"fast", "slow", "off"}),
        False,
    )
    assert catalogue.accepted_values("BaseProperties", "precision", "master") == (
        frozenset({"fp16", "fp32"}),
        True,
    )


def test_output_is_the_same_bytes_in_another_process_with_another_hash_seed(
    fixture_repository: dict[str, Any], tmp_path: Path
) -> None:
    outputs = []
    for seed in ("1", "4242"):
        output = tmp_path / f"out-{seed}.json"
        run = run_generator(fixture_repository["repository"], fixture_repository["releases"], output, seed)
        assert run.returncode == 0, run.stderr
        outputs.append(output.read_bytes())
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[0]) == fixture_repository["document"]


def test_a_path_that_is_not_a_git_repository_is_a_clear_error(tmp_path: Path) -> None:
    run = run_generator(tmp_path, ROOT / "lmi_config/data/releases.json", tmp_path / "out.json")
    assert run.returncode == 2
    assert "git failed on" in run.stderr
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "out.json").exists()
