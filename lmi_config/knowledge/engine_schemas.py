"""Schema of engine_registries.json: the model types each Neuron engine path of a djl-neuronx image loads."""

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


class EngineRegistriesFile(Sourced):
    neuron_releases: dict[str, NeuronRelease]  # DJL version of the djl-neuronx image
    nxdi: dict[str, ModelTypes]  # NxD Inference version -> MODEL_TYPES
    optimum_neuron: dict[str, ModelTypes]  # optimum-neuron version -> text-generation exporters
