"""From the generated catalogue to what lint checks: per backend and branch, the check of each key.

A backend's handler path builds some properties classes (``backends.json``, ``properties_classes``);
every one must accept a value. For each ``option.*`` key a class reads this derives: the type
pydantic parses (int, float, bool), the values the annotation and the validators let through, with
the container's message, and the values a validator replaces (a coercion). What a string cannot
fail (free text, JSON parsed by a ``before`` validator, a key the Java front end rewrites) gets no
check: lint then says nothing rather than something the container does not do.
"""

from __future__ import annotations

import re
from typing import Any

from lmi_config.knowledge.djl_properties import DjlCatalogue, PropertyField

# Fields the Python side fills itself or the Java front end sets from another key (``engine`` comes
# from the model-level ``engine``, ``mpi_mode`` from engine=MPI): not what ``option.<field>`` means.
FRONT_END_FIELDS = frozenset(
    {"model_id_or_path", "kwargs", "is_mpi", "preloaded_model", "engine", "mpi_mode"}
)
_OPTIONAL = re.compile(r"^(?:Optional\[(?P<inner>.*)\]|Union\[(?P<union>.*), None\])$")
_SCALARS = {"int": "int", "float": "float", "bool": "bool"}
_EQUALS = re.compile(r'"(?P<value>[^"]+)"\.equals\((?P<variable>\w+)\)')

Check = dict[str, Any]


def view_checks(catalogue: DjlCatalogue, classes: tuple[str, ...], branch: str) -> dict[str, list[Check]]:
    """Every key the path's classes check on a branch, with the checks in the order the classes run."""
    java_keys = front_end_keys(catalogue, branch)
    major = pydantic_major(catalogue, branch)
    checks: dict[str, list[Check]] = {}
    for class_name in classes:
        found = catalogue.class_at(class_name, branch)
        if found is None:
            continue
        before = _before_validated(catalogue, class_name, branch)
        for field in catalogue.fields_of(class_name, branch).values():
            if field.field in FRONT_END_FIELDS:
                continue
            for key in keys_of(field, found.populate_by_name):
                rewritten = front_end_rewrites(catalogue, branch, key) if key in java_keys else None
                check = _field_check(
                    catalogue, class_name, field, branch, major, before, rewritten, key in java_keys
                )
                if check is not None:
                    checks.setdefault(key, []).append(check)
        for extra in catalogue.extra_keys_of(class_name, branch).values():
            key = "option." + extra.key
            if extra.conversion in ("int", "float") and key not in java_keys:
                # read with int() / float() by the class's own code: Python's messages, not pydantic's
                checks.setdefault(key, []).append(
                    _check(class_name, extra.key, extra.conversion, 0, extra.source)
                )
    return checks


def _check(class_name: str, field: str, kind: str, major: int, source: str, **details: Any) -> Check:
    check: Check = {
        "class": class_name,
        "field": field,
        "kind": kind,
        "accepted": None,
        "case_insensitive": False,
        "message": None,
        "coerced": None,
        "coerce_to": None,
        "coerce_message": None,
        "pydantic": major,
        "source": source,
    }
    check.update(details)
    return check


def keys_of(field: PropertyField, populate_by_name: bool) -> list[str]:
    """pydantic takes a field with an alias under the alias only, unless populate_by_name is set."""
    if field.alias:
        return (
            [f"option.{field.alias}", f"option.{field.field}"]
            if populate_by_name
            else [f"option.{field.alias}"]
        )
    return [f"option.{field.field}"]


def _kind(annotation: str) -> str | None:
    inner = annotation.strip()
    match = _OPTIONAL.match(inner)
    if match:
        inner = (match.group("inner") or match.group("union") or "").strip()
    return _SCALARS.get(inner)


