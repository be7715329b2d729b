"""Print the performance model's predictions next to measured rows, with the error.

Run: python benchmarks/perf_accuracy.py [FILE ...]   (default: ../shared/reference/perf_measurements.json)

FILE is in the perf_measurements.json format (``{"rows": [...]}`` or a bare list of rows; a missing
column is null). Rows are grouped by ``engine_family`` (where a row has none, by the one its
``backend`` runs as on its hardware); each predicted row prints every figure it
measures (TTFT, TPOT, throughput, each as its source defines it) against the prediction; a row the
model cannot predict is skipped with the reason.

The headline is leave one source out: every row is predicted by a fit that never saw its source (a
measurement campaign, ``lmi_config.perf.measured.source_of``). A source the stored fit was fitted on
is predicted by the fit on the other sources, which ``scripts/fit_perf.py`` stores with the fit and
``--check`` recomputes; any other source by the stored fit. Each with its harness's terms where the
fit knows its harness (other campaigns of the same tool), none otherwise. It is printed per engine
family and metric (median and mean absolute percentage error, with the rows and sources each
covers), then per source and per regime (requests in flight per copy: one, 2-8, 9-32, more; prompts up
to 2,048 tokens or longer), where the misses are. The development fit's own error (every row predicted
by the parameters fitted on it) follows,
for Neuron and GPU, the rows fitted / not fitted and per source and model: secondary figures.
The last line is one JSON object: rows, skipped, ttft_mape, tpot_mape, throughput_mape (mean
absolute percentage error of the headline predictions, percent), pair_order_agreement (percent of
the pairs of rows with the same model, hardware and source whose measured order -- by output
tokens/s where both measure it, else by TPOT -- the headline predictions keep), left_out (per family
and metric: rows, median and MAPE) and development_fit (the fit's own MAPE). A figure no row gives is null.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lmi_config.configfile.text import shorten  # noqa: E402
from lmi_config.io import OutputError, write_output  # noqa: E402
from lmi_config.knowledge.perf_data import fitted_families  # noqa: E402
from lmi_config.perf import Prediction, UnsupportedConfiguration, engine_family, predict  # noqa: E402
from lmi_config.perf.devices import fitted_harness  # noqa: E402
from lmi_config.perf.measured import (  # noqa: E402
    SUPERSEDED_REASON,
    Metric,
    ReadRow,
    compare,
    harness_of,
    read_row,
    source_of,
    superseded_by_newer_software,
)
from lmi_config.perf.measured_file import read_measurements  # noqa: E402
from lmi_config.perf.types import Efficiency, Harness  # noqa: E402

DEFAULT = ROOT.parent / "shared" / "reference" / "perf_measurements.json"
METRICS = ("ttft", "tpot", "throughput")
GROUPS = ("Neuron", "GPU")
FAMILIES = ("neuron-tnx", "neuron-nxd", "gpu-vllm", "gpu-trtllm")
SPLITS = (
    ("fitted", "rows the parameters were fitted on"),
    ("not fitted", "rows not fitted (figures that contradict each other)"),
    ("new", "rows the fit never saw"),
)


class Result:
    """One predicted row: the row, its prediction and figures by the stored fit (``metrics``), and the
    figures of a fit that never saw its source (``headline``; None where the stored fit saw the source
    but holds no left-out prediction of this row, e.g. an edited copy of a development row)."""

    def __init__(
        self,
        row: Mapping[str, Any],
        prediction: Prediction,
        metrics: list[Metric],
        headline: list[Metric] | None = None,
    ) -> None:
        self.row = row
        self.prediction = prediction
        self.metrics = metrics
        self.headline = headline

    @property
    def family(self) -> str:
        """The row's engine family, else the one its backend was predicted as."""
        return str(self.row.get("engine_family") or self.prediction.engine_family)

    @property
    def group(self) -> str:
        return "Neuron" if self.family.startswith("neuron") else "GPU"


def evaluate(row: Any) -> Result | str:
    """A row's prediction and figures, or why it is skipped."""
    if not isinstance(row, dict):
        return "a row must be a JSON object"
    read = read_row(row)
    if isinstance(read, str):
        return read
    try:
        family = engine_family(read.configuration.backend, read.configuration.instance)
        prediction = predict(read.configuration, read.workload, harness=stored_harness(family, row))
    except UnsupportedConfiguration as error:
        return str(error)
    except (ArithmeticError, ValueError) as error:
        return f"cannot predict: {error}"
    metrics = compare(read, prediction)
    return Result(row, prediction, metrics, _left_out(family, row, read, metrics))


