"""Loaders for the facts in ``lmi_config/data``: releases, backends, env-variable mapping.

Every data file is JSON (fast to load on the lint path) and every entry carries a
``source``. Loading is lazy and cached: a lint run reads each file at most once.
"""

import contextlib
import json
import marshal
import os
import re
import sys
import zlib
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

DATA_DIR = Path(__file__).resolve().parent.parent / "data"


@cache
def load_data(name: str) -> Any:
    """Parse ``lmi_config/data/<name>`` (cached in the process, and on disk as :mod:`marshal`).

    JSON stays the one form the facts are kept and reviewed in. Parsing the catalogues a lint reads
    (about 2 MB) is the largest single cost of a cold lint after imports, so the parsed value is
    also kept in the user's cache, as Python keeps compiled modules beside their source: a marshal
    load takes about half the time (``benchmarks/lint_speed.py``). The entry is keyed by the data
    file's path, size and modification time and by the interpreter, so an edited, upgraded or
    reinstalled file is parsed again; an unreadable or damaged entry is ignored.
    """
    path = DATA_DIR / name
    with open(path, "rb") as handle:
        stat = os.fstat(handle.fileno())
        entry = _marshal_entry(path, stat)
        if entry is not None:
            value = _read_marshal(entry)
            if value is not _MISSING:
                return value
        value = json.loads(handle.read())
    if entry is not None:
        _write_marshal(entry, value)
    return value


@cache
def load_table(name: str, field: str) -> Mapping[str, Any]:
    """``load_data(name)[field]``, a mapping whose entries are decoded only when read.

    The per-release tables (one entry per vLLM version, a few hundred kB each) are read one entry
    per lint: the cache keeps each entry's marshal apart, so a lint decodes the release it judges
    and not the others. Same cache, same keying and same fallbacks as :func:`load_data`.
    """
    path = DATA_DIR / name
    with open(path, "rb") as handle:
        stat = os.fstat(handle.fileno())
        entry = _marshal_entry(path, stat, part=field)
        if entry is not None:
            encoded = _read_marshal(entry)
            if isinstance(encoded, dict):
                return EncodedTable(encoded)
        value = json.loads(handle.read())[field]
    if entry is not None:
        _write_marshal(entry, {key: marshal.dumps(item) for key, item in value.items()})
    return value


@cache
def load_derived(name: str, derive: Callable[[Any], Any]) -> Any:
    """``derive(load_data(name))``, kept in the cache as its own marshal.

    For a catalogue that a lint turns into rows on every start: the rows are stored, so a process
    reads them and skips both the whole file and the conversion. ``derive`` must return what
    :mod:`marshal` can write (tuples, lists, dicts, strings, numbers) and read nothing but its
    argument; the entry is keyed by its code as well as by the data file, so a changed ``derive``
    derives again.
    """
    path = DATA_DIR / name
    with open(path, "rb") as handle:
        stat = os.fstat(handle.fileno())
    code = zlib.crc32(marshal.dumps(derive.__code__))
    entry = _marshal_entry(path, stat, part=derive.__name__, revision=f"-{code:08x}")
    if entry is not None:
        value = _read_marshal(entry)
        if value is not _MISSING:
            return value
    value = derive(load_data(name))
    if entry is not None:
        _write_marshal(entry, value)
    return value


class EncodedTable(Mapping[str, Any]):
    """A read-only mapping of marshalled entries (:func:`load_table`), each decoded once, when read."""

    __slots__ = ("_decoded", "_encoded")

    def __init__(self, encoded: dict[str, bytes]) -> None:
        self._encoded = encoded
        self._decoded: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        value = self._decoded.get(key, _MISSING)
        if value is _MISSING:
            value = self._decoded[key] = marshal.loads(self._encoded[key])
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._encoded)

    def __len__(self) -> int:
        return len(self._encoded)

    def __contains__(self, key: object) -> bool:
        return key in self._encoded


_MISSING = object()
CACHE_VARIABLE = "LMI_CONFIG_CACHE_DIR"  # where parsed data is kept; "off" (or "") keeps none


def _marshal_entry(path: Path, stat: os.stat_result, part: str = "", revision: str = "") -> Path | None:
    """The cache file for this exact data file (or one ``part`` of it, :func:`load_table`, at a
    ``revision`` of the code that derives it, :func:`load_derived`) under this interpreter (None:
    caching is off). A new file or revision replaces the entry (:func:`_write_marshal`)."""
    configured = os.environ.get(CACHE_VARIABLE)
    if configured is not None and configured.strip().lower() in ("", "off", "0", "none"):
        return None
    if configured:
        base = Path(configured)
    else:
        try:
            base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lmi-config" / "data"
        except (RuntimeError, KeyError):  # no home directory to keep a cache in
            return None
    place = zlib.crc32(os.fsencode(path))  # one installation's files, apart from another's
    version = f"{stat.st_size}-{stat.st_mtime_ns}-{sys.implementation.cache_tag}-{marshal.version}{revision}"
    stem = f"{path.stem}+{part}" if part else path.stem
    return base / f"{stem}-{place:08x}.{version}.marshal"


def _read_marshal(entry: Path) -> Any:
    try:
        with open(entry, "rb") as handle:
            if hasattr(os, "getuid") and os.fstat(handle.fileno()).st_uid != os.getuid():  # this user's only
                return _MISSING
            return marshal.loads(handle.read())
    except (OSError, ValueError, EOFError, TypeError):
        return _MISSING


def _write_marshal(entry: Path, value: Any) -> None:
    """Keep ``value`` for the next process; any failure (read-only home, full disk) only means
    the next process parses the JSON again. Written whole or not at all (rename into place)."""
    import tempfile

    try:
        entry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-", suffix=".marshal")
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(marshal.dumps(value))
            os.replace(temporary, entry)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        for stale in entry.parent.glob(f"{entry.name.split('.', 1)[0]}.*.marshal"):
            if stale != entry:  # an earlier version of this file in this installation
                with contextlib.suppress(OSError):
                    stale.unlink()
    except (OSError, ValueError):
        return


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
