"""The container's own option rules (``data/djl_properties.json``), generated from djl-serving's code.

``scripts/gen_djl_options.py`` reads every release branch of deepjavalibrary/djl-serving: the
pydantic classes under ``djl_python/properties_manager`` (fields, validators and their messages),
the handler modules, and ``LmiConfigRecommender.java``. Each entry holds for a run of consecutive
branches (``first`` .. ``last``) and cites the file and line at the commit of its first branch.

This module is the typed view of that file: loading validates it (unknown keys, branches that do
not exist, a source that is not at the first branch's commit are errors), and the queries answer
per branch, with inheritance, as pydantic would build the class.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from lmi_config.knowledge import load_data

SOURCE_URL = re.compile(
    r"^https://github\.com/deepjavalibrary/djl-serving/blob/(?P<commit>[0-9a-f]{40})/\S+#L\d+$"
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class DjlRelease(_Strict):
    """One release branch and the DJL version / LMI number it ships as."""

    branch: str
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    djl: str | None
    lmi: str | None
    in_releases_json: bool

    def label(self) -> str:
        """``"0.33.0 (LMI v15)"``; the branch name when it is not a release."""
        if self.branch == "master":
            return "master"
        return f"{self.djl} (LMI v{self.lmi})" if self.lmi else str(self.djl)


class _Ranged(_Strict):
    first: str
    last: str
    source: str = Field(pattern=SOURCE_URL.pattern)


class PropertiesClass(_Ranged):
    """A pydantic class the Python engine builds from the ``option.*`` keys."""

    class_name: str = Field(alias="class")
    module: str
    bases: list[str]
    extra: Literal["ignore", "allow", "forbid"]
    extra_declared_here: bool
    populate_by_name: bool
    backends: list[str]


class PropertyField(_Ranged):
    """One field: the option ``option.<field>`` (or its alias)."""

    class_name: str = Field(alias="class")
    field: str
    annotation: str
    allowed: list[Any] | None
    alias: str | None
    required: bool
    default: Any
    default_expression: str | None
    default_env: str | None


class Outcome(_Strict):
    """What a validator does: raise (error), log (warning), or log and replace the value (coercion)."""

    kind: Literal["error", "warning", "coercion"]
    exception: str | None
    message: str | None
    when: list[str]
    via: str | None
    subject: str | None
    allowed_values: list[Any] | None
    case_insensitive: bool
    coerces_to: Any


class Validator(_Ranged):
    """A pydantic validator, or another method that raises, with its outcomes."""

    class_name: str = Field(alias="class")
    name: str
    decorator: Literal["field_validator", "model_validator", "validator", "root_validator", "method"]
    fields: list[str]
    mode: str | None
    reads: list[str]
    outcomes: list[Outcome]


class ExtraKey(_Ranged):
    """A key a class reads from ``__pydantic_extra__`` (not a field, still an option)."""

    class_name: str = Field(alias="class")
    key: str
    methods: list[str]
    default: Any
    conversion: Literal["int", "float", "json", "bool"] | None


class HandlerModule(_Ranged):
    """A Python module: an entry point (top-level ``handle``) and the classes it instantiates."""

    module: str
    handler: bool
    instantiates: list[str]


class JavaItem(_Strict):
    """A read, write, environment read or literal assignment in a recommender method."""

    key: str | None = None
    name: str | None = None
    variable: str | None = None
    call: str | None = None
    value: Any = None
    default: Any = None
    when: list[str]


class RecommenderMethod(_Ranged):
    """One method of LmiConfigRecommender.java, with the ``if`` conditions around each item."""

    method: str
    reads: list[JavaItem]
    writes: list[JavaItem]
    assignments: list[JavaItem]
    environment: list[JavaItem]


class RecommenderMap(_Ranged):
    """A constant ``Map.ofEntries`` of the recommender (model type -> rolling batch)."""

    name: str
    entries: dict[str, str]


class RecommenderDefault(_Ranged):
    """A value the recommender writes per rolling batch (``*``: any), where its test is plain."""

    key: str
    rolling_batch: str
    value: Any


_ENTRY_LISTS = (
    "classes", "fields", "validators", "extra_keys", "modules",
    "recommender", "recommender_maps", "recommender_defaults",
)  # fmt: skip


class DjlCatalogue(_Strict):
    """The whole generated catalogue, with per-branch queries."""

    source: str
    releases: list[DjlRelease]
    classes: list[PropertiesClass]
    fields: list[PropertyField]
    validators: list[Validator]
    extra_keys: list[ExtraKey]
    modules: list[HandlerModule]
    recommender: list[RecommenderMethod]
    recommender_maps: list[RecommenderMap]
    recommender_defaults: list[RecommenderDefault]

    @model_validator(mode="after")
    def _ranges_and_sources_are_consistent(self) -> DjlCatalogue:
        order = {release.branch: index for index, release in enumerate(self.releases)}
        commits = {release.branch: release.commit for release in self.releases}
        for name in _ENTRY_LISTS:
            for entry in getattr(self, name):
                if entry.first not in order or entry.last not in order:
                    raise ValueError(f"{name}: unknown branch in {entry.first}..{entry.last}")
                if order[entry.first] > order[entry.last]:
                    raise ValueError(f"{name}: {entry.first} comes after {entry.last}")
                match = SOURCE_URL.match(entry.source)
                if match is None or match["commit"] != commits[entry.first]:
                    raise ValueError(f"{name}: {entry.source} is not at the commit of {entry.first}")
        return self

    # --- branches ---------------------------------------------------------------------------

    def branch_index(self, branch: str) -> int:
        """Position of a branch in release order (``KeyError`` for an unknown branch)."""
        return self._order()[branch]

    def _order(self) -> dict[str, int]:
        return {release.branch: index for index, release in enumerate(self.releases)}

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

    def holds_at(self, entry: _Ranged, branch: str) -> bool:
        """Whether the entry's range covers the branch."""
        index = self.branch_index(branch)
        return self.branch_index(entry.first) <= index <= self.branch_index(entry.last)

    def range_text(self, entry: _Ranged) -> str:
        """``"0.28.0 (LMI v10) to 0.34.0 (LMI v16)"``."""
        first, last = self.release(entry.first).label(), self.release(entry.last).label()
        return first if first == last else f"{first} to {last}"

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
        result: dict[str, PropertyField] = {}
        for owner in self.lineage(class_name, branch):
            for entry in self.fields:
                if entry.class_name == owner.class_name and self.holds_at(entry, branch):
                    result[entry.field] = entry
        return result

    def validators_of(self, class_name: str, branch: str) -> list[Validator]:
        """Validators that run for the class on a branch (inherited; an override by name replaces)."""
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
    """The generated catalogue, validated (cached)."""
    return DjlCatalogue.model_validate(load_data("djl_properties.json"))
