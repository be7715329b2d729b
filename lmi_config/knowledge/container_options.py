"""The ``option.*`` values as the container's own code checks them, per backend and release.

A backend's handler path builds some of the generated properties classes (``backends.json``,
``properties_classes``: vLLM builds ``HuggingFaceProperties`` and ``VllmRbProperties`` from the
same options); every one of them must accept a value. For one backend at one release branch this
module turns the generated catalogue (``data/djl_properties.json``) into one check per key: the
type pydantic parses, the values the annotation and the validators let through (with the
container's own message), and the values a validator replaces (coercions). The view is built on
first use and cached: the lint path pays for it once per (backend, branch).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any, NamedTuple

from lmi_config.knowledge import Release, backends, load_data
from lmi_config.knowledge.djl_properties import DjlCatalogue, PropertyField, Validator, djl_catalogue

# Fields the Python side fills itself or the Java front end sets from another key (``engine`` comes
# from the model-level ``engine``, ``mpi_mode`` from engine=MPI): not what ``option.<field>`` means.
FRONT_END_FIELDS = frozenset(
    {"model_id_or_path", "kwargs", "is_mpi", "preloaded_model", "engine", "mpi_mode"}
)
_OPTIONAL = re.compile(r"^(?:Optional\[(?P<inner>.*)\]|Union\[(?P<union>.*), None\])$")
_SCALARS = {"int": "int", "float": "float", "bool": "bool", "str": "text"}
_INTEGER = re.compile(r"^\s*[+-]?\d[\d_]*\s*$")
_TRUE_FALSE = frozenset({"0", "off", "f", "false", "n", "no", "1", "on", "t", "true", "y", "yes"})
# pydantic's own messages for a string it cannot parse (v1 on the 0.25-0.27 branches, v2 after)
_PYDANTIC = {
    ("int", 2): "Input should be a valid integer, unable to parse string as an integer",
    ("float", 2): "Input should be a valid number, unable to parse string as a number",
    ("bool", 2): "Input should be a valid boolean, unable to interpret input",
    ("int", 1): "value is not a valid integer",
    ("float", 1): "value is not a valid float",
    ("bool", 1): "value could not be parsed to a boolean",
}
PYDANTIC_ERRORS_URL = "https://docs.pydantic.dev/latest/errors/validation_errors/"


class ValueCheck(NamedTuple):
    """What one class does with the value of one ``option.*`` key."""

    key: str
    class_name: str
    field: str
    kind: str  # int | float | bool | values | text (values: only ``accepted`` pass)
    accepted: tuple[str, ...] | None  # in the source's order
    case_insensitive: bool
    message: str | None  # the container's message for a refused value (``{…}``: filled at run time)
    coerced: tuple[str, ...] | None  # values a validator keeps; any other is replaced …
    coerce_to: Any  # … by this (None: ignored)
    coerce_message: str | None
    pydantic_major: int  # 1 or 2; 0: not pydantic (the code calls int() / float() itself)
    source: str


class Verdict(NamedTuple):
    """A value the container refuses (``error``) or replaces (``coercion``), with its message."""

    kind: str  # error | coercion
    message: str
    check: ValueCheck


class ContainerView:
    """The checks of one backend's classes at one release branch."""

    def __init__(
        self, backend: str, branch: str, checks: dict[str, tuple[ValueCheck, ...]], reads: frozenset[str]
    ):
        self.backend = backend
        self.branch = branch
        self.checks = checks
        self.reads = reads  # every option.* key a class of the path reads at this branch

    def judge(self, key: str, value: str) -> Verdict | None:
        """The first class of the path that refuses or replaces ``value``; None when all accept it."""
        for check in self.checks.get(key, ()):
            verdict = _judge_one(check, value)
            if verdict is not None:
                return verdict
        return None


