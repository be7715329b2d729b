#!/usr/bin/env python3
"""Compare the generated catalogue (data/djl_properties.json) with the hand-written data/options.json.

For every field of a properties class (per run of releases where it is identical) it looks up
``option.<field>`` (or ``option.<alias>``) in options.json for the class's backend (or ``common``)
and reports:

- keys the container's classes read that options.json lacks;
- options.json ``lmi`` keys of those backends that no class reads (the Java front end or a handler
  may still read them: the container's Python classes do not);
- disagreements on type, default, allowed values and version range.

    python scripts/compare_djl_options.py            # counts and every difference
    python scripts/compare_djl_options.py --summary  # counts only
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from lmi_config.knowledge import version_tuple  # noqa: E402
from lmi_config.knowledge.djl_properties import DjlCatalogue, PropertyField, djl_catalogue  # noqa: E402

# Fields the Python side fills in itself (a validator or the handler sets them), not read from a key.
COMPUTED_FIELDS = {"model_id_or_path", "kwargs", "is_mpi", "preloaded_model"}
SCALARS = {"int": "int", "float": "float", "bool": "bool", "str": "str"}
COMPATIBLE_TYPES = {
    "int": {"int", "int_or_max"},
    "float": {"float"},
    "bool": {"bool"},
    "str": {"str", "path", "module", "enum"},
    "enum": {"enum", "str", "int", "bool"},
    "list_int": {"list_int", "json", "str"},
    "json": {"json", "str", "path"},
}


def field_kind(annotation: str, allowed: list | None) -> str | None:
    """options.json's type vocabulary for a Python annotation; None when it says nothing useful."""
    inner = re.sub(r"^Optional\[(.*)\]$", r"\1", annotation.strip())
    inner = re.sub(r"^Union\[(.*), None\]$", r"\1", inner)
    if allowed:
        return "enum"
    if inner in SCALARS:
        return SCALARS[inner]
    if re.match(r"^(List|list)\[int\]$", inner):
        return "list_int"
    if re.match(r"^(Dict|dict|Mapping|Tuple|tuple|List|list)\b", inner):
        return "json"
    return None


