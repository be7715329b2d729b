"""The fit of the performance model's parameters, and its validation by source.

Per engine family (neuron-tnx, neuron-nxd, gpu-vllm, gpu-trtllm) the engine's parameters
(:class:`Efficiency`: achieved shares of peak, fixed and per-sequence overheads) are shared by every
row; what a benchmark's harness adds (:class:`Harness`: users started in waves, a warm-up counted in
TTFT) is a separate pair of terms per harness (the tool that measured: a row's ``source_group``),
so a harness's queueing is never folded into an engine's constants. Both minimize the absolute
relative error of every measured figure (TTFT, TPOT, throughput, each as its source defines it), the
error the accuracy targets are stated in, plus a weak prior per parameter.

Validation leaves whole sources out: a source is one measurement campaign (who measured, on what
hardware, with which software: :func:`lmi_config.perf.measured.source_of`); each is predicted by a
fit on the others only, with its harness's terms where other campaigns of the same tool were fitted
and none otherwise. The error per family and metric of those predictions is the error every
prediction carries (:func:`interval`). Deterministic: Nelder-Mead from a fixed start, parameters
rounded to 4 significant digits before residuals are computed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from lmi_config.perf.devices import UnsupportedConfiguration
from lmi_config.perf.measured import (
    ReadRow,
    compare,
    harness_of,
    read_row,
    source_of,
    superseded_by_newer_software,
)
from lmi_config.perf.minimize import nelder_mead
from lmi_config.perf.model import predict
from lmi_config.perf.types import Efficiency, Harness

FAMILIES = ("neuron-tnx", "neuron-nxd", "gpu-vllm", "gpu-trtllm")
METRICS = ("ttft", "tpot", "throughput")
# rows whose figures contradict themselves in the source are reported, never fitted
UNFITTED_FLAGS = ("source_inconsistency:tpot_p99_ms<tpot_ms",)
PRIOR_WEIGHT = 0.02  # squared-log penalty per parameter, small next to one figure's error
# below this many measured figures per parameter the prior grows in proportion: a family with a few
# rows (NxD Inference: 3 rows) cannot pin every parameter, and unpinned ones ran to their bounds
FIGURES_PER_PARAMETER = 5
# a family with too few rows to pin its parameters borrows its prior from a family fitted on the same
# devices: NxD Inference (3 rows) runs on the NeuronCores, through the compiler, that
# transformers-neuronx's fitted rows measured
PRIORS_FROM = {"neuron-nxd": "neuron-tnx"}
# an interval from fewer left-out figures than this is the accelerator's (Neuron or GPU) pooled one
INTERVAL_MIN_FIGURES = 10
INTERVAL_QUANTILES = (0.1, 0.9)  # the central 80 % of measured / predicted, left out by source
PARAMETERS: dict[str, tuple[float, float, float, str, str]] = {
    # name: (prior, lower, upper, unit, meaning)
    "prefill_flops_fraction": (
        0.5,
        0.02,
        1.0,
        "fraction",
        "achieved share of peak dense FLOPS in the linear layers",
    ),
    "attention_flops_fraction": (
        0.3,
        0.001,
        1.0,
        "fraction",
        "achieved share of peak dense FLOPS in attention's score and value products",
    ),
    # no engine streams HBM at its peak: a bandwidth test reaches about nine tenths of it
    "decode_bandwidth_fraction": (0.7, 0.05, 0.9, "fraction", "achieved share of HBM bandwidth in decode"),
    "step_overhead_ms": (1.0, 0.01, 100.0, "ms", "fixed time per decode step"),
    "sequence_overhead_us": (
        10.0,
        0.01,
        5000.0,
        "us",
        "time per running sequence per decode step that TP does not divide (sampling, bookkeeping)",
    ),
    "collective_latency_us": (20.0, 0.5, 1000.0, "us", "latency of one all-reduce across the TP group"),
    "request_overhead_ms": (
        10.0,
        0.5,
        50.0,
        "ms",
        "fixed time before the first token of one request alone (tokenize, schedule, return)",
    ),
}
HARNESS_PARAMETERS: dict[str, tuple[float, float, float, str, str]] = {
    "burst_wait_fraction": (
        0.05,
        1e-4,
        2.0,
        "fraction",
        "share of the other users' prefills a request waits for because the harness starts its users together",
    ),
}
BATCHING_NOTE = {
    "neuron-tnx": "perf-page rows are static batches",
    "neuron-nxd": "vLLM front end, continuous batching",
    "gpu-vllm": "continuous batching",
    "gpu-trtllm": "in-flight (continuous) batching",
}


class FitRow(NamedTuple):
    """A measured row the model predicts: the row, how it reads, its source and its harness."""

    row: dict[str, Any]
    read: ReadRow
    source: str
    harness: str


class Fitted(NamedTuple):
    """The parameters of one family and the harness terms of each harness its rows were measured with."""

    efficiency: Efficiency
    harnesses: dict[str, Harness]
    seen: list[bool]  # which engine parameters the rows can see
    harness_seen: dict[str, list[bool]]


def rounded(number: float) -> float:
    return float(f"{number:.4g}")


def _bounded(table: dict[str, tuple[float, float, float, str, str]], vector: Sequence[float]) -> list[float]:
    return [
        min(max(math.exp(log_value), lower), upper)
        for (_, lower, upper, _, _), log_value in zip(table.values(), vector, strict=True)
    ]


def split_rows(family: str, rows: Sequence[Any]) -> tuple[list[FitRow], list[FitRow]]:
    """(fitted, not fitted): the rows of one family the model can predict; figures that contradict
    each other in their source, and rows measured again with newer software, are not fitted."""
    fitted: list[FitRow] = []
    unfitted: list[FitRow] = []
    probe = Efficiency(*(prior for prior, *_ in PARAMETERS.values()))
    for row in rows:
        if not isinstance(row, dict) or row.get("engine_family") != family:
            continue
        read = read_row(row)
        if isinstance(read, str):
            continue
        try:
            predict(read.configuration, read.workload, probe)
        except UnsupportedConfiguration:
            continue
        pair = FitRow(row, read, source_of(row), harness_of(row))
        inconsistent = set(row.get("quality_flags") or []) & set(UNFITTED_FLAGS)
        if inconsistent or superseded_by_newer_software(row, rows):
            unfitted.append(pair)
        else:
            fitted.append(pair)
    return fitted, unfitted


def prior_weight(figures: int) -> float:
    """The prior's weight for a fit on this many measured figures: PRIOR_WEIGHT, raised in
    proportion where there are fewer than FIGURES_PER_PARAMETER figures per parameter."""
    enough = FIGURES_PER_PARAMETER * len(PARAMETERS)
    return PRIOR_WEIGHT * max(1.0, enough / max(figures, 1))


class _Layout(NamedTuple):
    """Where each parameter sits in the minimizer's vector: the engine's, then each harness's."""

    harnesses: tuple[str, ...]
    start: list[float]

    def decode(self, vector: Sequence[float]) -> tuple[Efficiency, dict[str, Harness]]:
        engine = len(PARAMETERS)
        efficiency = Efficiency(*_bounded(PARAMETERS, vector[:engine]))
        width = len(HARNESS_PARAMETERS)
        harnesses = {
            name: Harness(
                *_bounded(HARNESS_PARAMETERS, vector[engine + i * width : engine + (i + 1) * width])
            )
            for i, name in enumerate(self.harnesses)
        }
        return efficiency, harnesses