def stored_harness(family: str, row: Mapping[str, Any]) -> Harness | None:
    """The terms the stored fit gave the row's harness in its family, if it fitted that harness."""
    return fitted_harness(family, harness_of(row))


def _left_out(
    family: str, row: Mapping[str, Any], read: ReadRow, metrics: list[Metric]
) -> list[Metric] | None:
    """The figures of a fit that never saw the row's source: the stored fit's own for a source it was
    not fitted on, else those of the fit on the other sources (stored with the fit as its fold)."""
    fit = fitted_families().get(family)
    if fit is None or source_of(row) not in fit.get("sources", []):
        return metrics
    prediction = left_out_prediction(family, row, read)
    return None if prediction is None else compare(read, prediction)


def left_out_prediction(
    family: str,
    row: Mapping[str, Any],
    read: ReadRow,
    configuration: Any = None,
    workload: Any = None,
    with_harness: bool = True,
) -> Prediction | None:
    """The prediction of a fit that never saw the row's source (of ``configuration`` and ``workload``,
    by default the row's own), with the terms that fit gave the row's harness (``with_harness``; plan
    predicts an endpoint, with none); None for a family fitted on that source alone."""
    configuration = configuration or read.configuration
    workload = workload or read.workload
    fit = fitted_families().get(family)
    if fit is None or source_of(row) not in fit.get("sources", []):
        harness = stored_harness(family, row) if with_harness else None
        return predict(configuration, workload, harness=harness)
    fold = fit.get("cross_validation", {}).get("folds", {}).get(source_of(row))
    if fold is None:
        return None  # a family measured by one source only: nothing fitted without it
    terms = fold["harnesses"].get(harness_of(row)) if with_harness else None
    harness = Harness(**terms) if terms else None
    return predict(configuration, workload, Efficiency(**fold["parameters"]), harness)


def mape(results: Sequence[Result], metric: str, headline: bool = False) -> float | None:
    """Mean absolute percentage error of one figure over the rows that give it (percent); ``headline``:
    of the predictions by a fit that never saw the row's source."""
    errors = _errors(results, metric, headline)
    return round(100 * sum(errors) / len(errors), 1) if errors else None


def _errors(results: Sequence[Result], metric: str, headline: bool) -> list[float]:
    return [
        abs(m.predicted - m.measured) / m.measured
        for r in results
        for m in ((r.headline or []) if headline else r.metrics)
        if m.name == metric
    ]


