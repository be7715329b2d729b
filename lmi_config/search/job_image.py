"""The image of ``search --on sagemaker``'s jobs: the Neuron LMI image whose optimum-neuron is the
version the search exports with.

A job exports with the optimum-neuron of its image, and a compiled configuration is proven for
that version only; so the image is chosen by that version, not by recency. The version is
``--optimum-neuron VERSION``, else the optimum-neuron installed where the command runs (the one
the user serves or caches with), else none is known and the newest image that ships
optimum-neuron is taken — the plan says which of these it was. Each image's optimum-neuron comes
from ``engine_registries.json`` (generated from the image's Dockerfile at its release branch),
else from ``images.json``.

Matching: an image with exactly that version; else the nearest version with the same major and
minor (distance in the patch number, the newer on a tie), said as such in the plan; else a
refusal listing the versions the published images in the region ship, with ``--image`` as the
way out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lmi_config.errors import InputError
from lmi_config.knowledge import version_tuple

PACKAGE = "optimum-neuron"


@dataclass(frozen=True)
class JobImage:
    """The jobs' image URI, the optimum-neuron it ships (None: unknown) and why it was chosen."""

    uri: str
    optimum_neuron: str | None
    reason: str
    djl_version: str | None = None  # the LMI release of a published image (None: given by --image)


@dataclass(frozen=True)
class _Candidate:
    uri: str
    djl_version: str
    optimum_neuron: str


def installed_version() -> str | None:
    """The optimum-neuron installed in this interpreter (its distribution's metadata), or None."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        return None


def choose_job_image(region: str, image: str | None, wanted: str | None) -> JobImage:
    """The jobs' image (``--image`` when given); :class:`InputError` when no published image in
    ``region`` ships an optimum-neuron of ``wanted``'s major and minor."""
    if image:
        return JobImage(image, None, "as given by --image")
    if wanted is not None and not re.fullmatch(r"\d+\.\d+(\.\d+)?[\w.+\-]{0,40}", wanted):
        raise InputError(f"--optimum-neuron {wanted!r}: give a version such as 0.0.24")
    source = f"--optimum-neuron {wanted}" if wanted else None
    if wanted is None:
        wanted = installed_version()
        source = f"the optimum-neuron installed here ({wanted})" if wanted else None
    candidates = _candidates(region)
    if wanted is None:
        newest = candidates[-1]
        return JobImage(
            newest.uri,
            newest.optimum_neuron,
            f"ships optimum-neuron {newest.optimum_neuron}, the newest of the images in {region}; no "
            "optimum-neuron is installed here and --optimum-neuron was not given",
            newest.djl_version,
        )
    exact = [candidate for candidate in candidates if candidate.optimum_neuron == wanted]
    if exact:
        chosen = exact[-1]
        return JobImage(chosen.uri, wanted, f"ships optimum-neuron {wanted}, as {source}", chosen.djl_version)
    nearest = _nearest(candidates, wanted)
    if nearest is None:
        shipped = ", ".join(dict.fromkeys(candidate.optimum_neuron for candidate in candidates))
        raise InputError(
            f"{source}: no published Neuron LMI image in {region} ships optimum-neuron {_minor(wanted)}.x "
            f"(they ship {shipped}); give --optimum-neuron one of those, or --image URI of an image with "
            f"optimum-neuron {wanted}"
        )
    return JobImage(
        nearest.uri,
        nearest.optimum_neuron,
        f"ships optimum-neuron {nearest.optimum_neuron}, the nearest to {source} with the same minor "
        f"version (no published image in {region} ships {wanted}); give --image to use another",
        nearest.djl_version,
    )


def check_runs_on(image: JobImage, instance_type: str, platform: str) -> None:
    """:class:`InputError` when the image's Neuron SDK is older than the first that runs on the
    instance's NeuronCores (Trainium2 before SDK 2.21): the job would start and fail to use them."""
    from lmi_config.knowledge.images import neuron_sdk_of
    from lmi_config.knowledge.instances import first_neuron_sdk

    first = first_neuron_sdk(platform)
    installed = neuron_sdk_of(image.djl_version) if image.djl_version else None
    if first is None or installed is None or version_tuple(installed) >= version_tuple(first[0]):
        return
    from lmi_config.knowledge.images import images

    published = [
        known.tag
        for known in images()
        if known.framework == "djl-neuronx" and known.published and known.tag and known.neuron_sdk
        if version_tuple(known.neuron_sdk) >= version_tuple(first[0])
    ]
    where = (
        f"published images that do: {', '.join(published)}"
        if published
        else "no published Neuron LMI image does"
    )
    raise InputError(
        f"--instance ml.{instance_type}: the jobs' image {image.uri} installs Neuron SDK {installed}, and "
        f"{platform} runs from Neuron SDK {first[0]} on ({where}); search that instance with --image URI of "
        "an image with a newer Neuron SDK, or search trn1"
    )


def _candidates(region: str) -> list[_Candidate]:
    """Published djl-neuronx images in ``region`` with a known optimum-neuron, oldest first."""
    from lmi_config.knowledge.engine_support import engine_version
    from lmi_config.knowledge.images import images, registries, repository

    if region not in registries():
        raise InputError(f"no Neuron LMI image is known in {region}; give --image URI")
    found = []
    for image in images():  # sorted by version
        if image.framework != "djl-neuronx" or not image.published or not image.tag:
            continue
        if region not in image.regions:
            continue
        shipped = engine_version(image.djl_version, PACKAGE)
        version = shipped[0] if shipped else image.backend_versions.get(PACKAGE)
        if version:
            uri = f"{registries()[region].host()}/{repository()}:{image.tag}"
            found.append(_Candidate(uri, image.djl_version, version))
    if not found:
        raise InputError(
            f"no published Neuron LMI image with optimum-neuron is known in {region}; give --image URI"
        )
    return found


def _minor(version: str) -> str:
    return ".".join(str(part) for part in version_tuple(version)[:2])


def _nearest(candidates: list[_Candidate], wanted: str) -> _Candidate | None:
    """The candidate whose version shares ``wanted``'s major and minor and is nearest in patch."""
    target = version_tuple(wanted)
    same = [
        candidate for candidate in candidates if version_tuple(candidate.optimum_neuron)[:2] == target[:2]
    ]
    if not same:
        return None
    # nearest patch first; on a tie the newer version, then the newer image
    return min(
        reversed(same),
        key=lambda candidate: abs(version_tuple(candidate.optimum_neuron)[2] - target[2]),
    )
