"""Loaders for the facts in ``lmi_config/data``: releases, backends, env-variable mapping.

Every data file is JSON (fast to load on the lint path) and every entry carries a
``source``. Loading is lazy and cached: a lint run reads each file at most once.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

DATA_DIR = Path(__file__).resolve().parent.parent / "data"


@cache
def load_data(name: str) -> Any:
    """Parse ``lmi_config/data/<name>`` (cached)."""
    with open(DATA_DIR / name, encoding="utf-8") as handle:
        return json.load(handle)


@cache
def version_tuple(text: str | None) -> tuple[int, ...]:
    """``"0.30.0"`` → ``(0, 30, 0)``; unknown parts count as 0."""
    if not text:
        return ()
    parts = []
    for part in text.split(".")[:3]:
        digits = re.match(r"\d+", part)
        parts.append(int(digits.group()) if digits else 0)
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts)


class Release(NamedTuple):
    """One LMI / DJL Serving release and what its images ship."""

    djl: str
    lmi: str | None
    vllm: str | None
    features: dict[str, list[str]]
    source: str

    @property
    def djl_tuple(self) -> tuple[int, ...]:
        return version_tuple(self.djl)  # cached by version_tuple

    @property
    def order(self) -> tuple[tuple[int, ...], int]:
        return (self.djl_tuple, int(self.lmi or 0))

    def label(self) -> str:
        """``"0.30.0 (LMI v12)"``."""
        return f"{self.djl} (LMI v{self.lmi})" if self.lmi else self.djl

    def in_range(self, since: str | None, until: str | None) -> bool:
        """Whether this release falls in [since, until] (DJL versions, either may be open)."""
        if since and self.djl_tuple < version_tuple(since):
            return False
        return not (until and self.djl_tuple > version_tuple(until))


@cache
def releases() -> tuple[Release, ...]:
    """All known releases, oldest first."""
    rows = load_data("releases.json")["releases"]
    items = [
        Release(row["djl"], row.get("lmi"), row.get("vllm"), row.get("features", {}), row["source"])
        for row in rows
    ]
    return tuple(sorted(items, key=lambda release: release.order))


def release_by(djl: str, lmi: str | None) -> Release:
    """The release with that DJL version and LMI number."""
    for release in releases():
        if release.djl == djl and release.lmi == lmi:
            return release
    raise KeyError(f"{djl} lmi{lmi}")


def default_release(backend: str) -> tuple[Release, str]:
    """The release assumed for a backend when nothing names one, and why."""
    defaults = load_data("releases.json")["defaults"]
    row = defaults.get(backend) or defaults["vllm"]
    return release_by(row["djl"], row.get("lmi")), row["why"]


# SageMaker's DLC tags (0.30.0-neuronx-sdk2.20.1, 0.33.0-lmi15.0.0-cu128) and DJL's own Docker Hub
# tags (deepjavalibrary/djl-serving:0.26.0-tensorrt-llm, -pytorch-inf2, -lmi, -deepspeed: the image
# names of serving/docker/docker-compose.yml at each release)
_IMAGE_TAG = re.compile(
    r"(?P<djl>\d+\.\d+\.\d+)-(?:lmi(?P<lmi>\d+)\.\d+\.\d+|neuronx|tensorrt-?llm|deepspeed|fastertransformer"
    r"|cpu|pytorch|lmi(?![\d.])|cu\d+)"
)


_IMAGE_FRAMEWORKS = (
    (re.compile(r"-lmi\d"), "djl-lmi"),
    (re.compile(r"-neuronx"), "djl-neuronx"),
    (re.compile(r"-tensorrt-?llm"), "djl-tensorrtllm"),
    (re.compile(r"-pytorch-inf2"), "djl-neuronx"),
    (re.compile(r"-lmi(?![\d.])"), "djl-lmi"),
    (re.compile(r"-deepspeed"), "djl-deepspeed"),
    (re.compile(r"-fastertransformer"), "djl-fastertransformer"),
)


def image_framework(text: str) -> str | None:
    """Which image family a tag names (``0.30.0-neuronx-sdk2.20.1`` → ``djl-neuronx``), else None."""
    for pattern, framework in _IMAGE_FRAMEWORKS:
        if pattern.search(text):
            return framework
    return None


def parse_lmi_version(text: str) -> Release:
    """Resolve ``0.30.0``, ``0.30``, ``v12``, ``lmi12``, ``12`` or an image tag/URI to a release.

    Raises ``ValueError`` with the accepted forms when nothing matches.
    """
    value = text.strip()
    candidates = list(releases())
    tag = _IMAGE_TAG.search(value)
    if tag:
        djl = tag.group("djl")
        lmi = tag.group("lmi")
        matches = [r for r in candidates if r.djl == djl and (lmi is None or r.lmi == lmi)]
        if matches:
            # an image tag without an LMI number means the first release of that DJL version
            return matches[0] if lmi is None else matches[-1]
    lowered = value.lower().removeprefix("lmi").removeprefix("-").removeprefix("v").strip()
    if re.fullmatch(r"\d+", lowered):
        for release in candidates:
            if release.lmi == lowered:
                return release
    if re.fullmatch(r"\d+\.\d+(\.\d+)?", lowered):
        wanted = version_tuple(lowered)
        matches = [r for r in candidates if r.djl_tuple == wanted]
        if matches:
            return matches[-1]
    known = ", ".join(sorted({r.djl for r in candidates}, key=version_tuple))
    raise ValueError(
        f"unknown LMI version {text!r}: use a DJL version ({known}), an LMI number such as v12, "
        "or an image tag such as 0.30.0-neuronx-sdk2.20.1"
    )


class RenderBase(NamedTuple):
    """The options render writes for a backend in a range of releases."""

    since: str | None
    until: str | None
    options: tuple[tuple[str, str], ...]


class Backend(NamedTuple):
    """A serving backend: which option groups it reads and how it passes the rest through."""

    id: str
    aliases: tuple[str, ...]
    accelerator: str
    image: str | None
    reads: tuple[str, ...]
    engine_args: str | None
    engine_args_since: str | None
    extra_allowed: bool
    summary: str
    source: str
    feature: str | None = None  # the SERVING_FEATURES entry of the image that ships it
    since: str | None = None  # first DJL release that ships it
    render_base: tuple[RenderBase, ...] = ()  # empty: render does not write this backend

    def render_options(self, release: Release) -> dict[str, str]:
        """The options render writes for this backend at a release (the newest range otherwise)."""
        for base in self.render_base:
            if release.in_range(base.since, base.until):
                return dict(base.options)
        return dict(self.render_base[-1].options) if self.render_base else {}


@cache
def backends() -> dict[str, Backend]:
    """Backends by id."""
    result = {}
    for row in load_data("backends.json")["backends"]:
        render = row.get("render") or {}
        result[row["id"]] = Backend(
            id=row["id"],
            aliases=tuple(row.get("aliases", [])),
            accelerator=row["accelerator"],
            image=row.get("image"),
            reads=tuple(row["reads"]),
            engine_args=row.get("engine_args"),
            engine_args_since=row.get("engine_args_since"),
            extra_allowed=bool(row.get("extra_allowed")),
            summary=row["summary"],
            source=row["source"],
            feature=row.get("feature"),
            since=row.get("since"),
            render_base=tuple(
                RenderBase(base.get("since"), base.get("until"), tuple(base["options"].items()))
                for base in render.get("base", [])
            ),
        )
    return result


def resolve_backend(name: str) -> Backend:
    """Find a backend by id or alias (case-insensitive); ``ValueError`` lists the choices."""
    wanted = name.strip().lower()
    for backend in backends().values():
        if wanted == backend.id or wanted in backend.aliases:
            return backend
    choices = ", ".join(backends())
    raise ValueError(f"unknown backend {name!r}: choose one of {choices}")


@cache
def entry_points() -> dict[str, dict[str, Any]]:
    """Known ``option.entryPoint`` modules by name."""
    return {row["module"]: row for row in load_data("backends.json")["entry_points"]}


@cache
def engines() -> dict[str, dict[str, Any]]:
    """The model-level ``engine`` names DJL knows, with the backend each implies."""
    return {row["name"]: row for row in load_data("backends.json")["engines"]}


class ModelLocation(NamedTuple):
    """The keys that name where the model is, and the files that make a directory a model."""

    keys: tuple[str, ...]
    artifact_pattern: str
    source: str


@cache
def model_location() -> ModelLocation:
    """What names a model (``option.model_id`` …) and which artifact files mark a model directory."""
    row = load_data("backends.json")["model_location"]
    return ModelLocation(tuple(row["keys"]), row["artifact_pattern"], row["source"])


class InferenceStep(NamedTuple):
    """One step of inferring the backend from a configuration (``backends.json``, ``inference``).

    Either ``when`` (key → values that select ``backend``), ``when_accelerator``, a named ``step``
    the code performs with the tables it names, or an unconditional fallback.
    """

    step: str | None
    when: tuple[tuple[str, tuple[str, ...]], ...]
    when_accelerator: str | None
    unless_accelerator: str | None
    backend: str | None
    on_neuron: str | None
    assumed: bool
    reason: str | None
    options: dict[str, Any]
    source: str


@cache
def inference_steps() -> tuple[InferenceStep, ...]:
    """How to infer the backend, first match wins."""
    steps = []
    known = {
        "step",
        "when",
        "when_accelerator",
        "unless_accelerator",
        "backend",
        "on_neuron",
        "assumed",
        "reason",
        "source",
    }
    for row in load_data("backends.json")["inference"]["steps"]:
        steps.append(
            InferenceStep(
                step=row.get("step"),
                when=tuple((key, tuple(values)) for key, values in (row.get("when") or {}).items()),
                when_accelerator=row.get("when_accelerator"),
                unless_accelerator=row.get("unless_accelerator"),
                backend=row.get("backend"),
                on_neuron=row.get("on_neuron"),
                assumed=bool(row.get("assumed")),
                reason=row.get("reason"),
                options={key: value for key, value in row.items() if key not in known},
                source=row["source"],
            )
        )
    return tuple(steps)
