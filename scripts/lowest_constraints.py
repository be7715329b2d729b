"""Print a pip/uv constraints file that pins every dependency to the lowest version pyproject.toml declares.

`.ci/run` installs the test environment a second time with these pins, so a library release can
never again be the only version the suite has seen: what the project declares is what it tests.

    python scripts/lowest_constraints.py [EXTRA ...] > constraints.txt   # default extra: test
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(.*)$")
_LOWER_BOUND = re.compile(r">=\s*([0-9][^,;\s]*)")


def lowest_pins(pyproject: dict, extras: list[str]) -> dict[str, str]:
    """``name -> version`` for every requirement of the project (and ``extras``) that has a ``>=`` bound."""
    project = pyproject["project"]
    requirements = list(project.get("dependencies", []))
    for extra in extras:
        requirements += project.get("optional-dependencies", {}).get(extra, [])
    pins: dict[str, str] = {}
    for requirement in requirements:
        match = _REQUIREMENT.match(requirement)
        if match is None:
            continue
        name, specifier = match.group(1).lower(), match.group(2)
        bound = _LOWER_BOUND.search(specifier)
        if bound is not None:
            pins[name] = max(pins.get(name, bound.group(1)), bound.group(1), key=_version_key)
    return pins


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


def main(argv: list[str]) -> int:
    extras = argv or ["test"]
    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    for name, version in sorted(lowest_pins(pyproject, extras).items()):
        print(f"{name}=={version}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
