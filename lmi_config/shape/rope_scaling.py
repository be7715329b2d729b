"""The judge's verdict on a ``rope_scaling`` the image's transformers or vLLM cannot parse
(``knowledge/rope_scaling.py``, generated from their code).

- **transformers** (every backend: the LMI handler and vLLM read config.json with ``AutoConfig``): the
  model type's configuration class validates the checkpoint's ``rope_scaling`` and raises for one it does
  not take — Llama 3.1's ``rope_type: llama3`` on transformers 4.42 and older, whose LlamaConfig takes
  exactly ``type`` (linear or dynamic) and ``factor``. A start-up failure, reported by
  rope-scaling-unsupported-by-engine (LMI614).
- **vLLM** (on GPU): ``get_rope`` raises "Unknown RoPE scaling type" for a type none of its branches
  handles — the checkpoint's (LMI614) or the one ``option.rope_scaling`` overrides it with, where LMI
  passes that engine argument to vLLM (invalid-value, LMI102: a value the engine refuses).

A catalog entry may keep fewer rope_scaling fields than the checkpoint's config.json, so a test that
counts or requires fields is made on a catalog entry only where the answer cannot depend on the fields
it left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lmi_config.configfile.text import shorten
from lmi_config.knowledge.engine_checks import EngineCheck, covered_checks
from lmi_config.knowledge.rope_scaling import (
    ConfigValidation,
    config_validation,
    first_vllm_handling,
    vllm_rope,
)
from lmi_config.shape.problems import Problem

if TYPE_CHECKING:
    from lmi_config.configfile.canonical import CanonicalConfig
    from lmi_config.knowledge import Release
    from lmi_config.shape.dimensions import Target

ROPE_CHECK = "rope-scaling-unsupported-by-engine"  # LMI614
OVERRIDE_CHECK = "invalid-value"  # LMI102: option.rope_scaling, a value vLLM refuses
MODEL_KEY = "option.model_id"
OVERRIDE_KEY = "option.rope_scaling"
_TYPE_KEYS = ("rope_type", "type")


def judge_rope_scaling(config: CanonicalConfig, target: Target) -> list[Problem]:
    """The rope_scaling refusals of the image's transformers, else of its vLLM."""
    if target.optimum_neuron_export is not None:
        return []  # an export runs optimum-neuron's transformers, not the image's
    return _transformers_refusal(target) or _vllm_refusal(config, target)


def image_transformers(target: Target, release: Release | None = None) -> str | None:
    """The transformers version the image that runs the backend pins (at ``release``, else the target's)."""
    from lmi_config.knowledge import backends
    from lmi_config.knowledge.image_support import image_of, pins_at

    backend = backends().get(target.backend)
    release = release or target.release
    image = image_of(backend, release, None) if backend is not None else None
    pins = pins_at(image, release) if image else None
    return pins.pinned("transformers", target.backend) if pins else None


def _shown(scaling: Mapping[str, Any]) -> str:
    kind = next((scaling[key] for key in _TYPE_KEYS if key in scaling), None)
    return (
        shorten(str(kind), 40)
        if kind is not None
        else shorten(
            ", ".join(
                f"{key}={value}" for key, value in sorted(scaling.items(), key=lambda item: str(item[0]))
            ),
            80,
        )
    )


# --- transformers -------------------------------------------------------------------------------


def refusal(
    validation: ConfigValidation, scaling: Mapping[str, Any], from_catalog: bool
) -> tuple[str, str] | None:
    """The message (filled in) and source of the raise ``validation`` makes for ``scaling``; None when it
    takes it, or when the answer depends on what the data cannot decide."""
    if validation.own is None:
        return _shared_refusal(validation, scaling, from_catalog)
    for check in validation.own:
        values = {"rope_scaling": dict(scaling)} | {f"rope_scaling_{check.key}": scaling.get(check.key or "")}
        if check.check == "fields":
            if len(scaling) == check.fields:
                continue
            if from_catalog and len(scaling) < (check.fields or 0):
                return None  # the checkpoint may have the fields the catalog left out
            return EngineCheck.fill(check.message, values), check.source
        if check.check == "type":
            if scaling.get(check.key or "") in check.types:
                continue
            return EngineCheck.fill(check.message, values), check.source
        if check.check == "factor":
            if check.key not in scaling and from_catalog:
                return None
            factor, bound = scaling.get(check.key or ""), check.minimum or 0.0
            if isinstance(factor, float) and (factor >= bound if check.inclusive else factor > bound):
                continue
            return EngineCheck.fill(check.message, values), check.source
        return None  # a test this project does not evaluate: what follows depends on it
    return None


