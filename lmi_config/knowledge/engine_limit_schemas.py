"""Schemas of engine limits generated from the engines' code: vllm_cuda_graphs.json."""

from __future__ import annotations

from pydantic import Field

from lmi_config.knowledge.schema_base import Sourced, Strict

_VLLM_SOURCE = r"^https://github\.com/vllm-project/vllm/(blob/v[\w.]+/\S+#L\d+|tree/v[\w.]+)$"


class CudaGraphBound(Strict):
    max_capture_batch: int | None = Field(ge=1)  # None: the version's code states no known form
    rule: str = Field(min_length=5)
    source: str = Field(pattern=_VLLM_SOURCE)


class VllmCudaGraphsFile(Sourced):
    versions: dict[str, CudaGraphBound]
