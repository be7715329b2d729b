#!/usr/bin/env python3
"""Bring lmi_config/data/options.json in line with djl-serving's code where the code speaks.

options.json is the catalogue lint reads for every key: what it does, which backends read it,
from and until which release, its type and allowed values. For the keys the properties classes
read (data/djl_properties.json, generated from every release branch since 0.25), this script
replaces the hand-written facts by the code's:

- the release range (``since`` / ``until``), split into several entries where the code reads the
  key in separate runs of releases; a hand-written ``since`` before 0.25 stays (the generator
  does not read those branches);
- the type where the annotation is a number or a boolean, and the allowed values where the
  annotation or a validator lists them (split where they change between releases);
- keys the classes read that the catalogue lacks are added, marked as coming from the code.

Every entry it touched says so in ``from_code`` (the facts, and the source URL of the field on its
first branch); every entry whose key no class reads keeps its hand-written facts. Text (summary,
documentation link, notes, defaults: the Java front end often sets the effective default) stays
as written. Running it twice gives the same file.

    python scripts/sync_options_from_code.py           # rewrite options.json
    python scripts/sync_options_from_code.py --check   # exit 1 when options.json would change
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from djl_options.checks import FRONT_END_FIELDS, keys_of  # noqa: E402

from lmi_config.knowledge import version_tuple  # noqa: E402
from lmi_config.knowledge.djl_properties import DjlCatalogue, PropertyField, djl_catalogue  # noqa: E402
from lmi_config.knowledge.options import engine_args_for  # noqa: E402

OPTIONS = REPO_ROOT / "lmi_config" / "data" / "options.json"
RELEASES = json.loads((REPO_ROOT / "lmi_config/data/releases.json").read_text(encoding="utf-8"))["releases"]


def features_of(djl: str | None, lmi: str | None) -> set[str]:
    """The SERVING_FEATURES of a release's images (the newest listed release at or before it)."""
    wanted = (version_tuple(djl), int(lmi or 0)) if djl else (version_tuple("99.0.0"), 0)
    listed = sorted(
        ((version_tuple(row["djl"]), int(row.get("lmi") or 0)), row["features"]) for row in RELEASES
    )
    older = [features for order, features in listed if order <= wanted]
    return {name for names in (older[-1] if older else {}).values() for name in names}


def vllm_of(djl: str | None, lmi: str | None) -> str | None:
    """The vLLM of a release; for a branch releases.json does not list (0.35.1, 0.36.0-lmi21, master)
    the vLLM of the newest listed release at or before it."""
    wanted = (version_tuple(djl), int(lmi or 0)) if djl else (version_tuple("99.0.0"), 0)
    listed = sorted(
        ((version_tuple(row["djl"]), int(row.get("lmi") or 0)), row["vllm"])
        for row in RELEASES
        if row.get("vllm")
    )
    older = [version for order, version in listed if order <= wanted]
    return older[-1] if older else None


BACKENDS = {
    row["id"]: row
    for row in json.loads((REPO_ROOT / "lmi_config/data/backends.json").read_text(encoding="utf-8"))[
        "backends"
    ]
}
OLDEST_READ = "0.25.0"
NOT_BEFORE = "99.0.0"  # the since of a row this script adds: nothing hand-written to keep
CODE_KINDS = ("lmi", "passthrough")
_OPTIONAL = re.compile(r"^(?:Optional\[(?P<inner>.*)\]|Union\[(?P<union>.*), None\])$")
_SCALARS = {"int": "int", "float": "float", "bool": "bool"}
GROUP_CLASSES = {
    "common": ("Properties",),
    "huggingface": ("HuggingFaceProperties", "SchedulerRbProperties"),
    # the handler path builds HuggingFaceProperties too (backends.json properties_classes): a key it
    # reads is read on that path; the backend's own class comes first for the type and values
    "vllm": ("VllmRbProperties", "HuggingFaceProperties"),
    "lmi-dist": ("LmiDistRbProperties", "HuggingFaceProperties"),
    "tensorrt-llm": ("TensorRtLlmProperties",),
    "transformers-neuronx": ("TransformerNeuronXProperties",),
    "nxdi": ("TransformerNeuronXProperties",),
    "deepspeed": ("DeepSpeedProperties",),
}
# Groups whose options are also read by code the generator does not parse: their hand-written
# ranges stay (TensorRT-LLM's build options go to the toolkit that compiles the engine).
UNPARSED_READERS = {
    "tensorrt-llm": "read by the TensorRT-LLM toolkit that builds the engine, which the generator does not parse",
}
# Keys a handler decides beyond its class: the HF handler dispatches only some rolling batches
# (get_rolling_batch_class_from_str, "Invalid rolling batch type"), whatever the class's enum allows.
HANDLER_DECIDES = {
    (
        "option.rolling_batch",
        ("huggingface",),
    ): "the HF handler's rolling-batch dispatch decides, beyond its class",
}
# Fields the Python side fills itself; not options a user writes.
INTERNAL_FIELDS = FRONT_END_FIELDS | {"device", "is_peft_model", "data_type"}


