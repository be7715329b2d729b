"""Baselines: record today's findings, then report only new ones (``lint --write-baseline`` / ``--baseline``).

A finding is recorded by its file (relative to the baseline file's directory), rule code, key and a
fingerprint of the text of the line it is on — not by line number — so a finding that moves when
lines are inserted above it stays baselined, and one whose value changes is new again. A finding not
tied to a line is fingerprinted by its message with the numbers taken out. Each recorded finding
accepts one finding (the same finding twice in a file needs two records).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from lmi_config.errors import InputError
from lmi_config.rules.base import Finding

FORMAT_VERSION = 1
_NUMBERS = re.compile(r"\d+")


def _relative(path: str, base: Path) -> str:
    if path in ("-", "<stdin>") or path.startswith("<"):
        return path
    return Path(os.path.relpath(os.path.abspath(path), base)).as_posix()


def _line_text(path: str, line: int | None, cache: dict[str, list[str]]) -> str | None:
    if line is None or path.startswith("<") or path == "-":
        return None
    if path not in cache:
        from lmi_config.io import read_bounded

        try:
            cache[path] = read_bounded(path).decode("utf-8", errors="replace").splitlines()
        except InputError:
            cache[path] = []
    lines = cache[path]
    return lines[line - 1].strip() if 0 < line <= len(lines) else None


def _fingerprint(finding: Finding, text: str | None) -> str:
    basis = text if text is not None else _NUMBERS.sub("#", finding.message)
    return hashlib.sha256(basis.encode("utf-8", errors="surrogatepass")).hexdigest()[:16]


def _identity(finding: Finding, base: Path, cache: dict[str, list[str]]) -> tuple[str, str, str, str]:
    text = _line_text(finding.path, finding.line, cache)
    return (_relative(finding.path, base), finding.code, finding.key or "", _fingerprint(finding, text))


def baseline_document(findings: Iterable[Finding], baseline_path: Path) -> str:
    """The JSON text of a baseline holding ``findings`` (sorted, so the file diffs well)."""
    base = baseline_path.resolve().parent
    cache: dict[str, list[str]] = {}
    counted = Counter(_identity(finding, base, cache) for finding in findings)
    entries = [
        {"path": path, "code": code, "key": key or None, "fingerprint": fingerprint, "count": count}
        for (path, code, key, fingerprint), count in sorted(counted.items())
    ]
    return json.dumps({"lmi_config_baseline": FORMAT_VERSION, "findings": entries}, indent=1) + "\n"


def load_baseline(path: str) -> Counter[tuple[str, str, str, str]]:
    """The recorded findings of a baseline file; :class:`InputError` naming the file otherwise."""
    from lmi_config.io import read_bounded
    from lmi_config.strict_json import parse_json

    raw = read_bounded(path)
    try:
        # strict: a count of 1e400 read as infinity was a traceback when made an integer
        document = parse_json(raw, path)
    except InputError as error:
        raise InputError(f"{error}; or write a baseline again with lint --write-baseline") from None
    if not isinstance(document, dict) or document.get("lmi_config_baseline") != FORMAT_VERSION:
        raise InputError(
            f"{path}: not an lmi-config baseline (version {FORMAT_VERSION}); write one with --write-baseline"
        )
    recorded: Counter[tuple[str, str, str, str]] = Counter()
    for number, entry in enumerate(document.get("findings") or [], start=1):
        try:
            identity = (
                str(entry["path"]),
                str(entry["code"]),
                str(entry.get("key") or ""),
                str(entry["fingerprint"]),
            )
            count = int(entry.get("count", 1))
        except (KeyError, TypeError, ValueError, AttributeError):
            raise InputError(
                f"{path}: entry {number} is malformed; write the baseline again with --write-baseline"
            ) from None
        recorded[identity] += max(count, 0)
    return recorded


def new_findings(
    findings: list[Finding], recorded: Counter[tuple[str, str, str, str]], baseline_path: str
) -> tuple[list[Finding], int]:
    """The findings the baseline does not hold, and how many it held."""
    base = Path(baseline_path).resolve().parent
    cache: dict[str, list[str]] = {}
    left = Counter(recorded)
    kept, held = [], 0
    for finding in findings:
        identity = _identity(finding, base, cache)
        if left[identity] > 0:
            left[identity] -= 1
            held += 1
        else:
            kept.append(finding)
    return kept, held
