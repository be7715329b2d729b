"""What a search keeps on disk, beside the results file:

- the results file itself, in optimum-neuron's cache-config format, each success merged in
  (read, merge, atomic write under the file's own lock, so that a ``plan --cache-config`` writing
  the same file meanwhile loses nothing) and marked ``exported-and-loaded``; other models,
  other instance types and predicted entries in it are kept as they are;
- ``<stem>.journal.json``: every failed trial (its class and last lines) and every skip with
  its reason, merged in the same way after each, so a resume never repeats a trial (a shard's
  journal records its successes too, as ``exported-and-loaded``);
- ``<stem>.lock``: held (``flock``) for as long as a search runs, so only one search writes
  these files; the kernel releases it when the process dies, even by SIGKILL. It is never
  deleted: a search that deleted it on exit would let the next two lock different files;
- ``<stem>.running.json``: the token every process a search starts carries in its environment
  (and the running trial's process group), so a search that resumes after a SIGKILL ends what
  the killed one left running and nothing else.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmi_config.errors import InputError
from lmi_config.io import read_bounded, read_mergeable, update_locked, write_atomically
from lmi_config.search import cache_config
from lmi_config.search.grid import Trial
from lmi_config.search.strategy import Outcomes
from lmi_config.strict_json import dump_json, parse_json

TOKEN_VARIABLE = "LMI_CONFIG_SEARCH_TOKEN"
JOURNAL_LIMIT_BYTES = 64 * 1024 * 1024  # 20 last lines per failure add up over many models
# where and when a shard proved an entry (fields optimum-neuron's readers ignore, as ``provenance``)
PROVEN_ON = "proven_on"
PROVEN_AT = "proven_at"
JOURNAL_IDENTITY = ("model", "instance_type", "task", "tensor_parallel_size", "batch_size", "sequence_length")


@dataclass(frozen=True)
class SearchPaths:
    """The results file (as the user named it) and the files beside the file it names."""

    results: Path
    journal: Path
    lock: Path
    running: Path

    @classmethod
    def beside(cls, results: Path) -> SearchPaths:
        # beside the real file: two names (a symlink and its target) are one search's results
        real = Path(os.path.realpath(results))
        stem = real.with_suffix("")
        return cls(
            results,
            stem.with_name(stem.name + ".journal.json"),
            stem.with_name(stem.name + ".lock"),
            stem.with_name(stem.name + ".running.json"),
        )

    def exports_under(self, work_dir: Path) -> Path:
        """This search's own export directory: ``<work dir>/<results stem>-<digest of its real path>``,
        so that two searches (other results files, even of one model) never touch each other's exports."""
        digest = hashlib.sha256(str(self.lock).encode("utf-8", "surrogateescape")).hexdigest()[:12]
        return work_dir.resolve() / f"{self.lock.stem}-{digest}"


@dataclass(frozen=True)
class Subject:
    """Whose trials a results file and journal hold: the model, optimum-neuron's instance_type, the task."""

    model: str
    instance_type: str
    task: str


