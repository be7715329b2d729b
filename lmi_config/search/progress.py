"""What a search tells its user while it runs, and the ``--dry-run`` listing."""

from __future__ import annotations

import signal
from collections.abc import Sequence
from typing import Any

from lmi_config.search.grid import Prediction, Trial, TrialGrid


def clock(seconds: float) -> str:
    """``1:02:03``."""
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def describe_start(model: str, machine: Any, grid: TrialGrid, strategy: str, results: str) -> str:
    """The first line: where, what, how many candidates and where the results go."""
    how = "detected by optimum-neuron" if machine.detected else "as given"
    return (
        f"search {model} on {machine.instance_type} ({machine.available_cores} NeuronCores, "
        f"{machine.cores_per_device} per device, {how}): strategy {strategy}, {grid.size} candidates "
        f"(TP {list(grid.tensor_parallel_sizes)}, batch {list(grid.batch_sizes)}, "
        f"length {list(grid.sequence_lengths)}); results in {results}"
    )


def describe_trial(
    number: int,
    upper: int,
    trial: Trial,
    prediction: Prediction,
    elapsed: float,
    durations: Sequence[float],
    timeout_seconds: int,
    value: Any = None,
) -> str:
    """Trial n of at most N, the configuration, its prediction, the planner's figure for its
    (TP, batch) when the search follows the planner's order, elapsed and estimated time."""
    remaining = upper - number + 1
    if durations:
        estimate = f"about {clock(sum(durations) / len(durations) * remaining)} left at most"
    else:
        estimate = "time left known after the first trial"
    planner = f"; planner's #{value.rank}: {value.describe()}" if value is not None else ""
    return (
        f"trial {number} of at most {upper}: {trial.label()} (predicted {prediction.describe()}; "
        f"export timeout {timeout_seconds} s{planner}) — elapsed {clock(elapsed)}, {estimate}"
    )


def describe_order(order: Sequence[Any] | None, objective: str, workload: Any) -> str:
    """Which order the search spends its trials in: the seed's, or the planner's ranking."""
    if order is None:
        return "order: the seed's (increasing TP, decreasing batch, decreasing length)"
    first = order[0]
    asked = (
        f"the planner's {objective} ranking for {workload.input_tokens} input + {workload.output_tokens} output "
        "tokens per request (--objective, --input-tokens, --output-tokens)"
    )
    if not first.candidate.feasible or first.candidate.figures is None:
        return f"order: the seed's — {asked} ranks no (TP, batch) pair: {first.describe()}"
    return (
        f"order: (TP, batch) pairs by {asked}; first TP {first.tensor_parallel_size}, batch {first.batch_size}: "
        f"{first.describe()}"
    )


def format_order(order: Sequence[Any]) -> str:
    """The guided strategy's (TP, batch) order, one pair a line, with the planner's figure."""
    lines = [f"{'rank':>4} {'TP':>3} {'batch':>5}  planner's prediction"]
    for value in order:
        lines.append(
            f"{value.rank:>4} {value.tensor_parallel_size:>3} {value.batch_size:>5}  {value.describe()}"
        )
    return "\n".join(lines) + "\n"


def describe_outcome(success: bool, seconds: float, details: dict[str, Any]) -> str:
    """How a trial ended."""
    if success:
        return f"  valid: exported and loaded in {clock(seconds)}"
    last = next((line for line in reversed(details.get("last_lines", [])) if line.strip()), "")
    return f"  failed: {details['class']} during the {details['step']} after {clock(seconds)}" + (
        f": {last[:160]}" if last else ""
    )


def describe_stop(signal_number: int) -> str:
    """Why the search stopped before its end, and how to resume."""
    name = signal.Signals(signal_number).name
    return (
        f"stopped by {name}: the trial in progress was ended (its process group killed) and not recorded; "
        "run the same command to resume"
    )


def format_dry_run(
    rows: Sequence[tuple[Trial, Prediction, str | None]],
    strategy: str,
    ranks: dict[tuple[int, int], int] | None = None,
) -> str:
    """The candidates in the seed's order with the judge's prediction for each and, for the guided
    strategy, the planner's rank of their (TP, batch): the order its trials follow."""
    ranks = ranks or {}
    lines = [f"{'TP':>3} {'batch':>5} {'length':>7}  {'predicted GiB/core':>18}  guided strategy"]
    for trial, prediction, reason in rows:
        if reason is None:
            verdict = "try (predicted to fit)" if prediction.fits else "try (over, but within the margin)"
        elif reason.startswith("memory-exceeds-budget"):
            verdict = "skip: over the budget even within the memory model's margin"
        else:
            verdict = f"skip: {reason}"
        rank = ranks.get((trial.tensor_parallel_size, trial.batch_size))
        if rank is not None and reason is None:
            verdict += f", planner's #{rank} (TP, batch)"
        use = f"{prediction.peak_bytes / 2**30:.1f} / {prediction.budget_bytes / 2**30:.1f}"
        lines.append(
            f"{trial.tensor_parallel_size:>3} {trial.batch_size:>5} {trial.sequence_length:>7}  {use:>18}  {verdict}"
        )
    skipped = sum(1 for _, _, reason in rows if reason)
    lines.append(
        f"{len(rows)} candidates in the seed's order; the guided strategy rules out {skipped} before any trial"
        + (" (--strategy seed tries every one it reaches)" if strategy == "seed" else "")
        + ("; it tries them by the planner's rank of their (TP, batch)" if ranks else "")
    )
    return "\n".join(lines) + "\n"