def _data_cost(rows: Sequence[FitRow], efficiency: Efficiency, harnesses: dict[str, Harness]) -> float:
    """Sum of |predicted / measured - 1| over every figure: the mean absolute percentage error the
    accuracy targets are stated in (each figure counts as much as any other, whatever its size)."""
    total = 0.0
    for fit_row in rows:
        prediction = predict(
            fit_row.read.configuration, fit_row.read.workload, efficiency, harnesses.get(fit_row.harness)
        )
        for metric in compare(fit_row.read, prediction):
            total += abs(metric.predicted / metric.measured - 1)
    return total


def fit_rows(rows: Sequence[FitRow], priors: Sequence[float] | None = None) -> Fitted:
    """The engine parameters and harness terms that fit these rows best (starting from, and held
    towards, ``priors``: by default the generic ones), and which of them the rows can see at all."""
    engine_start = [math.log(prior) for prior in (priors or [p[0] for p in PARAMETERS.values()])]
    harnesses = tuple(sorted({fit_row.harness for fit_row in rows}))
    harness_start = [math.log(p[0]) for p in HARNESS_PARAMETERS.values()]
    layout = _Layout(harnesses, engine_start + harness_start * len(harnesses))
    start = layout.start
    base = _data_cost(rows, *layout.decode(start)) if rows else 0.0
    seen = []
    for index in range(len(start)):
        moved = list(start)
        moved[index] += 0.5
        seen.append(bool(rows) and _data_cost(rows, *layout.decode(moved)) != base)
    free = [index for index, visible in enumerate(seen) if visible]
    best = list(start)
    if free:
        for index, found in zip(
            free, nelder_mead(_objective(rows, layout, free), [start[i] for i in free]), strict=True
        ):
            best[index] = found
    efficiency, fitted_harnesses = layout.decode(best)
    engine = len(PARAMETERS)
    width = len(HARNESS_PARAMETERS)
    return Fitted(
        Efficiency(*(rounded(v) for v in efficiency)),
        {name: Harness(*(rounded(v) for v in harness)) for name, harness in fitted_harnesses.items()},
        seen[:engine],
        {name: seen[engine + i * width : engine + (i + 1) * width] for i, name in enumerate(harnesses)},
    )


