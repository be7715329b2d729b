#!/usr/bin/env python3
"""Generate lmi_config/data/latency_targets.json: the latency targets MLPerf Inference holds its LLM
benchmarks to in the server scenario, read from LoadGen's own ``mlperf.conf``.

``mlperf.conf`` (``model.scenario.key = value``, ``*`` a wildcard) is shipped in the source archive
of the ``mlcommons-loadgen`` package on PyPI; this script reads it there (the cache directory first,
then ``pip download``), never from a copy. For every benchmark whose ``Server`` scenario states a
``ttft_latency`` and a ``tpot_latency`` (ms) it records both with the percentile they are held at
(``target_latency_percentile``, the benchmark's own line, else the ``*.Server`` wildcard), each with
the lines it was read from. ``default`` names the target ``plan`` ranks within unless the user gives
a limit: Llama-3.1-8B's (``llama3_1-8b``), the benchmark of the size most LMI endpoints serve.

Stdlib only, deterministic.

    python scripts/gen_latency_targets.py [--cache-dir DIR] [--version 6.0.17] [--output FILE | --check]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
OUTPUT = REPO_ROOT / "lmi_config" / "data" / "latency_targets.json"
PACKAGE = "mlcommons-loadgen"
VERSION = "6.0.17"
MEMBER = "mlperf.conf"
DEFAULT = "llama3_1-8b"
SCENARIO = "Server"
# the same values, at the commit plan cited before this file existed
ALSO_AT = (
    "https://github.com/mlcommons/inference/blob/001712e9daf80386e0dda43f97b8f36981d792c4/loadgen/mlperf.conf"
)
LINE = re.compile(r"^\s*([\w.*-]+)\.(\w+|\*)\.(\w+)\s*=\s*([\d.]+)\s*(?:#.*)?$")


def sdist(version: str, cache: Path) -> Path:
    """The package's source archive: from the cache, else downloaded into it with pip."""
    cache.mkdir(parents=True, exist_ok=True)
    name = f"mlcommons_loadgen-{version}.tar.gz"
    found = cache / name
    if found.exists():
        return found
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"{PACKAGE}=={version}",
                "-d",
                scratch,
            ],
            check=True,
            capture_output=True,
        )
        downloaded = Path(scratch) / name
        found.write_bytes(downloaded.read_bytes())
    return found


def read_conf(archive: Path) -> tuple[str, list[str]]:
    """(the member's path in the archive, its lines) of ``mlperf.conf``."""
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar.getmembers():
            if member.isfile() and Path(member.name).name == MEMBER:
                handle = tar.extractfile(member)
                assert handle is not None
                return member.name, handle.read().decode("utf-8").splitlines()
    raise ValueError(f"{archive.name}: no {MEMBER}")


def settings(lines: list[str]) -> dict[tuple[str, str, str], tuple[float, int]]:
    """(model, scenario, key) -> (value, 1-based line); a later line wins, as LoadGen reads the file."""
    found: dict[tuple[str, str, str], tuple[float, int]] = {}
    for number, line in enumerate(lines, start=1):
        match = LINE.match(line)
        if match:
            model, scenario, key, value = match.groups()
            found[(model, scenario, key)] = (float(value), number)
    return found


def _lookup(
    found: dict[tuple[str, str, str], tuple[float, int]], model: str, key: str
) -> tuple[float, int] | None:
    """A benchmark's setting in the server scenario: its own line, else the wildcards' (as LoadGen)."""
    for candidate in ((model, SCENARIO), (model, "*"), ("*", SCENARIO), ("*", "*")):
        if (*candidate, key) in found:
            return found[(*candidate, key)]
    return None


def targets(member: str, lines: list[str], version: str) -> list[dict[str, Any]]:
    """Every benchmark whose server scenario states TTFT and TPOT targets, in the file's order."""
    found = settings(lines)
    where = f"{PACKAGE} {version} source archive on PyPI (https://pypi.org/project/{PACKAGE}/{version}/), {member}"
    models = list(
        dict.fromkeys(model for model, scenario, key in found if scenario == SCENARIO and model != "*")
    )
    entries = []
    for model in models:
        ttft, tpot = _lookup(found, model, "ttft_latency"), _lookup(found, model, "tpot_latency")
        percentile = _lookup(found, model, "target_latency_percentile")
        if ttft is None or tpot is None or percentile is None:
            continue
        entries.append(
            {
                "benchmark": model,
                "scenario": SCENARIO,
                "ttft_ms": ttft[0],
                "tpot_ms": tpot[0],
                "percentile": percentile[0],
                "source": f"{where}:{ttft[1]} (ttft_latency), :{tpot[1]} (tpot_latency), "
                f":{percentile[1]} (target_latency_percentile)",
            }
        )
    return entries


def build(version: str, cache: Path) -> dict[str, Any]:
    member, lines = read_conf(sdist(version, cache))
    entries = targets(member, lines, version)
    if DEFAULT not in {entry["benchmark"] for entry in entries}:
        raise ValueError(f"{MEMBER} of {PACKAGE} {version} states no server TTFT/TPOT target for {DEFAULT}")
    return {
        "source": (
            f"generated by scripts/gen_latency_targets.py from {MEMBER} in the {PACKAGE} {version} source "
            f"archive on PyPI (MLPerf Inference LoadGen's settings, server scenario); the {DEFAULT} values are "
            f"the same at {ALSO_AT}"
        ),
        "default": DEFAULT,
        "targets": entries,
    }


def main(argv: list[str] | None = None) -> int:
    """Write the file (or, with --check, exit 1 where it differs from what the archive gives)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--version", default=VERSION)
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "lmi-config" / "loadgen")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--check", action="store_true")
    arguments = parser.parse_args(argv)
    document = build(arguments.version, arguments.cache_dir)
    text = json.dumps(document, indent=1) + "\n"
    if arguments.check:
        same = arguments.output.exists() and arguments.output.read_text(encoding="utf-8") == text
        print(f"{arguments.output.name} {'is' if same else 'is not'} what {MEMBER} gives")
        return 0 if same else 1
    arguments.output.write_text(text, encoding="utf-8")
    print(f"wrote {arguments.output}: {len(document['targets'])} targets, default {document['default']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
