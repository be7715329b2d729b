"""Schemas of the generated model catalog (models_generated.json, scripts/gen_model_catalog.py) and of
the model identities (model_identities.json, scripts/gen_model_identities.py)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from lmi_config.knowledge.schema_base import Sourced

# the release page of the wheel a config.json copy (aiconfigurator) or a model table (litgpt) was read from
_WHEEL_SOURCE = r"https://pypi\.org/project/(aiconfigurator|litgpt)/[\w.]+/#files$"


class GeneratedModelRow(Sourced):
    model_id: str = Field(pattern=r"^[\w.\-]+/[\w.\-]+$")
    aliases: list[str]
    config: dict[str, Any]  # config.json verbatim (aiconfigurator), or dimensions translated (litgpt)
    hf_quant_config: dict[str, Any] | None  # a ModelOpt checkpoint's quantization file, verbatim
    total_params: int | None = Field(ge=1)
    params_source: str | None
    memory_not_estimated: str | None
    source: str = Field(pattern=_WHEEL_SOURCE)
    # False: dimensions from a table (LitGPT's), not config.json: no dtype, auto_map or context stated
    config_verbatim: bool = True

    @model_validator(mode="after")
    def _sized_or_why_not(self) -> GeneratedModelRow:
        # a row is either sized by the project's formula or says why it is not: never both, never neither
        if (self.total_params is None) == (self.memory_not_estimated is None):
            raise ValueError(f"{self.model_id}: exactly one of total_params and memory_not_estimated is set")
        if (self.total_params is None) != (self.params_source is None):
            raise ValueError(f"{self.model_id}: params_source goes with total_params")
        return self


class GeneratedModelsFile(Sourced):
    models: list[GeneratedModelRow]


class ModelIdentityRow(Sourced):
    model_id: str = Field(pattern=r"^[\w.\-]+/[\w.\-]+$")
    architecture: str = Field(pattern=r"^\w+$")
    model_type: str | None  # transformers' model type of the architecture's class, where unambiguous
    table: str  # the vLLM test registry's table: text_generation, multimodal, embedding …
    trust_remote_code: bool
    source: str = Field(
        pattern=r"^https://github\.com/vllm-project/vllm/blob/v[\w.]+/tests/models/registry\.py#L\d+$"
    )


class ModelIdentitiesFile(Sourced):
    models: list[ModelIdentityRow]