class Record:
    """The results file and the journal of one subject."""

    def __init__(self, paths: SearchPaths, subject: Subject, where: dict[str, Any] | None = None):
        self.paths = paths
        self.subject = subject
        self.where = where  # a shard's name, instance type, machine and job: recorded with each outcome
        self.results: cache_config.CacheConfig = {}
        self.journal: dict[str, Any] = {"format": 1, "entries": []}

    def load(self) -> Outcomes:
        """Read both files (missing ones are empty); :class:`InputError` naming a damaged one. Only
        entries a search exported and loaded count as successes: a prediction (``plan``) or an
        entry of unknown origin is still a trial to run."""
        results = read_mergeable(self.paths.results)
        self.results = cache_config.parse(results, str(self.paths.results)) if results is not None else {}
        journal = read_mergeable(self.paths.journal, limit_bytes=JOURNAL_LIMIT_BYTES)
        self.journal = (
            _parse_journal(journal, self.paths.journal) if journal is not None else _empty_journal()
        )
        outcomes = Outcomes()
        for entry in self.results.get(self.subject.model, []):
            if self._mine(entry, results=True) and cache_config.proven(entry):
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
            isinstance(entry.get(name), int) and not isinstance(entry.get(name), bool)
            for name in ("tensor_parallel_size", "batch_size", "sequence_length")
        ):
            return False
        if entry.get("instance_type", self.subject.instance_type) != self.subject.instance_type:
            return False
        if entry.get("task", self.subject.task) != self.subject.task:
            return False
        return results or entry.get("model") == self.subject.model

    def add_success(self, trial: Trial) -> None:
        """Merge the configuration, marked exported-and-loaded, into the results file (under its lock).
        A shard (``where`` set) journals the trial first: a merge takes a shard's proof only with the
        journal record of its trial (:mod:`lmi_config.search.shard_plan`)."""
        entry = cache_config.current_entry(self.subject.task, self.subject.instance_type, *trial.key)
        if self.where is not None:
            self.add_journal(trial, cache_config.PROVEN, {})
            entry = {**entry, PROVEN_ON: self.where, PROVEN_AT: time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        proven = cache_config.with_provenance([entry], cache_config.PROVEN)
        cache_config.merge_into_file(str(self.paths.results), self.subject.model, proven)

    def add_journal(self, trial: Trial, outcome: str, details: dict[str, Any]) -> None:
        """Merge a failed, skipped (or, for a shard, exported-and-loaded) trial into the journal."""
        self.add_journal_entries([(trial, outcome, details)])

    def add_journal_entries(self, rows: list[tuple[Trial, str, dict[str, Any]]]) -> None:
        """Merge several journal entries at once: read, add those not there yet, write (under its lock)."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        entries = [
            {
                "model": self.subject.model,
                "instance_type": self.subject.instance_type,
                "task": self.subject.task,
                "tensor_parallel_size": trial.tensor_parallel_size,
                "batch_size": trial.batch_size,
                "sequence_length": trial.sequence_length,
                "outcome": outcome,
                **details,
                **({"where": self.where} if self.where is not None else {}),
                "at": stamp,
            }
            for trial, outcome, details in rows
        ]

        def update(current: bytes | None) -> tuple[str, None]:
            journal = _parse_journal(current, self.paths.journal) if current is not None else _empty_journal()
            seen = {journal_identity(entry) for entry in journal["entries"] if isinstance(entry, dict)}
            for entry in entries:
                if journal_identity(entry) not in seen:
                    journal["entries"].append(entry)
                    seen.add(journal_identity(entry))
            self.journal = journal
            return dump_json(journal, indent=1), None

        update_locked(self.paths.journal, update, limit_bytes=JOURNAL_LIMIT_BYTES)


def _empty_journal() -> dict[str, Any]:
    return {"format": 1, "entries": []}


def journal_identity(entry: dict[str, Any]) -> tuple[Any, ...]:
    """One trial's outcome: a journal holds it once however many writers merged it."""
    return (*(cache_config.hashable(entry.get(name)) for name in JOURNAL_IDENTITY), str(entry.get("outcome")))


def _parse_journal(data: bytes, path: Path) -> dict[str, Any]:
    journal = parse_json(data, str(path)) if data.strip() else _empty_journal()
    if not isinstance(journal, dict) or not isinstance(journal.get("entries"), list):
        raise InputError(f"{path}: not a search journal (no entries list); fix or move it")
    return journal


def _key(entry: dict[str, Any]) -> tuple[int, int, int]:
    return (int(entry["tensor_parallel_size"]), int(entry["batch_size"]), int(entry["sequence_length"]))


def results_path(output: str | None, model: str) -> Path:
    """The results file (``-o``, else ``<model name>.json``); :class:`InputError` for a directory,
    a FIFO or a device: a results file is read, merged into and replaced."""
    results = Path(output or f"{Path(model).name}.json")
    if results.suffix == ".lock":
        raise InputError(f"--output {results}: would be the search's own lock file; give a .json name")
    try:
        mode = os.stat(results).st_mode
    except (FileNotFoundError, NotADirectoryError):
        _check_directory(results.parent, f"--output {results}")
        return results
    except OSError as error:
        raise InputError(f"--output {results}: {error.strerror or error}") from None
    if stat.S_ISDIR(mode):
        raise InputError(
            f"--output {results}: is a directory; give the results file's name (e.g. {results}/results.json)"
        )
    if not stat.S_ISREG(mode):
        raise InputError(
            f"--output {results}: is not a regular file; search merges its results into a regular file"
        )
    return results


def check_work_dir(work_dir: Path) -> None:
    """Refuse, before anything runs, a --work-dir that names a file or whose parent directory does
    not exist (the work directory itself is created; a mistyped tree is not)."""
    shown = f"--work-dir {str(work_dir)[:200]}"
    try:
        present = work_dir.exists() or work_dir.is_symlink()
    except OSError as error:  # a name longer than the file system allows
        raise InputError(f"{shown}: {error.strerror or error}; give another path") from None
    if present:
        _check_directory(work_dir, shown)
    else:
        _check_directory(work_dir.parent, shown)


def _check_directory(path: Path, shown: str) -> None:
    try:
        mode = os.stat(path).st_mode
    except NotADirectoryError:
        raise InputError(f"{shown}: {path} lies under a file, not a directory; give a directory") from None
    except FileNotFoundError:
        raise InputError(
            f"{shown}: the directory {path} does not exist; create it or give another path"
        ) from None
    except OSError as error:
        raise InputError(f"{shown}: {path}: {error.strerror or error}") from None
    if not stat.S_ISDIR(mode):
        raise InputError(f"{shown}: {path} is not a directory; give a directory")


def make_directory(path: Path, option: str) -> None:
    """Create a directory and its parents; :class:`InputError` naming the option when it cannot be."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"{option}: cannot create {path}: {error.strerror or error}") from None


class SearchLock:
    """An exclusive ``flock`` on ``<stem>.lock`` for as long as the search runs."""

    def __init__(self, path: Path):
        self.path = path
        self.handle: Any = None

    def __enter__(self) -> SearchLock:
        import fcntl

        flags = (
            os.O_RDWR
            | os.O_CREAT
            | os.O_NONBLOCK
            | getattr(os, "O_NOFOLLOW", 0)
            | getattr(os, "O_CLOEXEC", 0)
        )
        try:
            handle = os.open(self.path, flags, 0o666)
        except OSError as error:
            raise InputError(f"cannot create {self.path}: {error.strerror or error}") from None
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            os.close(handle)
            raise InputError(f"{self.path}: the search lock is not a regular file; remove it")
        self.handle = os.fdopen(handle, "r+", encoding="utf-8")
        try:
            fcntl.flock(self.handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self.handle.read(64).strip() or "another process"
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
        # never unlinked: another search may have opened it already and would then lock a file
        # no one else can find, while a third creates a new one (two searches at once)
        self.handle.close()


def record_child(path: Path, token: str, process_group: int | None) -> None:
    """Remember the token this search's processes carry and the running trial's process group."""
    state = {"pid": os.getpid(), "token": token, "process_group": process_group}
    write_atomically(path, dump_json(state, indent=None))


def end_orphans(path: Path) -> int:
    """End what a killed search left running: every process that carries its token (checked in
    ``/proc``, so no other process is ever touched). Returns how many were ended."""
    try:
        token = str(parse_json(read_bounded(path, limit_bytes=4096), str(path))["token"])
    except (InputError, KeyError, TypeError):
        return 0  # no state left (or not ours to trust): nothing is ended
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
