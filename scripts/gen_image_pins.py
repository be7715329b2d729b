#!/usr/bin/env python3
"""Generate lmi_config/data/image_pins.json: what each LMI image installs, and which models its handlers take.

From a git clone of deepjavalibrary/djl-serving (read with git plumbing, nothing checked out), for
every release branch since 0.22.1 (the first with a Neuron image):

- the versions each image's Dockerfile pins (``serving/docker/lmi.Dockerfile`` -> djl-lmi,
  ``pytorch-inf2.Dockerfile`` -> djl-neuronx, ``tensorrt-llm.Dockerfile`` -> djl-tensorrtllm,
  ``deepspeed.Dockerfile`` -> djl-deepspeed): every ``ARG <name>_version=<v>``, the version in the
  file name of a ``*_wheel`` URL (vLLM, TensorRT-LLM, lmi-dist), and the pins of the requirements
  file the Dockerfile installs (``name==v`` or a range such as ``transformers >= 4.56.0, <= 5.9.0``);
- the model types the transformers-neuronx handler can load: the keys of its ``MODEL_TYPE_TO_CLS_LOADER``
  (``MODEL_TYPE_TO_MODEL`` on 0.25) and of ``OPTIMUM_CAUSALLM_MODEL_TYPES`` (the optimum loader it tries first).

Runs of branches with identical facts are merged; each entry cites the file at the commit of its
first branch. Stdlib only, deterministic.

    python scripts/gen_image_pins.py /work/.mirror/deepjavalibrary+djl-serving/repo
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path
from typing import Any

from djl_options.repository import Git, select_releases

REPO_ROOT = Path(__file__).resolve().parent.parent
GITHUB = "https://github.com/deepjavalibrary/djl-serving"
DOCKER = "serving/docker"
IMAGES = {
    "lmi.Dockerfile": "djl-lmi",
    "pytorch-inf2.Dockerfile": "djl-neuronx",
    "tensorrt-llm.Dockerfile": "djl-tensorrtllm",
    "deepspeed.Dockerfile": "djl-deepspeed",
}
NEURON_HANDLER_FILES = (
    "engines/python/setup/djl_python/neuron_utils/model_loader.py",
    "engines/python/setup/djl_python/transformers_neuronx.py",
)
MODEL_TYPE_MAPS = {
    "MODEL_TYPE_TO_CLS_LOADER": "tnx",
    "MODEL_TYPE_TO_MODEL": "tnx",
    "OPTIMUM_CAUSALLM_MODEL_TYPES": "optimum",
}
ARG = re.compile(r"^ARG\s+(?P<name>\w+)=(?P<value>\S+)", re.M)
WHEEL_VERSION = re.compile(
    r"/(?P<package>[A-Za-z][\w]*?)-(?P<version>\d+(?:\.\d+)+(?:\.?(?:dev|post|rc)\d+)*)(?:%2B|\+|-)"
)
REQUIREMENT = re.compile(r"^\s*(?P<name>[A-Za-z][\w.\-\[\]]*)\s*(?P<spec>(?:==|>=|<=|~=|!=|<|>)[^#;]*)$")
# ARG names that are not the version of an installed Python package
NOT_PACKAGES = {"version", "cuda_version", "python_version", "djl_version", "djl_serving_version"}
PACKAGE_NAMES = {"neuronsdk": "neuron-sdk", "torch-vision": "torchvision", "trtllm": "tensorrt-llm"}


def log(message: str) -> None:
    """Progress on stderr."""
    print(message, file=sys.stderr, flush=True)


def package(name: str) -> str:
    """``transformers_neuronx_version`` -> ``transformers-neuronx``."""
    base = name.removesuffix("_version").replace("_", "-").lower()
    return PACKAGE_NAMES.get(base, base)


def dockerfile_pins(text: str, requirements: str | None) -> tuple[dict[str, str], dict[str, str], int]:
    """(exact pins, ranges, line of the transformers pin or 1) of one Dockerfile (and its requirements)."""
    pins: dict[str, str] = {}
    ranges: dict[str, str] = {}
    line = 1
    for match in ARG.finditer(text):
        name, value = match["name"], match["value"].strip("\"'")
        if name.endswith("_version") and name not in NOT_PACKAGES and re.match(r"^v?\d", value):
            pins[package(name)] = value.lstrip("v")
        elif name.endswith("_wheel"):
            found = WHEEL_VERSION.search(value)
            if found and "$" not in found["version"]:
                pins[package(found["package"])] = found["version"]
        if name == "transformers_version":
            line = text.count("\n", 0, match.start()) + 1
    for raw in (requirements or "").splitlines():
        entry = raw.strip()
        if entry.startswith(("http://", "https://")):
            found = WHEEL_VERSION.search(entry)
            if found:
                pins[package(found["package"])] = found["version"]
            continue
        found = REQUIREMENT.match(entry)
        if not found:
            continue
        spec = found["spec"].strip()
        name = package(found["name"].split("[")[0])
        if spec.startswith("==") and "," not in spec:
            pins[name] = spec[2:].strip()
        else:
            ranges[name] = spec
    return pins, ranges, line


def neuron_model_types(text: str) -> dict[str, tuple[list[str], int]]:
    """Loader -> (model types, line), from the module-level dict / set constants of a handler file."""
    found: dict[str, tuple[list[str], int]] = {}
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return found
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign) or not isinstance(node.targets[0], ast.Name):
            continue
        loader = MODEL_TYPE_MAPS.get(node.targets[0].id)
        if loader is None:
            continue
        if isinstance(node.value, ast.Dict):
            keys = [k.value for k in node.value.keys if isinstance(k, ast.Constant)]
        elif isinstance(node.value, ast.Set):
            keys = [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
        else:
            continue
        found[loader] = (sorted({str(key) for key in keys}), node.lineno)
    return found


def branch_facts(git: Git, release: dict[str, Any]) -> dict[tuple[str, ...], dict[str, Any]]:
    """Every fact of one branch, keyed by identity, each with the path and line it comes from."""
    commit = release["commit"]
    files = git.tree(commit, DOCKER)
    facts: dict[tuple[str, ...], dict[str, Any]] = {}
    for name, image in IMAGES.items():
        blob = files.get(f"{DOCKER}/{name}")
        if blob is None:
            continue
        text = git.blob(blob)
        # the requirements files the Dockerfile copies in; those it installs into a virtual environment
        # of its own (create_virtual_env.sh /opt/djl/vllm_venv requirements-vllm.txt) pin that one only
        copied = dict(re.findall(r"COPY\s+(\S*requirements\S*\.txt)\s+\./(\S+)", text))
        venv_files = dict(re.findall(r"create_virtual_env\.sh\s+\S*/(\w+?)_venv\s+(\S+\.txt)", text))
        inside = {target for target in venv_files.values()}
        main = [source for source, target in copied.items() if target not in inside]
        requirements = "\n".join(
            git.blob(files[f"{DOCKER}/{path}"]) for path in main if f"{DOCKER}/{path}" in files
        )
        pins, ranges, line = dockerfile_pins(text, requirements)
        venvs = {}
        for venv, target in sorted(venv_files.items()):
            source = next((s for s, t in copied.items() if t == target), None)
            if source and f"{DOCKER}/{source}" in files:
                venv_pins, venv_ranges, _line = dockerfile_pins("", git.blob(files[f"{DOCKER}/{source}"]))
                venvs[package(venv)] = {
                    "pins": dict(sorted(venv_pins.items())),
                    "ranges": dict(sorted(venv_ranges.items())),
                }
        facts[("images", image)] = {
            "image": image,
            "dockerfile": f"{DOCKER}/{name}",
            "pins": dict(sorted(pins.items())),
            "ranges": dict(sorted(ranges.items())),
            "venvs": venvs,
            "path": f"{DOCKER}/{name}",
            "line": line,
        }
    for path in NEURON_HANDLER_FILES:
        blob = git.tree(commit, path).get(path)
        if blob is None:
            continue
        for loader, (model_types, line) in neuron_model_types(git.blob(blob)).items():
            facts[("neuron_model_types", loader)] = {
                "loader": loader,
                "model_types": model_types,
                "path": path,
                "line": line,
            }
    return facts


def compact(
    per_branch: list[tuple[dict[str, Any], dict[tuple[str, ...], dict[str, Any]]]], kind: str
) -> list[dict[str, Any]]:
    """Runs of consecutive branches with an identical entry."""
    runs: list[dict[str, Any]] = []
    open_runs: dict[tuple[str, ...], tuple[str, dict[str, Any], int]] = {}
    for index, (release, facts) in enumerate(per_branch):
        for key, fact in facts.items():
            if key[0] != kind:
                continue
            body = {k: v for k, v in fact.items() if k not in ("path", "line")}
            identity = json.dumps(body, sort_keys=True)
            previous = open_runs.get(key)
            if previous and previous[0] == identity and previous[2] == index - 1:
                previous[1]["last"] = release["branch"]
                open_runs[key] = (identity, previous[1], index)
                continue
            run = {**body, "first": release["branch"], "last": release["branch"]}
            run["source"] = f"{GITHUB}/blob/{release['commit']}/{fact['path']}#L{fact['line']}"
            runs.append(run)
            open_runs[key] = (identity, run, index)
    return runs


def generate(repository: Path, releases_json: dict[str, Any], min_version: str) -> dict[str, Any]:
    """The whole file."""
    git = Git(repository)
    try:
        releases = select_releases(git, releases_json, min_version)
        per_branch = []
        for release in releases:
            log(f"{release['branch']} {release['commit'][:12]}")
            per_branch.append((release, branch_facts(git, release)))
    finally:
        git.close()
    order = {release["branch"]: index for index, release in enumerate(releases)}
    images = sorted(compact(per_branch, "images"), key=lambda e: (e["image"], order[e["first"]]))
    neuron = sorted(compact(per_branch, "neuron_model_types"), key=lambda e: (e["loader"], order[e["first"]]))
    return {
        "source": "generated by scripts/gen_image_pins.py from the release branches of deepjavalibrary/djl-serving "
        f"({DOCKER}/*.Dockerfile and the requirements files they install; the transformers-neuronx handler's model "
        f"tables), e.g. {GITHUB}/tree/{releases[-1]['commit']}/{DOCKER}",
        "branches": [[r["branch"], r["djl"], r["lmi"]] for r in releases],
        "images": images,
        "neuron_model_types": neuron,
    }


def main(argv: list[str] | None = None) -> int:
    """Command line: the clone's path and where to write."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "repository", type=Path, help="git clone (or bare mirror) of deepjavalibrary/djl-serving"
    )
    parser.add_argument("--output", type=Path, default=REPO_ROOT / "lmi_config/data/image_pins.json")
    parser.add_argument("--releases", type=Path, default=REPO_ROOT / "lmi_config/data/releases.json")
    parser.add_argument("--min-version", default="0.22.1", help="oldest release branch (default %(default)s)")
    arguments = parser.parse_args(argv)
    releases_json = json.loads(arguments.releases.read_text(encoding="utf-8"))
    document = generate(arguments.repository, releases_json, arguments.min_version)
    arguments.output.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(
        f"wrote {arguments.output}: {len(document['images'])} image entries, {len(document['neuron_model_types'])} model-type entries"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
