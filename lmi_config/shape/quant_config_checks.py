"""The checks vLLM's quantization configuration classes make of a checkpoint's quantization_config (issue 31).

vLLM builds the method's configuration with ``<Class>.from_config(quantization_config)``, and its
``from_config`` and ``__init__`` refuse values the method cannot serve: AWQ takes only 4-bit weights
("Currently, only 4-bit weight quantization is supported for AWQ, but got 8 bits."), FP8's blocks need a
dynamic activation scheme, a bitsandbytes checkpoint's quant storage must be uint8. The catalogue
(``data/vllm_checks.json``) records each check's condition; ``data/vllm_quant_configs.json`` (generated
from the same sources) records what each class reads: the keys ``from_config`` takes each argument from
(and its default), the ``self.<field>`` ``__init__`` keeps it in, and the constant lists the checks
compare with. The judge evaluates the checks on quantization_config as written
(``shape/conditions.py``): a key the class reads with a default and the file leaves out is that default; a
key it reads without one is unknown; anything else is unknown. So a check is made only where the file's
own values settle it.

Which class vLLM builds: the one named by ``option.quantize`` where the file names one, else the one
for config.json's ``quant_method``. Where another class of the release may take such a checkpoint over
(its ``override_quantization_method`` names the method: GPTQ and AWQ checkpoints run with Marlin on GPUs
that have it), the refusal is a warning that says so. A quantization read from a copy's name rather than
its config.json is not judged.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lmi_config.knowledge.engine_checks import EngineCheck, covered_checks
from lmi_config.knowledge.quant_configs import quant_configs
from lmi_config.shape.conditions import KNOWN_NONE, Resolve, holds
from lmi_config.shape.problems import Problem

if TYPE_CHECKING:
    from lmi_config.configfile.canonical import CanonicalConfig
    from lmi_config.shape.dimensions import Target

RULE = "quantization-config-refused"
_FUNCTIONS = ("__init__", "from_config")
_QUANTIZE_KEYS = ("option.quantize", "option.quantization")


# --- which names a check reads, and whether the facts bind them all ------------------------------


def _leaves(condition: str) -> list[ast.expr] | None:
    """The names and attribute chains a condition reads (outermost chains only), None where it reads a
    call other than ``len()`` or is not Python."""
    try:
        tree = ast.parse(condition, mode="eval").body
    except SyntaxError:
        return None
    leaves: list[ast.expr] = []

    def visit(node: ast.AST) -> bool:
        if isinstance(node, ast.Attribute | ast.Name):
            leaves.append(node)
            return True
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1):
                return False
            return visit(node.args[0])
        if isinstance(node, ast.Subscript | ast.Lambda | ast.comprehension | ast.Starred):
            return False
        return all(visit(child) for child in ast.iter_child_nodes(node))

    return leaves if visit(tree) else None


def _spec_of(leaf: ast.expr, function: str, entry: Mapping[str, Any], facts: Mapping[str, Any]) -> object:
    """What the facts say a leaf is: a spec (keys / value / expr) dict, else None."""
    text = ast.unparse(leaf)
    constants = facts.get("constants", {})
    if isinstance(leaf, ast.Name):
        local = entry["arguments"] if function == "__init__" else entry["from_config"]
        if function == "__init__" and text in entry.get("reassigned", ()):
            return None
        if text in local:
            return local[text]
        return {"value": constants[text]} if text in constants else None
    owner, _, field = text.partition(".")
    if "." in field:
        return None
    if owner == "self" and function == "__init__" and field in entry["fields"]:
        stored = entry["fields"][field]
        return entry["arguments"].get(stored) if isinstance(stored, str) else stored
    if owner in ("self", "cls") and field in entry.get("class_constants", {}):
        return {"value": entry["class_constants"][field]}
    return None


def _class_of(
    check: Mapping[str, Any], release_facts: Mapping[str, Any], path: str
) -> tuple[str, str] | None:
    """(class, function) of a check made in a configuration class's ``__init__`` / ``from_config``."""
    owner, _, function = str(check["function"]).rpartition(".")
    entry = release_facts.get("classes", {}).get(owner)
    if function not in _FUNCTIONS or entry is None or entry["file"] != path:
        return None
    return owner, function


def bindable(check: Mapping[str, Any], release_facts: Mapping[str, Any], path: str | None = None) -> bool:
    """Whether every name of the check's conditions is bound by the release's facts (the judge can then
    decide it on any quantization_config): the check is made in a configuration class's ``__init__`` or
    ``from_config``, has at least one condition, and reads only arguments, fields and constants."""
    found = _class_of(check, release_facts, path or check["file"])
    if found is None or not check["conditions"]:
        return False
    owner, function = found
    entry = release_facts["classes"][owner]
    for condition in check["conditions"]:
        leaves = _leaves(condition)
        if leaves is None:
            return False
        if any(_spec_of(leaf, function, entry, release_facts) is None for leaf in leaves):
            return False
    return True


# --- evaluating a spec on quantization_config ----------------------------------------------------


def _read(spec: object, declared: Mapping[str, Any]) -> object:
    """A spec's value on the quantization_config as written (KNOWN_NONE for a known None), None if unknown."""
    if not isinstance(spec, Mapping):
        return None
    if "value" in spec:
        return _known(spec["value"])
    if "keys" in spec:
        for key in spec["keys"]:
            if key in declared and not (declared[key] is None and spec.get("null_is_default")):
                return _known(declared[key])
        return _known(spec["default"]) if "default" in spec else None
    if "expr" in spec:
        names = spec.get("names", {})

        def inner(node: ast.expr) -> object:
            return _read(names.get(ast.unparse(node)), declared)

        from lmi_config.shape.conditions import value

        try:
            tree = ast.parse(str(spec["expr"]), mode="eval").body
        except SyntaxError:
            return None
        return value(tree, inner)
    return None


