"""``plan --cache-config FILE`` on files that are not plain cache configs (issue 16): a FIFO, an
endless device, numbers no JSON reader agrees on, a directory, a symlink. Each run goes through
the real CLI in a fresh process with a time and memory limit; a refusal is exit 2 with the file
named (and the line where there is one), and every file that was there is left as it was."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import test_hostile_inputs
from test_hostile_inputs import assert_refused, run, settle, write

untouched = test_hostile_inputs.untouched  # the fixture: files there before a run stay as they were

MISTRAL = "mistralai/Mistral-7B-Instruct-v0.2"
PLAN = ("plan", "--model", MISTRAL, "--instance", "inf2.8xlarge", "--cache-config")


def test_a_fifo_as_cache_config_is_refused_at_once(untouched: Path) -> None:
    os.mkfifo(untouched / "cache.json")
    settle(untouched)
    result = run(*PLAN, "cache.json", cwd=untouched, timeout=20)
    assert_refused(result, 2, "cache.json", "FIFO", "regular file")
    assert sorted(path.name for path in untouched.iterdir()) == ["cache.json"]  # no lock beside it


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_an_endless_device_as_cache_config_is_refused_naming_it(untouched: Path, device: str) -> None:
    result = run(*PLAN, device, cwd=untouched, memory_bytes=512 * 1024 * 1024, timeout=20)
    assert_refused(result, 2, device, "character device")
    assert not Path(device + ".lock").exists()


def test_a_directory_as_cache_config_is_refused(untouched: Path) -> None:
    (untouched / "cache.json").mkdir()
    settle(untouched)
    assert_refused(run(*PLAN, "cache.json", cwd=untouched), 2, "cache.json", "is a directory")


@pytest.mark.parametrize(
    ("number", "why"),
    [
        ("1e400", "not finite"),
        ("-1e400", "not finite"),
        ("NaN", "not JSON"),
        ("Infinity", "not JSON"),
        ("9" * 5000, "too large"),
        (str(2**64), "too large"),
    ],
)
def test_numbers_no_json_reader_agrees_on_are_refused_with_the_file_and_line(
    untouched: Path, number: str, why: str
) -> None:
    write(untouched / "cache.json", '{\n  "other/model": [\n    {"batch_size": ' + number + "}\n  ]\n}\n")
    settle(untouched)
    result = run(*PLAN, "cache.json", cwd=untouched)
    assert_refused(result, 2, "cache.json:3:", why)


def test_what_plan_writes_is_standard_json_and_marks_its_entries_predicted(untouched: Path) -> None:
    write(untouched / "cache.json", json.dumps({"other/model": [{"batch_size": 1, "ratio": 0.5}]}))
    result = run(*PLAN, "cache.json", cwd=untouched)
    assert result.returncode == 0, result.stderr
    text = (untouched / "cache.json").read_text()
    merged = json.loads(text, parse_constant=lambda token: pytest.fail(f"non-standard JSON {token}"))
    assert merged["other/model"] == [{"batch_size": 1, "ratio": 0.5}]
    assert merged[MISTRAL] and {entry["provenance"] for entry in merged[MISTRAL]} == {"predicted"}


def test_a_symlinked_cache_config_is_written_through(untouched: Path) -> None:
    target = write(untouched / "real" / "cache.json", json.dumps({"other/model": [{"batch_size": 1}]}))
    (untouched / "link.json").symlink_to("real/cache.json")
    result = run(*PLAN, "link.json", cwd=untouched)
    assert result.returncode == 0, result.stderr
    assert (untouched / "link.json").is_symlink()  # still a link, to the same file
    merged = json.loads(target.read_text())
    assert set(merged) == {"other/model", MISTRAL}
    assert (untouched / "real" / "cache.json.lock").exists()  # one lock, beside the real file


def test_a_cache_config_in_a_missing_directory_is_refused(untouched: Path) -> None:
    result = run(*PLAN, "missing/cache.json", cwd=untouched)
    assert_refused(result, 2, "missing/cache.json", "does not exist")
    assert not (untouched / "missing").exists()


def test_dash_prints_the_entries_to_standard_output(untouched: Path) -> None:
    result = run(*PLAN, "-", cwd=untouched)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)  # standard output is the cache-config document alone
    assert document[MISTRAL] and not (untouched / "-").exists()


def test_a_model_listed_twice_is_refused_rather_than_half_kept(untouched: Path) -> None:
    """JSON readers keep the last of two values under one key: a rewrite would drop the first list."""
    write(
        untouched / "cache.json",
        '{\n  "other/model": [{"batch_size": 1}],\n  "other/model": [{"batch_size": 2}]\n}\n',
    )
    settle(untouched)
    assert_refused(run(*PLAN, "cache.json", cwd=untouched), 2, "cache.json:3:", '"other/model" appears twice')
