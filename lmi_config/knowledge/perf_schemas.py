"""Schemas of the performance model's data files: device facts (``perf_devices.json``) and the
fitted efficiency parameters with their inputs and residuals (``perf_fit.json``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from lmi_config.knowledge.schema_base import Sourced, Strict

Dtype = Literal["bf16", "fp16", "fp8"]


class PerfDevice(Sourced):
    """One chip or GPU as its vendor states it (``per`` says which)."""

    accelerator_name: str
    generation: str
    per: Literal["chip", "GPU"]
    physical_cores_per_chip: int | None = Field(default=None, ge=1)
    peak_dense_tflops: dict[Dtype, float]
    memory_bandwidth_gb_per_s: float = Field(gt=0)
    interconnect: str
    interconnect_gb_per_s: float | None = Field(default=None, gt=0)
    note: str

    @model_validator(mode="after")
    def _has_a_16_bit_rate(self) -> PerfDevice:
        if not ({"bf16", "fp16"} & set(self.peak_dense_tflops)):
            raise ValueError(f"{self.accelerator_name}: no bf16 or fp16 peak")
        if any(value <= 0 for value in self.peak_dense_tflops.values()):
            raise ValueError(f"{self.accelerator_name}: a peak must be positive")
        return self


class PerfDevicesFile(Sourced):
    units: dict[str, str]
    devices: list[PerfDevice]


class FittedParameter(Strict):
    value: float = Field(ge=0)
    unit: Literal["fraction", "ms", "us"]
    meaning: str
    prior: float
    fitted: bool  # false: no fitted row sees this parameter, it keeps its prior


class Residual(Strict):
    id: str | None
    model: str | None
    split: Literal["fitted", "held-out", "not fitted"]
    metric: Literal["ttft", "tpot", "throughput"]
    measured: float
    predicted: float
    error_percent: float


class FamilyFit(Strict):
    batching: str
    parameters: dict[str, FittedParameter]
    fitted_rows: list[str | None]
    held_out_rows: list[str | None]
    not_fitted_rows: list[str | None]
    errors: dict[str, dict[str, float | None]]
    residuals: list[Residual]


class FitInputs(Strict):
    measurements: str
    measurements_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    held_out_models: list[str]
    unfitted_flags: list[str]
    unfitted_older_software: str
    prior_weight: float
    objective: str


class PerfFitFile(Sourced):
    inputs: FitInputs
    families: dict[Literal["neuron-tnx", "neuron-nxd", "gpu-vllm", "gpu-trtllm"], FamilyFit]
