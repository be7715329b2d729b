#!/usr/bin/env python3
"""Generate lmi_config/data/engine_registries.json: which model types each Neuron engine path of a
djl-neuronx image can load, read from the code that decides it.

The djl-neuronx handler (``djl_python/transformers_neuronx.py`` and ``neuron_utils/model_loader.py``)
picks a loader from ``option.model_loader`` and refuses a model whose ``config.json`` ``model_type``
its loader does not list. For every djl-neuronx release, at the ``<version>-dlc`` branch the image is
built from (the commit is pinned in each source URL), this script reads:

- ``loaders.tnx``: the transformers-neuronx classes by model type (``MODEL_TYPE_TO_CLS_LOADER`` from
  0.26, ``MODEL_TYPE_TO_MODEL`` / ``SUPPORTED_MODEL_TYPES`` before; "Unsupported model: ... Supported
  architectures: [...]");
- ``loaders.optimum``: ``OPTIMUM_CAUSALLM_MODEL_TYPES`` (model_loader=optimum);
- ``loaders.vllm``: ``VLLM_CONTINUOUS_BATCHING_MODELS`` (model_loader=vllm, rolling_batch=vllm);
- ``engine_versions``: the engine packages the image installs (``serving/docker/pytorch-inf2.Dockerfile``
  ARGs: transformers_neuronx_version, neuronx_distributed_inference_version, optimum_neuron_version,
  the vllm wheel) — the versions images.json lacks for the older Neuron images.

For NxD Inference (model_loader=nxdi) the model types come from the NxDI release the image installs:
``MODEL_TYPES`` in ``neuronx_distributed_inference/utils/constants.py`` at that tag. For optimum-neuron
the model types its exporter registers for ``text-generation`` (``@register_in_tasks_manager`` up to 0.1,
``@register_neuron_model_for_inference`` from 0.2) at every release from the oldest an image installs, and
at the main branch (under its development version, at a pinned commit): an export made by ``search`` or
planned by ``plan --cache-config`` uses the optimum-neuron of the user's environment, not the image's. How a model maps to these names: every one of these gates compares the
``model_type`` of the model's ``config.json`` (transformers' ``AutoConfig``) with its keys, so the data
holds model types, not architecture class names.

For every djl-tensorrtllm release whose engine is built by djl-serving's own
``serving/docker/partition/trt_llm_partition.py`` through TensorRT-LLM's ``BuildConfig`` (LMI 0.33 on;
earlier images build with the trtllm toolkit, whose code is not public), ``trtllm_releases`` records:

- ``build_arguments``: the keys of the ``BuildConfig.from_dict({...})`` literal (what reaches the build);
- ``replaced``: ``properties["X"] = properties["Y"]`` assignments (a setting silently replaced by another);
- ``handler_defaults``: ``max_input_len`` and the other build limits' defaults in ``trt_properties.py``;
- ``java_defaults``: ``setProperty("option.X", "N")`` in the trtllm branch of ``LmiConfigRecommender.java``.

Not covered, with the reason: TensorRT-LLM's model registry (its repository is larger than the mirror
limit of this project's tooling; the code index holds ``tensorrt_llm/models/__init__.py`` at one commit only,
b57221b, not at the releases the images install — 0.21.0rc1 in LMI 0.33, 1.0.0 in 0.35 — and the
octoml/TensorRT-LLM-release mirror has only the 0.5.0 and 0.7.1 branches, older than any engine djl-serving
builds itself) and lmi-dist (no public source).

Run (stdlib only, deterministic; git mirrors of the three repositories):
    python scripts/gen_engine_registries.py \\
        --djl-serving /work/.mirror/deepjavalibrary+djl-serving/repo \\
        --nxdi /work/.mirror/aws-neuron+neuronx-distributed-inference/repo \\
        --optimum-neuron /work/.mirror/huggingface+optimum-neuron/repo
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
from pathlib import Path
from typing import Any

from djl_options.repository import Git  # scripts/ is on sys.path when run as a script

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_FILE = REPO_ROOT / "lmi_config" / "data" / "engine_registries.json"
IMAGES_FILE = REPO_ROOT / "lmi_config" / "data" / "images.json"
DJL_URL = "https://github.com/deepjavalibrary/djl-serving/blob/{commit}/{path}#L{line}"
NXDI_URL = "https://github.com/aws-neuron/neuronx-distributed-inference/blob/{tag}/{path}#L{line}"
OPTIMUM_URL = "https://github.com/huggingface/optimum-neuron/blob/{tag}/{path}#L{line}"
HANDLER_ROOT = "engines/python/setup/djl_python"
DOCKERFILE = "serving/docker/pytorch-inf2.Dockerfile"
NXDI_CONSTANTS = "src/neuronx_distributed_inference/utils/constants.py"
# the loader gates, most specific name first (older handlers have only the plain set)
LOADER_NAMES = {
    "tnx": ("MODEL_TYPE_TO_CLS_LOADER", "MODEL_TYPE_TO_MODEL", "SUPPORTED_MODEL_TYPES"),
    "optimum": ("OPTIMUM_CAUSALLM_MODEL_TYPES",),
    "vllm": ("VLLM_CONTINUOUS_BATCHING_MODELS",),
}
ENGINE_ARGS = {
    "transformers-neuronx": "transformers_neuronx_version",
    "nxdi": "neuronx_distributed_inference_version",
    "optimum-neuron": "optimum_neuron_version",
}
_VLLM_WHEEL = re.compile(r"vllm(?:_neuronx)?-([0-9][\w.%+]*?)-py3")


def git(repository: Path, *arguments: str) -> str:
    """The output of a git command in a mirror (the scripts' one git reader, ``djl_options.repository``)."""
    return Git(repository).run(*arguments)


def keys_of(node: ast.expr) -> list[str] | None:
    """The string keys of a dict literal, or the strings of a set / list literal."""
    items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
    if items is None:
        return None
    return sorted(
        item.value for item in items if isinstance(item, ast.Constant) and isinstance(item.value, str)
    )


def assignments(text: str) -> dict[str, tuple[list[str], int]]:
    """Module- and class-level NAME = {literal} assignments: name -> (keys, line)."""
    found: dict[str, tuple[list[str], int]] = {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            keys = keys_of(node.value)
            if keys is not None:
                found.setdefault(node.targets[0].id, (keys, node.lineno))
    return found


def handler_gates(repository: Path, commit: str) -> dict[str, Any]:
    """Each loader's model types in the djl_python handler at a commit."""
    files = [
        path
        for path in git(repository, "ls-tree", "-r", "--name-only", commit, HANDLER_ROOT).split()
        if path.endswith(".py") and "/tests/" not in path and "neuron" in path
    ]
    named: dict[str, tuple[list[str], int, str]] = {}
    for path in files:
        for name, (keys, line) in assignments(git(repository, "show", f"{commit}:{path}")).items():
            named.setdefault(name, (keys, line, path))
    loaders = {}
    for loader, names in LOADER_NAMES.items():
        for name in names:
            if name in named:
                keys, line, path = named[name]
                url = DJL_URL.format(commit=commit, path=path, line=line)
                loaders[loader] = {"model_types": keys, "source": f"{path}:{line} {name} {url}"}
                break
    return loaders


def dockerfile_versions(repository: Path, commit: str) -> dict[str, Any]:
    """The engine versions the Neuron Dockerfile installs (ARG lines), each with its line."""
    versions = {}
    lines = git(repository, "show", f"{commit}:{DOCKERFILE}").splitlines()
    for number, line in enumerate(lines, start=1):
        for engine, argument in ENGINE_ARGS.items():
            match = re.match(rf"ARG {argument}=(\S+)", line)
            if match:
                url = DJL_URL.format(commit=commit, path=DOCKERFILE, line=number)
                versions[engine] = {"version": match.group(1), "source": f"{DOCKERFILE}:{number} {url}"}
        wheel = _VLLM_WHEEL.search(line) if line.startswith("ARG vllm_wheel") else None
        if wheel:
            url = DJL_URL.format(commit=commit, path=DOCKERFILE, line=number)
            version = wheel.group(1).replace("%2B", "+")
            versions["vllm"] = {"version": version, "source": f"{DOCKERFILE}:{number} {url}"}
    return versions


def release_branches(repository: Path, framework: str) -> list[tuple[str, str, str]]:
    """(version, ``<version>-dlc`` branch, its commit) of every release of ``framework`` in images.json,
    oldest first."""
    images = json.loads(IMAGES_FILE.read_text(encoding="utf-8"))["images"]
    versions = sorted(
        {row["djl_version"] for row in images if row["framework"] == framework},
        key=lambda text: tuple(int(part) for part in text.split(".")),
    )
    return [
        (version, f"{version}-dlc", git(repository, "rev-parse", f"{version}-dlc").strip())
        for version in versions
    ]


def neuron_releases(repository: Path) -> dict[str, Any]:
    """Per djl-neuronx release of images.json: the handler's gates and the Dockerfile's engines."""
    releases = {}
    for version, branch, commit in release_branches(repository, "djl-neuronx"):
        releases[version] = {
            "branch": branch,
            "loaders": handler_gates(repository, commit),
            "engine_versions": dockerfile_versions(repository, commit),
        }
    return releases


def nxdi_releases(repository: Path, wanted: set[str]) -> dict[str, Any]:
    """NxDI's MODEL_TYPES at each release tag the images install."""
    tags = set(git(repository, "tag").split())
    releases = {}
    for version in sorted(wanted):
        tag = f"v{version}"
        if tag not in tags:
            continue
        found = assignments(git(repository, "show", f"{tag}:{NXDI_CONSTANTS}")).get("MODEL_TYPES")
        if found:
            keys, line = found
            url = NXDI_URL.format(tag=tag, path=NXDI_CONSTANTS, line=line)
            releases[version] = {"model_types": keys, "source": f"{NXDI_CONSTANTS}:{line} MODEL_TYPES {url}"}
    return releases


# the exporter's text-generation registrations: TasksManager's decorator up to 0.1, optimum-neuron's own
# model registry from 0.2 (``get_neuron_model_class``: "Model type X is not supported for task ...")
_REGISTER = re.compile(
    r'@register_(?:in_tasks_manager|neuron_model_for_inference)\(\s*"([\w-]+)",\s*"text-generation"'
)
_RELEASE_TAG = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")


def optimum_versions(repository: Path, installed: set[str]) -> set[str]:
    """The release versions from the oldest an image installs to the newest tag: what images install, and
    the newer releases a search environment may have (their registries name where a model type arrives)."""
    oldest = min(tuple(int(part) for part in version.split(".")) for version in installed)
    found = set(installed)
    for tag in git(repository, "tag").split():
        match = _RELEASE_TAG.match(tag)
        if match and tuple(int(part) for part in match.groups()) >= oldest:
            found.add(tag[1:])
    return found


def optimum_registry(repository: Path, revision: str, url_revision: str) -> dict[str, Any] | None:
    """The model types optimum-neuron's exporter registers for text-generation at a revision."""
    hits = git(
        repository,
        "grep",
        "-n",
        "-E",
        r"register_(in_tasks_manager|neuron_model_for_inference)\(",
        revision,
        "--",
        "optimum/exporters/neuron",
        "optimum/neuron/models",
    )
    model_types, first = set(), None
    for hit in hits.splitlines():
        _, path, line, code = hit.split(":", 3)
        match = _REGISTER.search(code)
        if match:
            model_types.add(match.group(1))
            first = first or (path, int(line))
    if first is None:
        return None
    url = OPTIMUM_URL.format(tag=url_revision, path=first[0], line=first[1])
    return {
        "model_types": sorted(model_types),
        "source": f"{first[0]}:{first[1]} @register_*(..., 'text-generation') {url}",
    }


_VERSION = re.compile(r'^__version__ = "([^"]+)"', re.MULTILINE)


def optimum_releases(repository: Path, wanted: set[str]) -> dict[str, Any]:
    """The text-generation registry of each release, and of the main branch under its development
    version (what the seed's workflow installs from source), at the commit main points at."""
    tags = set(git(repository, "tag").split())
    releases = {}
    for version in sorted(wanted, key=lambda text: tuple(int(part) for part in text.split("."))):
        tag = f"v{version}"
        found = optimum_registry(repository, tag, tag) if tag in tags else None
        if found:
            releases[version] = found
    commit = git(repository, "rev-parse", "main").strip()
    development = _VERSION.search(git(repository, "show", f"{commit}:optimum/neuron/version.py"))
    found = optimum_registry(repository, commit, commit)
    if development and found:
        releases[development.group(1)] = found
    return releases


PARTITION = "serving/docker/partition/trt_llm_partition.py"
TRT_PROPERTIES = f"{HANDLER_ROOT}/properties_manager/trt_properties.py"
RECOMMENDER = "wlm/src/main/java/ai/djl/serving/wlm/LmiConfigRecommender.java"
BUILD_LIMITS = ("max_input_len", "max_seq_len", "max_num_tokens", "max_batch_size")
_JAVA_DEFAULT = re.compile(r'setProperty\("option\.(\w+)",\s*"(\d+)"\)')


def _subscript_name(node: ast.expr) -> str | None:
    """``properties["name"]`` -> ``name``."""
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        return node.slice.value
    return None


def partition_facts(text: str) -> tuple[list[str], int, dict[str, tuple[str, int]]] | None:
    """The BuildConfig.from_dict keys (and line), and ``properties[X] = properties[Y]`` replacements."""
    build: tuple[list[str], int] | None = None
    replaced: dict[str, tuple[str, int]] = {}
    for node in ast.walk(ast.parse(text)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "from_dict"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "BuildConfig"
            and node.args
            and isinstance(node.args[0], ast.Dict)
        ):
            build = (keys_of(node.args[0]) or [], node.lineno)
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, source = _subscript_name(node.targets[0]), _subscript_name(node.value)
            if target and source and target != source:
                replaced[target] = (source, node.lineno)
    return (build[0], build[1], replaced) if build else None


def handler_defaults(text: str) -> dict[str, tuple[int, int]]:
    """``name: int = N`` class fields among the build limits: name -> (default, line)."""
    found = {}
    for node in ast.walk(ast.parse(text)):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id in BUILD_LIMITS
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, int)
        ):
            found[node.target.id] = (node.value.value, node.lineno)
    return found


