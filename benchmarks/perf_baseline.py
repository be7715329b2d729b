"""Print lmi-config's performance-model error beside NVIDIA AIConfigurator's on the same measured rows.

Run: python benchmarks/perf_baseline.py [--baseline FILE] [FILE ...]
     (defaults: benchmarks/aiconfigurator_baseline.json; ../shared/reference/perf_measurements.json and
     benchmarks/aiconfigurator_perf.json)

The baseline file (``scripts/gen_aiconfigurator_baseline.py``) holds, per measured row id, the TTFT and
TPOT aiconfigurator's own estimator gives for that row's configuration. A row counts where both tools
predict it (lmi-config as ``benchmarks/perf_accuracy.py``'s headline does: by a fit that never saw the
row's source, caveated mixtures of experts included; aiconfigurator where it gave figures); each figure is compared with the measured one as the
source defines it. Lines give, per engine family and per family, model and hardware, the rows, both
tools' mean absolute percentage error (TTFT, TPOT), how often each tool is the closer one on a figure,
and the share of pairs of rows (same model, hardware and source) whose measured TPOT order each tool
keeps -- which of two configurations decodes faster, what a planner ranks by; the rows lmi-config's
parameters were fitted on and the rest are also given apart. The last line is one JSON object: rows
compared, rows only one tool predicts, both tools' TTFT / TPOT MAPE and TPOT order kept. Exit 2 on a
file that cannot be read.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from perf_accuracy import Result, evaluate, fit_splits, pair_group, positive, read_rows  # noqa: E402

from lmi_config.io import OutputError, write_output  # noqa: E402

DEFAULT_BASELINE = ROOT / "benchmarks" / "aiconfigurator_baseline.json"
DEFAULT_MEASUREMENTS = (
    ROOT.parent / "shared" / "reference" / "perf_measurements.json",
    ROOT / "benchmarks" / "aiconfigurator_perf.json",
)
FIGURES = ("ttft", "tpot")


def read_baseline(path: Path) -> tuple[str, dict[str, dict[str, float]]]:
    """(the estimator's name, row id -> {figure: predicted ms}) from a baseline file."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ValueError(f"{path}: cannot read it ({error.strerror or error})") from error
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not JSON ({error})") from error
    if not isinstance(document, dict) or not isinstance(document.get("rows"), list):
        raise ValueError(f'{path}: expected {{"estimator": ..., "rows": [...]}}')
    predicted: dict[str, dict[str, float]] = {}
    for entry in document["rows"]:
        if not isinstance(entry, dict):
            continue
        figures = {name: entry.get(f"{name}_ms") for name in FIGURES}
        if all(positive(value) for value in figures.values()):
            predicted[str(entry.get("id"))] = {name: float(value) for name, value in figures.items()}
    return str(document.get("estimator") or path.name), predicted


class Pair:
    """One row both tools predict: each figure's error for each tool."""

    def __init__(self, result: Result, baseline: Mapping[str, float]) -> None:
        self.row = result.row
        self.ours: dict[str, float] = {}
        self.theirs: dict[str, float] = {}
        # (measured, lmi-config's, the baseline's) TPOT: which of two configurations decodes faster
        self.tpots: tuple[float, float, float] | None = None
        # lmi-config's figures by a fit that never saw the row's source (perf_accuracy's headline)
        for metric in result.headline if result.headline is not None else result.metrics:
            if metric.name == "tpot":
                self.tpots = (metric.measured, metric.predicted, baseline["tpot"])
            if metric.name in FIGURES:
                self.ours[metric.name] = abs(metric.predicted - metric.measured) / metric.measured
                self.theirs[metric.name] = abs(baseline[metric.name] - metric.measured) / metric.measured


def _mape(errors: list[float]) -> float | None:
    return round(100 * sum(errors) / len(errors), 1) if errors else None


def tpot_order(pairs: Sequence[Pair]) -> tuple[int, int, int]:
    """(pairs whose measured TPOT order lmi-config keeps, the baseline keeps, pairs compared), over
    pairs of rows with the same model, hardware and source and different measured TPOT."""
    ours = theirs = compared = 0
    groups: dict[tuple[str, ...], list[tuple[float, float, float]]] = {}
    for pair in pairs:
        if pair.tpots is not None:
            groups.setdefault(pair_group(pair.row), []).append(pair.tpots)
    for members in groups.values():
        for first, second in itertools.combinations(members, 2):
            if first[0] == second[0]:
                continue  # a tie measured: no order to keep
            compared += 1
            faster = first[0] < second[0]
            ours += (first[1] < second[1]) == faster
            theirs += (first[2] < second[2]) == faster
    return ours, theirs, compared


def _share(kept: int, compared: int) -> float | None:
    return round(100 * kept / compared, 1) if compared else None


def _line(label: str, pairs: Sequence[Pair], name: str) -> str:
    parts = []
    for figure in FIGURES:
        ours = [pair.ours[figure] for pair in pairs if figure in pair.ours]
        theirs = [pair.theirs[figure] for pair in pairs if figure in pair.theirs]
        closer = sum(a < b for a, b in zip(ours, theirs, strict=True))
        parts.append(
            f"{figure.upper()} {_mape(ours)} vs {_mape(theirs)} % (lmi-config closer on {closer} of {len(ours)})"
        )
    ours, theirs, compared = tpot_order(pairs)
    parts.append(
        f"TPOT order kept {_share(ours, compared)} vs {_share(theirs, compared)} % of {compared} pairs"
    )
    return f"{label}: {len(pairs)} rows; lmi-config vs {name}: " + "; ".join(parts)


def report(rows: Sequence[Any], name: str, baseline: Mapping[str, Mapping[str, float]]) -> list[str]:
    pairs: list[Pair] = []
    only_ours = only_theirs = 0
    for row in rows:
        outcome = evaluate(row)
        row_id = str(row.get("id")) if isinstance(row, dict) else None
        theirs = baseline.get(row_id) if row_id is not None else None
        if isinstance(outcome, str) or outcome.group != "GPU":
            only_theirs += theirs is not None
            continue
        if theirs is None:
            only_ours += 1
            continue
        pairs.append(Pair(outcome, theirs))
    groups: dict[tuple[str, ...], list[Pair]] = {}
    for pair in pairs:
        row = pair.row
        groups.setdefault((str(row.get("engine_family")),), []).append(pair)
        key = (str(row.get("engine_family")), str(row.get("model")), str(row.get("hardware")))
        groups.setdefault(key, []).append(pair)
    lines = [_line("GPU", pairs, name)]
    # the development rows lmi-config's parameters were fitted on, apart from every row it never fitted
    splits = fit_splits()
    fitted: list[Pair] = []
    never: list[Pair] = []
    for pair in pairs:
        split = splits.get((repr(pair.row.get("id")), repr(pair.row.get("model"))))
        (fitted if split == "fitted" else never).append(pair)
    if fitted:
        lines.append(_line("  GPU rows lmi-config was fitted on", fitted, name))
        lines.append(_line("  GPU rows lmi-config never fitted", never, name))
    lines.extend(_line("  " + " ".join(key), groups[key], name) for key in sorted(groups))
    lines.append(f"rows only lmi-config predicts: {only_ours}; rows only {name} predicts: {only_theirs}")
    summary: dict[str, Any] = {"rows": len(pairs), "only_lmi_config": only_ours, "only_baseline": only_theirs}
    for tool, attribute in (("lmi_config", "ours"), ("baseline", "theirs")):
        for figure in FIGURES:
            errors = [
                getattr(pair, attribute)[figure] for pair in pairs if figure in getattr(pair, attribute)
            ]
            summary[f"{tool}_{figure}_mape"] = _mape(errors)
    ours, theirs, compared = tpot_order(pairs)
    summary.update(lmi_config_tpot_order=_share(ours, compared), baseline_tpot_order=_share(theirs, compared))
    lines.append(json.dumps(summary))
    return lines


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, default=DEFAULT_BASELINE)
    parser.add_argument("files", nargs="*", type=Path)
    arguments = parser.parse_args(argv)
    try:
        name, baseline = read_baseline(arguments.baseline)
        rows = read_rows(arguments.files or DEFAULT_MEASUREMENTS)
        write_output("-", "\n".join(report(rows, name, baseline)) + "\n")
    except (ValueError, OutputError) as error:
        print(f"perf_baseline: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
