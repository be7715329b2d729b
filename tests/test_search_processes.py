"""``lmi-config search`` with real processes: a fake exporter (tests/fixtures/search) stands in for
``optimum-cli export neuron`` and a fake ``optimum.neuron`` for the load step. They succeed or
fail by a hidden threshold — the judge's prediction off by a factor the search does not know —
some slowly, some by crashing, hanging or being killed. The tests kill the search (SIGKILL at
random moments, SIGINT, SIGTERM) and check what a user relies on: no result lost, no recorded
trial repeated, the results file valid JSON every time, no process left behind."""

from __future__ import annotations

import json
import os
import random
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURES
from shard_machines import truth

FAKE = FIXTURES / "search"
MISTRAL = "mistralai/Mistral-7B-Instruct-v0.2"
SMALL = "Qwen/Qwen2.5-0.5B"
INSTANCE = "inf2.8xlarge"
pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="the process checks read /proc (Linux)")


def _truth(model: str, factor: float) -> dict[str, dict]:
    """Per trial: fits when the judge's peak x factor is within the budget; a compile-time failure
    far over it, an out-of-memory load just over it (``shard_machines.truth`` on this file's instance)."""
    return truth(model, INSTANCE, factor)


class Machine:
    """A fake Neuron machine in a temporary directory: the table, the invocations, the search."""

    def __init__(self, tmp_path: Path, model: str = MISTRAL, factor: float = 0.9, **overrides: dict):
        tmp_path.mkdir(parents=True, exist_ok=True)
        self.tmp = tmp_path
        self.model = model
        self.trials = _truth(model, factor)
        for key, behaviour in overrides.items():
            self.trials[key.replace("_", ",")].update(behaviour)
        self.table = tmp_path / "table.json"
        self.invocations = tmp_path / "invocations.jsonl"
        self.results = tmp_path / "results.json"
        self.journal = tmp_path / "results.journal.json"
        self.work = tmp_path / "data"
        self.table.write_text(json.dumps({"trials": self.trials, "invocations": str(self.invocations)}))

    def fits(self, key: tuple[int, int, int]) -> bool:
        behaviour = self.trials[",".join(map(str, key))]
        return behaviour.get("export", "ok") == behaviour.get("load", "ok") == "ok"

    def environment(self, **extra: str) -> dict[str, str]:
        path = os.pathsep.join(filter(None, [str(FAKE / "site"), os.environ.get("PYTHONPATH")]))
        return {**os.environ, "FAKE_NEURON_TABLE": str(self.table), "PYTHONPATH": path, **extra}

    def command(self, *extra: str, instance: bool = True, exporter: bool = True) -> list[str]:
        command = [
            sys.executable,
            "-m",
            "lmi_config",
            "search",
            "--model",
            self.model,
            "--python",
            sys.executable,
        ]
        command += ["--work-dir", str(self.work), "--output", str(self.results), "--require-free-gib", "0"]
        if instance:
            command += ["--instance", INSTANCE]
        if exporter:
            command += [
                "--exporter",
                f"{shlex.quote(sys.executable)} {shlex.quote(str(FAKE / 'fake_optimum_cli.py'))}",
            ]
        return command + list(extra)

    def run(self, *extra: str, **options) -> subprocess.CompletedProcess[str]:
        environment = self.environment(**options.pop("environment", {}))
        return subprocess.run(
            self.command(*extra, **options), env=environment, capture_output=True, text=True, timeout=300
        )

    def start(self, *extra: str) -> subprocess.Popen[str]:
        """The search in the background; its progress goes to ``stderr.log``."""
        with open(self.tmp / "stderr.log", "a", encoding="utf-8") as log:
            return subprocess.Popen(
                self.command(*extra),
                env=self.environment(),
                stdout=subprocess.DEVNULL,
                stderr=log,
                text=True,
                start_new_session=True,
            )

    def stderr(self) -> str:
        return (self.tmp / "stderr.log").read_text(encoding="utf-8")

    def events(self) -> list[dict]:
        if not self.invocations.exists():
            return []
        return [json.loads(line) for line in self.invocations.read_text().splitlines() if line.strip()]

    def exports(self, since: int = 0) -> list[tuple[int, int, int]]:
        return [
            tuple(map(int, event["key"].split(",")))
            for event in self.events()[since:]
            if event["event"] == "export-start"
        ]

    def valid(self) -> set[tuple[int, int, int]]:
        if not self.results.exists():
            return set()
        data = json.loads(self.results.read_text())  # fails the test when not valid JSON
        return {
            (entry["tensor_parallel_size"], entry["batch_size"], entry["sequence_length"])
            for entry in data[self.model]
        }

    def recorded(self) -> set[tuple[int, int, int]]:
        """Every trial the results and the journal hold (successes and failures, not skips)."""
        failed = set()
        if self.journal.exists():
            for entry in json.loads(self.journal.read_text())["entries"]:
                if entry["outcome"] == "failed":
                    failed.add((entry["tensor_parallel_size"], entry["batch_size"], entry["sequence_length"]))
        return self.valid() | failed

    def longest(self, found: set[tuple[int, int, int]]) -> dict[tuple[int, int], int]:
        best: dict[tuple[int, int], int] = {}
        for tensor_parallel, batch, length in found:
            best[(tensor_parallel, batch)] = max(best.get((tensor_parallel, batch), 0), length)
        return best

    def expected(self) -> dict[tuple[int, int], int]:
        """The longest length that fits per (TP, batch), from the hidden table."""
        keys = {tuple(map(int, key.split(","))) for key in self.trials}
        return self.longest({key for key in keys if self.fits(key)})

    def alive(self) -> list[int]:
        """Fake processes (of this table) still running."""
        marker = f"FAKE_NEURON_TABLE={self.table}".encode()
        found = []
        for event in self.events():
            environ = Path(f"/proc/{event['pid']}/environ")
            try:
                if marker in environ.read_bytes().split(b"\0"):
                    found.append(event["pid"])
            except OSError:
                continue
        return sorted(set(found))