def _shared_refusal(
    validation: ConfigValidation, scaling: Mapping[str, Any], from_catalog: bool
) -> tuple[str, str] | None:
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    required = validation.shared_types.get(str(kind))
    if required is None:
        if validation.unknown_type_message and validation.unknown_type_source:
            return EngineCheck.fill(
                validation.unknown_type_message, {"rope_type": kind}
            ), validation.unknown_type_source
        return None  # the release only logs a type it has no validation for
    # the configuration classes copy a legacy `type` into `rope_type` first: either names the type
    missing = sorted(set(required) - set(_TYPE_KEYS) - set(scaling))
    if (
        not missing
        or from_catalog
        or not validation.missing_keys_message
        or not validation.missing_keys_source
    ):
        return None
    shown = "{" + ", ".join(repr(name) for name in missing) + "}"  # transformers prints the set; sorted here
    said = EngineCheck.fill(validation.missing_keys_message, {"rope_type": kind, "missing_keys": shown})
    return said, validation.missing_keys_source


def _validation_at(target: Target, release: Release) -> ConfigValidation | None:
    version = image_transformers(target, release)
    arch = target.arch
    return config_validation(version, arch.model_type) if version and arch is not None else None


def _transformers_refusal(target: Target) -> list[Problem]:
    arch = target.arch
    if arch is None or not arch.rope_scaling:
        return []
    auto_map = arch.loading.get("auto_map")
    if isinstance(auto_map, Mapping) and "AutoConfig" in auto_map:
        return []  # the model's own configuration class validates it, not transformers'
    validation = _validation_at(target, target.release)
    from_catalog = arch.source.startswith("built-in catalog")
    found = refusal(validation, arch.rope_scaling, from_catalog) if validation is not None else None
    if validation is None or found is None:
        return []
    said, where = found
    later = _first_release_accepting(target, from_catalog)
    advice = (
        f"use LMI {later.label()} or later, whose transformers {image_transformers(target, later)} reads it"
        if later is not None
        else "no LMI image's transformers in the data reads it: use a checkpoint whose rope_scaling it takes"
    )
    message = (
        f"{arch.model_id}'s config.json has rope_scaling {_shown(arch.rope_scaling)}, which transformers "
        f"{validation.version} in the LMI {target.release.label()} image refuses: {validation.config_class} "
        f"raises '{shorten(said, 300)}' ({where}) when AutoConfig reads the config, so the start-up stops "
        f"before any weight loads — {advice}"
    )
    return [Problem(ROPE_CHECK, "error", message, MODEL_KEY)]


def _first_release_accepting(target: Target, from_catalog: bool) -> Release | None:
    from lmi_config.knowledge import releases

    arch = target.arch
    assert arch is not None and arch.rope_scaling is not None
    for release in releases():
        if release.order <= target.release.order:
            continue
        version = image_transformers(target, release)
        if version is None:
            continue
        validation = config_validation(version, arch.model_type)
        if validation is None or refusal(validation, arch.rope_scaling, from_catalog) is None:
            return release
    return None


# --- vLLM ---------------------------------------------------------------------------------------


def override(config: CanonicalConfig, target: Target) -> dict[str, Any] | None:
    """``option.rope_scaling`` as the image's vLLM receives it: only where LMI passes vLLM's engine
    arguments through at this release and the engine has the argument (None otherwise, or unreadable)."""
    from lmi_config.knowledge import backends
    from lmi_config.knowledge.options import engine_args_for

    text = (config.get(OVERRIDE_KEY) or "").strip()
    backend = backends().get(target.backend)
    if not text or backend is None or backend.engine_args != "vllm":
        return None
    if not target.release.in_range(backend.engine_args_since, None):
        return None
    if "rope_scaling" not in engine_args_for(target.release.vllm):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


_ALLOWED_PAIR = re.compile(r"rope_type_legacy == '(\w+)' and rope_type == '(\w+)'")


