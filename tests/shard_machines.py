"""Fake Neuron machines for the sharded-search tests: the fake exporter and fake ``optimum.neuron``
of ``tests/fixtures/search`` with a hidden table of which trials fit (the judge's prediction off
by a factor the search does not know), and helpers that read results files and journals."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import FIXTURES

from lmi_config.knowledge.instances import resolve_instance
from lmi_config.modelarch import from_catalog
from lmi_config.search.grid import Predictor, seed_grid

FAKE = FIXTURES / "search"
MISTRAL = "mistralai/Mistral-7B-Instruct-v0.2"
Key = tuple[int, int, int]


def truth(
    model: str, instance: str, factor: float, overrides: dict[str, dict[str, Any]] | None = None
) -> dict:
    """Per trial ``"tp,batch,length"``: fits when the judge's peak x factor is within the budget; a
    compile failure far over it, an out-of-memory load just over it."""
    arch = from_catalog(model)
    machine = resolve_instance(instance)
    assert arch is not None
    grid = seed_grid(
        arch.num_attention_heads, arch.max_position_embeddings, machine.num_cores, machine.cores_per_device
    )
    predict = Predictor(arch, machine, "nxdi")
    table: dict[str, dict[str, Any]] = {}
    for trial in grid.seed_order():
        prediction = predict(trial)
        need = prediction.peak_bytes * factor
        key = ",".join(map(str, trial.key))
        if need <= prediction.budget_bytes:
            table[key] = {}
        elif need > 1.3 * prediction.budget_bytes:
            table[key] = {"export": "device-oom"}
        else:
            table[key] = {"load": "device-oom"}
    for key, behaviour in (overrides or {}).items():
        table[key] = behaviour
    return table


class Machines:
    """Several fake machines sharing one hidden table; each run is a fresh ``lmi-config`` process."""

    def __init__(self, root: Path, table: dict[str, dict[str, Any]]) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.table = root / "table.json"
        self.invocations = root / "invocations.jsonl"
        self.table.write_text(json.dumps({"trials": table, "invocations": str(self.invocations)}))

    def environment(self, **extra: str) -> dict[str, str]:
        path = os.pathsep.join(filter(None, [str(FAKE / "site"), os.environ.get("PYTHONPATH")]))
        return {**os.environ, "FAKE_NEURON_TABLE": str(self.table), "PYTHONPATH": path, **extra}

    def tools(self, work: Path) -> list[str]:
        """The options that make a search use this fake machine (appended: they win over the job's)."""
        exporter = f"{shlex.quote(sys.executable)} {shlex.quote(str(FAKE / 'fake_optimum_cli.py'))}"
        return [
            "--exporter",
            exporter,
            "--python",
            sys.executable,
            "--require-free-gib",
            "0",
            "--work-dir",
            str(work),
        ]

    def command(self, arguments: list[str], work: Path) -> list[str]:
        return [sys.executable, "-m", "lmi_config", *arguments, *self.tools(work)]

    def run(self, arguments: list[str], work: Path, **environment: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(arguments, work),
            env=self.environment(**environment),
            capture_output=True,
            text=True,
            timeout=300,
        )

    def start(self, arguments: list[str], work: Path) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.command(arguments, work),
            env=self.environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def exports(self) -> list[Key]:
        """Every export started on any machine, in order."""
        if not self.invocations.exists():
            return []
        events = [json.loads(line) for line in self.invocations.read_text().splitlines() if line.strip()]
        return [_key(event["key"]) for event in events if event["event"] == "export-start"]


def _key(text: str) -> Key:
    tensor_parallel, batch, length = (int(part) for part in text.split(","))
    return (tensor_parallel, batch, length)


def entry_key(entry: dict[str, Any]) -> Key:
    return (entry["tensor_parallel_size"], entry["batch_size"], entry["sequence_length"])


def proven(results: Path, model: str = MISTRAL) -> list[Key]:
    """The exported-and-loaded configurations of a results file, in file order (duplicates kept)."""
    data = json.loads(results.read_text())
    return [
        entry_key(entry) for entry in data.get(model, []) if entry.get("provenance") == "exported-and-loaded"
    ]


def failed(journal: Path) -> set[Key]:
    """The failed trials of a journal."""
    entries = json.loads(journal.read_text())["entries"]
    return {entry_key(entry) for entry in entries if entry.get("outcome") == "failed"}
