"""What splitting a search into shards (``search --shard K/N``, ``--on sagemaker``) costs and saves,
counted in export-and-load trials, for every catalog model on trn1.32xlarge, trn2.48xlarge and
inf2.48xlarge.

Run: python benchmarks/search_shards.py [--seed 7]

Nothing is exported: the oracle of benchmarks/search_trials.py stands in for the Neuron machine
(the memory model off by a random factor within +-20 % per model, instance and TP). Each shard
runs the guided strategy (lmi_config.search.strategy) on its own TP sizes in the planner's order
of value for plan's default workload (lmi_config.search.order.value_order), as a shard does.

Printed, per shard count N: whether the shards' trials add up to the single search's (no trial
repeated, none lost: the target is "equal" everywhere) and whether they find the same valid
configurations; and the median and worst ratio of the longest shard's trials to the single
search's trials — the wall-clock a split takes, as a ratio of one machine's (1/N at best).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from search_trials import QUICK_MODELS, noisy_cases, simulate  # noqa: E402

from lmi_config.knowledge.instances import resolve_instance  # noqa: E402
from lmi_config.search.grid import Predictor, Trial, TrialGrid
from lmi_config.search.order import value_order
from lmi_config.search.session import SearchOptions
from lmi_config.search.shards import Shard
from lmi_config.search.strategy import GuidedStrategy, Outcomes

INSTANCES = ("trn1.32xlarge", "trn2.48xlarge", "inf2.48xlarge")
SHARD_COUNTS = (1, 2, 3, 4, 6)


def trial_order(strategy, fits) -> tuple[list[Trial], Outcomes]:
    """Run a strategy to its end against an oracle; (trials in order, what was recorded)."""
    order, outcomes = simulate(strategy, fits)
    return [trial for trial, _ in order], outcomes


def guided(grid: TrialGrid, predict: Predictor, options: SearchOptions) -> GuidedStrategy:
    """The guided strategy as ``search`` builds it: the grid's pairs in the planner's order."""
    pairs = [value.pair for value in value_order(options, predict, grid)]
    return GuidedStrategy(grid, predict, 0.2, pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--quick", action="store_true", help="only the first few catalog models (the test suite's run)"
    )
    arguments = parser.parse_args()
    rng = random.Random(arguments.seed)
    ratios: dict[int, list[float]] = {count: [] for count in SHARD_COUNTS}
    equal = dict.fromkeys(SHARD_COUNTS, True)
    cases = 0
    machines = [resolve_instance(name) for name in INSTANCES]
    for case in noisy_cases(
        machines, rng, 0.2, text_only=True, limit=QUICK_MODELS if arguments.quick else None
    ):
        grid, predict, fits = case.grid, case.predict, case.fits
        options = SearchOptions(model=case.model_id)
        single, found = trial_order(guided(grid, predict, options), fits)
        if not single:
            continue
        cases += 1
        for count in SHARD_COUNTS:
            runs = [
                trial_order(
                    guided(
                        replace(
                            grid,
                            tensor_parallel_sizes=Shard(index, count).sizes(grid.tensor_parallel_sizes),
                        ),
                        predict,
                        options,
                    ),
                    fits,
                )
                for index in range(1, count + 1)
            ]
            trials = [trial for order, _ in runs for trial in order]
            successes = set().union(*(outcomes.successes for _, outcomes in runs))
            if sorted(trials) != sorted(single) or successes != found.successes:
                equal[count] = False
            ratios[count].append(max(len(order) for order, _ in runs) / len(single))
    print(f"{cases} (model, instance) searches; trials counted by the guided strategy's own code")
    print(f"{'shards':>6}  {'trials add up':>13}  {'longest shard / single (median)':>31}  {'worst':>6}")
    for count in SHARD_COUNTS:
        print(
            f"{count:>6}  {'equal' if equal[count] else 'DIFFER':>13}  "
            f"{statistics.median(ratios[count]):>31.2f}  {max(ratios[count]):>6.2f}"
        )


if __name__ == "__main__":
    main()
