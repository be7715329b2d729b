#!/usr/bin/env python3
"""Generate lmi_config/data/model_identities.json: the architecture of Hub models the catalog lacks.

vLLM's test suite names, for every architecture its registry implements, the Hugging Face
checkpoints it tests that architecture with (``tests/models/registry.py``: ``_HfExamplesInfo``,
its default id and its ``extras``; from vLLM 0.7). The architecture is what the checkpoint's
config.json declares, so a model id that appears there can be judged on what the image's engine
registers (LMI606/LMI607) without its config.json — the memory and head checks still need
``--model`` or ``--hub``.

Read from the same archives ``scripts/gen_vllm_engine_args.py`` obtains (PyPI sdists; wheels
carry no tests), one per vLLM version ``vllm_capabilities.json`` reads; the newest release that
names an id gives its entry and source line. Left out, with the reason printed: entries whose
``hf_overrides`` replace the architectures (the checkpoint declares another), speculative-decoding
drafts and the Transformers-backend tables (not the checkpoint's own architecture), entries marked
``is_available_online=False``, ``dummy``/tiny test repositories, and ids two tables give different
architectures.

The model type of each architecture (what the Neuron loaders and the images' transformers are judged
on) is read from ``transformers/models/auto/modeling_auto.py`` (the ``*_MAPPING_NAMES`` tables: model
type -> class) of the newest transformers ``transformers_model_types.json`` covers, from its wheel
(``scripts/gen_transformers_model_types.py`` downloads it); a class several model types map to takes
the one its name starts with (LlamaForCausalLM: llama, not code_llama), else none.

Run: python scripts/gen_model_identities.py [--cache-dir DIR] [--transformers-cache DIR]
(stdlib only, deterministic)
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import tarfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_transformers_model_types as transformers_types  # noqa: E402  (its wheel download)
import gen_vllm_engine_args as engine_args  # noqa: E402  (the sibling generator: archive download)

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_FILE = REPO_ROOT / "lmi_config" / "data" / "model_identities.json"
CAPABILITIES_FILE = REPO_ROOT / "lmi_config" / "data" / "vllm_capabilities.json"
TRANSFORMERS_FILE = REPO_ROOT / "lmi_config" / "data" / "transformers_model_types.json"
AUTO_MODELING = "transformers/models/auto/modeling_auto.py"
_CLASS_PREFIX = re.compile(r"^(.*?)(?:For[A-Z]\w*|LMHeadModel|Model)$")
REGISTRY = "tests/models/registry.py"
SKIPPED_TABLES = (
    "_SPECULATIVE_DECODING_EXAMPLE_MODELS",
    "_TRANSFORMERS_BACKEND_MODELS",
    "_TRANSFORMERS_MODELS",
)
TEST_ONLY = ("tiny-random", "dummy", "tiny-", "-tiny", "hf-internal-testing/")


def _versions() -> list[str]:
    document = json.loads(CAPABILITIES_FILE.read_text())
    versions = {row["read_from"] for row in document["versions"].values()}
    return sorted(versions, key=engine_args_numbers)


def engine_args_numbers(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.replace(".post", ".").split(".") if part.isdigit())


def registry_source(archive: Path) -> str | None:
    """The text of tests/models/registry.py in an sdist (None: a wheel, or a release without it)."""
    if not archive.name.endswith(".tar.gz"):
        return None
    with tarfile.open(archive) as tar:
        for member in tar:
            if member.isfile() and member.name.split("/", 1)[-1] == REGISTRY:
                handle = tar.extractfile(member)
                return handle.read().decode("utf-8") if handle else None
    return None


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((keyword.value for keyword in call.keywords if keyword.arg == name), None)


def _literal(node: ast.expr | None) -> object:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def examples(source: str) -> tuple[list[dict], list[str]]:
    """(id, architecture, table, trust_remote_code, line) rows of one registry, and what was left out."""
    rows, left_out = [], []
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Dict)):
            continue
        target = node.targets[0]
        table = target.id if isinstance(target, ast.Name) else ""
        if not table.endswith("_MODELS") or table in SKIPPED_TABLES:
            continue
        for key, value in zip(node.value.keys, node.value.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(value, ast.Call)):
                continue
            architecture = key.value
            default = value.args[0] if value.args else _keyword(value, "default")
            extras = value.args[1] if len(value.args) > 1 else _keyword(value, "extras")
            overrides = _literal(_keyword(value, "hf_overrides"))
            if isinstance(overrides, dict) and "architectures" in overrides:
                left_out.append(f"{architecture}: hf_overrides replace the checkpoint's architectures")
                continue
            ids = [_literal(default)]
            extra_ids = _literal(extras)
            if isinstance(extra_ids, dict):
                ids += list(extra_ids.values())
            if _literal(_keyword(value, "is_available_online")) is False:
                left_out.append(
                    f"{architecture}: is_available_online=False (no such repository on the Hub yet)"
                )
                continue
            trust = _literal(_keyword(value, "trust_remote_code")) is True
            for model_id in ids:
                if not isinstance(model_id, str) or model_id.count("/") != 1:
                    continue
                if any(marker in model_id.lower() for marker in TEST_ONLY):
                    continue
                rows.append(
                    {
                        "model_id": model_id,
                        "architecture": architecture,
                        "table": table.strip("_")
                        .removesuffix("_EXAMPLE_MODELS")
                        .removesuffix("_MODELS")
                        .lower(),
                        "trust_remote_code": trust,
                        "line": value.lineno,
                    }
                )
    return rows, left_out


def class_model_types(source: str) -> dict[str, str]:
    """Class name -> model type, from modeling_auto.py's ``*_MAPPING_NAMES`` (unambiguous ones only)."""
    types: dict[str, set[str]] = {}
    for node in ast.parse(source).body:
        if not (
            isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        ):
            continue
        if not node.targets[0].id.endswith("MAPPING_NAMES") or not isinstance(node.value, ast.Call):
            continue
        items = _literal(node.value.args[0]) if node.value.args else None
        for pair in items if isinstance(items, list) else []:
            model_type, classes = pair
            for name in classes if isinstance(classes, (tuple, list)) else (classes,):
                types.setdefault(name, set()).add(model_type)
    chosen = {}
    for name, candidates in types.items():
        prefix = _CLASS_PREFIX.match(name)
        stem = prefix.group(1).lower() if prefix else None
        named = [kind for kind in candidates if kind.replace("_", "").replace("-", "") == stem]
        if len(candidates) == 1:
            chosen[name] = next(iter(candidates))
        elif len(named) == 1:
            chosen[name] = named[0]
    return chosen


