"""The option catalogue (``data/options.json``) and vLLM pass-through names.

An option is one key as the container reads it, for a group of backends, with its type,
allowed values, default, and the DJL versions that read it. The same key can have several
entries (per backend group or per version range).
"""

import ast
import json
import math
import re
from collections.abc import Mapping
from functools import cache
from typing import Any, NamedTuple

from lmi_config.knowledge import Backend, Release, load_data, load_derived, load_table, version_tuple

SERVER_GROUP = "server"


class OptionSpec(NamedTuple):
    """One catalogue entry."""

    key: str
    backends: tuple[str, ...]
    kind: str
    type: str
    allowed: tuple[str, ...] | None
    minimum: float | None
    maximum: float | None
    default: str | None
    since: str | None
    until: str | None
    deprecated: str | None
    aliases: tuple[str, ...]
    summary: str
    doc: str | None
    source: str
    note: str | None
    case_insensitive: bool = False
    env: str | None = None  # the environment variable that sets it, when it is not OPTION_<KEY>
    hand_written: str | None = None  # why the code does not give this entry's facts (None: it does)

    def applies_to(self, backend: Backend) -> bool:
        """Whether this backend reads the option (server keys and "common" are read by all)."""
        if self.kind == SERVER_GROUP or "common" in self.backends and "djl-engine" not in backend.reads:
            return True
        return any(group in backend.reads for group in self.backends)

    def available_in(self, release: Release) -> bool:
        return release.in_range(self.since, self.until)

    def range_text(self) -> str:
        """``"0.26.0 to 0.29.0"``, ``"0.29.0 and later"`` or ``"every version"``."""
        if self.since and self.until:
            return f"{self.since} to {self.until}"
        if self.since:
            return f"{self.since} and later"
        if self.until:
            return f"up to {self.until}"
        return "every version"


def _catalogue_rows(document: dict[str, Any]) -> dict[str, list[tuple[Any, ...]]]:
    """``options.json``'s entries as :class:`OptionSpec` fields in order, by key: what
    :func:`catalogue` builds its specs from (kept in the data cache, :func:`load_derived`; it reads
    nothing but its argument)."""
    rows: dict[str, list[tuple[Any, ...]]] = {}
    for row in document["options"]:
        allowed, default, low, high = row.get("allowed"), row.get("default"), row.get("min"), row.get("max")
        rows.setdefault(row["key"], []).append(
            (
                row["key"],
                tuple(row.get("backends") or ["common"]),
                row.get("kind") or "lmi",
                row.get("type") or "str",
                tuple(str(item) for item in allowed) if allowed else None,
                None if low is None else float(low),
                None if high is None else float(high),
                None if default is None else str(default),
                row.get("since"),
                row.get("until"),
                row.get("deprecated"),
                tuple(row.get("aliases") or ()),
                row.get("summary") or "",
                row.get("doc"),
                row["source"],
                row.get("note"),
                bool(row.get("case_insensitive")),
                row.get("env"),
                row.get("hand_written"),
            )
        )
    return rows


@cache
def catalogue() -> dict[str, tuple[OptionSpec, ...]]:
    """All options by key."""
    make = OptionSpec._make
    return {
        key: tuple(map(make, rows)) for key, rows in load_derived("options.json", _catalogue_rows).items()
    }


@cache
def _engine_arg_table() -> Mapping[str, dict[str, Any]]:
    return load_table("vllm_engine_args.json", "versions")


def passes_engine_args(backend: Backend, release: Release) -> bool:
    """Whether the backend hands options it does not know to vLLM's EngineArgs at this release."""
    return backend.engine_args == "vllm" and release.in_range(backend.engine_args_since, None)


def engine_arg_table() -> Mapping[str, dict[str, Any]]:
    """EngineArgs fields (``fields``: name → annotation, default) by vLLM version (decoded when read)."""
    return _engine_arg_table()


def engine_arg_versions() -> list[str]:
    """vLLM versions whose EngineArgs names are known, oldest first."""
    return sorted(_engine_arg_table(), key=version_tuple)


def engine_args_for(vllm_version: str | None) -> dict[str, dict[str, Any]]:
    """EngineArgs fields of a vLLM version; the nearest older known version if not listed."""
    table = _engine_arg_table()
    if not vllm_version:
        newest = engine_arg_versions()[-1]
        return table[newest]["fields"]
    if vllm_version in table:
        return table[vllm_version]["fields"]
    wanted = version_tuple(vllm_version)
    older = [v for v in engine_arg_versions() if version_tuple(v) <= wanted]
    chosen = older[-1] if older else engine_arg_versions()[0]
    return table[chosen]["fields"]


def vllm_limits_for(vllm_version: str | None) -> dict[str, Any] | None:
    """Values vLLM itself refuses (``data/vllm_limits.json``) for a vLLM version (the nearest older
    listed one when it is not listed); None when the version is unknown or older than every listed one."""
    table = load_data("vllm_limits.json")["versions"]
    if not vllm_version:
        return None
    if vllm_version in table:
        return dict(table[vllm_version])
    older = [v for v in sorted(table, key=version_tuple) if version_tuple(v) <= version_tuple(vllm_version)]
    return dict(table[older[-1]]) if older else None


@cache
def all_engine_arg_names() -> frozenset[str]:
    """Every EngineArgs name of any known vLLM version."""
    return frozenset(name for row in _engine_arg_table().values() for name in row["fields"])


def engine_arg_version_range(name: str) -> tuple[str, str] | None:
    """First and last known vLLM version that has this EngineArgs field."""
    versions = [v for v in engine_arg_versions() if name in _engine_arg_table()[v]["fields"]]
    return (versions[0], versions[-1]) if versions else None


