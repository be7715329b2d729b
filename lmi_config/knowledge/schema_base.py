"""The base models every data file's schema builds on: no unknown key, frozen, a source where facts are."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, protected_namespaces=())


class Sourced(Strict):
    source: str = Field(min_length=10)
