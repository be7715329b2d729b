"""The performance model's data: device facts (``data/perf_devices.json``) and the fitted
efficiency parameters of each engine family (``data/perf_fit.json``)."""

from __future__ import annotations

from typing import Any

from lmi_config.knowledge import load_data


def device_rows() -> list[dict[str, Any]]:
    """Every device with facts (one chip or GPU each), as the data file states them."""
    return list(load_data("perf_devices.json")["devices"])


def fitted_families() -> dict[str, Any]:
    """The fitted parameters, rows and residuals of each engine family."""
    return dict(load_data("perf_fit.json")["families"])
