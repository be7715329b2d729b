"""Schema of what the serving runtime sets for each worker: worker_environment.json."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from lmi_config.knowledge.schema_base import Sourced

_VERSION = r"^\d+\.\d+\.\d+$"


class WorkerVariable(Sourced):
    name: str = Field(pattern=r"^[A-Z_][A-Z0-9_]*$")
    accelerator: Literal["neuron", "gpu"]
    since: str = Field(pattern=_VERSION)
    until: str | None = Field(default=None, pattern=_VERSION)


class WorkerEnvironmentFile(Sourced):
    variables: list[WorkerVariable]
