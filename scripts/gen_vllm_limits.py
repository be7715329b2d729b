#!/usr/bin/env python3
"""Generate lmi_config/data/vllm_limits.json: values vLLM itself refuses, per vLLM version an LMI image ships.

vLLM checks some engine arguments against fixed lists of its own; LMI passes the option through and
the engine fails at start-up. For each vLLM version of data/vllm_engine_args.json this script reads
the version's source archive (obtained exactly as scripts/gen_vllm_engine_args.py obtains it: the
cache directory first, then the package index) with ast -- vllm is never installed or imported -- and
records:

- ``max_lora_rank``: the ranks LoRAConfig accepts (``possible_max_ranks = (8, 16, …)`` in
  ``__post_init__`` up to 0.10, the ``MaxLoRARanks`` Literal from 0.11), with vLLM's message.

It also writes lmi_config/data/vllm_cuda_graphs.json: per version, the largest decode batch vLLM
captures a CUDA graph for by default (larger batches run eagerly), where the version's code states it:

- ``min(max_num_seqs * 2, N)`` (vllm/config/scheduler.py in 0.10, vllm/config/vllm.py from 0.11);
- a fixed capture list built from ``range(8, N + 1, 8)`` (vllm/config.py ``batch_size_capture_list``,
  0.7-0.8, the V1 engine's default list);
- ``_BATCH_SIZES_TO_CAPTURE = [1, 2, 4] + [_BATCH_SIZE_ALIGNMENT * i for i in range(1, K)]``
  (vllm/worker/model_runner.py, 0.4-0.6).

The first form found wins, in that order; a version where none is found is recorded with a null
bound and says so (never a value carried over from another version).

Stdlib only, deterministic.

    python scripts/gen_vllm_limits.py --cache-dir /tmp/vllm-sdists
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_vllm_engine_args import DEFAULT_INDEX, obtain, read_python_sources, version_key  # noqa: E402

GITHUB = "https://github.com/vllm-project/vllm/blob/v{version}/{path}"


def lora_ranks(sources: dict[str, str]) -> tuple[list[int], str, bool] | None:
    """The accepted ``max_lora_rank`` values, the file that lists them, and whether pydantic checks
    them (the ``MaxLoRARanks`` Literal) rather than LoRAConfig's own code."""
    for path, text in sorted(sources.items()):
        if "possible_max_ranks" not in text and "MaxLoRARanks" not in text:
            continue
        tree = ast.parse(text)
        for node in ast.walk(tree):
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
            if not isinstance(target, ast.Name) or target.id not in ("possible_max_ranks", "MaxLoRARanks"):
                continue
            value = node.value  # type: ignore[union-attr]
            if isinstance(value, ast.Subscript):  # Literal[1, 8, …]
                value = value.slice
            items = ast.literal_eval(value)
            ranks = sorted(int(item) for item in (items if isinstance(items, tuple | list) else [items]))
            return ranks, path, target.id == "MaxLoRARanks"
    return None


def _factors(node: ast.AST) -> list[ast.AST]:
    """The operands of a product ``a * b * c``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _factors(node.left) + _factors(node.right)
    return [node]


def _factor_names(node: ast.AST) -> list[str] | None:
    """The names multiplied by 2 in ``max_num_seqs * [other *] 2``, else None."""
    names, twice = [], False
    for factor in _factors(node):
        if isinstance(factor, ast.Constant) and factor.value == 2:
            twice = True
        elif isinstance(factor, ast.Attribute | ast.Name):
            names.append(factor.attr if isinstance(factor, ast.Attribute) else factor.id)
        else:
            return None
    return names if twice and "max_num_seqs" in names else None


def _minimum_rule(tree: ast.AST) -> tuple[int, int, str] | None:
    """``min(max_num_seqs * [decode_query_len *] 2, N)`` in code (not a docstring): (N, line, the
    factors besides max_num_seqs)."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "min"):
            continue
        if len(node.args) != 2 or not isinstance(node.args[1], ast.Constant):
            continue
        names = _factor_names(node.args[0])
        if names is not None and isinstance(node.args[1].value, int):
            others = "".join(f" x {name}" for name in names if name != "max_num_seqs")
            return node.args[1].value, node.lineno, others
    return None


def _range_list_rule(tree: ast.AST) -> tuple[int, int, str] | None:
    """``batch_size_capture_list = [1, 2, 4] + [i for i in range(8, END, 8)]``: (largest size, line)."""
    for node in ast.walk(tree):
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if not isinstance(target, ast.Name) or target.id != "batch_size_capture_list":
            continue
        for call in ast.walk(node.value):  # type: ignore[union-attr]
            arguments = getattr(call, "args", [])
            if (
                isinstance(call, ast.Call)
                and getattr(call.func, "id", None) == "range"
                and len(arguments) == 3
            ):
                try:
                    start, end, step = (ast.literal_eval(argument) for argument in arguments)
                except ValueError:
                    continue
                return list(range(start, end, step))[-1], node.lineno, ""
    return None


