#!/usr/bin/env python3
"""Generate lmi_config/data/rope_scaling.json: which ``rope_scaling`` of a model's config.json the image's
transformers and vLLM refuse at start-up.

A ``rope_scaling`` that the loading code cannot parse stops the start-up before any weight is read:

- **transformers** validates it in the model's configuration class (``AutoConfig.from_pretrained``, which
  the LMI handler and vLLM both call). Up to 4.42 each class that validates has its own
  ``_rope_scaling_validation``: Llama's takes a dict of exactly two fields, ``type`` one of ``linear`` and
  ``dynamic``, and a float ``factor`` above 1, so a Llama 3.1 config (``rope_type: llama3`` and four other
  fields) raises "`rope_scaling` must be a dictionary with two fields, `type` and `factor`". From 4.43
  most classes call the shared ``rope_config_validation`` of ``modeling_rope_utils.py``: a type it has no
  validation function for is only logged, and the type's required keys missing raise a ``KeyError``.
- **vLLM** builds the rotary embedding with ``get_rope``: a type none of its branches handles raises
  "Unknown RoPE scaling type {scaling_type}". Before that, its config reader renames legacy types
  (``su`` -> ``longrope``, ``mrope`` -> ``default``; ``patch_rope_scaling_dict``).

For every transformers version an LMI image pins (``data/image_pins.json``, as
``scripts/gen_transformers_model_types.py`` lists them) this script reads the release's wheel from PyPI
(``pip download --no-deps``, opened with zipfile, parsed with ast -- never imported): each configuration
class with a ``model_type``, whether its ``__init__`` validates ``rope_scaling`` and how (its own method: the
field count, the type field and the types of its list, the factor's test, each with its line and message;
or the shared function), and the shared function's types and their required keys. For every vLLM version
of ``data/vllm_capabilities.json`` (the release it is read from, obtained as
``scripts/gen_vllm_engine_args.py`` obtains it) it records ``get_rope``'s types, the keys it reads the
type from, the config reader's renames and the line of the raise.

Run: python scripts/gen_rope_scaling.py [--transformers-cache DIR] [--vllm-cache DIR]
(stdlib only, deterministic)
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_transformers_model_types as model_types  # noqa: E402  (pinned versions, wheel download)
import gen_vllm_engine_args as engine_args  # noqa: E402  (vLLM archive download and reading)

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_FILE = REPO_ROOT / "lmi_config" / "data" / "rope_scaling.json"
CAPABILITIES = REPO_ROOT / "lmi_config" / "data" / "vllm_capabilities.json"
PINS = REPO_ROOT / "lmi_config" / "data" / "image_pins.json"
TRANSFORMERS = "https://github.com/huggingface/transformers/blob/v{version}/src/{path}#L{line}"
VLLM = "https://github.com/vllm-project/vllm/blob/v{version}/{path}#L{line}"
SHARED = "transformers/modeling_rope_utils.py"


def _cite(url: str, version: str, path: str, line: int) -> str:
    return f"{path}:{line} {url.format(version=version, path=path, line=line)}"


def _message(node: ast.Raise) -> str:
    """The raise's message as a skeleton: literal text, each formatted value as ``{source}``."""
    call = node.exc
    if not isinstance(call, ast.Call) or not call.args:
        return ""
    parts: list[str] = []

    def walk(value: ast.expr) -> None:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            parts.append(value.value)
        elif isinstance(value, ast.JoinedStr):
            for item in value.values:
                if isinstance(item, ast.Constant):
                    parts.append(str(item.value))
                elif isinstance(item, ast.FormattedValue):
                    parts.append("{" + ast.unparse(item.value) + "}")
        elif isinstance(value, ast.BinOp):
            walk(value.left)
            walk(value.right)
        else:
            parts.append("{" + ast.unparse(value) + "}")

    walk(call.args[0])
    return " ".join("".join(parts).split())


def _raises(body: list[ast.stmt]) -> ast.Raise | None:
    return next((statement for statement in body if isinstance(statement, ast.Raise)), None)


def _constants(node: ast.AST) -> list[str]:
    return [
        item.value
        for item in ast.walk(node)
        if isinstance(item, ast.Constant) and isinstance(item.value, str)
    ]


# --- transformers ---------------------------------------------------------------------------------


