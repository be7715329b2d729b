"""Ties: configurations the model cannot tell apart, because their figures differ by less than the
error it carries (the interval from leaving each source out of the fit, :mod:`lmi_config.perf.error`).

A row of the first row's class (price list, latency target, edge of the estimate) whose metric lies
within the first's interval ties with it. Plan says so and names the measurement that would separate
them. For cost, the tied rows are ordered by their hourly price, lowest first: the model cannot say
which costs less per token, and the smaller instance is the smaller commitment (copies scale it out).
"""

from __future__ import annotations

from lmi_config.plan.candidates import PlannedCandidate, rank_class, rank_key, throughput_metric
from lmi_config.plan.performance import Figures

METRIC_OF = {"throughput": "throughput", "cost": "throughput", "latency": "tpot"}
METRIC_WORDS = {"throughput": "output tokens/s", "cost": "$/M output tokens", "latency": "TPOT"}


def _metric(figures: Figures, objective: str) -> float | None:
    """The objective's figure, as the interval of ``METRIC_OF`` applies to it."""
    if objective == "latency":
        return figures.tpot_ms
    if objective == "cost":
        cost = figures.usd_per_million_tokens
        return 1 / cost if cost else None  # what a dollar buys: its error is throughput's
    return throughput_metric(figures)


def tied(first: PlannedCandidate, other: PlannedCandidate, objective: str) -> bool:
    """Whether ``other`` lies within the first's interval on the objective's metric, in its class."""
    if first.figures is None or other.figures is None:
        return False
    if rank_class(other, objective) != rank_class(first, objective):
        return False
    interval = first.figures.interval(METRIC_OF[objective])
    best, value = _metric(first.figures, objective), _metric(other.figures, objective)
    return interval is not None and best is not None and value is not None and interval.contains(best, value)


def tie_floor(first: PlannedCandidate, objective: str) -> tuple[float, ...] | None:
    """For cost, the lowest rank key that can still tie with ``first`` (the walk goes on to it, since
    ties are ordered by hourly price); None for the other objectives, whose ties keep their order."""
    figures = first.figures
    if objective != "cost" or figures is None or not figures.usd_per_million_tokens:
        return None
    interval = figures.interval("throughput")
    if interval is None:
        return None
    # a dollar buys at least the first's tokens x interval.low: a cost at most the first's / low
    limit = figures.usd_per_million_tokens / interval.low
    return (*rank_class(first, objective), -limit, float("-inf"), float("-inf"))


def order_ties(ranked: list[PlannedCandidate], objective: str) -> list[PlannedCandidate]:
    """The ranking with the rows tied with the first marked, and for cost ordered by hourly price."""
    if not ranked or ranked[0].figures is None:
        return ranked
    first = ranked[0]
    group = [first] + [candidate for candidate in ranked[1:] if tied(first, candidate, objective)]
    if len(group) == 1:
        return ranked
    rest = [candidate for candidate in ranked if all(candidate is not member for member in group)]
    if objective == "cost":
        group.sort(key=lambda c: (c.usd_per_hour or 0.0, tuple(-v for v in rank_key(c, objective))))
    for candidate in group[1:]:
        candidate.tie_with = 1
    group[0].tie_with = None
    return group + rest


def tie_note(ranked: list[PlannedCandidate], objective: str) -> list[str]:
    """What the tie means and which measurement would separate the tied rows."""
    tied_rows = [candidate for candidate in ranked if candidate.tie_with is not None]
    if not tied_rows or ranked[0].figures is None:
        return []
    interval = ranked[0].figures.interval(METRIC_OF[objective])
    assert interval is not None
    rows = ", ".join(["1", *(str(c.rank) for c in tied_rows[:12])]) + ("…" if len(tied_rows) > 12 else "")
    order = "; plan lists the lowest hourly price first among them" if objective == "cost" else ""
    neuron = any(c.unit == "NeuronCore" for c in [ranked[0], *tied_rows])
    measure = (
        "`lmi-config search` proves which of them compile and load on Neuron, and a load test at this "
        "workload on each measures which is faster"
        if neuron
        else "a load test at this workload on each (your own, or SageMaker Inference Recommender) measures which is faster"
    )
    return [
        f"tie: rows {rows} cannot be told apart on {METRIC_WORDS[objective]} within the model's error (8 of "
        f"10 measurements fell within x{interval.low:.2f}-{interval.high:.2f} of a prediction, {interval.basis})"
        f"{order}; {measure}"
    ]
