"""The checks vLLM's model classes make of the model's config.json as they are built (issue 31).

A model class's ``__init__`` refuses config.json fields it cannot serve: ``LlamaMLP`` raises
"Unsupported activation: gelu. Only silu is supported for now.", MiniCPM's MLP took only silu before
vLLM 0.6.3 (ProSparse-MiniCPM's fatrelu failed, vllm-project/vllm#7678), Dbrx refuses tied embeddings.
The catalogue (``data/vllm_checks.json``) records each check's condition; the judge evaluates those of
the architecture's own model file (the registry's module, ``data/vllm_model_classes.json``) on the
config.json as written (``shape/conditions.py``): ``config.<field>`` is the field (nested through
dicts), the bare ``hidden_act`` of an MLP class is the ``config.hidden_act`` its model passes it, and
anything else is unknown. A field config.json does not write is unknown too (transformers' default
would decide it), so such a check is not made. A model whose config.json is not at hand (dimensions from
a table, a copy judged by its name) is not judged.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lmi_config.knowledge.engine_checks import EngineCheck, covered_checks
from lmi_config.shape.conditions import Resolve, holds
from lmi_config.shape.problems import Problem

if TYPE_CHECKING:
    from lmi_config.shape.dimensions import Target

RULE = "model-config-refused"
# the MLP classes' parameter that their model passes config.hidden_act to
_BOUND_LOCALS = frozenset({"hidden_act"})


def judge_model_class_checks(target: Target) -> list[Problem]:
    """Each check of the architecture's model file whose condition config.json's fields make true."""
    from lmi_config.knowledge.model_classes import model_classes

    arch, vllm = target.arch, target.release.vllm
    if target.backend != "vllm" or not vllm or arch is None or arch.config_json is None:
        return []
    classes = model_classes(vllm)
    path = classes.module_path(target.architectures) if classes is not None else None
    if path is None:
        return []
    raw, problems = arch.config_json, []
    resolve = _resolver(raw)
    for check in covered_checks(RULE, vllm):
        if check.path != path or not all(holds(condition, resolve) for condition in check.conditions):
            continue
        problems.append(_problem(target, check, raw, vllm))
    return problems[:1]  # the first refusal stops the start-up


def _resolver(raw: Mapping[str, Any]) -> Resolve:
    def resolve(node: ast.expr) -> object:
        if isinstance(node, ast.Name):
            return _scalar(raw.get(node.id)) if node.id in _BOUND_LOCALS else None
        names: list[str] = []
        while isinstance(node, ast.Attribute):
            names.insert(0, node.attr)
            node = node.value
        if not (isinstance(node, ast.Name) and node.id == "config"):
            return None
        found: object = raw
        for name in names:
            found = found.get(name) if isinstance(found, Mapping) else None
        return _scalar(found)

    return resolve


def _scalar(found: object) -> object:
    return found if isinstance(found, bool | int | float | str) else None


def _fields(check: EngineCheck) -> list[str]:
    """The config.json fields the check's condition reads, as config.json names them."""
    names: list[str] = []
    for condition in check.conditions:
        for node in ast.walk(ast.parse(condition, mode="eval")):
            if isinstance(node, ast.Name) and node.id in _BOUND_LOCALS:
                names.append(node.id)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "config"
            ):
                names.append(node.attr)
    return list(dict.fromkeys(names))


def _problem(target: Target, check: EngineCheck, raw: Mapping[str, Any], vllm: str) -> Problem:
    fields = _fields(check)
    written = ", ".join(f"{name}={raw.get(name)!r}" for name in fields if name in raw) or "its fields"
    values = {name: raw.get(name) for name in fields if name in raw}
    said = (
        f"'{check.message_with(values)}'"
        if check.message.strip()
        else f"an assertion ({' and '.join(check.conditions)})"
    )
    module = check.path.rsplit("/", 1)[-1]
    message = (
        f"{target.model_id}'s config.json sets {written}: vLLM {vllm}'s model class ({module}, "
        f"{check.function}) stops the start-up with {said} ({check.cited}) — use a checkpoint whose "
        "config.json that class accepts, or an LMI release whose vLLM serves it"
    )
    return Problem(RULE, "error", message, "option.model_id")