def trtllm_release(repository: Path, commit: str) -> dict[str, Any] | None:
    """The build facts of one djl-tensorrtllm release branch (None: the toolkit builds the engine)."""
    try:
        partition = partition_facts(git(repository, "show", f"{commit}:{PARTITION}"))
    except subprocess.CalledProcessError:
        return None
    if partition is None:
        return None
    keys, line, replaced = partition

    def url(path: str, number: int) -> str:
        return f"{path}:{number} " + DJL_URL.format(commit=commit, path=path, line=number)

    defaults = handler_defaults(git(repository, "show", f"{commit}:{TRT_PROPERTIES}"))
    java = {}
    for number, text in enumerate(git(repository, "show", f"{commit}:{RECOMMENDER}").splitlines(), start=1):
        match = _JAVA_DEFAULT.search(text)
        if match and match.group(1) in BUILD_LIMITS:
            java[match.group(1)] = {"value": int(match.group(2)), "source": url(RECOMMENDER, number)}
    return {
        "build_arguments": {"names": keys, "source": url(PARTITION, line)},
        "replaced": {
            name: {"by": by, "source": url(PARTITION, number)} for name, (by, number) in replaced.items()
        },
        "handler_defaults": {
            name: {"value": value, "source": url(TRT_PROPERTIES, number)}
            for name, (value, number) in defaults.items()
        },
        "java_defaults": java,
    }