def legacy_checks(method: ast.FunctionDef, version: str, path: str) -> list[dict[str, Any]]:
    """The raises of a class's own ``_rope_scaling_validation``, in order, each classified where its test is
    one this project evaluates: the dict's field count, the type field against a list, the factor's test."""
    getters: dict[str, str] = {}  # local name -> the rope_scaling key it reads (.get("type"))
    checks: list[dict[str, Any]] = []
    for node in ast.walk(method):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and value.func.attr == "get"
                and "rope_scaling" in ast.unparse(value.func.value)
                and value.args
                and isinstance(value.args[0], ast.Constant)
            ):
                getters[node.targets[0].id] = str(value.args[0].value)
    for node in ast.walk(method):
        if not isinstance(node, ast.If):
            continue
        raised = _raises(node.body)
        if raised is None:
            continue
        test = ast.unparse(node.test)
        entry: dict[str, Any] = {
            "message": _message(raised),
            "source": _cite(TRANSFORMERS, version, path, raised.lineno),
        }
        count = re.search(r"len\(self\.rope_scaling\) != (\d+)", test)
        names_in_test = {name.id for name in ast.walk(node.test) if isinstance(name, ast.Name)}
        listed = [
            comparator
            for compare in ast.walk(node.test)
            if isinstance(compare, ast.Compare) and any(isinstance(op, ast.NotIn) for op in compare.ops)
            for comparator in compare.comparators
            if isinstance(comparator, ast.List | ast.Tuple | ast.Set)
        ]
        read = [getters[name] for name in sorted(names_in_test) if name in getters]
        if count:
            entry |= {"check": "fields", "count": int(count.group(1))}
        elif listed and read:
            entry |= {"check": "type", "key": read[0], "types": sorted(_constants(listed[0]))}
        elif read == ["factor"] and "isinstance" in test and "float" in test:
            bound = re.search(r"<=?\s*([\d.]+)", test)
            entry |= {
                "check": "factor",
                "key": "factor",
                "minimum": float(bound.group(1)) if bound else 1.0,
                "inclusive": "<=" not in test,  # `factor <= 1.0` raises: the factor must be above 1
            }
        else:
            entry |= {"check": "other", "test": " ".join(test.split())}
        checks.append(entry)
    checks.sort(key=lambda entry: int(entry["source"].split(" ")[0].rsplit(":", 1)[1]))
    return checks


def _calls(function: ast.FunctionDef, name: str) -> ast.Call | None:
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            called = node.func
            text = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
            if text == name:
                return node
    return None


def config_classes(text: str, version: str, path: str) -> dict[str, dict[str, Any]]:
    """model_type -> how its configuration class validates rope_scaling (classes that do not: absent)."""
    tree = ast.parse(text)
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    found: dict[str, dict[str, Any]] = {}
    for cls in classes.values():
        model_type = next(
            (
                statement.value.value
                for statement in cls.body
                if isinstance(statement, ast.Assign)
                and any(
                    isinstance(target, ast.Name) and target.id == "model_type" for target in statement.targets
                )
                and isinstance(statement.value, ast.Constant)
            ),
            None,
        )
        init = next(
            (item for item in cls.body if isinstance(item, ast.FunctionDef) and item.name == "__init__"), None
        )
        if not isinstance(model_type, str) or init is None:
            continue
        if (call := _calls(init, "_rope_scaling_validation")) is not None:
            owner = cls
            method = None
            while owner is not None and method is None:
                method = next(
                    (
                        item
                        for item in owner.body
                        if isinstance(item, ast.FunctionDef) and item.name == "_rope_scaling_validation"
                    ),
                    None,
                )
                base = owner.bases[0] if owner.bases else None
                owner = classes.get(base.id) if isinstance(base, ast.Name) else None
            if method is None:
                continue
            found[model_type] = {
                "validation": "own",
                "class": cls.name,
                "called_at": _cite(TRANSFORMERS, version, path, call.lineno),
                "checks": legacy_checks(method, version, path),
            }
        elif (call := _calls(init, "rope_config_validation")) is not None:
            found[model_type] = {
                "validation": "shared",
                "class": cls.name,
                "called_at": _cite(TRANSFORMERS, version, path, call.lineno),
            }
    return found


