"""Output formats for findings: text, json, sarif (2.1.0) and github (workflow commands).

Formatting lives here, at the edge; rules only produce :class:`Finding` objects.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote_from_bytes

from lmi_config import __version__
from lmi_config.rules.base import Finding, Rule
from lmi_config.secrets import redact

if TYPE_CHECKING:  # a text report (the common case) needs none of the machine formats' modules
    from lmi_config.fixers.edits import Edit, Fix

MAX_TEXT_NOTES = 10
MAX_FINDINGS_PER_RULE = 20  # per rule and file in text output; --max-findings changes it, 0 = all
MAX_MESSAGE_CHARACTERS = 1000  # a finding about a 4 MB value does not print the 4 MB
# C0 and C1 control characters (ESC starts terminal commands), DEL, and the bidirectional
# overrides that reorder what a terminal shows (CVE-2021-42574)
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(text: str, limit: int = MAX_MESSAGE_CHARACTERS) -> str:
    """Text safe for a terminal or a CI log: credentials masked (:func:`lmi_config.secrets.redact`,
    before cutting, so that no partial credential is left), control characters shown as escapes
    (``\\x1b``), and at most ``limit`` characters (the rest counted, not printed)."""
    text = redact(text)
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text) - limit} more characters)"
    if not _UNPRINTABLE.search(text):
        return text
    return _UNPRINTABLE.sub(lambda match: _escape_character(match.group()), text)


def _escape_character(character: str) -> str:
    code = ord(character)
    named = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}.get(character)
    return named or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


Hidden = Mapping[tuple[str, str, str, str], int]  # (path, code, slug, severity) -> findings not kept


def summarize(
    findings: Sequence[Finding],
    files: int,
    notes: Sequence[str] = (),
    unreadable: Sequence[str] = (),
    hidden: Hidden | None = None,
) -> dict[str, object]:
    """Counts per severity (``hidden``: findings counted but not kept), as the JSON summary carries
    them, and the inputs that could not be read."""
    counts = Counter(finding.severity for finding in findings)
    for (_, _, _, severity), count in (hidden or {}).items():
        counts[severity] += count
    summary: dict[str, object] = {
        "files": files,
        "errors": counts.get("error", 0),
        "warnings": counts.get("warning", 0),
        "infos": counts.get("info", 0),
        "notes": list(notes),
    }
    if unreadable:
        summary["unreadable"] = list(unreadable)
    return summary


def format_text(
    findings: Sequence[Finding],
    summary: dict[str, object],
    *,
    color: bool = False,
    max_findings: int = MAX_FINDINGS_PER_RULE,
    hidden: Hidden | None = None,
    unjudged: int = 0,
) -> str:
    """``path:line: CODE severity [slug] message`` lines and a closing count.

    Beyond ``max_findings`` findings of one rule in one file (0: no limit) the rest are counted on
    one line (with those the linter already counted instead of keeping, ``hidden``); control
    characters are escaped and very long messages cut (``visible``).
    """
    colors = {"error": "\x1b[31m", "warning": "\x1b[33m", "info": "\x1b[36m"}
    reset = "\x1b[0m"
    lines = []
    shown: Counter[tuple[str, str]] = Counter()
    for finding in findings:
        group = (finding.path, finding.code)
        shown[group] += 1
        if max_findings and shown[group] > max_findings:
            continue
        path = visible(finding.path)
        place = f"{path}:{finding.line}" if finding.line else path
        severity = finding.severity
        if color:
            severity = f"{colors[severity]}{severity}{reset}"
        lines.append(f"{place}: {finding.code} {severity} [{finding.rule}] {visible(finding.message)}")
    lines.extend(_collapsed(findings, shown, max_findings, hidden or {}))
    notes = summary.get("notes") or []
    assert isinstance(notes, list)
    if len(notes) > MAX_TEXT_NOTES:
        # a directory of many files: one line instead of one note per file (json keeps them all)
        lines.extend(f"note: {visible(note)}" for note in notes[:MAX_TEXT_NOTES])
        lines.append(
            f"note: … and {len(notes) - MAX_TEXT_NOTES} more notes (backend or version assumed); --format json lists them all"
        )
    else:
        lines.extend(f"note: {visible(note)}" for note in notes)
    errors, warnings, infos = summary["errors"], summary["warnings"], summary["infos"]
    files = summary["files"]
    lines.append(
        f"{files} file{'s' if files != 1 else ''} checked: {errors} error{'s' if errors != 1 else ''}, "
        f"{warnings} warning{'s' if warnings != 1 else ''}, {infos} info"
    )
    lines.extend(_fixable(findings, hidden or {}, unjudged))
    return "\n".join(lines) + "\n"


def _fixable(findings: Sequence[Finding], hidden: Hidden, unjudged: int) -> list[str]:
    """``3 fixable with --fix (2 more with --unsafe-fixes)``, as ruff closes its report; and, so that
    the count is true, how many more may be: findings not shown (never judged) of the rules whose
    shown findings are fixable, and findings the judge's bounded re-lints did not reach."""
    safe = sum(1 for finding in findings if finding.fix is not None and finding.fix.safe)
    unsafe = sum(1 for finding in findings if finding.fix is not None and not finding.fix.safe)
    fixable_rules = {finding.code for finding in findings if finding.fix is not None}
    not_shown = sum(count for (_, code, _, _), count in hidden.items() if code in fixable_rules)
    if not safe and not unsafe and not unjudged:
        return []
    more = f" ({unsafe} more with --fix --unsafe-fixes)" if unsafe else ""
    unknown = []
    if not_shown:
        unknown.append(f"{not_shown} of the findings not shown")
    if unjudged:
        unknown.append(f"{unjudged} the judge did not reach in this run")
    maybe = f"; maybe more, not judged yet ({' and '.join(unknown)}): --fix judges them" if unknown else ""
    return [f"{safe} fixable with --fix{more}{maybe}; --diff shows the changes"]


