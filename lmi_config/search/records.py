"""What a search keeps on disk, beside the results file:

- the results file itself, in optimum-neuron's cache-config format, rewritten atomically after
  every success (other models and other instance types in it are kept as they are);
- ``<stem>.journal.json``: every failed trial (its class and last lines) and every skip with
  its reason, rewritten atomically after each, so a resume never repeats a trial;
- ``<stem>.lock``: held (``flock``) while a search writes these files; the kernel releases it
  when the process dies, even by SIGKILL;
- ``<stem>.running.json``: the token every process a search starts carries in its environment
  (and the running trial's process group), so a search that resumes after a SIGKILL ends what
  the killed one left running and nothing else.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmi_config.errors import InputError
from lmi_config.io import write_atomically
from lmi_config.search import cache_config
from lmi_config.search.grid import Trial
from lmi_config.search.strategy import Outcomes

TOKEN_VARIABLE = "LMI_CONFIG_SEARCH_TOKEN"


@dataclass(frozen=True)
class SearchPaths:
    """The results file and the files beside it."""

    results: Path
    journal: Path
    lock: Path
    running: Path

    @classmethod
    def beside(cls, results: Path) -> SearchPaths:
        stem = results.with_suffix("")
        return cls(
            results,
            stem.with_name(stem.name + ".journal.json"),
            stem.with_name(stem.name + ".lock"),
            stem.with_name(stem.name + ".running.json"),
        )


@dataclass(frozen=True)
class Subject:
    """Whose trials a results file and journal hold: the model, optimum-neuron's instance_type, the task."""

    model: str
    instance_type: str
    task: str


class Record:
    """The results file and the journal of one subject."""

    def __init__(self, paths: SearchPaths, subject: Subject):
        self.paths = paths
        self.subject = subject
        self.results: cache_config.CacheConfig = {}
        self.journal: dict[str, Any] = {"format": 1, "entries": []}

    def load(self) -> Outcomes:
        """Read both files (missing ones are empty); :class:`InputError` for a damaged one."""
        if self.paths.results.exists():
            self.results = cache_config.parse(_read(self.paths.results), str(self.paths.results))
        if self.paths.journal.exists():
            try:
                journal = json.loads(_read(self.paths.journal))
            except json.JSONDecodeError as error:
                raise InputError(
                    f"{self.paths.journal}:{error.lineno}: not valid JSON ({error.msg})"
                ) from None
            if not isinstance(journal, dict) or not isinstance(journal.get("entries"), list):
                raise InputError(f"{self.paths.journal}: not a search journal (no entries list)")
            self.journal = journal
        outcomes = Outcomes()
        for entry in self.results.get(self.subject.model, []):
            if self._mine(entry, results=True):
                outcomes.successes.add(_key(entry))
        for entry in self.journal["entries"]:
            if not isinstance(entry, dict) or not self._mine(entry):
                continue
            if entry.get("outcome") == "failed":
                outcomes.failures[_key(entry)] = str(entry.get("class", "other"))
            elif entry.get("outcome") == "skipped":
                outcomes.skipped[_key(entry)] = str(entry.get("reason", ""))
        return outcomes

    def _mine(self, entry: dict[str, Any], results: bool = False) -> bool:
        if not all(
            isinstance(entry.get(name), int)
            for name in ("tensor_parallel_size", "batch_size", "sequence_length")
        ):
            return False
        if entry.get("instance_type", self.subject.instance_type) != self.subject.instance_type:
            return False
        if entry.get("task", self.subject.task) != self.subject.task:
            return False
        return results or entry.get("model") == self.subject.model

    def add_success(self, trial: Trial) -> None:
        """Append the configuration to the results file and save it atomically."""
        entry = cache_config.current_entry(self.subject.task, self.subject.instance_type, *trial.key)
        self.results, _ = cache_config.merge(self.results, self.subject.model, [entry])
        write_atomically(self.paths.results, cache_config.dump(self.results))

    def add_journal(self, trial: Trial, outcome: str, details: dict[str, Any]) -> None:
        """Append a failed or skipped trial to the journal and save it atomically."""
        self.add_journal_entries([(trial, outcome, details)])

    def add_journal_entries(self, rows: list[tuple[Trial, str, dict[str, Any]]]) -> None:
        """Append several journal entries and save once."""
        for trial, outcome, details in rows:
            self.journal["entries"].append(
                {
                    "model": self.subject.model,
                    "instance_type": self.subject.instance_type,
                    "task": self.subject.task,
                    "tensor_parallel_size": trial.tensor_parallel_size,
                    "batch_size": trial.batch_size,
                    "sequence_length": trial.sequence_length,
                    "outcome": outcome,
                    **details,
                    "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                }
            )
        write_atomically(self.paths.journal, json.dumps(self.journal, indent=1) + "\n")


def _key(entry: dict[str, Any]) -> tuple[int, int, int]:
    return (int(entry["tensor_parallel_size"]), int(entry["batch_size"]), int(entry["sequence_length"]))


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot read ({getattr(error, 'strerror', None) or error})") from None


class SearchLock:
    """An exclusive ``flock`` on ``<stem>.lock`` for as long as the search runs."""

    def __init__(self, path: Path):
        self.path = path
        self.handle: Any = None

    def __enter__(self) -> SearchLock:
        import fcntl

        try:
            self.handle = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held until __exit__
        except OSError as error:
            raise InputError(f"cannot create {self.path}: {error.strerror or error}") from None
        try:
            fcntl.flock(self.handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.handle.seek(0)
            holder = self.handle.read().strip() or "another process"
            self.handle.close()
            raise InputError(
                f"{self.path}: a search (pid {holder}) is writing these results; wait for it or give another --output"
            ) from None
        self.handle.seek(0)
        self.handle.truncate()
        self.handle.write(str(os.getpid()))
        self.handle.flush()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink()
        self.handle.close()


def record_child(path: Path, token: str, process_group: int | None) -> None:
    """Remember the token this search's processes carry and the running trial's process group."""
    state = {"pid": os.getpid(), "token": token, "process_group": process_group}
    write_atomically(path, json.dumps(state))


def end_orphans(path: Path) -> int:
    """End what a killed search left running: every process that carries its token (checked in
    ``/proc``, so no other process is ever touched). Returns how many were ended."""
    try:
        token = str(json.loads(path.read_text(encoding="utf-8"))["token"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0
    ended = 0
    for pid in _carrying(token):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
            ended += 1
    deadline = time.monotonic() + 10
    while ended and _carrying(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    with contextlib.suppress(OSError):
        path.unlink()
    return ended


def _carrying(token: str) -> list[int]:
    """Live processes whose environment holds ``TOKEN_VARIABLE=token`` (Linux ``/proc``; elsewhere none)."""
    marker = f"{TOKEN_VARIABLE}={token}".encode()
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            stat = (entry / "stat").read_text()
            if stat[stat.rindex(")") + 2 :].startswith("Z"):
                continue  # a zombie holds no resources; its parent reaps it
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except (OSError, ValueError):
            continue
    return found
