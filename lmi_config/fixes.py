"""``lint --fix`` / ``--diff``: apply the fixes the findings carry, pass after pass, to a fixed point.

A fix is data on its finding (:mod:`lmi_config.fixers`): line edits of the file that holds the key,
judged before the finding was emitted (the finding is gone with the fix applied and no error
appears). Safe fixes keep what the container reads as the user meant it; unsafe ones (a misspelt key
renamed, a TP or length changed) change what the container does and need ``--unsafe-fixes``.
Comments, order, quoting, line endings and the file's mode are kept; files are written atomically;
fixing runs to a fixed point, so a second ``--fix`` changes nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lmi_config.configfile.loader import LintTarget, parse_source
from lmi_config.fixers.edits import Edit, Fix, apply_edits
from lmi_config.fixers.fileformat import FORMAT_FIXERS as FIXERS
from lmi_config.fixers.fileformat import is_misspelling
from lmi_config.fixers.judge import MAX_JUDGED_BYTES
from lmi_config.lint import lint_targets

if TYPE_CHECKING:
    from lmi_config.configfile.loader import SourceFile as Source
    from lmi_config.lint import LintOptions, LintResult
    from lmi_config.rules.base import Finding

__all__ = ["FIXERS", "Edit", "Fix", "FixResult", "apply_edits", "candidate_fixes", "is_misspelling"]

MAX_PASSES = 50  # each pass re-lints every file it changed: a cap on the work, said when reached


@dataclass
class FixResult:
    """Per file: the original and fixed text; per rule: how many fixes were applied; and what is
    left: fixes judged but not applied, and findings the judge did not get to, with why."""

    changed: dict[str, tuple[str, str]] = field(default_factory=dict)
    applied: Counter[str] = field(default_factory=Counter)
    # per file, the edits of each pass (line numbers of the text that pass started from): replaying
    # them on the original gives the fixed text, which shows that no other line changed
    passes: dict[str, list[tuple[Edit, ...]]] = field(default_factory=dict)
    read: dict[str, bytes] = field(default_factory=dict)  # per changed file, the bytes it was read as
    left: int = 0  # fixes still to apply once --fix stopped (only when it stopped at the pass cap)
    unjudged: int = 0  # findings that may have a fix the judge did not get to when --fix stopped
    stopped: str | None = None  # why --fix stopped short of its fixed point; None: it reached it
    written: list[str] = field(default_factory=list)  # the files written (two names of one file: once)
    final: bool = False  # running --fix again would not go further (what is left is not its to fix)

    @property
    def complete(self) -> bool:
        """Whether --fix reached its fixed point: nothing it could fix is left."""
        return self.stopped is None


def _sources(result: LintResult) -> dict[str, Source]:
    return {source.path: source for unit in result.units for source in unit.sources}


def candidate_fixes(result: LintResult, unsafe: bool) -> Iterator[tuple[Source, Finding, Fix]]:
    """The judged fixes the findings of ``result`` carry (safe ones, and unsafe ones with ``unsafe``)."""
    sources = _sources(result)
    for finding in result.findings:
        fix = finding.fix
        if fix is None or fix.path not in sources or not (fix.safe or unsafe):
            continue
        yield sources[fix.path], finding, fix


def _errors(result: LintResult) -> Counter[tuple[str, str, str | None]]:
    return Counter(
        (finding.path, finding.code, finding.key)
        for finding in result.findings
        if finding.severity == "error"
    )


def _fix_once(result: LintResult, unsafe: bool) -> dict[str, tuple[str, list[Fix]]]:
    """One pass: per file, the text with every non-overlapping fix applied, and the fixes."""
    by_file: dict[str, list[Fix]] = {}
    texts: dict[str, str] = {}
    for source, _finding, fix in candidate_fixes(result, unsafe):
        taken = by_file.setdefault(source.path, [])
        texts[source.path] = source.text
        touched = {edit.line for other in taken for edit in other.edits}
        if any(edit.line in touched for edit in fix.edits) or fix in taken:
            continue  # an overlapping fix waits for the next pass, judged again then
        taken.append(fix)
    return {
        path: (apply_edits(texts[path], tuple(edit for fix in fixes for edit in fix.edits)), fixes)
        for path, fixes in by_file.items()
        if fixes
    }


def _relint(result: LintResult, current: dict[str, str], options: LintOptions) -> LintResult:
    """Lint the same targets again with the fixed texts in place of the files' (nothing is written)."""
    targets = []
    for unit in result.units:
        sources = [
            parse_source(
                source.path,
                current[source.path].encode("utf-8", "surrogatepass"),
                source.directory,
                source.kind,
            )
            if source.path in current
            else source
            for source in unit.sources
        ]
        targets.append(LintTarget(sources))
    return lint_targets(targets, options)


def fix_to_fixed_point(result: LintResult, options: LintOptions, unsafe: bool) -> FixResult:
    """Fix pass after pass until nothing is left to fix; nothing is written.

    Fixes judged one by one are applied together; when together they add an error, the pass keeps
    only the first fix of each file (the others are judged again on the next pass). A pass that
    fixes nothing while the judge left findings unjudged, or the cap of passes, stops it short of
    its fixed point: the result says how much is left and why.
    """
    sources = _sources(result)
    originals = {path: source.text for path, source in sources.items()}
    outcome = FixResult()
    current: dict[str, str] = {}
    passes = 0
    while True:
        fixed = _fix_once(result, unsafe)
        if not fixed:
            break
        if passes == MAX_PASSES:
            outcome.left = sum(len(fixes) for _, fixes in fixed.values())
            outcome.stopped = f"it stopped after {MAX_PASSES} passes, the most one run makes"
            break
        passes += 1
        trial = {**current, **{path: text for path, (text, _) in fixed.items()}}
        relinted = _relint(result, trial, options)
        if _errors(relinted) - _errors(result):
            fixed = {
                path: (apply_edits(_current_text(result, path), fixes[0].edits), fixes[:1])
                for path, (_, fixes) in fixed.items()
            }
            trial = {**current, **{path: text for path, (text, _) in fixed.items()}}
            relinted = _relint(result, trial, options)
        current = trial
        for path, (_, fixes) in fixed.items():
            outcome.applied.update(fix.code for fix in fixes)
            outcome.passes.setdefault(path, []).append(tuple(edit for fix in fixes for edit in fix.edits))
        result = relinted
    if outcome.stopped is None and result.unjudged_oversized:
        outcome.stopped = (
            f"files over {MAX_JUDGED_BYTES:,} bytes are not judged (each fix would re-lint the whole file); "
            "fix those by hand: lint --format json lists the findings"
        )
        outcome.final = True
    elif outcome.stopped is None and result.unjudged:
        outcome.stopped = (
            "the judge ran out of re-lints for them (each lint re-lints a file a bounded number of times)"
        )
    outcome.unjudged = result.unjudged
    outcome.changed = {
        path: (originals[path], text) for path, text in current.items() if text != originals[path]
    }
    outcome.read = {path: sources[path].raw for path in outcome.changed}
    return outcome


def _current_text(result: LintResult, path: str) -> str:
    return _sources(result)[path].text
