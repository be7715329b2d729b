"""The machine a search runs on: instance type and NeuronCores, from optimum-neuron where it is
installed (the seed's ``current_instance_type``, ``get_available_cores``, ``cores_per_device``),
else from the options."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass

from lmi_config.errors import InputError

DETECT = (
    "import json;"
    "from optimum.neuron.utils.system import get_instance_name, get_available_cores, cores_per_device;"
    "print(json.dumps({'instance': get_instance_name().strip(), 'cores': get_available_cores(),"
    " 'cores_per_device': cores_per_device()}))"
)


CAPTURE_LIMIT_BYTES = 1024 * 1024  # a detection or an import prints a few lines, never this much
_TAIL_BYTES = 64 * 1024


@dataclass(frozen=True)
class Captured:
    """How a short command ended and the last of what it printed."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    overflowed: bool = False

    def problem(self, what: str, timeout_seconds: float) -> str | None:
        """Why the command gave no usable answer, or None when it ran to a normal end."""
        if self.timed_out:
            return f"{what} did not finish within {timeout_seconds:g} s"
        if self.overflowed:
            return f"{what} printed more than {CAPTURE_LIMIT_BYTES} bytes and was stopped"
        return None


def run_captured(
    command: list[str], timeout_seconds: float, limit_bytes: int = CAPTURE_LIMIT_BYTES
) -> Captured:
    """Run a short command (a detection, an import check) keeping the last 64 KiB of each output
    and stopping it (its whole process group) past ``limit_bytes`` of output or ``timeout_seconds``,
    so that a command that never stops printing (``--python yes``) cannot exhaust memory. Raises
    :class:`OSError` when it cannot be started."""
    import selectors

    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert process.stdout is not None and process.stderr is not None
    pipes = (process.stdout, process.stderr)
    tails = {pipe.fileno(): bytearray() for pipe in pipes}
    selector = selectors.DefaultSelector()
    for descriptor in tails:
        selector.register(descriptor, selectors.EVENT_READ)
    deadline, total, stopped = time.monotonic() + timeout_seconds, 0, ""
    with selector:
        while selector.get_map() and not stopped:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                stopped = "timeout"
                break
            for key, _ in selector.select(min(remaining, 0.5)):
                chunk = os.read(key.fd, _TAIL_BYTES)
                if not chunk:
                    selector.unregister(key.fd)
                    continue
                tails[key.fd] += chunk
                del tails[key.fd][:-_TAIL_BYTES]
                total += len(chunk)
                if total > limit_bytes:
                    stopped = "overflow"
    if stopped or _wait(process, deadline) is None:
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        stopped = stopped or "timeout"
    for pipe in pipes:
        pipe.close()
    out, err = (bytes(tail).decode("utf-8", "replace") for tail in tails.values())
    return Captured(process.returncode, out, err, stopped == "timeout", stopped == "overflow")


def _wait(process: subprocess.Popen[bytes], deadline: float) -> int | None:
    try:
        return process.wait(timeout=max(deadline - time.monotonic(), 0.01))
    except subprocess.TimeoutExpired:
        return None


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
        completed = run_captured([*shlex.split(python), "-c", DETECT], 120)
    except (OSError, ValueError) as error:
        return None, f"{python} could not be run ({error})"
    problem = completed.problem(python, 120)
    if problem is not None:
        return None, problem
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


def check_commands(exporter: str, python: str) -> None:
    """Refuse to start when the commands cannot run at all: every trial would fail the same way
    and be journaled as a failure that a resume then skips."""
    for what, command in (("--exporter", exporter), ("--python", python)):
        words = shlex.split(command)
        if not words or shutil.which(words[0]) is None:
            raise InputError(f"{what} {command!r}: {words[0] if words else 'the command'} is not found")
    check = [*shlex.split(python), "-c", "import optimum.neuron"]
    try:
        completed = run_captured(check, 300)
    except OSError as error:
        raise InputError(f"--python {python!r} cannot be run ({error})") from None
    problem = completed.problem(f"--python {python!r}", 300)
    if problem is not None:
        raise InputError(f"{problem} while importing optimum.neuron; point --python at a Python interpreter")
    if completed.returncode != 0:
        last = (completed.stderr.strip().splitlines() or ["no output"])[-1]
        raise InputError(
            f"--python {python!r} cannot import optimum.neuron ({last}); run the search in the "
            "environment where optimum-neuron is installed, or point --python at its interpreter"
        )
