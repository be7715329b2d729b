"""optimum-neuron's inference-cache-config files: ``{model_id: [entry, ...]}``.

Two entry formats (``data/search.json``): the current one of the cache repository's per-family
folders (``task``, ``instance_type`` = ``trn1`` | ``trn2``, ``batch_size``, ``sequence_length``,
``tensor_parallel_size``) and the legacy one (``batch_size``, ``sequence_length``,
``num_cores``, ``auto_cast_type``). Merging into an existing file keeps every entry it has
(other models untouched, unknown fields kept) and adds only entries not already there; it is
done under the file's lock (:func:`lmi_config.io.update_locked`), so runs that write one file
at once lose nothing and duplicate nothing.

Each entry lmi-config writes says where it comes from, in a ``provenance`` field: ``predicted``
(``plan``: the judge accepts it, nothing was compiled) or ``exported-and-loaded`` (``search``
compiled and loaded it on a Neuron machine). optimum-neuron's readers of these files (the cache
auto-fill tools, the export-configuration script) read the fields they know by name and ignore
the others, so the field keeps the file loadable. Only ``exported-and-loaded`` entries count as
results of a search; an entry written without the field (by another tool, or before the field
existed) is kept but proves nothing.
"""

from __future__ import annotations

from typing import Any

from lmi_config.errors import InputError
from lmi_config.io import update_locked
from lmi_config.knowledge.planning import search_constants
from lmi_config.strict_json import dump_json, parse_json

FORMATS = ("current", "legacy")
CacheConfig = dict[str, list[dict[str, Any]]]
PROVENANCE = "provenance"
PREDICTED = "predicted"
PROVEN = "exported-and-loaded"
# an entry's provenance only ever rises: a proof is never replaced by a prediction
_STRENGTH = {PREDICTED: 0, PROVEN: 2}
_UNKNOWN_STRENGTH = 1


def with_provenance(entries: list[dict[str, Any]], provenance: str) -> list[dict[str, Any]]:
    """The entries, each marked ``predicted`` or ``exported-and-loaded``."""
    return [{**entry, PROVENANCE: provenance} for entry in entries]


def proven(entry: dict[str, Any]) -> bool:
    """Whether a search exported and loaded this configuration (not only predicted it)."""
    return entry.get(PROVENANCE) == PROVEN


def compile_target(family: str) -> str | None:
    """optimum-neuron's instance_type for an instance family (inf2 and trn1n compile as trn1)."""
    return search_constants().instance_type_of_family.get(family)


def current_entry(task: str, family: str, tensor_parallel: int, batch: int, sequence: int) -> dict[str, Any]:
    """One entry of the current format; ``ValueError`` for a family optimum-neuron does not compile for."""
    target = compile_target(family)
    if target is None:
        raise ValueError(f"optimum-neuron compiles for trn1 and trn2 (inf2 as trn1), not {family}")
    return {
        "task": task,
        "instance_type": target,
        "batch_size": batch,
        "sequence_length": sequence,
        "tensor_parallel_size": tensor_parallel,
    }


def legacy_entry(tensor_parallel: int, batch: int, sequence: int, auto_cast_type: str) -> dict[str, Any]:
    """One entry of the legacy format (``num_cores``, ``auto_cast_type`` bf16 | fp16)."""
    if auto_cast_type not in search_constants().auto_cast_types:
        raise ValueError(f"auto_cast_type is bf16 or fp16 in the legacy format, not {auto_cast_type}")
    return {
        "batch_size": batch,
        "sequence_length": sequence,
        "num_cores": tensor_parallel,
        "auto_cast_type": auto_cast_type,
    }


def identity(entry: dict[str, Any]) -> tuple[Any, ...]:
    """What makes two entries the same configuration (the fields of their format)."""
    constants = search_constants()
    fields = constants.legacy_fields if "num_cores" in entry else constants.current_fields
    # a value of the wrong type (a list, an object) must not make the entry unhashable
    return tuple((name, hashable(entry.get(name))) for name in fields)


def hashable(value: Any) -> Any:
    """A field's value as a set member: lists and objects as their JSON text."""
    return dump_json(value, indent=None) if isinstance(value, (dict, list)) else value


def parse(text: bytes | str, name: str) -> CacheConfig:
    """Read a cache-config file; :class:`InputError` naming the file when it is not one (not JSON,
    a non-finite or oversized number, not ``{model_id: [entry, ...]}``)."""
    empty = not (text.strip() if isinstance(text, str) else text.strip())
    try:
        data = parse_json(text, name) if not empty else {}
    except InputError as error:
        raise InputError(f"{error}; nothing was written") from None
    if not isinstance(data, dict) or not all(
        isinstance(entries, list) and all(isinstance(entry, dict) for entry in entries)
        for entries in data.values()
    ):
        raise InputError(
            f"{name}: not an inference-cache-config file ({{model_id: [entry, ...]}}); nothing was written"
        )
    return data


def merge(existing: CacheConfig, model_id: str, entries: list[dict[str, Any]]) -> tuple[CacheConfig, int]:
    """``existing`` with the new entries of ``model_id`` appended (no duplicates); returns the number
    added. An entry already there keeps its place and fields; only its provenance can rise (a
    prediction that a search then proves becomes ``exported-and-loaded``, never the reverse)."""
    merged = {key: list(value) for key, value in existing.items()}
    listed = merged.setdefault(model_id, [])
    position = {identity(entry): index for index, entry in enumerate(listed)}
    added = 0
    for entry in entries:
        index = position.get(identity(entry))
        if index is None:
            position[identity(entry)] = len(listed)
            listed.append(entry)
            added += 1
        elif _strength(entry) > _strength(listed[index]):
            listed[index] = {**listed[index], PROVENANCE: entry[PROVENANCE]}
    return merged, added


def _strength(entry: dict[str, Any]) -> int:
    return _STRENGTH.get(str(entry.get(PROVENANCE)), _UNKNOWN_STRENGTH)


def dump(config: CacheConfig) -> str:
    """The file's text (two-space indent, as the cache repository's files; standard JSON only)."""
    return dump_json(config, indent=2)


def merge_into_file(path: str, model_id: str, entries: list[dict[str, Any]]) -> int:
    """Merge the entries of ``model_id`` into the cache-config file ``path`` (created when missing)
    under its lock: read, merge, atomic write; returns how many entries were added. Raises
    :class:`InputError` for a file that is not a cache config, :class:`OutputError` when it cannot
    be written; the file is then left as it was."""

    def update(current: bytes | None) -> tuple[str, int]:
        existing = parse(current, path) if current is not None else {}
        merged, added = merge(existing, model_id, entries)
        return dump(merged), added

    return update_locked(path, update)
