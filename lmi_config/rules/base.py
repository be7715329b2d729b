"""Rules, findings and the unit a rule checks.

A rule is a small generator function registered with :func:`rule`: its code, slug,
severity, a one-line summary, why it matters, a bad and a good example (run by the test
suite), and the source that states it. The linter core knows no rule by name.
"""

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from lmi_config.secrets import redact

if TYPE_CHECKING:
    from lmi_config.configfile.canonical import CanonicalConfig, Setting
    from lmi_config.configfile.loader import LintTarget, SourceFile
    from lmi_config.context import Context, Pragmas
    from lmi_config.fixers.edits import Fix
    from lmi_config.shape import Assessment, Problem


class Example(NamedTuple):
    """A configuration that shows a rule: ``text`` of ``kind`` linted with ``args``."""

    text: str
    kind: str = "properties"  # properties | env | json
    args: Mapping[str, str] = MappingProxyType({})  # backend, lmi_version, instance, model
    paired_env: str | None = None  # an env file the container sees together with ``text``


class Finding(NamedTuple):
    """One problem, as the stable interface reports it."""

    path: str
    line: int | None
    code: str
    rule: str
    severity: str
    message: str
    key: str | None = None
    fix: "Fix | None" = None  # the judged fix (lmi_config.fixers), None when none passes the judge

    def as_dict(self) -> dict[str, object]:
        """The finding as ``--format json`` prints it (``fix``: null when none is offered)."""
        return {
            "path": self.path,
            "line": self.line,
            "code": self.code,
            "rule": self.rule,
            "severity": self.severity,
            "message": self.message,
            "key": self.key,
            "fix": self.fix.as_dict() if self.fix is not None else None,
        }


class Rule(NamedTuple):
    """A documented check."""

    code: str
    slug: str
    severity: str
    summary: str
    why: str
    bad: Example
    good: Example
    source: str
    check: "Callable[[LintUnit], Iterable[Finding]]"
    category: str


REGISTRY: dict[str, Rule] = {}


def rule(
    *,
    code: str,
    slug: str,
    severity: str,
    summary: str,
    why: str,
    bad: Example,
    good: Example,
    source: str,
) -> "Callable[[Callable[[LintUnit], Iterable[Finding]]], Callable[[LintUnit], Iterable[Finding]]]":
    """Register a check function as a rule."""

    def register(
        function: Callable[[LintUnit], Iterable[Finding]],
    ) -> Callable[[LintUnit], Iterable[Finding]]:
        if code in REGISTRY or any(existing.slug == slug for existing in REGISTRY.values()):
            raise ValueError(f"duplicate rule {code} {slug}")
        category = function.__module__.rsplit(".", 1)[-1]
        REGISTRY[code] = Rule(code, slug, severity, summary, why, bad, good, source, function, category)
        return function

    return register


@dataclass(repr=False, eq=False)
class LintUnit:
    """What the rules look at: the files, the merged configuration and its target."""

    target: "LintTarget"
    config: "CanonicalConfig"
    context: "Context"
    pragmas: "Pragmas"
    applied_translations: "list[tuple[str, str, Setting]]" = field(default_factory=list)
    assessment: "Assessment | None" = (
        None  # the judge's shape and verdict (memory when model and instance are known)
    )
    notes: list[str] = field(default_factory=list)

    @property
    def sources(self) -> "list[SourceFile]":
        return self.target.sources

    @property
    def primary_path(self) -> str:
        return self.target.primary.path

    @property
    def secret_values(self) -> frozenset[str]:
        """Values of credential variables in these files: never echoed in a message."""
        cached = getattr(self, "_secret_values", None)
        if cached is None:
            from lmi_config.secrets import is_secret_name

            values: set[str] = set()
            for source in self.sources:
                values.update(
                    value.strip()
                    for key, value, _ in source.assignments()
                    if value.strip() and is_secret_name(key)
                )
            cached = frozenset(values)
            self._secret_values = cached
        return cached

    def finding(
        self,
        code: str,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        key: str | None = None,
        severity: str | None = None,
        setting: "Setting | None" = None,
    ) -> Finding:
        """Build a finding of rule ``code`` (path and line from ``setting`` when given)."""
        registered = REGISTRY[code]
        if setting is not None:
            path = path or setting.origin.path
            line = line if line is not None else setting.origin.line
            key = key or setting.key
        return Finding(  # positional: a million findings are built faster so
            path or self.primary_path,
            line,
            code,
            registered.slug,
            severity or registered.severity,
            redact(message, self.secret_values),
            key,
        )

    def problems(self, check: str) -> "list[Problem]":
        """The judge's problems that one rule reports."""
        return self.assessment.of(check) if self.assessment is not None else []

    def report(self, code: str, problem: "Problem", *, suffix: str = "") -> Finding:
        """A finding of rule ``code`` for a problem of the verdict, on the line of the key it concerns."""
        setting = None
        if problem.key is not None:
            setting = self.config.settings.get(problem.key) or self.config.settings.get(
                "option.tensor_parallel_degree"
            )
        return self.finding(code, problem.message + suffix, severity=problem.severity, setting=setting)


def find_rule(name: str) -> Rule | None:
    """A rule by code (``LMI101``) or slug (``unknown-option``), case-insensitive."""
    wanted = name.strip()
    for registered in REGISTRY.values():
        if registered.code.lower() == wanted.lower() or registered.slug == wanted.lower():
            return registered
    return None


def iter_rules() -> Iterator[Rule]:
    """Rules in code order."""
    yield from sorted(REGISTRY.values(), key=lambda item: item.code)


def report_problems(unit: LintUnit, code: str, check: str) -> Iterator[Finding]:
    """Rule ``code``'s findings: the judge's problems of ``check`` (its slug), each reported as is."""
    for problem in unit.problems(check):
        yield unit.report(code, problem)
