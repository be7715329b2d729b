"""The memory model's constants (``data/memory.json``): per-core overheads, GPU estimates, dtype
sizes, host RAM, loading time, the headroom threshold and the container defaults."""

from functools import cache
from typing import Any, NamedTuple

from lmi_config.knowledge import load_data


@cache
def memory_constants() -> dict[str, Any]:
    """The whole of ``memory.json`` (the memory model reads its nested sections)."""
    return dict(load_data("memory.json"))


def container_default(name: str) -> Any:
    """One of the container's defaults (``container_defaults``), e.g. ``smart_defaults_since``."""
    return memory_constants()["container_defaults"][name]["value"]


@cache
def headroom_warning_fraction() -> float:
    """Below this fraction of a NeuronCore left free, a configuration is at the edge."""
    return float(memory_constants()["headroom_warning_fraction"]["value"])


class LoadingConstants(NamedTuple):
    """What loading and compiling take, and the timeouts that bound them."""

    download_seconds_per_gib: float
    neuron_compile_seconds_per_billion_params: float
    default_model_loading_timeout_seconds: int
    sagemaker_startup_limit_seconds: int
    timeout_margin_factor: float
    timeout_rounding_seconds: int
    minimum_recommended_timeout_seconds: int


@cache
def loading_constants() -> LoadingConstants:
    """The ``loading`` section as numbers."""
    loading = memory_constants()["loading"]

    def value(name: str) -> Any:
        return loading[name]["value"]

    return LoadingConstants(
        download_seconds_per_gib=float(value("download_seconds_per_gib")),
        neuron_compile_seconds_per_billion_params=float(value("neuron_compile_seconds_per_billion_params")),
        default_model_loading_timeout_seconds=int(value("default_model_loading_timeout_seconds")),
        sagemaker_startup_limit_seconds=int(value("sagemaker_startup_limit_seconds")),
        timeout_margin_factor=float(value("timeout_margin_factor")),
        timeout_rounding_seconds=int(value("timeout_rounding_seconds")),
        minimum_recommended_timeout_seconds=int(value("minimum_recommended_timeout_seconds")),
    )


@cache
def vllm_memory() -> dict[str, Any]:
    """``vllm_memory.json``: how each vLLM release budgets GPU memory (generated) and the constants
    behind the GPU memory model, each with its source."""
    return dict(load_data("vllm_memory.json"))
