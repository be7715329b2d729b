"""SARIF locations name the files lmi-config read (issue 33): each ``artifactLocation.uri`` is an
RFC 3986 reference, relative to ``%SRCROOT%`` (the directory it ran in, given in
``originalUriBaseIds``) and percent-encoded per segment, so that GitHub code scanning puts an
alert on ``c#1/serving.properties`` and not on ``c`` (``#`` starts a fragment), on
``%41.properties`` and not on ``A.properties``; a file outside the directory is an absolute
``file://`` URI. Results and fixes alike.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import run_cli, sarif_file

# a key one letter off a known option: a finding with a fix on line 2 of every file
TYPO = "option.model_id=Qwen/Qwen2.5-7B-Instruct\noption.max_rolling_batch_sise=8\n"
HOSTILE_NAMES = [
    "c#1/serving.properties",  # a fragment
    "%41.properties",  # a percent-escape of A
    "a b.properties",  # a blank
    "é.properties",  # non-ASCII
    "q?x.properties",  # a query
    "c:x.properties",  # a scheme, in a relative reference's first segment
    "semi;colon+plus&at@.properties",
    "d%2Fe/serving.properties",  # an encoded slash is not a slash
]


def _locations(document: dict[str, object]) -> list[tuple[dict[str, object], dict[str, str]]]:
    """Every (run, artifactLocation) of the document: each result's and each of its fixes'."""
    found = []
    for run in document["runs"]:  # type: ignore[attr-defined]
        for result in run["results"]:
            for location in result["locations"]:
                found.append((run, location["physicalLocation"]["artifactLocation"]))
            for fix in result.get("fixes", []):
                for change in fix["artifactChanges"]:
                    found.append((run, change["artifactLocation"]))
    return found


def _lint_sarif(*paths: str, cwd: Path) -> dict[str, object]:
    result = run_cli("lint", *paths, "--format", "sarif", cwd=cwd)
    assert result.returncode in (0, 1), result.stderr  # the typo is a warning
    return json.loads(result.stdout)


def test_sarif_uris_resolved_against_their_base_give_back_the_exact_files(tmp_path: Path) -> None:
    repository = tmp_path / "repo"
    for name in HOSTILE_NAMES:
        (repository / name).parent.mkdir(parents=True, exist_ok=True)
        (repository / name).write_text(TYPO)
    document = _lint_sarif(".", cwd=repository)
    (run,) = document["runs"]  # type: ignore[misc]
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": repository.as_uri() + "/"}}
    locations = _locations(document)
    assert all(location.get("uriBaseId") == "%SRCROOT%" for _, location in locations)
    resolved = {sarif_file(run, location) for run, location in locations}
    assert resolved == {repository / name for name in HOSTILE_NAMES}
    # a fix edits the file its result is about
    fixed = [result for result in run["results"] if result.get("fixes")]
    assert len(fixed) >= len(HOSTILE_NAMES)
    for result in fixed:
        where = result["locations"][0]["physicalLocation"]["artifactLocation"]
        assert all(change["artifactLocation"] == where for change in result["fixes"][0]["artifactChanges"])


def test_a_file_outside_the_directory_is_an_absolute_file_uri(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere #2" / "%41 é.properties"
    outside.parent.mkdir()
    outside.write_text(TYPO)
    here = tmp_path / "work"
    here.mkdir()
    for named in (str(outside), os.path.join("..", "elsewhere #2", "%41 é.properties")):
        document = _lint_sarif(named, cwd=here)
        locations = _locations(document)
        assert locations and all("uriBaseId" not in location for _, location in locations)
        assert all(location["uri"].startswith("file:///") for _, location in locations)
        assert {sarif_file(run, location) for run, location in locations} == {outside}


def test_a_path_inside_the_directory_given_absolute_or_with_dots_is_relative_to_it(tmp_path: Path) -> None:
    inside = tmp_path / "deploy" / "a b" / "serving.properties"
    inside.parent.mkdir(parents=True)
    inside.write_text(TYPO)
    for named in (str(inside), "./deploy/x/../a b/serving.properties"):
        (tmp_path / "deploy" / "x").mkdir(exist_ok=True)
        document = _lint_sarif(named, cwd=tmp_path)
        locations = _locations(document)
        assert {location["uri"] for _, location in locations} == {"deploy/a%20b/serving.properties"}
        assert {sarif_file(run, location) for run, location in locations} == {inside}


@pytest.mark.parametrize("name", ["serving.properties", "a b.properties"])
def test_text_json_and_github_still_name_the_path_as_given(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text(TYPO)
    document = json.loads(run_cli("lint", name, "--format", "json", cwd=tmp_path).stdout)
    assert {finding["path"] for finding in document["findings"]} == {name}
