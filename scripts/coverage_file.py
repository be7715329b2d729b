"""Edit lmi_config/data/vllm_check_coverage.json keeping its layout (one identity a line, each entry's other
keys on its header line): the helpers the scripts that rewrite a judgement's list share."""

from __future__ import annotations

import json
from pathlib import Path

COVERAGE = Path(__file__).resolve().parent.parent / "lmi_config" / "data" / "vllm_check_coverage.json"


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


def add_to_uncovered(identities: set[str], reason_starts: str, path: Path = COVERAGE) -> int:
    """Append identities to the uncovered group whose reason starts with ``reason_starts``."""
    if not identities:
        return 0
    lines = path.read_text(encoding="utf-8").split("\n")
    start = next(
        number
        for number, line in enumerate(lines)
        if line.lstrip().startswith('{"reason": ' + json.dumps(reason_starts)[:-1])
    )
    end = start + 1
    while not lines[end].lstrip().startswith("]"):
        end += 1
    present = {json.loads(line.strip().rstrip(",")) for line in lines[start + 1 : end]}
    body = sorted(present | identities)
    lines[start + 1 : end] = [
        f"    {json.dumps(identity)}" + ("," if number < len(body) - 1 else "")
        for number, identity in enumerate(body)
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
    json.loads(path.read_text(encoding="utf-8"))
    return len(body) - len(present)