class Reader:
    """Which class of a backend group reads a key on a branch, and what it accepts there."""

    def __init__(self, catalogue: DjlCatalogue) -> None:
        self.catalogue = catalogue
        self.branches = [release.branch for release in catalogue.releases]

    def classes_of(self, groups: list[str]) -> list[str]:
        """The main class of each backend group (its side classes, such as Stable Diffusion on
        Neuron or the HF scheduler, do not say what the backend reads); ``common``: every class,
        base first (a key every handler reads may live in one handler's class on some releases)."""
        if "common" in groups:
            return list(dict.fromkeys(name for names in GROUP_CLASSES.values() for name in names))
        return list(dict.fromkeys(name for group in groups for name in GROUP_CLASSES.get(group, ())))

    def covered(self, classes: list[str], branch: str) -> bool:
        """Whether one of the classes exists on the branch: only there does the code speak."""
        return any(self.catalogue.class_at(name, branch) is not None for name in classes)

    def field_at(self, classes: list[str], key: str, branch: str) -> tuple[str, PropertyField | None] | None:
        """(class, field) of the first class reading ``key`` on ``branch`` (field None: an extra key)."""
        for class_name in classes:
            found = self.catalogue.class_at(class_name, branch)
            if found is None:
                continue
            for field in self.catalogue.fields_of(class_name, branch).values():
                if field.field not in INTERNAL_FIELDS and key in keys_of(field, found.populate_by_name):
                    return class_name, field
            if key.removeprefix("option.") in self.catalogue.extra_keys_of(class_name, branch):
                return class_name, None
        return None

    def signature(self, classes: list[str], key: str, branch: str) -> tuple[Any, ...] | None:
        """What the code says of the key on a branch: (type or None, allowed or None, source)."""
        found = self.field_at(classes, key, branch)
        if found is None:
            # the Java front end reads it, or a class that keeps unknown keys (extra="allow") hands
            # it to the engine (when the engine has it): still read, but the code says nothing of
            # its type (declared: False)
            java = next((m for m in self.catalogue.recommender if self.catalogue.holds_at(m, branch)
                         and any(item.key == key for item in (*m.reads, *m.writes))), None)  # fmt: skip
            passing = [self.catalogue.class_at(name, branch) for name in classes]
            through = next(
                (
                    c
                    for c in passing
                    if c is not None and c.extra == "allow" and self.engine_has(c, key, branch)
                ),
                java,
            )
            return (None, None, through.source, False) if through is not None else None
        class_name, field = found
        if field is None:
            extra = self.catalogue.extra_keys_of(class_name, branch)[key.removeprefix("option.")]
            return (
                extra.conversion if extra.conversion in ("int", "float", "bool") else None,
                None,
                extra.source,
            )
        accepted, _case = self.catalogue.accepted_values(class_name, field.field, branch)
        coerced = any(
            o.kind == "coercion" for _v, o in self.catalogue.outcomes_for(class_name, field.field, branch)
        )
        if accepted is not None and not coerced:
            order = [str(item) for item in field.allowed or ()]
            for _validator, outcome in self.catalogue.outcomes_for(class_name, field.field, branch):
                order.extend(str(item) for item in outcome.allowed_values or ())
            listed = tuple(dict.fromkeys(item for item in order if item in accepted)) or tuple(
                sorted(accepted)
            )
            return ("enum", listed, field.source, True)
        return (_scalar(field.annotation), None, field.source, True)

    def engine_has(self, owner: Any, key: str, branch: str) -> bool:
        """Whether the engine a class passes unknown keys to reads this one (vLLM: an EngineArgs
        field of the branch's vLLM; an engine whose arguments are not listed: assumed)."""
        if owner.class_name != "VllmRbProperties":
            return True
        release = self.catalogue.release(branch)
        version = vllm_of(None, None) if branch == "master" else vllm_of(release.djl, release.lmi)
        if version is None:
            return True
        return key.removeprefix("option.") in engine_args_for(version)

    def declaring(self, classes: list[str], key: str) -> list[str]:
        """The classes that declare the key on some branch (all of them when none does)."""
        found = [
            name
            for name in classes
            if any(
                self.field_at([name], key, branch) for branch in self.branches if self.covered([name], branch)
            )
        ]
        return found or classes

    def ships(self, groups: list[str], branch: str) -> bool:
        """Whether an image of the branch's release ships one of the groups' backends."""
        release = self.catalogue.release(branch)
        features = features_of(None, None) if branch == "master" else features_of(release.djl, release.lmi)
        for group in groups:
            row = BACKENDS.get(group)
            if row is None or not row.get("feature"):
                return True  # common keys, the HF handler: every image
            since = version_tuple(row.get("since")) if row.get("since") else ()
            if row["feature"] in features and version_tuple(release.djl) >= since:
                return True
        return False

    def runs(self, classes: list[str], key: str, groups: list[str]) -> list[tuple[str, str, tuple[Any, ...]]]:
        """(first, last, signature) for each run of consecutive branches with the same signature, over
        the branches where a class that declares the key exists and an image ships the backend."""
        found: list[list[Any]] = []
        declaring = self.declaring(classes, key)
        for branch in self.branches:
            if not self.covered(declaring, branch) or not self.ships(groups, branch):
                continue
            signature = self.signature(classes, key, branch)
            if signature is None:
                continue
            if found and found[-1][2][:2] == signature[:2] and self._next(found[-1][1]) == branch:
                found[-1][1] = branch
            else:
                found.append([branch, branch, signature])
        return [(first, last, signature) for first, last, signature in found]

    def follows(self, branch: str, following: str) -> bool:
        """Whether ``following`` is the branch right after ``branch``."""
        return self._next(branch) == following

    def _next(self, branch: str) -> str | None:
        position = self.branches.index(branch) + 1
        return self.branches[position] if position < len(self.branches) else None

    def djl(self, branch: str) -> str:
        return str(self.catalogue.release(branch).djl)


