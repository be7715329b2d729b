"""optimum-neuron's inference-cache-config files: ``{model_id: [entry, ...]}``.

Two entry formats (``data/search.json``): the current one of the cache repository's per-family
folders (``task``, ``instance_type`` = ``trn1`` | ``trn2``, ``batch_size``, ``sequence_length``,
``tensor_parallel_size``) and the legacy one (``batch_size``, ``sequence_length``,
``num_cores``, ``auto_cast_type``). Merging into an existing file keeps every entry it has
(other models untouched, unknown fields kept) and adds only entries not already there.
"""

from __future__ import annotations

import json
from typing import Any

from lmi_config.errors import InputError
from lmi_config.knowledge.planning import search_constants

FORMATS = ("current", "legacy")
CacheConfig = dict[str, list[dict[str, Any]]]


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
    return tuple((name, entry.get(name)) for name in fields)


def parse(text: str, name: str) -> CacheConfig:
    """Read a cache-config file; :class:`InputError` naming the file when it is not one."""
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as error:
        raise InputError(
            f"{name}:{error.lineno}: not valid JSON ({error.msg}); fix or move it, nothing was written"
        ) from None
    if not isinstance(data, dict) or not all(
        isinstance(entries, list) and all(isinstance(entry, dict) for entry in entries)
        for entries in data.values()
    ):
        raise InputError(
            f"{name}: not an inference-cache-config file ({{model_id: [entry, ...]}}); nothing was written"
        )
    return data


def merge(existing: CacheConfig, model_id: str, entries: list[dict[str, Any]]) -> tuple[CacheConfig, int]:
    """``existing`` with the new entries of ``model_id`` appended (no duplicates); returns the number added."""
    merged = {key: list(value) for key, value in existing.items()}
    listed = merged.setdefault(model_id, [])
    seen = {identity(entry) for entry in listed}
    added = 0
    for entry in entries:
        if identity(entry) not in seen:
            listed.append(entry)
            seen.add(identity(entry))
            added += 1
    return merged, added


def dump(config: CacheConfig) -> str:
    """The file's text (two-space indent, as the cache repository's files)."""
    return json.dumps(config, indent=2) + "\n"
