"""Whether what loads the model knows its type, beyond vLLM's registry on GPU (``shape/capability.py``).

The target says what the configuration is planned for (``Target.planned_for``):

- **the LMI image** (``lint``, ``explain``, ``plan``, ``render auto``): its transformers must know the
  model type (AutoConfig fails first otherwise), and on Neuron the djl-neuronx handler must load it: its
  transformers-neuronx and optimum tables ("Unsupported model"), or the loader ``option.model_loader``
  names (vLLM on Neuron: "VllmModelLoader does not support this config"; NxD Inference: no model class)
  — model-type-unsupported (LMI206) and model-type-unknown-to-neuron-engine (LMI611);
- **an optimum-neuron export** (``search``, ``plan --cache-config``): the Neuron backends are only the
  memory model there; the exporter of that optimum-neuron version must register the model type for
  text-generation (model-type-unknown-to-neuron-engine).

Facts generated from djl-serving's handler, the images' Dockerfiles, NxD Inference's ``MODEL_TYPES`` and
optimum-neuron's exporter registrations per release (``knowledge/engine_support.py``,
``knowledge/image_support.py``). All are in the judge, so no command ranks or writes what another refuses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lmi_config.configfile.text import shorten
from lmi_config.knowledge import version_tuple
from lmi_config.knowledge.engine_support import (
    ANY_OPTIMUM_NEURON,
    LOADER_ENGINES,
    engine_version,
    first_release_loading,
    first_release_reading_rope,
    loaders_knowing,
    neuron_registry,
    newest_optimum_neuron,
    optimum_export_registry,
    optimum_versions_exporting,
    tnx_rope_support,
)
from lmi_config.knowledge.image_support import (
    first_knowing,
    image_of,
    known_to_transformers,
    pins_at,
    releases_knowing,
)
from lmi_config.knowledge.transformers_ranges import known_in_range
from lmi_config.shape.problems import Problem

if TYPE_CHECKING:
    from lmi_config.configfile.canonical import CanonicalConfig
    from lmi_config.shape.dimensions import Target

CHECK = "model-type-unknown-to-neuron-engine"
ROPE_CHECK = "rope-scaling-unsupported-by-engine"  # LMI614: transformers-neuronx's Llama config
HANDLER_CHECK = "model-type-unsupported"  # LMI206: the image's transformers, the handler's tables
REMOTE_CODE_CHECK = "remote-code-not-trusted"  # LMI207: the model's own code, not trusted
TRUE_VALUES = ("true", "1", "yes", "on", "t", "y")
# the refusals of the model itself: no instance, TP, batch or length changes them
MODEL_CHECKS = (HANDLER_CHECK, CHECK, REMOTE_CODE_CHECK, ROPE_CHECK)
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
    """The model_type of config.json as the handler's AutoConfig reads it (or the known identity's)."""
    if target.arch is not None and target.arch.model_type == "unknown":
        return None
    return target.model_type


def refusal(target: Target, check: str, message: str, key: str) -> Problem:
    """An error; a warning where the model's architecture is inferred from a sibling checkpoint."""
    if target.inferred_from:
        suffix = f" (model type inferred from {target.inferred_from}, the same family: check with --model or --hub)"
        return Problem(check, "warning", message + suffix, key)
    return Problem(check, "error", message, key)


def judge_engine_registries(config: CanonicalConfig, target: Target, rolling_batch: str) -> list[Problem]:
    """An error when what loads the model does not know its type (see the module)."""
    if target.optimum_neuron_export is not None:
        return export_problems(target)
    problems = transformers_problems(config, target)
    if problems or target.accelerator != "neuron":
        return problems
    return (
        handler_problems(config, target, rolling_batch)
        + neuron_loader_problems(config, target)
        + rope_problems(config, target)
    )


def rope_problems(config: CanonicalConfig, target: Target) -> list[Problem]:
    """A Llama rope_scaling the image's transformers-neuronx ignores (a warning: it serves with plain RoPE)
    or refuses (an error: its Llama config raises for a type it does not take). NxD Inference builds its
    own graph and is not this check."""
    arch = target.arch
    if target.backend != "transformers-neuronx" or neuron_loader(config, target) == "nxdi" or arch is None:
        return []
    scaling = arch.rope_scaling or {}
    kind = scaling.get("rope_type", scaling.get("type"))
    if not isinstance(kind, str) or not kind or kind == "default":
        return []  # a type that is not a name: the engine's config would not compare it either
    found = engine_version(target.release.djl, "transformers-neuronx")
    support = tnx_rope_support(found[0], arch.model_type) if found else None
    if found is None or support is None:
        return []
    version = found[0]
    if not support.reads:
        first = first_release_reading_rope()
        newer = f"LMI {first} or later, whose transformers-neuronx reads it" if first else "a newer image"
        message = (
            f"{arch.model_id} uses rope_scaling {shorten(kind, 40)}, which transformers-neuronx {version} in the LMI "
            f"{target.release.label()} image does not read (its Llama config takes rope_theta only): the model "
            "compiles and serves with plain RoPE, positions encoded unlike its training — expect degraded or "
            f"garbled output, worst on long prompts; use {newer}, or NxD Inference (option.model_loader=nxdi "
            "where the image has it)"
        )
        # a warning (nothing refuses it), but a planner does not propose a model served with the wrong positions
        return [Problem(ROPE_CHECK, "warning", message, "option.model_id", blocks_planning=True)]
    if support.accepted_types is not None and kind not in support.accepted_types:
        message = (
            f"{arch.model_id} uses rope_scaling {shorten(kind, 40)}: transformers-neuronx {version} in the LMI "
            f"{target.release.label()} image accepts only {', '.join(sorted(support.accepted_types))} and "
            f"raises 'Only default and llama3 ropes scaling types are currently supported' at load — serve it "
            "with NxD Inference (option.model_loader=nxdi) or on a GPU backend"
        )
        return [Problem(ROPE_CHECK, "error", message, "option.model_id")]
    return []


