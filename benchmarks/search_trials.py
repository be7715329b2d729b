"""How many export-and-load trials the seed strategy and the guided one need, and whether guided
misses anything, for every catalog model on every inf2, trn1 and trn2 size.

Run: python benchmarks/search_trials.py [--seed 7] [--margin 0.2]

Nothing is exported: an oracle stands in for the Neuron machine. Its truth differs from the memory
model by a random factor within +-20 % (one factor per model, instance and TP degree, so that
memory still grows with the batch and the sequence length): a trial fits when the judge's
predicted peak per NeuronCore times that factor is within the budget, and the judge reports no
error besides memory (the runtime's TP topology, host RAM). Both strategies run against the same
oracle through the same code the search uses (lmi_config.search.strategy; guided in the planner's
order of value for plan's default workload, as search runs it); a trial is one export
and its load. "valid" counts the longest valid sequence length per (TP, batch) — the seed's
results; a miss is a (TP, batch) whose longest valid length guided did not find.

Targets: guided finds exactly the seed's configurations (zero misses) with at most 40 % of its
trials. Printed: totals and per family, the ratio of the totals, and the mean and median of the
per-(model, instance) ratios.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from lmi_config.knowledge.instances import instances
from lmi_config.knowledge.models import catalog_rows
from lmi_config.modelarch import from_catalog
from lmi_config.search.grid import Predictor, Trial, seed_grid
from lmi_config.search.order import value_order
from lmi_config.search.session import SearchOptions
from lmi_config.search.strategy import GuidedStrategy, Outcomes, SeedStrategy


def simulate(strategy, fits) -> tuple[list[tuple[Trial, bool]], Outcomes]:
    """Run a strategy to its end against an oracle; (the trials in order, each with whether it fit, and
    what was recorded). The other search benchmarks run their strategies through this too."""
    outcomes, order = Outcomes(), []
    while True:
        for trial, reason in strategy.skips(outcomes):
            outcomes.skipped[trial.key] = reason
        trial = strategy.next_trial(outcomes)
        if trial is None:
            return order, outcomes
        valid = fits(trial)
        order.append((trial, valid))
        if valid:
            outcomes.successes.add(trial.key)
        else:
            outcomes.failures[trial.key] = "device-oom"


class SearchCase(NamedTuple):
    """One (model, instance) search against a noisy oracle: the seed's grid, the judge's predictor, and
    ``fits`` — the truth the simulated exports meet (the prediction off by a random factor per TP)."""

    model_id: str
    machine: Any
    grid: Any
    predict: Predictor
    fits: Callable[[Trial], bool]


QUICK_MODELS = 3  # --quick: the first catalog models the memory model sizes (the suite runs it so)


def noisy_cases(
    machines: list[Any], rng: random.Random, spread: float, text_only: bool = False, limit: int | None = None
) -> Iterator[SearchCase]:
    """Every catalog model the memory model sizes (text generation only, when asked; the first
    ``limit`` of them) on every machine with a TP its heads allow; the factors are drawn in this
    order, so a seed gives the same cases."""
    taken = 0
    for row in catalog_rows():
        if limit is not None and taken >= limit:
            return
        arch = from_catalog(row["model_id"])
        if arch is None or arch.memory_not_estimated or (text_only and not arch.is_text_generation):
            continue
        if arch.stored_quantization is not None:
            continue  # sized as vLLM loads it, not as NxD does: the search cannot predict its trials
        taken += 1
        for machine in machines:
            grid = seed_grid(
                arch.num_attention_heads,
                arch.max_position_embeddings,
                machine.num_cores,
                machine.cores_per_device,
            )
            if not grid.size:
                continue
            predict = Predictor(arch, machine, "nxdi")
            factors = {size: rng.uniform(1 - spread, 1 + spread) for size in grid.tensor_parallel_sizes}

            def fits(trial: Trial, predict: Predictor = predict, factors: dict[int, float] = factors) -> bool:
                prediction = predict(trial)
                factor = factors[trial.tensor_parallel_size]
                return not prediction.blocking and prediction.peak_bytes * factor <= prediction.budget_bytes

            yield SearchCase(row["model_id"], machine, grid, predict, fits)


def longest(outcomes: Outcomes) -> dict[tuple[int, int], int]:
    best: dict[tuple[int, int], int] = {}
    for tensor_parallel, batch, length in outcomes.successes:
        best[(tensor_parallel, batch)] = max(best.get((tensor_parallel, batch), 0), length)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7, help="random seed of the oracle's factors")
    parser.add_argument("--spread", type=float, default=0.2, help="the oracle differs by up to this fraction")
    parser.add_argument(
        "--margin", type=float, default=None, help="guided's margin (default: data/search.json)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="only the first few catalog models (the test suite's run)"
    )
    arguments = parser.parse_args()
    from lmi_config.knowledge.planning import search_constants

    margin = arguments.margin if arguments.margin is not None else search_constants().memory_error_margin
    rng = random.Random(arguments.seed)
    machines = [item for item in instances().values() if item.platform in ("inf2", "trn1", "trn2")]
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])  # seed, guided, valid, misses, pairs
    ratios: list[float] = []
    started = time.perf_counter()
    for case in noisy_cases(machines, rng, arguments.spread, limit=QUICK_MODELS if arguments.quick else None):
        grid, predict, fits, machine = case.grid, case.predict, case.fits, case.machine
        seed_order, seed = simulate(SeedStrategy(grid), fits)
        pairs = [value.pair for value in value_order(SearchOptions(model=case.model_id), predict, grid)]
        guided_order, guided = simulate(GuidedStrategy(grid, predict, margin, pairs), fits)
        seed_trials, guided_trials = len(seed_order), len(guided_order)
        expected, found = longest(seed), longest(guided)
        misses = sum(1 for pair, length in expected.items() if found.get(pair, 0) < length)
        for family in (machine.platform, "all"):
            total = totals[family]
            total[0] += seed_trials
            total[1] += guided_trials
            total[2] += len(expected)
            total[3] += misses
            total[4] += 1
        if seed_trials:
            ratios.append(guided_trials / seed_trials)
    print(
        f"{'family':<7} {'(model, instance)':>17} {'seed trials':>11} {'guided trials':>13} {'ratio':>6} {'valid':>6} {'misses':>6}"
    )
    for family in ("inf2", "trn1", "trn2", "all"):
        seed_trials, guided_trials, valid, misses, pairs = totals[family]
        print(
            f"{family:<7} {pairs:>17} {seed_trials:>11} {guided_trials:>13} {guided_trials / max(seed_trials, 1):>6.1%} "
            f"{valid:>6} {misses:>6}"
        )
    print(
        f"per (model, instance): mean ratio {statistics.mean(ratios):.1%}, median {statistics.median(ratios):.1%}, "
        f"{sum(1 for ratio in ratios if ratio <= 0.4)} of {len(ratios)} at or under 40 %"
    )
    seed_total, guided_total, _, misses, _ = totals["all"]
    verdict = "ok" if misses == 0 and guided_total <= 0.4 * seed_total else "MISSED"
    print(f"target: zero misses and guided <= 40 % of the seed's trials (totals): {verdict}")
    print(
        f"margin {margin:.0%}, oracle spread +-{arguments.spread:.0%}, seed {arguments.seed}; {time.perf_counter() - started:.1f} s"
    )


if __name__ == "__main__":
    main()
