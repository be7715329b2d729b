"""Whether the image's Neuron SDK runs on the instance's NeuronCores at all.

Trainium2 (trn2, NeuronCore-v3) is supported from Neuron 2.21.0 (``instances.json first_neuron_sdk``,
from the SDK's release notes); each djl-neuronx release installs one Neuron SDK (``images.json``). An
older image has no runtime or compiler for the newer cores, so nothing it loads can start there: the
judge refuses it and ``plan`` never ranks it. An optimum-neuron export (``search``) runs in the
environment the user chose, whose SDK the data cannot see: not judged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lmi_config.knowledge import version_tuple
from lmi_config.knowledge.images import images, neuron_sdk_of
from lmi_config.knowledge.instances import first_neuron_sdk
from lmi_config.shape.problems import Problem

if TYPE_CHECKING:
    from lmi_config.shape.dimensions import Target

CHECK = "neuron-sdk-predates-instance"  # LMI612


def judge_neuron_sdk(target: Target) -> list[Problem]:
    """An error when the release's Neuron SDK is older than the first one that runs on the instance."""
    instance = target.instance
    if instance is None or target.accelerator != "neuron" or target.optimum_neuron_export is not None:
        return []
    first = first_neuron_sdk(instance.platform)
    installed = neuron_sdk_of(target.release.djl)
    if first is None or installed is None or version_tuple(installed) >= version_tuple(first[0]):
        return []
    newer = sorted(
        (
            image
            for image in images()
            if image.framework == "djl-neuronx"
            and image.neuron_sdk
            and version_tuple(image.neuron_sdk) >= version_tuple(first[0])
        ),
        key=lambda image: version_tuple(image.djl_version),
    )
    if not newer:
        advice = "no LMI image installs one"
    else:
        published = (
            "" if newer[0].published else "; not published as a SageMaker image: build it from djl-serving"
        )
        advice = f"use LMI {newer[0].djl_version} or later (Neuron SDK {newer[0].neuron_sdk}{published})"
    message = (
        f"the djl-neuronx image of LMI {target.release.label()} installs Neuron SDK {installed}, but "
        f"{instance.accelerator_name} ({instance.instance_type}) runs from Neuron SDK {first[0]} on: the runtime "
        f"cannot use its NeuronCores — {advice}, or an instance the image supports (inf2, trn1)"
    )
    return [Problem(CHECK, "error", message, None)]
