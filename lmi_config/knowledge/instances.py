"""Instance types (``data/instances.json``) and tensor-parallel rules (``data/tp_rules.json``)."""

import re
from functools import cache
from typing import Any, NamedTuple

from lmi_config.knowledge import load_data

GIB = 1024**3


class Instance(NamedTuple):
    """One instance type with its accelerators, as the memory model needs it."""

    instance_type: str
    accelerator: str  # neuron | gpu
    family: str
    platform: str
    accelerator_name: str
    num_devices: int
    cores_per_device: int  # logical NeuronCores per chip at the default LNC; 1 per GPU
    device_memory_gib: float
    usable_memory_gib: float | None  # GPUs: what the driver reports
    vcpus: int | None
    host_memory_gib: float | None
    lnc: int | None
    ebs_volume_size_supported: bool | None
    inferred: bool
    note: str | None
    source: str

    @property
    def num_cores(self) -> int:
        """NeuronCores (logical, at the default LNC) or GPUs: the units TP is counted in."""
        return self.num_devices * self.cores_per_device

    @property
    def memory_per_core_bytes(self) -> int:
        """HBM per NeuronCore (or memory per GPU as the driver reports it, else as sold)."""
        per_device = self.usable_memory_gib if self.usable_memory_gib else self.device_memory_gib
        return int(per_device * GIB / self.cores_per_device)

    @property
    def core_word(self) -> str:
        return "NeuronCore" if self.accelerator == "neuron" else "GPU"


def with_lnc(instance: Instance, lnc: int) -> Instance:
    """The same instance with another logical-NeuronCore setting (Trainium2: 1 or 2).

    ``ValueError`` where the instance has no LNC setting or the value does not divide the cores.
    """

    if instance.lnc is None:
        raise ValueError(
            f"{instance.instance_type} has no logical NeuronCore setting (LNC exists on Trainium2 only)"
        )
    physical = instance.cores_per_device * instance.lnc
    if lnc < 1 or physical % lnc:
        raise ValueError(
            f"LNC {lnc} does not divide the {physical} physical NeuronCores of a {instance.accelerator_name} chip; use 1 or 2"
        )
    return instance._replace(cores_per_device=physical // lnc, lnc=lnc)


def _instance(row: dict[str, Any]) -> Instance:
    physical = int(row.get("physical_cores_per_device") or 1)
    lnc = row.get("default_lnc")
    cores = physical // int(lnc) if lnc else physical
    usable = row.get("device_memory_usable_gib")
    if usable is None and row.get("device_memory_usable_mib"):
        usable = float(row["device_memory_usable_mib"]) / 1024
    return Instance(
        instance_type=row["instance_type"],
        accelerator=row["accelerator"],
        family=row.get("family") or row["instance_type"].split(".")[0],
        platform=row.get("platform") or row["accelerator"],
        accelerator_name=row.get("accelerator_name") or "",
        num_devices=int(row["num_devices"]),
        cores_per_device=cores,
        device_memory_gib=float(row["device_memory_gib"]),
        usable_memory_gib=float(usable) if usable else None,
        vcpus=row.get("vcpus"),
        host_memory_gib=row.get("host_memory_gib"),
        lnc=int(lnc) if lnc else None,
        ebs_volume_size_supported=row.get("ebs_volume_size_supported"),
        inferred=bool(row.get("inferred")),
        note=row.get("note"),
        source=row["source"],
    )


@cache
def instances() -> dict[str, Instance]:
    """All instance types by name (without the ``ml.`` prefix)."""
    return {row["instance_type"]: _instance(row) for row in load_data("instances.json")["instances"]}


def resolve_instance(name: str) -> Instance:
    """``ml.inf2.xlarge`` or ``inf2.xlarge``; ``ValueError`` with the closest names otherwise."""
    import difflib

    wanted = name.strip().lower().removeprefix("ml.")
    table = instances()
    if wanted in table:
        return table[wanted]
    close = difflib.get_close_matches(wanted, list(table), n=3, cutoff=0.6)
    if f"ml.{wanted}" in _sagemaker_hosting_types():
        # a real instance type, not a typo: say what is missing instead of suggesting another
        nearest = f" (nearest known: {', '.join(close)})" if close else ""
        raise ValueError(
            f"ml.{wanted} is a SageMaker hosting instance type lmi-config has no hardware facts for "
            "(accelerators, their memory, host RAM), so it cannot judge a configuration on it; judge on an "
            f"instance type it knows{nearest}, or list its facts with sources in lmi_config/data/instances.json"
        )
    hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(sorted(table))}"
    raise ValueError(f"unknown instance type {name!r}{hint}")


def _sagemaker_hosting_types() -> frozenset[str]:
    """The ``ml.*`` types SageMaker hosts endpoints on (botocore's enum, ``data/sagemaker_api.json``)."""
    from lmi_config.knowledge.sagemaker import sagemaker_limits

    return sagemaker_limits().instance_types


def _accelerator_key(name: str) -> str:
    """An accelerator name without vendor, form factor and punctuation: ``NVIDIA A100-SXM4-80GB``
    and ``A100-80GB`` are one key. PCIe and NVL parts keep their mark (other bandwidths)."""
    key = re.sub(r"[^a-z0-9]", "", name.lower().removeprefix("nvidia").replace("aws", ""))
    return re.sub(r"sxm\d?", "", key)


def instance_with_accelerator(name: str, devices: int = 1, cores: int = 1) -> Instance | None:
    """The smallest instance type (fewest devices, then vCPUs) with at least ``devices`` of an
    accelerator and ``cores`` NeuronCores or GPUs, else None; an A100 or V100 without its memory
    size is ambiguous (None)."""
    wanted = _accelerator_key(name)
    if not wanted or len(name) > 100:
        return None
    matches = [
        instance
        for instance in instances().values()
        if instance.accelerator_name
        and _accelerator_key(instance.accelerator_name) == wanted
        and instance.num_devices >= devices
        and instance.num_cores >= cores
    ]
    return min(
        matches,
        key=lambda instance: (instance.num_devices, instance.vcpus or 0, instance.instance_type),
        default=None,
    )


@cache
def tp_rules() -> tuple[dict[str, Any], ...]:
    return tuple(load_data("tp_rules.json")["rules"])


def rules_for(platform: str, backend: str, kind: str) -> list[dict[str, Any]]:
    """TP rules of one kind for a platform (or its accelerator) and backend."""
    found = []
    for row in tp_rules():
        if row.get("kind") != kind:
            continue
        if row.get("platform") not in (
            platform,
            "*",
            "neuron" if platform in ("inf2", "trn1", "trn2", "inf1") else "gpu",
        ):
            continue
        if "*" not in row.get("backends", ["*"]) and backend not in row.get("backends", []):
            continue
        found.append(row)
    return found


def degree_allowed(row: dict[str, Any], degree: int) -> bool:
    """Whether a TP degree is in a rule's list (or a multiple of its ``multiple_of``)."""
    degrees = row.get("degrees") or []
    multiple = row.get("multiple_of")
    return degree in degrees or bool(multiple and degree % int(multiple) == 0)


def first_neuron_sdk(platform: str) -> tuple[str, str] | None:
    """(version, source) of the first Neuron SDK that runs on a Neuron platform, where one is recorded."""
    row = load_data("instances.json").get("first_neuron_sdk", {}).get(platform)
    return (str(row["value"]), str(row["source"])) if row else None
