"""The public Python API: what the CLI calls, usable from other tools."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lmi_config.configfile.loader import InputError, LintTarget, collect_targets, parse_source
from lmi_config.lint import LintOptions, build_unit, lint_unit
from lmi_config.rules.base import Finding, LintUnit


@dataclass
class LintResult:
    """Findings of one run plus what was assumed about each target."""

    findings: list[Finding] = field(default_factory=list)
    units: list[LintUnit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files: int = 0

    @property
    def errors(self) -> int:
        return sum(1 for finding in self.findings if finding.severity == "error")

    @property
    def warnings(self) -> int:
        return sum(1 for finding in self.findings if finding.severity == "warning")


def _note(unit: LintUnit) -> str | None:
    context = unit.context
    if not (context.backend_assumed or context.release_assumed):
        return None
    return f"{unit.primary_path}: {context.describe()}; set --backend / --lmi-version (or a `# lmi-config:` pragma) to be explicit"


def lint_targets(targets: list[LintTarget], options: LintOptions | None = None) -> LintResult:
    """Lint prepared targets. ``ValueError`` for a bad --backend/--lmi-version/--instance."""
    options = options or LintOptions()
    result = LintResult()
    for target in targets:
        try:
            unit = build_unit(target, options)
        except ValueError as error:
            raise InputError(f"{target.primary.path}: {error}") from None
        result.units.append(unit)
        result.findings.extend(lint_unit(unit, options))
        result.files += len(target.sources)
        note = _note(unit)
        if note:
            result.notes.append(note)
        result.notes.extend(f"{unit.primary_path}: {text}" for text in unit.notes)
    return result


def lint_paths(
    paths: list[str],
    options: LintOptions | None = None,
    *,
    env_files: list[str] | None = None,
    stdin_bytes: bytes | None = None,
    stdin_kind: str | None = None,
) -> LintResult:
    """Lint files and directories (``-`` reads ``stdin_bytes``). Raises :class:`InputError`."""
    targets = collect_targets([path for path in paths if path != "-"], env_files)
    if "-" in paths:
        raw = stdin_bytes if stdin_bytes is not None else b""
        targets.insert(paths.index("-"), LintTarget([parse_source("<stdin>", raw, None, stdin_kind)]))
    return lint_targets(targets, options)


def lint_text(
    text: str,
    kind: str = "properties",
    options: LintOptions | None = None,
    *,
    name: str = "<text>",
    directory: Path | None = None,
) -> LintResult:
    """Lint configuration text held in memory (used by render and the tests)."""
    raw = text.encode("utf-8", errors="surrogatepass")
    target = LintTarget([parse_source(name, raw, directory, kind)])
    return lint_targets([target], options)
