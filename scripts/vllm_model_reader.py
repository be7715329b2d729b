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

From vLLM 0.10 the bitsandbytes loader refuses an MoE model when neither the model nor its direct children
have ``get_expert_mapping`` ("MoE Model ... does not support BitsAndBytes quantization yet."): the
architectures whose module reaches no such method (``no_expert_mapping``) are listed.

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


def _model_trees(sources: dict[str, str]) -> dict[str, ast.Module]:
    """module name -> parsed module, over the files of the model package (a file that does not parse is
    left out)."""
    trees: dict[str, ast.Module] = {}
    for path, text in sources.items():
        if not path.startswith(_MODELS) or not path.endswith(".py") or path.count("/") != 3:
            continue
        try:
            trees[path[len(_MODELS) : -len(".py")]] = ast.parse(text)
        except SyntaxError:
            continue
    return trees


def _classes(trees: dict[str, ast.Module]) -> dict[tuple[str, str], ast.ClassDef]:
    """(module, class name) -> class, over the model package."""
    found: dict[tuple[str, str], ast.ClassDef] = {}
    for module, tree in trees.items():
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
    trees = _model_trees(sources)
    classes = _classes(trees)
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

    found = _registry(sources)
    if found is None:
        return None
    path, table, line = found
    lora = sorted(arch for arch, key in table.items() if key in classes and supports(key))
    mapped = _expert_mapping_modules(trees)
    return {
        "modules": {arch: key[0] for arch, key in sorted(table.items())},
        "lora": lora,
        "no_lora": sorted(arch for arch, key in table.items() if key in classes and arch not in lora),
        # classes that no get_expert_mapping reaches: an MoE model the bitsandbytes loader refuses (0.10+)
        "no_expert_mapping": sorted(
            arch for arch, key in table.items() if key in classes and key[0] not in mapped
        ),
        # a class this reader does not find (a subpackage, the Transformers backend): not judged
        "unread": sorted(arch for arch, key in table.items() if key not in classes),
        "source": GITHUB.format(version=release, path=path, line=line),
    }


def _registry(sources: dict[str, str]) -> tuple[str, dict[str, tuple[str, str]], int] | None:
    """(the registry's path, architecture -> (module, class name), the line of its first table) of the
    release's registry tables (``_MODELS`` before 0.5, ``_TEXT_GENERATION_MODELS`` and the rest after)."""
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
        if table:
            return path, table, line
    return None


def _expert_mapping_modules(trees: dict[str, ast.Module]) -> set[str]:
    """The model-package modules from which a ``get_expert_mapping`` is reachable: one that defines it, or
    that imports (``from .x import``, transitively) a module of the package that does. The bitsandbytes
    loader asks the model and its direct children for it (``get_moe_expert_mapping``); following imports
    finds the children's classes and errs on the side of finding one."""
    imports: dict[str, set[str]] = {}
    defines: set[str] = set()
    for module, tree in trees.items():
        imported: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == "get_expert_mapping":
                defines.add(module)
            elif isinstance(node, ast.ImportFrom) and node.module:
                name = node.module
                if node.level == 1:
                    imported.add(name.split(".")[0])
                elif name.startswith("vllm.model_executor.models."):
                    imported.add(name.split(".")[3])
        imports[module] = imported
    reached = set(defines)
    changed = True
    while changed:  # a module reaches one when any module it imports does
        changed = False
        for module, imported in imports.items():
            if module not in reached and imported & reached:
                reached.add(module)
                changed = True
    return reached


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


# what the generators say of ``lora_modules`` in data/vllm_model_classes.json's source
LORA_MODULES_SOURCE = (
    "lora_modules: per LoRA model class, which of the embedding layers (embed_tokens, lm_head) the release's "
    "LoRA loader takes adapter weights for — the names of the class's embedding_modules where "
    "vllm/lora/utils.py get_supported_lora_modules gathers the model's linear layers (0.8+), of its "
    "supported_lora_modules list where the LoRA manager takes that list (0.4-0.7) — with the line that sets it. "
    "config_registry: the model types vllm/transformers_utils/config.py reads with vLLM's own configuration "
    "classes (_CONFIG_REGISTRY)."
)
_UNKNOWN = object()  # an attribute set in a way this reader does not evaluate (in __init__, from a call)
# the input and output embeddings: never a linear layer in vLLM's model classes (VocabParallelEmbedding,
# ParallelLMHead), so a LoRA on them is served only where the class names them
EMBEDDING_LAYERS = ("embed_tokens", "lm_head")


