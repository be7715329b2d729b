"""Every benchmark runs on main: each script in benchmarks/ is run here in its quick mode (or on a
few inputs), so that one that breaks fails the suite instead of the next person who needs its
figures. What is checked is that it runs to its end and prints them, not what they are."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT

BENCHMARKS = ROOT / "benchmarks"
# each benchmark with the arguments that make it quick (seconds on this 2-core machine)
QUICK = {
    "command_speed.py": ["--runs", "1"],
    "corpus_findings.py": ["--examples", "5"],
    "fix_corpus.py": ["--examples", "5"],
    "gpu_memory_accuracy.py": [],
    "hostile_inputs.py": ["--quick"],
    "kv_admission.py": [],
    "lint_speed.py": ["--runs", "9", "--tree-runs", "3", "--files", "20"],
    "memory_accuracy.py": [],
    "perf_accuracy.py": [],
    "real_failures.py": ["--quiet"],
    "perf_baseline.py": [],
    "plan_vs_measured.py": [],
    "plan_speed.py": ["--quick"],
    "search_order.py": ["--quick"],
    "search_shards.py": ["--quick"],
    "search_trials.py": ["--quick"],
}


def test_every_benchmark_has_a_quick_run_here() -> None:
    scripts = {path.name for path in BENCHMARKS.glob("*.py")}
    assert scripts == set(QUICK), (
        f"add each benchmark's quick arguments to QUICK: {sorted(scripts ^ set(QUICK))}"
    )


@pytest.mark.parametrize("script", sorted(QUICK))
def test_the_benchmark_runs_to_its_end(script: str) -> None:
    completed = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *QUICK[script]],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "Traceback" not in completed.stderr
    assert completed.stdout.strip(), "a benchmark prints its figures"
