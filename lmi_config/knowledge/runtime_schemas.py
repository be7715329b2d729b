"""Schema of what the serving runtime sets for each worker: worker_environment.json."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from lmi_config.knowledge.schema_base import Sourced, Strict

_VERSION = r"^\d+\.\d+\.\d+$"


class WorkerVariable(Sourced):
    name: str = Field(pattern=r"^[A-Z_][A-Z0-9_]*$")
    accelerator: Literal["neuron", "gpu"]
    since: str = Field(pattern=_VERSION)
    until: str | None = Field(default=None, pattern=_VERSION)


class WorkerEnvironmentFile(Sourced):
    variables: list[WorkerVariable]


class CudaArchBranch(Strict):
    min_cuda: str | None = Field(default=None, pattern=r"^\d+\.\d+$")
    archs: list[str] = Field(min_length=1)
    source: str = Field(
        pattern=r"^CMakeLists\.txt:\d+ https://github\.com/vllm-project/vllm/blob/v[\w.]+/CMakeLists\.txt#L\d+$"
    )


class VllmCudaArchsRow(Strict):
    read_from: str
    branches: list[CudaArchBranch] | None
    note: str | None = None


class VllmCudaArchsFile(Sourced):
    versions: dict[str, VllmCudaArchsRow]


class HubTokenVariable(Strict):
    source: str = Field(pattern=r"^https://github\.com/huggingface/huggingface_hub/blob/v[\w.]+/\S+#L\d+$")


class HubTokenVersion(Sourced):
    variables: dict[str, HubTokenVariable]


class HubTokenVariablesFile(Sourced):
    """hub_token_variables.json: the variables each pinned huggingface_hub reads a token from."""

    versions: dict[str, HubTokenVersion]
