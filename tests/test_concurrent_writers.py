"""Several runs writing one file at once (issue 16): ``plan --cache-config`` runs, a search and a
plan, two searches of one model. Each writer reads, merges by entry identity and writes under the
file's lock, so nothing one of them added is lost, nothing is there twice, the file is valid JSON
after every write, and the "N new entries" each run prints add up to what the file holds. Only one
search at a time holds a results file, even after another search released it."""

from __future__ import annotations

import json
import multiprocessing
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_search_processes import MISTRAL, SMALL, Machine, _wait_for

from lmi_config.search import cache_config

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="the process checks read /proc (Linux)")
MODELS = (
    "Qwen/Qwen2.5-0.5B",
    "meta-llama/Llama-3.1-8B-Instruct",
    "Qwen/Qwen2.5-7B-Instruct",
    "mistralai/Mistral-7B-Instruct-v0.2",
    "meta-llama/Llama-3.2-1B",
)
ADDED = re.compile(r"\((\d+) new entr(?:ies|y), current format\)")


def _plan(model: str, cache: Path) -> list[str]:
    command = [sys.executable, "-m", "lmi_config", "plan", "--model", model, "--instance", "inf2.8xlarge"]
    return [*command, "--cache-config", str(cache)]


def _identities(entries: list[dict]) -> list[tuple]:
    return [cache_config.identity(entry) for entry in entries]


def test_plan_runs_at_once_lose_no_model_and_count_what_they_add(tmp_path: Path) -> None:
    alone = {}
    for model in MODELS:  # what each run writes on its own
        solo = tmp_path / f"solo-{model.replace('/', '_')}.json"
        subprocess.run(_plan(model, solo), check=True, capture_output=True, timeout=120)
        alone[model] = sorted(_identities(json.loads(solo.read_text())[model]))
    for attempt in range(4):
        cache = tmp_path / f"cache-{attempt}.json"
        # every model once, and the first model a second time: the two must not duplicate
        models = [*MODELS, MODELS[0]]
        runs = [
            subprocess.Popen(
                _plan(model, cache), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
            )
            for model in models
        ]
        printed = 0
        for run in runs:
            _, stderr = run.communicate(timeout=120)
            assert run.returncode == 0, stderr
            printed += int(ADDED.search(stderr).group(1))
        merged = json.loads(cache.read_text())  # fails the test when not valid JSON
        assert set(merged) == set(MODELS), f"attempt {attempt}: models lost"
        for model in MODELS:
            assert sorted(_identities(merged[model])) == alone[model], f"attempt {attempt}: {model}"
        assert printed == sum(len(entries) for entries in merged.values()), "the printed counts are not true"


def _merge_many(path: str, worker: int, rounds: int) -> int:
    added = 0
    for round_number in range(rounds):
        # neighbours overlap: worker w writes batches w and w+1 of every round
        entries = [
            cache_config.current_entry("text-generation", "trn1", 2, batch, 1024 * (1 + round_number))
            for batch in (worker, worker + 1)
        ]
        added += cache_config.merge_into_file(path, f"model-{round_number % 3}", entries)
    return added


def test_processes_merging_into_one_file_keep_every_entry_once(tmp_path: Path) -> None:
    cache = tmp_path / "cache.json"
    cache.write_text(json.dumps({"kept/model": [{"batch_size": 1, "note": "not ours"}]}))
    workers, rounds = 6, 25
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        added = pool.starmap(_merge_many, [(str(cache), worker, rounds) for worker in range(workers)])
    merged = json.loads(cache.read_text())
    assert merged["kept/model"] == [{"batch_size": 1, "note": "not ours"}]
    found = [
        identity
        for model, entries in merged.items()
        if model != "kept/model"
        for identity in _identities(entries)
    ]
    expected = {
        cache_config.identity(cache_config.current_entry("text-generation", "trn1", 2, batch, 1024 * (1 + r)))
        for r in range(rounds)
        for batch in range(workers + 1)
    }
    assert len(found) == len(set(found)) == len(expected) and set(found) == expected
    assert sum(added) == len(expected)  # each process's count of what it added is true


