"""Edit lmi_config/data/vllm_check_coverage.json keeping its layout (one identity a line, each entry's other
keys on its header line): the helpers the scripts that rewrite a judgement's list share."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

COVERAGE = Path(__file__).resolve().parent.parent / "lmi_config" / "data" / "vllm_check_coverage.json"


def _identity_lines(identities: list[str]) -> list[str]:
    """An entry's ``checks``, one a line, the last without a comma."""
    return [
        f"    {json.dumps(identity)}" + ("," if number < len(identities) - 1 else "")
        for number, identity in enumerate(identities)
    ]


def _edit_entry(header: Callable[[str], bool], edit: Callable[[set[str]], list[str]], path: Path) -> set[str]:
    """Replace the checks of the first entry whose header line ``header`` accepts with ``edit(present)``;
    the identities it held."""
    lines = path.read_text(encoding="utf-8").split("\n")
    start = next((number for number, line in enumerate(lines) if header(line)), None)
    if start is None:
        raise SystemExit(f"no such entry in {path.name}: add its header line first")
    end = start + 1
    while not lines[end].lstrip().startswith("]"):
        end += 1
    present = {json.loads(line.strip().rstrip(",")) for line in lines[start + 1 : end]}
    lines[start + 1 : end] = _identity_lines(edit(present))
    path.write_text("\n".join(lines), encoding="utf-8")
    json.loads(path.read_text(encoding="utf-8"))
    return present


def set_covered(rule: str, identities: list[str], path: Path = COVERAGE) -> set[str]:
    """Make ``identities`` the checks of the rule's covered entry; the identities it listed before."""
    return _edit_entry(
        lambda line: f'"rule": "{rule}"' in line and line.rstrip().endswith("["), lambda _: identities, path
    )


def add_to_uncovered(identities: set[str], reason_starts: str, path: Path = COVERAGE) -> int:
    """Add identities to the uncovered group whose reason starts with ``reason_starts``; how many were new."""
    if not identities:
        return 0
    prefix = '{"reason": ' + json.dumps(reason_starts)[:-1]
    present = _edit_entry(
        lambda line: line.lstrip().startswith(prefix), lambda held: sorted(held | identities), path
    )
    return len(identities - present)


def drop_from_uncovered(identities: set[str], path: Path = COVERAGE) -> int:
    """Remove the identities from every uncovered group; the number of lines removed."""
    lines = path.read_text(encoding="utf-8").split("\n")
    start = next(number for number, line in enumerate(lines) if line.startswith(' "uncovered"'))
    kept: list[str] = lines[:start]
    removed = 0
    for line in lines[start:]:
        stripped = line.strip().rstrip(",")
        if stripped.startswith('"') and stripped.endswith('"') and json.loads(stripped) in identities:
            removed += 1
            continue
        kept.append(line)
    # the last identity of a group carries no comma
    for number in range(len(kept) - 1):
        if kept[number + 1].lstrip().startswith("]") and kept[number].rstrip().endswith('",'):
            kept[number] = kept[number].rstrip()[:-1]
    path.write_text("\n".join(kept), encoding="utf-8")
    json.loads(path.read_text(encoding="utf-8"))
    return removed