def _judge_one(check: ValueCheck, value: str) -> Verdict | None:
    # names are compared as written (blanks kept, as the container keeps them); numbers are parsed
    # from the stripped text (the catalogue's rule reports the blanks)
    text = value
    if check.coerced is not None and not _member(text, check.coerced, check.case_insensitive):
        return Verdict("coercion", fill(check.coerce_message or "", check.field, text), check)
    if check.kind == "values" and check.accepted is not None:
        if _member(text, check.accepted, check.case_insensitive):
            return None
        message = fill(check.message, check.field, text) if check.message else _enum_message(check)
        return Verdict("error", message, check)
    text = text.strip()
    if check.kind in ("int", "float", "bool") and not _parses(check.kind, text):
        if check.pydantic_major == 0:  # read from the extra keys with int() / float()
            message = (
                f"invalid literal for int() with base 10: {text!r}"
                if check.kind == "int"
                else f"could not convert string to float: {text!r}"
            )
            return Verdict("error", message, check)
        return Verdict("error", _PYDANTIC[(check.kind, check.pydantic_major)], check)
    return None


def _member(text: str, accepted: tuple[str, ...], case_insensitive: bool) -> bool:
    if case_insensitive:
        return text.lower() in {item.lower() for item in accepted}
    return text in accepted


def _parses(kind: str, text: str) -> bool:
    if kind == "int":
        return bool(_INTEGER.match(text))
    if kind == "bool":
        return text.lower() in _TRUE_FALSE
    try:
        float(text.replace("_", ""))
    except ValueError:
        return False
    return True


def _enum_message(check: ValueCheck) -> str:
    values = [f"'{item}'" for item in check.accepted or ()]
    if check.pydantic_major == 1:
        return f"value is not a valid enumeration member; permitted: {', '.join(values)}"
    listed = values[0] if len(values) == 1 else ", ".join(values[:-1]) + " or " + values[-1]
    return f"Input should be {listed}"


def fill(template: str | None, field: str, value: str) -> str:
    """The container's message with the value where its code prints the field (``{dtype}``,
    ``${quantize}``, ``{val}``); other run-time parts stay as the code writes them."""
    if not template:
        return ""

    def replace(match: re.Match[str]) -> str:
        expression = match.group("expression")
        last = re.split(r"[.\[\]'\"]+", expression.strip("'\" "))
        names = [part for part in last if part]
        if names and names[-1] in (field, "val", "value") or expression == field:
            return value
        return match.group(0)

    return re.sub(r"\$?\{(?P<expression>[^{}]+)\}", replace, template)


# --- building a view ------------------------------------------------------------------------


@cache
def _path_classes() -> dict[str, tuple[str, ...]]:
    return {
        row["id"]: tuple((row.get("properties_classes") or {}).get("classes", ()))
        for row in load_data("backends.json")["backends"]
    }


def path_classes(backend: str) -> tuple[str, ...]:
    """The generated properties classes a backend's handler path builds (``backends.json``)."""
    return _path_classes().get(backend, ())


def container_view(backend: str, release: Release) -> ContainerView | None:
    """The checks of a backend at a release; None before the oldest branch the generator reads
    (or for a backend that builds no generated class)."""
    classes = path_classes(backend)
    if not classes:
        return None
    branch = djl_catalogue().branch_of(release)
    if branch is None:
        return None
    return _view(backend, branch)


