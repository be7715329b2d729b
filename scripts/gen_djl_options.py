#!/usr/bin/env python3
"""Generate lmi_config/data/djl_properties.json from a git clone of deepjavalibrary/djl-serving.

For every release branch (``0.25.0-dlc`` ... ``0.35.1-dlc``, ``0.36.0-lmiNN-dlc``, ``master``) it reads
the sources with ``git ls-tree`` / ``git cat-file`` -- nothing is checked out, imported or run -- and
records:

- every pydantic class in ``engines/python/setup/djl_python/properties_manager/``: its fields (type
  annotation, default, allowed values of Enum and Literal annotations, aliases), its ``extra`` policy,
  and the keys its methods read from ``__pydantic_extra__``;
- every validator (``field_validator``, ``model_validator``, ``validator``, ``root_validator``) and
  every other method that raises: the fields it reads and each outcome -- the error it raises or the
  warning it logs (with the value it coerces to), the conditions around it, and where the code says
  so, the values that pass (``x not in LIST``, an ``if x == "a": return`` chain, ``Enum(x)``);
- the handler modules (a top-level ``handle`` function) and which module instantiates which class;
- what ``LmiConfigRecommender.java`` reads, writes and assigns, with the ``if`` conditions around
  each, found with regular expressions over the Java text (string literals and comments masked).

Each entry names the branch range where it is identical (``first`` .. ``last``) and a ``source`` URL
at the commit of its first branch. Stdlib only; the output is deterministic.

    python scripts/gen_djl_options.py /work/.mirror/deepjavalibrary+djl-serving/repo
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from djl_options.classes import (
    class_config,
    effective_config,
    extra_keys,
    field_entry,
    field_names,
    properties_classes,
)
from djl_options.evaluation import load_scope
from djl_options.recommender import RECOMMENDER, recommender_facts
from djl_options.repository import Git, select_releases
from djl_options.validators import validators_of

REPO_ROOT = Path(__file__).resolve().parent.parent
GITHUB = "https://github.com/deepjavalibrary/djl-serving"
PYTHON_ROOT = "engines/python/setup/djl_python"
PROPERTIES_DIR = f"{PYTHON_ROOT}/properties_manager"
# lmi-config's backend groups (data/backends.json) for each class; our vocabulary, not djl-serving's.
CLASS_BACKENDS = {
    "Properties": ["common"],
    "HuggingFaceProperties": ["huggingface"],
    "SchedulerRbProperties": ["huggingface"],
    "VllmRbProperties": ["vllm"],
    "LmiDistRbProperties": ["lmi-dist"],
    "TensorRtLlmProperties": ["tensorrt-llm"],
    "TransformerNeuronXProperties": ["transformers-neuronx", "nxdi"],
    "StableDiffusionNeuronXProperties": ["transformers-neuronx"],
    "DeepSpeedProperties": ["deepspeed"],
}
SORT_KEYS = {
    "classes": ("class",),
    "fields": ("class", "field"),
    "validators": ("class", "name"),
    "extra_keys": ("class", "key"),
    "modules": ("module",),
    "recommender": ("method",),
    "recommender_maps": ("name",),
    "recommender_defaults": ("key", "rolling_batch"),
}

Facts = dict[tuple, dict[str, Any]]


def log(message: str) -> None:
    """Progress on stderr (stdout carries the summary)."""
    print(message, file=sys.stderr, flush=True)


def module_name(path: str) -> str:
    """``engines/python/setup/djl_python/lmi_vllm/x.py`` -> ``djl_python.lmi_vllm.x``."""
    return path.removeprefix("engines/python/setup/").removesuffix(".py").replace("/", ".")


def branch_facts(git: Git, release: dict) -> dict[str, Facts]:
    """Every fact of one branch, keyed by identity, each with ``path`` and ``line`` for its source."""
    files = git.tree(release["commit"], PYTHON_ROOT)
    trees = {
        path: ast.parse(git.blob(blob), filename=path)
        for path, blob in sorted(files.items())
        if path.startswith(PROPERTIES_DIR + "/") and path.endswith(".py")
    }
    facts = class_facts(trees)
    facts["modules"] = module_facts(git, files, {key[0] for key in facts["classes"]})
    recommender = git.tree(release["commit"], RECOMMENDER).get(RECOMMENDER)
    facts.update(recommender_facts(git.blob(recommender) if recommender else None))
    return facts


def class_facts(trees: dict[str, ast.Module]) -> dict[str, Facts]:
    """Classes, fields, validators and extra keys of the properties modules of one branch."""
    scope = load_scope(trees)
    models = properties_classes(trees)
    facts: dict[str, Facts] = {"classes": {}, "fields": {}, "validators": {}, "extra_keys": {}}
    for name, (path, node) in models.items():
        config = effective_config(name, models)
        facts["classes"][(name,)] = {
            "class": name,
            "module": module_name(path),
            "bases": [ast.unparse(base) for base in node.bases],
            "extra": config.get("extra", "ignore"),  # pydantic's default
            "extra_declared_here": "extra" in class_config(node),
            "populate_by_name": config.get("populate_by_name") == "True",
            "backends": CLASS_BACKENDS.get(name, []),
            "path": path,
            "line": node.lineno,
        }
        for statement in node.body:
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                field = statement.target.id
                entry = {"class": name, "field": field, **field_entry(statement, scope)}
                facts["fields"][(name, field)] = {**entry, "path": path, "line": statement.lineno}
        for method, entry in validators_of(node, scope, field_names(name, models)).items():
            facts["validators"][(name, method)] = {"class": name, "name": method, **entry, "path": path}
        for key, entry in extra_keys(node).items():
            facts["extra_keys"][(name, key)] = {"class": name, "key": key, **entry, "path": path}
    return facts


def module_facts(git: Git, files: dict[str, str], class_names: set[str]) -> Facts:
    """Handler modules (a top-level ``handle``) and modules that instantiate a properties class."""
    facts = {}
    for path, blob in sorted(files.items()):
        if not path.endswith(".py") or "/tests/" in path or path.startswith(PROPERTIES_DIR):
            continue
        text = git.blob(blob)
        if "def handle(" not in text and "Properties(" not in text:
            continue  # most modules: not worth parsing
        try:
            tree = ast.parse(text, filename=path)
        except SyntaxError:
            continue
        handles = [
            node.lineno
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "handle"
        ]
        calls = (node.func for node in ast.walk(tree) if isinstance(node, ast.Call))
        created = sorted({call.id for call in calls if isinstance(call, ast.Name) and call.id in class_names})
        if handles or created:
            facts[(module_name(path),)] = {
                "module": module_name(path),
                "handler": bool(handles),
                "instantiates": created,
                "path": path,
                "line": handles[0] if handles else 1,
            }
    return facts


# --- ranges and output --------------------------------------------------------------------------


def compact(per_branch: list[tuple[dict, Facts]]) -> list[dict[str, Any]]:
    """Runs of consecutive branches where an entry is identical, each with its first and last branch."""
    runs: list[dict[str, Any]] = []
    open_runs: dict[tuple, tuple[str, dict[str, Any]]] = {}
    for index, (release, facts) in enumerate(per_branch):
        for key, fact in facts.items():
            body = {k: v for k, v in fact.items() if k not in ("path", "line")}
            identity = json.dumps(body, sort_keys=True)
            previous = open_runs.get(key)
            if previous and previous[0] == identity and previous[1]["_last_index"] == index - 1:
                previous[1]["last"], previous[1]["_last_index"] = release["branch"], index
                continue
            run = {**body, "first": release["branch"], "last": release["branch"], "_last_index": index}
            run["source"] = f"{GITHUB}/blob/{release['commit']}/{fact['path']}#L{fact['line']}"
            runs.append(run)
            open_runs[key] = (identity, run)
    for run in runs:
        del run["_last_index"]
    return runs


def generate(repository: Path, releases_json: dict, min_version: str) -> dict[str, Any]:
    """The whole catalogue for the clone at ``repository``."""
    git = Git(repository)
    try:
        releases = select_releases(git, releases_json, min_version)
        collected = []
        for release in releases:
            log(f"{release['branch']} {release['commit'][:12]}")
            collected.append((release, branch_facts(git, release)))
    finally:
        git.close()
    order = {release["branch"]: index for index, release in enumerate(releases)}
    document: dict[str, Any] = {
        "source": "generated by scripts/gen_djl_options.py from the release branches of deepjavalibrary/djl-serving "
        f"({PROPERTIES_DIR}/*.py parsed with ast; {RECOMMENDER} read with regular expressions), e.g. "
        f"{GITHUB}/tree/{releases[-1]['commit']}/{PROPERTIES_DIR}",
        "releases": releases,
    }
    for kind in SORT_KEYS:
        entries = compact([(release, facts[kind]) for release, facts in collected])
        document[kind] = sorted(
            entries, key=lambda entry: (*[entry[k] for k in SORT_KEYS[kind]], order[entry["first"]])
        )
    return document


def main(argv: list[str] | None = None) -> int:
    """Command line: the clone's path, where to write, which releases."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "repository", type=Path, help="git clone (or bare mirror) of deepjavalibrary/djl-serving"
    )
    parser.add_argument("--output", type=Path, default=REPO_ROOT / "lmi_config/data/djl_properties.json")
    parser.add_argument("--releases", type=Path, default=REPO_ROOT / "lmi_config/data/releases.json")
    parser.add_argument("--min-version", default="0.25.0", help="oldest release branch (default %(default)s)")
    arguments = parser.parse_args(argv)
    releases_json = json.loads(arguments.releases.read_text(encoding="utf-8"))
    try:
        document = generate(arguments.repository, releases_json, arguments.min_version)
    except subprocess.CalledProcessError as error:
        print(f"git failed on {arguments.repository}: {error.stderr.strip()}", file=sys.stderr)
        return 2
    text = json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    arguments.output.write_text(text, encoding="utf-8")
    print(f"wrote {arguments.output}")
    print(
        f"  {len(document['releases'])} releases, {len(document['classes'])} class entries, "
        f"{len({(f['class'], f['field']) for f in document['fields']})} fields ({len(document['fields'])} entries), "
        f"{len({(v['class'], v['name']) for v in document['validators']})} validators ({len(document['validators'])} entries), "
        f"{len(document['extra_keys'])} extra keys, {len(document['modules'])} module entries, "
        f"{len(document['recommender'])} recommender method entries"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
