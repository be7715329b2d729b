"""Fit the performance model's efficiency parameters per engine family and write data/perf_fit.json.

Run: python scripts/fit_perf.py [--measurements FILE] [--family NAME ...] [--output FILE | --check]
     [--cross-validate [--leave-out model|hardware]]

Physics stays in ``lmi_config/perf/model.py``; this script only chooses, per engine family
(neuron-tnx, neuron-nxd, gpu-vllm, gpu-trtllm), the parameters of ``Efficiency`` that minimize
the absolute relative error of every measured figure (TTFT, TPOT, throughput, each as its source
defines it) over the rows of the models it fits on -- the error the accuracy targets are stated in
(MAPE); leave-one-model-out cross-validation preferred it to the absolute log error on both Neuron
and GPU. Rows of the held-out models (HELD_OUT_MODELS) are never fitted: their error is the honest
one; ``--cross-validate`` also leaves every model out in turn and prints the error on its rows. It
prints every residual, then the error per family and split. A weak prior pulls each parameter towards a physically
plausible value (for a family in PRIORS_FROM, the fitted parameters of the family measured on the same devices),
more strongly where a family has fewer than FIGURES_PER_PARAMETER figures per parameter; a parameter no fitted row can see (the prefill wait of a family measured only with
static batches) is not fitted and keeps that value, marked ``"fitted": false``. Deterministic: Nelder-Mead from a fixed
start, parameters rounded to 4 significant digits before the residuals are computed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lmi_config.io import OutputError, write_atomically  # noqa: E402
from lmi_config.perf import Efficiency, UnsupportedConfiguration, predict  # noqa: E402
from lmi_config.perf.measured import (  # noqa: E402
    ReadRow,
    compare,
    read_row,
    superseded_by_newer_software,
)
from lmi_config.perf.measured_file import parse_measurements, read_measurement_bytes  # noqa: E402
from lmi_config.perf.minimize import nelder_mead  # noqa: E402

DEFAULT_MEASUREMENTS = ROOT.parent / "shared" / "reference" / "perf_measurements.json"
OUTPUT = ROOT / "lmi_config" / "data" / "perf_fit.json"
FAMILIES = ("neuron-tnx", "neuron-nxd", "gpu-vllm", "gpu-trtllm")
# one split by model, the same for every family: these are predicted, never fitted (the FP8 Llama
# copy became readable after the fit was chosen: it stays out, an honest check of a new model)
HELD_OUT_MODELS = (
    "meta-llama/Llama-2-13b-hf",
    "codellama/CodeLlama-13b-hf",
    "Qwen/Qwen3-32B",
    "nvidia/Llama-3.1-8B-Instruct-FP8",
)
# rows whose figures contradict themselves in the source are reported, never fitted
UNFITTED_FLAGS = ("source_inconsistency:tpot_p99_ms<tpot_ms",)
# what --cross-validate can leave out in turn (a column of the rows)
LEAVE_OUT = ("model", "hardware")
PRIOR_WEIGHT = 0.02  # squared-log penalty per parameter, small next to one figure's error
# below this many measured figures per parameter the prior grows in proportion: a family with a few
# rows (NxD Inference: 3 rows, 8 figures for 8 parameters) cannot pin every parameter, and
# unpinned ones ran to their bounds (decode at 100 % of HBM bandwidth) instead of staying plausible
FIGURES_PER_PARAMETER = 5
# a family with too few rows to pin its parameters borrows its prior from a family fitted on the same
# devices: NxD Inference (3 rows) runs on the NeuronCores, through the compiler, that transformers-neuronx's
# 65 fitted rows measured. Against generic priors this halved the error on NxD models left out in turn
# (TTFT / TPOT / throughput 36 / 27 / 43 % -> 20 / 16 / 25 %) and on optimum-neuron's never-fitted NxD
# rows (TPOT 40.5 -> 33.6 %)
PRIORS_FROM = {"neuron-nxd": "neuron-tnx"}
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
    "decode_bandwidth_fraction": (0.7, 0.05, 1.0, "fraction", "achieved share of HBM bandwidth in decode"),
    "step_overhead_ms": (1.0, 0.01, 100.0, "ms", "fixed time per decode step"),
    "sequence_overhead_us": (
        10.0,
        0.01,
        5000.0,
        "us",
        "time per running sequence per decode step that TP does not divide (sampling, bookkeeping)",
    ),
    "collective_latency_us": (20.0, 0.5, 1000.0, "us", "latency of one all-reduce across the TP group"),
    "request_overhead_ms": (20.0, 0.5, 2000.0, "ms", "fixed time before the first token"),
    "prefill_wait_fraction": (
        0.5,
        0.001,
        2.0,
        "fraction",
        "share of the other in-flight requests' prefill a new request waits for (continuous batching)",
    ),
}
BATCHING_NOTE = {
    "neuron-tnx": "perf-page rows are static batches",
    "neuron-nxd": "vLLM front end, continuous batching",
    "gpu-vllm": "continuous batching",
    "gpu-trtllm": "in-flight (continuous) batching",
}


def _round(number: float) -> float:
    return float(f"{number:.4g}")


def _efficiency(vector: Sequence[float]) -> Efficiency:
    values = {}
    for (name, (_, lower, upper, _, _)), log_value in zip(PARAMETERS.items(), vector, strict=True):
        values[name] = min(max(math.exp(log_value), lower), upper)
    return Efficiency(**values)


def _data_cost(rows: list[tuple[dict[str, Any], ReadRow]], vector: Sequence[float]) -> float:
    """Sum of |predicted / measured - 1| over every figure: the mean absolute percentage error the
    accuracy targets are stated in (each figure counts as much as any other, whatever its size)."""
    efficiency = _efficiency(vector)
    total = 0.0
    for _, read in rows:
        for metric in compare(read, predict(read.configuration, read.workload, efficiency)):
            total += abs(metric.predicted / metric.measured - 1)
    return total


def _seen(rows: list[tuple[dict[str, Any], ReadRow]], start: list[float]) -> list[bool]:
    """Which parameters the rows can see: changing one changes some prediction (a family measured
    only with static batches never sees the prefill wait of continuous batching)."""
    base = _data_cost(rows, start)
    seen = []
    for index in range(len(start)):
        moved = list(start)
        moved[index] += 0.5
        seen.append(_data_cost(rows, moved) != base)
    return seen


def prior_weight(figures: int) -> float:
    """The prior's weight for a fit on this many measured figures: PRIOR_WEIGHT, raised in
    proportion where there are fewer than FIGURES_PER_PARAMETER figures per parameter."""
    enough = FIGURES_PER_PARAMETER * len(PARAMETERS)
    return PRIOR_WEIGHT * max(1.0, enough / max(figures, 1))


def _objective(
    rows: list[tuple[dict[str, Any], ReadRow]], start: list[float], free: list[int]
) -> Callable[[Sequence[float]], float]:
    weight = prior_weight(sum(len(read.metrics) for _, read in rows))

    def cost(free_values: Sequence[float]) -> float:
        vector = list(start)
        for index, free_value in zip(free, free_values, strict=True):
            vector[index] = free_value
        prior = weight * sum((vector[i] - start[i]) ** 2 for i in free)
        return prior + _data_cost(rows, vector)

    return cost


def _residuals(
    rows: list[tuple[dict[str, Any], ReadRow]], efficiency: Efficiency, split: str
) -> list[dict[str, Any]]:
    found = []
    for row, read in rows:
        for metric in compare(read, predict(read.configuration, read.workload, efficiency)):
            found.append(
                {
                    "id": row.get("id"),
                    "model": row.get("model"),
                    "split": split,
                    "metric": metric.name,
                    "measured": _round(metric.measured),
                    "predicted": _round(metric.predicted),
                    "error_percent": round(100 * (metric.predicted - metric.measured) / metric.measured, 1),
                }
            )
    return found


def _mape(residuals: list[dict[str, Any]], split: str) -> dict[str, float | None]:
    summary: dict[str, float | None] = {}
    for name in ("ttft", "tpot", "throughput"):
        errors = [abs(r["error_percent"]) for r in residuals if r["split"] == split and r["metric"] == name]
        summary[f"{name}_mape_percent"] = round(sum(errors) / len(errors), 1) if errors else None
    return summary


Pairs = list[tuple[dict[str, Any], ReadRow]]


def split_rows(family: str, rows: list[dict[str, Any]]) -> tuple[Pairs, Pairs, Pairs]:
    """(fitted, held out, not fitted): the rows of one family the model can predict, split."""
    fitted: Pairs = []
    held_out: Pairs = []
    unfitted: Pairs = []
    for row in rows:
        if row.get("engine_family") != family:
            continue
        read = read_row(row)
        if isinstance(read, str):
            continue
        try:
            predict(
                read.configuration, read.workload, _efficiency([math.log(p[0]) for p in PARAMETERS.values()])
            )
        except UnsupportedConfiguration:
            continue
        if row.get("model") in HELD_OUT_MODELS:
            held_out.append((row, read))
        elif set(row.get("quality_flags") or []) & set(UNFITTED_FLAGS) or superseded_by_newer_software(
            row, rows
        ):
            unfitted.append((row, read))
        else:
            fitted.append((row, read))
    return fitted, held_out, unfitted


def fit_rows(fitted: Pairs, priors: Sequence[float] | None = None) -> tuple[Efficiency, list[bool]]:
    """The parameters that fit these rows best (starting from, and held towards, ``priors``: by
    default the generic ones), and which of them the rows can see at all."""
    start = [math.log(prior) for prior in (priors or [p[0] for p in PARAMETERS.values()])]
    seen = _seen(fitted, start) if fitted else [False] * len(start)
    free = [index for index, visible in enumerate(seen) if visible]
    best = list(start)
    if free:
        for index, value in zip(
            free, nelder_mead(_objective(fitted, start, free), [start[i] for i in free]), strict=True
        ):
            best[index] = value
    return Efficiency(*(_round(v) for v in _efficiency(best))), seen


def cross_validate(family: str, rows: list[dict[str, Any]], leave_out: str = "model") -> list[dict[str, Any]]:
    """Leave one group out: for every value of ``leave_out`` (a model, or a hardware: the closest
    these rows come to another source measuring on other machines) among the family's rows
    (held-out models included), fit on the other rows and predict its rows -- the error on data
    the parameters never saw."""
    fitted, held_out, _ = split_rows(family, rows)
    pool = fitted + held_out
    priors = family_priors(family, rows)
    residuals: list[dict[str, Any]] = []
    for group in sorted({str(row.get(leave_out)) for row, _ in pool}):
        training = [pair for pair in pool if str(pair[0].get(leave_out)) != group]
        if not training:
            continue  # a family measured on one group only cannot leave it out
        efficiency, _ = fit_rows(training, priors)
        left_out = [pair for pair in pool if str(pair[0].get(leave_out)) == group]
        residuals += _residuals(left_out, efficiency, "left out")
    return residuals


def family_priors(
    family: str, rows: list[dict[str, Any]], fitted_now: dict[str, Efficiency] | None = None
) -> list[float]:
    """Where the family's fit starts and what its prior pulls towards: the fitted parameters of the
    family it borrows from (PRIORS_FROM; taken from ``fitted_now`` when this run already fitted it),
    else the generic priors of PARAMETERS."""
    sibling = PRIORS_FROM.get(family)
    if not sibling:
        return [prior for prior, *_ in PARAMETERS.values()]
    if fitted_now and sibling in fitted_now:
        return list(fitted_now[sibling])
    efficiency, _ = fit_rows(split_rows(sibling, rows)[0])
    return list(efficiency)


def fit_family(
    family: str, rows: list[dict[str, Any]], fitted_now: dict[str, Efficiency] | None = None
) -> dict[str, Any]:
    """The parameters of one engine family, with the rows they were fitted on and the residuals;
    ``fitted_now`` (filled here) holds what this run fitted, for the families that borrow priors."""
    fitted, held_out, unfitted = split_rows(family, rows)
    priors = family_priors(family, rows, fitted_now)
    efficiency, seen = fit_rows(fitted, priors)
    if fitted_now is not None:
        fitted_now[family] = efficiency
    residuals = (
        _residuals(fitted, efficiency, "fitted")
        + _residuals(held_out, efficiency, "held-out")
        + _residuals(unfitted, efficiency, "not fitted")
    )
    return {
        "batching": BATCHING_NOTE[family],
        "parameters": {
            name: {
                "value": getattr(efficiency, name),
                "unit": unit,
                "meaning": meaning,
                "prior": _round(prior),
                "fitted": visible,
            }
            for (name, (_, _, _, unit, meaning)), prior, visible in zip(
                PARAMETERS.items(), priors, seen, strict=True
            )
        },
        "priors_from": PRIORS_FROM.get(family, "generic (scripts/fit_perf.py PARAMETERS)"),
        "fitted_rows": [row.get("id") for row, _ in fitted],
        "held_out_rows": [row.get("id") for row, _ in held_out],
        "not_fitted_rows": [row.get("id") for row, _ in unfitted],
        "errors": {
            "fitted": _mape(residuals, "fitted"),
            "held_out": _mape(residuals, "held-out"),
            "not_fitted": _mape(residuals, "not fitted"),
        },
        "residuals": residuals,
    }


def build(path: Path, families: Sequence[str], previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """The whole perf_fit.json document (families not asked for are kept from ``previous``)."""
    raw = read_measurement_bytes(path)
    rows = parse_measurements(raw, path)
    result = dict(previous["families"]) if previous else {}
    fitted_now: dict[str, Efficiency] = {}
    for family in families:
        result[family] = fit_family(family, rows, fitted_now)
    return {
        "source": (
            "fitted by scripts/fit_perf.py on shared/reference/perf_measurements.json, whose rows cite "
            "https://github.com/aws-neuron/aws-neuron-sdk/blob/v2.19.0/general/benchmarks/inf2/latency_data_decoder.csv "
            "and https://github.com/ai-dynamo/aiconfigurator/blob/v0.10.0/src/aiconfigurator/systems/silicon_sample.csv "
            "(and the other pinned pages named per row there)"
        ),
        "inputs": {
            "measurements": path.name,
            "measurements_sha256": hashlib.sha256(raw).hexdigest(),
            "held_out_models": list(HELD_OUT_MODELS),
            "unfitted_flags": list(UNFITTED_FLAGS),
            "unfitted_older_software": "rows of a model and hardware measured again with a newer Neuron SDK",
            "prior_weight": PRIOR_WEIGHT,
            "figures_per_parameter": FIGURES_PER_PARAMETER,
            "priors_from": PRIORS_FROM,
            "objective": "sum of |predicted / measured - 1| over every figure of every fitted row, plus prior_weight x max(1, figures_per_parameter x parameters / figures) x squared log distance of each parameter from its prior (generic, or the fitted parameters of the family named in priors_from)",
        },
        "families": {family: result[family] for family in FAMILIES if family in result},
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Fit and write (or, with --check, compare with the stored file and exit 1 on a difference);
    exit 2 with one line on a file that cannot be read or written."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measurements", type=Path, default=DEFAULT_MEASUREMENTS)
    parser.add_argument("--family", action="append", choices=FAMILIES, help="fit only these (default: all)")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--check", action="store_true", help="compare with --output instead of writing it")
    parser.add_argument(
        "--cross-validate",
        action="store_true",
        help="also leave each model out in turn, fit on the others and print the error on its rows",
    )
    parser.add_argument(
        "--leave-out",
        choices=LEAVE_OUT,
        default="model",
        help="what --cross-validate leaves out in turn: a model (default) or a hardware",
    )
    arguments = parser.parse_args(argv)
    families = arguments.family or list(FAMILIES)
    try:
        status = _run(arguments.measurements, families, arguments.output, arguments.check)
        if arguments.cross_validate:
            _print_cross_validation(arguments.measurements, families, arguments.leave_out)
        return status
    except (ValueError, OSError, OutputError) as error:
        print(f"fit_perf: error: {error}", file=sys.stderr)
        return 2


def _run(measurements: Path, families: list[str], output: Path, check: bool) -> int:
    previous = None
    if output.exists():
        try:
            previous = json.loads(output.read_text(encoding="utf-8"))
        except ValueError as error:
            raise ValueError(f"{output}: not a perf_fit.json ({error})") from None
    document = build(measurements, families, previous)
    for family in families:
        for residual in document["families"][family]["residuals"]:
            print(_residual_line(family, residual))
    for family in families:
        errors = document["families"][family]["errors"]
        print(
            f"{family}: fitted {errors['fitted']}  held out {errors['held_out']}  not fitted {errors['not_fitted']}"
        )
    if check:
        stored = previous or {}
        differing = [f for f in families if stored.get("families", {}).get(f) != document["families"][f]]
        if differing or stored.get("inputs") != document["inputs"]:
            print(f"{output.name} differs from a fresh fit: {differing or 'inputs'}", file=sys.stderr)
            return 1
        print(f"{output.name} is what the fit gives")
        return 0
    write_atomically(output, json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    return 0


def _residual_line(family: str, residual: dict[str, Any]) -> str:
    return (
        f"  {family} {residual['split']:<10} {str(residual['id'])[:12]:<6} {str(residual['model'])[:40]:<40} "
        f"{residual['metric']:<10} measured {residual['measured']:<9} predicted {residual['predicted']:<9} "
        f"{residual['error_percent']:+.1f} %"
    )


def _print_cross_validation(measurements: Path, families: list[str], leave_out: str = "model") -> None:
    """Leave-one-group-out error per family and for Neuron and GPU together (on rows never fitted)."""
    rows = parse_measurements(read_measurement_bytes(measurements), measurements)
    by_group: dict[str, list[dict[str, Any]]] = {}
    for family in families:
        residuals = cross_validate(family, rows, leave_out)
        print(f"{family}: leave one {leave_out} out: {_figures(residuals)}")
        by_group.setdefault("Neuron" if family.startswith("neuron") else "GPU", []).extend(residuals)
    for group, residuals in by_group.items():
        print(f"{group}: leave one {leave_out} out: {_figures(residuals)} ({len(residuals)} figures)")


def _figures(residuals: list[dict[str, Any]]) -> str:
    errors = _mape(residuals, "left out")
    return ", ".join(
        f"{name} MAPE "
        + ("n/a" if errors[f"{name}_mape_percent"] is None else f"{errors[f'{name}_mape_percent']:.1f} %")
        for name in ("ttft", "tpot", "throughput")
    )


if __name__ == "__main__":
    raise SystemExit(main())
