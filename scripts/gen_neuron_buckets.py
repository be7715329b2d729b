"""Generate the ``engine_buckets`` entries of lmi_config/data/perf_devices.json from the Neuron engines'
own source: the shapes they compile, which the performance model times (``lmi_config/perf/buckets.py``).

transformers-neuronx (``--git-dir``):

Read (with ``ast``; transformers-neuronx is never installed or imported), each fact with the line it
is read from and a URL to that line at the commit read:

- ``smallest_token_bucket``: the first argument of ``power_of_two_bucket_sizes`` in
  ``bucket.token_sizes`` (decode buckets start there);
- ``bucket_growth_factor``: what ``utils.power_of_two_bucket_sizes`` multiplies a bucket by to get
  the next (the compiled sequence length is always the last bucket);
- ``context_bucket_divisor``: ``bucket.context_sizes`` makes each default prefill bucket a decode
  bucket floor-divided by it.

NxD Inference (``--nxdi-git-dir``, with ``--vllm-sdist``: the vLLM whose Neuron loader serves it):

- ``smallest_token_bucket`` / ``smallest_context_bucket``: the constant first argument of
  ``generate_buckets`` in ``autobucketing.generate_buckets_for_tkg`` / ``generate_buckets_for_cte``
  (the bucketing branch without prefix caching);
- ``bucket_growth_factor``: the base of ``base**i`` in ``generate_buckets``' list, and
  ``last_bucket_rounding``: how it rounds log2 of the largest length to stop the powers (``round``:
  no bucket just below the compiled length), which is always the last bucket;
- ``bucketing_default``: the ``enable_bucketing`` vLLM's ``_get_default_neuron_config`` sets
  (NxD Inference's own default is off: one bucket, the compiled length).

Run: python scripts/gen_neuron_buckets.py --git-dir DIR [--commit REV]
     [--nxdi-git-dir DIR --vllm-sdist FILE [--nxdi-commit REV]] [--output FILE | --check]
DIR is a clone of https://github.com/aws-neuron/transformers-neuronx (a bare one will do); the NxD
Inference one of https://github.com/aws-neuron/neuronx-distributed-inference; FILE a vLLM sdist from
PyPI (``vllm-0.9.2.tar.gz``). An engine not regenerated keeps its entry. Deterministic: the same
commits give the same file.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tarfile
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
NXDI_REPOSITORY = "https://github.com/aws-neuron/neuronx-distributed-inference"
AUTOBUCKETING_FILE = "src/neuronx_distributed_inference/modules/autobucketing.py"
VLLM_LOADER = "vllm/model_executor/model_loader/neuronx_distributed.py"
ENGINES = ("transformers-neuronx", "neuronx-distributed-inference")


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


def _first_constant_call(source: str, function: str, callee: str) -> tuple[int, int]:
    """(constant first argument, line) of the first ``callee(<int>, ...)`` call in ``function``."""
    for node in ast.walk(_function(ast.parse(source), function, AUTOBUCKETING_FILE)):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == callee
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, int)
        ):
            return node.args[0].value, node.lineno
    raise ValueError(f"{AUTOBUCKETING_FILE}: {function}() no longer calls {callee}(<int>, ...)")


def power_rule(autobucketing_source: str) -> tuple[int, str, int]:
    """(base, rounding of log2(max_length), line) of ``generate_buckets``: ``[base**i for i in
    range(min_bound, max_bound)] + [max_length]`` with ``max_bound = <rounding>(log2(max_length))``."""
    function = _function(ast.parse(autobucketing_source), "generate_buckets", AUTOBUCKETING_FILE)
    base = line = None
    rounding = None
    for node in ast.walk(function):
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Pow)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, int)
        ):
            base, line = node.left.value, node.lineno
        if (
            isinstance(node, ast.Assign)
            and any(getattr(target, "id", None) == "max_bound" for target in node.targets)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
        ):
            rounding = node.value.func.id
    if base is None or line is None or rounding not in ("round", "int", "ceil", "floor"):
        raise ValueError(
            f"{AUTOBUCKETING_FILE}: generate_buckets() no longer makes powers up to a rounded log2"
        )
    return base, "floor" if rounding == "int" else rounding, line


def vllm_bucketing_default(sdist: Path) -> tuple[bool, str, int]:
    """(enable_bucketing, vLLM version, line) from the sdist's Neuron loader ``_get_default_neuron_config``."""
    match = re.fullmatch(r"vllm-(.+)\.tar\.gz", sdist.name)
    if match is None:
        raise ValueError(f"{sdist}: not a vLLM sdist (vllm-VERSION.tar.gz)")
    version = match.group(1)
    member = f"vllm-{version}/{VLLM_LOADER}"
    try:
        with tarfile.open(sdist) as archive:
            handle = archive.extractfile(member)
            if handle is None:
                raise KeyError(member)
            source = handle.read().decode("utf-8")
    except KeyError:
        raise ValueError(f"{sdist}: no {VLLM_LOADER} (this vLLM has no NxD Inference loader)") from None
    except (tarfile.TarError, OSError) as error:
        raise ValueError(f"{sdist}: cannot read the archive ({error})") from None
    function = _function(ast.parse(source), "_get_default_neuron_config", VLLM_LOADER)
    for node in ast.walk(function):
        if (
            isinstance(node, ast.keyword)
            and node.arg == "enable_bucketing"
            and isinstance(node.value, ast.Constant)
        ):
            return bool(node.value.value), version, node.value.lineno
    raise ValueError(f"{sdist}: _get_default_neuron_config() no longer sets enable_bucketing")


