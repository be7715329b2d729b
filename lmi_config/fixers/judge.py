"""Judging fixes before a finding is emitted: the configuration with the fix applied is linted again;
the fix is kept only when its finding is gone and no error appears that was not there.

The advice a semantic finding prints is rendered from the fixes kept here, so the text, the JSON
``fix`` object, SARIF ``fixes`` and ``lint --fix`` all say the same thing.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from lmi_config.errors import InputError
from lmi_config.fixers.edits import Change, Edit, Fix, apply_edits, describe_changes
from lmi_config.fixers.fileformat import FORMAT_FIXERS, UNSAFE_FORMAT_FIXES
from lmi_config.fixers.locate import as_written, locate
from lmi_config.fixers.proposals import PROPOSERS, Proposals

if TYPE_CHECKING:
    from lmi_config.rules.base import Finding, LintUnit

Relint = Callable[[dict[str, str]], "list[Finding]"]
Verdict = Counter[tuple[str, str | None, str]]

MAX_JUDGED_PER_UNIT = 64  # re-lints per unit: a file of ten thousand bad lines is fixed over several passes
# re-linted bytes per unit: a file of megabytes is not judged (each re-lint of a million-line file costs as
# much as the lint itself: 4 MB made the hostile million-line case three lints long); real files are kilobytes
MAX_JUDGED_BYTES = 1_000_000
# findings whose fixes are sought per unit: fixers read an index of the file, not the file, so this only
# bounds a hostile file (a judged file is at most MAX_JUDGED_BYTES: about as many lines as this)
MAX_LOOKED_PER_UNIT = 100_000
MAX_ACCEPTED = 3  # a fix and two alternatives are enough advice


def _verdict(findings: list[Finding]) -> Verdict:
    return Counter((finding.code, finding.key, finding.severity) for finding in findings)


def _passes(fix: Fix, before: Verdict, after: Verdict, severity: str) -> bool:
    """The finding's own problem is gone and no new error appears — nor, for a warning's fix, a new
    warning: trading one warning for another lets two fixes undo each other (TP 2 → 4 → 2), while
    an error's fix may leave a warning (fewer errors, then fewer warnings: ``--fix`` terminates)."""
    return _pass_together([(fix, severity)], before, after)


def _pass_together(fixes: list[tuple[Fix, str]], before: Verdict, after: Verdict) -> bool:
    """:func:`_passes` for fixes applied together: of each rule, at least as many findings are gone
    as fixes were made for it, and no new problem appears (a new warning counts unless every fix
    is an error's)."""

    def count(verdict: Verdict, code: str) -> int:
        # by code, not key: a finding reported on the TP line for want of its own key (max_model_len
        # unset) moves to the key once the fix writes it, and must not count as gone there
        return sum(n for (each, _, _), n in verdict.items() if each == code)

    made = Counter(fix.code for fix, _ in fixes)
    if any(count(before, code) - count(after, code) < number for code, number in made.items()):
        return False
    counted = ("error",) if all(severity == "error" for _, severity in fixes) else ("error", "warning")
    return not any(item[2] in counted and n > before.get(item, 0) for item, n in after.items())


def _from_changes(unit: LintUnit, finding: Finding, changes: tuple[Change, ...], safe: bool) -> Fix | None:
    """The changes as line edits of one file (a fix that would touch two files is not offered)."""
    located = [locate(unit, change) for change in changes]
    if not located or any(item is None for item in located):
        return None
    paths = {item[0] for item in located if item is not None}
    edits = tuple(item[1] for item in located if item is not None)
    lines = [edit.line for edit in edits if edit.action != "append"]
    if len(paths) != 1 or len(lines) != len(set(lines)):
        return None
    path = paths.pop()
    shown = tuple(as_written(unit, change, path) for change in changes)
    return Fix(finding.code, finding.key, path, edits, safe, describe_changes(shown), changes)


def _editable(unit: LintUnit) -> dict[str, str]:
    """The texts of the unit's files that a fix may edit: bytes the text carries back exactly."""
    return {
        source.path: source.text
        for source in unit.sources
        if source.raw == source.text.encode("utf-8", errors="surrogatepass")
    }


def _candidates(unit: LintUnit, finding: Finding) -> tuple[list[Fix], Proposals | None]:
    """The fixes to judge for one semantic finding, nearest first, and the proposals they came from."""
    proposals = PROPOSERS[finding.code](unit, finding)
    if proposals is None:
        return [], None
    fixes = [_from_changes(unit, finding, changes, proposals.safe) for changes in proposals.candidates]
    return [fix for fix in fixes if fix is not None], proposals


def _advice(accepted: list[Fix]) -> str:
    """``set option.tensor_parallel_degree=4 (or 2, 1)``: the fix, then its alternatives."""
    first = accepted[0]
    others = accepted[1:]
    same_key = all(
        len(fix.changes) == 1
        and fix.changes[0].action == "set"
        and fix.changes[0].key == first.changes[0].key
        for fix in accepted
    ) and bool(first.changes)
    if not others:
        return first.description
    if same_key:
        return f"{first.description} (or {', '.join(fix.changes[0].value for fix in others)})"
    return " or ".join(fix.description for fix in accepted)


