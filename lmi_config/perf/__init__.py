"""The performance model: ``predict(configuration, workload)`` → TTFT, TPOT, end-to-end latency,
output tokens/s and requests/s per instance, itemized by bound (see ``perf/model.py``)."""

from __future__ import annotations

from lmi_config.perf.devices import UnsupportedConfiguration, engine_family, fitted_efficiency
from lmi_config.perf.model import predict
from lmi_config.perf.types import (
    Configuration,
    Efficiency,
    Phase,
    Prediction,
    Term,
    Workload,
    configuration_from_shape,
)

__all__ = [
    "Configuration",
    "Efficiency",
    "Phase",
    "Prediction",
    "Term",
    "UnsupportedConfiguration",
    "Workload",
    "configuration_from_shape",
    "engine_family",
    "fitted_efficiency",
    "predict",
]