def _objective(
    rows: Sequence[FitRow], layout: _Layout, free: list[int]
) -> Callable[[Sequence[float]], float]:
    weight = prior_weight(sum(len(fit_row.read.metrics) for fit_row in rows))
    start = layout.start

    def cost(free_values: Sequence[float]) -> float:
        vector = list(start)
        for index, free_value in zip(free, free_values, strict=True):
            vector[index] = free_value
        prior = weight * sum((vector[i] - start[i]) ** 2 for i in free)
        return prior + _data_cost(rows, *layout.decode(vector))

    return cost


def residuals(
    rows: Sequence[FitRow], efficiency: Efficiency, harnesses: dict[str, Harness], split: str
) -> list[dict[str, Any]]:
    """One entry per measured figure: measured, predicted and the error in percent."""
    found = []
    for fit_row in rows:
        harness = harnesses.get(fit_row.harness)
        prediction = predict(fit_row.read.configuration, fit_row.read.workload, efficiency, harness)
        for metric in compare(fit_row.read, prediction):
            found.append(
                {
                    "id": fit_row.row.get("id"),
                    "model": fit_row.row.get("model"),
                    "campaign": fit_row.source,  # the measurement campaign, left out as a whole
                    "split": split,
                    "metric": metric.name,
                    "measured": rounded(metric.measured),
                    "predicted": rounded(metric.predicted),
                    "error_percent": round(100 * (metric.predicted - metric.measured) / metric.measured, 1),
                }
            )
    return found


def family_priors(
    family: str, rows: Sequence[Any], fitted_now: dict[str, Fitted] | None = None
) -> list[float]:
    """Where the family's fit starts and what its prior pulls towards: the fitted parameters of the
    family it borrows from (PRIORS_FROM; taken from ``fitted_now`` when this run already fitted it),
    else the generic priors of PARAMETERS."""
    sibling = PRIORS_FROM.get(family)
    if not sibling:
        return [prior for prior, *_ in PARAMETERS.values()]
    if fitted_now and sibling in fitted_now:
        return list(fitted_now[sibling].efficiency)
    return list(fit_rows(split_rows(sibling, rows)[0]).efficiency)


