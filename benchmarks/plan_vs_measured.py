"""Does plan pick what was measured best? Groups of measured rows that share a source, model, hardware,
engine family and request shape and differ in configuration (TP, batch, load), each ranked as plan
ranks one instance type.

Run: python benchmarks/plan_vs_measured.py [--no-latency-target] [FILE ...]
     (default: ../shared/reference/perf_measurements.json and benchmarks/optimum_neuron_perf.json)

Each row stands for its configuration filling one instance: as many copies of its TP group as the
instance holds (the same factor for its measured and its predicted figures). Output tokens/s per
instance is measured where the source gives it (divided by the copies it ran), else derived from
the measured TTFT and TPOT by Little's law (users x output tokens / (TTFT + (output - 1) x TPOT):
aiconfigurator's rows give no throughput). Plan's view is the performance model's prediction for an
endpoint (no harness terms), by a fit that never saw the row's source (``scripts/fit_perf.py``'s
fold without it, as ``benchmarks/perf_accuracy.py``'s headline). Both sides rank as plan does within
one instance type: throughput per instance, the rows within the default latency target before any
other (``data/latency_targets.json``: MLPerf's server scenario, TTFT 2 s and TPOT 100 ms at the
99th percentile of requests), judged by plan's own ``PlanWorkload.target_misses``. Both sides are
judged at the statistic the source measures: at the 99th percentile where it states one (the Neuron
pages' p99 columns: measured p99 against plan's predicted p99 TTFT, which is what plan ranks by),
else at the figure it gives (aiconfigurator: one value per run, mean or median unstated) against
plan's predicted mean -- a measured mean says nothing of the p99 it would be held to.
``--no-latency-target`` ranks by throughput alone (what is left to choose is then mostly the TP
degree and copies). A group counts where at least two configurations differ in measured
throughput. A pick that breaks the target as measured where the best meets it is a miss, whatever
its throughput.

Per group: the measured best, plan's pick and the measured throughput of plan's pick over the best's
(what following plan keeps; on one instance type its cost ratio is the inverse), and whether the
best is among the rows plan calls a tie with its pick. The last line is one JSON object: groups,
best_first (percent of groups where plan's pick is the measured best), within_10_percent (percent of
the other groups whose pick keeps at least 90 %), best_in_tie, median and worst ratio.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from perf_accuracy import left_out_prediction, positive, read_rows  # noqa: E402

from lmi_config.configfile.text import shorten  # noqa: E402
from lmi_config.io import OutputError, write_output  # noqa: E402
from lmi_config.perf import UnsupportedConfiguration, engine_family  # noqa: E402
from lmi_config.perf.error import intervals  # noqa: E402
from lmi_config.perf.measured import read_row, source_of, superseded_by_newer_software  # noqa: E402
from lmi_config.plan.workload import PlanWorkload  # noqa: E402

DEFAULTS = (
    ROOT.parent / "shared" / "reference" / "perf_measurements.json",
    ROOT / "benchmarks" / "optimum_neuron_perf.json",
)
KEEP = 0.9  # the share of the best's throughput that counts as "within 10 %"
TARGET = PlanWorkload()  # plan's default workload judges a row against the default latency target


class Member(NamedTuple):
    """One measured configuration of a group, filling one instance."""

    row: Mapping[str, Any]
    measured: float  # output tokens/s per instance
    derived: bool  # from TTFT and TPOT by Little's law (no throughput measured)
    measured_within: bool  # measured TTFT and TPOT within the default latency target
    predicted: float  # output tokens/s per instance, by a fit that never saw the source
    predicted_within: bool

    @property
    def label(self) -> str:
        row = self.row
        load = row.get("concurrency") or row.get("batch_size")
        return f"{shorten(str(row.get('id')), 20)} (TP {row.get('tp')}, batch {row.get('batch_size')}, load {load})"


def measured_within(row: Mapping[str, Any]) -> bool:
    """The row's measured TTFT and TPOT within the default latency target, each at the target's
    percentile (p99) where the source states it, else as the source states it."""
    ttft = row.get("ttft_p99_ms") if positive(row.get("ttft_p99_ms")) else row.get("ttft_ms")
    tpot = row.get("tpot_p99_ms") if positive(row.get("tpot_p99_ms")) else row.get("tpot_ms")
    return not TARGET.target_misses(
        float(ttft) if positive(ttft) else 0.0, float(tpot) if positive(tpot) else 0.0
    )


def predicted_within(row: Mapping[str, Any], prediction: Any) -> bool:
    """The prediction within the default latency target at the statistic the row measures: the
    predicted p99 TTFT where the source states a p99 (what plan ranks by), else the predicted mean."""
    ttft = prediction.ttft_p99_ms if positive(row.get("ttft_p99_ms")) else prediction.ttft_ms
    return not TARGET.target_misses(ttft, prediction.tpot_ms)


def member(row: Mapping[str, Any], rows: Sequence[Any]) -> Member | None:
    """A row as a configuration filling its instance, or None where it cannot be compared."""
    if superseded_by_newer_software(row, rows):
        return None
    read = read_row(row)
    if isinstance(read, str):
        return None
    configuration, workload = read.configuration, read.workload
    if workload.request_rate is not None:
        return None  # under a rate every configuration completes the same: nothing to rank by
    group = configuration.tensor_parallel_degree * configuration.pipeline_parallel_degree
    fill = max(configuration.instance.num_cores // group, 1)
    users = (workload.concurrency or configuration.max_concurrent_sequences) / configuration.copies
    output = workload.output_tokens
    measured = row.get("throughput_output_tokens_per_s")
    ttft, tpot = row.get("ttft_ms"), row.get("tpot_ms")
    if positive(measured):
        per_copy, derived = float(measured) / configuration.copies, False
    elif positive(ttft) and positive(tpot):
        per_copy, derived = users * output / ((ttft + (output - 1) * tpot) / 1000), True
    else:
        return None
    family = engine_family(configuration.backend, configuration.instance)
    try:
        prediction = left_out_prediction(
            family,
            row,
            read,
            configuration._replace(copies=fill),
            workload._replace(concurrency=users * fill),
            with_harness=False,
        )
    except UnsupportedConfiguration:
        return None
    if prediction is None or not math.isfinite(prediction.output_tokens_per_second):
        return None
    return Member(
        row,
        per_copy * fill,
        derived,
        measured_within(row),
        prediction.output_tokens_per_second,
        predicted_within(row, prediction),
    )


def group_key(row: Mapping[str, Any]) -> tuple[str, ...]:
    """Rows ranked against each other share it: source, model, hardware, family and request shape."""
    names = ("model", "hardware", "engine_family", "input_tokens", "output_tokens", "dtype", "quantization")
    return (source_of(row), *(repr(row.get(name)) for name in names))


class Outcome(NamedTuple):
    key: tuple[str, ...]
    members: list[Member]
    best: Member
    pick: Member
    ratio: float  # measured throughput of plan's pick / the best's
    in_tie: bool  # the best is among the rows plan cannot tell from its pick
    breaks_target: bool  # the pick breaks the latency target as measured, where the best meets it

    @property
    def kept(self) -> bool:
        """Within 10 % of the best's throughput, and within the target where the best is."""
        return self.ratio >= KEEP and not self.breaks_target


