"""Generate the ``engine_buckets`` entry of lmi_config/data/perf_devices.json from transformers-neuronx's
own source: the shapes it compiles, which the performance model times (``lmi_config/perf/buckets.py``).

Read (with ``ast``; transformers-neuronx is never installed or imported), each fact with the line it
is read from and a URL to that line at the commit read:

- ``smallest_token_bucket``: the first argument of ``power_of_two_bucket_sizes`` in
  ``bucket.token_sizes`` (decode buckets start there);
- ``bucket_growth_factor``: what ``utils.power_of_two_bucket_sizes`` multiplies a bucket by to get
  the next (the compiled sequence length is always the last bucket);
- ``context_bucket_divisor``: ``bucket.context_sizes`` makes each default prefill bucket a decode
  bucket floor-divided by it.

Run: python scripts/gen_neuron_buckets.py --git-dir DIR [--commit REV] [--output FILE | --check]
DIR is a clone of https://github.com/aws-neuron/transformers-neuronx (a bare one will do).
Deterministic: the same commit gives the same file.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lmi_config.io import OutputError, write_atomically  # noqa: E402

OUTPUT = ROOT / "lmi_config" / "data" / "perf_devices.json"
REPOSITORY = "https://github.com/aws-neuron/transformers-neuronx"
BUCKET_FILE = "src/transformers_neuronx/bucket.py"
UTILS_FILE = "src/transformers_neuronx/utils.py"


def _show(git_dir: Path, commit: str, path: str) -> str:
    completed = subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise ValueError(f"{git_dir}: cannot read {path} at {commit} ({completed.stderr.strip()[:200]})")
    return completed.stdout


def _function(tree: ast.Module, name: str, path: str) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise ValueError(f"{path}: no function {name}()")


def smallest_token_bucket(bucket_source: str) -> tuple[int, int]:
    """(first decode bucket, line) from ``token_sizes``' call of ``power_of_two_bucket_sizes``."""
    for node in ast.walk(_function(ast.parse(bucket_source), "token_sizes", BUCKET_FILE)):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "power_of_two_bucket_sizes"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, int)
        ):
            return node.args[0].value, node.lineno
    raise ValueError(f"{BUCKET_FILE}: token_sizes() no longer calls power_of_two_bucket_sizes(<int>, ...)")


def context_bucket_divisor(bucket_source: str) -> tuple[int, int]:
    """(divisor, line) of the default prefill buckets: ``[bucket // N for bucket in token_buckets]``."""
    for node in ast.walk(_function(ast.parse(bucket_source), "context_sizes", BUCKET_FILE)):
        if (
            isinstance(node, ast.ListComp)
            and isinstance(node.elt, ast.BinOp)
            and isinstance(node.elt.op, ast.FloorDiv)
            and isinstance(node.elt.right, ast.Constant)
            and isinstance(node.elt.right.value, int)
        ):
            return node.elt.right.value, node.lineno
    raise ValueError(f"{BUCKET_FILE}: context_sizes() no longer floor-divides the token buckets")


def bucket_growth_factor(utils_source: str) -> tuple[int, int]:
    """(factor, line): ``bucket_size *= N`` in ``power_of_two_bucket_sizes``."""
    for node in ast.walk(_function(ast.parse(utils_source), "power_of_two_bucket_sizes", UTILS_FILE)):
        if (
            isinstance(node, ast.AugAssign)
            and isinstance(node.op, ast.Mult)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, int)
        ):
            return node.value.value, node.lineno
    raise ValueError(f"{UTILS_FILE}: power_of_two_bucket_sizes() no longer multiplies the bucket size")


def entry(git_dir: Path, commit: str) -> dict[str, Any]:
    """The engine_buckets entry of transformers-neuronx at one commit."""
    resolved = _resolve(git_dir, commit)
    bucket_source = _show(git_dir, resolved, BUCKET_FILE)
    smallest, smallest_line = smallest_token_bucket(bucket_source)
    divisor, divisor_line = context_bucket_divisor(bucket_source)
    factor, factor_line = bucket_growth_factor(_show(git_dir, resolved, UTILS_FILE))
    blob = f"{REPOSITORY}/blob/{resolved}"
    return {
        "engine": "transformers-neuronx",
        "smallest_token_bucket": smallest,
        "bucket_growth_factor": factor,
        "context_bucket_divisor": divisor,
        "source": (
            f"bucket.token_sizes {blob}/{BUCKET_FILE}#L{smallest_line} ; "
            f"utils.power_of_two_bucket_sizes {blob}/{UTILS_FILE}#L{factor_line} ; "
            f"bucket.context_sizes (default prefill buckets) {blob}/{BUCKET_FILE}#L{divisor_line}"
        ),
    }


def _resolve(git_dir: Path, commit: str) -> str:
    completed = subprocess.run(
        ["git", "--git-dir", str(git_dir), "rev-parse", "--verify", f"{commit}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise ValueError(f"{git_dir}: no commit {commit!r}")
    return completed.stdout.strip()


def main(argv: Sequence[str] | None = None) -> int:
    """Write the entry into perf_devices.json (or, with --check, exit 1 when the file differs);
    exit 2 with one line when the source or the output cannot be read or written."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--git-dir", type=Path, required=True)
    parser.add_argument("--commit", default="HEAD")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--check", action="store_true")
    arguments = parser.parse_args(argv)
    try:
        document = json.loads(arguments.output.read_text(encoding="utf-8"))
        updated = {**document, "engine_buckets": [entry(arguments.git_dir, arguments.commit)]}
        if arguments.check:
            same = updated == document
            print(f"{arguments.output.name} {'is' if same else 'is not'} what the source gives")
            return 0 if same else 1
        write_atomically(arguments.output, json.dumps(updated, indent=1, ensure_ascii=False) + "\n")
    except (ValueError, OSError, OutputError) as error:
        print(f"gen_neuron_buckets: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