def _lock_is_free(path: Path) -> bool:
    import fcntl

    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
    return True


def _wait_for(condition, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def test_seed_search_finds_the_valid_configurations_and_resumes_without_repeating(tmp_path: Path) -> None:
    machine = Machine(
        tmp_path,
        **{
            "2_128_16384": {"export": "compiler-error"},
            "2_128_8192": {"export": "host-oom"},
            "2_64_16384": {"export": "crash"},
        },
    )
    first = machine.run("--strategy", "seed")
    assert first.returncode == 0, first.stderr
    assert machine.longest(machine.valid()) == machine.expected()
    exports = machine.exports()
    assert len(exports) == len(set(exports))
    assert "trial 1 of at most" in first.stderr and "elapsed" in first.stderr
    journal = {
        (e["tensor_parallel_size"], e["batch_size"], e["sequence_length"]): e
        for e in json.loads(machine.journal.read_text())["entries"]
    }
    assert journal[(2, 128, 16384)]["class"] == "compiler-error"
    assert journal[(2, 128, 8192)]["class"] == "host-oom"
    assert journal[(2, 64, 16384)]["class"] == "other"
    assert any(
        e["class"] == "device-oom" and e["step"] == "load" and "DEVICE memory" in e["last_lines"][-1]
        for e in journal.values()
    )
    assert set(journal) | machine.valid() == set(exports)  # every trial run is recorded, once
    assert not any(machine.work.iterdir())  # artifacts removed after each trial
    second = machine.run("--strategy", "seed")
    assert second.returncode == 0 and "this run: 0 trial(s)" in second.stdout
    assert machine.exports() == exports


def test_guided_search_finds_the_same_configurations_with_fewer_trials(tmp_path: Path) -> None:
    seed, guided = Machine(tmp_path / "seed"), Machine(tmp_path / "guided")
    assert seed.run("--strategy", "seed").returncode == 0
    result = guided.run()
    assert result.returncode == 0, result.stderr
    assert guided.longest(guided.valid()) == seed.longest(seed.valid()) == seed.expected()
    assert len(guided.exports()) < len(seed.exports())
    skips = [e for e in json.loads(guided.journal.read_text())["entries"] if e["outcome"] == "skipped"]
    assert skips and all("20%" in entry["reason"] for entry in skips)
    assert not any(
        guided.fits(tuple(e[k] for k in ("tensor_parallel_size", "batch_size", "sequence_length")))
        for e in skips
    )


@pytest.mark.parametrize("strategy", ["seed", "guided"])
def test_sigkill_at_random_moments_loses_nothing_and_repeats_nothing(tmp_path: Path, strategy: str) -> None:
    rng = random.Random(20240601 if strategy == "seed" else 7)
    slow = {key.replace(",", "_"): {"export_seconds": 0.15} for key in list(_truth(MISTRAL, 0.9))[::3]}
    machine = Machine(tmp_path, **slow)
    checkpoints = []
    for _ in range(5):
        process = machine.start("--strategy", strategy)
        time.sleep(rng.uniform(0.3, 1.4))
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        recorded = machine.recorded()  # also: both files are valid JSON right after the kill
        assert all(recorded >= before for before, _ in checkpoints), "a recorded trial was lost"
        checkpoints.append((recorded, len(machine.events())))
    final = machine.run("--strategy", strategy)
    assert final.returncode == 0, final.stderr
    assert machine.longest(machine.valid()) == machine.expected()
    for recorded, mark in checkpoints:
        repeated = set(machine.exports(since=mark)) & recorded
        assert not repeated, f"recorded trials ran again: {sorted(repeated)}"
    assert machine.alive() == []  # what the killed searches left running was ended on resume
    assert not (tmp_path / "results.running.json").exists()
    assert _lock_is_free(tmp_path / "results.lock")  # kept (never deleted), held by no one


def test_a_resumed_search_ends_what_a_killed_one_left_running(tmp_path: Path) -> None:
    machine = Machine(tmp_path, model=SMALL, **{"2_128_16384": {"export": "hang"}})
    process = machine.start("--strategy", "seed")
    _wait_for(lambda: machine.exports() == [(2, 128, 16384)])
    os.kill(process.pid, signal.SIGKILL)  # nothing can be cleaned up: the export keeps running
    process.wait()
    orphans = machine.alive()
    assert orphans
    machine.trials["2,128,16384"] = {}
    machine.table.write_text(json.dumps({"trials": machine.trials, "invocations": str(machine.invocations)}))
    result = machine.run("--strategy", "seed")
    assert result.returncode == 0, result.stderr
    assert f"ended {len(orphans)} process(es) a killed search had left running" in result.stderr
    assert machine.alive() == []
    assert machine.longest(machine.valid()) == machine.expected()


def test_ctrl_c_ends_the_trial_process_group_and_records_nothing(tmp_path: Path) -> None:
    machine = Machine(tmp_path, **{"2_128_16384": {"export": "hang"}})
    process = machine.start("--strategy", "seed")
    _wait_for(lambda: machine.exports() == [(2, 128, 16384)])
    hung = machine.events()[0]["pid"]
    process.send_signal(signal.SIGINT)
    process.wait(timeout=60)
    assert process.returncode == 130, machine.stderr()
    assert "stopped by SIGINT" in machine.stderr()
    assert not Path(f"/proc/{hung}").exists() or machine.alive() == []
    assert machine.recorded() == set()
    assert not any(machine.work.iterdir())


def test_a_second_search_on_the_same_results_is_refused_and_sigterm_stops_the_first(tmp_path: Path) -> None:
    machine = Machine(tmp_path, **{"2_128_16384": {"export": "hang"}})
    process = machine.start("--strategy", "seed")
    _wait_for(lambda: bool(machine.exports()))
    second = machine.run("--strategy", "seed")
    assert second.returncode == 2 and "is writing these results" in second.stderr
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM
    assert machine.alive() == []


def test_a_hung_export_times_out_and_is_journaled(tmp_path: Path) -> None:
    machine = Machine(tmp_path, model=SMALL, **{"2_128_16384": {"export": "hang"}})
    result = machine.run("--export-timeout", "1")
    assert result.returncode == 0, result.stderr
    entries = json.loads(machine.journal.read_text())["entries"]
    timeouts = [entry for entry in entries if entry.get("class") == "timeout"]
    assert [
        (entry["batch_size"], entry["sequence_length"], entry["timeout_seconds"]) for entry in timeouts
    ] == [(128, 16384, 1)]
    assert machine.alive() == []


def test_detection_default_exporter_on_path_and_kept_artifacts(tmp_path: Path) -> None:
    machine = Machine(tmp_path, model=SMALL)
    bin_directory = tmp_path / "bin"
    bin_directory.mkdir()
    wrapper = bin_directory / "optimum-cli"
    wrapper.write_text(
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(FAKE / "fake_optimum_cli.py"))} "$@"\n'
    )
    wrapper.chmod(0o755)
    result = machine.run(
        "--keep-artifacts",
        instance=False,
        exporter=False,
        environment={"PATH": f"{bin_directory}{os.pathsep}{os.environ['PATH']}", "FAKE_INSTANCE": INSTANCE},
    )
    assert result.returncode == 0, result.stderr
    assert "inf2.8xlarge (2 NeuronCores, 2 per device, detected by optimum-neuron)" in result.stderr
    assert machine.longest(machine.valid()) == machine.expected()
    (own,) = machine.work.iterdir()  # this search's own directory, named for its results file
    assert own.name.startswith("results-")
    kept = sorted(path.name for path in own.iterdir() if path.is_dir())
    assert len(kept) == len(machine.exports()) and all(name.startswith("Qwen2.5-0.5B_tp2_") for name in kept)
    cache = json.loads(machine.results.read_text())[SMALL][0]
    assert cache["task"] == "text-generation" and cache["instance_type"] == "trn1"  # inf2 compiles as trn1


