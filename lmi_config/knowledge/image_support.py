"""What each LMI image can run: the versions its Dockerfile pins (``data/image_pins.json``), the model
types and pipeline tasks of those transformers releases (``data/transformers_model_types.json``), and
the model types the transformers-neuronx handler loads. All generated from the projects' code."""

import re
from functools import cache
from typing import Any, NamedTuple

from lmi_config.knowledge import Backend, Release, load_data
from lmi_config.knowledge.container_options import branch_of_release

_NUMBERS = re.compile(r"\d+")


class ImagePins(NamedTuple):
    """The versions one image pins at one release branch."""

    image: str
    branch: str
    pins: dict[str, str]
    ranges: dict[str, str]
    source: str
    venvs: dict[str, dict[str, dict[str, str]]] = {}  # backend -> its own virtual environment's pins

    def pinned(self, package: str, backend: str) -> str | None:
        """The version of a package the backend runs with: its virtual environment's, where the image
        gives it one (0.32's vLLM), else the image's."""
        venv = self.venvs.get(backend)
        return (venv["pins"] if venv is not None else self.pins).get(package)


def numbers(version: str, length: int = 4) -> tuple[int, ...]:
    """``"2.12.54.0+f631c2365"`` -> ``(2, 12, 54, 0)``: the leading numbers, for comparing versions."""
    found = [int(part) for part in _NUMBERS.findall(version.split("+")[0])[:length]]
    return tuple(found + [0] * (length - len(found)))


@cache
def _branch_order() -> dict[str, int]:
    return {row[0]: index for index, row in enumerate(load_data("image_pins.json")["branches"])}


@cache
def _branch(djl: str, lmi: str | None) -> str | None:
    """The branch whose Dockerfiles a release was built from (this file reads back to 0.22.1)."""
    return branch_of_release([tuple(row) for row in load_data("image_pins.json")["branches"]], djl, lmi)


def _holds(entry: dict[str, Any], branch: str) -> bool:
    order = _branch_order()
    return branch in order and order[entry["first"]] <= order[branch] <= order[entry["last"]]


def image_of(backend: Backend, release: Release, named: str | None) -> str | None:
    """The image family that runs a backend at a release: the one named, else the one that ships it."""
    if named:
        return named
    homes = [image for image, features in release.features.items() if backend.feature in features]
    if backend.image in homes or (not homes and backend.image in release.features):
        return backend.image
    if homes:
        return homes[0]
    # a handler without a feature of its own (HF Accelerate) ships in the release's GPU LLM image
    gpu = [image for image in release.features if image != "djl-neuronx"]
    return gpu[0] if gpu and backend.accelerator != "neuron" else backend.image


def pins_at(image: str, release: Release) -> ImagePins | None:
    """What an image pins at a release (None: a release or image the generator did not read)."""
    branch = _branch(release.djl, release.lmi)
    if branch is None:
        return None
    for entry in load_data("image_pins.json")["images"]:
        if entry["image"] == image and _holds(entry, branch):
            return ImagePins(image, branch, entry["pins"], entry["ranges"], entry["source"], entry["venvs"])
    return None


@cache
def _model_types() -> dict[str, Any]:
    return load_data("transformers_model_types.json")


def known_to_transformers(model_type: str, version: str) -> bool | None:
    """Whether transformers ``version`` knows ``model_type``; None for a version the data does not list."""
    table = _model_types()
    listed = list(table["versions"])
    if version not in listed:
        return None
    span = table["model_types"].get(model_type)
    if span is None:
        return False
    return listed.index(span["first"]) <= listed.index(version) <= listed.index(span["last"])


def first_knowing(model_type: str) -> str | None:
    """The oldest listed transformers version that knows a model type."""
    span = _model_types()["model_types"].get(model_type)
    return span["first"] if span else None


@cache
def pipeline_tasks() -> frozenset[str]:
    """Task names transformers' ``pipeline()`` takes in any release an image pins."""
    return frozenset(_model_types()["pipeline_tasks"])


def neuron_model_types(loader: str, release: Release) -> tuple[tuple[str, ...], str] | None:
    """The model types the transformers-neuronx handler loads with a loader (``tnx``, ``optimum``) at
    a release, and the source; None where the generator did not read that release."""
    branch = _branch(release.djl, release.lmi)
    if branch is None:
        return None
    for entry in load_data("image_pins.json")["neuron_model_types"]:
        if entry["loader"] == loader and _holds(entry, branch):
            return tuple(entry["model_types"]), entry["source"]
    return None


def releases_knowing(model_type: str, image: str, backend: str) -> list[str]:
    """Labels of the releases whose ``image`` pins, for ``backend``, a transformers that knows ``model_type``."""
    from lmi_config.knowledge import releases

    found = []
    for release in releases():
        pins = pins_at(image, release)
        version = pins.pinned("transformers", backend) if pins else None
        if version and known_to_transformers(model_type, version):
            found.append(release.label())
    return found


def backend_ships(backend: Backend, release: Release) -> bool:
    """Whether an image of the release ships the backend (its feature, from the backend's first release)."""
    from lmi_config.knowledge import version_tuple

    if backend.feature is None:
        return True
    too_early = bool(backend.since) and release.djl_tuple < version_tuple(backend.since)
    return not too_early and any(backend.feature in features for features in release.features.values())


def releases_shipping(backend: Backend) -> list[Release]:
    """The releases an image of which ships the backend, oldest first."""
    from lmi_config.knowledge import releases

    return [release for release in releases() if backend_ships(backend, release)]