@cache
def _view(backend: str, branch: str) -> ContainerView:
    catalogue = djl_catalogue()
    java_keys = front_end_keys(branch)
    checks: dict[str, list[ValueCheck]] = {}
    reads: set[str] = set()
    major = pydantic_major(catalogue, branch)
    for class_name in path_classes(backend):
        found = catalogue.class_at(class_name, branch)
        if found is None:
            continue
        populate_by_name = found.populate_by_name
        before = _before_validated(catalogue, class_name, branch)
        for field in catalogue.fields_of(class_name, branch).values():
            if field.field in FRONT_END_FIELDS:
                continue
            for key in _keys_of(field, populate_by_name):
                reads.add(key)
                check = _field_check(
                    catalogue, class_name, key, field, branch, major, before, key in java_keys
                )
                if check is not None:
                    checks.setdefault(key, []).append(check)
        for extra in catalogue.extra_keys_of(class_name, branch).values():
            key = "option." + extra.key
            reads.add(key)
            if extra.conversion in ("int", "float") and key not in java_keys:
                checks.setdefault(key, []).append(
                    ValueCheck(
                        key,
                        class_name,
                        extra.key,
                        extra.conversion,
                        None,
                        False,
                        None,
                        None,
                        None,
                        None,
                        0,
                        extra.source,
                    )
                )
    return ContainerView(
        backend, branch, {key: tuple(items) for key, items in checks.items()}, frozenset(reads)
    )


def _keys_of(field: PropertyField, populate_by_name: bool) -> list[str]:
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
    key: str,
    field: PropertyField,
    branch: str,
    major: int,
    before: set[str],
    java_parses: bool,
) -> ValueCheck | None:
    """The check of one field, or None when the code checks nothing a string could fail."""
    accepted, case_insensitive = catalogue.accepted_values(class_name, field.field, branch)
    outcomes = catalogue.outcomes_for(class_name, field.field, branch)
    coercion = next(((v, o) for v, o in outcomes if o.kind == "coercion" and o.allowed_values), None)
    message = next(
        (o.message for _v, o in outcomes if o.kind == "error" and o.allowed_values is not None and o.message),
        None,
    )
    ordered = _in_source_order(field, accepted, outcomes) if accepted is not None else None
    if field.field in before and not any(o.kind == "error" and o.allowed_values for _v, o in outcomes):
        # a `before` validator sees the raw string first and may rewrite it (enable_streaming is
        # lower-cased there): the annotation's values alone do not say what is refused
        ordered = None
    if java_parses and ordered is not None:
        # the front end reads this key first and rewrites some values (auto, …): the classes see the rest
        rewritten = front_end_rewrites(branch, key)
        ordered = (*ordered, *sorted(rewritten - set(ordered))) if rewritten else None
    if coercion is not None:
        validator, outcome = coercion
        return ValueCheck(
            key, class_name, field.field, "text", None, outcome.case_insensitive, None,
            tuple(str(item) for item in outcome.allowed_values or ()), outcome.coerces_to, outcome.message,
            major, validator.source,
        )  # fmt: skip
    if ordered is not None:
        source = next((v.source for v, o in outcomes if o.kind == "error" and o.allowed_values), field.source)
        return ValueCheck(
            key,
            class_name,
            field.field,
            "values",
            ordered,
            case_insensitive,
            message,
            None,
            None,
            None,
            major,
            source,
        )
    kind = _kind(field.annotation)
    if kind in ("int", "float", "bool") and field.field not in before and not java_parses:
        return ValueCheck(
            key, class_name, field.field, kind, None, False, None, None, None, None, major, field.source
        )
    return None


def _in_source_order(
    field: PropertyField, accepted: frozenset[str], outcomes: list[tuple[Validator, Any]]
) -> tuple[str, ...]:
    order: list[str] = [str(item) for item in field.allowed or ()]
    for _validator, outcome in outcomes:
        order.extend(str(item) for item in outcome.allowed_values or ())
    seen: list[str] = []
    for item in order:
        if item in accepted and item not in seen:
            seen.append(item)
    return tuple(seen + sorted(accepted - set(seen)))


def _before_validated(catalogue: DjlCatalogue, class_name: str, branch: str) -> set[str]:
    """Fields a ``before`` validator sees as the raw string (it may parse it its own way)."""
    found: set[str] = set()
    for validator in catalogue.validators_of(class_name, branch):
        if validator.mode == "before" and validator.decorator in ("field_validator", "validator"):
            found.update(validator.fields)
    return found