def _names_of(value: ast.expr | None) -> list[str] | object:
    """The string keys of a dict literal or the strings of a list / tuple literal; _UNKNOWN otherwise."""
    if isinstance(value, ast.Dict):
        keys = value.keys
    elif isinstance(value, ast.List | ast.Tuple):
        keys = list(value.elts)
    else:
        return _UNKNOWN
    if not all(isinstance(key, ast.Constant) and isinstance(key.value, str) for key in keys):
        return _UNKNOWN
    return [key.value for key in keys if isinstance(key, ast.Constant)]


def _own_attribute(node: ast.ClassDef, attribute: str) -> tuple[list[str] | object, int] | None:
    """(the names, the line) a class body gives ``attribute``; _UNKNOWN where a method sets
    ``self.<attribute>``; None where the class does not set it."""
    for statement in node.body:
        if isinstance(statement, ast.FunctionDef):
            for inner in ast.walk(statement):
                targets = inner.targets if isinstance(inner, ast.Assign) else []
                if any(
                    isinstance(target, ast.Attribute)
                    and target.attr == attribute
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                    for target in targets
                ):
                    return _UNKNOWN, inner.lineno
    for statement in node.body:
        target = (
            statement.targets[0]
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1
            else None
        )
        if isinstance(statement, ast.AnnAssign):
            target = statement.target
        if isinstance(target, ast.Name) and target.id == attribute:
            value = statement.value if isinstance(statement, ast.Assign | ast.AnnAssign) else None
            return _names_of(value), statement.lineno
    return None


def _linear_embedding_layers(text: str) -> set[str]:
    """The embedding-named layers a model module builds as a linear layer (``self.lm_head = ...Linear(``):
    those are LoRA modules like any linear layer."""
    return set(re.findall(r"self\.(embed_tokens|lm_head)\s*=\s*[\w.]*Linear\w*\(", text))


def _linearization(
    key: tuple[str, str],
    classes: dict[tuple[str, str], ast.ClassDef],
    by_name: dict[str, list[tuple[str, str]]],
    depth: int = 0,
) -> list[tuple[str, str]]:
    """The C3 linearization (Python's MRO) of a model-package class over the classes this reader finds; a
    base outside the package (``nn.Module``) is a leaf. Where the merge fails, the depth-first order."""
    node = classes.get(key)
    if node is None or depth > 20:
        return [key]
    bases = []
    for base in node.bases:
        text = ast.unparse(base)
        bases.append(next(iter(_base_keys(text, key[0], by_name)), ("", text.split("[", 1)[0])))
    sequences = [_linearization(base, classes, by_name, depth + 1) for base in bases] + [list(bases)]
    order = [key]
    while any(sequences):
        sequences = [sequence for sequence in sequences if sequence]
        head = next(
            (
                sequence[0]
                for sequence in sequences
                if not any(sequence[0] in other[1:] for other in sequences)
            ),
            None,
        )
        if head is None:  # an order Python would refuse: depth-first instead
            return order + [klass for sequence in sequences for klass in sequence if klass not in order]
        order.append(head)
        sequences = [sequence[1:] if sequence[0] == head else sequence for sequence in sequences]
    return order


