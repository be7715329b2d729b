"""Lint the real-failures corpus and say which start-up failures the judge catches.

The corpus (``tests/fixtures/real-failures/``) holds start-up failures from public reports, each
reproduced as the LMI configuration the user had, and configurations that sources show running.
``cases.json`` names each case's class of check; the class lists the rules that should report it.

A failure counts as *caught* when lint reports an error whose rule is one of its class's rules;
*caught by any error* counts every error-level finding (the only measure for a class with no rule
yet). Cases that no configuration check could catch (``decidable: false``) and cases whose report
leaves out a detail the check needs (``complete: false``) stay out of the rate and are counted
apart. Known-good configurations must draw no error: each error on one is listed as a false error.

This is development data: the figures say where the judge stands on reports it was built against,
not how it does on reports nobody here has seen.

Usage: python benchmarks/real_failures.py [--corpus DIR] [--case ID ...] [--quiet]
The last line of the output is one JSON object with the totals.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lmi_config.api import lint_paths  # noqa: E402

DEFAULT_CORPUS = ROOT / "tests" / "fixtures" / "real-failures"


@dataclass
class Outcome:
    """What lint said about one case."""

    case: dict
    errors: list[str] = field(default_factory=list)  # "LMI305 tp-heads-divisibility"
    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # files lint could not read

    @property
    def counted(self) -> bool:
        """Whether the case is in the catch-rate denominator."""
        return self.case["kind"] == "failure" and self.case["decidable"] and self.case["complete"]


@dataclass
class ClassFigures:
    """Per-class tally of the failure cases."""

    cases: int = 0
    undecidable: int = 0
    incomplete: int = 0
    counted: int = 0
    caught: int = 0
    caught_any_error: int = 0
    warned_only: int = 0
    missed: list[Outcome] = field(default_factory=list)


def load_corpus(corpus: Path) -> dict:
    """The corpus metadata (``cases.json``)."""
    return json.loads((corpus / "cases.json").read_text(encoding="utf-8"))


def lint_case(corpus: Path, case: dict) -> Outcome:
    """Lint one case directory through the public API (pragmas carry instance, backend and release)."""
    result = lint_paths([str(corpus / case["id"])])
    outcome = Outcome(case)
    for finding in result.findings:
        label = f"{finding.code} {finding.rule}"
        if finding.severity == "error":
            outcome.errors.append(label)
        elif finding.severity == "warning":
            outcome.warnings.append(label)
    outcome.problems = [str(problem) for problem in result.problems]
    return outcome


def rule_of(label: str) -> str:
    """The rule slug of an ``"LMI305 tp-heads-divisibility"`` label."""
    return label.split(" ", 1)[1]


def tally(outcomes: Iterable[Outcome], classes: dict) -> dict[str, ClassFigures]:
    """Per-class figures of the failure cases."""
    figures: dict[str, ClassFigures] = {name: ClassFigures() for name in classes}
    for outcome in outcomes:
        case = outcome.case
        if case["kind"] != "failure":
            continue
        row = figures[case["class"]]
        row.cases += 1
        if not case["decidable"]:
            row.undecidable += 1
            continue
        if not case["complete"]:
            row.incomplete += 1
            continue
        row.counted += 1
        rules = set(classes[case["class"]]["rules"])
        by_rule = any(rule_of(label) in rules for label in outcome.errors)
        row.caught += by_rule
        row.caught_any_error += bool(outcome.errors)
        if not by_rule:
            row.missed.append(outcome)
            row.warned_only += any(rule_of(label) in rules for label in outcome.warnings)
    return {name: row for name, row in figures.items() if row.cases}


def found_text(outcome: Outcome) -> str:
    """What lint reported instead, for a missed case."""
    parts = [f"error {label}" for label in outcome.errors] + [
        f"warning {label}" for label in outcome.warnings
    ]
    return "; ".join(parts) if parts else "nothing"


def print_classes(figures: dict[str, ClassFigures], classes: dict) -> None:
    """The per-class table, then the missed cases of each class."""
    header = f"{'class':<19}{'cases':>6}{'undec':>6}{'incompl':>8}{'counted':>8}{'caught':>7}{'any err':>8}{'warned':>7}  rules"
    print(header)
    print("-" * len(header))
    for name, row in sorted(figures.items(), key=lambda item: (-item[1].cases, item[0])):
        rules = ", ".join(classes[name]["rules"]) or "(no rule yet)"
        print(
            f"{name:<19}{row.cases:>6}{row.undecidable:>6}{row.incomplete:>8}{row.counted:>8}"
            f"{row.caught:>7}{row.caught_any_error:>8}{row.warned_only:>7}  {rules}"
        )
    print()
    for name, row in sorted(figures.items()):
        if not row.missed:
            continue
        print(f"missed [{name}] {len(row.missed)} of {row.counted}:")
        for outcome in row.missed:
            print(f"  {outcome.case['id']}: {found_text(outcome)}")
    print()


def print_known_good(outcomes: list[Outcome]) -> int:
    """The false errors on known-good configurations; returns how many cases drew one."""
    good = [outcome for outcome in outcomes if outcome.case["kind"] == "known-good"]
    flagged = [outcome for outcome in good if outcome.errors]
    print(f"known-good: {len(good)} configurations, {len(flagged)} with a false error")
    for outcome in flagged:
        print(f"  {outcome.case['id']}: {', '.join(outcome.errors)}")
    print()
    return len(flagged)


def print_uncounted(outcomes: list[Outcome]) -> None:
    """Failures kept out of the rate, with the reason (for review)."""
    for outcome in outcomes:
        case = outcome.case
        if case["kind"] != "failure" or outcome.counted:
            continue
        reason = (
            case["undecidable_reason"]
            if not case["decidable"]
            else "incomplete: " + "; ".join(case["not_in_report"])
        )
        print(f"  not counted {case['id']} [{case['class']}]: {reason}; lint: {found_text(outcome)}")
    print()


def totals(outcomes: list[Outcome], figures: dict[str, ClassFigures], flagged: int) -> dict:
    """The summary object printed on the last line."""
    counted = sum(row.counted for row in figures.values())
    caught = sum(row.caught for row in figures.values())
    any_error = sum(row.caught_any_error for row in figures.values())
    good = [outcome for outcome in outcomes if outcome.case["kind"] == "known-good"]
    return {
        "failures": sum(row.cases for row in figures.values()),
        "undecidable": sum(row.undecidable for row in figures.values()),
        "incomplete": sum(row.incomplete for row in figures.values()),
        "counted": counted,
        "caught": caught,
        "caught_any_error": any_error,
        "catch_rate": round(caught / counted, 3) if counted else None,
        "catch_rate_any_error": round(any_error / counted, 3) if counted else None,
        "known_good": len(good),
        "known_good_with_false_error": flagged,
        "false_errors": sum(len(outcome.errors) for outcome in good),
        "unreadable_files": sum(len(outcome.problems) for outcome in outcomes),
    }


def main(argv: list[str] | None = None) -> int:
    """Lint the corpus (or the cases named) and print the figures; exit 0 unless the corpus is unusable."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus", type=Path, default=DEFAULT_CORPUS, help="corpus directory (holds cases.json)"
    )
    parser.add_argument("--case", action="append", default=[], help="lint only this case id (repeatable)")
    parser.add_argument("--quiet", action="store_true", help="print only the JSON line")
    args = parser.parse_args(argv)
    doc = load_corpus(args.corpus)
    cases = doc["cases"]
    if args.case:
        unknown = sorted(set(args.case) - {case["id"] for case in cases})
        if unknown:
            print(f"unknown case id(s): {', '.join(unknown)}", file=sys.stderr)
            return 2
        cases = [case for case in cases if case["id"] in set(args.case)]
    outcomes = [lint_case(args.corpus, case) for case in cases]
    figures = tally(outcomes, doc["classes"])
    if args.quiet:
        flagged = sum(1 for outcome in outcomes if outcome.case["kind"] == "known-good" and outcome.errors)
    else:
        print_classes(figures, doc["classes"])
        print_uncounted(outcomes)
        flagged = print_known_good(outcomes)
    print(json.dumps(totals(outcomes, figures, flagged), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