@cache
def known_keys_set() -> frozenset[str]:
    """The same keys as :func:`known_keys`, as a set."""
    return frozenset(known_keys())


@cache
def known_keys() -> tuple[str, ...]:
    """Every key any backend reads, for "did you mean" (catalogue plus option.<engine arg>)."""
    keys = set(catalogue())
    keys.update("option." + name for name in all_engine_arg_names())
    return tuple(sorted(keys))


# --- value checking -----------------------------------------------------------------------

_NUMERIC_KINDS = ("int", "int_or_max", "float", "bool", "list_int")
JAVA_INT_MAX = 2**31 - 1  # the Java front end parses integers with Integer.parseInt
# an upper-case identifier: an environment variable's name (or, as a value, a templating leftover)
VARIABLE_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_TRUE_FALSE = {"true", "false", "1", "0", "yes", "no", "on", "off", "t", "f", "y", "n"}
_PLACEHOLDER = re.compile(
    r"^\s*(\{\{.*\}\}|\$\{.*\}|\$[A-Za-z_]\w*|<[^<>]+>|\{[A-Za-z_][\w.]*\}|%\([\w]+\)s|[A-Za-z_][\w.]*\(.*\)|[A-Za-z_][\w.]*\[.*\]|f?['\"].*['\"])\s*$"
)


def is_placeholder(value: str) -> bool:
    """A templated or code value (``{{model_id}}``, ``<your model>``, ``json.dumps(n)``).

    Such values are filled in by some other tool before the container sees them, so they are
    not checked against a type.
    """
    if "{{" in value or "${" in value:
        return True
    if not _PLACEHOLDER.match(value):
        return False
    if _CODE.match(value):
        # code only if it is an expression: `max(256,value you override)` is prose the container
        # receives as it stands (djl-serving's own TensorRT-LLM tutorial wrote that)
        try:
            ast.parse(value.strip(), mode="eval")
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return False
    return True


_CODE = re.compile(r"^\s*[A-Za-z_][\w.]*[(\[]")


def check_value(spec: OptionSpec, value: str) -> str | None:
    """Why ``value`` is not valid for ``spec`` (None when it is). ``value`` is the raw text."""
    kind = spec.type
    if kind in ("str", "path", "module") and spec.allowed is None:
        return None
    if kind in _NUMERIC_KINDS and VARIABLE_NAME.fullmatch(value):
        return None  # a variable's name left by a templating step, not a value
    if value != value.strip():
        return "has blanks around it that the container keeps"
    if value == "":
        return "is empty"
    if spec.allowed is not None and kind in ("enum", "str", "bool", "int", "int_or_max"):
        if value in spec.allowed or (
            spec.case_insensitive and value.lower() in {a.lower() for a in spec.allowed}
        ):
            return None
        if set(spec.allowed) >= {"true", "false"} and value.lower() in spec.allowed:
            return None  # booleans are compared lower-cased
        if kind == "enum" or kind == "str":
            return f"is not one of {', '.join(spec.allowed)}"
    if kind == "bool":
        return None if value.lower() in _TRUE_FALSE else "is not a boolean (true or false)"
    if kind in ("int", "int_or_max"):
        if kind == "int_or_max" and value == "max":
            return None
        if not re.fullmatch(r"[+-]?\d+", value):
            expected = "an integer or max" if kind == "int_or_max" else "an integer"
            return f"is not {expected}"
        if len(value) > 11 or abs(int(value)) > JAVA_INT_MAX:
            return f"is larger than the container's integers (at most {JAVA_INT_MAX})"
        return _range_problem(spec, int(value))
    if kind == "float":
        try:
            number = float(value)
        except ValueError:
            return "is not a number"
        return _range_problem(spec, number)
    if kind == "list_int":
        items = [item.strip() for item in value.strip("[]").split(",")]
        if not all(re.fullmatch(r"\d+", item) for item in items if item) or not any(items):
            return "is not a comma-separated list of integers"
        return None
    if kind == "json":
        try:
            json.loads(value)
            return None
        except ValueError:
            pass
        try:
            ast.literal_eval(value)
            return None
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return "is neither JSON nor a Python literal"
    return None


def beyond_the_code(spec: OptionSpec, value: str) -> str | None:
    """What the catalogue knows about a value beyond what the container's classes check (they judged
    its type and allowed values already): blanks the container keeps, a number out of range."""
    if spec.type in ("str", "path", "module", "enum", "json") or value == "":
        return None
    if value != value.strip():
        return "has blanks around it that the container keeps"
    try:
        number = float(value)
    except ValueError:
        return None
    return _range_problem(spec, number)


def _range_problem(spec: OptionSpec, number: float) -> str | None:
    if not math.isfinite(number):  # every comparison with NaN is false: no range would catch it
        return "is not a finite number"
    if spec.minimum is not None and number < spec.minimum:
        return f"is below the minimum {_plain(spec.minimum)}"
    if spec.maximum is not None and number > spec.maximum:
        return f"is above the maximum {_plain(spec.maximum)}"
    return None


def _plain(number: float) -> str:
    return str(int(number)) if number == int(number) else str(number)


def _synonym_rows(document: dict[str, Any]) -> dict[str, str]:
    return dict(document.get("value_synonyms", {}).get("values", {}))


@cache
def value_synonyms() -> dict[str, str]:
    """Spellings some backends accept for another value (``float16`` → ``fp16``)."""
    return dict(load_derived("options.json", _synonym_rows))


@cache
def conflict_rules() -> tuple[dict[str, Any], ...]:
    """Combinations of options the container refuses or silently overrides (``data/conflicts.json``)."""
    return tuple(load_data("conflicts.json")["conflicts"])