def judge(key: tuple[str, ...], members: list[Member], target: bool = True) -> Outcome | None:
    if len({round(m.measured, 6) for m in members}) < 2:
        return None
    best = max(members, key=lambda m: (target and m.measured_within, m.measured))
    pick = max(members, key=lambda m: (target and m.predicted_within, m.predicted))
    family = str(best.row.get("engine_family") or "")
    interval = intervals(family).get("throughput")
    in_tie = pick is best or (
        interval is not None
        and best.predicted_within == pick.predicted_within
        and interval.contains(pick.predicted, best.predicted)
    )
    breaks = target and best.measured_within and not pick.measured_within
    return Outcome(key, members, best, pick, pick.measured / best.measured, in_tie, breaks)


def report(rows: Sequence[Any], target: bool = True) -> list[str]:
    groups: dict[tuple[str, ...], list[Member]] = {}
    for row in rows:
        if not isinstance(row, dict):
            continue
        found = member(row, rows)
        if found is not None:
            groups.setdefault(group_key(row), []).append(found)
    outcomes = [
        outcome for key, members in sorted(groups.items()) if (outcome := judge(key, members, target))
    ]
    lines = []
    for outcome in outcomes:
        best, pick = outcome.best, outcome.pick
        verdict = (
            "best" if pick is best else f"keeps {outcome.ratio:.0%}" + (", a tie" if outcome.in_tie else "")
        )
        derived = " (tok/s from TTFT and TPOT)" if best.derived else ""
        lines.append(
            f"{shorten(outcome.key[0], 60)} {shorten(str(best.row.get('model')), 40)} "
            f"{best.row.get('input_tokens')}/{best.row.get('output_tokens')}: {len(outcome.members)} configurations; "
            f"measured best {best.label} {best.measured:,.0f} tok/s per instance{derived}; "
            f"plan's pick {pick.label} {pick.measured:,.0f}: {verdict}"
        )
    first = [o for o in outcomes if o.pick is o.best]
    rest = [o for o in outcomes if o.pick is not o.best]
    ratios = [o.ratio for o in outcomes]
    summary = {
        "groups": len(outcomes),
        "best_first": round(100 * len(first) / len(outcomes), 1) if outcomes else None,
        "latency_target": target,
        "within_10_percent": round(100 * sum(o.kept for o in rest) / len(rest), 1) if rest else None,
        "best_in_tie": round(100 * sum(o.in_tie for o in outcomes) / len(outcomes), 1) if outcomes else None,
        "median_ratio": round(statistics.median(ratios), 3) if ratios else None,
        "worst_ratio": round(min(ratios), 3) if ratios else None,
    }
    lines.append(
        ("within the default latency target: " if target else "no latency target: ")
        + f"{summary['groups']} groups: plan's pick is the measured best in {summary['best_first']} %; of the rest "
        f"{summary['within_10_percent']} % keep at least {KEEP:.0%} of the best's throughput (within the target "
        f"where the best is); the best is within "
        f"plan's tie in {summary['best_in_tie']} %; median kept {summary['median_ratio']}, worst {summary['worst_ratio']}"
    )
    lines.append(json.dumps(summary))
    return lines


def main(argv: Sequence[str]) -> int:
    """Exit 2 with one line on a file that cannot be read or an output that cannot be written."""
    target = "--no-latency-target" not in argv
    paths = [Path(name) for name in argv if name != "--no-latency-target"] or list(DEFAULTS)
    try:
        write_output("-", "\n".join(report(read_rows(paths), target)) + "\n")
    except (ValueError, OutputError) as error:
        print(f"plan_vs_measured: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
