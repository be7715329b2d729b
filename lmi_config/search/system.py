"""The machine a search runs on: instance type and NeuronCores, from optimum-neuron where it is
installed (the seed's ``current_instance_type``, ``get_available_cores``, ``cores_per_device``),
else from the options."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass

from lmi_config.errors import InputError

DETECT = (
    "import json;"
    "from optimum.neuron.utils.system import get_instance_name, get_available_cores, cores_per_device;"
    "print(json.dumps({'instance': get_instance_name().strip(), 'cores': get_available_cores(),"
    " 'cores_per_device': cores_per_device()}))"
)


@dataclass(frozen=True)
class Machine:
    """Where the trials run."""

    instance_type: str
    available_cores: int
    cores_per_device: int
    detected: bool


def detect(python: str) -> tuple[dict[str, object] | None, str]:
    """Ask optimum-neuron (with the interpreter that runs the load step); (answer, why not)."""
    try:
        completed = subprocess.run(
            [python, "-c", DETECT], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"{python} could not be run ({error})"
    if completed.returncode != 0:
        last = (completed.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"optimum-neuron could not tell ({last})"
    try:
        answer = json.loads(completed.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None, "optimum-neuron gave no readable answer"
    return (answer if isinstance(answer, dict) else None), "unreadable answer"


def machine(instance: str | None, cores: int | None, cores_per_device: int | None, python: str) -> Machine:
    """The options where given, else optimum-neuron's answer; :class:`InputError` when neither."""
    from lmi_config.knowledge.instances import resolve_instance

    detected: dict[str, object] | None = None
    if instance is None or cores is None or cores_per_device is None:
        detected, why = detect(python)
        if detected is None and instance is None:
            raise InputError(
                f"cannot detect the instance type: {why}; give --instance (and --cores when fewer are visible)"
            )
    name = instance or str((detected or {}).get("instance", ""))
    try:
        known = resolve_instance(name)
    except ValueError as error:
        raise InputError(str(error)) from None
    if known.accelerator != "neuron":
        raise InputError(
            f"{known.instance_type} has no NeuronCores; search exports for Inferentia2 and Trainium"
        )

    def number(given: int | None, field: str, default: int) -> int:
        if given is not None:
            return given
        value = (detected or {}).get(field)
        return int(value) if isinstance(value, int) and value > 0 else default

    return Machine(
        known.instance_type,
        number(cores, "cores", known.num_cores),
        number(cores_per_device, "cores_per_device", known.cores_per_device),
        detected is not None,
    )
