"""The error every prediction carries: per engine family and metric, the central 80 % of measured /
predicted when each source of the development data was predicted by a fit that never saw it
(``scripts/fit_perf.py`` stores it in ``data/perf_fit.json``; a family with fewer than ten left-out
figures of a metric takes its accelerator's pooled figures, and says so)."""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from lmi_config.knowledge.perf_data import fitted_families

METRICS = ("ttft", "tpot", "throughput")


class Interval(NamedTuple):
    """Where a measurement falls, as a multiple of the prediction, in 8 of 10 sources left out."""

    low: float  # measured / predicted, 10th percentile
    high: float  # measured / predicted, 90th percentile
    median_ape_percent: float  # the typical error, either way
    figures: int  # left-out figures it comes from
    basis: str  # the family, its accelerator's families pooled, or the metric it is derived from

    def around(self, predicted: float) -> tuple[float, float]:
        """The interval around a predicted figure."""
        return predicted * self.low, predicted * self.high

    def contains(self, predicted: float, other: float) -> bool:
        """Whether ``other`` lies within the interval of ``predicted``: the two cannot be told apart."""
        low, high = self.around(predicted)
        return low <= other <= high


@cache
def intervals(family: str) -> dict[str, Interval]:
    """The interval of each metric for an engine family (empty when the fit stored none). Throughput
    where no source of the family measured it: from TPOT's (tokens/s goes as one over TPOT)."""
    stored = fitted_families().get(family, {}).get("cross_validation", {}).get("intervals", {})
    found: dict[str, Interval] = {}
    for metric in METRICS:
        entry = stored.get(metric)
        if entry:
            low, high = entry["measured_over_predicted"]
            found[metric] = Interval(
                float(low),
                float(high),
                float(entry["median_ape_percent"]),
                int(entry["figures"]),
                entry["from"],
            )
    tpot = found.get("tpot")
    if "throughput" not in found and tpot is not None:
        found["throughput"] = Interval(
            1 / tpot.high,
            1 / tpot.low,
            tpot.median_ape_percent,
            tpot.figures,
            f"TPOT's ({tpot.basis}; no source measures its throughput)",
        )
    return found
