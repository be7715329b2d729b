"""The performance model's data: device facts and the shapes engines compile
(``data/perf_devices.json``), the fitted efficiency parameters of each engine family
(``data/perf_fit.json``), where measured runs were far from the figures (``data/perf_caveats.json``),
and the latency targets plan ranks within (``data/latency_targets.json``)."""

from __future__ import annotations

from typing import Any

from lmi_config.knowledge import load_data


def device_rows() -> list[dict[str, Any]]:
    """Every device with facts (one chip or GPU each), as the data file states them."""
    return list(load_data("perf_devices.json")["devices"])


def fitted_families() -> dict[str, Any]:
    """The fitted parameters, rows and residuals of each engine family."""
    return dict(load_data("perf_fit.json")["families"])


def engine_buckets(engine: str) -> dict[str, Any] | None:
    """How an engine buckets the shapes it compiles (``scripts/gen_neuron_buckets.py``), or None."""
    for entry in load_data("perf_devices.json").get("engine_buckets", []):
        if entry["engine"] == engine:
            return dict(entry)
    return None


def measured_caveats() -> list[dict[str, Any]]:
    """Where measured runs the model never saw were far from its figures (refused, or marked)."""
    return list(load_data("perf_caveats.json")["caveats"])


def latency_targets() -> dict[str, Any]:
    """The benchmark suite's latency targets (TTFT, TPOT, the percentile they hold at), and which is
    plan's default (``scripts/gen_latency_targets.py``)."""
    return dict(load_data("latency_targets.json"))
