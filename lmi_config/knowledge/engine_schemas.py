"""Schema of engine_registries.json: the model types each Neuron engine path of a djl-neuronx image loads,
and what djl-serving's TensorRT-LLM build does with the build limits."""

from __future__ import annotations

from pydantic import Field

from lmi_config.knowledge.schema_base import Sourced, Strict

# every fact points at a line of the upstream file, at a pinned commit or a release tag
_UPSTREAM_LINE = r"^\S+:\d+ .*https://github\.com/[\w.-]+/[\w.-]+/blob/[\w.]+/\S+#L\d+$"


class ModelTypes(Strict):
    model_types: list[str] = Field(min_length=1)
    source: str = Field(pattern=_UPSTREAM_LINE)


class EngineVersion(Strict):
    version: str
    source: str = Field(pattern=_UPSTREAM_LINE)


class NeuronRelease(Strict):
    branch: str
    loaders: dict[str, ModelTypes]  # tnx | optimum | vllm -> the handler's gate
    engine_versions: dict[str, EngineVersion]  # transformers-neuronx | nxdi | optimum-neuron | vllm


class NamesFact(Strict):
    names: list[str]
    source: str = Field(pattern=_UPSTREAM_LINE)


class ReplacedFact(Strict):
    by: str
    source: str = Field(pattern=_UPSTREAM_LINE)


class ValueFact(Strict):
    value: int
    source: str = Field(pattern=_UPSTREAM_LINE)


class TrtllmRelease(Strict):
    """What djl-serving's own TensorRT-LLM build (trt_llm_partition.py, LMI 0.33 on) does with the settings."""

    branch: str
    build_arguments: NamesFact  # the BuildConfig.from_dict keys
    replaced: dict[str, ReplacedFact]  # a setting overwritten by another before the build
    handler_defaults: dict[str, ValueFact]  # trt_properties.py defaults (max_input_len)
    java_defaults: dict[str, ValueFact]  # LmiConfigRecommender defaults (max_num_tokens)


class EngineRegistriesFile(Sourced):
    neuron_releases: dict[str, NeuronRelease]  # DJL version of the djl-neuronx image
    nxdi: dict[str, ModelTypes]  # NxD Inference version -> MODEL_TYPES
    optimum_neuron: dict[str, ModelTypes]  # optimum-neuron version -> text-generation exporters
    trtllm_releases: dict[str, TrtllmRelease]  # DJL version of the djl-tensorrtllm image


# --- neuron_rope_scaling.json ------------------------------------------------------------------

_TNX_LINE = r"^https://github\.com/aws-neuron/transformers-neuronx/blob/[0-9a-f]{40}/\S+#L\d+$"


class RopeSince(Strict):
    version: str = Field(pattern=r"^\d+\.\d+$")
    source: str = Field(pattern=_TNX_LINE)


class RopeRelease(Strict):
    branch: str
    version: str = Field(pattern=r"^\d+\.\d+$")
    reads_rope_scaling: bool
    accepted_types: list[str] | None
    source: str = Field(pattern=_TNX_LINE)


class NeuronRopeFile(Sourced):
    model_types: list[str]
    reads_since: RopeSince
    releases: list[RopeRelease]
