"""Read the model registry of one vLLM release out of its sources with ``ast`` (vLLM is never imported):
which module holds each architecture's class, and which classes can serve LoRA adapters.

The module tells the judge which model class's constructor checks apply to a checkpoint (those of
``vllm/model_executor/models/<module>.py`` in data/vllm_checks.json).

vLLM builds its LoRA manager only for a model class that supports LoRA; otherwise the start-up stops
("Model ... does not support LoRA, but LoRA is enabled", "Model ... is not supported for LoRA."). A
class supports LoRA when it (or a base class of the model package, followed by name) derives from
``SupportsLoRA`` (0.5+), sets ``supports_lora = True``, or carries ``supported_lora_modules`` (0.4,
where ``create_lora_manager`` asks for that attribute). The registry's tables (``_MODELS`` before 0.5,
``_TEXT_GENERATION_MODELS`` and the rest after) map each architecture to its module and class.

Stdlib only; deterministic.
"""

from __future__ import annotations

import ast
import re
from typing import Any

GITHUB = "https://github.com/vllm-project/vllm/blob/v{version}/{path}#L{line}"
_MODELS = "vllm/model_executor/models/"
_REGISTRIES = ("vllm/model_executor/models/registry.py", "vllm/model_executor/models/__init__.py")
_LORA_ATTRIBUTES = ("supported_lora_modules", "supports_lora")


def _classes(sources: dict[str, str]) -> dict[tuple[str, str], ast.ClassDef]:
    """(module, class name) -> class, over the model package."""
    found: dict[tuple[str, str], ast.ClassDef] = {}
    for path, text in sources.items():
        if not path.startswith(_MODELS) or not path.endswith(".py") or path.count("/") != 3:
            continue
        module = path[len(_MODELS) : -len(".py")]
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                found[(module, node.name)] = node
        for node in tree.body:  # ``Alias = SomeClass``: the class under another name
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Name)
                and (module, node.value.id) in found
            ):
                found[(module, node.targets[0].id)] = found[(module, node.value.id)]
    return found


def _own_support(node: ast.ClassDef) -> bool:
    if any(re.search(r"\bSupportsLoRA\b", ast.unparse(base)) for base in node.bases):
        return True
    for statement in node.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else []
        if isinstance(statement, ast.AnnAssign):
            targets = [statement.target]
        for target in targets:
            if isinstance(target, ast.Name) and target.id in _LORA_ATTRIBUTES:
                value = statement.value if isinstance(statement, ast.Assign | ast.AnnAssign) else None
                if not (isinstance(value, ast.Constant) and value.value is False):
                    return True
    return False


def lora_support(sources: dict[str, str], release: str) -> dict[str, Any] | None:
    """{"modules": {architecture: module}, "lora": [architectures], "no_lora": [...], "unread": [...],
    "source": registry URL} of the release's registry, None where it has none this reader knows."""
    classes = _classes(sources)
    by_name: dict[str, list[tuple[str, str]]] = {}
    for module, name in classes:
        by_name.setdefault(name, []).append((module, name))
    memo: dict[tuple[str, str], bool] = {}

    def supports(key: tuple[str, str], depth: int = 0) -> bool:
        if key in memo:
            return memo[key]
        node = classes.get(key)
        result = False
        if node is not None and depth < 20:
            result = _own_support(node) or any(
                supports(base_key, depth + 1)
                for base in node.bases
                for base_key in _base_keys(ast.unparse(base), key[0], by_name)
            )
        memo[key] = result
        return result

    for path in _REGISTRIES:
        if path not in sources:
            continue
        tree = ast.parse(sources[path])
        table: dict[str, tuple[str, str]] = {}
        line = 0
        for node in tree.body:
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
            if isinstance(node, ast.AnnAssign):
                target = node.target
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            if not (
                isinstance(target, ast.Name) and target.id.endswith("_MODELS") and isinstance(value, ast.Dict)
            ):
                continue
            if target.id in (
                "_PREVIOUSLY_SUPPORTED_MODELS",
                "_TRANSFORMERS_BACKEND_MODELS",
                "_TRANSFORMERS_MODELS",
            ):
                continue
            for key, entry in zip(value.keys, value.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(entry, ast.Tuple) and len(entry.elts) >= 2:
                    module, name = (
                        element.value if isinstance(element, ast.Constant) else None
                        for element in entry.elts[:2]
                    )
                    if isinstance(module, str) and isinstance(name, str):
                        table[str(key.value)] = (module, name)
                        line = line or node.lineno
        if not table:
            continue
        lora = sorted(arch for arch, key in table.items() if key in classes and supports(key))
        return {
            "modules": {arch: key[0] for arch, key in sorted(table.items())},
            "lora": lora,
            "no_lora": sorted(arch for arch, key in table.items() if key in classes and arch not in lora),
            # a class this reader does not find (a subpackage, the Transformers backend): not judged
            "unread": sorted(arch for arch, key in table.items() if key not in classes),
            "source": GITHUB.format(version=release, path=path, line=line),
        }
    return None


def _base_keys(text: str, module: str, by_name: dict[str, list[tuple[str, str]]]) -> list[tuple[str, str]]:
    """The model-package classes a base expression names: the same module's first, else any of that name."""
    name = text.split("[", 1)[0].split(".")[-1]
    candidates = by_name.get(name, [])
    same = [key for key in candidates if key[0] == module]
    return same or candidates[:1]


def extra_vocab_sizes(sources: dict[str, str], release: str) -> dict[str, Any] | None:
    """The ``lora_extra_vocab_size`` values ``LoRAConfig`` accepts (``possible_lora_extra_vocab_size``),
    with the line; None where the release checks none."""
    for path in sorted(sources):
        if not (path == "vllm/config.py" or (path.startswith("vllm/config/") and path.endswith(".py"))):
            continue
        for node in ast.walk(ast.parse(sources[path])):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "possible_lora_extra_vocab_size"
            ):
                values = ast.literal_eval(node.value)
                return {
                    "values": sorted(values),
                    "source": GITHUB.format(version=release, path=path, line=node.lineno),
                }
    return None


def read_model_classes(sources: dict[str, str], release: str) -> dict[str, Any]:
    """The release's registry (module and LoRA support per architecture) and LoRA's extra vocabulary sizes."""
    return {
        "architectures": lora_support(sources, release),
        "extra_vocab_sizes": extra_vocab_sizes(sources, release),
    }
