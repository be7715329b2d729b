"""The container's own option rules (``data/djl_properties.json``), generated from djl-serving's code.

``scripts/gen_djl_options.py`` reads every release branch of deepjavalibrary/djl-serving: the
pydantic classes under ``djl_python/properties_manager`` (fields, validators and their messages),
the handler modules, and ``LmiConfigRecommender.java``. Each entry holds for a run of consecutive
branches (``first`` .. ``last``) and cites the file and line at the commit of its first branch.

This module is the typed view of that file, built with named tuples: the lint path reads it,
and pydantic stays off that path. Building checks the shape of every row (an unknown or missing
key is a ``ValueError``); the schema test (``knowledge/schemas.py``) also checks that every range
names known branches in order and every source is at its first branch's commit. The queries
answer per branch, with inheritance, as pydantic would build the class.
"""

from __future__ import annotations

from functools import cache, cached_property
from typing import Any, NamedTuple, TypeVar

from lmi_config.knowledge import Release, load_data

Row = dict[str, Any]
_Item = TypeVar("_Item")


class DjlRelease(NamedTuple):
    """One release branch and the DJL version / LMI number it ships as."""

    branch: str
    commit: str
    djl: str | None
    lmi: str | None
    in_releases_json: bool

    def label(self) -> str:
        """``"0.33.0 (LMI v15)"``; the branch name when it is not a release."""
        if self.branch == "master":
            return "master"
        return f"{self.djl} (LMI v{self.lmi})" if self.lmi else str(self.djl)


class PropertiesClass(NamedTuple):
    """A pydantic class the Python engine builds from the ``option.*`` keys."""

    class_name: str
    module: str
    bases: tuple[str, ...]
    extra: str  # ignore | allow | forbid
    extra_declared_here: bool
    populate_by_name: bool
    backends: tuple[str, ...]
    first: str
    last: str
    source: str


class PropertyField(NamedTuple):
    """One field: the option ``option.<field>`` (or its alias)."""

    class_name: str
    field: str
    annotation: str
    allowed: tuple[Any, ...] | None
    alias: str | None
    required: bool
    default: Any
    default_expression: str | None
    default_env: str | None
    first: str
    last: str
    source: str


class Outcome(NamedTuple):
    """What a validator does: raise (error), log (warning), or log and replace the value (coercion)."""

    kind: str  # error | warning | coercion
    exception: str | None
    message: str | None
    when: tuple[str, ...]
    via: str | None
    subject: str | None
    allowed_values: tuple[Any, ...] | None
    case_insensitive: bool
    coerces_to: Any


class Validator(NamedTuple):
    """A pydantic validator, or another method that raises, with its outcomes."""

    class_name: str
    name: str
    decorator: str
    fields: tuple[str, ...]
    mode: str | None
    reads: tuple[str, ...]
    outcomes: tuple[Outcome, ...]
    first: str
    last: str
    source: str


class ExtraKey(NamedTuple):
    """A key a class reads from ``__pydantic_extra__`` (not a field, still an option)."""

    class_name: str
    key: str
    methods: tuple[str, ...]
    default: Any
    conversion: str | None  # int | float | json | bool
    first: str
    last: str
    source: str


class HandlerModule(NamedTuple):
    """A Python module: an entry point (top-level ``handle``) and the classes it instantiates."""

    module: str
    handler: bool
    instantiates: tuple[str, ...]
    first: str
    last: str
    source: str


class JavaItem(NamedTuple):
    """A read, write, environment read or literal assignment in a recommender method."""

    when: tuple[str, ...]
    key: str | None = None
    name: str | None = None
    variable: str | None = None
    call: str | None = None
    value: Any = None
    default: Any = None


class RecommenderMethod(NamedTuple):
    """One method of LmiConfigRecommender.java, with the ``if`` conditions around each item."""

    method: str
    reads: tuple[JavaItem, ...]
    writes: tuple[JavaItem, ...]
    assignments: tuple[JavaItem, ...]
    environment: tuple[JavaItem, ...]
    first: str
    last: str
    source: str


class RecommenderMap(NamedTuple):
    """A constant ``Map.ofEntries`` of the recommender (model type -> rolling batch)."""

    name: str
    entries: dict[str, str]
    first: str
    last: str
    source: str


class RecommenderDefault(NamedTuple):
    """A value the recommender writes per rolling batch (``*``: any), where its test is plain."""

    key: str
    rolling_batch: str
    value: Any
    first: str
    last: str
    source: str


Ranged = (
    PropertiesClass
    | PropertyField
    | Validator
    | ExtraKey
    | HandlerModule
    | RecommenderMethod
    | RecommenderMap
    | RecommenderDefault
)


