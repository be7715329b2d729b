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


class FallbackWarning(Strict):
    message: str  # the warning _resolve_auto_dtype logs (its %s left as written)
    source: str = Field(pattern=_VLLM_LINE)


class AutoDtypeFact(Sourced):
    value: Literal["checkpoint", "supported-by-gpu"]
    fallback_warning: FallbackWarning | None = None  # supported-by-gpu: the warning of the fallback


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


class MaxModelLen(Strict):
    """How _get_and_verify_max_len derives the longest sequence from config.json."""

    possible_keys: list[str]  # the smallest of these is the derived length
    possible_keys_source: str = Field(pattern=_VLLM_LINE)
    model_max_length_replaces: bool  # config.json's model_max_length then replaces it (Command-R)
    not_scaled_types: list[str]  # rope types whose factor is not applied
    original_positions_types: list[
        str
    ]  # rope types whose length is original_max_position_embeddings x factor
    not_scaled_model_types: list[str]  # model types whose rope_scaling is not applied at all
    type_keys: list[str]  # the keys the rope type is read from (none present: the derivation stops)
    source: str = Field(pattern=_VLLM_LINE)


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
    max_model_len: MaxModelLen | None = None

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


# --- rope_scaling.json ---------------------------------------------------------------------------

_TRANSFORMERS_LINE = r"^transformers/\S+\.py:\d+ https://github\.com/huggingface/transformers/blob/v[\w.]+/src/transformers/\S+#L\d+$"


class RopeCheckRow(Strict):
    check: Literal["fields", "type", "factor", "other"]
    message: str
    source: str = Field(pattern=_TRANSFORMERS_LINE)
    count: int | None = Field(default=None, ge=0)
    key: str | None = None
    types: list[str] | None = None
    minimum: float | None = None
    inclusive: bool | None = None
    test: str | None = None  # other: the test as written, not evaluated here

    @model_validator(mode="after")
    def _classified(self) -> RopeCheckRow:
        wanted = {"fields": self.count, "type": self.types, "factor": self.minimum, "other": self.test}
        if wanted[self.check] is None:
            raise ValueError(f"a {self.check} check names what it tests")
        return self


class ConfigClassRow(Strict):
    validation: Literal["own", "shared"]
    class_name: str = Field(alias="class")
    called_at: str = Field(pattern=_TRANSFORMERS_LINE)
    checks: list[RopeCheckRow] | None = None  # own: the class's _rope_scaling_validation, in order

    @model_validator(mode="after")
    def _own_lists_checks(self) -> ConfigClassRow:
        if (self.validation == "own") != (self.checks is not None):
            raise ValueError("a class with its own validation lists its checks; a shared one none")
        return self


class RopeTypeRow(Strict):
    required_keys: list[str]
    source: str = Field(pattern=_TRANSFORMERS_LINE)


class RaiseRow(Strict):
    message: str
    source: str = Field(pattern=_TRANSFORMERS_LINE)


class SharedValidation(Strict):
    types: dict[str, RopeTypeRow]
    unknown_type: Literal["raises", "logged"]
    unknown_type_refusal: RaiseRow | None
    type_keys: list[str]
    missing_keys: RaiseRow | None
    source: str = Field(pattern=_TRANSFORMERS_LINE)


class TransformersRope(Sourced):
    shared: SharedValidation | None  # no modeling_rope_utils.py before 4.43
    model_types: dict[str, ConfigClassRow]


class VllmRope(Strict):
    read_from: str | None = None
    same_as: str | None = None
    types: list[str] | None = None
    type_keys: list[str] | None = None
    renames: dict[str, str] | None = None
    renamed_at: str | None = Field(default=None, pattern=_VLLM_LINE)
    message: str | None = None
    source: str | None = Field(default=None, pattern=_VLLM_LINE)

    @model_validator(mode="after")
    def _whole_or_alias(self) -> VllmRope:
        if (self.same_as is None) == (self.types is None or self.source is None):
            raise ValueError(
                "a release read from its own sources lists its types and source; an alias neither"
            )
        return self


class RopeScalingFile(Sourced):
    transformers: dict[str, TransformersRope]
    vllm: dict[str, VllmRope]