def shared_validation(text: str, version: str) -> dict[str, Any] | None:
    """``rope_config_validation``: the types of ROPE_VALIDATION_FUNCTIONS with their required keys, whether an
    unknown type raises (else it is logged), and the line of the missing-keys raise."""
    tree = ast.parse(text)
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    table = next(
        (
            node.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            and any(
                isinstance(target, ast.Name) and target.id == "ROPE_VALIDATION_FUNCTIONS"
                for target in node.targets
            )
            and isinstance(node.value, ast.Dict)
        ),
        None,
    )
    entry = functions.get("rope_config_validation")
    if table is None or entry is None:
        return None
    types: dict[str, dict[str, Any]] = {}
    for key, value in zip(table.keys, table.values, strict=True):
        if not isinstance(key, ast.Constant) or not isinstance(value, ast.Name) or value.id not in functions:
            continue
        function = functions[value.id]
        required: list[str] = []
        for node in ast.walk(function):
            if (
                isinstance(node, ast.Assign)
                and any(
                    isinstance(target, ast.Name) and target.id == "required_keys" for target in node.targets
                )
                and isinstance(node.value, ast.Set)
            ):
                required = sorted(_constants(node.value))
        types[str(key.value)] = {
            "required_keys": required,
            "source": _cite(TRANSFORMERS, version, SHARED, function.lineno),
        }
    unknown = next(
        (
            node
            for node in ast.walk(entry)
            if isinstance(node, ast.If) and "validation_fn" in ast.unparse(node.test)
        ),
        None,
    )
    refused = _raises(unknown.orelse) if unknown is not None else None
    received = functions.get("_check_received_keys")
    missing = (
        next((node for node in ast.walk(received) if isinstance(node, ast.Raise)), None) if received else None
    )
    return {
        "types": dict(sorted(types.items())),
        "unknown_type": "raises" if refused is not None else "logged",
        "unknown_type_refusal": (
            {"message": _message(refused), "source": _cite(TRANSFORMERS, version, SHARED, refused.lineno)}
            if refused is not None
            else None
        ),
        "type_keys": ["rope_type", "type"],  # rope_scaling.get("rope_type", rope_scaling.get("type", ...))
        "missing_keys": (
            {"message": _message(missing), "source": _cite(TRANSFORMERS, version, SHARED, missing.lineno)}
            if missing is not None
            else None
        ),
        "source": _cite(TRANSFORMERS, version, SHARED, entry.lineno),
    }


def read_transformers(path: Path, version: str) -> dict[str, Any]:
    with zipfile.ZipFile(path) as archive:
        names = sorted(archive.namelist())
        classes: dict[str, dict[str, Any]] = {}
        for name in names:
            if re.fullmatch(r"transformers/models/[^/]+/configuration_[^/]+\.py", name):
                text = archive.read(name).decode("utf-8")
                if "rope_scaling" in text:
                    classes.update(config_classes(text, version, name))
        shared = shared_validation(archive.read(SHARED).decode("utf-8"), version) if SHARED in names else None
    return {
        "source": f"transformers {version} wheel — https://pypi.org/project/transformers/{version}/",
        "shared": shared,
        "model_types": dict(sorted(classes.items())),
    }


# --- vLLM ---------------------------------------------------------------------------------------


def _get_rope(sources: dict[str, str]) -> tuple[str, ast.FunctionDef] | None:
    for path in (
        "vllm/model_executor/layers/rotary_embedding.py",
        "vllm/model_executor/layers/rotary_embedding/__init__.py",
    ):
        if path in sources:
            for node in ast.parse(sources[path]).body:
                if isinstance(node, ast.FunctionDef) and node.name == "get_rope":
                    return path, node
    return None


def _renames(sources: dict[str, str]) -> tuple[dict[str, str], str | None, bool]:
    """The legacy types vLLM's config reader renames (``if d["rope_type"] == "su": d["rope_type"] =
    "longrope"``), where, and whether it copies a legacy ``type`` into ``rope_type``."""
    path = "vllm/transformers_utils/config.py"
    if path not in sources:
        return {}, None, False
    for node in ast.parse(sources[path]).body:
        if not (
            isinstance(node, ast.FunctionDef)
            and node.name
            in ("patch_rope_scaling_dict", "patch_rope_parameters_dict", "patch_legacy_rope_type")
        ):
            continue
        renames: dict[str, str] = {}
        for branch in ast.walk(node):
            if not isinstance(branch, ast.If) or not isinstance(branch.test, ast.Compare):
                continue
            compared = [item.value for item in branch.test.comparators if isinstance(item, ast.Constant)]
            assigned = [
                statement.value.value
                for statement in branch.body
                if isinstance(statement, ast.Assign)
                and isinstance(statement.value, ast.Constant)
                and "rope_type" in ast.unparse(statement.targets[0])
            ]
            if compared and assigned and isinstance(compared[0], str):
                renames[compared[0]] = str(assigned[0])
        copies = "type" in _constants(node)
        return dict(sorted(renames.items())), f"{path}:{node.lineno}", copies
    return {}, None, False