def _plain(value: Any) -> str | None:
    """A default as options.json writes it (``True`` -> ``"true"``)."""
    if value is None or isinstance(value, dict | list):
        return None
    return str(value).lower() if isinstance(value, bool) else str(value)


def _scalar(annotation: str) -> str | None:
    inner = annotation.strip()
    match = _OPTIONAL.match(inner)
    if match:
        inner = (match.group("inner") or match.group("union") or "").strip()
    return _SCALARS.get(inner)


def _overlaps(row: dict[str, Any], since: str | None, until: str | None) -> bool:
    low = version_tuple(row.get("since")) or (0,)
    high = version_tuple(row.get("until")) or (99,)
    return low <= (version_tuple(until) or (99,)) and (version_tuple(since) or (0,)) <= high


def rebuild(
    rows: list[dict[str, Any]], reader: Reader, classes: list[str] | None = None
) -> list[dict[str, Any]]:
    """The rows of one (key, backends) group with the code's facts (unchanged if no class reads the key)."""
    key, groups = rows[0]["key"], rows[0]["backends"]
    if not classes and (set(groups) & UNPARSED_READERS.keys() or (key, tuple(groups)) in HANDLER_DECIDES):
        return rows
    classes_used = classes or reader.classes_of(groups)
    runs = reader.runs(classes_used, key, groups)
    if not any(signature[3] for _first, _last, signature in runs):
        return rows  # no class declares it: its readers are code the generator does not parse
    if not runs:
        return rows
    # rows the code cannot speak for: releases before the oldest branch it reads
    kept = [
        row for row in rows if row.get("until") and version_tuple(row["until"]) < version_tuple(OLDEST_READ)
    ]
    earliest = min((version_tuple(row.get("since")) for row in rows), default=())
    result = list(kept)
    for number, (first, last, (kind, allowed, source, _declared)) in enumerate(runs):
        since = reader.djl(first)
        declaring = reader.declaring(classes_used, key)
        first_covered = next(
            b for b in reader.branches if reader.covered(declaring, b) and reader.ships(groups, b)
        )
        if number == 0 and first == first_covered and earliest < version_tuple(since) and not kept:
            since = (
                ".".join(map(str, earliest)) if earliest else None
            )  # read before 0.25 too: kept as written
        until = None if last == "master" else reader.djl(last)
        template = next((row for row in rows if _overlaps(row, since, until)), rows[0])
        facts = ["since", "until"]
        row = {**template, "since": since, "until": until}
        if allowed is not None:
            row.update(type="enum", allowed=list(allowed))
            facts += ["type", "allowed"]
        elif kind is not None and not (kind == "int" and template["type"] in ("int_or_max", "list_int")):
            row.update(type=kind, allowed=None if kind in ("int", "float") else template.get("allowed"))
            facts.append("type")
        row["from_code"] = {"facts": facts, "source": source}
        previous = (
            result[-1] if result and number > 0 and reader.follows(runs[number - 1][1], first) else None
        )
        if previous is not None and _same_facts(previous, row):
            # the class stopped declaring the field but passes it on (extra="allow"): one range
            previous["until"] = until
            shared = [fact for fact in previous["from_code"]["facts"] if fact in facts]
            previous["from_code"] = {**previous["from_code"], "facts": shared}
            continue
        result.append(row)
    return result