def _known(found: object) -> object:
    if found is None:
        return KNOWN_NONE
    if isinstance(found, bool | int | float | str):
        return found
    if isinstance(found, list) and all(isinstance(item, bool | int | float | str) for item in found):
        return found
    if isinstance(found, Mapping):
        return dict(found)  # a nested section: only its keys and length are read (shape/conditions.py)
    return None


def _resolver(
    function: str, entry: Mapping[str, Any], facts: Mapping[str, Any], declared: Mapping[str, Any]
) -> Resolve:
    def resolve(node: ast.expr) -> object:
        return _read(_spec_of(node, function, entry, facts), declared)

    return resolve


# --- the judgement --------------------------------------------------------------------------------


def judge_quant_config_checks(config: CanonicalConfig, target: Target) -> list[Problem]:
    """The first check of the configuration class vLLM builds for the checkpoint that its
    quantization_config fails."""
    from lmi_config.shape.dimensions import checkpoint_method

    arch, vllm = target.arch, target.release.vllm
    if target.backend != "vllm" or not vllm or arch is None or arch.quantization_from is not None:
        return []
    declared = arch.declared_quantization
    facts = quant_configs(vllm)
    if not isinstance(declared, Mapping) or facts is None:
        return []
    asked_key = next((key for key in _QUANTIZE_KEYS if config.get(key)), None)
    asked = str(config.get(asked_key)).strip().lower() if asked_key else None
    method = asked or checkpoint_method(arch, vllm)
    if not method:
        return []
    classes = {name for name, entry in facts["classes"].items() if entry.get("method") == method}
    if not classes:
        return []
    takers = sorted(
        str(taker["method"])
        for name, taker in facts.get("takes_over", {}).items()
        if name not in classes and taker.get("method") and method in taker.get("names", ())
    )
    for check in covered_checks(RULE, vllm):
        owner, _, function = check.function.rpartition(".")
        if owner not in classes:
            continue
        entry = facts["classes"][owner]
        if entry["file"] != check.path:
            continue
        resolve = _resolver(function, entry, facts, declared)
        if all(holds(condition, resolve) for condition in check.conditions):
            return [_problem(target, check, declared, method, asked_key, [] if asked else takers, resolve)]
    return []


def _problem(
    target: Target,
    check: EngineCheck,
    declared: Mapping[str, Any],
    method: str,
    asked_key: str | None,
    takers: list[str],
    resolve: Resolve,
) -> Problem:
    values = _placeholder_values(check, resolve)
    said = (
        f"'{check.message_with(values)}'"
        if check.message.strip()
        else f"an assertion ({' and '.join(check.conditions)})"
    )
    arch = target.arch
    model = arch.model_id if arch is not None else "the model"
    written = ", ".join(f"{key}={declared[key]!r}" for key in _keys_read(check, target) if key in declared)
    which = f"{asked_key}={method}" if asked_key else f"its quant_method {method}"
    vllm = target.release.vllm
    where = f"{check.function} ({check.cited})"
    if takers:
        message = (
            f"{model}'s quantization_config ({written or 'as written'}) fails vLLM {vllm}'s {method} configuration: "
            f"where vLLM builds it for {which}, the start-up stops with {said} ({where}); vLLM {vllm} may serve "
            f"such a checkpoint with {', '.join(dict.fromkeys(takers))} instead, which this does not judge — check "
            "which method the start-up log names, and re-quantize the checkpoint with values that method accepts"
        )
        return Problem(RULE, "warning", message, "option.model_id")
    message = (
        f"{model}'s quantization_config ({written or 'as written'}) fails vLLM {vllm}'s {method} configuration "
        f"({which}): the start-up stops with {said} ({where}) — re-quantize or re-save the checkpoint with values "
        f"vLLM's {method} accepts, or serve another checkpoint of the model"
    )
    return Problem(RULE, "error", message, asked_key or "option.model_id")


def _placeholder_values(check: EngineCheck, resolve: Resolve) -> dict[str, object]:
    """Each placeholder of the message that what is known evaluates (``{self.weight_bits}``,
    ``{len(weight_block_size)}``), keyed as EngineCheck.fill looks it up."""
    import re

    from lmi_config.shape.conditions import value

    values: dict[str, object] = {}
    for placeholder in re.findall(r"\{([^{}]+)\}", check.message):
        expression = placeholder.split("!")[0].split(":")[0].strip()
        try:
            tree = ast.parse(expression, mode="eval").body
        except SyntaxError:
            continue
        found = value(tree, resolve)
        if found is not None:
            values[re.split(r"[.\s]", expression)[-1]] = found
    return values


def _keys_read(check: EngineCheck, target: Target) -> list[str]:
    """The quantization_config keys the check's names are read from, in order."""
    facts = quant_configs(target.release.vllm) or {}
    owner, _, function = check.function.rpartition(".")
    entry = facts.get("classes", {}).get(owner)
    if entry is None:
        return []
    keys: list[str] = []

    def collect(spec: object) -> None:
        if isinstance(spec, Mapping):
            keys.extend(str(key) for key in spec.get("keys", ()))
            for inner in spec.get("names", {}).values():
                collect(inner)

    for condition in check.conditions:
        for leaf in _leaves(condition) or []:
            collect(_spec_of(leaf, function, entry, facts))
    return list(dict.fromkeys(keys))