def test_plan_writing_a_running_searchs_results_file_loses_nothing(tmp_path: Path) -> None:
    slow = {key.replace(",", "_"): {"export_seconds": 0.2} for key in Machine(tmp_path / "probe").trials}
    machine = Machine(tmp_path / "search", **slow)
    search = machine.start("--strategy", "seed")
    _wait_for(lambda: bool(machine.exports()))
    for model in (SMALL, MISTRAL):
        planned = subprocess.run(_plan(model, machine.results), capture_output=True, text=True, timeout=120)
        assert planned.returncode == 0, planned.stderr
    assert search.wait(timeout=300) == 0, machine.stderr()
    merged = json.loads(machine.results.read_text())
    small = json.loads(machine.results.read_text())[SMALL]
    assert small and all(entry["provenance"] == "predicted" for entry in small)  # the other model is kept
    proven = {
        (entry["tensor_parallel_size"], entry["batch_size"], entry["sequence_length"])
        for entry in merged[MISTRAL]
        if entry["provenance"] == "exported-and-loaded"
    }
    assert machine.longest(proven) == machine.expected()
    assert proven <= set(machine.exports())  # proven means run here
    ids = _identities(merged[MISTRAL])
    assert len(ids) == len(set(ids))


def test_search_counts_only_what_it_exported_and_loaded_not_what_plan_predicted(tmp_path: Path) -> None:
    machine = Machine(tmp_path)
    planned = subprocess.run(_plan(MISTRAL, machine.results), capture_output=True, text=True, timeout=120)
    assert planned.returncode == 0, planned.stderr
    predicted = {
        (entry["tensor_parallel_size"], entry["batch_size"], entry["sequence_length"])
        for entry in json.loads(machine.results.read_text())[MISTRAL]
    }
    assert predicted
    result = machine.run()
    assert result.returncode == 0, result.stderr
    entries = json.loads(machine.results.read_text())[MISTRAL]
    proven = {
        (entry["tensor_parallel_size"], entry["batch_size"], entry["sequence_length"])
        for entry in entries
        if entry["provenance"] == "exported-and-loaded"
    }
    ran = set(machine.exports())
    assert proven <= ran and machine.longest(proven) == machine.expected()
    assert f"{len(proven)} valid configuration(s)" in result.stdout
    trials = int(re.search(r"this run: (\d+) trial", result.stdout).group(1))
    assert trials == len(ran) > 0
    # a prediction the search proved is marked so in place; the others stay predictions
    assert {
        (entry["tensor_parallel_size"], entry["batch_size"], entry["sequence_length"])
        for entry in entries
        if entry["provenance"] == "predicted"
    } == predicted - proven


def test_two_searches_of_one_model_with_different_results_keep_their_own_exports(tmp_path: Path) -> None:
    machine = Machine(tmp_path)
    other = tmp_path / "other.json"
    both = [machine.start("--strategy", "seed"), machine.start("--strategy", "seed", "--output", str(other))]
    for search in both:
        assert search.wait(timeout=300) == 0, machine.stderr()
    for results in (machine.results, other):
        entries = json.loads(results.read_text())[MISTRAL]
        found = {(e["tensor_parallel_size"], e["batch_size"], e["sequence_length"]) for e in entries}
        assert machine.longest(found) == machine.expected(), results
        journal = json.loads(results.with_name(results.stem + ".journal.json").read_text())["entries"]
        wrongly_failed = [
            entry
            for entry in journal
            if entry["outcome"] == "failed"
            and machine.fits((entry["tensor_parallel_size"], entry["batch_size"], entry["sequence_length"]))
        ]
        assert wrongly_failed == [], "a valid configuration was journaled as failed"
    assert not any(machine.work.iterdir())  # each search removed its own exports and directory


def test_a_second_search_is_refused_even_after_an_earlier_one_released_the_lock(tmp_path: Path) -> None:
    """The lock file is never deleted: a process that opened it before the first search ended must
    hold the same lock a later search asks for."""
    import fcntl

    machine = Machine(tmp_path, model=SMALL, **{"2_128_16384": {"export": "hang"}})
    first = machine.start("--strategy", "seed")
    _wait_for(lambda: bool(machine.exports()))
    lock = tmp_path / "results.lock"
    with open(lock, "a") as early:  # opened while the first search holds it
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=60) == 128 + signal.SIGTERM
        fcntl.flock(early, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the first released it: this one holds it now
        second = machine.run("--strategy", "seed", "--export-timeout", "1")
        assert second.returncode == 2 and "is writing these results" in second.stderr, second.stderr
    assert machine.alive() == []


def test_a_search_through_a_symlink_to_running_results_is_refused(tmp_path: Path) -> None:
    """Two names of one results file are one search's results: the lock sits beside the real file."""
    machine = Machine(tmp_path, model=SMALL, **{"2_128_16384": {"export": "hang"}})
    first = machine.start("--strategy", "seed")
    _wait_for(lambda: bool(machine.exports()))
    (tmp_path / "alias.json").symlink_to(machine.results.name)
    try:
        second = machine.run(
            "--strategy", "seed", "--export-timeout", "1", "--output", str(tmp_path / "alias.json")
        )
        assert second.returncode == 2 and "is writing these results" in second.stderr, second.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=60)
    assert machine.alive() == []
