"""What a configuration targets: backend, LMI release, and (optionally) instance and model.

Each is taken from, in order: the command line, a ``# lmi-config: key=value`` pragma in the
file, what the configuration itself implies (engine, entryPoint, rolling_batch, model_loader,
an image tag named in the file), and finally a documented default. The reason is kept so the
report can say what was assumed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lmi_config.configfile.canonical import CanonicalConfig
from lmi_config.knowledge import (
    Backend,
    InferenceStep,
    Release,
    backends,
    default_release,
    engines,
    entry_points,
    image_framework,
    inference_steps,
    parse_lmi_version,
    resolve_backend,
)

if TYPE_CHECKING:
    from lmi_config.configfile.loader import SourceFile

PRAGMA = re.compile(r"^\s*lmi-config:\s*(?P<body>.*)$")
_IMAGE_IN_TEXT = re.compile(r"djl-inference:(?P<tag>[0-9][\w.\-]+)")


@dataclass(repr=False, eq=False)
class Pragmas:
    """Settings written in the file itself (``# lmi-config: disable=LMI101 backend=vllm``)."""

    disabled: dict[str, int] = field(default_factory=dict)  # rule name -> line of the pragma
    values: dict[str, tuple[str, int]] = field(default_factory=dict)
    problems: list[tuple[str, int]] = field(default_factory=list)


PRAGMA_KEYS = ("disable", "backend", "lmi-version", "instance", "model")


def read_pragmas(comments: list[tuple[str, int]]) -> Pragmas:
    """Collect pragmas from comment lines."""
    pragmas = Pragmas()
    for text, line in comments:
        match = PRAGMA.match(text)
        if not match:
            continue
        for token in match.group("body").split():
            name, equals, value = token.partition("=")
            name = name.strip().lower()
            if not equals or name not in PRAGMA_KEYS:
                pragmas.problems.append(
                    (f"unknown pragma {token!r}; use {', '.join(k + '=…' for k in PRAGMA_KEYS)}", line)
                )
                continue
            if name == "disable":
                for part in (item.strip() for item in value.split(",")):
                    if part:
                        pragmas.disabled[part] = line
            else:
                pragmas.values[name] = (value, line)
    return pragmas


@dataclass(repr=False, eq=False)
class Context:
    """The target of a lint run and why each part was chosen."""

    backend: Backend
    backend_reason: str
    backend_assumed: bool
    release: Release
    release_reason: str
    release_assumed: bool
    instance: Any = None  # knowledge.instances.Instance, when known
    instance_reason: str | None = None
    model: Any = None  # modelarch.ModelArch, when known
    model_reason: str | None = None
    model_identity: Any = (
        None  # knowledge.models.ModelIdentity: the architecture alone, when only that is known
    )
    image_framework: str | None = None  # djl-lmi, djl-neuronx … when an image tag was named

    @property
    def accelerator(self) -> str:
        if self.instance is not None:
            return str(self.instance.accelerator)
        return self.backend.accelerator

    def describe(self) -> str:
        """One line: ``backend vllm (from option.rolling_batch=vllm), LMI 0.30.0 (assumed: …)``."""
        backend = (
            f"backend {self.backend.id} ({'assumed: ' if self.backend_assumed else ''}{self.backend_reason})"
        )
        release = (
            f"LMI {self.release.label()} ({'assumed: ' if self.release_assumed else ''}{self.release_reason})"
        )
        return f"{backend}, {release}"


def _canonical_engine(engine: str) -> str:
    """The engine's own spelling (``deepspeed`` → ``DeepSpeed``) for the LLM engines DJL knows."""
    return next((name for name in engines() if name.lower() == engine.lower()), engine)


def _value(config: CanonicalConfig, key: str) -> str:
    return (config.get(key) or "").strip()


def infer_backend(
    config: CanonicalConfig, instance_accelerator: str | None
) -> tuple[Backend, str, bool, bool]:
    """Infer the backend from the keys the container itself uses to choose one.

    The steps and the backends they lead to are data (``backends.json``, ``inference``); the
    first step that matches decides. Returns (backend, reason, whether it is an assumption, whether
    it is a fallback: an assumption from nothing the file says about a backend — engine=MPI alone,
    the djl-lmi default — which an image named may correct).
    """
    for step in inference_steps():
        found = _STEPS[step.step or "when"](step, config, instance_accelerator)
        if found is not None:
            name, reason, assumed = found
            return backends()[name], reason, assumed, assumed and step.step is None
    raise AssertionError("backends.json inference ends with an unconditional step")


_Found = tuple[str, str, bool] | None


def _when(step: InferenceStep, config: CanonicalConfig, accelerator: str | None) -> _Found:
    """A key with one of the listed values (or, without ``when``, an accelerator or a fallback)."""
    if step.when_accelerator and accelerator != step.when_accelerator:
        return None
    if step.unless_accelerator and accelerator == step.unless_accelerator:
        return None
    for key, values in step.when:
        value = _value(config, key)
        compared = _canonical_engine(value) if key == "engine" else value.lower()
        if compared not in values:
            return None
    assert step.backend is not None
    written = " ".join(f"{key}={_value(config, key)}" for key, _ in step.when)
    if step.on_neuron and _on_neuron(config, accelerator):
        return step.on_neuron, f"{written} on Neuron", step.assumed
    return step.backend, step.reason or written, step.assumed


def _on_neuron(config: CanonicalConfig, accelerator: str | None) -> bool:
    """On a Neuron instance, or (no instance) the file uses more Neuron-only keys than the other backend's."""
    if accelerator == "neuron":
        return True
    if accelerator == "gpu":
        return False
    scores = _backend_key_scores(config)
    return len(scores.get("transformers-neuronx", [])) > len(scores.get("vllm", []))


def _entry_point(step: InferenceStep, config: CanonicalConfig, accelerator: str | None) -> _Found:
    entry = _value(config, "option.entryPoint")
    if not entry:
        return None
    known = entry_points().get(entry)
    if known and known.get("backend"):
        return known["backend"], f"option.entryPoint={entry}", False
    if known or entry == "djl_python.huggingface":
        return None  # a handler that serves several backends: option.rolling_batch decides
    if entry.startswith("djl_python.") and "neuron" in entry:
        return step.options["neuron_backend"], f"option.entryPoint={entry}", False
    return step.options["unknown_backend"], f"option.entryPoint={entry} (your own handler)", False


def _engine(step: InferenceStep, config: CanonicalConfig, accelerator: str | None) -> _Found:
    engine = _canonical_engine(_value(config, "engine"))
    backend = engines().get(engine, {}).get("backend")
    return (backend, f"engine={engine}", False) if backend else None


def _other_engine(step: InferenceStep, config: CanonicalConfig, accelerator: str | None) -> _Found:
    engine = _canonical_engine(_value(config, "engine"))
    if engine and engine not in step.options["except"]:
        assert step.backend is not None
        return step.backend, f"engine={engine}", False
    return None


def _key_scores(step: InferenceStep, config: CanonicalConfig, accelerator: str | None) -> _Found:
    """The backend that alone reads most of the file's options."""
    table = backends()
    candidates = {
        name: keys
        for name, keys in _backend_key_scores(config).items()
        if keys and not (accelerator == "gpu" and table[name].accelerator == "neuron")
    }
    if _canonical_engine(_value(config, "engine")) == "MPI":
        candidates = {name: keys for name, keys in candidates.items() if name in step.options["mpi_backends"]}
    if not candidates:
        return None
    best = max(candidates, key=lambda name: len(candidates[name]))
    return best, f"{', '.join(candidates[best][:2])} (read only by {best})", True


_STEPS: dict[str, Callable[[InferenceStep, CanonicalConfig, str | None], _Found]] = {
    "when": _when,
    "entry_point": _entry_point,
    "engine": _engine,
    "other_engine": _other_engine,
    "key_scores": _key_scores,
}


_SCORED_BACKENDS = (
    "vllm",
    "lmi-dist",
    "tensorrt-llm",
    "transformers-neuronx",
    "huggingface",
    "deepspeed",
    "djl-engine",
)


def _backend_key_scores(config: CanonicalConfig) -> dict[str, list[str]]:
    """For each backend, the keys of this configuration that only it (and no common group) reads."""
    from lmi_config.knowledge.options import catalogue

    table = backends()
    scores: dict[str, list[str]] = {name: [] for name in _SCORED_BACKENDS}
    for key in config.settings:
        specs = catalogue().get(key)
        if not specs or any("common" in spec.backends for spec in specs):
            continue
        groups = {group for spec in specs for group in spec.backends}
        readers = [name for name in _SCORED_BACKENDS if groups & set(table[name].reads)]
        if len(readers) > 1:
            readers = [name for name in readers if name in groups]  # the group's own backend
        if len(readers) == 1:
            scores[readers[0]].append(key)
    return scores


def infer_release(
    sources: list[SourceFile], backend: Backend, config: CanonicalConfig
) -> tuple[Release, str, bool]:
    """An image tag named in the files; else the release that reads the file's options.

    Among the releases that ship the backend, the one with the fewest options it does not
    read wins; ties go to the backend's default release, then to the newest.
    """
    for source in sources:
        match = _IMAGE_IN_TEXT.search(source.text)
        if match:
            try:
                return (
                    parse_lmi_version(match.group("tag")),
                    f"image {match.group('tag')} named in {source.path}",
                    False,
                )
            except ValueError:
                continue
    default, why = default_release(backend.id)
    candidates = _releases_shipping(backend)
    if not candidates:
        return default, why, True
    judged = _judged_settings(config, backend)
    misses = [_unread_options(judged, release) for release in candidates]
    fewest = min(misses)
    best = [release for release, count in zip(candidates, misses, strict=True) if count == fewest]
    if default in best:
        return default, why, True
    chosen = best[-1]
    reason = (
        "newest release that reads every option in the file"
        if fewest == 0
        else "release that reads the most options in the file"
    )
    return chosen, reason, True


def _releases_shipping(backend: Backend) -> list[Release]:
    from lmi_config.knowledge import releases, version_tuple

    feature = backend.feature
    since = version_tuple(backend.since) if backend.since else ()
    found = []
    for release in releases():
        if feature and not any(feature in values for values in release.features.values()):
            continue
        if since and release.djl_tuple < since:
            continue
        found.append(release)
    return found


def _judged_settings(config: CanonicalConfig, backend: Backend) -> list[tuple[tuple, frozenset[int]]]:
    """Per catalogue setting of the file: its specs for this backend, and which of them accept its
    value (judged once, not once per release)."""
    from lmi_config.knowledge.options import catalogue, check_value, is_placeholder

    known = catalogue()
    judged = []
    for key in known.keys() & config.settings.keys():  # only catalogue keys can count
        value = config.settings[key].value
        specs = tuple(spec for spec in known[key] if spec.applies_to(backend))
        if not specs:
            continue
        if is_placeholder(value):
            accepted = frozenset(range(len(specs)))
        else:
            accepted = frozenset(
                index for index, spec in enumerate(specs) if check_value(spec, value) is None
            )
        judged.append((specs, accepted))
    return judged


def _unread_options(judged: list[tuple[tuple, frozenset[int]]], release: Release) -> int:
    """How many settings this release ignores or refuses for version reasons."""
    count = 0
    for specs, accepted in judged:
        available = [index for index, spec in enumerate(specs) if spec.available_in(release)]
        if not available:
            count += 1
            continue
        if available[0] in accepted:
            continue
        if any(index in accepted for index in range(len(specs)) if index not in available):
            count += 1  # a value that another release accepts
    return count


def resolve_context(
    config: CanonicalConfig,
    sources: list[SourceFile],
    pragmas: Pragmas,
    *,
    backend: str | None = None,
    lmi_version: str | None = None,
    instance_accelerator: str | None = None,
) -> Context:
    """Combine command line, pragmas and inference into a :class:`Context`.

    Raises ``ValueError`` for an unknown backend or version given on the command line or in
    a pragma (the caller reports it as a usage error).
    """
    fallback = False  # an assumed backend an image named may correct (see infer_backend)
    if backend:
        chosen, backend_reason, backend_assumed = resolve_backend(backend), "--backend", False
    elif "backend" in pragmas.values:
        value, line = pragmas.values["backend"]
        chosen, backend_reason, backend_assumed = resolve_backend(value), f"pragma on line {line}", False
    else:
        chosen, backend_reason, backend_assumed, fallback = infer_backend(config, instance_accelerator)
    named = lmi_version or (pragmas.values.get("lmi-version") or ("", 0))[0] or _image_in(sources)
    framework = image_framework(named) if named else None
    if fallback and framework is not None:
        chosen, backend_reason = _image_backend(
            chosen, backend_reason, framework, named, instance_accelerator
        )
    if chosen.id == "transformers-neuronx" and _value(config, "option.rolling_batch").lower() == "vllm":
        # the Neuron handler hands the model to vLLM: vLLM's options are read too (djl-serving.md §5.6)
        chosen = chosen._replace(
            reads=chosen.reads + ("vllm",), engine_args="vllm", engine_args_since="0.32.0"
        )
    if lmi_version:
        release, release_reason, release_assumed = parse_lmi_version(lmi_version), "--lmi-version", False
    elif "lmi-version" in pragmas.values:
        value, line = pragmas.values["lmi-version"]
        release, release_reason, release_assumed = parse_lmi_version(value), f"pragma on line {line}", False
    else:
        release, release_reason, release_assumed = infer_release(sources, chosen, config)
    context = Context(chosen, backend_reason, backend_assumed, release, release_reason, release_assumed)
    context.image_framework = framework
    return context


def _image_backend(
    chosen: Backend, reason: str, framework: str, named: str, accelerator: str | None
) -> tuple[Backend, str]:
    """A backend assumed from nothing the file says gives way to the one backend of the image named
    (a djl-tensorrtllm image runs TensorRT-LLM where the file leaves it unsaid: rolling_batch=auto is
    trtllm there) — unless the instance's accelerator is not the image's (that mismatch is its own error)."""
    from lmi_config.knowledge.images import frameworks

    family = frameworks().get(framework)
    if family is None or chosen.id in family.backends or len(family.backends) != 1:
        return chosen, reason
    if accelerator is not None and accelerator != family.accelerator:
        return chosen, reason
    return resolve_backend(family.backends[0]), f"the one backend of the {framework} image named ({named})"


def _image_in(sources: list[SourceFile]) -> str:
    for source in sources:
        match = _IMAGE_IN_TEXT.search(source.text)
        if match:
            return match.group("tag")
    return ""