def read_vllm(sources: dict[str, str], version: str) -> dict[str, Any] | None:
    found = _get_rope(sources)
    if found is None:
        return None
    path, function = found
    raised = next(
        (
            node
            for node in ast.walk(function)
            if isinstance(node, ast.Raise) and "Unknown RoPE scaling type" in ast.unparse(node)
        ),
        None,
    )
    if raised is None:
        return None
    variable = next(
        (
            item.value.id
            for item in ast.walk(raised)
            if isinstance(item, ast.FormattedValue) and isinstance(item.value, ast.Name)
        ),
        "scaling_type",
    )
    types: set[str] = set()
    keys: list[str] = []
    for node in ast.walk(function):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == variable:
            for comparator in node.comparators:
                types.update(_constants(comparator))
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == variable for target in node.targets
        ):
            keys = [key for key in _constants(node.value) if key in ("type", "rope_type")]
    renames, renamed_at, copies = _renames(sources)
    if keys == ["rope_type"] and copies:
        keys.append("type")  # the config reader copies a legacy `type` into `rope_type` first
    read_from = version
    return {
        "types": sorted(types),
        "type_keys": list(dict.fromkeys(keys)) or ["rope_type"],
        "renames": renames,
        "renamed_at": (
            f"{renamed_at} "
            + VLLM.format(version=read_from, path=renamed_at.split(":")[0], line=renamed_at.split(":")[1])
            if renamed_at
            else None
        ),
        "message": _message(raised),
        "source": _cite(VLLM, read_from, path, raised.lineno),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transformers-cache", type=Path, default=Path("/tmp/transformers-wheels"))
    parser.add_argument("--vllm-cache", type=Path, default=Path.home() / ".cache" / "lmi-config" / "vllm")
    parser.add_argument("--index-url", default=engine_args.DEFAULT_INDEX)
    arguments = parser.parse_args(argv)
    arguments.transformers_cache.mkdir(parents=True, exist_ok=True)
    transformers: dict[str, Any] = {}
    for version in model_types.pinned_versions(json.loads(PINS.read_text(encoding="utf-8"))):
        engine_args.log(f"transformers {version}")
        transformers[version] = read_transformers(
            model_types.wheel(version, arguments.transformers_cache), version
        )
    vllm: dict[str, Any] = {}
    releases = json.loads(CAPABILITIES.read_text(encoding="utf-8"))["versions"]
    for version, row in sorted(releases.items(), key=lambda item: engine_args.version_key(item[0])):
        read_from = row["read_from"]
        if read_from != version and read_from in releases:
            vllm[version] = {"same_as": read_from}
            continue
        archive = engine_args.obtain(read_from, arguments.vllm_cache, arguments.index_url, False, "x86_64")
        if archive is None:
            engine_args.log(f"vllm {version}: could not obtain {read_from}; skipped")
            continue
        engine_args.log(f"vllm {version}: reading {archive.name}")
        facts = read_vllm(engine_args.read_python_sources(archive), read_from)
        if facts is not None:
            vllm[version] = {"read_from": read_from, **facts}
    document = {
        "source": (
            "generated by scripts/gen_rope_scaling.py: the rope_scaling validation of each transformers release an "
            "LMI image pins (its configuration classes and modeling_rope_utils.py, read from the PyPI wheels) and "
            "get_rope's scaling types of each vLLM version of vllm_capabilities.json (read from the PyPI sdists) — "
            "https://pypi.org/project/transformers/#history https://pypi.org/project/vllm/#history"
        ),
        "transformers": transformers,
        "vllm": vllm,
    }
    DATA_FILE.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    engine_args.log(
        f"wrote {DATA_FILE.relative_to(REPO_ROOT)} ({len(transformers)} transformers, {len(vllm)} vLLM)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