@cache
def pydantic_major(catalogue: DjlCatalogue, branch: str) -> int:
    """1 where the classes use pydantic v1 validators (``validator`` / ``root_validator``), else 2."""
    decorators = {v.decorator for v in catalogue.validators if catalogue.holds_at(v, branch)}
    return 2 if decorators & {"field_validator", "model_validator"} else 1


_EQUALS = re.compile(r'"(?P<value>[^"]+)"\.equals\((?P<variable>\w+)\)')


@cache
def front_end_rewrites(branch: str, key: str) -> frozenset[str]:
    """Values of a key the recommender tests for and replaces before Python sees them
    (``option.rolling_batch``: ``auto``, and ``lmi-dist`` from 0.33): the variable read from the key
    compared with a literal in a condition of an assignment to that variable."""
    catalogue = djl_catalogue()
    found: set[str] = set()
    for method in catalogue.recommender:
        if not catalogue.holds_at(method, branch):
            continue
        variables = {item.variable for item in method.assignments if item.variable}
        if not any(read.key == key for read in method.reads):
            continue
        for item in method.assignments:
            for condition in item.when:
                for match in _EQUALS.finditer(condition):
                    if match["variable"] in variables and match["variable"] == item.variable:
                        found.add(match["value"])
    return frozenset(found)


@cache
def front_end_keys(branch: str) -> frozenset[str]:
    """``option.*`` keys the Java recommender reads or writes on a branch: it parses them first."""
    catalogue = djl_catalogue()
    keys: set[str] = set()
    for method in catalogue.recommender:
        if catalogue.holds_at(method, branch):
            keys.update(item.key for item in (*method.reads, *method.writes) if item.key)
    return frozenset(key for key in keys if key.startswith("option."))


def handler_at(module: str, release: Release) -> tuple[bool, str] | None:
    """Whether a handler module (an ``option.entryPoint``) is in a release's code, and the releases
    that have it (``"0.33.0 (LMI v15); 0.35.0 (LMI v17) to master"``); None where the generated
    catalogue does not speak (a module it never saw as a handler, a release before the oldest branch)."""
    catalogue = djl_catalogue()
    branches = [b for b in catalogue.module_branches(module) if catalogue.module_at(module, b).handler]  # type: ignore[union-attr]
    branch = catalogue.branch_of(release)
    if not branches or branch is None:
        return None
    return branch in branches, spans_text(catalogue, branches)


def spans_text(catalogue: DjlCatalogue, branches: list[str]) -> str:
    """Consecutive branches as ranges: ``"0.33.0 (LMI v15); 0.35.0 (LMI v17) to master"``."""
    runs: list[list[str]] = []
    for branch in branches:
        if runs and catalogue.branch_index(branch) == catalogue.branch_index(runs[-1][-1]) + 1:
            runs[-1].append(branch)
        else:
            runs.append([branch])
    return "; ".join(catalogue.span_text(run[0], run[-1]) for run in runs)


UNREAD = "unread"  # linked_outcome: the release is older than every branch the generator read


def linked_outcome(link: dict[str, str], backend: str, release: Release) -> str | None:
    """The message of a validator's outcome as it runs on a backend's path at a release.

    ``link`` names the class, the validator and the start of the message; the validator counts only
    where one of the path's classes runs it as that class's (a subclass's override by the same name
    replaces it). None where it does not run at that release; ``UNREAD`` before the oldest branch.
    """
    catalogue = djl_catalogue()
    branch = catalogue.branch_of(release)
    if branch is None:
        return UNREAD
    for class_name in path_classes(backend) or (link["class"],):
        for validator in catalogue.validators_of(class_name, branch):
            if validator.name != link["name"] or validator.class_name != link["class"]:
                continue
            for outcome in validator.outcomes:
                if outcome.message and outcome.message.startswith(link["message"]):
                    return outcome.message
    return None


def backend_ids_with_classes() -> list[str]:
    """Backends whose handler path builds generated classes."""
    return [name for name in backends() if path_classes(name)]
