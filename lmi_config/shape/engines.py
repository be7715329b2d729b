"""Whether the image can load the model's type, beyond vLLM's registry on GPU (``shape/capability.py``).

The judge refuses, on the GPU images, a model type the image's transformers does not know
(model-type-unsupported, LMI206): AutoConfig fails before any engine runs, so ``plan`` and
``render auto`` never propose it. On Neuron the djl-neuronx handler chooses a loader from
``option.model_loader`` and refuses a ``model_type`` its loader does not list ("VllmModelLoader does not
support this config", NxD Inference has no model class for it); facts generated from djl-serving's
handler and NxD Inference's ``MODEL_TYPES`` per release (``knowledge/engine_support.py``). Those Neuron
checks are reported by the rules (LMI206's handler tables, LMI611) but do not block the planner:
``search`` and ``plan --cache-config`` use the Neuron backends as the memory model of an optimum-neuron
export, whose registry differs from the LMI image's (deciding which engine a plan is for is the
planner's; see the report of issue 17).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lmi_config.knowledge.engine_support import (
    LOADER_ENGINES,
    first_release_loading,
    loaders_knowing,
    neuron_registry,
)
from lmi_config.knowledge.image_support import (
    first_knowing,
    image_of,
    known_to_transformers,
    pins_at,
    releases_knowing,
)
from lmi_config.shape.problems import Problem

if TYPE_CHECKING:
    from lmi_config.configfile.canonical import CanonicalConfig
    from lmi_config.shape.dimensions import Target

CHECK = "model-type-unknown-to-neuron-engine"
HANDLER_CHECK = "model-type-unsupported"  # LMI206: the image's transformers, the handler's tables
JUDGED_LOADERS = ("vllm", "nxdi")  # the paths LMI206's handler tables do not cover


def neuron_loader(config: CanonicalConfig, target: Target) -> str | None:
    """The loader the djl-neuronx handler uses, where it is one this module judges (else None)."""
    if target.accelerator != "neuron":
        return None
    if target.backend == "nxdi":
        return "nxdi"
    if target.backend != "transformers-neuronx":
        return None
    written = (config.get("option.model_loader") or "").strip().lower()
    return written if written in JUDGED_LOADERS else None


def model_type_of(target: Target) -> str | None:
    """The model_type of config.json as the handler's AutoConfig reads it."""
    if target.arch is None:
        return None
    return str(target.arch.loading.get("model_type") or target.arch.model_type)


def judge_engine_registries(config: CanonicalConfig, target: Target) -> list[Problem]:
    """An error when a GPU image's transformers does not know the model type (Neuron: see the module)."""
    return [] if target.accelerator == "neuron" else transformers_problems(target)


def transformers_problems(target: Target) -> list[Problem]:
    """The image's transformers does not know the model type: AutoConfig fails before any engine runs."""
    from lmi_config.knowledge import backends

    model_type, backend = model_type_of(target), backends().get(target.backend)
    if model_type is None or target.arch is None or backend is None or target.arch.model_type == "unknown":
        return []
    if "auto_map" in target.arch.loading:
        return []  # the model brings its own code: remote-code-not-trusted decides
    image = image_of(backend, target.release, None)
    pins = pins_at(image, target.release) if image else None
    version = pins.pinned("transformers", target.backend) if pins else None
    if pins is None or version is None or known_to_transformers(model_type, version) is not False:
        return []
    newer = releases_knowing(model_type, pins.image, target.backend)
    advice = (
        f"LMI {newer[0]} or later" if newer else "a newer image (no LMI image of this family pins one yet)"
    )
    message = (
        f"{target.arch.model_id} is a {model_type} model: transformers {version} in the {pins.image} image of "
        f"LMI {target.release.label()} does not know that model type (first among the images' "
        f"transformers: {first_knowing(model_type) or 'none'}), so AutoConfig fails — use {advice}"
    )
    return [Problem(HANDLER_CHECK, "error", message, "option.model_id")]


def neuron_loader_problems(config: CanonicalConfig, target: Target) -> list[Problem]:
    """The vLLM and NxD Inference loaders' model types on a djl-neuronx image (reported by LMI611)."""
    loader = neuron_loader(config, target)
    model_type = model_type_of(target)
    if loader is None or model_type is None or target.arch is None:
        return []
    registry = neuron_registry(target.release.djl, loader)
    if registry is None or model_type in registry.model_types:
        return []
    later = first_release_loading(loader, model_type)
    newer = (
        f"the djl-neuronx {later} image's {LOADER_ENGINES[loader]} loads it"
        if later
        else f"no djl-neuronx image's {LOADER_ENGINES[loader]} loads it"
    )
    others = [name for name in loaders_knowing(target.release.djl, model_type) if name != loader]
    instead = f"use option.model_loader={others[0]}" if others else "serve it on a GPU backend"
    message = (
        f"{target.arch.model_id} is a {model_type} model: {registry.engine} loads only "
        f"{', '.join(sorted(registry.model_types))}, so the start-up stops before compiling — {newer}; {instead}"
    )
    key = "option.model_loader" if config.has("option.model_loader") else "option.model_id"
    return [Problem(CHECK, "error", message, key)]