def plain_text(value: Any) -> str | None:
    """A default as options.json writes it (``True`` -> ``"true"``, ``0.9`` -> ``"0.9"``)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


class Comparison:
    """The differences, grouped by kind, each a line of text."""

    def __init__(self, catalogue: DjlCatalogue, options: list[dict[str, Any]]) -> None:
        self.catalogue = catalogue
        self.options = options
        self.findings: dict[str, list[str]] = {
            "missing_in_options": [],
            "not_read_by_any_class": [],
            "type": [],
            "default": [],
            "allowed": [],
            "version_range": [],
        }

    def djl_range(self, entry: PropertyField) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
        """The DJL versions of the entry's first and last branch (None: still on master)."""
        first = self.catalogue.release(entry.first).djl or "0.0.0"
        last = (
            None
            if entry.last == self.catalogue.releases[-1].branch
            else self.catalogue.release(entry.last).djl
        )
        return version_tuple(first), version_tuple(last) if last else None

    def candidates(self, entry: PropertyField, backends: list[str]) -> list[dict[str, Any]]:
        """options.json rows for ``option.<field>`` (or its alias) of these backends, else of ``common``."""
        keys = {f"option.{entry.field}"} | ({f"option.{entry.alias}"} if entry.alias else set())
        rows = [row for row in self.options if row["key"] in keys]
        own = [row for row in rows if set(row["backends"]) & set(backends)]
        return own or [row for row in rows if "common" in row["backends"]]

    def overlapping(self, entry: PropertyField, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The rows whose since..until overlaps the entry's versions."""
        first, last = self.djl_range(entry)
        result = []
        for row in rows:
            since = version_tuple(row["since"]) if row.get("since") else None
            until = version_tuple(row["until"]) if row.get("until") else None
            if (until is None or until >= first) and (since is None or last is None or since <= last):
                result.append(row)
        return result

    def compare_field(self, entry: PropertyField, backends: list[str]) -> None:
        """Record what options.json lacks or says differently about one field entry."""
        label = f"{entry.class_name}.{entry.field} [{self.catalogue.range_text(entry)}]"
        rows = self.candidates(entry, backends)
        if not rows:
            self.findings["missing_in_options"].append(f"option.{entry.field}: {label} ({entry.annotation})")
            return
        matched = self.overlapping(entry, rows)
        if not matched:
            ranges = ", ".join(f"{row.get('since') or '-'}..{row.get('until') or '-'}" for row in rows)
            self.findings["version_range"].append(f"option.{entry.field}: {label}; options.json has {ranges}")
            return
        self.compare_range(entry, label, matched)
        for row in matched:
            self.compare_values(entry, label, row)

    def compare_range(self, entry: PropertyField, label: str, rows: list[dict[str, Any]]) -> None:
        """options.json starting later or ending earlier than the code has the field."""
        first, last = self.djl_range(entry)
        earliest = [version_tuple(row["since"]) if row.get("since") else () for row in rows]
        if min(earliest) > first:
            self.findings["version_range"].append(
                f"option.{entry.field}: {label}; options.json starts at {'.'.join(map(str, min(earliest)))}"
            )
        latest = [version_tuple(row["until"]) if row.get("until") else None for row in rows]
        if None not in latest and (last is None or max(t for t in latest if t) < last):
            ends = ".".join(map(str, max(t for t in latest if t)))
            self.findings["version_range"].append(
                f"option.{entry.field}: {label}; options.json ends at {ends}"
            )

    def compare_values(self, entry: PropertyField, label: str, row: dict[str, Any]) -> None:
        """Type, default and allowed values against one options.json row."""
        where = f"option.{entry.field}: {label} vs options.json [{row['backends']} {row.get('since') or '-'}..{row.get('until') or '-'}]"
        accepted, case_insensitive = self.catalogue.accepted_values(
            entry.class_name, entry.field, entry.first
        )
        kind = field_kind(entry.annotation, list(accepted) if accepted else None)
        if kind and row["type"] not in COMPATIBLE_TYPES.get(kind, {kind}):
            self.findings["type"].append(f"{where}: {entry.annotation} vs {row['type']}")
        if entry.default_expression is None and plain_text(entry.default) != plain_text(row.get("default")):
            self.findings["default"].append(f"{where}: {entry.default!r} vs {row.get('default')!r}")
        listed = {str(value) for value in row.get("allowed") or []}
        if accepted is None and listed and kind in ("str", None):
            self.findings["allowed"].append(
                f"{where}: options.json allows only {sorted(listed)}, this class rejects no value (it does not check, or coerces)"
            )
        if accepted is not None:
            fold = (
                (lambda values: {v.lower() for v in values})
                if case_insensitive or row.get("case_insensitive")
                else set
            )
            if not listed:
                self.findings["allowed"].append(
                    f"{where}: container accepts {sorted(accepted)}, options.json lists none"
                )
            elif fold(accepted) != fold(listed):
                only_code = sorted(fold(accepted) - fold(listed))
                only_options = sorted(fold(listed) - fold(accepted))
                self.findings["allowed"].append(
                    f"{where}: only in code {only_code}, only in options.json {only_options}"
                )

    def run(self) -> None:
        """Fill the findings."""
        read_keys: set[str] = set()
        groups: set[str] = set()
        class_backends = {c.class_name: c.backends for c in self.catalogue.classes}
        for entry in self.catalogue.fields:
            read_keys |= {entry.field} | ({entry.alias} if entry.alias else set())
            groups.update(class_backends.get(entry.class_name, []))
            if entry.field not in COMPUTED_FIELDS:
                self.compare_field(entry, class_backends.get(entry.class_name, []))
        read_keys |= {entry.key for entry in self.catalogue.extra_keys}
        for row in self.options:
            name = row["key"].removeprefix("option.")
            option_of_these_backends = row["kind"] == "lmi" and set(row["backends"]) & groups
            if option_of_these_backends and row["key"].startswith("option.") and name not in read_keys:
                self.findings["not_read_by_any_class"].append(f"{row['key']} [{', '.join(row['backends'])}]")
        for name in self.findings:
            self.findings[name] = sorted(set(self.findings[name]))


def counts(catalogue: DjlCatalogue) -> dict[str, int]:
    """Headline figures of the generated catalogue."""
    validators = {(v.class_name, v.name) for v in catalogue.validators}
    return {
        "releases": len(catalogue.releases),
        "classes": len({c.class_name for c in catalogue.classes}),
        "options (class fields)": len({(f.class_name, f.field) for f in catalogue.fields}),
        "option names (distinct)": len({f.field for f in catalogue.fields}),
        "field entries (ranges)": len(catalogue.fields),
        "extra keys read from __pydantic_extra__": len({(e.class_name, e.key) for e in catalogue.extra_keys}),
        "validators": len(validators),
        "validator entries (ranges)": len(catalogue.validators),
        "container messages (outcomes)": len(
            {(o.kind, o.message) for v in catalogue.validators for o in v.outcomes}
        ),
        "handler modules": len({m.module for m in catalogue.modules if m.handler}),
        "recommender methods": len({m.method for m in catalogue.recommender}),
    }


def main(argv: list[str] | None = None) -> int:
    """Print the figures and the differences."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--summary", action="store_true", help="counts only")
    arguments = parser.parse_args(argv)
    catalogue = djl_catalogue()
    options = json.loads((REPO_ROOT / "lmi_config/data/options.json").read_text(encoding="utf-8"))["options"]
    comparison = Comparison(catalogue, options)
    comparison.run()
    print("generated catalogue (lmi_config/data/djl_properties.json):")
    for name, value in counts(catalogue).items():
        print(f"  {name}: {value}")
    print(
        f"hand-written catalogue (lmi_config/data/options.json): {len(options)} entries, "
        f"{len({row['key'] for row in options})} keys, {Counter(row['kind'] for row in options)}"
    )
    print("differences:")
    for name, lines in comparison.findings.items():
        print(f"  {name}: {len(lines)}")
    if not arguments.summary:
        for name, lines in comparison.findings.items():
            print(f"\n## {name} ({len(lines)})")
            for line in lines:
                print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