class Fold(NamedTuple):
    """One group left out: the parameters fitted without it, and its figures predicted by them."""

    fitted: Fitted
    residuals: list[dict[str, Any]]


def leave_out(
    family: str,
    rows: Sequence[Any],
    key: Callable[[FitRow], str] = lambda fit_row: fit_row.source,
    priors: Sequence[float] | None = None,
) -> dict[str, Fold]:
    """Leave one group out (by default a source; or a model, or a hardware): every group of the
    family's fitted rows is predicted by parameters fitted on the other groups only, with its
    harness's terms where the other groups measured with that harness too -- the error on data the
    parameters never saw. The group's rows whose figures contradict each other, never fitted, are
    predicted too (not those measured again with newer software, which no benchmark scores)."""
    pool, unfitted = split_rows(family, rows)
    # rows measured again with newer software describe older software: not predicted, as not scored
    contradicting = [fit_row for fit_row in unfitted if not superseded_by_newer_software(fit_row.row, rows)]
    priors = priors if priors is not None else family_priors(family, rows)
    folds: dict[str, Fold] = {}
    for group in sorted({key(fit_row) for fit_row in pool}):
        training = [fit_row for fit_row in pool if key(fit_row) != group]
        if not training:
            continue  # a family measured in one group only cannot leave it out
        fitted = fit_rows(training, priors)
        left = [fit_row for fit_row in pool + contradicting if key(fit_row) == group]
        folds[group] = Fold(fitted, residuals(left, fitted.efficiency, fitted.harnesses, "left out"))
    return folds


def left_out_residuals(folds: dict[str, Fold]) -> list[dict[str, Any]]:
    """Every left-out figure of every fold, in the order of the groups."""
    return [entry for fold in folds.values() for entry in fold.residuals]


def summary(entries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per metric: the figures and rows, median and mean absolute percentage error, the median signed
    error, and the central 80 % of measured / predicted (the interval a prediction carries)."""
    by_metric: dict[str, Any] = {}
    for name in METRICS:
        chosen = [entry for entry in entries if entry["metric"] == name]
        if not chosen:
            by_metric[name] = None
            continue
        errors = [entry["error_percent"] for entry in chosen]
        ratios = sorted(entry["measured"] / entry["predicted"] for entry in chosen if entry["predicted"] > 0)
        by_metric[name] = {
            "figures": len(chosen),
            "rows": len({(repr(entry["id"]), repr(entry["model"])) for entry in chosen}),
            "median_ape_percent": round(statistics.median(abs(error) for error in errors), 1),
            "mape_percent": round(sum(abs(error) for error in errors) / len(errors), 1),
            "median_error_percent": round(statistics.median(errors), 1),
            "measured_over_predicted": [round(_quantile(ratios, q), 3) for q in INTERVAL_QUANTILES],
        }
    return by_metric


def _quantile(ordered: Sequence[float], fraction: float) -> float:
    """The ``fraction`` quantile of sorted values, linearly interpolated (the same in every process)."""
    if not ordered:
        return 1.0
    position = fraction * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def parameters_document(fitted: Fitted) -> dict[str, Any]:
    """A fit's engine parameters and harness terms, as plain values (a fold of the validation)."""
    return {
        "parameters": fitted.efficiency._asdict(),
        "harnesses": {name: harness._asdict() for name, harness in fitted.harnesses.items()},
    }


def harness_document(fitted: Fitted) -> dict[str, Any]:
    """Each harness's terms with their unit and meaning, and whether its rows could see them."""
    return {
        name: {
            parameter: {
                "value": getattr(harness, parameter),
                "unit": unit,
                "meaning": meaning,
                "fitted": visible,
            }
            for (parameter, (_, _, _, unit, meaning)), visible in zip(
                HARNESS_PARAMETERS.items(), fitted.harness_seen[name], strict=True
            )
        }
        for name, harness in fitted.harnesses.items()
    }