def nxdi_entry(git_dir: Path, commit: str, sdist: Path) -> dict[str, Any]:
    """The engine_buckets entry of NxD Inference at one commit, served by the sdist's vLLM."""
    resolved = _resolve(git_dir, commit)
    source = _show(git_dir, resolved, AUTOBUCKETING_FILE)
    token, token_line = _first_constant_call(source, "generate_buckets_for_tkg", "generate_buckets")
    context, context_line = _first_constant_call(source, "generate_buckets_for_cte", "generate_buckets")
    base, rounding, power_line = power_rule(source)
    enabled, version, enabled_line = vllm_bucketing_default(sdist)
    blob = f"{NXDI_REPOSITORY}/blob/{resolved}/{AUTOBUCKETING_FILE}"
    return {
        "engine": "neuronx-distributed-inference",
        "smallest_token_bucket": token,
        "bucket_growth_factor": base,
        "smallest_context_bucket": context,
        "last_bucket_rounding": rounding,
        "bucketing_default": enabled,
        "source": (
            f"autobucketing.generate_buckets_for_tkg {blob}#L{token_line} ; generate_buckets_for_cte "
            f"{blob}#L{context_line} ; generate_buckets {blob}#L{power_line} ; vLLM {version} "
            f"_get_default_neuron_config (enable_bucketing) "
            f"https://github.com/vllm-project/vllm/blob/v{version}/{VLLM_LOADER}#L{enabled_line}"
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
    parser.add_argument("--git-dir", type=Path, help="a transformers-neuronx clone")
    parser.add_argument("--commit", default="HEAD")
    parser.add_argument("--nxdi-git-dir", type=Path, help="a neuronx-distributed-inference clone")
    parser.add_argument("--nxdi-commit", default="HEAD")
    parser.add_argument(
        "--vllm-sdist", type=Path, help="the vLLM sdist whose Neuron loader serves NxD Inference"
    )
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--check", action="store_true")
    arguments = parser.parse_args(argv)
    if arguments.git_dir is None and arguments.nxdi_git_dir is None:
        parser.error("give --git-dir, --nxdi-git-dir or both")
    if (arguments.nxdi_git_dir is None) != (arguments.vllm_sdist is None):
        parser.error("--nxdi-git-dir and --vllm-sdist go together")
    try:
        document = json.loads(arguments.output.read_text(encoding="utf-8"))
        entries = {item["engine"]: item for item in document.get("engine_buckets", [])}
        if arguments.git_dir is not None:
            entries["transformers-neuronx"] = entry(arguments.git_dir, arguments.commit)
        if arguments.nxdi_git_dir is not None:
            entries["neuronx-distributed-inference"] = nxdi_entry(
                arguments.nxdi_git_dir, arguments.nxdi_commit, arguments.vllm_sdist
            )
        ordered = [entries[name] for name in ENGINES if name in entries]
        updated = {**document, "engine_buckets": ordered}
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
