"""Print the performance model's predictions next to measured rows, with the error.

Run: python benchmarks/perf_accuracy.py [FILE ...]   (default: ../shared/reference/perf_measurements.json)

FILE is in the perf_measurements.json format (``{"rows": [...]}`` or a bare list of rows; a missing
column is null). Rows are grouped by ``engine_family`` (where a row has none, by the one its
``backend`` runs as on its hardware); each predicted row prints every figure it
measures (TTFT, TPOT, throughput, each as its source defines it) against the prediction; a row the
model cannot predict is skipped with the reason. Lines before the last give the error for Neuron
and GPU separately, for the rows fitted / held out / not fitted by ``scripts/fit_perf.py`` and per
source and model.
The last line is one JSON object: rows, skipped, ttft_mape, tpot_mape, throughput_mape (mean
absolute percentage error, percent) and pair_order_agreement (percent of the pairs of rows with the
same model, hardware and source whose measured order -- by output tokens/s where both measure it,
else by TPOT -- the prediction keeps). A figure no row gives is null.
"""

from __future__ import annotations

import itertools
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lmi_config.configfile.text import shorten  # noqa: E402
from lmi_config.io import OutputError, write_output  # noqa: E402
from lmi_config.knowledge.perf_data import fitted_families  # noqa: E402
from lmi_config.perf import Prediction, UnsupportedConfiguration, predict  # noqa: E402
from lmi_config.perf.measured import (  # noqa: E402
    SUPERSEDED_REASON,
    Metric,
    compare,
    read_row,
    superseded_by_newer_software,
)
from lmi_config.perf.measured_file import read_measurements  # noqa: E402

DEFAULT = ROOT.parent / "shared" / "reference" / "perf_measurements.json"
METRICS = ("ttft", "tpot", "throughput")
GROUPS = ("Neuron", "GPU")
SPLITS = (
    ("fitted", "rows the parameters were fitted on"),
    ("held-out", "held-out models (never fitted)"),
    ("not fitted", "rows not fitted (figures that contradict each other)"),
    ("new", "rows the fit never saw"),
)


class Result:
    """One predicted row: the row, its prediction and its figures."""

    def __init__(self, row: Mapping[str, Any], prediction: Prediction, metrics: list[Metric]) -> None:
        self.row = row
        self.prediction = prediction
        self.metrics = metrics

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
        prediction = predict(read.configuration, read.workload)
    except UnsupportedConfiguration as error:
        return str(error)
    except (ArithmeticError, ValueError) as error:
        return f"cannot predict: {error}"
    return Result(row, prediction, compare(read, prediction))


def mape(results: Sequence[Result], metric: str) -> float | None:
    """Mean absolute percentage error of one figure over the rows that give it (percent)."""
    errors = [
        abs(m.predicted - m.measured) / m.measured for r in results for m in r.metrics if m.name == metric
    ]
    return round(100 * sum(errors) / len(errors), 1) if errors else None


def _order_key(result: Result) -> tuple[str, float, float] | None:
    row = result.row
    throughput = row.get("throughput_output_tokens_per_s")
    if positive(throughput):
        return ("throughput", float(throughput), result.prediction.output_tokens_per_second)
    tpot = row.get("tpot_ms")
    if positive(tpot):
        # lower TPOT is better: negate so that larger is better for both
        return ("tpot", -float(tpot), -result.prediction.tpot_ms)
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


def pair_order(results: Sequence[Result]) -> tuple[int, int]:
    """(pairs whose measured order the prediction keeps, pairs compared)."""
    kept = compared = 0
    groups: dict[tuple[str, ...], list[Result]] = {}
    for result in results:
        groups.setdefault(pair_group(result.row), []).append(result)
    for members in groups.values():
        for first, second in itertools.combinations(members, 2):
            a, b = _order_key(first), _order_key(second)
            if a is None or b is None:
                continue
            if a[0] != b[0]:
                # one measures throughput, the other not: compare by TPOT if both give it
                a = (
                    ("tpot", -float(first.row["tpot_ms"]), -first.prediction.tpot_ms)
                    if positive(first.row.get("tpot_ms"))
                    else None
                )
                b = (
                    ("tpot", -float(second.row["tpot_ms"]), -second.prediction.tpot_ms)
                    if positive(second.row.get("tpot_ms"))
                    else None
                )
                if a is None or b is None:
                    continue
            if a[1] == b[1]:
                continue  # a tie measured: no order to keep
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
    kept, compared = pair_order(results)
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
        "ttft_mape": mape(results, "ttft"),
        "tpot_mape": mape(results, "tpot"),
        "throughput_mape": mape(results, "throughput"),
        "pair_order_agreement": round(100 * kept / compared, 1) if compared else None,
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