def left_out_table(results: Sequence[Result]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per engine family and metric, over the predictions of fits that never saw the row's source:
    rows, sources, median and mean absolute percentage error."""
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for family in sorted({result.family for result in results}):
        members = [result for result in results if result.family == family and result.headline is not None]
        for metric in METRICS:
            errors = _errors(members, metric, True)
            if not errors:
                continue
            covered = [r for r in members if any(m.name == metric for m in r.headline or [])]
            table.setdefault(family, {})[metric] = {
                "rows": len(covered),
                "sources": len({source_of(r.row) for r in covered}),
                "median_ape": round(100 * statistics.median(errors), 1),
                "mape": round(100 * sum(errors) / len(errors), 1),
            }
    return table


def _headline_lines(results: Sequence[Result]) -> list[str]:
    lines = [
        "leave one source out (the headline): every row predicted by a fit that never saw its source",
        f"  {'family':<12} {'metric':<11} {'rows':>5} {'sources':>7} {'median APE':>10} {'MAPE':>8}",
    ]
    for family, metrics in left_out_table(results).items():
        for metric, figures in metrics.items():
            lines.append(
                f"  {_shown(family):<12} {metric:<11} {figures['rows']:>5} {figures['sources']:>7} "
                f"{figures['median_ape']:>8.1f} % {figures['mape']:>6.1f} %"
            )
    unmatched = [result for result in results if result.headline is None]
    if unmatched:
        names = ", ".join(_shown(result.row.get("id")) for result in unmatched[:20])
        lines.append(
            f"  not in the headline: {len(unmatched)} rows of a family fitted on their source alone "
            f"(no fit left it out): {names}"
        )
    return lines


def _load_regime(row: Mapping[str, Any]) -> str:
    """The load a row measured, per copy (one request, a few, tens, more) and its prompt length."""
    copies = row.get("dp_or_copies") or 1
    load = (row.get("concurrency") or row.get("batch_size") or 1) / copies
    users = "1 in flight" if load <= 1 else "2-8" if load <= 8 else "9-32" if load <= 32 else ">32"
    prompt = "prompt <=2048" if (row.get("input_tokens") or 0) <= 2048 else "prompt >2048"
    return f"{users}, {prompt}"


def left_out_breakdown(results: Sequence[Result]) -> list[str]:
    """The headline's MAPE per family, metric and source, then per family, metric and regime."""
    lines = []
    for label, key in (("source", lambda r: source_of(r.row)), ("regime", lambda r: _load_regime(r.row))):
        lines.append(f"leave one source out, per {label}:")
        groups: dict[tuple[str, str, str], list[float]] = {}
        for result in results:
            for metric in result.headline or []:
                error = abs(metric.predicted - metric.measured) / metric.measured
                groups.setdefault((result.family, metric.name, key(result)), []).append(error)
        for (family, metric, name), errors in sorted(groups.items()):
            lines.append(
                f"  {_shown(family):<12} {metric:<11} {len(errors):>5} rows  MAPE {100 * sum(errors) / len(errors):6.1f} %  "
                f"{_shown(name)}"
            )
    return lines


def _order_key(result: Result, headline: bool) -> tuple[str, float, float] | None:
    """(what orders the pair, measured, predicted), larger is better: output tokens/s where measured,
    else TPOT (negated)."""
    metrics = (result.headline or []) if headline else result.metrics
    for name, sign in (("throughput", 1.0), ("tpot", -1.0)):
        found = next((m for m in metrics if m.name == name), None)
        if found is not None:
            return (name, sign * found.measured, sign * found.predicted)
    return None


def positive(number: Any) -> bool:
    return (
        isinstance(number, int | float)
        and not isinstance(number, bool)
        and math.isfinite(number)
        and number > 0
    )


def pair_group(row: Mapping[str, Any]) -> tuple[str, ...]:
    """Rows compared in pairs share it: the same model, hardware and source."""
    return tuple(repr(row.get(name)) for name in ("model", "hardware", "source_group"))


def pair_order(results: Sequence[Result], headline: bool = True) -> tuple[int, int]:
    """(pairs whose measured order the predictions keep, pairs compared); ``headline``: the predictions
    of a fit that never saw the row's source, else the stored fit's."""
    kept = compared = 0
    groups: dict[tuple[str, ...], list[Result]] = {}
    for result in results:
        groups.setdefault(pair_group(result.row), []).append(result)
    for members in groups.values():
        for first, second in itertools.combinations(members, 2):
            a, b = _order_key(first, headline), _order_key(second, headline)
            if a is None or b is None or a[0] != b[0] or a[1] == b[1]:
                continue  # nothing comparable, or a tie measured: no order to keep
            compared += 1
            kept += (a[1] > b[1]) == (a[2] > b[2])
    return kept, compared


def fit_splits() -> dict[tuple[str, str], str]:
    """(id, model) -> fitted | held-out | not fitted, as scripts/fit_perf.py split the development rows."""
    splits: dict[tuple[str, str], str] = {}
    for family in fitted_families().values():
        for residual in family.get("residuals", []):
            splits[(repr(residual.get("id")), repr(residual.get("model")))] = residual["split"]
    return splits


def _summary(label: str, results: Sequence[Result]) -> str:
    kept, compared = pair_order(results, headline=False)
    figures = ", ".join(f"{name} MAPE {_percent(mape(results, name))}" for name in METRICS)
    order = f"{100 * kept / compared:.1f} % of {compared} pairs" if compared else "no pairs"
    return f"{label}: {len(results)} rows; {figures}; pair order {order}"


def _by_source_and_model(group: str, members: Sequence[Result]) -> list[str]:
    """The error per source and model, where the residuals of one group come from."""
    by_key: dict[tuple[str, str], list[Result]] = {}
    for result in members:
        key = (_shown(result.row.get("source_group")), _shown(result.row.get("model")))
        by_key.setdefault(key, []).append(result)
    return [
        _summary(f"  {group} {source} {model}", chosen) for (source, model), chosen in sorted(by_key.items())
    ]


def _percent(number: float | None) -> str:
    return "n/a" if number is None else f"{number:.1f} %"


def _row_line(result: Result) -> str:
    row = result.row
    figures = "; ".join(
        f"{m.name} {m.measured:.4g} -> {m.predicted:.4g} ({100 * (m.predicted - m.measured) / m.measured:+.0f} %)"
        for m in result.metrics
    )
    shape = f"TP {row.get('tp')} batch {row.get('batch_size')} {row.get('input_tokens')}/{row.get('output_tokens')}"
    return (
        f"  {_shown(row.get('id'))} {_shown(row.get('model'))} on {_shown(row.get('hardware'))} {shape}: "
        f"{figures} [TPOT bound: {result.prediction.tpot.bound}]"
    )


def _shown(value: Any) -> str:
    """A value from the file as printed: short, whatever the file holds."""
    return shorten(str(value), 80)


def report(rows: Sequence[Any]) -> list[str]:
    """The lines of the report for these rows, the JSON summary last."""
    lines: list[str] = []
    results: list[Result] = []
    skipped: dict[str, list[str]] = {}
    by_family: dict[str, list[Result]] = {}
    superseded: list[Result] = []
    for index, row in enumerate(rows):
        outcome = evaluate(row)
        newer = superseded_by_newer_software(row, rows) if isinstance(row, dict) else None
        if isinstance(outcome, str) or newer:
            name = row.get("id") if isinstance(row, dict) else None
            reason = outcome if isinstance(outcome, str) else SUPERSEDED_REASON
            skipped.setdefault(reason, []).append(_shown(name or f"row {index + 1}"))
            if isinstance(outcome, Result):
                superseded.append(outcome)  # predicted anyway, shown below, never scored
            continue
        results.append(outcome)
        by_family.setdefault(_shown(outcome.family), []).append(outcome)
    for family in sorted(by_family):
        lines.append(f"{family}:")
        lines.extend(_row_line(result) for result in by_family[family])
    for reason, names in sorted(skipped.items()):
        lines.append(f"skipped {len(names)} ({reason}): {', '.join(names)}")
    if superseded:
        lines.append("superseded rows, predicted but not scored:")
        lines.extend(_row_line(result) for result in superseded)
        lines.append(_summary("  superseded rows (not scored)", superseded))
    lines.extend(_headline_lines(results))
    lines.extend(left_out_breakdown(results))
    lines.append("the development fit (rows predicted by the parameters fitted on them; secondary):")
    splits = fit_splits()
    for group in GROUPS:
        members = [r for r in results if r.group == group]
        lines.append(_summary(group, members))
        for split, label in SPLITS:
            chosen = [
                r
                for r in members
                if splits.get((repr(r.row.get("id")), repr(r.row.get("model"))), "new") == split
            ]
            if chosen:
                lines.append(_summary(f"  {group} {label}", chosen))
        lines.extend(_by_source_and_model(group, members))
    kept, compared = pair_order(results)
    summary = {
        "rows": len(rows),
        "skipped": sum(len(names) for names in skipped.values()),
        **{f"{name}_mape": mape(results, name, headline=True) for name in METRICS},
        "pair_order_agreement": round(100 * kept / compared, 1) if compared else None,
        "left_out": left_out_table(results),
        "development_fit": {f"{name}_mape": mape(results, name) for name in METRICS},
    }
    lines.append(json.dumps(summary))
    return lines


def read_rows(paths: Sequence[Path]) -> list[Any]:
    """Every row of every file, in order (ValueError names a file that cannot be read)."""
    rows: list[Any] = []
    for path in paths:
        rows.extend(read_measurements(path))
    return rows


def main(argv: Sequence[str]) -> int:
    """Evaluate every row of every file; the last line is the JSON summary. Exit 2 on a file that
    cannot be read or an output that cannot be written, with one line saying which."""
    paths = [Path(name) for name in argv] or [DEFAULT]
    try:
        write_output("-", "\n".join(report(read_rows(paths))) + "\n")
    except (ValueError, OutputError) as error:
        print(f"perf_accuracy: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
