#!/usr/bin/env python3
"""Generate lmi_config/data/transformers_model_types.json: the model types and pipeline tasks each pinned transformers knows.

An image can load a model only if its transformers recognises the model's ``model_type``
(``AutoConfig`` otherwise fails: "model type `qwen3` … Transformers does not recognize this
architecture"), unless the model brings its own code (``auto_map`` with trust_remote_code). For
every transformers version an LMI image pins (data/image_pins.json: exact pins, and the lowest
version a range allows), this script reads ``CONFIG_MAPPING_NAMES`` in
``transformers/models/auto/configuration_auto.py`` of that release's wheel from PyPI (downloaded
with ``pip download --no-deps``, opened with zipfile, parsed with ast -- never imported), and
writes for each model type the first and last of those versions that know it; likewise for the
task names ``pipeline()`` takes (``SUPPORTED_TASKS`` and ``TASK_ALIASES`` in ``transformers/pipelines/__init__.py``),
which the HF Accelerate handler passes its ``option.task`` to.

    python scripts/gen_transformers_model_types.py --cache-dir /tmp/transformers-wheels
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
MODULE = "transformers/models/auto/configuration_auto.py"
PIPELINES = "transformers/pipelines/__init__.py"
GITHUB = "https://github.com/huggingface/transformers/blob/v{version}/src/" + MODULE


def version_key(text: str) -> tuple[int, ...]:
    """``"4.45.2"`` -> ``(4, 45, 2)``."""
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def pinned_versions(pins: dict[str, Any]) -> list[str]:
    """The transformers versions the images pin, and the lowest one each range allows."""
    found: set[str] = set()
    for entry in pins["images"]:
        if "transformers" in entry["pins"]:
            found.add(entry["pins"]["transformers"])
        lowest = re.search(r">=\s*([\d.]+)", entry["ranges"].get("transformers", ""))
        if lowest:
            found.add(lowest.group(1))
    return sorted(found, key=version_key)


def wheel(version: str, cache: Path) -> Path:
    """The transformers wheel of one release (downloaded with pip when not in the cache)."""
    existing = sorted(cache.glob(f"transformers-{version}-*.whl"))
    if existing:
        return existing[0]
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
         f"transformers=={version}", "-d", str(cache)],
        check=True, capture_output=True,
    )  # fmt: skip
    return sorted(cache.glob(f"transformers-{version}-*.whl"))[0]


def model_types(path: Path) -> list[str]:
    """The keys of ``CONFIG_MAPPING_NAMES`` in one wheel."""
    with zipfile.ZipFile(path) as archive:
        tree = ast.parse(archive.read(MODULE).decode("utf-8"))
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id == "CONFIG_MAPPING_NAMES" and node.value is not None:
            pairs = node.value.args[0] if isinstance(node.value, ast.Call) else node.value
            return sorted(str(ast.literal_eval(item)[0]) for item in getattr(pairs, "elts", []))
    raise ValueError(f"no CONFIG_MAPPING_NAMES in {path.name}")


def pipeline_tasks(path: Path) -> list[str]:
    """The task names ``pipeline()`` takes: the keys of ``SUPPORTED_TASKS`` and ``TASK_ALIASES``."""
    with zipfile.ZipFile(path) as archive:
        tree = ast.parse(archive.read(PIPELINES).decode("utf-8"))
    names: set[str] = set()
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else None
        named = isinstance(target, ast.Name) and target.id in ("SUPPORTED_TASKS", "TASK_ALIASES")
        if named and isinstance(node.value, ast.Dict):  # type: ignore[union-attr]
            names.update(str(key.value) for key in node.value.keys if isinstance(key, ast.Constant))  # type: ignore[union-attr]
    return sorted(names)


def main(argv: list[str] | None = None) -> int:
    """Command line: where the wheels are kept, where to write."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/transformers-wheels"))
    parser.add_argument("--pins", type=Path, default=REPO_ROOT / "lmi_config/data/image_pins.json")
    parser.add_argument(
        "--output", type=Path, default=REPO_ROOT / "lmi_config/data/transformers_model_types.json"
    )
    arguments = parser.parse_args(argv)
    arguments.cache_dir.mkdir(parents=True, exist_ok=True)
    versions = pinned_versions(json.loads(arguments.pins.read_text(encoding="utf-8")))
    spans: dict[str, list[str]] = {}
    tasks: dict[str, list[str]] = {}
    for version in versions:
        print(f"transformers {version}", file=sys.stderr, flush=True)
        path = wheel(version, arguments.cache_dir)
        for name in model_types(path):
            spans.setdefault(name, [version, version])[1] = version
        for name in pipeline_tasks(path):
            tasks.setdefault(name, [version, version])[1] = version
    document = {
        "source": "generated by scripts/gen_transformers_model_types.py from CONFIG_MAPPING_NAMES in "
        f"{MODULE} of each transformers release an LMI image pins (data/image_pins.json), read from the "
        f"wheels on PyPI, e.g. {GITHUB.format(version=versions[-1])}",
        "versions": {version: GITHUB.format(version=version) for version in versions},
        "model_types": {name: {"first": span[0], "last": span[1]} for name, span in sorted(spans.items())},
        "pipeline_tasks": {name: {"first": span[0], "last": span[1]} for name, span in sorted(tasks.items())},
        "pipeline_tasks_source": f"SUPPORTED_TASKS and TASK_ALIASES in {PIPELINES}, e.g. "
        + GITHUB.format(version=versions[-1]).replace(MODULE, PIPELINES),
    }
    arguments.output.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {arguments.output}: {len(versions)} versions, {len(spans)} model types")
    return 0


if __name__ == "__main__":
    sys.exit(main())