def transformers_problems(config: CanonicalConfig, target: Target) -> list[Problem]:
    """The image's transformers does not know the model type: AutoConfig fails before any engine runs
    (or, for a model that ships its own code, unless option.trust_remote_code=true lets it run that)."""
    from lmi_config.knowledge import backends

    model_type, backend = model_type_of(target), backends().get(target.backend)
    if model_type is None or backend is None:
        return []
    image = image_of(backend, target.release, None)
    pins = pins_at(image, target.release) if image else None
    version = pins.pinned("transformers", target.backend) if pins else None
    if target.arch is not None and "auto_map" in target.arch.loading:
        return remote_code_problems(config, target, model_type, version)
    if pins is None:
        return []
    if version is not None:
        if known_to_transformers(model_type, version) is not False:
            return []
        installed = f"transformers {version}"
    else:
        specifier = _range_of(pins.venvs.get(target.backend), pins.ranges)
        knowledge = known_in_range(model_type, specifier) if specifier else None
        if knowledge is None or knowledge.known is not False:
            return []
        installed = (
            f"transformers '{specifier}' (a range, no pin: neither {knowledge.lowest} nor the newest release it "
            f"admits, {knowledge.newest}, knows it — {knowledge.source})"
        )
    if _read_by_vllm(target, model_type):
        return []
    newer = releases_knowing(model_type, pins.image, target.backend) or _releases_reading(target, model_type)
    advice = (
        f"LMI {newer[0]} or later" if newer else "a newer image (no LMI image of this family pins one yet)"
    )
    message = (
        f"{target.model_id} is a {model_type} model: {installed} in the {pins.image} image of "
        f"LMI {target.release.label()} does not know that model type (first among the images' "
        f"transformers: {first_knowing(model_type) or 'none'}), so AutoConfig fails{_vllm_reraise(target)} "
        f"— use {advice}"
    )
    return [refusal(target, HANDLER_CHECK, message, "option.model_id")]


def _vllm_reraise(target: Target) -> str:
    """Where the image's vLLM passes AutoConfig's refusal on (its config reader), for a vLLM backend."""
    from lmi_config.knowledge.engine_checks import covered_checks

    if target.backend not in ("vllm", "lmi-dist") or not target.release.vllm:
        return ""
    checks = covered_checks(HANDLER_CHECK, target.release.vllm)
    return f" (vLLM's config reader raises it on: {checks[0].cited})" if checks else ""


def _range_of(venv: dict | None, ranges: dict[str, str]) -> str | None:
    """The transformers range the backend's environment installs from (its virtual environment's, where
    the image gives it one), where it pins none."""
    if venv is not None:
        return venv["ranges"].get("transformers") if "transformers" not in venv["pins"] else None
    return ranges.get("transformers")


def _releases_reading(target: Target, model_type: str) -> list[str]:
    """Labels of the later releases whose vLLM reads the model type's config.json itself."""
    from lmi_config.knowledge import releases
    from lmi_config.knowledge.model_classes import model_classes

    if target.backend not in ("vllm", "lmi-dist"):
        return []
    found = []
    for release in releases():
        facts = model_classes(release.vllm) if release.vllm else None
        if (
            facts is not None
            and model_type in facts.config_model_types
            and release.djl_tuple >= target.release.djl_tuple
        ):
            found.append(release.label())
    return found


def _read_by_vllm(target: Target, model_type: str) -> bool:
    """Whether the image's vLLM reads this model type's config.json with its own configuration class
    (``_CONFIG_REGISTRY``, data/vllm_model_classes.json): its transformers need not know the type."""
    from lmi_config.knowledge.model_classes import model_classes

    facts = model_classes(target.release.vllm) if target.backend in ("vllm", "lmi-dist") else None
    return facts is not None and model_type in facts.config_model_types


