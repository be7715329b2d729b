#!/usr/bin/env python3
"""Generate lmi_config/data/hub_token_variables.json: the environment variables huggingface_hub reads a Hub
token from, per huggingface_hub version an LMI image pins (lmi_config/data/image_pins.json).

A model download in the container goes through huggingface_hub, which takes the token from the environment
in a function of its own (``HfFolder.get_token`` in 0.17: ``HUGGING_FACE_HUB_TOKEN``;
``_get_token_from_environment`` from 0.19: ``HF_TOKEN``, then ``HUGGING_FACE_HUB_TOKEN``). For each pinned
version this script reads the release's wheel from PyPI (``pip download --no-deps --only-binary :all:``; the
archive is cached, never installed or imported) and records, with ``ast``, every literal name read through
``os.environ.get``, ``os.getenv`` or ``os.environ[...]`` inside a function whose name says token, with its file
and line. A name no version reads (``HF_API_TOKEN``) is not a token for any image.

    python scripts/gen_hub_token_variables.py [--cache-dir DIR]

Stdlib only (pip for the download), deterministic.
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

REPO_ROOT = Path(__file__).resolve().parent.parent
PINS = REPO_ROOT / "lmi_config" / "data" / "image_pins.json"
OUTPUT = REPO_ROOT / "lmi_config" / "data" / "hub_token_variables.json"
GITHUB = "https://github.com/huggingface/huggingface_hub/blob/v{version}/src/{path}#L{line}"
_ENVIRON_READS = ("os.environ.get", "os.getenv", "environ.get", "getenv")


def pinned_versions() -> list[str]:
    """Every huggingface_hub version an image (or one of its virtual environments) pins."""
    found: set[str] = set()

    def visit(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("huggingface-hub", "huggingface_hub") and isinstance(value, str):
                    found.add(value)
                else:
                    visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(json.loads(PINS.read_text(encoding="utf-8")))
    return sorted(found, key=lambda v: tuple(int(p) for p in re.findall(r"\d+", v)))


def wheel(version: str, cache: Path) -> Path:
    """The release's wheel, from the cache or PyPI."""
    found = sorted(cache.glob(f"huggingface_hub-{version}-*.whl"))
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-q",
             f"huggingface_hub=={version}", "-d", str(cache)],
            check=True,
        )  # fmt: skip
        found = sorted(cache.glob(f"huggingface_hub-{version}-*.whl"))
    return found[0]


def _name_read(node: ast.AST) -> str | None:
    """The literal variable name an ``os.environ.get("X")`` / ``os.getenv("X")`` / ``os.environ["X"]`` reads."""
    if isinstance(node, ast.Call) and ast.unparse(node.func) in _ENVIRON_READS and node.args:
        first = node.args[0]
        return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
    if isinstance(node, ast.Subscript) and ast.unparse(node.value) in ("os.environ", "environ"):
        key = node.slice
        return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
    return None


def token_reads(archive: Path) -> dict[str, tuple[str, int]]:
    """Variable name -> (file, line) of its first read inside a token function."""
    found: dict[str, tuple[str, int]] = {}
    with zipfile.ZipFile(archive) as zipped:
        for name in sorted(zipped.namelist()):
            if not (name.startswith("huggingface_hub/") and name.endswith(".py")):
                continue
            tree = ast.parse(zipped.read(name).decode("utf-8"))
            for function in ast.walk(tree):
                if (
                    not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
                    or "token" not in function.name.lower()
                ):
                    continue
                for node in ast.walk(function):
                    variable = _name_read(node)
                    if variable and "TOKEN" in variable and not variable.endswith("_PATH"):
                        found.setdefault(variable, (name, node.lineno))  # type: ignore[attr-defined]
    return found


def main(argv: list[str] | None = None) -> int:
    """Write the file and print the names per version."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "lmi-config" / "huggingface_hub"))
    arguments = parser.parse_args(argv)
    cache = Path(arguments.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    versions = {}
    for version in pinned_versions():
        archive = wheel(version, cache)
        reads = token_reads(archive)
        versions[version] = {
            "source": f"PyPI huggingface_hub=={version} {archive.name} — https://pypi.org/project/huggingface-hub/{version}/",
            "variables": {
                name: {"source": GITHUB.format(version=version, path=path, line=line)}
                for name, (path, line) in sorted(reads.items())
            },
        }
        print(f"  huggingface_hub {version}: {', '.join(sorted(reads)) or 'none'}")
    document = {
        "source": (
            "generated by scripts/gen_hub_token_variables.py from the huggingface_hub wheels on PyPI, one entry per "
            "version an LMI image pins (lmi_config/data/image_pins.json): the environment variables its token "
            "functions read — https://pypi.org/project/huggingface-hub/#history"
        ),
        "versions": versions,
    }
    OUTPUT.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