def _field_check(
    catalogue: DjlCatalogue,
    class_name: str,
    field: PropertyField,
    branch: str,
    major: int,
    before: set[str],
    rewritten: frozenset[str] | None,
    java_parses: bool,
) -> Check | None:
    """The check of one field, or None when the code checks nothing a string could fail."""
    accepted, case_insensitive = catalogue.accepted_values(class_name, field.field, branch)
    outcomes = catalogue.outcomes_for(class_name, field.field, branch)
    coercion = next(((v, o) for v, o in outcomes if o.kind == "coercion" and o.allowed_values), None)
    if coercion is not None:
        validator, outcome = coercion
        return _check(
            class_name, field.field, "text", major, validator.source,
            case_insensitive=outcome.case_insensitive, coerced=[str(item) for item in outcome.allowed_values or ()],
            coerce_to=outcome.coerces_to, coerce_message=outcome.message,
        )  # fmt: skip
    from_validator = [(v, o) for v, o in outcomes if o.kind == "error" and o.allowed_values is not None]
    ordered = _in_source_order(field, accepted, outcomes) if accepted is not None else None
    if field.field in before and not from_validator:
        # a `before` validator sees the raw string first and may rewrite it (enable_streaming is
        # lower-cased there): the annotation's values alone do not say what is refused
        ordered = None
    if java_parses and ordered is not None:
        # the front end reads this key first and rewrites some values (auto, …): the classes see the rest
        ordered = [*ordered, *sorted((rewritten or frozenset()) - set(ordered))] if rewritten else None
    if ordered is not None:
        message = next((o.message for _v, o in from_validator if o.message), None)
        source = from_validator[0][0].source if from_validator else field.source
        return _check(
            class_name, field.field, "values", major, source,
            accepted=ordered, case_insensitive=case_insensitive, message=message,
        )  # fmt: skip
    kind = _kind(field.annotation)
    if kind is not None and field.field not in before and not java_parses:
        return _check(class_name, field.field, kind, major, field.source)
    return None


def _in_source_order(
    field: PropertyField, accepted: frozenset[str], outcomes: list[tuple[Any, Any]]
) -> list[str]:
    order: list[str] = [str(item) for item in field.allowed or ()]
    for _validator, outcome in outcomes:
        order.extend(str(item) for item in outcome.allowed_values or ())
    seen: list[str] = []
    for item in order:
        if item in accepted and item not in seen:
            seen.append(item)
    return seen + sorted(accepted - set(seen))


def _before_validated(catalogue: DjlCatalogue, class_name: str, branch: str) -> set[str]:
    """Fields a ``before`` validator sees as the raw string (it may parse it its own way)."""
    found: set[str] = set()
    for validator in catalogue.validators_of(class_name, branch):
        if validator.mode == "before" and validator.decorator in ("field_validator", "validator"):
            found.update(validator.fields)
    return found


def pydantic_major(catalogue: DjlCatalogue, branch: str) -> int:
    """1 where the classes use pydantic v1 validators (``validator`` / ``root_validator``), else 2."""
    decorators = {v.decorator for v in catalogue.validators if catalogue.holds_at(v, branch)}
    return 2 if decorators & {"field_validator", "model_validator"} else 1


def front_end_keys(catalogue: DjlCatalogue, branch: str) -> frozenset[str]:
    """``option.*`` keys the Java recommender reads or writes on a branch: it parses them first."""
    keys: set[str] = set()
    for method in catalogue.recommender:
        if catalogue.holds_at(method, branch):
            keys.update(item.key for item in (*method.reads, *method.writes) if item.key)
    return frozenset(key for key in keys if key.startswith("option."))


def front_end_rewrites(catalogue: DjlCatalogue, branch: str, key: str) -> frozenset[str]:
    """Values of a key the recommender tests for and replaces before Python sees them
    (``option.rolling_batch``: ``auto``, and ``lmi-dist`` from 0.33): the variable read from the key
    compared with a literal in a condition of an assignment to that variable."""
    found: set[str] = set()
    for method in catalogue.recommender:
        if not catalogue.holds_at(method, branch) or not any(read.key == key for read in method.reads):
            continue
        for item in method.assignments:
            for condition in item.when:
                for match in _EQUALS.finditer(condition):
                    if item.variable and match["variable"] == item.variable:
                        found.add(match["value"])
    return frozenset(found)


def validator_messages(
    catalogue: DjlCatalogue, classes: tuple[str, ...], branch: str
) -> dict[str, list[str]]:
    """``Class.validator`` -> the messages of its outcomes, for the validators the path runs."""
    found: dict[str, list[str]] = {}
    for class_name in classes:
        for validator in catalogue.validators_of(class_name, branch):
            messages = [outcome.message for outcome in validator.outcomes if outcome.message]
            if messages:
                found.setdefault(f"{validator.class_name}.{validator.name}", [])
                for message in messages:
                    if message not in found[f"{validator.class_name}.{validator.name}"]:
                        found[f"{validator.class_name}.{validator.name}"].append(message)
    return found


def handler_branches(catalogue: DjlCatalogue) -> dict[str, list[str]]:
    """Handler modules (a top-level ``handle``) and the branches that have them."""
    found: dict[str, list[str]] = {}
    for release in catalogue.releases:
        for module in catalogue.modules:
            if module.handler and catalogue.holds_at(module, release.branch):
                found.setdefault(module.module, []).append(release.branch)
    return found