def newest_transformers() -> str:
    versions = json.loads(TRANSFORMERS_FILE.read_text())["versions"]
    return max(versions, key=transformers_types.version_key)


def build(cache: Path, index_url: str, types: dict[str, str], transformers: str) -> tuple[dict, list[str]]:
    found: dict[str, dict] = {}
    conflicts: dict[str, set[str]] = {}
    report: list[str] = []
    for version in _versions():
        archive = engine_args.find_cached(cache, version) or engine_args.obtain(
            version, cache, index_url, True, "x86_64"
        )
        source = registry_source(archive) if archive is not None else None
        if source is None:
            report.append(f"{version}: no {REGISTRY} in {archive.name if archive else 'no archive'}")
            continue
        rows, left_out = examples(source)
        report += [f"{version}: left out {line}" for line in left_out]
        by_id: dict[str, dict] = {}
        for row in rows:
            key = row["model_id"].lower()
            if key in by_id and by_id[key]["architecture"] != row["architecture"]:
                conflicts.setdefault(key, set()).update({by_id[key]["architecture"], row["architecture"]})
            by_id.setdefault(key, row)  # text generation and multimodal tables come first
        for key, row in by_id.items():
            found[key] = {
                "model_id": row["model_id"],
                "architecture": row["architecture"],
                "model_type": types.get(row["architecture"]),
                "table": row["table"],
                "trust_remote_code": row["trust_remote_code"],
                "source": f"https://github.com/vllm-project/vllm/blob/v{version}/{REGISTRY}#L{row['line']}",
            }
    for key, architectures in sorted(conflicts.items()):
        report.append(f"left out {key}: tables give different architectures {sorted(architectures)}")
        found.pop(key, None)
    document = {
        "source": (
            "generated by scripts/gen_model_identities.py from vLLM's tests/models/registry.py (_HfExamplesInfo: the "
            "Hub checkpoints each architecture is tested with) in the sdists of the vLLM releases "
            "vllm_capabilities.json reads; the newest release naming an id gives its entry — "
            "https://pypi.org/project/vllm/#history; model_type: the architecture's class in the *_MAPPING_NAMES "
            f"tables of transformers {transformers} — https://github.com/huggingface/transformers/blob/v{transformers}/"
            f"src/{AUTO_MODELING}"
        ),
        "models": [found[key] for key in sorted(found)],
    }
    return document, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "lmi-config" / "vllm"))
    parser.add_argument("--index-url", default=engine_args.DEFAULT_INDEX)
    parser.add_argument(
        "--transformers-cache", default=str(Path.home() / ".cache" / "lmi-config" / "transformers")
    )
    args = parser.parse_args(argv)
    transformers = newest_transformers()
    cache = Path(args.transformers_cache)
    cache.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(transformers_types.wheel(transformers, cache)) as archive:
        types = class_model_types(archive.read(AUTO_MODELING).decode("utf-8"))
    document, report = build(Path(args.cache_dir), args.index_url, types, transformers)
    for line in report:
        engine_args.log(line)
    DATA_FILE.write_text(json.dumps(document, indent=1) + "\n")
    engine_args.log(f"wrote {DATA_FILE.relative_to(REPO_ROOT)} ({len(document['models'])} models)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
