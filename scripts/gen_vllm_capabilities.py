#!/usr/bin/env python3
"""Generate lmi_config/data/vllm_capabilities.json: what each vLLM release in an LMI image can run.

For every vLLM version an LMI GPU image pins (``lmi_config/data/image_pins.json``) or an LMI release
names (``releases.json``), read the
release's sources -- the same archives ``scripts/gen_vllm_engine_args.py`` obtains (the PyPI
sdist, a wheel where a release has none; vllm is never installed or imported) -- and record,
each fact with the file and line it is read from and a URL to that line at the release tag:

- ``bfloat16_min_capability``: the compute capability below which the worker refuses bfloat16
  ("Bfloat16 is only supported on GPUs with compute capability of at least 8.0");
- ``auto_dtype_resolution``: whether ``dtype=auto`` picks a dtype the GPU supports
  (``ModelConfig._resolve_auto_dtype``, from 0.10/0.11) or keeps the checkpoint's dtype
  (older releases: a bfloat16 checkpoint stays bfloat16 on a T4 and is refused);
- ``float16_unsupported_model_types``: ``_FLOAT16_NOT_SUPPORTED_MODELS`` (model type -> reason);
- ``quantization``: per method name (``QuantizationConfig.get_name()``), the minimum compute
  capability (``get_min_capability()``, 75 = 7.5), the activation dtypes
  (``get_supported_act_dtypes()``) and the files it reads its settings from when config.json has
  no ``quantization_config`` (``get_config_filenames()``; none: the method quantizes online);
- ``known_quantization_methods``: every method name the engine accepts (``QUANTIZATION_METHODS``);
  a checkpoint declaring any other stops the start-up ("Unknown quantization method: mxfp4");
- ``modelopt_checkpoint_detected``: whether the config loader reads a ModelOpt checkpoint's
  ``hf_quant_config.json`` as its quantization config when config.json has none (from 0.10), so the
  checkpoint loads as ``modelopt`` unasked; before, only ``--quantization modelopt`` reads it;
- ``modelopt_quant_algos``: which ModelOpt ``quant_algo`` names the config normalization turns into
  which method (``FP8`` -> ``modelopt``, ``NVFP4`` -> ``modelopt_fp4``; compared upper-cased from 0.14),
  read from the ``if producer_name == "modelopt"`` block;
- ``architectures``: the model registry's tables (``_TEXT_GENERATION_MODELS``,
  ``_MULTIMODAL_MODELS``, ``_EMBEDDING_MODELS`` …; ``_MODELS`` before 0.5), architecture names only,
  and whether the release falls back to the Transformers backend for other architectures.

An image that pins a development build (``0.15.1.dev2``) is read from the release it precedes
(``0.15.1``), or the one before when that does not exist; the data says which (``read_from``).

Run: python scripts/gen_vllm_capabilities.py [--cache-dir DIR]   (stdlib only, deterministic)
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_vllm_engine_args as engine_args  # noqa: E402  (the sibling generator: archive download and reading)

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_FILE = REPO_ROOT / "lmi_config" / "data" / "vllm_capabilities.json"
PINS_FILE = REPO_ROOT / "lmi_config" / "data" / "image_pins.json"
RELEASES_FILE = REPO_ROOT / "lmi_config" / "data" / "releases.json"
OLDEST = (0, 4, 2)  # LMI v10 (DJL 0.28.0): the first LMI image with vLLM as its own backend
GPU_IMAGES = ("djl-lmi",)
EXTRA_VERSIONS = ("0.5.0",)  # vLLM on Neuron (djl-neuronx 0.29.0): architectures only matter there
_BF16 = re.compile(r"Bfloat16 is only supported on GPUs")
_CAPABILITY = re.compile(r"at least (\d+)\.(\d+)")
_DTYPE = re.compile(r"torch\.(\w+)")
_DTYPE_NAMES = {"half": "float16", "float16": "float16", "bfloat16": "bfloat16", "float": "float32"}


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version.split("dev")[0].split("rc")[0])[:3])


def pinned_versions() -> list[str]:
    """The vLLM versions the LMI GPU images pin (their own virtual environments' included) and the
    ones releases.json names for each LMI release."""
    data = json.loads(PINS_FILE.read_text())
    found: set[str] = set(EXTRA_VERSIONS)
    releases = json.loads(RELEASES_FILE.read_text())["releases"]
    found.update(row["vllm"] for row in releases if row.get("vllm") and _numbers(row["vllm"]) >= OLDEST)
    for image in data["images"]:
        if image["image"] not in GPU_IMAGES:
            continue
        pins = [image["pins"].get("vllm")] + [
            venv["pins"].get("vllm") for venv in image.get("venvs", {}).values()
        ]
        found.update(pin for pin in pins if pin and _numbers(pin) >= OLDEST)
    return sorted(found, key=_numbers)


def release_to_read(version: str, released: set[str]) -> str | None:
    """The PyPI release whose sources stand for ``version`` (itself, or for a dev build the nearest)."""
    if version in released:
        return version
    base = ".".join(str(part) for part in _numbers(version))
    if base in released:
        return base
    earlier = [
        name
        for name in released
        if re.fullmatch(r"[\d.]+(post\d+)?", name) and _numbers(name) < _numbers(base)
    ]
    return max(earlier, key=_numbers) if earlier else None


def _url(version: str, path: str, line: int) -> str:
    return f"https://github.com/vllm-project/vllm/blob/v{version}/{path}#L{line}"


def _tree(version: str, path: str) -> str:
    return f"https://github.com/vllm-project/vllm/tree/v{version}/{path}"


def _cite(version: str, path: str, line: int) -> str:
    return f"{path}:{line} {_url(version, path, line)}"


def bfloat16_check(sources: dict[str, str], version: str) -> dict | None:
    """Where the CUDA worker/platform refuses bfloat16, and from which capability."""
    for path in sorted(sources):
        if "rocm" in path or "xpu" in path or "cpu" in path:
            continue
        lines = sources[path].splitlines()
        for number, line in enumerate(lines, start=1):
            if _BF16.search(line):
                window = " ".join(lines[number - 1 : number + 3])
                match = _CAPABILITY.search(window)
                if match:
                    capability = int(match.group(1)) * 10 + int(match.group(2))
                    return {"value": capability, "source": _cite(version, path, number)}
    return None


def auto_dtype(sources: dict[str, str], version: str) -> dict:
    """Whether dtype=auto avoids a dtype the platform does not support."""
    for path in sorted(sources):
        if not path.startswith("vllm/config"):
            continue
        for number, line in enumerate(sources[path].splitlines(), start=1):
            if "def _resolve_auto_dtype" in line:
                return {
                    "value": "supported-by-gpu",
                    "source": _cite(version, path, number),
                    "fallback_warning": _fallback_warning(sources[path], version, path),
                }
    return {
        "value": "checkpoint",
        "source": "no _resolve_auto_dtype in vllm/config*: dtype=auto keeps the checkpoint's dtype (float32 -> float16) "
        f"— {_tree(version, 'vllm')}",
    }


def _fallback_warning(text: str, version: str, path: str) -> dict | None:
    """The warning ``_resolve_auto_dtype`` logs when it falls back from a checkpoint dtype the device does
    not support ("Your device %s doesn't support %s. Falling back to %s for compatibility."), and its line."""
    for node in ast.walk(ast.parse(text)):
        if not (isinstance(node, ast.FunctionDef) and node.name == "_resolve_auto_dtype"):
            continue
        for call in ast.walk(node):
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "warning"
                and any("Falling back" in piece for piece in _strings(call))
            ):
                message = "".join(_strings(call.args[0]))
                return {"message": " ".join(message.split()), "source": _cite(version, path, call.lineno)}
    return None


def float16_unsupported(sources: dict[str, str], version: str) -> dict:
    for path in sorted(sources):
        if not path.startswith("vllm/config"):
            continue
        tree = ast.parse(sources[path])
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == "_FLOAT16_NOT_SUPPORTED_MODELS"
                for target in node.targets
            ):
                value = ast.literal_eval(node.value)
                return {"value": dict(sorted(value.items())), "source": _cite(version, path, node.lineno)}
    return {
        "value": {},
        "source": f"no _FLOAT16_NOT_SUPPORTED_MODELS in vllm/config* of this release — {_tree(version, 'vllm')}",
    }


def _returned(function: ast.FunctionDef) -> ast.expr | None:
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and node.value is not None:
            return node.value
    return None


def _loaded_without_files(sources: dict[str, str]) -> set[str]:
    """Methods ``get_quant_config`` returns for before it looks for files (GGUF, in-flight bitsandbytes)."""
    text = sources.get("vllm/model_executor/model_loader/weight_utils.py", "")
    for node in ast.walk(ast.parse(text)) if text else ():
        if isinstance(node, ast.FunctionDef) and node.name == "get_quant_config":
            return {
                comparator.value
                for compare in ast.walk(node)
                if isinstance(compare, ast.Compare)
                and isinstance(compare.left, ast.Attribute)
                and compare.left.attr == "quantization"
                for comparator in compare.comparators
                if isinstance(comparator, ast.Constant) and isinstance(comparator.value, str)
            }
    return set()


def quantization_methods(sources: dict[str, str], version: str) -> dict:
    """Per method name: minimum capability and activation dtypes, from each QuantizationConfig class."""
    methods: dict[str, dict] = {}
    special = _loaded_without_files(sources)
    for path in sorted(sources):
        if not path.startswith("vllm/model_executor/layers/quantization/"):
            continue
        tree = ast.parse(sources[path])
        for cls in (node for node in tree.body if isinstance(node, ast.ClassDef)):
            functions = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
            if "get_name" not in functions or "get_min_capability" not in functions:
                continue
            name, minimum = _returned(functions["get_name"]), _returned(functions["get_min_capability"])
            if not isinstance(name, ast.Constant) or not isinstance(name.value, str):
                continue
            if (
                not isinstance(minimum, ast.Constant)
                or not isinstance(minimum.value, int)
                or minimum.value < 0
            ):
                continue  # a platform of its own (TPU, IPEX, Neuron): not a CUDA method
            dtypes_node = (
                _returned(functions["get_supported_act_dtypes"])
                if "get_supported_act_dtypes" in functions
                else None
            )
            dtypes = (
                sorted(
                    {
                        _DTYPE_NAMES[found]
                        for found in _DTYPE.findall(ast.unparse(dtypes_node))
                        if found in _DTYPE_NAMES
                    }
                )
                if dtypes_node is not None
                else []
            )
            files_node = (
                _returned(functions["get_config_filenames"]) if "get_config_filenames" in functions else None
            )
            try:
                config_files = sorted(ast.literal_eval(files_node)) if files_node is not None else []
            except ValueError:
                config_files = []
            if name.value.lower() in special:
                config_files = []  # get_quant_config builds it without files (GGUF, in-flight bitsandbytes)
            methods[name.value.lower()] = {
                "min_capability": minimum.value,
                "activation_dtypes": dtypes,
                "config_filenames": config_files,
                "source": _cite(version, path, cls.lineno),
            }
    return dict(sorted(methods.items()))


QUANTIZATION_INIT = "vllm/model_executor/layers/quantization/__init__.py"
_UNKNOWN_METHOD = "Unknown quantization method"


def known_quantization(sources: dict[str, str], version: str) -> dict | None:
    """Every method name ``ModelConfig`` accepts (``QUANTIZATION_METHODS``: a list, a dict's keys before
    0.5, the ``QuantizationMethods`` Literal later), and the line that refuses any other."""
    source = sources.get(QUANTIZATION_INIT)
    if source is None:
        return None
    names: list[str] = []
    line = 0
    for node in ast.parse(source).body:
        target, value = None, None
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            target, value = node.target.id, node.value
        elif (
            isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        ):
            target, value = node.targets[0].id, node.value
        if value is None or target not in ("QUANTIZATION_METHODS", "QuantizationMethods"):
            continue
        if isinstance(value, ast.List):
            found = [item.value for item in value.elts if isinstance(item, ast.Constant)]
        elif isinstance(value, ast.Dict):
            found = [key.value for key in value.keys if isinstance(key, ast.Constant)]
        elif isinstance(value, ast.Subscript):  # Literal["awq", ...]
            elements = value.slice.elts if isinstance(value.slice, ast.Tuple) else [value.slice]
            found = [item.value for item in elements if isinstance(item, ast.Constant)]
        else:
            continue  # list(get_args(QuantizationMethods)): the Literal above gave them
        if found:
            names, line = [str(name) for name in found], node.lineno
    if not names:
        return None
    refusal = next(
        (
            _cite(version, path, number)
            for path in sorted(sources)
            if path.startswith("vllm/config")
            for number, text in enumerate(sources[path].splitlines(), start=1)
            if _UNKNOWN_METHOD in text
        ),
        None,
    )
    return {
        "values": sorted(set(names)),
        "source": _cite(version, QUANTIZATION_INIT, line),
        "refused_by": refusal,
    }


def _dict_keys(node: ast.expr, tables: dict[str, list[str]]) -> list[str]:
    keys: list[str] = []
    if isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None and isinstance(value, ast.Name):
                keys += tables.get(value.id, [])
            elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                keys.append(key.value)
    return keys


_POOLING_TABLES = (
    "_EMBEDDING_MODELS", "_CROSS_ENCODER_MODELS", "_SEQUENCE_CLASSIFICATION_MODELS", "_REWARD_MODELS",
    "_TOKEN_CLASSIFICATION_MODELS", "_LATE_INTERACTION_MODELS",
)  # fmt: skip
# tables that do not add an architecture vLLM runs itself: removed ones, platform restrictions,
# out-of-tree plugins' names, the Transformers backend's own classes
_NOT_NATIVE = ("_PREVIOUSLY_SUPPORTED_MODELS", "_ROCM_PARTIALLY_SUPPORTED_MODELS", "_OOT_MODELS", "_OOT_SUPPORTED_MODELS",
               "_TRANSFORMERS_BACKEND_MODELS", "_TRANSFORMERS_MODELS", "_TRANSFORMERS_SUPPORTED_MODELS")  # fmt: skip
_FALLBACK = re.compile(r"def resolve_transformers|TransformersForCausalLM|class TransformersModel\b")


def transformers_fallback(sources: dict[str, str], version: str) -> dict:
    """Whether an architecture outside the registry may still load through the Transformers backend."""
    for path in sorted(sources):
        if not path.startswith("vllm/model_executor/"):
            continue
        for number, line in enumerate(sources[path].splitlines(), start=1):
            if _FALLBACK.search(line):
                return {"value": True, "source": _cite(version, path, number)}
    return {
        "value": False,
        "source": f"no Transformers backend in vllm/model_executor of this release — {_tree(version, 'vllm/model_executor')}",
    }


def architectures(sources: dict[str, str], version: str) -> dict:
    """The architectures the registry runs natively, which of them are multimodal or pooling models,
    the ones removed, and whether other architectures fall back to the Transformers backend."""
    for path in ("vllm/model_executor/models/registry.py", "vllm/model_executor/models/__init__.py"):
        if path not in sources:
            continue
        tree = ast.parse(sources[path])
        tables: dict[str, list[str]] = {}
        first_line = 0
        for node in tree.body:
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
            if isinstance(node, ast.AnnAssign):
                target = node.target
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            if isinstance(target, ast.Name) and target.id.endswith("_MODELS") and isinstance(value, ast.Dict):
                tables[target.id] = _dict_keys(value, tables)
                first_line = first_line or node.lineno
        if not tables:
            continue
        native = {name for table, names in tables.items() if table not in _NOT_NATIVE for name in names}
        return {
            "native": sorted(native),
            "multimodal": sorted(
                set(tables.get("_MULTIMODAL_MODELS", []) + tables.get("_CONDITIONAL_GENERATION_MODELS", []))
            ),
            "pooling": sorted({name for table in _POOLING_TABLES for name in tables.get(table, [])}),
            "previously_supported": sorted(set(tables.get("_PREVIOUSLY_SUPPORTED_MODELS", []))),
            "through_transformers": sorted(set(tables.get("_TRANSFORMERS_SUPPORTED_MODELS", []))),
            "transformers_fallback": transformers_fallback(sources, version),
            "source": _cite(version, path, first_line),
        }
    return {"native": [], "multimodal": [], "pooling": [], "previously_supported": [], "through_transformers": [],
            "transformers_fallback": transformers_fallback(sources, version),
            "source": f"no model registry found — {_tree(version, 'vllm/model_executor/models')}"}  # fmt: skip


def modelopt_detection(sources: dict[str, str], version: str) -> dict:
    """Whether the config loader turns a ModelOpt ``hf_quant_config.json`` into the quantization config."""
    path = "vllm/transformers_utils/config.py"
    for number, line in enumerate(sources.get(path, "").splitlines(), start=1):
        if '"hf_quant_config.json"' in line:
            return {"value": True, "source": _cite(version, path, number)}
    return {
        "value": False,
        "source": "no hf_quant_config.json in vllm/transformers_utils/config.py: a ModelOpt checkpoint loads as "
        f"modelopt only with --quantization modelopt — {_tree(version, 'vllm/transformers_utils')}",
    }


def _strings(node: ast.AST) -> list[str]:
    return [
        item.value
        for item in ast.walk(node)
        if isinstance(item, ast.Constant) and isinstance(item.value, str)
    ]


def modelopt_quant_algos(sources: dict[str, str], version: str) -> dict | None:
    """ModelOpt ``quant_algo`` -> the quant_method vLLM sets, from the ``producer_name == "modelopt"`` block
    (each ``if``/``elif`` test's strings map to the method it assigns); None where the release has none."""
    for path in sorted(sources):
        if "producer_name" not in sources[path]:
            continue
        for node in ast.walk(ast.parse(sources[path])):
            if not (
                isinstance(node, ast.If)
                and "modelopt" in _strings(node.test)
                and "producer_name" in ast.unparse(node.test)
            ):
                continue
            methods: dict[str, str] = {}
            for branch in ast.walk(node):
                if not isinstance(branch, ast.If) or branch is node:
                    continue
                assigned = [
                    statement.value.value
                    for statement in branch.body
                    if isinstance(statement, ast.Assign)
                    and isinstance(statement.value, ast.Constant)
                    and "quant_method" in ast.unparse(statement.targets[0])
                ]
                if assigned:
                    methods.update(dict.fromkeys(_strings(branch.test), assigned[0]))
            if methods:
                return {
                    "value": dict(sorted(methods.items())),
                    "case_insensitive": ".upper()" in ast.unparse(node),
                    "source": _cite(version, path, node.lineno),
                }
    return None


def _function(sources: dict[str, str], name: str) -> tuple[str, ast.FunctionDef] | None:
    """The first function (or method) called ``name`` in the release's sources, and its file."""
    for path in sorted(sources):
        if f"def {name}" not in sources[path]:
            continue
        for node in ast.walk(ast.parse(sources[path])):
            if isinstance(node, ast.FunctionDef) and node.name == name:
                return path, node
    return None


def max_model_len(sources: dict[str, str], version: str) -> dict | None:
    """How ``_get_and_verify_max_len`` derives the longest sequence from config.json: the keys whose smallest
    value it takes (``possible_keys``, in ``derive_max_model_len_and_key`` from 0.23), whether a
    ``model_max_length`` then replaces that value, and how rope_scaling stretches it — the types it does not
    multiply by the factor (``rope_type not in ("su", "longrope", "llama3")``), the types whose length is
    ``original_max_position_embeddings`` times the factor (``yarn``) and the model types it leaves alone
    (``"gemma3" not in hf_config.model_type``)."""
    found = _function(sources, "_get_and_verify_max_len")
    if found is None:
        return None
    path, function = found
    keys_at: tuple[str, ast.AST] | None = None
    for candidate in (
        function,
        *[item for name in ("derive_max_model_len_and_key",) if (item := _function(sources, name))],
    ):
        where, node = (path, candidate) if isinstance(candidate, ast.FunctionDef) else candidate
        for assign in ast.walk(node):
            if (
                isinstance(assign, ast.Assign)
                and any(
                    isinstance(target, ast.Name) and target.id == "possible_keys" for target in assign.targets
                )
                and isinstance(assign.value, ast.List)
            ):
                keys_at = (where, assign)
                break
        if keys_at is not None:
            break
    if keys_at is None:
        return None
    keys_path, keys_node = keys_at
    keys_owner = function if keys_path == path else _function(sources, "derive_max_model_len_and_key")[1]  # type: ignore[index]
    overrides = any(
        isinstance(node, ast.If)
        and isinstance(node.test, ast.NamedExpr)
        and "model_max_length" in _strings(node.test)
        for node in ast.walk(keys_owner)
    )
    not_scaled: list[str] = []
    original: list[str] = []
    left_alone: list[str] = []
    scaling = None
    for node in ast.walk(function):
        if not (
            isinstance(node, ast.If)
            and "rope_" in ast.unparse(node.test)
            and "is not None" in ast.unparse(node.test)
        ):
            continue
        scaling = node
        for compare in ast.walk(node.test):
            if (
                isinstance(compare, ast.Compare)
                and any(isinstance(op, ast.NotIn) for op in compare.ops)
                and isinstance(compare.left, ast.Constant)  # "gemma3" not in hf_config.model_type
            ):
                left_alone.append(str(compare.left.value))
            if isinstance(compare, ast.Compare) and any(isinstance(op, ast.NotEq) for op in compare.ops):
                not_scaled += _strings(compare.comparators[0])  # rope_scaling["type"] != "su" (0.4)
        for branch in ast.walk(node):
            if not isinstance(branch, ast.If) or branch is node:
                continue
            test = branch.test
            if isinstance(test, ast.Compare) and any(isinstance(op, ast.NotIn) for op in test.ops):
                not_scaled += _strings(test.comparators[0])
            if (
                isinstance(test, ast.Compare)
                and any(isinstance(op, ast.Eq) for op in test.ops)
                and "original_max_position_embeddings"
                in _strings(ast.Module(body=branch.body, type_ignores=[]))
            ):
                original += _strings(test.comparators[0])
        break
    if scaling is None:
        return None
    # the key the type is read from (a config without it stops there: 0.4's rope_scaling["type"] on a
    # Llama 3.1 config); where only rope_type is read, the config reader copied a legacy type into it first
    type_keys = list(dict.fromkeys(key for key in _strings(scaling) if key in ("type", "rope_type")))
    patched = any(
        _function(sources, name)
        for name in ("patch_rope_scaling_dict", "patch_rope_parameters_dict", "patch_legacy_rope_type")
    )
    if type_keys == ["rope_type"] and patched:
        type_keys.append("type")
    return {
        "possible_keys": [str(item.value) for item in keys_node.value.elts if isinstance(item, ast.Constant)],
        "possible_keys_source": _cite(version, keys_path, keys_node.lineno),
        "model_max_length_replaces": overrides,
        "not_scaled_types": sorted(set(not_scaled)),
        "original_positions_types": sorted(set(original)),
        "not_scaled_model_types": sorted(set(left_alone)),
        "type_keys": type_keys,
        "source": _cite(version, path, scaling.lineno),
    }


def facts_of(version: str, read_from: str, sources: dict[str, str]) -> dict:
    return {
        "read_from": read_from,
        "bfloat16_min_capability": bfloat16_check(sources, read_from),
        "auto_dtype_resolution": auto_dtype(sources, read_from),
        "float16_unsupported_model_types": float16_unsupported(sources, read_from),
        "quantization": quantization_methods(sources, read_from),
        "known_quantization_methods": known_quantization(sources, read_from),
        "modelopt_checkpoint_detected": modelopt_detection(sources, read_from),
        "modelopt_quant_algos": modelopt_quant_algos(sources, read_from),
        "architectures": architectures(sources, read_from),
        "max_model_len": max_model_len(sources, read_from),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "lmi-config" / "vllm"))
    parser.add_argument("--index-url", default=engine_args.DEFAULT_INDEX)
    args = parser.parse_args(argv)
    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    released = {
        match.group(1)
        for name in engine_args.index_files(args.index_url)
        if (match := re.match(r"vllm-([\d.]+(?:\.post\d+)?)(?:\.tar\.gz|\.zip|-)", name))
    }
    versions: dict[str, dict] = {}
    # releases first, so that a development build of a listed release can point at it
    for version in sorted(
        pinned_versions(), key=lambda name: (not re.fullmatch(r"[\d.]+(?:\.post\d+)?", name), _numbers(name))
    ):
        read_from = release_to_read(version, released)
        if read_from is None:
            engine_args.log(f"{version}: no release on the index to read; skipped")
            continue
        archive = engine_args.obtain(read_from, cache, args.index_url, False, "x86_64")
        if archive is None:
            engine_args.log(f"{version}: could not obtain {read_from}; skipped")
            continue
        if read_from != version and read_from in versions:
            versions[version] = {
                "read_from": read_from,
                "same_as": read_from,
            }  # a dev build of a listed release
            continue
        engine_args.log(f"{version}: reading {archive.name}")
        versions[version] = facts_of(version, read_from, engine_args.read_python_sources(archive))
    document = {
        "source": (
            "generated by scripts/gen_vllm_capabilities.py from the vllm sources on PyPI (sdists; a wheel where a "
            "release has none), one entry per vLLM version an LMI GPU image pins (lmi_config/data/image_pins.json) or an LMI release names "
            "(lmi_config/data/releases.json) — https://pypi.org/project/vllm/#history"
        ),
        "versions": versions,
    }
    DATA_FILE.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n")
    engine_args.log(f"wrote {DATA_FILE.relative_to(REPO_ROOT)} ({len(versions)} versions)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