def _collapsed(
    findings: Sequence[Finding], shown: Counter[tuple[str, str]], max_findings: int, hidden: Hidden
) -> list[str]:
    """One line per (file, rule) whose findings went over the limit."""
    if not max_findings and not hidden:
        return []
    more: Counter[tuple[str, str]] = Counter()
    slugs: dict[tuple[str, str], str] = {}
    for (path, code), count in shown.items():
        if max_findings and count > max_findings:
            more[(path, code)] += count - max_findings
    for finding in findings:
        slugs.setdefault((finding.path, finding.code), finding.rule)
    for (path, code, slug, _), count in hidden.items():
        more[(path, code)] += count
        slugs[(path, code)] = slug
    return [
        f"{visible(path)}: {code} … and {count} more [{slugs[(path, code)]}] findings in this file "
        "not shown (--max-findings 0 shows them all; --format json lists them all)"
        for (path, code), count in more.items()
    ]


def format_json(findings: Sequence[Finding], summary: dict[str, object]) -> str:
    """One JSON document: ``{"findings": [...], "summary": {...}}``."""
    from lmi_config.strict_json import dump_json

    shown = [{**finding.as_dict(), "message": redact(finding.message)} for finding in findings]
    notes = summary.get("notes")
    if isinstance(notes, list):
        summary = {**summary, "notes": [redact(str(note)) for note in notes]}
    document = {"findings": shown, "summary": summary}
    return dump_json(document, ensure_ascii=False)


_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
SARIF_BASE_ID = "%SRCROOT%"  # the directory lmi-config ran in, the base of every relative URI
# what a path segment keeps as it is besides letters, digits and -._~ (RFC 3986 pchar): the
# sub-delims and "@"; ":" is encoded too, since in a relative reference's first segment it would
# read as a scheme ("c:x.properties"); "#", "?", "%", blanks and non-ASCII are always encoded
_SEGMENT_SAFE = "!$&'()*+,;=@"


def sarif_base_uri(base: Path) -> str:
    """The ``file://`` URI of the base directory, ending with ``/`` as SARIF requires (§3.14.14)."""
    uri = base.as_uri()
    return uri if uri.endswith("/") else uri + "/"


def sarif_artifact_location(path: str, base: Path) -> dict[str, str]:
    """A SARIF ``artifactLocation`` (§3.4) for ``path`` as a finding names it: an RFC 3986 reference
    relative to ``%SRCROOT%`` (``base``), each segment percent-encoded, so that ``c#1/x`` is not a
    fragment and ``%41`` not an ``A``; a path outside ``base`` is an absolute ``file://`` URI.

    The path is taken as the user named it (``..`` removed lexically, links not followed): the
    file a code-scanning tool opens is the one lmi-config read."""
    absolute = os.path.normpath(os.path.join(base, path))
    relative = os.path.relpath(absolute, base)
    if relative == os.curdir or relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return {"uri": Path(absolute).as_uri()}
    segments = (
        quote_from_bytes(os.fsencode(segment), safe=_SEGMENT_SAFE) for segment in relative.split(os.sep)
    )
    return {"uri": "/".join(segments), "uriBaseId": SARIF_BASE_ID}


def format_sarif(findings: Sequence[Finding], rules: Sequence[Rule], base: Path | None = None) -> str:
    """SARIF 2.1.0 with one run, every rule described, one result per finding; every location is a
    URI relative to ``base`` (default: the current directory), given as ``%SRCROOT%``."""
    from lmi_config.report.rule_pages import page_url, rule_page
    from lmi_config.strict_json import dump_json

    base = base if base is not None else Path.cwd()
    rule_index = {item.code: position for position, item in enumerate(rules)}
    results = []
    for finding in findings:
        location: dict[str, object] = {"artifactLocation": sarif_artifact_location(finding.path, base)}
        if finding.line:
            location["region"] = {"startLine": finding.line}
        result: dict[str, object] = {
            "ruleId": finding.code,
            "level": _SARIF_LEVEL[finding.severity],
            "message": {"text": redact(finding.message)},
            "locations": [{"physicalLocation": location}],
            "properties": {"rule": finding.rule, "key": finding.key},
        }
        if finding.code in rule_index:
            result["ruleIndex"] = rule_index[finding.code]
        if finding.fix is not None:
            result["fixes"] = [sarif_fix(finding.fix, base)]
        results.append(result)
    driver_rules = [
        {
            "id": item.code,
            "name": item.slug,
            "shortDescription": {"text": item.summary},
            "fullDescription": {"text": item.why},
            "defaultConfiguration": {"level": _SARIF_LEVEL[item.severity]},
            "helpUri": page_url(item),
            "help": {"text": f"{item.why}\nSource: {item.source}", "markdown": rule_page(item)},
        }
        for item in rules
    ]
    document = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "lmi-config",
                        "version": __version__,
                        "informationUri": "https://github.com/lmi-config/lmi-config",
                        "rules": driver_rules,
                    }
                },
                "originalUriBaseIds": {SARIF_BASE_ID: {"uri": sarif_base_uri(base)}},
                "results": results,
            }
        ],
    }
    return dump_json(document, ensure_ascii=False)


