"""Findings kept for a report: in report order, at most so many of one rule in one file."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lmi_config.rules.base import Finding

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def _report_order(finding: Finding) -> tuple[str, int, int, str]:
    return (finding.path, finding.line or 0, SEVERITY_ORDER[finding.severity], finding.code)


_TRIM_BATCH = 1024  # findings over the limit collected before the extra ones are counted and dropped


class Kept:
    """Findings in report order, at most ``limit`` of one rule in one file (0: all); the others are
    counted, not kept, so that a file of a million bad lines does not hold a million findings."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.groups: dict[tuple[str, str], list[Finding]] = {}
        self.counted: Counter[tuple[str, str, str, str]] = Counter()

    def add(self, finding: Finding) -> None:
        group = self.groups.get((finding.path, finding.code))
        if group is None:
            group = self.groups[(finding.path, finding.code)] = []
        group.append(finding)
        if self.limit and len(group) > self.limit + _TRIM_BATCH:
            self._trim(group)

    def _trim(self, group: list[Finding]) -> None:
        group.sort(key=_report_order)
        self.counted.update((item.path, item.code, item.rule, item.severity) for item in group[self.limit :])
        del group[self.limit :]

    def findings(self, hidden: Counter[tuple[str, str, str, str]] | None) -> list[Finding]:
        """The kept findings in report order; the count of the others added to ``hidden``."""
        for group in self.groups.values():
            if self.limit and len(group) > self.limit:
                self._trim(group)
        if hidden is not None:
            hidden.update(self.counted)
        return sorted((finding for group in self.groups.values() for finding in group), key=_report_order)
