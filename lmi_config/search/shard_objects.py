"""The objects of a sharded search in its results location, and how each is checked when read.

- ``search.json`` — the search's definition (model, strategy, task, backend, dtype) and its id,
  created once, conditionally (the first shard or coordinator to arrive creates it, every other
  one reads it): a shard or a coordinator started with another definition against the same
  location is refused instead of mixing two searches' results;
- ``shards/<name>.json`` — one shard's results (its cache-config entries, each marked where and
  when it was proven) and its journal, replaced by that shard only, after every trial;
- ``coordinator.json`` — the lease of the coordinator that manages the search's jobs.

A shard object is merged only when it is one: valid JSON of this format, of this search (its id),
under its own name. Anything else is refused with its key and never merged; what a merge takes
from an object that is one is :mod:`lmi_config.search.shard_plan`'s to say.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any

from lmi_config.errors import InputError
from lmi_config.search import cache_config
from lmi_config.search.results_store import ConflictError
from lmi_config.strict_json import dump_json, parse_json

FORMAT = 1
SEARCH_KEY = "search.json"
SHARDS_FOLDER = "shards"
DEFINITION_FIELDS = ("model", "strategy", "task", "backend", "dtype")


def shard_key(name: str) -> str:
    """The object of shard ``name``."""
    return f"{SHARDS_FOLDER}/{name}.json"


def now() -> str:
    """A timestamp as the journal writes them."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


@dataclass(frozen=True)
class SearchDefinition:
    """What makes two shards parts of one search."""

    model: str
    strategy: str
    task: str | None
    backend: str
    dtype: str | None

    def document(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in DEFINITION_FIELDS}


def join_search(store: Any, definition: SearchDefinition) -> str:
    """The id of the search in ``store``: created with ``definition`` when there is none (only one
    of several writers arriving at once creates it), else the existing one's, which must have
    the same definition (:class:`InputError` naming the object otherwise)."""
    document = {
        "format": FORMAT,
        "kind": "lmi-config-search",
        "id": secrets.token_hex(8),
        **definition.document(),
    }
    try:
        store.write(SEARCH_KEY, dump_json(document, indent=1).encode(), if_absent=True)
        return str(document["id"])
    except ConflictError:
        pass
    existing = read_search(store)
    differences = [
        f"{name} {existing.get(name)!r} (here {getattr(definition, name)!r})"
        for name in DEFINITION_FIELDS
        if existing.get(name) != getattr(definition, name)
    ]
    if differences:
        raise InputError(
            f"{store.describe(SEARCH_KEY)}: this results location holds another search ("
            + "; ".join(differences)
            + "); give the same options as its other shards, or another --results location"
        )
    return str(existing["id"])


def read_search(store: Any) -> dict[str, Any]:
    """The search's definition; :class:`InputError` naming the object when missing or damaged."""
    found = store.read(SEARCH_KEY)
    if found is None:
        raise InputError(
            f"{store.describe(SEARCH_KEY)}: no search here yet; start its shards first "
            "(lmi-config search --shard K/N --results …)"
        )
    document = _parse(found[0], store.describe(SEARCH_KEY))
    if document.get("kind") != "lmi-config-search" or not isinstance(document.get("id"), str):
        raise InputError(f"{store.describe(SEARCH_KEY)}: not an lmi-config search definition; move it away")
    return document


def shard_document(
    search_id: str,
    name: str,
    where: dict[str, Any],
    results: bytes | None,
    journal: bytes | None,
    complete: bool,
) -> bytes:
    """A shard object: the shard's results file and journal as they are now."""
    document = {
        "format": FORMAT,
        "kind": "lmi-config-search-shard",
        "search": search_id,
        "shard": name,
        "where": where,
        "updated": now(),
        "complete": complete,
        "results": parse_json(results, name) if results and results.strip() else {},
        "journal": parse_json(journal, name) if journal and journal.strip() else {"format": 1, "entries": []},
    }
    return dump_json(document, indent=1).encode()


@dataclass(frozen=True)
class ShardState:
    """A shard object, checked."""

    key: str
    name: str
    where: dict[str, Any]
    updated: str
    complete: bool
    results: cache_config.CacheConfig
    journal_entries: list[dict[str, Any]]


def parse_shard(data: bytes, shown: str, key: str, search_id: str) -> ShardState:
    """Check a shard object: :class:`InputError` naming it (``shown``) when it is damaged, of
    another search, or not under its own name."""
    document = _parse(data, shown)
    if document.get("kind") != "lmi-config-search-shard" or document.get("format") != FORMAT:
        raise InputError(f"{shown}: not an lmi-config shard object (format {FORMAT}); not merged")
    if document.get("search") != search_id:
        raise InputError(
            f"{shown}: a shard of another search ({document.get('search')!r}, this one is {search_id!r}); "
            "not merged: move it out of this results location"
        )
    name = document.get("shard")
    if not isinstance(name, str) or shard_key(name) != key:
        raise InputError(f"{shown}: names shard {name!r}, not the one of its key; not merged")
    where = document.get("where")
    journal = document.get("journal")
    entries = journal.get("entries") if isinstance(journal, dict) else None
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise InputError(f"{shown}: its journal has no list of entries; not merged")
    results = cache_config.parse(dump_json(document.get("results", {}), indent=None), shown)
    problem = _entry_problem(results, entries)
    if problem is not None:
        raise InputError(f"{shown}: {problem}; not merged")
    if isinstance(where, dict) and where.get("shard", name) != name:
        raise InputError(
            f"{shown}: names shard {name!r} but was written by {where.get('shard')!r}; not merged"
        )
    return ShardState(
        key,
        name,
        where if isinstance(where, dict) else {},
        str(document.get("updated", "")),
        document.get("complete") is True,
        results,
        entries,
    )


TRIAL_FIELDS = ("tensor_parallel_size", "batch_size", "sequence_length")


def _entry_problem(results: cache_config.CacheConfig, journal: list[dict[str, Any]]) -> str | None:
    """Why the entries of a shard object cannot be merged (a trial's numbers that are not positive
    integers, a result without its task or instance type), or None."""
    for model, entries in results.items():
        for index, entry in enumerate(entries):
            if not _positive_integers(entry) or not all(
                isinstance(entry.get(name), str) for name in ("task", "instance_type")
            ):
                return f"entry {index + 1} of {model} is not a configuration (task, instance_type, {', '.join(TRIAL_FIELDS)})"
    for index, entry in enumerate(journal):
        if entry.get("outcome") in ("failed", "skipped") and not _positive_integers(entry):
            return (
                f"journal entry {index + 1} names no trial ({', '.join(TRIAL_FIELDS)} as positive integers)"
            )
    return None


def _positive_integers(entry: dict[str, Any]) -> bool:
    return all(
        isinstance(entry.get(name), int) and not isinstance(entry.get(name), bool) and entry[name] > 0
        for name in TRIAL_FIELDS
    )


def _parse(data: bytes, shown: str) -> dict[str, Any]:
    try:
        document = parse_json(data, shown)
    except InputError as error:
        raise InputError(f"{error}; not merged") from None
    if not isinstance(document, dict):
        raise InputError(f"{shown}: not a JSON object; not merged")
    return document
