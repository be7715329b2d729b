"""``lmi-config search`` given paths and files it cannot use (issue 16): ``-o`` naming a directory,
a FIFO or a device; ``--work-dir`` naming a file; results and journals with numbers no JSON reader
agrees on; a symlinked results file; a model directory named ``--help``; an export that vanishes.
Each is exit 2 with the file named and nothing recorded, or works as it should, through the real
CLI with the fake Neuron machine of ``test_search_processes``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import test_hostile_inputs
from test_hostile_inputs import LLAMA_CONFIG, assert_refused, run, settle, write
from test_search_processes import INSTANCE, SMALL, Machine

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="the process checks read /proc (Linux)")
untouched = test_hostile_inputs.untouched  # the fixture: files there before a run stay as they were
SEARCH = ("search", "--model", SMALL, "--instance", INSTANCE)


def _refused(result: subprocess.CompletedProcess[str], *mentions: str) -> None:
    assert_refused(test_hostile_inputs.Run(result.returncode, result.stdout, result.stderr), 2, *mentions)


# --- paths refused before anything runs ----------------------------------------------------------


def test_output_naming_a_directory_is_refused(untouched: Path) -> None:
    settle(untouched)
    assert_refused(run(*SEARCH, "-o", ".", cwd=untouched), 2, "--output .", "is a directory")


def test_output_naming_a_fifo_is_refused_at_once(untouched: Path) -> None:
    os.mkfifo(untouched / "results.json")
    settle(untouched)
    result = run(*SEARCH, "-o", "results.json", cwd=untouched, timeout=20)
    assert_refused(result, 2, "results.json", "not a regular file")
    assert sorted(path.name for path in untouched.iterdir()) == ["results.json"]


def test_output_naming_an_endless_device_is_refused(untouched: Path) -> None:
    result = run(*SEARCH, "-o", "/dev/zero", cwd=untouched, memory_bytes=512 * 1024 * 1024, timeout=20)
    assert_refused(result, 2, "/dev/zero", "not a regular file")
    assert not Path("/dev/zero.lock").exists() and not Path("/dev/zero.journal.json").exists()


@pytest.mark.parametrize(
    ("work_dir", "problem"),
    [
        ("a-file", "a-file is not a directory"),
        ("a-file/exports", "a-file is not a directory"),
        ("a-file/deeper/exports", "a-file/deeper lies under a file"),
        ("missing/exports", "the directory missing does not exist"),
    ],
)
def test_a_work_dir_naming_a_file_or_in_no_directory_is_refused(
    untouched: Path, work_dir: str, problem: str
) -> None:
    write(untouched / "a-file", "not a directory\n")
    settle(untouched)
    result = run(*SEARCH, "--work-dir", work_dir, cwd=untouched)
    assert_refused(result, 2, f"--work-dir {work_dir}", problem)
    assert sorted(path.name for path in untouched.iterdir()) == ["a-file"]  # nothing created


@pytest.mark.parametrize(
    ("output", "problem"),
    [
        ("missing/results.json", "the directory missing does not exist"),
        ("a-file/results.json", "a-file is not"),
        ("results.lock", "the search's own lock file"),  # <stem>.lock: its pid would overwrite the results
    ],
)
def test_results_in_no_directory_are_refused_before_anything_runs(
    untouched: Path, output: str, problem: str
) -> None:
    write(untouched / "a-file", "not a directory\n")
    settle(untouched)
    assert_refused(run(*SEARCH, "-o", output, cwd=untouched), 2, f"--output {output}", problem)
    assert sorted(path.name for path in untouched.iterdir()) == ["a-file"]


# --- files read while the search holds its lock ----------------------------------------------------


@pytest.mark.parametrize(
    ("which", "number", "why"),
    [
        ("results", "1e400", "not finite"),
        ("results", "9" * 5000, "too large"),
        ("journal", "9" * 5000, "too large"),
        ("journal", "NaN", "not JSON"),
    ],
)
def test_numbers_in_results_and_journal_are_refused_naming_the_file(
    tmp_path: Path, which: str, number: str, why: str
) -> None:
    machine = Machine(tmp_path, model=SMALL)
    path = machine.results if which == "results" else machine.journal
    text = (
        '{"other/model": [{"batch_size": ' + number + "}]}\n"
        if which == "results"
        else '{"format": 1,\n "entries": [{"batch_size": ' + number + "}]}\n"
    )
    path.write_text(text)
    result = machine.run()
    _refused(result, f"{path.name}:", why)
    assert path.read_text() == text and machine.events() == []


def test_a_fifo_where_the_journal_goes_is_refused_at_once(tmp_path: Path) -> None:
    machine = Machine(tmp_path, model=SMALL)
    os.mkfifo(machine.journal)
    _refused(machine.run(), "results.journal.json", "not a regular file")
    assert machine.events() == []


def test_results_are_written_as_standard_json_only() -> None:
    from lmi_config.errors import OutputError
    from lmi_config.search import cache_config

    # never Infinity or NaN in a file: refused, naming where it is
    with pytest.raises(OutputError, match=r"\$\.m\[0\]\.ratio is not a finite number"):
        cache_config.dump({"m": [{"batch_size": 1, "ratio": float("inf")}]})


def test_a_symlinked_results_file_is_written_through(tmp_path: Path) -> None:
    machine = Machine(tmp_path, model=SMALL)
    real = tmp_path / "kept" / "real.json"
    real.parent.mkdir()
    real.write_text(json.dumps({"other/model": [{"batch_size": 1}]}))
    machine.results.symlink_to(real)
    result = machine.run()
    assert result.returncode == 0, result.stderr
    assert machine.results.is_symlink() and machine.results.resolve() == real
    found = json.loads(real.read_text())
    assert found["other/model"] == [{"batch_size": 1}] and found[SMALL]
    assert (real.parent / "real.lock").exists()  # the side files sit beside the real file
    assert not (tmp_path / "results.lock").exists()


# --- the exporter's arguments and its output ----------------------------------------------------


def test_a_model_directory_named_like_an_option_reaches_the_exporter_as_a_value(tmp_path: Path) -> None:
    machine = Machine(tmp_path, model=SMALL)
    machine.trials = {}  # every trial fits (the fake machine's default)
    machine.table.write_text(json.dumps({"trials": {}, "invocations": str(machine.invocations)}))
    config = {**LLAMA_CONFIG, "max_position_embeddings": 4096, "torch_dtype": "bfloat16"}
    write(tmp_path / "--help" / "config.json", json.dumps(config))
    command = machine.command("--strategy", "seed", "--keep-artifacts")
    command[command.index("--model") : command.index("--model") + 2] = ["--model=--help"]
    result = subprocess.run(
        command, cwd=tmp_path, env=machine.environment(), capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    found = json.loads(machine.results.read_text())["--help"]
    assert found and all(entry["provenance"] == "exported-and-loaded" for entry in found)
    exported = [json.loads(path.read_text()) for path in machine.work.rglob("fake.json")]
    assert len(exported) == len(machine.exports()) > 0
    assert {entry["model"] for entry in exported} == {"--help"}  # a value, not the exporter's --help


@pytest.mark.parametrize(
    ("behaviour", "step"), [({"export": "nothing"}, "export"), ({"load": "vanish"}, "load")]
)
def test_a_missing_export_stops_the_search_without_journaling_the_configuration(
    tmp_path: Path, behaviour: dict, step: str
) -> None:
    machine = Machine(tmp_path, model=SMALL, **{"2_128_16384": behaviour})
    first = machine.run("--strategy", "seed")
    _refused(first, "no exported model for TP 2, batch 128, 16384 tokens", "not recorded")
    assert machine.recorded() == set() and not machine.journal.exists()
    machine.trials["2,128,16384"] = {}
    machine.table.write_text(json.dumps({"trials": machine.trials, "invocations": str(machine.invocations)}))
    again = machine.run("--strategy", "seed")
    assert again.returncode == 0, again.stderr
    assert (2, 128, 16384) in machine.valid()  # tried again, and valid
    assert machine.exports().count((2, 128, 16384)) == 2


@pytest.mark.parametrize("detect", [False, True])
def test_a_python_that_never_stops_printing_is_stopped_not_read_to_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, detect: bool
) -> None:
    machine = Machine(tmp_path, model=SMALL)
    for name in ("FAKE_NEURON_TABLE", "PYTHONPATH"):
        monkeypatch.setenv(name, machine.environment()[name])
    flood = tmp_path / "flood"
    flood.write_text("#!/bin/sh\nexec yes 'a line, again and again'\n")  # whatever it is asked
    flood.chmod(0o755)
    arguments = machine.command("--python", str(flood), instance=not detect)[3:]  # not "python -m lmi_config"
    result = run(*arguments, cwd=tmp_path, memory_bytes=512 * 1024 * 1024, timeout=60)
    expected = f"{flood} printed more than" if detect else f"--python '{flood}' printed more than"
    assert_refused(result, 2, expected)
    assert machine.events() == []
