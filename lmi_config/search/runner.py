"""Running one trial: the export and the load, each in its own process group, with a timeout,
their output in a log file, and the failure classified from its last lines.

Each step runs in a new session (its own process group), so a timeout or a stop request ends
the step and everything it started (``killpg``: SIGTERM, then SIGKILL after a grace period)
and Ctrl-C in the terminal reaches only the search, which then ends the step itself.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lmi_config.knowledge.planning import search_constants

GRACE_SECONDS = 5.0
POLL_SECONDS = 0.05
TAIL_LINES = 20


@dataclass
class StepResult:
    """How one process ended."""

    returncode: int | None
    seconds: float
    timed_out: bool = False
    interrupted: bool = False
    tail: list[str] = field(default_factory=list)

    @property
    def succeeded(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.interrupted


def classify(result: StepResult) -> str:
    """timeout, device-oom, host-oom, compiler-error (``data/search.json``), else other."""
    if result.timed_out:
        return "timeout"
    text = "\n".join(result.tail).lower()
    for failure in search_constants().failure_classes:
        if any(pattern.lower() in text for pattern in failure.patterns):
            return failure.name
        if result.returncode is not None and -result.returncode in failure.signals:
            return failure.name
    return "other"


class ChildRunner:
    """Runs steps one at a time and can be asked (from a signal handler) to stop the current one."""

    def __init__(self, environment: dict[str, str], on_child: Callable[[int | None], None]):
        self.environment = environment
        self.on_child = on_child
        self.stop_signal: int | None = None
        self._child: subprocess.Popen[bytes] | None = None

    def request_stop(self, signal_number: int) -> None:
        """Stop after ending the current step (safe to call from a signal handler)."""
        self.stop_signal = signal_number
        child = self._child
        if child is not None and child.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(child.pid, signal.SIGTERM)

    def run(self, command: list[str], timeout_seconds: float, log_path: Path) -> StepResult:
        """Run ``command`` to its end, its timeout, or a stop request."""
        started = time.monotonic()
        if self.stop_signal is not None:
            return StepResult(None, 0.0, interrupted=True)
        try:
            with open(log_path, "wb") as log:
                child = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=self.environment,
                    start_new_session=True,
                )
        except OSError as error:
            log_path.write_text(f"cannot start {command[0]}: {error.strerror or error}\n", encoding="utf-8")
            return StepResult(127, time.monotonic() - started, tail=_tail(log_path))
        self._child = child
        self.on_child(child.pid)
        timed_out = False
        try:
            while child.poll() is None:
                if self.stop_signal is not None or time.monotonic() - started > timeout_seconds:
                    timed_out = self.stop_signal is None
                    _end_group(child)
                    break
                time.sleep(POLL_SECONDS)
        finally:
            self._child = None
            self.on_child(None)
        return StepResult(
            child.returncode,
            time.monotonic() - started,
            timed_out=timed_out,
            interrupted=self.stop_signal is not None,
            tail=_tail(log_path),
        )


def _end_group(child: subprocess.Popen[bytes]) -> None:
    """SIGTERM the step's process group, SIGKILL it after the grace period, and reap the leader."""
    with contextlib.suppress(OSError):
        os.killpg(child.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=GRACE_SECONDS)
    with contextlib.suppress(OSError):
        os.killpg(child.pid, signal.SIGKILL)  # whatever the leader left behind in its group
    child.wait()


def _tail(log_path: Path) -> list[str]:
    try:
        with open(log_path, "rb") as log:
            log.seek(0, os.SEEK_END)
            size = log.tell()
            log.seek(max(0, size - 16384))
            text = log.read().decode("utf-8", "replace")
    except OSError:
        return []
    from lmi_config.secrets import environment_secret_values, redact

    # the lines go into the journal (and a shard's S3 object): a tool that echoes its environment
    # (HF_TOKEN of a gated model's download) must not put the token there
    secret_values = environment_secret_values()
    return [redact(line.rstrip(), secret_values) for line in text.splitlines()[-TAIL_LINES:]]


def remove_artifacts(*paths: Path) -> None:
    """Remove an exported directory and its log (a missing one is fine)."""
    for path in paths:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                path.unlink()
