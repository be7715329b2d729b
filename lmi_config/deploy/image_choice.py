"""Which container image serves a backend on an instance in a region — or why none does.

The SageMaker SDK's ``image_uris.retrieve`` returns a CUDA image for an ``ml.inf2`` instance
without a word; here the backend, the instance's accelerator and family, the release and the
region must all agree, from the image table (``data/images.json``):

- the backend must run on the instance's accelerator (``transformers-neuronx`` on a GPU, or
  anything on a CPU instance, is refused) and the family must not be one the sources rule out
  (``transformers-neuronx`` on Trn2, any LMI image on Inferentia1); a family the LMI
  documentation does not list is a warning;
- the release must have a published image of that accelerator that ships the backend;
- the image must be published in the region (an image the SDK does not list is assumed to be
  where its nearest listed version is, with a warning).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from lmi_config.errors import SpecError
from lmi_config.knowledge import image_framework
from lmi_config.knowledge.images import (
    Image,
    frameworks,
    images,
    images_for,
    instance_support,
    published_versions,
    registries,
    repository,
)

ACCELERATOR_WORDS = {"neuron": "Inferentia2 / Trainium (Neuron)", "gpu": "GPU", "cpu": "CPU-only"}
_IMAGE_URI = re.compile(r"^(?P<host>[^/\s]+)/(?P<repository>[^:@\s]+)[:@](?P<tag>[^\s]+)$")


@dataclass(frozen=True)
class ImageChoice:
    """The image URI deploy uses, what it is, and what the user should know about it."""

    uri: str
    framework: str | None
    tag: str
    image: Image | None  # None for an --image the table does not describe
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def public(self) -> dict[str, Any]:
        """What the plan shows about the image."""
        return {
            "uri": self.uri,
            "framework": self.framework,
            "tag": self.tag,
            "djl_version": self.image.djl_version if self.image else None,
            "lmi_version": self.image.lmi_version if self.image else None,
            "regions_from": self.image.regions_from if self.image else None,
        }


def _check_instance(backend: str, accelerator: str, family: str, instance_type: str) -> list[str]:
    """Refuse a backend the instance cannot run; warn for a family the documentation does not list."""
    if accelerator == "cpu":
        raise SpecError(
            f"{instance_type} has no GPU and no Neuron device; the LMI containers serve LLMs on "
            "GPU (ml.g5, ml.g6, ml.p4d, ml.p5 …) or Inferentia2 / Trainium (ml.inf2, ml.trn1) instances"
        )
    support = instance_support().get((backend, accelerator))
    if support is None:
        runs_on = sorted(acc for name, acc in instance_support() if name == backend)
        if not runs_on:
            raise SpecError(
                f"deploy does not know an LMI image for backend {backend}; use "
                + ", ".join(sorted({name for name, _ in instance_support()}))
            )
        suggestion = "transformers-neuronx (or nxdi)" if accelerator == "neuron" else "vllm (or tensorrt-llm)"
        raise SpecError(
            f"backend {backend} runs on {' or '.join(ACCELERATOR_WORDS[a] for a in runs_on)} instances, and "
            f"{instance_type} is a {ACCELERATOR_WORDS[accelerator]} instance: choose another instance, or backend "
            f"{suggestion}"
        )
    for refused, why in support.refused.items():
        if family.startswith(refused):
            raise SpecError(f"backend {backend} cannot serve on {instance_type}: {why}")
    if not support.lists(family):
        return [
            f"{instance_type}: the LMI documentation lists {support.documented} for {backend}, not "
            f"{family}; it may work, but nobody documented it"
        ]
    return []


def _candidates(backend: str, accelerator: str, djl: str, lmi: str | None, tag: str | None) -> list[Image]:
    return images_for(backend, accelerator, djl, lmi, tag)  # the one answer lint and render give too


def _published_versions(backend: str, accelerator: str) -> list[str]:
    return published_versions(backend, accelerator)


def _pick_image(
    backend: str, accelerator: str, djl: str, lmi: str | None, tag: str | None, release_label: str
) -> Image:
    candidates = _candidates(backend, accelerator, djl, lmi, tag)
    if not candidates:
        versions = _published_versions(backend, accelerator)
        shown = ", ".join(versions[-4:]) if versions else "none"
        asked = f"image {tag}" if tag else f"LMI {release_label}"
        raise SpecError(
            f"{asked} has no {ACCELERATOR_WORDS[accelerator]} image that ships {backend}; published images that "
            f"do: {shown} (set lmi_version to one of them)"
        )
    image = candidates[0]
    if not image.published or image.tag is None:
        versions = _published_versions(backend, accelerator)
        newest = versions[-1] if versions else None
        raise SpecError(
            f"{image.label()} was never published (only a Dockerfile on the {image.djl_version}-dlc branch"
            f"{'; ' + image.note if image.note else ''}); deploy "
            + (f"lmi_version {newest}" if newest else "another release")
            + ", or build the image yourself and pass --image URI"
        )
    return image


def _registry_uri(image: Image, region: str) -> tuple[str, list[str]]:
    registry = registries().get(region)
    if registry is None:
        raise SpecError(
            f"no LMI image registry is known for region {region!r}; known regions: {', '.join(sorted(registries()))}"
        )
    warnings = []
    if region not in image.regions:
        raise SpecError(
            f"{image.label()} is not published in {region} (per {image.regions_from}); it is in "
            f"{', '.join(image.regions)}"
        )
    if image.regions_assumed:
        warnings.append(
            f"the SageMaker SDK does not list {image.tag}; its regions are assumed from {image.regions_from}"
        )
    return f"{registry.host()}/{repository()}:{image.tag}", warnings


def _explicit_image(uri: str, backend: str, accelerator: str, instance_type: str) -> ImageChoice:
    """An image the user names: refuse one built for another accelerator or backend."""
    match = _IMAGE_URI.match(uri.strip())
    if match is None:
        raise SpecError(f"--image {uri!r}: write REGISTRY/REPOSITORY:TAG")
    tag = match.group("tag")
    framework = image_framework(tag)
    described = next((image for image in images() if image.tag == tag), None)
    if framework is None or framework not in frameworks():
        return ImageChoice(
            uri,
            None,
            tag,
            None,
            (f"--image {uri}: not an LMI tag lmi-config knows; it cannot check that it serves {backend}",),
        )
    family = frameworks()[framework]
    if family.accelerator != accelerator:
        raise SpecError(
            f"--image {uri} is a {framework} ({ACCELERATOR_WORDS[family.accelerator]}) image and {instance_type} is "
            f"a {ACCELERATOR_WORDS[accelerator]} instance; it would fail at start-up"
        )
    ships = described.backends if described else family.backends
    if backend not in ships:
        raise SpecError(f"--image {uri} ships {', '.join(ships)}, not backend {backend}")
    return ImageChoice(uri, framework, tag, described)


def choose_image(
    *,
    backend: str,
    instance: Any,
    region: str,
    djl_version: str,
    lmi_version: str | None,
    release_label: str,
    requested_tag: str | None = None,
    image_uri: str | None = None,
) -> ImageChoice:
    """The image for a backend on an instance (``knowledge.instances.Instance``) in a region.

    ``requested_tag`` is a full tag the spec named as its ``lmi_version``; ``image_uri`` an image
    the user gives (``--image``), checked against the accelerator and the backend. Raises
    :class:`SpecError` with the reason and what to choose instead.
    """
    warnings = _check_instance(backend, instance.accelerator, instance.family, instance.instance_type)
    if image_uri:
        chosen = _explicit_image(image_uri, backend, instance.accelerator, instance.instance_type)
        return ImageChoice(
            chosen.uri, chosen.framework, chosen.tag, chosen.image, (*warnings, *chosen.warnings)
        )
    image = _pick_image(backend, instance.accelerator, djl_version, lmi_version, requested_tag, release_label)
    uri, region_warnings = _registry_uri(image, region)
    return ImageChoice(uri, image.framework, image.tag or "", image, (*warnings, *region_warnings))