class _Judge:
    """Re-lints a unit with fixes applied, within a budget of re-lints."""

    def __init__(self, unit: LintUnit, relint: Relint) -> None:
        self.relint = relint
        self.texts = _editable(unit)
        size = sum(len(source.text) for source in unit.sources)
        self.looked = MAX_LOOKED_PER_UNIT
        self.budget = min(MAX_JUDGED_PER_UNIT, MAX_JUDGED_BYTES // max(size, 1))
        self.oversized = size > MAX_JUDGED_BYTES
        self._before: Verdict | None = None
        self.secret_values = unit.secret_values
        # the verdict of the unit with each fix's edits applied (None: unusable), judged once: the
        # findings of one key weigh the same candidates
        self._after: dict[tuple[str, tuple[Edit, ...]], Verdict | None] = {}

    def shows_secret(self, fix: Fix) -> bool:
        """A fix whose edits would print a credential in JSON or SARIF is not offered."""
        return any(value in edit.text for edit in fix.edits for value in self.secret_values)

    def before(self) -> Verdict:
        if self._before is None:
            self._before = _verdict(self.relint({}))
        return self._before

    def can_judge(self, fix: Fix) -> bool:
        """Whether :meth:`after` can give a verdict: judged already, or a re-lint is left."""
        return (fix.path, fix.edits) in self._after or self.budget > 0

    def after(self, fix: Fix) -> Verdict | None:
        """The unit's verdict with ``fix`` applied (a re-lint of the budget the first time)."""
        key = (fix.path, fix.edits)
        if key not in self._after:
            self.budget -= 1
            try:
                found = self.relint({fix.path: apply_edits(self.texts[fix.path], fix.edits)})
                self._after[key] = _verdict(found)
            except (ValueError, InputError):
                self._after[key] = None  # the edited file is unusable input: not a fix
        return self._after[key]

    def _pass(self, fixes: list[tuple[Fix, str]]) -> bool | None:
        """Whether the fixes pass applied together (one re-lint of the budget); None: unusable."""
        self.budget -= 1
        edits: dict[str, list[Edit]] = {}
        for fix, _ in fixes:
            edits.setdefault(fix.path, []).extend(fix.edits)
        try:
            after = self.relint({path: apply_edits(self.texts[path], found) for path, found in edits.items()})
        except (ValueError, InputError):
            return None  # an edited file is unusable input: not a fix
        return _pass_together(fixes, self.before(), _verdict(after))

    def accepts_together(self, fixes: list[tuple[int, Fix, str]]) -> tuple[list[tuple[int, Fix]], int]:
        """Judge fixes of disjoint lines with as few re-lints as it takes: all together first, then
        halves of a group that fails, down to single fixes (each judged as one fix alone is).
        Returns the accepted ones and how many the budget left unjudged."""
        if not fixes:
            return [], 0
        if self.budget <= 0:
            return [], len(fixes)
        if self._pass([(fix, severity) for _, fix, severity in fixes]):
            return [(index, fix) for index, fix, _ in fixes], 0
        if len(fixes) == 1:
            return [], 0
        half = len(fixes) // 2
        first, first_left = self.accepts_together(fixes[:half])
        second, second_left = self.accepts_together(fixes[half:])
        return first + second, first_left + second_left


class Judged(NamedTuple):
    """The findings with their judged fixes, and how many findings that may have a fix were not
    judged: the re-lints of one lint are bounded (a file of thousands of slips is fixed by
    ``--fix`` over several passes, and a plain lint says how many it did not judge)."""

    findings: list[Finding]
    unjudged: int
    oversized: bool = False  # the unit is over MAX_JUDGED_BYTES: nothing in it is ever judged


def attach_fixes(unit: LintUnit, findings: list[Finding], relint: Relint) -> Judged:
    """The findings with their judged fix attached, and semantic advice rendered from it.

    Semantic findings are judged first, one by one: in a file of many format slips, the budget of
    re-lints goes to the TP or the length before it goes to trailing blanks. Format fixes (line
    edits that keep what the user meant) are then judged together, a group per re-lint.
    """
    judge = _Judge(unit, relint)
    out = list(findings)
    sources = {source.path: source for source in unit.sources}
    unjudged = 0
    formats: list[int] = []
    proposed: dict[int, tuple[list[Fix], Proposals | None]] = {}
    for index, finding in enumerate(findings):
        source = sources.get(finding.path)
        if finding.code in FORMAT_FIXERS and source is not None and source.kind in ("properties", "env"):
            formats.append(index)
        elif finding.code in PROPOSERS:
            if judge.looked <= 0:
                unjudged += 1
                continue
            judge.looked -= 1
            proposed[index] = _candidates(unit, finding)
    for index, (own, proposals) in proposed.items():
        pool = _shared_candidates(index, proposed)
        out[index], cut_short = _judged(judge, findings[index], own, pool, proposals)
        unjudged += cut_short
    candidates: list[tuple[int, Fix, str]] = []
    for index in formats:
        finding = findings[index]
        if judge.looked <= 0 or judge.budget <= 0:
            unjudged += 1
            continue
        judge.looked -= 1
        fix = FORMAT_FIXERS[finding.code](sources[finding.path], finding)
        if fix is not None and fix.path in judge.texts and not judge.shows_secret(fix):
            candidates.append((index, fix, finding.severity))
    while candidates:
        group, candidates = _disjoint(candidates)
        accepted, left = judge.accepts_together(group)
        unjudged += left
        for index, fix in accepted:
            out[index] = findings[index]._replace(fix=fix)
    return Judged(out, unjudged, oversized=unjudged > 0 and judge.oversized)


def _disjoint(
    fixes: list[tuple[int, Fix, str]],
) -> tuple[list[tuple[int, Fix, str]], list[tuple[int, Fix, str]]]:
    """The fixes that touch lines no earlier one touches, and the rest (judged as a later group)."""
    touched: set[tuple[str, int]] = set()
    group, rest = [], []
    for item in fixes:
        lines = {(item[1].path, edit.line) for edit in item[1].edits}
        if lines & touched:
            rest.append(item)
            continue
        touched |= lines
        group.append(item)
    return group, rest


def _shared_candidates(index: int, proposed: dict[int, tuple[list[Fix], Proposals | None]]) -> list[Fix]:
    """The candidates of every finding whose candidates change a key this finding's change, in one
    order for all of them (the findings' order, each finding's nearest first): every finding of
    one key weighs the same values in the same order, so that each offers the one that leaves the
    file with the fewest problems (TP 8, which clears memory and heads alike, not TP 2, which
    clears the heads and leaves the memory error)."""
    keys = {change.key for fix in proposed[index][0] for change in fix.changes}
    return [
        fix
        for other in sorted(proposed)
        for fix in proposed[other][0]
        if other == index or keys & {change.key for change in fix.changes}
    ]


def _judged(
    judge: _Judge, finding: Finding, own: list[Fix], pool: list[Fix], proposals: Proposals | None
) -> tuple[Finding, bool]:
    """One finding with its fix and its advice; and whether the budget ran out before any of its
    fixes could be judged. Of the candidates (:func:`_shared_candidates`), those that remove the
    finding and add no error are kept, the ones that leave the fewest errors first, then the fewest
    warnings, then in the shared order: the first is the fix, the next are the alternatives."""
    scored: list[tuple[int, int, int, Fix]] = []
    seen: set[tuple[Change, ...]] = set()
    exhausted = False
    for rank, candidate in enumerate(pool):
        fix = candidate._replace(code=finding.code, key=finding.key)
        if fix.changes in seen or fix.path not in judge.texts or judge.shows_secret(fix):
            continue
        seen.add(fix.changes)
        if not judge.can_judge(fix):
            exhausted = True
            break
        after = judge.after(fix)
        if after is not None and _passes(fix, judge.before(), after, finding.severity):
            errors = sum(n for (_, _, severity), n in after.items() if severity == "error")
            warnings = sum(n for (_, _, severity), n in after.items() if severity == "warning")
            scored.append((errors, warnings, rank, fix))
    accepted = [fix for *_, fix in sorted(scored, key=lambda item: item[:3])][:MAX_ACCEPTED]
    exhausted = exhausted and not accepted
    if proposals is not None and not exhausted:
        advice = _advice(accepted) if accepted else proposals.fallback
        if accepted and proposals.supersedes and proposals.supersedes in finding.message:
            # the rule said it in words; the judged edits say it once, in their own words
            finding = finding._replace(message=finding.message.replace(proposals.supersedes, advice, 1))
        elif advice and advice not in finding.message:  # a rule that already names the change says it once
            finding = finding._replace(message=f"{finding.message}; {advice}")
    if accepted:
        fix = accepted[0]._replace(alternatives=tuple(other.description for other in accepted[1:]))
        finding = finding._replace(fix=fix)
    return finding, exhausted and bool(own)


def describe_fix(code: str) -> str | None:
    """What ``--fix`` does for findings of rule ``code`` (a rule page's Fix section), None when nothing."""
    format_fixer = FORMAT_FIXERS.get(code)
    proposer = PROPOSERS.get(code)
    function = format_fixer or proposer
    if function is None or not function.__doc__:
        return None
    first_sentence = " ".join(function.__doc__.split()).split(". ")[0].rstrip(".")
    what = re.sub(r"^LMI\d+: ", "", first_sentence)
    safe = format_fixer is not None and code not in UNSAFE_FORMAT_FIXES
    flag = (
        "`lmi-config lint --fix`"
        if safe
        else "`lmi-config lint --fix --unsafe-fixes` (it changes what the container does)"
    )
    return (
        f"{what[0].upper()}{what[1:]}. Each fix is judged before it is offered (the finding goes, no error comes); "
        f"the finding's advice, its JSON `fix` and SARIF `fixes` show it, and {flag} applies it."
    )
