"""What the planner's order buys a search that is stopped early (``--max-hours``, Ctrl-C): how soon
the guided strategy has proven the (TP, batch) pairs the planner ranks highest, in the planner's
order against the seed's order, for every catalog model on every inf2, trn1 and trn2 size.

Run: python benchmarks/search_order.py [--seed 7] [--objective throughput]

Nothing is exported: the oracle of benchmarks/search_trials.py stands in for the Neuron machine
(the memory model off by a random factor within +-20 % per model, instance and TP). Both orders run
the same guided strategy (lmi_config.search.strategy) to its end; for each order, counted in
trials: when the planner's best pair that runs on the machine has its longest valid length
recorded, and how many of the planner's top 5 such pairs are proven after a quarter of the trials.

Printed: the medians of the trials-to-the-best-pair ratio (planner order / seed order), the share of
searches where the planner's order proves it first or at the same trial, and the top-5 coverage
after a quarter of the search for both orders; the total trials of both (the same search, in
another order).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from search_trials import QUICK_MODELS, longest, noisy_cases, simulate  # noqa: E402

from lmi_config.knowledge.instances import instances  # noqa: E402
from lmi_config.search.grid import Trial  # noqa: E402
from lmi_config.search.order import value_order  # noqa: E402
from lmi_config.search.session import SearchOptions  # noqa: E402
from lmi_config.search.strategy import GuidedStrategy, Outcomes  # noqa: E402

TOP = 5


def proven_after(order: list[tuple[Trial, bool]], pair: tuple[int, int], length: int) -> int:
    """The number of trials after which ``pair`` at ``length`` is recorded."""
    return next(
        count for count, (trial, valid) in enumerate(order, 1) if valid and trial.key == (*pair, length)
    )


def covered(
    order: list[tuple[Trial, bool]], answers: dict[tuple[int, int], int], pairs: list, trials: int
) -> int:
    """How many of ``pairs`` have their longest valid length recorded within the first ``trials``."""
    done = {trial.key for trial, valid in order[:trials] if valid}
    return sum(1 for pair in pairs if (*pair, answers[pair]) in done)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--objective", default="throughput", choices=("throughput", "latency", "cost"))
    parser.add_argument(
        "--quick", action="store_true", help="only the first few catalog models (the test suite's run)"
    )
    arguments = parser.parse_args()
    rng = random.Random(arguments.seed)
    machines = [item for item in instances().values() if item.platform in ("inf2", "trn1", "trn2")]
    ratios: list[float] = []
    first = 0
    coverage = {"planner": 0, "seed": 0}
    possible = 0
    totals = {"planner": 0, "seed": 0}
    for case in noisy_cases(
        machines, rng, 0.2, text_only=True, limit=QUICK_MODELS if arguments.quick else None
    ):
        grid, predict, fits = case.grid, case.predict, case.fits
        options = SearchOptions(model=case.model_id, objective=arguments.objective)
        ranked = [value.pair for value in value_order(options, predict, grid)]
        planner = simulate(GuidedStrategy(grid, predict, 0.2, ranked), fits)[0]
        seed = simulate(GuidedStrategy(grid, predict, 0.2), fits)[0]
        answers = longest(Outcomes(successes={trial.key for trial, valid in planner if valid}))
        runnable = [pair for pair in ranked if pair in answers]
        if not runnable:
            continue
        best = runnable[0]
        by_planner = proven_after(planner, best, answers[best])
        by_seed = proven_after(seed, best, answers[best])
        ratios.append(by_planner / by_seed)
        first += by_planner <= by_seed
        quarter = max(len(planner) // 4, 1)
        top = runnable[:TOP]
        possible += len(top)
        coverage["planner"] += covered(planner, answers, top, quarter)
        coverage["seed"] += covered(seed, answers, top, quarter)
        totals["planner"] += len(planner)
        totals["seed"] += len(seed)
    count = len(ratios)
    print(f"{count} (model, instance) searches, objective {arguments.objective}")
    print(
        f"trials until the planner's best runnable pair is proven, planner order / seed order: median "
        f"{statistics.median(ratios):.2f}, mean {statistics.mean(ratios):.2f}; planner order first or equal in "
        f"{first} of {count}"
    )
    print(
        f"planner's top {TOP} runnable pairs proven after a quarter of the trials: planner order "
        f"{coverage['planner']} of {possible} ({coverage['planner'] / possible:.0%}), seed order "
        f"{coverage['seed']} of {possible} ({coverage['seed'] / possible:.0%})"
    )
    print(f"trials to the end: planner order {totals['planner']}, seed order {totals['seed']}")


if __name__ == "__main__":
    main()