def _alignment_list_rule(tree: ast.AST) -> tuple[int, int, str] | None:
    """``_BATCH_SIZES_TO_CAPTURE = [1, 2, 4] + [_BATCH_SIZE_ALIGNMENT * i for i in range(1, K)]``."""
    constants: dict[str, int] = {}
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, int):
                constants[name] = node.value.value
            if name != "_BATCH_SIZES_TO_CAPTURE":
                continue
            for comprehension in ast.walk(node.value):
                if not isinstance(comprehension, ast.ListComp):
                    continue
                element, generator = comprehension.elt, comprehension.generators[0]
                alignment = getattr(getattr(element, "left", None), "id", None)
                bounds = [ast.literal_eval(argument) for argument in getattr(generator.iter, "args", [])]
                if alignment in constants and len(bounds) == 2:
                    return constants[alignment] * (bounds[1] - 1), node.lineno, ""
    return None


CUDA_GRAPH_RULES = (
    ("min(2 x max_num_seqs{others}, {bound})", _minimum_rule),
    (
        "a fixed capture list up to {bound} for the V1 engine (VLLM_USE_V1); V0 captures up to max_num_seqs",
        _range_list_rule,
    ),
    ("a fixed capture list up to {bound}, and up to max_num_seqs", _alignment_list_rule),
)


def cuda_graph_bound(sources: dict[str, str], version: str) -> dict[str, Any]:
    """The largest batch the version captures a CUDA graph for by default, the rule and the line
    that states it; a null bound where the version's code states none of the known forms."""
    for rule, find in CUDA_GRAPH_RULES:
        for path, text in sorted(sources.items()):
            if "max_num_seqs" not in text and "CAPTURE" not in text and "capture" not in text:
                continue
            found = find(ast.parse(text))
            if found is not None:
                bound, line, others = found
                relative = path.split("/", 1)[1] if path.startswith("vllm-") else path
                return {
                    "max_capture_batch": bound,
                    "rule": rule.format(bound=bound, others=others),
                    "source": GITHUB.format(version=version, path=relative) + f"#L{line}",
                }
    return {
        "max_capture_batch": None,
        "rule": "not stated in this version's source in a form the generator knows",
        "source": f"https://github.com/vllm-project/vllm/tree/v{version}",
    }


def write_cuda_graphs(bounds: dict[str, Any], output: Path) -> None:
    """data/vllm_cuda_graphs.json from the bounds found per version."""
    document = {
        "source": "generated by scripts/gen_vllm_limits.py from the source archives of each vLLM version an LMI "
        "image ships: the largest decode batch captured as a CUDA graph by default, e.g. "
        + GITHUB.format(version="0.10.2", path="vllm/config/scheduler.py")
        + "#L244",
        "versions": bounds,
    }
    output.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {output}: {len(bounds)} versions")


def main(argv: list[str] | None = None) -> int:
    """Command line: the archive cache and where to write."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/vllm-sdists"))
    parser.add_argument("--index-url", default=DEFAULT_INDEX)
    parser.add_argument("--output", type=Path, default=REPO_ROOT / "lmi_config/data/vllm_limits.json")
    parser.add_argument(
        "--cuda-graphs-output", type=Path, default=REPO_ROOT / "lmi_config/data/vllm_cuda_graphs.json"
    )
    arguments = parser.parse_args(argv)
    bounds: dict[str, Any] = {}
    engine_args = json.loads(
        (REPO_ROOT / "lmi_config/data/vllm_engine_args.json").read_text(encoding="utf-8")
    )
    versions: dict[str, Any] = {}
    for version in sorted(engine_args["versions"], key=version_key):
        archive = obtain(version, arguments.cache_dir, arguments.index_url, False, "x86_64")
        if archive is None:
            print(f"vllm {version}: no archive", file=sys.stderr)
            return 2
        sources = read_python_sources(archive)
        bounds[version] = cuda_graph_bound(sources, version)
        print(
            f"vllm {version}: CUDA graphs up to batch {bounds[version]['max_capture_batch']}", file=sys.stderr
        )
        found = lora_ranks(sources)
        if found is None:
            continue
        ranks, path, literal = found
        relative = path.split("/", 1)[1] if path.startswith("vllm-") else path
        listed = [str(rank) for rank in ranks]
        message = (
            "Input should be " + ", ".join(listed[:-1]) + " or " + listed[-1]
            if literal
            else "max_lora_rank ({value}) must be one of " + str(tuple(ranks)) + "."
        )
        versions[version] = {
            "max_lora_rank": ranks,
            "message": message,
            "source": GITHUB.format(version=version, path=relative),
        }
        print(f"vllm {version}: max_lora_rank {ranks}", file=sys.stderr)
    document = {
        "source": "generated by scripts/gen_vllm_limits.py from the source archives of each vLLM version an LMI image "
        "ships (vllm/config.py LoRAConfig, vllm/config/lora.py MaxLoRARanks), e.g. "
        + GITHUB.format(version="0.11.1", path="vllm/config/lora.py"),
        "versions": versions,
    }
    arguments.output.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {arguments.output}: {len(versions)} versions")
    write_cuda_graphs(bounds, arguments.cuda_graphs_output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