def _tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _build(kind: type[_Item], row: Row, where: str, **nested: Any) -> _Item:
    """One dataclass from one row: every key known, every required one present (else ValueError)."""
    names: tuple[str, ...] = kind._fields  # type: ignore[attr-defined]
    values: dict[str, Any] = {}
    for key, value in row.items():
        name = "class_name" if key == "class" else key
        if name not in names:
            raise ValueError(f"{where}: unknown key {key!r}")
        values[name] = nested[name](value) if name in nested else _tuple(value)
    optional = kind._field_defaults  # type: ignore[attr-defined]
    missing = [name for name in names if name not in values and name not in optional]
    if missing:
        raise ValueError(f"{where}: missing {', '.join(missing)}")
    return kind(**values)


def _java_items(where: str) -> Any:
    return lambda rows: tuple(_build(JavaItem, row, where) for row in rows)


class DjlCatalogue:
    """The whole generated catalogue, with per-branch queries (lists built when first asked for)."""

    def __init__(self, document: Row) -> None:
        self.document = document
        self.source: str = document["source"]
        self.releases = tuple(
            _build(DjlRelease, row, f"releases[{index}]") for index, row in enumerate(document["releases"])
        )
        self._order = {release.branch: index for index, release in enumerate(self.releases)}
        self._branches: dict[tuple[str, str | None], str | None] = {}
        # per-branch answers of the pure queries below
        self._fields_memo: dict[tuple[str, str], dict[str, PropertyField]] = {}
        self._validators_memo: dict[tuple[str, str], list[Validator]] = {}

    def _entries(self, name: str, kind: type[_Item], **nested: Any) -> tuple[_Item, ...]:
        return tuple(
            _build(kind, row, f"{name}[{index}]", **nested) for index, row in enumerate(self.document[name])
        )

    @cached_property
    def classes(self) -> tuple[PropertiesClass, ...]:
        """Every properties class entry."""
        return self._entries("classes", PropertiesClass)

    @cached_property
    def fields(self) -> tuple[PropertyField, ...]:
        """Every field entry."""
        return self._entries("fields", PropertyField)

    @cached_property
    def validators(self) -> tuple[Validator, ...]:
        """Every validator entry, with its outcomes."""
        outcomes = lambda rows: tuple(  # noqa: E731
            _build(Outcome, row, "validators.outcomes") for row in rows
        )
        return self._entries("validators", Validator, outcomes=outcomes)

    @cached_property
    def extra_keys(self) -> tuple[ExtraKey, ...]:
        """Every key read from ``__pydantic_extra__``."""
        return self._entries("extra_keys", ExtraKey)

    @cached_property
    def modules(self) -> tuple[HandlerModule, ...]:
        """Every handler / instantiating module entry."""
        return self._entries("modules", HandlerModule)

    @cached_property
    def recommender(self) -> tuple[RecommenderMethod, ...]:
        """Every recommender method entry."""
        items = _java_items("recommender")
        return self._entries(
            "recommender",
            RecommenderMethod,
            reads=items,
            writes=items,
            assignments=items,
            environment=items,
        )

    @cached_property
    def recommender_maps(self) -> tuple[RecommenderMap, ...]:
        """The recommender's constant maps."""
        return self._entries("recommender_maps", RecommenderMap, entries=dict)

    @cached_property
    def recommender_defaults(self) -> tuple[RecommenderDefault, ...]:
        """Values the recommender writes per rolling batch."""
        return self._entries("recommender_defaults", RecommenderDefault)

    # --- branches ---------------------------------------------------------------------------

    def branch_index(self, branch: str) -> int:
        """Position of a branch in release order (``KeyError`` for an unknown branch)."""
        return self._order[branch]

    def release(self, branch: str) -> DjlRelease:
        """The release row of a branch."""
        return self.releases[self.branch_index(branch)]

    def branch_for(self, djl: str, lmi: str | None = None) -> str:
        """The branch of a DJL version (and LMI number): ``("0.33.0", None)`` -> ``0.33.0-dlc``."""
        matches = [
            r
            for r in self.releases
            if r.djl == djl and (lmi is None or r.lmi == lmi) and r.branch != "master"
        ]
        if not matches:
            raise KeyError(f"no release branch for DJL {djl} LMI {lmi}")
        return matches[0].branch

    def branch_of(self, release: Release) -> str | None:
        """The branch whose code a release runs: its own; ``master`` for a release newer than every
        branch; None before the oldest branch (the generator does not read those)."""
        key = (release.djl, release.lmi)
        if key not in self._branches:
            self._branches[key] = self._branch_of(release)
        return self._branches[key]

    def _branch_of(self, release: Release) -> str | None:
        from lmi_config.knowledge.container_options import branch_of_release

        rows = [(r.branch, r.djl, r.lmi) for r in self.releases]
        return branch_of_release(rows, release.djl, release.lmi)

    def holds_at(self, entry: Ranged, branch: str) -> bool:
        """Whether the entry's range covers the branch."""
        index = self._order[branch]
        return self._order[entry.first] <= index <= self._order[entry.last]

    def range_text(self, entry: Ranged) -> str:
        """``"0.28.0 (LMI v10) to 0.34.0 (LMI v16)"``."""
        return self.span_text(entry.first, entry.last)

    def span_text(self, first: str, last: str) -> str:
        """``"0.28.0 (LMI v10) to 0.34.0 (LMI v16)"`` for two branches."""
        first_label, last_label = self.release(first).label(), self.release(last).label()
        return first_label if first_label == last_label else f"{first_label} to {last_label}"

    # --- classes ----------------------------------------------------------------------------

    def class_at(self, class_name: str, branch: str) -> PropertiesClass | None:
        """The class as it is on a branch, None where it does not exist."""
        return next(
            (c for c in self.classes if c.class_name == class_name and self.holds_at(c, branch)), None
        )

    def lineage(self, class_name: str, branch: str) -> list[PropertiesClass]:
        """The class and its bases among the properties classes, base first."""
        found = self.class_at(class_name, branch)
        if found is None:
            return []
        chain: list[PropertiesClass] = []
        for base in found.bases:
            chain.extend(self.lineage(base.split(".")[-1], branch))
        return [*chain, found]

    def fields_of(self, class_name: str, branch: str) -> dict[str, PropertyField]:
        """Every field of the class on a branch, inherited ones too (a subclass's own wins)."""
        key = (class_name, branch)
        if key not in self._fields_memo:
            self._fields_memo[key] = self._fields_of(class_name, branch)
        return self._fields_memo[key]

    def _fields_of(self, class_name: str, branch: str) -> dict[str, PropertyField]:
        result: dict[str, PropertyField] = {}
        for owner in self.lineage(class_name, branch):
            for entry in self.fields:
                if entry.class_name == owner.class_name and self.holds_at(entry, branch):
                    result[entry.field] = entry
        return result

    def validators_of(self, class_name: str, branch: str) -> list[Validator]:
        """Validators that run for the class on a branch (inherited; an override by name replaces)."""
        key = (class_name, branch)
        if key not in self._validators_memo:
            self._validators_memo[key] = self._validators_of(class_name, branch)
        return self._validators_memo[key]

    def _validators_of(self, class_name: str, branch: str) -> list[Validator]:
        result: dict[str, Validator] = {}
        for owner in self.lineage(class_name, branch):
            for entry in self.validators:
                if entry.class_name == owner.class_name and self.holds_at(entry, branch):
                    result[entry.name] = entry
        return list(result.values())

    def outcomes_for(self, class_name: str, field: str, branch: str) -> list[tuple[Validator, Outcome]]:
        """Outcomes whose subject is the field (the value itself is checked), on a branch."""
        return [
            (validator, outcome)
            for validator in self.validators_of(class_name, branch)
            for outcome in validator.outcomes
            if outcome.subject == field
        ]

    def accepted_values(self, class_name: str, field: str, branch: str) -> tuple[frozenset[str] | None, bool]:
        """Values of the field the class lets through, and whether they are compared lower-cased.

        The intersection of the annotation's Enum / Literal values and every error outcome's listed
        values. A ``before`` validator that coerces unknown values (transformers-neuronx
        ``rolling_batch``) runs ahead of the annotation, so then the annotation does not reject.
        None: the code lists no values.
        """
        field_entry = self.fields_of(class_name, branch).get(field)
        checks = self.outcomes_for(class_name, field, branch)
        coerced_first = any(o.kind == "coercion" and v.mode == "before" for v, o in checks)
        sets: list[frozenset[str]] = []
        if field_entry is not None and field_entry.allowed and not coerced_first:
            sets.append(frozenset(str(value) for value in field_entry.allowed))
        case_insensitive = False
        for _validator, outcome in checks:
            if outcome.kind == "error" and outcome.allowed_values is not None:
                sets.append(frozenset(str(value) for value in outcome.allowed_values))
                case_insensitive = case_insensitive or outcome.case_insensitive
        if not sets:
            return None, False
        return frozenset.intersection(*sets), case_insensitive

    def extra_keys_of(self, class_name: str, branch: str) -> dict[str, ExtraKey]:
        """Keys read from ``__pydantic_extra__`` on a branch."""
        return {e.key: e for e in self.extra_keys if e.class_name == class_name and self.holds_at(e, branch)}

    # --- modules and the recommender ---------------------------------------------------------

    def module_at(self, module: str, branch: str) -> HandlerModule | None:
        """A handler / instantiating module on a branch, None where it does not exist."""
        return next((m for m in self.modules if m.module == module and self.holds_at(m, branch)), None)

    def recommender_method(self, method: str, branch: str) -> RecommenderMethod | None:
        """One LmiConfigRecommender method on a branch."""
        return next((m for m in self.recommender if m.method == method and self.holds_at(m, branch)), None)

    def recommender_default(self, key: str, rolling_batch: str, branch: str) -> Any:
        """The value the recommender writes for a rolling batch (falls back to ``*``), else None."""
        for wanted in (rolling_batch, "*"):
            for entry in self.recommender_defaults:
                if entry.key == key and entry.rolling_batch == wanted and self.holds_at(entry, branch):
                    return entry.value
        return None


@cache
def djl_catalogue() -> DjlCatalogue:
    """The generated catalogue (cached)."""
    return DjlCatalogue(load_data("djl_properties.json"))