def remote_code_problems(
    config: CanonicalConfig, target: Target, model_type: str, version: str | None
) -> list[Problem]:
    """A model that ships its own code (auto_map) for a type the image's transformers (``version``;
    None: not known, then every LMI image's) does not know runs only with option.trust_remote_code=true.
    The judge does not set it: running a repository's code is the user's decision, so a planner names it."""
    assert target.arch is not None
    if (config.get("option.trust_remote_code") or "").strip().lower() in TRUE_VALUES:
        return []
    if version is not None:
        known = known_to_transformers(model_type, version)
        where = f"transformers {version} in this image"
    else:
        known = first_knowing(model_type) is not None or None
        where = "the transformers of the LMI images"
    if known is not False:
        return []  # the image's transformers has its own class for the model type (or cannot tell)
    message = (
        f"{target.arch.model_id} ships its own code (auto_map in config.json) for model type {model_type}, which "
        f"{where} does not know; without option.trust_remote_code=true transformers refuses to run it — set it "
        "(after reading that code)"
    )
    key = "option.trust_remote_code" if config.has("option.trust_remote_code") else "option.model_id"
    return [Problem(REMOTE_CODE_CHECK, "error", message, key)]


def neuron_loader_problems(config: CanonicalConfig, target: Target) -> list[Problem]:
    """The vLLM and NxD Inference loaders' model types on a djl-neuronx image (reported by LMI611)."""
    loader = neuron_loader(config, target)
    model_type = model_type_of(target)
    if loader is None or model_type is None:
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
        f"{target.model_id} is a {model_type} model: {registry.engine} loads only "
        f"{', '.join(sorted(registry.model_types))}, so the start-up stops before compiling — {newer}; {instead}"
    )
    key = "option.model_loader" if config.has("option.model_loader") else "option.model_id"
    return [refusal(target, CHECK, message, key)]


def handler_problems(config: CanonicalConfig, target: Target, rolling_batch: str) -> list[Problem]:
    """The transformers-neuronx handler's own tables (optimum first, then its tnx loader), reported by LMI206."""
    model_type = model_type_of(target)
    if target.backend != "transformers-neuronx" or model_type is None:
        return []
    loader = (config.get("option.model_loader") or "").strip().lower()
    if loader in JUDGED_LOADERS or rolling_batch == "vllm":
        return []  # vLLM (or NxD Inference) loads the model, not the handler's tables: see neuron_loader_problems
    names = ("tnx",) if loader == "tnx" else ("optimum",) if loader == "optimum" else ("optimum", "tnx")
    tables = [neuron_registry(target.release.djl, name) for name in names]
    known = {known_type for table in tables if table for known_type in table.model_types}
    if not any(tables) or model_type in known:
        return []
    others = [name for name in loaders_knowing(target.release.djl, model_type) if name not in names]
    later = first_release_loading("tnx", model_type)
    if later and version_tuple(later) <= target.release.djl_tuple:
        later = None  # an older image loaded it: no upgrade helps
    if others:
        instead = f"use option.model_loader={others[0]} ({LOADER_ENGINES[others[0]]} of this image loads it)"
    elif later:
        instead = f"use LMI {later} or later, whose transformers-neuronx loads it, or a GPU backend"
    else:
        instead = "serve it on a GPU backend (no djl-neuronx image's handler loads it)"
    message = (
        f"{target.model_id} is a {model_type} model: the transformers-neuronx handler of LMI "
        f"{target.release.label()} loads {', '.join(sorted(known))} ('Unsupported model') — {instead}"
    )
    return [refusal(target, HANDLER_CHECK, message, "option.model_id")]


def _exporting_releases(versions: list[str]) -> str:
    """Which optimum-neuron releases export the model, as a user picks one: a run of consecutive
    releases as its first and newest (a user on an older release needs the first), else each."""
    if not versions:
        return "no optimum-neuron release exports it"
    if len(versions) == 1:
        return f"optimum-neuron {versions[0]} exports it"
    known = optimum_versions_exporting(None)
    start = known.index(versions[0])
    if known[start : start + len(versions)] == versions:
        return f"optimum-neuron {versions[0]} to {versions[-1]} export it"
    return f"optimum-neuron {', '.join(versions)} export it"


def export_problems(target: Target) -> list[Problem]:
    """The optimum-neuron exporter does not register the model type for text-generation."""
    version = target.optimum_neuron_export
    arch = target.arch
    if version is None or arch is None or arch.model_type == "unknown" or not arch.is_text_generation:
        return []  # other tasks have registries of their own, not generated
    model_type = arch.model_type  # the exporter reads the text model's config (get_text_config)
    registry = optimum_export_registry(version)
    if registry is None or model_type in registry.model_types:
        return []
    if version == ANY_OPTIMUM_NEURON:
        newest, exported = newest_optimum_neuron()
        message = (
            f"{arch.model_id} is a {model_type} model: {registry.engine} registers it for text-generation "
            f"(the newest, {newest}, exports {', '.join(sorted(exported))}), so the export stops before "
            "compiling — choose a model of those types"
        )
    else:
        where = _exporting_releases(optimum_versions_exporting(model_type))
        message = (
            f"{arch.model_id} is a {model_type} model: {registry.engine} registers text-generation only for "
            f"{', '.join(sorted(registry.model_types))}, so the export stops before compiling — {where}"
        )
    return [Problem(CHECK, "error", message, "option.model_id")]