def _same_facts(one: dict[str, Any], other: dict[str, Any]) -> bool:
    ignored = ("since", "until", "from_code")
    return {k: v for k, v in one.items() if k not in ignored} == {
        k: v for k, v in other.items() if k not in ignored
    }


def added(options: list[dict[str, Any]], reader: Reader) -> list[dict[str, Any]]:
    """Rows for keys a class reads that no row of its backend group names."""
    catalogue = reader.catalogue
    known = {(row["key"], group) for row in options for group in row["backends"]}
    found: dict[tuple[str, str], dict[str, Any]] = {}
    owners: dict[tuple[str, str], str] = {}
    base_first = sorted(catalogue.fields, key=lambda entry: entry.class_name != "Properties")
    for entry in base_first:
        if entry.field in INTERNAL_FIELDS:
            continue
        owner = next(c for c in catalogue.classes if c.class_name == entry.class_name)
        # one group per class: NxD Inference reads the transformers-neuronx rows
        for group in [group for group in owner.backends if group != "nxdi"][:1]:
            for key in keys_of(entry, owner.populate_by_name):
                if (
                    (key, group) in known
                    or (key, "common") in known
                    or (key, group) in found
                    or (key, "common") in found
                ):
                    continue
                owners[(key, group)] = entry.class_name
                found[(key, group)] = {
                    "key": key, "backends": [group], "kind": "lmi", "type": "str", "allowed": None,
                    "min": None, "max": None, "default": _plain(entry.default), "since": NOT_BEFORE, "until": None,
                    "deprecated": None, "aliases": [], "env": None,
                    "summary": f"{entry.class_name}.{entry.field} ({entry.annotation}); read from the code, not documented",
                    "doc": None, "source": entry.source, "note": None,
                }  # fmt: skip
    rows: list[dict[str, Any]] = []
    for _identity, row in sorted(found.items()):
        rows.extend(item for item in rebuild([row], reader) if item.get("from_code"))
    return rows


def synchronised(document: dict[str, Any], catalogue: DjlCatalogue) -> dict[str, Any]:
    """options.json with the code's facts."""
    reader = Reader(catalogue)
    groups: dict[tuple[str, tuple[str, ...]], list[dict[str, Any]]] = {}
    order: list[tuple[str, tuple[str, ...]]] = []
    for row in document["options"]:
        identity = (row["key"], tuple(row["backends"]))
        if identity not in groups:
            order.append(identity)
        groups.setdefault(identity, []).append(row)
    options: list[dict[str, Any]] = []
    for identity in order:
        rows = groups[identity]
        code_kind = rows[0]["key"].startswith("option.") and rows[0]["kind"] in CODE_KINDS
        options.extend(rebuild(rows, reader) if code_kind else rows)
    options.extend(added([row for row in options], reader))
    for row in options:
        if row.get("from_code"):
            row.pop("hand_written", None)
        else:
            row["hand_written"] = _why_hand_written(row)
    return {**document, "options": options}


def _why_hand_written(row: dict[str, Any]) -> str:
    """Why the code does not give this entry's facts (the generator reads properties classes only)."""
    if (row["key"], tuple(row["backends"])) in HANDLER_DECIDES:
        return HANDLER_DECIDES[(row["key"], tuple(row["backends"]))]
    if not row["key"].startswith("option.") or row["kind"] == "server":
        return (
            "read by the Java front end (ModelInfo, LmiConfigRecommender, PyModel), not by a properties class"
        )
    if row.get("until") and version_tuple(row["until"]) < version_tuple(OLDEST_READ):
        return "releases before 0.25, older than the branches the generator reads"
    if not any(group in GROUP_CLASSES for group in row["backends"]):
        return "a backend whose handler has no properties class"
    for group in row["backends"]:
        if group in UNPARSED_READERS:
            return UNPARSED_READERS[group]
    return (
        "no properties class reads it: the Java front end, a handler or the engine (vLLM, TensorRT-LLM) does"
    )


def main(argv: list[str] | None = None) -> int:
    """Rewrite options.json, or with --check say whether it would change."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true")
    arguments = parser.parse_args(argv)
    document = json.loads(OPTIONS.read_text(encoding="utf-8"))
    text = json.dumps(synchronised(document, djl_catalogue()), indent=1, ensure_ascii=False) + "\n"
    if arguments.check:
        if text != OPTIONS.read_text(encoding="utf-8"):
            print(f"{OPTIONS} differs from the code: run scripts/sync_options_from_code.py", file=sys.stderr)
            return 1
        print(f"{OPTIONS} agrees with the code")
        return 0
    OPTIONS.write_text(text, encoding="utf-8")
    print(f"wrote {OPTIONS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
