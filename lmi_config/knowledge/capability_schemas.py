"""Schemas of the data on what hardware and engines can run: gpu_devices.json, vllm_capabilities.json."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from lmi_config.knowledge.schema_base import Sourced, Strict

_VLLM_LINE = r"^vllm/\S+\.py:\d+ https://github\.com/vllm-project/vllm/blob/v[\w.]+/\S+#L\d+$"


class GpuDevice(Sourced):
    compute_capability: int = Field(ge=30, le=200)  # 75 = 7.5, as vLLM's get_min_capability() counts
    architecture: str


class GpuDevicesFile(Sourced):
    devices: dict[str, GpuDevice]


class CapabilityFact(Strict):
    value: int
    source: str = Field(pattern=_VLLM_LINE)


class AutoDtypeFact(Sourced):
    value: Literal["checkpoint", "supported-by-gpu"]


class Float16Fact(Sourced):
    value: dict[str, str]


class QuantizationMethod(Strict):
    min_capability: int = Field(ge=0)
    activation_dtypes: list[Literal["float16", "bfloat16", "float32"]]
    config_filenames: list[str]  # none: an online method (quantizes the weights as they load)
    source: str = Field(pattern=_VLLM_LINE)


class FallbackFact(Sourced):
    value: bool


class Architectures(Sourced):
    native: list[str]
    multimodal: list[str]
    pooling: list[str]
    previously_supported: list[str]
    through_transformers: list[str]  # listed as supported through the Transformers backend
    transformers_fallback: FallbackFact


class KnownMethods(Strict):
    values: list[str]  # QUANTIZATION_METHODS: a checkpoint declaring any other method stops the start-up
    source: str = Field(pattern=_VLLM_LINE)
    refused_by: str | None = Field(pattern=_VLLM_LINE)  # the "Unknown quantization method" line


class ModeloptDetection(Strict):
    # the config loader reads hf_quant_config.json: a ModelOpt checkpoint loads as modelopt unasked
    value: bool
    source: str


class ModeloptAlgos(Strict):
    value: dict[str, str]  # ModelOpt quant_algo -> the quant_method the config normalization sets
    case_insensitive: bool  # the algorithm is upper-cased before the comparison (0.14+)
    source: str


class VllmRelease(Strict):
    read_from: str
    same_as: str | None = None
    bfloat16_min_capability: CapabilityFact | None = None
    auto_dtype_resolution: AutoDtypeFact | None = None
    float16_unsupported_model_types: Float16Fact | None = None
    quantization: dict[str, QuantizationMethod] | None = None
    known_quantization_methods: KnownMethods | None = None
    modelopt_checkpoint_detected: ModeloptDetection | None = None
    modelopt_quant_algos: ModeloptAlgos | None = None
    architectures: Architectures | None = None

    @model_validator(mode="after")
    def _whole_or_alias(self) -> VllmRelease:
        facts = (
            self.auto_dtype_resolution,
            self.float16_unsupported_model_types,
            self.quantization,
            self.architectures,
        )
        if self.same_as is None and any(fact is None for fact in facts):
            raise ValueError("a release read from its own sources lists every fact")
        if self.same_as is not None and any(fact is not None for fact in facts):
            raise ValueError("an alias (same_as) lists no facts of its own")
        return self


class VllmCapabilitiesFile(Sourced):
    versions: dict[str, VllmRelease]

    @model_validator(mode="after")
    def _aliases_resolve(self) -> VllmCapabilitiesFile:
        for name, row in self.versions.items():
            if row.same_as is not None and self.versions.get(row.same_as, row).same_as is not None:
                raise ValueError(f"{name}: same_as {row.same_as} is not a release listed with its facts")
        return self
