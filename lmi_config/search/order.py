"""The order the guided search spends its trials in: the planner's order of value over the grid's
(TP, batch) pairs for the search's workload and objective (:mod:`lmi_config.plan.order`), and how
the search shows it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lmi_config.errors import InputError
from lmi_config.search import progress
from lmi_config.search.grid import Predictor, Trial, TrialGrid

if TYPE_CHECKING:  # the planner is imported only when a search starts
    from lmi_config.plan.order import PairValue
    from lmi_config.plan.workload import PlanWorkload


Order = list["PairValue"]  # the grid's pairs, best first


def search_workload(input_tokens: int | None, output_tokens: int | None, objective: str) -> PlanWorkload:
    """The workload the pairs are ordered for (plan's defaults where none is given), checked as
    ``plan`` checks it."""
    from lmi_config.plan import OBJECTIVES, PlanWorkload

    if objective not in OBJECTIVES:
        raise InputError(f"unknown objective {objective!r}; choose {', '.join(OBJECTIVES)}")
    defaults = PlanWorkload()
    return PlanWorkload(
        input_tokens=defaults.input_tokens if input_tokens is None else input_tokens,
        output_tokens=defaults.output_tokens if output_tokens is None else output_tokens,
    )


def value_order(options: Any, predict: Predictor, grid: TrialGrid) -> Order:
    """The grid's (TP, batch) pairs in the planner's order of value for the search's options."""
    from lmi_config.plan.order import order_pairs

    return order_pairs(
        predict.writer,
        predict.instance,
        predict.release,
        grid.seed_pairs(),
        search_workload(options.input_tokens, options.output_tokens, options.objective),
        options.objective,
    )


def order_line(order: Order | None, options: Any) -> str:
    """The progress line saying which order the search follows."""
    if order is None:
        return progress.describe_order(None, options.objective, None)
    workload = search_workload(options.input_tokens, options.output_tokens, options.objective)
    return progress.describe_order(order, options.objective, workload)


def announce_order(
    order: Order | None, options: Any, emit: Callable[[str], None], listing: bool = False
) -> None:
    """Tell the user which order the search follows (with ``listing``, every pair's rank and figure)."""
    emit(order_line(order, options))
    if listing and order is not None:
        emit(progress.format_order(order).rstrip("\n"))


def pair_value(order: Order | None, trial: Trial) -> PairValue | None:
    """The planner's place and figure for the trial's (TP, batch), when the search follows it."""
    pair = (trial.tensor_parallel_size, trial.batch_size)
    return next((value for value in order or [] if value.pair == pair), None)


def order_arguments(options: Any) -> list[str]:
    """The ``search`` flags that give another machine (a SageMaker job's shard) the same order:
    only those that differ from plan's defaults, so a job's command line is unchanged otherwise."""
    from lmi_config.plan.workload import DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS

    arguments = [] if options.objective == "throughput" else ["--objective", options.objective]
    for flag, value, default in (
        ("--input-tokens", options.input_tokens, DEFAULT_INPUT_TOKENS),
        ("--output-tokens", options.output_tokens, DEFAULT_OUTPUT_TOKENS),
    ):
        if value is not None and value != default:
            arguments += [flag, str(value)]
    return arguments