def reader_refusal(
    scaling: Mapping[str, Any], vllm_version: str | None, from_catalog: bool
) -> tuple[str, str] | None:
    """The message and line of the check vLLM's config reader makes on a checkpoint's rope_scaling before any
    model class sees it (data/vllm_checks.json): both ``type`` and ``rope_type`` naming different types, neither
    named, or a legacy ``mrope`` without its ``mrope_section``. A catalog entry may leave fields out, so the
    checks that need a field absent are made on a checkpoint's own config.json only."""
    kind = scaling.get("rope_type", scaling.get("type"))
    legacy, modern = scaling.get("type"), scaling.get("rope_type")
    conflicting = legacy is not None and modern is not None and legacy != modern
    unnamed = not from_catalog and not any(key in scaling for key in _TYPE_KEYS)
    sectionless = not from_catalog and kind == "mrope" and "mrope_section" not in scaling
    if not (conflicting or unnamed or sectionless):
        return None  # the catalogue of checks is read only where one of them can fire
    values = {
        f"{name}['{key}']": scaling.get(key)
        for name in ("rope_scaling", "rope_parameters")
        for key in _TYPE_KEYS
    }
    for check in covered_checks(ROPE_CHECK, vllm_version):
        conditions = " ".join(check.conditions)
        if "Found conflicts" in check.message:
            if conflicting and (legacy, modern) not in set(_ALLOWED_PAIR.findall(conditions)):
                return check.message_with(values), check.cited
        elif "mrope_section" in conditions:
            if sectionless:
                said = (
                    check.message_with(values)
                    or f"AssertionError (assert 'mrope_section' in {check.function})"
                )
                return said, check.cited
        elif "rope_type" in conditions and unnamed:
            return check.message_with(values), check.cited
    return None


def _vllm_refusal(config: CanonicalConfig, target: Target) -> list[Problem]:
    if target.backend != "vllm" or target.accelerator != "gpu":
        return []
    arch = target.arch
    if arch is not None and arch.rope_scaling:
        found = reader_refusal(
            arch.rope_scaling, target.release.vllm, arch.source.startswith("built-in catalog")
        )
        if found is not None:
            message = (
                f"{arch.model_id}'s config.json has rope_scaling {_shown(arch.rope_scaling)}, which vLLM "
                f"{target.release.vllm}'s config reader refuses: the start-up stops with '{shorten(found[0], 240)}' "
                f"({found[1]}) — fix the checkpoint's rope_scaling (one type, named once)"
            )
            return [Problem(ROPE_CHECK, "error", message, MODEL_KEY)]
    written = override(config, target)
    if written is None and (arch is None or not arch.rope_scaling):
        return []
    rope = vllm_rope(target.release.vllm)
    if rope is None:
        return []
    scaling: Mapping[str, Any] | None = written
    if scaling is None:
        scaling = target.arch.rope_scaling if target.arch is not None and _native(target) else None
    if not scaling:
        return []
    kind = next((scaling[key] for key in rope.type_keys if key in scaling), None)
    if not isinstance(kind, str):
        return []  # no type named: not this check
    name = rope.renames.get(kind, kind)
    if name in rope.types:
        return []
    said = EngineCheck.fill(rope.message, {"scaling_type": name})
    handled = ", ".join(sorted(rope.types))
    if written is not None:
        message = (
            f"option.rope_scaling names the RoPE scaling type {shorten(kind, 40)}, which vLLM {target.release.vllm}'s "
            f"get_rope has no branch for: the start-up stops with '{said}' ({rope.source}) — use one of {handled}, "
            "or remove option.rope_scaling to keep the checkpoint's own"
        )
        return [Problem(OVERRIDE_CHECK, "error", message, OVERRIDE_KEY)]
    first = first_vllm_handling(kind)
    advice = (
        f"vLLM {first} is the first LMI image's vLLM that handles it"
        if first
        else "no LMI image's vLLM handles it"
    )
    assert arch is not None
    message = (
        f"{arch.model_id}'s config.json has rope_scaling type {shorten(kind, 40)}, which vLLM "
        f"{target.release.vllm}'s get_rope has no branch for (it handles {handled}): the start-up stops with "
        f"'{said}' ({rope.source}) — {advice}; use an LMI release whose vLLM has it"
    )
    return [Problem(ROPE_CHECK, "error", message, MODEL_KEY)]


def _native(target: Target) -> bool:
    """Whether the image's vLLM builds the model with its own class (which calls get_rope); the
    Transformers backend computes RoPE with transformers' code instead."""
    from lmi_config.knowledge.capabilities import vllm_capabilities

    capabilities = vllm_capabilities(target.release.vllm)
    return capabilities is not None and any(
        name in capabilities.native_architectures for name in target.architectures
    )
