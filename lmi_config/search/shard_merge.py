"""Merging shard objects into a cache-config file and its journal, with the local search's
guarantees: each merge is a read-merge-atomic write under the file's lock, an entry already
there is never added twice (the cache-config identity; the journal's trial identity), so a
merge can be interrupted and run again any number of times and the files only ever grow
towards the union of the shards. Each proven entry keeps where (shard, instance type, machine,
job) and when it was proven.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmi_config.errors import InputError, OutputError
from lmi_config.io import update_locked
from lmi_config.search import cache_config
from lmi_config.search.records import JOURNAL_LIMIT_BYTES, SearchPaths, journal_identity, results_path
from lmi_config.search.results_store import OBJECT_LIMIT_BYTES
from lmi_config.search.shard_objects import SHARDS_FOLDER, ShardState, parse_shard, read_search
from lmi_config.search.shard_plan import (
    accepted,
    model_arch,
    parse_shard_key,
    printable,
    search_task,
    shard_plan,
)
from lmi_config.secrets import redact_document
from lmi_config.strict_json import dump_json, parse_json


@dataclass
class MergeReport:
    """What a merge read and added, and the objects it refused (key: why)."""

    results: Path
    journal: Path
    shards: list[ShardState] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    added_results: int = 0
    added_journal: int = 0

    @property
    def valid(self) -> int:
        """Proven configurations across the shards read."""
        return len(
            {
                cache_config.identity(entry)
                for state in self.shards
                for entries in state.results.values()
                for entry in entries
                if cache_config.proven(entry)
            }
        )

    @property
    def trials(self) -> int:
        """Trials run across the shards read (proven ones and failures)."""
        failures = sum(
            1 for state in self.shards for entry in state.journal_entries if entry.get("outcome") == "failed"
        )
        return failures + sum(
            1
            for state in self.shards
            for entries in state.results.values()
            for entry in entries
            if cache_config.proven(entry)
        )


def entry_identity(entry: dict[str, Any]) -> tuple[Any, ...]:
    """A journal entry's identity: a trial's outcome, or a job's failure (its job name)."""
    if entry.get("outcome") == "job-failed":
        return ("job-failed", cache_config.hashable(entry.get("job")))
    return journal_identity(entry)


def merge_journal_entries(path: Path, entries: list[dict[str, Any]]) -> int:
    """Add to the journal ``path`` (under its lock) the entries it does not hold yet; returns how many."""

    def update(current: bytes | None) -> tuple[str, int]:
        journal = parse_json(current, str(path)) if current is not None and current.strip() else None
        if journal is None:
            journal = {"format": 1, "entries": []}
        if not isinstance(journal, dict) or not isinstance(journal.get("entries"), list):
            raise InputError(f"{path}: not a search journal (no entries list); fix or move it")
        seen = {entry_identity(entry) for entry in journal["entries"] if isinstance(entry, dict)}
        added = 0
        for entry in entries:
            if entry_identity(entry) not in seen:
                journal["entries"].append(entry)
                seen.add(entry_identity(entry))
                added += 1
        return dump_json(journal, indent=1), added

    return update_locked(path, update, limit_bytes=JOURNAL_LIMIT_BYTES)


def merge_state(
    state: ShardState, results: Path, journal: Path, model: str, secret_values: frozenset[str] = frozenset()
) -> tuple[int, int]:
    """Merge one shard's proven entries and journal into the files; (results added, journal added).
    Journal lines holding one of ``secret_values`` (a job's credentials echoed by a tool) are masked."""
    proven = [entry for entry in state.results.get(model, []) if cache_config.proven(entry)]
    added_results = cache_config.merge_into_file(str(results), model, proven) if proven else 0
    entries = [
        {**redact_document(entry, secret_values), "shard": state.name} for entry in state.journal_entries
    ]
    added_journal = merge_journal_entries(journal, entries) if entries else 0
    return added_results, added_journal


def read_shards(store: Any, search: dict[str, Any]) -> tuple[list[ShardState], list[str]]:
    """Every shard object of the search, checked: (what a merge takes of each, refusals naming each
    object and what was left out of it). An object no shard writes, a damaged or oversized one, or
    one of another search is refused whole; of the others, only what their shard's plan holds is
    taken (:mod:`lmi_config.search.shard_plan`)."""
    states, refused = [], []
    model, arch = str(search.get("model")), None
    for key in store.keys(SHARDS_FOLDER):
        if key.endswith("/"):
            continue  # a folder marker (the S3 console makes them), not an object
        shown = printable(store.describe(key))
        named = parse_shard_key(key)
        if named is None:
            refused.append(
                f"{shown}: not a shard's object (a shard writes {SHARDS_FOLDER}/<instance type>-<K>of<N>.json); "
                "not merged: move it out of this results location"
            )
            continue
        try:
            found = store.read(key)
        except (InputError, OutputError) as error:
            refused.append(f"{error}; not merged")
            continue
        if found is None:
            continue  # deleted since it was listed
        if len(found[0]) > OBJECT_LIMIT_BYTES:
            refused.append(
                f"{shown}: more than {OBJECT_LIMIT_BYTES} bytes, more than a shard object holds; not merged"
            )
            continue
        try:
            state = parse_shard(found[0], shown, key, str(search["id"]))
        except InputError as error:
            refused.append(str(error))
            continue
        arch = arch if arch is not None else model_arch(model)
        plan = shard_plan(*named, model, search_task(search.get("task"), arch), arch)
        kept, left_out = accepted(state, plan, shown)
        states.append(kept)
        refused.extend(left_out)
    return states, refused


def merge_results(
    store: Any, output: str | None, model: str | None = None, *, secret_values: frozenset[str] = frozenset()
) -> MergeReport:
    """Merge every shard of the search in ``store`` into the results file ``output`` (default
    ``<model name>.json``) and the journal beside it. What is not a shard's own, in its plan and
    journaled (see :func:`read_shards`) is refused (listed in the report) and the rest is merged."""
    search = read_search(store)
    search_model = str(search.get("model"))
    if model is not None and model != search_model:
        raise InputError(
            f"{store.describe('search.json')}: a search of {search_model}, not {model}; give --model {search_model}"
        )
    paths = SearchPaths.beside(results_path(output, search_model))
    report = MergeReport(paths.results, paths.journal)
    report.shards, report.refused = read_shards(store, search)
    for state in report.shards:
        added_results, added_journal = merge_state(
            state, paths.results, paths.journal, search_model, secret_values
        )
        report.added_results += added_results
        report.added_journal += added_journal
    return report