def lora_modules(sources: dict[str, str], release: str) -> dict[str, Any] | None:
    """Which of the embedding layers (embed_tokens, lm_head) each LoRA model class takes a LoRA on, as the
    release's LoRA loader decides: ``{"how", "source", "groups": [{"embedding": [...], "source":
    URL of the deciding line, "architectures": [...]}]}``, the classes grouped by the line that decides them; None where
    the release has no LoRA registry this reader knows.

    ``how`` is "linear-layers" where vllm/lora/utils.py ``get_supported_lora_modules`` gathers the
    model's linear layers and the names of its ``embedding_modules`` (0.8+), "declared" where the
    manager takes the class's ``supported_lora_modules`` list (0.4-0.7). An adapter whose weights name a
    module outside that set stops the load ("While loading …, expected target modules in … but
    received …"). A class whose attribute this reader cannot evaluate is left out (not judged)."""
    support = lora_support(sources, release)
    if support is None:
        return None
    utils = sources.get("vllm/lora/utils.py", "")
    dynamic = re.search(r"^def get_supported_lora_modules\(", utils, re.MULTILINE)
    if dynamic:
        how, attribute = "linear-layers", "embedding_modules"
        line = utils[: dynamic.start()].count("\n") + 1
        source = GITHUB.format(version=release, path="vllm/lora/utils.py", line=line)
    else:
        how, attribute = "declared", "supported_lora_modules"
        manager = sources.get("vllm/lora/models.py", "")
        found = re.search(r"self\.supported_lora_modules = ", manager)
        line = manager[: found.start()].count("\n") + 1 if found else 1
        source = GITHUB.format(version=release, path="vllm/lora/models.py", line=line)
    classes = _classes(_model_trees(sources))
    by_name: dict[str, list[tuple[str, str]]] = {}
    for key in classes:
        by_name.setdefault(key[1], []).append(key)

    def resolve(key: tuple[str, str]) -> tuple[list[str] | object, str] | None:
        for klass in _linearization(key, classes, by_name):  # Python's method resolution order
            node = classes.get(klass)
            own = _own_attribute(node, attribute) if node is not None else None
            if own is not None:
                return own[0], GITHUB.format(version=release, path=f"{_MODELS}{klass[0]}.py", line=own[1])
        return None

    registry = _registry(sources)
    lora = set(support["lora"])
    keys = {arch: key for arch, key in (registry[1] if registry else {}).items() if arch in lora}
    groups: dict[tuple[tuple[str, ...], str], list[str]] = {}
    for arch, key in sorted(keys.items()):
        found = resolve(key)
        if found is None or found[0] is _UNKNOWN:
            continue
        names = set(found[0]) if isinstance(found[0], list) else set()
        names |= _linear_embedding_layers(sources.get(f"{_MODELS}{key[0]}.py", "")) if dynamic else set()
        groups.setdefault((tuple(sorted(names & set(EMBEDDING_LAYERS))), found[1]), []).append(arch)
    # the classes grouped by what decides them (most share SupportsLoRA's default or Llama's attribute)
    return {
        "how": how,
        "source": source,
        "groups": [
            {"embedding": list(embedding), "source": line, "architectures": architectures}
            for (embedding, line), architectures in sorted(groups.items(), key=lambda item: item[0][1])
        ],
    }


def config_registry(sources: dict[str, str], release: str) -> dict[str, Any] | None:
    """The model types vLLM reads config.json of with its own configuration classes (``_CONFIG_REGISTRY``
    of vllm/transformers_utils/config.py: a dict literal, or ``LazyConfigDict(name=...)`` from 0.10): those
    load whatever the image's transformers knows. None where the release has no such table."""
    path = "vllm/transformers_utils/config.py"
    if path not in sources:
        return None
    for node in ast.parse(sources[path]).body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if isinstance(node, ast.AnnAssign):
            target = node.target
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        if not (isinstance(target, ast.Name) and target.id == "_CONFIG_REGISTRY"):
            continue
        if isinstance(value, ast.Dict):
            names = [key.value for key in value.keys if isinstance(key, ast.Constant)]
        elif isinstance(value, ast.Call):
            names = [keyword.arg for keyword in value.keywords if keyword.arg]
        else:
            return None
        return {
            "model_types": sorted(str(name) for name in names),
            "source": GITHUB.format(version=release, path=path, line=node.lineno),
        }
    return None


def read_model_classes(sources: dict[str, str], release: str) -> dict[str, Any]:
    """The release's registry (module and LoRA support per architecture), which embedding layers each LoRA
    class takes a LoRA on, the model types it reads with its own configuration classes, and LoRA's extra
    vocabulary sizes."""
    return {
        "architectures": lora_support(sources, release),
        "lora_modules": lora_modules(sources, release),
        "config_registry": config_registry(sources, release),
        "extra_vocab_sizes": extra_vocab_sizes(sources, release),
    }
