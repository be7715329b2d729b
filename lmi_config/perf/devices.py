"""Device facts (``data/perf_devices.json``) and the fitted efficiency of each engine family
(``data/perf_fit.json``), looked up for an instance and a backend."""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from lmi_config.knowledge.instances import Instance
from lmi_config.knowledge.perf_data import device_rows, fitted_families
from lmi_config.perf.types import Efficiency, Harness

GIGA = 1e9
TERA = 1e12

# backend names as the container, the spec and the measurement files spell them
_NEURON_NXD = {
    "nxdi",
    "nxd",
    "neuronx-distributed",
    "neuronx-distributed-inference",
    "nxd-inference",
    "vllm-neuron",
    "vllm",
    "optimum",
    "optimum-neuron",  # NxD models only since "refactor: remove legacy TnX models" (c18aa07d, 2025-03-31)
}
_NEURON_TNX = {"transformers-neuronx", "transformers_neuronx", "tnx", "neuronx"}
_GPU_TRTLLM = {"tensorrt-llm", "trtllm", "tensorrt_llm", "trt-llm"}
_GPU_VLLM = {"vllm", "lmi-dist", "lmi_dist", "huggingface", "scheduler"}


class UnsupportedConfiguration(ValueError):
    """The model has no facts or parameters for this configuration; the message says which."""


class Device(NamedTuple):
    """One chip (Neuron) or GPU, as the vendor states it."""

    accelerator_name: str
    physical_cores_per_chip: int
    peak_dense_flops: dict[str, float]  # FLOP/s per chip by dtype
    memory_bandwidth_bytes_per_second: float
    interconnect_bytes_per_second: float | None
    interconnect: str

    def flops(self, dtype: str) -> float:
        """Peak dense FLOP/s for GEMMs in a dtype (fp8 falls back to bf16 where the device has none)."""
        return self.peak_dense_flops.get(dtype) or self.peak_dense_flops.get("bf16") or 0.0


@cache
def devices() -> dict[str, Device]:
    """Every device with facts, by the ``accelerator_name`` instances.json uses."""
    found = {}
    for row in device_rows():
        link = row.get("interconnect_gb_per_s")
        found[row["accelerator_name"]] = Device(
            accelerator_name=row["accelerator_name"],
            physical_cores_per_chip=int(row.get("physical_cores_per_chip") or 1),
            peak_dense_flops={
                dtype: float(value) * TERA for dtype, value in row["peak_dense_tflops"].items()
            },
            memory_bandwidth_bytes_per_second=float(row["memory_bandwidth_gb_per_s"]) * GIGA,
            interconnect_bytes_per_second=float(link) * GIGA if link else None,
            interconnect=row.get("interconnect") or "",
        )
    return found


def device_for(instance: Instance) -> Device:
    """The device facts of an instance's accelerator; :class:`UnsupportedConfiguration` if none."""
    found = devices().get(instance.accelerator_name)
    if found is None:
        raise UnsupportedConfiguration(
            f"no device facts for {instance.accelerator_name or instance.accelerator} "
            f"({instance.instance_type}) in data/perf_devices.json"
        )
    return found


def engine_family(backend: str, instance: Instance) -> str:
    """neuron-tnx | neuron-nxd | gpu-vllm | gpu-trtllm: how the model runs, which decides its efficiency."""
    name = backend.strip().lower()
    if instance.accelerator == "neuron":
        if name in _NEURON_TNX:
            return "neuron-tnx"
        if name in _NEURON_NXD:
            return "neuron-nxd"
    elif instance.accelerator == "gpu":
        if name in _GPU_TRTLLM:
            return "gpu-trtllm"
        if name in _GPU_VLLM:
            return "gpu-vllm"
    raise UnsupportedConfiguration(
        f"no performance parameters for backend {backend!r} on {instance.instance_type}"
    )


@cache
def fitted_efficiency(family: str) -> Efficiency:
    """The parameters ``scripts/fit_perf.py`` fitted for an engine family."""
    families = fitted_families()
    if family not in families:
        raise UnsupportedConfiguration(f"no fitted parameters for {family} in data/perf_fit.json")
    values = families[family]["parameters"]
    return Efficiency(**{name: float(values[name]["value"]) for name in Efficiency._fields})


def fitted_harness(family: str, harness: str) -> Harness | None:
    """The terms the fit gave a benchmark harness (a row's ``harness_of``) in an engine family, if it
    fitted that harness: what scoring a measured row of that harness adds to the engine's figures."""
    terms = fitted_families().get(family, {}).get("harnesses", {}).get(harness)
    if not terms:
        return None
    return Harness(**{name: float(terms[name]["value"]) for name in Harness._fields})