def test_too_little_disk_space_stops_before_any_export(tmp_path: Path) -> None:
    machine = Machine(tmp_path, model=SMALL)
    result = machine.run("--require-free-gib", "1000000000")
    assert result.returncode == 2
    assert "GiB free" in result.stderr and "resume" in result.stderr and "Traceback" not in result.stderr
    assert machine.events() == []


def test_dry_run_lists_the_candidates_with_predictions_and_runs_nothing(tmp_path: Path) -> None:
    machine = Machine(tmp_path)
    result = machine.run("--dry-run")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].split()[:3] == ["2", "128", "16384"]  # the seed's order
    assert "skip: over the budget even within the memory model's margin" in result.stdout
    assert "35 candidates" in lines[-1]
    assert machine.events() == [] and not machine.results.exists()


def test_a_load_interpreter_without_optimum_is_refused_before_any_trial(tmp_path: Path) -> None:
    machine = Machine(tmp_path, model=SMALL)
    result = machine.run(environment={"PYTHONPATH": ""})  # the fake optimum package is not importable
    assert result.returncode == 2 and "cannot import optimum.neuron" in result.stderr
    assert machine.events() == [] and not machine.journal.exists()
    missing = machine.run("--exporter", "no-such-optimum-cli")
    assert missing.returncode == 2 and "no-such-optimum-cli is not found" in missing.stderr
