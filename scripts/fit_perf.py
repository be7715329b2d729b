"""Fit the performance model's parameters per engine family, validate them by leaving each source
out, and write data/perf_fit.json.

Run: python scripts/fit_perf.py [--measurements FILE] [--family NAME ...] [--output FILE | --check]
     [--cross-validate [--leave-out source|model|hardware]]

Physics stays in ``lmi_config/perf/``; the fit (``lmi_config/perf/fit.py``) chooses, per engine
family, the engine's parameters (``Efficiency``, each with a unit and a physical meaning) and, apart
from them, the terms each benchmark harness adds (``Harness``: users started in waves, a warm-up
counted in TTFT), minimizing the absolute relative error of every measured figure. Every row the
model can predict is fitted, except figures that contradict each other in their source and rows
measured again with a newer Neuron SDK. Then every source (a measurement campaign:
``lmi_config.perf.measured.source_of``) is predicted by a fit on the other sources only: that error,
per family and metric, is stored with the fit and is the error ``plan``, ``explain`` and ``render``
print beside every figure. It prints every residual, the harness terms, the error of the fit and
the error left out by source. ``--cross-validate`` also prints the error leaving out each model or
each hardware in turn (``--leave-out``). Deterministic: Nelder-Mead from a fixed start, parameters
rounded to 4 significant digits before the residuals are computed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lmi_config.io import OutputError, write_atomically  # noqa: E402
from lmi_config.perf.fit import (  # noqa: E402
    BATCHING_NOTE,
    FAMILIES,
    FIGURES_PER_PARAMETER,
    HARNESS_PARAMETERS,
    INTERVAL_MIN_FIGURES,
    INTERVAL_QUANTILES,
    PARAMETERS,
    PRIOR_WEIGHT,
    PRIORS_FROM,
    UNFITTED_FLAGS,
    FitRow,
    Fitted,
    family_priors,
    fit_rows,
    harness_document,
    leave_out,
    left_out_residuals,
    parameters_document,
    prior_weight,
    residuals,
    rounded,
    split_rows,
    summary,
)
from lmi_config.perf.measured_file import parse_measurements, read_measurement_bytes  # noqa: E402

DEFAULT_MEASUREMENTS = ROOT.parent / "shared" / "reference" / "perf_measurements.json"
OUTPUT = ROOT / "lmi_config" / "data" / "perf_fit.json"
LEAVE_OUT: dict[str, Callable[[FitRow], str]] = {
    "source": lambda fit_row: fit_row.source,
    "model": lambda fit_row: str(fit_row.row.get("model")),
    "hardware": lambda fit_row: str(fit_row.row.get("hardware")),
}
ACCELERATORS = {"Neuron": ("neuron-tnx", "neuron-nxd"), "GPU": ("gpu-vllm", "gpu-trtllm")}

__all__ = ["FIGURES_PER_PARAMETER", "PARAMETERS", "PRIOR_WEIGHT", "build", "main", "prior_weight"]


def fit_family(
    family: str, rows: list[dict[str, Any]], fitted_now: dict[str, Fitted] | None = None
) -> dict[str, Any]:
    """The parameters of one engine family and its harnesses, with the rows they were fitted on, the
    residuals, and each source predicted by a fit on the others (``cross_validation``);
    ``fitted_now`` (filled here) holds what this run fitted, for the families that borrow priors."""
    fitted_rows, unfitted = split_rows(family, rows)
    priors = family_priors(family, rows, fitted_now)
    fitted = fit_rows(fitted_rows, priors)
    if fitted_now is not None:
        fitted_now[family] = fitted
    found = residuals(fitted_rows, fitted.efficiency, fitted.harnesses, "fitted") + residuals(
        unfitted, fitted.efficiency, fitted.harnesses, "not fitted"
    )
    folds = leave_out(family, rows, priors=priors)
    left_out = left_out_residuals(folds)
    return {
        "batching": BATCHING_NOTE[family],
        "parameters": {
            name: {
                "value": getattr(fitted.efficiency, name),
                "unit": unit,
                "meaning": meaning,
                "prior": rounded(prior),
                "fitted": visible,
            }
            for (name, (_, _, _, unit, meaning)), prior, visible in zip(
                PARAMETERS.items(), priors, fitted.seen, strict=True
            )
        },
        "priors_from": PRIORS_FROM.get(family, "generic (lmi_config/perf/fit.py PARAMETERS)"),
        "harnesses": harness_document(fitted),
        "sources": sorted({fit_row.source for fit_row in fitted_rows}),
        "fitted_rows": [fit_row.row.get("id") for fit_row in fitted_rows],
        "not_fitted_rows": [fit_row.row.get("id") for fit_row in unfitted],
        "errors": {
            "fitted": summary([entry for entry in found if entry["split"] == "fitted"]),
            "not_fitted": summary([entry for entry in found if entry["split"] == "not fitted"]),
        },
        "cross_validation": {
            "left_out": "source",
            "metrics": summary(left_out),
            # the fit without each source: what predicts any row of that source the fit never saw
            "folds": {source: parameters_document(fold.fitted) for source, fold in folds.items()},
            "residuals": left_out,
        },
        "residuals": found,
    }


def _pool(families: dict[str, Any]) -> None:
    """Each family's interval per metric: its own sources left out, or -- below INTERVAL_MIN_FIGURES
    figures -- those of every family on its accelerator (Neuron or GPU) pooled, saying so."""
    for accelerator, members in ACCELERATORS.items():
        pooled = summary(
            [
                entry
                for family in members
                if family in families
                for entry in families[family]["cross_validation"]["residuals"]
            ]
        )
        for family in members:
            if family not in families:
                continue
            validation = families[family]["cross_validation"]
            intervals = {}
            for metric, own in validation["metrics"].items():
                chosen, basis = own, family
                if own is None or own["figures"] < INTERVAL_MIN_FIGURES:
                    chosen, basis = pooled[metric], f"{accelerator} families pooled"
                intervals[metric] = (
                    None
                    if chosen is None
                    else {
                        "measured_over_predicted": chosen["measured_over_predicted"],
                        "median_ape_percent": chosen["median_ape_percent"],
                        "figures": chosen["figures"],
                        "from": basis,
                    }
                )
            validation["pooled"] = {"accelerator": accelerator, "metrics": pooled}
            validation["intervals"] = intervals


def build(path: Path, families: Sequence[str], previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """The whole perf_fit.json document (families not asked for are kept from ``previous``)."""
    raw = read_measurement_bytes(path)
    rows = parse_measurements(raw, path)
    result = dict(previous["families"]) if previous else {}
    fitted_now: dict[str, Fitted] = {}
    for family in FAMILIES:
        if family in families:
            result[family] = fit_family(family, rows, fitted_now)
    _pool(result)
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
            "unfitted_flags": list(UNFITTED_FLAGS),
            "unfitted_older_software": "rows of a model and hardware measured again with a newer Neuron SDK",
            "prior_weight": PRIOR_WEIGHT,
            "figures_per_parameter": FIGURES_PER_PARAMETER,
            "priors_from": PRIORS_FROM,
            "harness_parameters": {
                name: {"prior": prior, "unit": unit, "meaning": meaning}
                for name, (prior, _, _, unit, meaning) in HARNESS_PARAMETERS.items()
            },
            "campaign": "lmi_config.perf.measured.source_of: source_group, hardware, software version",
            "harness": "lmi_config.perf.measured.harness_of: a row's harness, else its source_group",
            "interval": (
                f"measured / predicted of each family's figures, every source predicted by a fit on the others, "
                f"quantiles {list(INTERVAL_QUANTILES)}; below {INTERVAL_MIN_FIGURES} figures the accelerator's families pooled"
            ),
            "objective": "sum of |predicted / measured - 1| over every figure of every fitted row, plus prior_weight x max(1, figures_per_parameter x parameters / figures) x squared log distance of each parameter from its prior (generic, or the fitted parameters of the family named in priors_from)",
        },
        "families": {family: result[family] for family in FAMILIES if family in result},
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Fit and write (or, with --check, compare with the stored file and exit 1 on a difference);
    exit 2 with one line on a file that cannot be read or written."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--measurements", type=Path, default=DEFAULT_MEASUREMENTS)
    parser.add_argument("--family", action="append", choices=FAMILIES, help="fit only these (default: all)")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--check", action="store_true", help="compare with --output instead of writing it")
    parser.add_argument(
        "--cross-validate",
        action="store_true",
        help="also leave each group (--leave-out) out in turn, fit on the others and print the error on its rows",
    )
    parser.add_argument(
        "--leave-out",
        choices=tuple(LEAVE_OUT),
        default="source",
        help="what --cross-validate leaves out in turn: a source (default), a model or a hardware",
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
        entry = document["families"][family]
        for residual in entry["residuals"] + entry["cross_validation"]["residuals"]:
            print(_residual_line(family, residual))
    for family in families:
        entry = document["families"][family]
        for harness, terms in entry["harnesses"].items():
            shown = ", ".join(
                f"{name} {term['value']:g} {term['unit']}" + ("" if term["fitted"] else " (not seen)")
                for name, term in terms.items()
            )
            print(f"{family}: harness {harness}: {shown}")
        print(f"{family}: fitted {_figures(entry['errors']['fitted'])}")
        print(f"{family}: leave one source out {_figures(entry['cross_validation']['metrics'])}")
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


def _print_cross_validation(measurements: Path, families: list[str], leave: str = "source") -> None:
    """Leave-one-group-out error per family and for Neuron and GPU together (on rows never fitted)."""
    rows = parse_measurements(read_measurement_bytes(measurements), measurements)
    by_group: dict[str, list[dict[str, Any]]] = {}
    for family in families:
        found = left_out_residuals(leave_out(family, rows, LEAVE_OUT[leave]))
        print(f"{family}: leave one {leave} out: {_figures(summary(found))}")
        by_group.setdefault("Neuron" if family.startswith("neuron") else "GPU", []).extend(found)
    for group, found in by_group.items():
        print(f"{group}: leave one {leave} out: {_figures(summary(found))} ({len(found)} figures)")


def _figures(by_metric: dict[str, Any]) -> str:
    return ", ".join(
        f"{name} MAPE n/a"
        if by_metric.get(name) is None
        else f"{name} MAPE {by_metric[name]['mape_percent']:.1f} % (median {by_metric[name]['median_ape_percent']:.1f} %, "
        f"{by_metric[name]['rows']} rows)"
        for name in ("ttft", "tpot", "throughput")
    )


if __name__ == "__main__":
    raise SystemExit(main())
