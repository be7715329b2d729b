"""Read an engine's start-up checks with ``ast``, for engines other than vLLM (NxD Inference,
transformers-neuronx): the walker of scripts/vllm_check_reader.py, with what is particular to vLLM
made the caller's.

scripts/vllm_check_reader.py decides what a check is (``raise``, ``assert``, ``sys.exit`` and a
logged error followed by one), how its conditions, message and inputs are written, and what keeps its
identity (``file::function::hash``); all of that is reused as it is. What differs from engine to engine
is which files are read (:class:`Area`, the same dataclass) and which functions run at start-up: vLLM
leaves out every ``forward``, but NxD Inference traces its modules' ``forward`` while it compiles, so
those run at start-up, and only the application's request path does not. :class:`Scope` says which
functions and classes never run at start-up, for one engine.

Stdlib only; deterministic; the engine is never imported.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vllm_check_reader import (  # noqa: E402  (the shared walker and its check record)
    STARTUP,
    Area,
    Check,
    _abstract,
    _numbered,
    _Walker,
)


@dataclass(frozen=True)
class Scope:
    """What of an engine never runs while it starts.

    ``runtime_function``: function names that run per request or per step wherever they are;
    ``runtime_class``: classes whose methods all do (a generation adapter, a request preprocessor);
    ``runtime_method``: ``Class.method`` qualified names (a prefix of a nested function's) that do,
    matched from the start of the qualified name.
    """

    runtime_function: re.Pattern[str] = re.compile(r"^(__repr__|__str__|extra_repr)$")
    runtime_class: re.Pattern[str] | None = None
    runtime_method: re.Pattern[str] | None = None


def area_of(path: str, areas: tuple[Area, ...]) -> Area | None:
    """The first of ``areas`` whose patterns take ``path`` (and whose exclusions do not)."""
    for area in areas:
        if any(fnmatch(path, pattern) for pattern in area.patterns) and not any(
            fnmatch(path, pattern) for pattern in area.exclude
        ):
            return area
    return None


@dataclass
class _EngineWalker(_Walker):
    """vLLM's walker, with which functions count decided by a :class:`Scope` instead of vLLM's names."""

    scope: Scope = field(default_factory=Scope)

    def _runtime_class(self, name: str) -> bool:
        pattern = self.scope.runtime_class
        return bool(pattern is not None and pattern.search(name))

    def function(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, qualname: str, in_runtime_class: bool
    ) -> None:
        name = f"{qualname}.{node.name}" if qualname != "<module>" else node.name
        if _abstract(node):
            self.skipped_abstract += 1
            return
        counted = not self.scope.runtime_function.match(node.name) and not in_runtime_class
        if self.scope.runtime_method is not None and self.scope.runtime_method.match(name):
            counted = False
        if self.area.runtime and re.match(self.area.runtime, node.name):
            counted = False
        if self.area.functions == "constructors":
            counted = node.name in ("__init__", "__post_init__") and not in_runtime_class
        elif self.area.functions == "startup":
            startup = re.compile(self.area.startup) if self.area.startup else STARTUP
            counted = bool(startup.match(node.name)) and not in_runtime_class
        names = {
            target.id: statement.value
            for statement in ast.walk(node)
            if isinstance(statement, ast.Assign)
            for target in statement.targets
            if isinstance(target, ast.Name)
        }
        self._functions.append(node)
        try:
            # a function nested in a request-path method runs on that path too
            self.block(node.body, [], name, names, counted and not in_runtime_class)
        finally:
            self._functions.pop()

    def statement(
        self,
        node: ast.stmt,
        conditions: list[ast.AST],
        scope: str,
        names: dict,
        counted: bool | str,
        logged: ast.Call | None,
    ) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            outer = scope.rsplit(".", 1)[-1] if scope != "<module>" else ""
            runtime = bool(outer) and (self._runtime_class(outer) or not counted)
            self.function(node, scope, runtime)
            return
        if isinstance(node, ast.ClassDef):
            inner = f"{scope}.{node.name}" if scope != "<module>" else node.name
            self._classes.append(node)
            for statement in node.body:
                if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                    self.function(statement, inner, self._runtime_class(node.name))
                elif isinstance(statement, ast.ClassDef):
                    self.statement(statement, [], inner, {}, counted, None)
            self._classes.pop()
            return
        super().statement(node, conditions, scope, names, counted, logged)


def read_checks(
    sources: dict[str, str], areas: tuple[Area, ...], scope: Scope | None = None
) -> tuple[list[Check], int]:
    """Every start-up check of ``areas`` in ``sources`` (path -> text), and how many abstract methods
    (a lone ``raise NotImplementedError``) were left out."""
    checks: list[Check] = []
    abstract = 0
    for path in sorted(sources):
        area = area_of(path, areas)
        if area is None:
            continue
        try:
            tree = ast.parse(sources[path], filename=path)
        except SyntaxError:
            continue
        walker = _EngineWalker(path, area, scope=scope or Scope())
        walker.module(tree)
        abstract += walker.skipped_abstract
        checks.extend(_numbered(walker.found))
    return checks, abstract


# --------------------------------------------------------------------------------------------
# the catalogue of one engine: classification, one entry per identity, coverage (engine-agnostic)
# --------------------------------------------------------------------------------------------


class Classifier(NamedTuple):
    """A rule of the first pass: when ``applies`` holds, the check is ``decidable`` or not, for ``reason``."""

    name: str
    decidable: bool
    reason: str
    applies: Callable[[Check, str], bool]


def reads(*names: str) -> Callable[[Check, str], bool]:
    """The conditions read one of ``names`` (an input of :func:`vllm_check_reader.inputs_of`)."""
    wanted = set(names)
    return lambda check, text: bool(wanted & set(check.inputs))


def text_matches(pattern: str) -> Callable[[Check, str], bool]:
    """The conditions' source text matches ``pattern``."""
    compiled = re.compile(pattern)
    return lambda check, text: bool(compiled.search(text))


def message_matches(pattern: str) -> Callable[[Check, str], bool]:
    """The message matches ``pattern`` (case-insensitive)."""
    compiled = re.compile(pattern, re.IGNORECASE)
    return lambda check, text: bool(compiled.search(check.message))


def function_matches(pattern: str) -> Callable[[Check, str], bool]:
    """The enclosing function's own name (the last part of its qualified name) matches ``pattern``."""
    compiled = re.compile(pattern)
    return lambda check, text: bool(compiled.search(check.function.rsplit(".", 1)[-1]))


def any_of(*tests: Callable[[Check, str], bool]) -> Callable[[Check, str], bool]:
    """One of ``tests`` holds."""
    return lambda check, text: any(test(check, text) for test in tests)


# the failing condition of an assert on an object's state: ``not x is not None``, ``not isinstance(x, T)`` …
INVARIANT = re.compile(
    r"^(not [\w.\[\]'\"]+ is not None|[\w.\[\]'\"]+ is None|not isinstance\(.*\)|not hasattr\(.*\)|not callable\(.*\)"
    r"|not issubclass\(.*\))$"
)


def bare_invariant(check: Check, text: str) -> bool:
    """An assert with no message whose failing condition is that an object is unset or of another type."""
    return (
        check.kind == "assert"
        and not check.message
        and bool(INVARIANT.match(check.conditions[-1] if check.conditions else ""))
    )


def classify(check: Check, classifiers: tuple[Classifier, ...]) -> Classifier:
    """The first of ``classifiers`` that applies to ``check`` (the last must apply to every check)."""
    text = " && ".join(check.conditions)
    for classifier in classifiers:
        if classifier.applies(check, text):
            return classifier
    raise AssertionError("the last classifier applies to every check")


def version_key(version: str) -> tuple[tuple[int, str], ...]:
    """Sort key of a release version (``0.1.1``, ``0.13.380``; a non-numeric part sorts first)."""
    return tuple((int(part), "") if part.isdigit() else (-1, part) for part in version.split("."))


def catalogue(
    read: dict[str, list[Check]],
    versions: dict[str, dict[str, Any]],
    classifiers: tuple[Classifier, ...],
    review: dict[str, dict[str, Any]],
    url: Callable[[str, str, int], str],
    *,
    source: str,
    areas: tuple[Area, ...],
) -> dict[str, Any]:
    """The document: per version its row with counts, per identity the check and where it is.

    ``read``: version -> its checks; ``versions``: version -> its row (``read_from`` and facts);
    ``review``: identity -> {decidable, reason}; ``url(version, path, line)``: the line's address."""
    checks: dict[str, dict[str, Any]] = {}
    for version in sorted(read, key=version_key):
        for check in read[version]:
            entry = checks.get(check.identity)
            if entry is None:
                classifier = classify(check, classifiers)
                entry = checks[check.identity] = {
                    "area": check.area,
                    "function": check.function,
                    "kind": check.kind,
                    "exception": check.exception,
                    "conditions": check.conditions,
                    "message": check.message,
                    "inputs": check.inputs,
                    "decidable": classifier.decidable,
                    "why": classifier.name,
                    "lines": {},
                    "paths": {},
                }
            entry["lines"][version] = check.line
            entry["paths"][version] = check.path
            if check.parts:
                entry.setdefault("parts", {})[version] = check.parts
    for identity, entry in checks.items():
        newest = sorted(entry["lines"], key=version_key)[-1]
        entry["file"] = entry["paths"][newest]
        moved = {version: path for version, path in entry.pop("paths").items() if path != entry["file"]}
        if moved:
            entry["moved"] = moved
        entry["source"] = url(newest, entry["file"], entry["lines"][newest])
        if identity in review:
            entry["decidable"] = review[identity]["decidable"]
            entry["why"] = "review"
            entry["reason"] = review[identity]["reason"]
            if "counted_as" in review[identity]:
                entry["counted_as"] = review[identity]["counted_as"]  # the reason class it counts under
    rows = {}
    for version in sorted(versions, key=version_key):
        if version not in read:
            continue
        found = sorted({check.identity for check in read[version]})
        rows[version] = {
            **versions[version],
            "checks": len(found),
            "decidable": sum(1 for identity in found if checks[identity]["decidable"]),
        }
    return {
        "source": source,
        "areas": {area.name: list(area.patterns) for area in areas},
        "reasons": {classifier.name: classifier.reason for classifier in classifiers},
        "versions": rows,
        "checks": dict(sorted(checks.items())),
    }


def catalogue_text(document: dict[str, Any]) -> str:
    """One check per line, keys sorted: small diffs when a release adds or moves checks."""
    lines = ["{"]
    for key in ("source", "areas", "reasons", "versions"):
        lines.append(f" {json.dumps(key)}: {json.dumps(document[key], sort_keys=True, ensure_ascii=False)},")
    lines.append(' "checks": {')
    items = list(document["checks"].items())
    for number, (identity, entry) in enumerate(items):
        comma = "," if number < len(items) - 1 else ""
        lines.append(
            f"  {json.dumps(identity)}: {json.dumps(entry, sort_keys=True, ensure_ascii=False)}{comma}"
        )
    lines += [" }", "}"]
    return "\n".join(lines) + "\n"


def reason_class(entry: dict[str, Any]) -> str:
    """The class a check counts under: its first-pass classifier, or the one its review names."""
    return str(entry.get("counted_as") or entry["why"])


def coverage_of(document: dict[str, Any], coverage: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per version: its checks, and its decidable identities split into covered, listed-uncovered and
    unlisted (neither list names them)."""
    covered = {identity for judgement in coverage["covered"] for identity in judgement["checks"]}
    uncovered = {identity for group in coverage["uncovered"] for identity in group["checks"]}
    result = {}
    for version, row in document["versions"].items():
        present = [identity for identity, entry in document["checks"].items() if version in entry["lines"]]
        decidable = sorted(identity for identity in present if document["checks"][identity]["decidable"])
        result[version] = {
            "total": row["checks"],
            "decidable": decidable,
            "not_decidable": Counter(
                reason_class(document["checks"][identity])
                for identity in present
                if not document["checks"][identity]["decidable"]
            ),
            "covered": [identity for identity in decidable if identity in covered],
            "uncovered": [
                identity for identity in decidable if identity in uncovered and identity not in covered
            ],
            "unlisted": [identity for identity in decidable if identity not in covered | uncovered],
        }
    return result


def print_coverage(
    engine: str, document: dict[str, Any], coverage: dict[str, Any], *, list_uncovered: bool
) -> int:
    """Print, per version, checks, decidable, not decidable by reason and covered / decidable; list the
    decidable checks neither coverage list names. Returns how many there are."""
    figures = coverage_of(document, coverage)
    unlisted: set[str] = set()
    for version, row in sorted(figures.items(), key=lambda item: version_key(item[0])):
        decidable, covered = len(row["decidable"]), len(row["covered"])
        share = 100.0 * covered / decidable if decidable else 100.0
        print(
            f"  {engine} {version:<10} {row['total']:>5} checks, {decidable:>5} decidable, "
            f"{row['total'] - decidable:>5} not; covered {covered:>4} / {decidable:<5} ({share:5.1f} %), "
            f"uncovered {len(row['uncovered'])}, unlisted {len(row['unlisted'])}"
        )
        reasons = ", ".join(f"{name} {count}" for name, count in sorted(row["not_decidable"].items()))
        print(f"  {engine} {version:<10} not decidable by reason: {reasons or 'none'}")
        unlisted.update(row["unlisted"])
    if list_uncovered:
        reasons_of = {
            identity: group["reason"] for group in coverage["uncovered"] for identity in group["checks"]
        }
        for identity in sorted({i for row in figures.values() for i in row["uncovered"]}):
            print(f"    uncovered {identity}: {reasons_of[identity]}")
    for identity in sorted(unlisted):
        entry = document["checks"][identity]
        print(f"    UNLISTED {identity} ({entry['source']}): {entry['message'][:100]!r}")
    return len(unlisted)


def summary(document: dict[str, Any]) -> None:
    """Counts per area and per reason, over all identities."""
    by_area: Counter[tuple[str, bool]] = Counter()
    by_reason: Counter[str] = Counter()
    for entry in document["checks"].values():
        by_area[(entry["area"], entry["decidable"])] += 1
        reviewed = " (reviewed)" if entry["why"] == "review" else ""
        by_reason[reason_class(entry) + reviewed + (" (decidable)" if entry["decidable"] else "")] += 1
    print(f"  {len(document['checks'])} check identities over {len(document['versions'])} versions")
    for area in document["areas"]:
        print(f"    {area:<14} decidable {by_area[(area, True)]:>5}  not {by_area[(area, False)]:>5}")
    for name, count in sorted(by_reason.items()):
        print(f"    {name:<34} {count:>5}")
