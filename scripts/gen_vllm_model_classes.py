#!/usr/bin/env python3
"""Rewrite lmi_config/data/vllm_model_classes.json alone: the model registry facts of every pinned vLLM
release, read with scripts/vllm_model_reader.py from the same PyPI archives scripts/gen_vllm_checks.py
reads (its cache), without rewriting the catalogue of checks.

scripts/gen_vllm_checks.py writes the same file (with the catalogue) from the same reader; this script
exists so that a change of the reader regenerates only the facts it reads. The versions and the release
read for each are the catalogue's (data/vllm_checks.json ``versions``).

    python scripts/gen_vllm_model_classes.py [--cache-dir DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_vllm_checks as checks  # noqa: E402  (paths, source text, the per-version writer)
import gen_vllm_engine_args as engine_args  # noqa: E402  (archive download and reading)
from vllm_model_reader import read_model_classes  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Read each release's registry facts and rewrite the file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "lmi-config" / "vllm"))
    parser.add_argument("--index-url", default=engine_args.DEFAULT_INDEX)
    arguments = parser.parse_args(argv)
    document = checks.read_catalogue()
    facts: dict[str, dict[str, Any]] = {}
    for release, sources in checks.release_sources(document, arguments.cache_dir, arguments.index_url):
        facts[release] = read_model_classes(sources, release)
        lora = facts[release]["lora_modules"] or {"groups": []}
        read = sum(len(group["architectures"]) for group in lora["groups"])
        engine_args.log(f"vllm {release}: {read} LoRA classes read")
    text = checks.per_version_text(checks.MODEL_CLASSES_SOURCE, facts, document)
    checks.MODEL_CLASSES.write_text(text, encoding="utf-8")
    print(f"wrote {checks.MODEL_CLASSES.relative_to(checks.REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