def trtllm_releases(repository: Path) -> dict[str, Any]:
    """Per djl-tensorrtllm release of images.json whose engine djl-serving builds itself."""
    releases = {}
    for version, branch, commit in release_branches(repository, "djl-tensorrtllm"):
        facts = trtllm_release(repository, commit)
        if facts is not None:
            releases[version] = {"branch": branch, **facts}
    return releases


def generate(djl_serving: Path, nxdi: Path, optimum: Path) -> dict[str, Any]:
    """The whole data file."""
    neuron = neuron_releases(djl_serving)
    installed = {
        engine: {
            row["engine_versions"][engine]["version"]
            for row in neuron.values()
            if engine in row["engine_versions"]
        }
        for engine in ("nxdi", "optimum-neuron")
    }
    last_branch = neuron[max(neuron, key=lambda text: tuple(int(part) for part in text.split(".")))]["branch"]
    return {
        "source": (
            "generated by scripts/gen_engine_registries.py from djl-serving's <version>-dlc branches (the djl-neuronx "
            "handler and the Neuron Dockerfile), NxD Inference's and optimum-neuron's release tags — "
            f"https://github.com/deepjavalibrary/djl-serving/tree/{last_branch}/{HANDLER_ROOT} "
            f"https://github.com/deepjavalibrary/djl-serving/blob/{last_branch}/{DOCKERFILE} "
            f"https://github.com/aws-neuron/neuronx-distributed-inference/blob/v0.1.1/{NXDI_CONSTANTS} "
            "https://github.com/huggingface/optimum-neuron/tree/v0.0.27/optimum/exporters/neuron"
        ),
        "neuron_releases": neuron,
        "nxdi": nxdi_releases(nxdi, installed["nxdi"]),
        "optimum_neuron": optimum_releases(optimum, optimum_versions(optimum, installed["optimum-neuron"])),
        "trtllm_releases": trtllm_releases(djl_serving),
    }


def main() -> None:
    """Write the data file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--djl-serving", type=Path, required=True)
    parser.add_argument("--nxdi", type=Path, required=True)
    parser.add_argument("--optimum-neuron", type=Path, required=True)
    arguments = parser.parse_args()
    data = generate(arguments.djl_serving, arguments.nxdi, arguments.optimum_neuron)
    DATA_FILE.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"wrote {DATA_FILE.relative_to(REPO_ROOT)}: {len(data['neuron_releases'])} Neuron releases")


if __name__ == "__main__":
    main()