def _sarif_replacement(edit: Edit) -> dict[str, object]:
    """One SARIF ``replacement``: whole lines by line number (columns only where a point is meant)."""
    if edit.action == "replace":
        return {
            "deletedRegion": {"startLine": edit.line, "endLine": edit.line},
            "insertedContent": {"text": edit.text},
        }
    if edit.action == "remove":  # the line and its ending: up to the start of the next line
        return {
            "deletedRegion": {
                "startLine": edit.line,
                "startColumn": 1,
                "endLine": edit.line + 1,
                "endColumn": 1,
            }
        }
    line = edit.line if edit.action == "insert_before" else edit.line + 1
    return {
        "deletedRegion": {"startLine": line, "startColumn": 1, "endLine": line, "endColumn": 1},
        "insertedContent": {"text": edit.text + "\n"},
    }


def sarif_fix(fix: Fix, base: Path | None = None) -> dict[str, object]:
    """A SARIF 2.1.0 ``fix``: its description and the replacements in the one file it edits (its
    location relative to ``base``, default the current directory, as :func:`format_sarif`'s)."""
    applicability = "safe" if fix.safe else "unsafe: applied with --unsafe-fixes"
    return {
        "description": {"text": f"{fix.description} ({applicability})"},
        "artifactChanges": [
            {
                "artifactLocation": sarif_artifact_location(
                    fix.path, base if base is not None else Path.cwd()
                ),
                "replacements": [_sarif_replacement(edit) for edit in fix.edits],
            }
        ],
    }


def _escape_github_data(text: str) -> str:
    # % and line breaks as the workflow-command syntax wants, then any other control character
    # as a visible escape so that it cannot reach the log viewer or a terminal raw
    return visible(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _escape_github_property(text: str) -> str:
    return _escape_github_data(text).replace(":", "%3A").replace(",", "%2C")


_GITHUB_COMMAND = {"error": "error", "warning": "warning", "info": "notice"}


def format_github(findings: Sequence[Finding]) -> str:
    """GitHub Actions workflow commands (``::error file=…,line=…,title=…::message``)."""
    lines = []
    for finding in findings:
        properties = [f"file={_escape_github_property(finding.path)}"]
        if finding.line:
            properties.append(f"line={finding.line}")
        properties.append(f"title={_escape_github_property(finding.code + ' ' + finding.rule)}")
        lines.append(
            f"::{_GITHUB_COMMAND[finding.severity]} {','.join(properties)}::{_escape_github_data(finding.message)}"
        )
    return "\n".join(lines) + ("\n" if lines else "")


_GITLAB_SEVERITY = {"error": "major", "warning": "minor", "info": "info"}


def format_gitlab(findings: Sequence[Finding], base: Path | None = None) -> str:
    """GitLab Code Quality (``artifacts: reports: codequality``): a JSON list of issues, each with a
    description, a check name, a fingerprint unique in the report, a severity and a location whose
    path is relative to the directory lmi-config ran in (the repository root in a CI job).

    The fingerprint is taken from the file, the rule, the key and the message, not the line, so
    that the merge request widget matches a finding that moved; two alike findings in one file are
    told apart by their order.
    """
    import hashlib

    from lmi_config.strict_json import dump_json

    root = (base or Path.cwd()).resolve()
    seen: Counter[str] = Counter()
    issues = []
    for finding in findings:
        path = _gitlab_path(finding.path, root)
        identity = "\0".join((path, finding.code, finding.key or "", redact(finding.message)))
        seen[identity] += 1
        digest = hashlib.sha256(f"{identity}\0{seen[identity]}".encode("utf-8", "surrogatepass")).hexdigest()
        issues.append(
            {
                "description": redact(finding.message),
                "check_name": f"{finding.code} {finding.rule}",
                "fingerprint": digest[:32],
                "severity": _GITLAB_SEVERITY[finding.severity],
                "location": {"path": path, "lines": {"begin": finding.line or 1}},
            }
        )
    return dump_json(issues)


def _gitlab_path(path: str, root: Path) -> str:
    """A file's path as GitLab matches it to the repository: relative, with forward slashes."""
    if path.startswith("<"):
        return path
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(root).as_posix()
    except ValueError:
        return absolute.as_posix()  # outside the repository: GitLab shows it without a link
