"""Limits the engines' own code sets, generated from that code: the largest decode batch vLLM
captures a CUDA graph for by default, per vLLM version (``data/vllm_cuda_graphs.json``,
``scripts/gen_vllm_limits.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from lmi_config.knowledge import load_data, version_tuple


@dataclass(frozen=True)
class CudaGraphBound:
    """The largest batch a vLLM version captures as a CUDA graph by default, and who says so."""

    max_capture_batch: int
    version: str  # the vLLM version whose code states it
    rule: str
    source: str
    stated_by_version: bool  # False: the version asked for states none, the nearest older one does


@cache
def _cuda_graphs() -> dict[str, Any]:
    return dict(load_data("vllm_cuda_graphs.json")["versions"])


@cache  # asked once per (instance, TP) group a plan walks
def cuda_graph_bound(vllm_version: str | None) -> CudaGraphBound | None:
    """The bound of ``vllm_version``; where that version's code states none (or it is not listed),
    the nearest older listed version that states one, marked so; None when no version at or below
    it states one, or the image's vLLM version is unknown."""
    if not vllm_version:
        return None
    table = _cuda_graphs()
    stated = sorted(
        (version for version, row in table.items() if row["max_capture_batch"] is not None), key=version_tuple
    )
    older = [version for version in stated if version_tuple(version) <= version_tuple(vllm_version)]
    if not older:
        return None
    chosen = older[-1]
    row = table[chosen]
    return CudaGraphBound(
        row["max_capture_batch"], chosen, row["rule"], row["source"], chosen == vllm_version
    )


def largest_cuda_graph_bound() -> int:
    """The largest bound any listed vLLM version states (an upper bound where the version is unknown)."""
    return max(
        row["max_capture_batch"] for row in _cuda_graphs().values() if row["max_capture_batch"] is not None
    )
