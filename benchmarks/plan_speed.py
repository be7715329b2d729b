"""How fast ``plan`` is: one model over every instance cold (judge and performance model), and every
catalog model in one process.

Run: python benchmarks/plan_speed.py [--runs 7] [--model meta-llama/Llama-3.1-8B-Instruct]

Cold: the median wall time of fresh ``lmi-config plan --model M --format json`` processes over
every Neuron and GPU instance type, each candidate judged and its TTFT / TPOT / tokens/s / $ per
million tokens predicted (budget 300 ms, for throughput and for cost), as a ratio to
``python -c pass`` measured in the same run; also ``--all`` (what the judge refuses listed too)
for one instance family, without a budget. Warm: ``plan`` (top 10) for every catalog model over
every instance type in one process (budget 5 s in total), next to ``--top 0`` (every feasible
candidate) to show what the best-first merge saves.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def cli_command(python: str) -> list[str]:
    script = Path(python).parent / "lmi-config"
    return [str(script)] if script.exists() else [python, "-m", "lmi_config"]


def wall_ms(command: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        completed = subprocess.run(command, capture_output=True, check=False, cwd=tempfile.gettempdir())
        times.append((time.perf_counter() - start) * 1000)
        if completed.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(command)} failed: {completed.stderr.decode()[-400:]}")
    return times


def every_model(top: int) -> tuple[float, list[float], int]:
    """Seconds for every catalog model, the per-model times, and candidates judged."""
    from lmi_config.errors import PlanningError
    from lmi_config.knowledge.models import catalog_rows
    from lmi_config.plan import PlanRequest, plan_model

    per_model, judged = [], 0
    started = time.perf_counter()
    for row in catalog_rows():
        begin = time.perf_counter()
        with contextlib.suppress(PlanningError):
            judged += plan_model(PlanRequest(model=row["model_id"], top=top)).evaluated
        per_model.append(time.perf_counter() - begin)
    return time.perf_counter() - started, per_model, judged


def main() -> None:
    # a cold start in use reads cached bytecode; with PYTHONDONTWRITEBYTECODE inherited, the warm-up run
    # writes none, and every timed process compiles each module it imports again (about 70 ms more here)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--model", default="meta-llama/Llama-3.1-8B-Instruct")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument(
        "--quick", action="store_true", help="one run of each command, no sweep of the catalog (the suite)"
    )
    arguments = parser.parse_args()
    if arguments.quick:
        arguments.runs = 1
    python, runs = arguments.python, arguments.runs
    baseline = statistics.median(wall_ms([python, "-c", "pass"], runs))
    print(f"{'measurement':<66} {'median':>9} {'x pass':>7} {'budget':>8}")
    print(f"{'python -c pass (baseline)':<66} {baseline:>7.0f}ms {1:>7.1f}")
    rows = [
        (
            f"plan {arguments.model}, every instance (cold)",
            ["plan", "--model", arguments.model, "--format", "json"],
            300,
        ),
        (
            f"plan {arguments.model} --objective cost, every instance (cold)",
            ["plan", "--model", arguments.model, "--objective", "cost", "--format", "json"],
            300,
        ),
        (
            f"plan {arguments.model} --all --family inf2 (cold)",
            ["plan", "--model", arguments.model, "--family", "inf2", "--all", "--format", "json"],
            None,
        ),
    ]
    for label, command, budget in rows:
        median = statistics.median(wall_ms([*cli_command(python), *command], runs))
        verdict = f"{budget:>6}ms {'ok' if median <= budget else 'OVER'}" if budget else ""
        print(f"{label:<66} {median:>7.0f}ms {median / baseline:>7.1f} {verdict}")
    if arguments.quick:
        return
    every_model(10)  # warm the caches (data files, catalog), as a second plan in one process would
    for top, budget, repeats in ((10, 5.0, 3), (0, None, 1)):
        totals = [every_model(top) for _ in range(repeats)]
        total = statistics.median(result[0] for result in totals)
        per_model = statistics.median(totals[0][1]) * 1000
        judged = totals[0][2]
        label = f"every catalog model ({len(totals[0][1])}), every instance, --top {top}"
        verdict = f"{budget:>7.1f}s {'ok' if total <= budget else 'OVER'}" if budget else ""
        print(f"{label:<66} {total:>8.2f}s {'':>7} {verdict}")
        print(f"{'  median per model, candidates judged in all':<66} {per_model:>7.0f}ms {judged:>7}")


if __name__ == "__main__":
    main()
