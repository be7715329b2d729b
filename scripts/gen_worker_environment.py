#!/usr/bin/env python3
"""Generate lmi_config/data/worker_environment.json: the environment variables the DJL Python engine
sets for each worker it starts, replacing what the container's environment says.

Reads ``engines/python/src/main/java/ai/djl/python/engine/Connection.java`` on every release branch
(``<djl>-dlc`` / ``<djl>-lmi<N>-dlc``) of a djl-serving clone through git plumbing (nothing is checked
out or run) and finds two kinds of assignment:

- ``pyEnv.addEnv("NAME", …)``: ``PyEnv.getEnvironmentVars`` copies the process environment and then
  ``putAll`` of these, so the worker sees the engine's value. The accelerator is the one of the
  enclosing ``if``: ``"nc".equals(device.getDeviceType())`` is Neuron, ``device.isGpu()`` is GPU.
- ``"NAME=" + …`` in the ``mpirun`` command line (``-x NAME=value``), which GPU engines started
  through MPI (lmi-dist, TensorRT-LLM) use: mpirun exports that value to every rank.

Each variable gets runs of consecutive releases and the file and line where it is set at the first
and last release of the run.

    python scripts/gen_worker_environment.py /work/.mirror/deepjavalibrary+djl-serving/repo
    python scripts/gen_worker_environment.py REPO --check   # exit 1 when the file differs
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "scripts"))

from djl_options.repository import BRANCH_PATTERN, Git, version_tuple  # noqa: E402

OUTPUT = REPO_ROOT / "lmi_config" / "data" / "worker_environment.json"
CONNECTION = "engines/python/src/main/java/ai/djl/python/engine/Connection.java"
BLOB = "https://github.com/deepjavalibrary/djl-serving/blob/{commit}/" + CONNECTION + "#L{line}"
ADD_ENV = re.compile(r'pyEnv\.addEnv\("([A-Z_][A-Z0-9_]*)"')
MPI_EXPORT = re.compile(r'=\s*"([A-Z_][A-Z0-9_]*)="\s*\+')
NEURON_BLOCK = re.compile(r'"nc"\.equals\(device\.getDeviceType\(\)\)')
GPU_BLOCK = re.compile(r"device\.isGpu\(\)")


def accelerator_of(lines: list[str], index: int) -> str | None:
    """The accelerator of the nearest enclosing ``if`` that names one, else None."""
    for line in reversed(lines[:index]):
        if NEURON_BLOCK.search(line):
            return "neuron"
        if GPU_BLOCK.search(line):
            return "gpu"
    return None


def assignments(text: str) -> dict[tuple[str, str], int]:
    """(variable, accelerator) -> 1-based line of the first assignment in Connection.java."""
    lines = text.splitlines()
    found: dict[tuple[str, str], int] = {}
    in_mpirun = False
    for index, line in enumerate(lines):
        if '"mpirun"' in line:
            in_mpirun = True  # the mpirun argument array of the MPI launcher (GPU engines only)
        if line.strip().startswith("return args;"):
            in_mpirun = False
        match = ADD_ENV.search(line)
        accelerator = accelerator_of(lines, index) if match else None
        if match is None and in_mpirun:
            match = MPI_EXPORT.search(line)
            accelerator = "gpu" if match else None
        if match and accelerator:
            found.setdefault((match.group(1), accelerator), index + 1)
    return found


def release_branches(git: Git) -> list[tuple[str, str, str]]:
    """(djl version, branch, commit) of every release branch, in release order (the newest LMI of a
    DJL version last)."""
    rows = []
    for branch, commit in git.branches().items():
        match = BRANCH_PATTERN.match(branch)
        if match:
            rows.append((version_tuple(match["djl"]), int(match["lmi"] or 0), match["djl"], branch, commit))
    rows.sort()
    return [(djl, branch, commit) for _, _, djl, branch, commit in rows]


def collect(git: Git) -> list[dict[str, object]]:
    """One row per variable and accelerator, per run of consecutive releases that set it."""
    branches = release_branches(git)
    rows: list[dict[str, object]] = []
    open_rows: dict[tuple[str, str], dict[str, object]] = {}
    for djl, branch, commit in branches:
        blob = git.tree(commit, CONNECTION).get(CONNECTION)
        found = assignments(git.blob(blob)) if blob else {}
        for key in list(open_rows):
            if key not in found:
                del open_rows[key]  # the run ended at the previous release
        for (name, accelerator), line in sorted(found.items()):
            row = open_rows.get((name, accelerator))
            if row is None:
                row = {
                    "name": name,
                    "accelerator": accelerator,
                    "since": djl,
                    "until": djl,
                    "source": BLOB.format(commit=commit, line=line) + f" ({branch})",
                }
                open_rows[(name, accelerator)] = row
                rows.append(row)
            row["until"] = djl
            row["last_source"] = BLOB.format(commit=commit, line=line) + f" ({branch})"
    newest = branches[-1][0] if branches else None
    for row in rows:
        if row["until"] == newest:
            row["until"] = None  # still set on the newest release branch
        row["source"] = f"{row['source']}; {row.pop('last_source')}"
    return rows


def document(rows: list[dict[str, object]]) -> dict[str, object]:
    """The data file."""
    return {
        "source": (
            "generated by scripts/gen_worker_environment.py from djl-serving's Connection.java on every release "
            "branch (pyEnv.addEnv, which PyEnv.getEnvironmentVars applies over the process environment, and the "
            "mpirun -x exports); the clone's earliest release branch is 0.19.0-dlc, so a 'since' of 0.19.0 means "
            "'at least since' — https://github.com/deepjavalibrary/djl-serving/blob/0.30.0-dlc/engines/python/src/"
            "main/java/ai/djl/python/engine/PyEnv.java"
        ),
        "variables": rows,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "repository", type=Path, help="git clone (or bare mirror) of deepjavalibrary/djl-serving"
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when the data file is not what it would write"
    )
    arguments = parser.parse_args()
    git = Git(arguments.repository)
    try:
        text = json.dumps(document(collect(git)), indent=1, ensure_ascii=False) + "\n"
    except subprocess.CalledProcessError as error:
        print(f"git failed on {arguments.repository}: {error.stderr.strip()}", file=sys.stderr)
        return 2
    finally:
        git.close()
    if arguments.check:
        same = OUTPUT.exists() and OUTPUT.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{OUTPUT} differs from what the script writes")
        return 0 if same else 1
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT} ({text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
