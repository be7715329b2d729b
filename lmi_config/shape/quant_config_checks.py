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

The linear methods of those classes check each layer's weights as they are created (``create_weights``):
Marlin needs each rank's slice to fill its thread tiles ("Weight output_size_per_partition = 1728 is not
divisible by min_thread_n = 64"), AWQ's packing and AQLM's groups the same; these are evaluated on the
shapes of the attention and MLP projections at the configuration's TP (``_layers``: QKV, output, gate-up
of a gated MLP, down), and on ``params_dtype`` where the file writes option.dtype. A checkpoint that keeps
some modules unquantized, an MoE model's experts and latent attention are not judged there.

Which class vLLM builds: the one named by ``option.quantize`` where the file names one, else the one
for config.json's ``quant_method``. Where another class of the release may take such a checkpoint over
(its ``override_quantization_method`` names the method: GPTQ and AWQ checkpoints run with Marlin on GPUs
that have it), the refusal is a warning that says so. A quantization read from a copy's name rather than
its config.json is not judged.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from lmi_config.knowledge.capabilities import canonical_dtype
from lmi_config.knowledge.engine_checks import EngineCheck, covered_checks
from lmi_config.knowledge.quant_configs import quant_configs
from lmi_config.shape.conditions import ARITHMETIC, KNOWN_NONE, Resolve, holds, value
from lmi_config.shape.problems import TP_KEY, Problem

if TYPE_CHECKING:
    from lmi_config.configfile.canonical import CanonicalConfig
    from lmi_config.shape.dimensions import Target

RULE = "quantization-config-refused"
_CONFIG_FUNCTIONS = ("__init__", "from_config")
_QUANTIZE_KEYS = ("option.quantize", "option.quantization")
# the create_weights arguments _layers gives each linear layer (with params_dtype where option.dtype is written)
_LAYER_NAMES = frozenset(
    {"input_size_per_partition", "output_partition_sizes", "input_size", "output_size", "params_dtype"}
)
_DEPTH = 8  # expressions that name expressions: a bound on the chain (the code's own are 2-3 deep)


@dataclass(frozen=True)
class _Scope:
    """Where a name is read: a configuration class's from_config or __init__, or a linear method's
    create_weights (its ``self.quant_config`` is the configuration class's __init__ scope)."""

    facts: Mapping[str, Any]
    owner: str  # the configuration class, or the linear method
    function: str
    declared: Mapping[str, Any] | None = None  # quantization_config (None when only bindability is asked)
    layer: Mapping[str, object] | None = None  # create_weights' shape arguments and params_dtype

    @property
    def entry(self) -> Mapping[str, Any]:
        table = "linear_methods" if self.function == "create_weights" else "classes"
        return self.facts[table][self.owner]

    def config_scope(self) -> _Scope:
        return replace(self, owner=self.entry["config"], function="__init__")


def _leaves(condition: str) -> list[ast.expr] | None:
    """The names and attribute chains a condition reads (outermost chains only), None where it reads a
    call other than ``len()`` / ``sum()`` or is not Python."""
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
            if not (
                isinstance(node.func, ast.Name) and node.func.id in ("len", "sum") and len(node.args) == 1
            ):
                return False
            return visit(node.args[0])
        if isinstance(node, ast.Subscript | ast.Lambda | ast.comprehension | ast.Starred | ast.IfExp):
            return False
        if isinstance(node, ast.BinOp) and not isinstance(node.op, ARITHMETIC):
            return False  # true division, shifts, bit operations: the evaluator does not read them
        return all(visit(child) for child in ast.iter_child_nodes(node))

    return leaves if visit(tree) else None


def _spec_of(leaf: ast.expr, scope: _Scope) -> tuple[Mapping[str, Any], _Scope] | None:
    """What the facts say a leaf is (a spec: keys / value / expr / layer) and the scope its expression is
    read in, else None."""
    text, entry = ast.unparse(leaf), scope.entry
    constants = scope.facts.get("constants", {})
    if text.startswith("torch.") and canonical_dtype(text.removeprefix("torch.")):
        return {"value": canonical_dtype(text.removeprefix("torch."))}, scope  # torch.half -> float16
    if isinstance(leaf, ast.Name):
        if text in entry.get("reassigned", ()):
            return None  # assigned again in the function: which value a check sees depends on the path
        if scope.function == "create_weights":
            if text in _LAYER_NAMES and text in entry["parameters"]:
                return {"layer": text}, scope
            local = entry.get("locals", {})
        else:
            local = entry["arguments"] if scope.function == "__init__" else entry["from_config"]
        if text in local:
            return local[text], scope
        return ({"value": constants[text]}, scope) if text in constants else None
    parts = text.split(".")
    if scope.function == "create_weights":
        if parts[:2] == ["self", "quant_config"] and len(parts) == 3:
            return _field(parts[2], scope.config_scope())
        return None
    if len(parts) != 2:
        return None
    owner, field = parts
    if owner == "self" and scope.function == "__init__" and field in entry["fields"]:
        return _field(field, scope)
    if owner in ("self", "cls") and field in entry.get("class_constants", {}):
        return {"value": entry["class_constants"][field]}, scope
    return None


def _field(field: str, scope: _Scope) -> tuple[Mapping[str, Any], _Scope] | None:
    """A configuration class's ``self.<field>`` in its __init__ scope."""
    entry = scope.entry
    if field in entry.get("class_constants", {}) and field not in entry["fields"]:
        return {"value": entry["class_constants"][field]}, scope
    stored = entry["fields"].get(field)
    if isinstance(stored, str):
        if stored in entry.get("reassigned", ()):
            return None
        found = entry["arguments"].get(stored)
        return (found, scope) if found is not None else None
    return (stored, scope) if isinstance(stored, Mapping) else None


def _binds(spec: Mapping[str, Any], scope: _Scope, depth: int = 0) -> bool:
    """Whether a spec's value can be read: keys and literals always, an expression where its names bind."""
    if depth > _DEPTH:
        return False
    if "expr" not in spec or "names" in spec:
        return True
    leaves = _leaves(str(spec["expr"]))
    if leaves is None:
        return False
    for leaf in leaves:
        found = _spec_of(leaf, scope)
        if found is None or not _binds(found[0], found[1], depth + 1):
            return False
    return True


def _scope_of(check: Mapping[str, Any], facts: Mapping[str, Any], path: str) -> _Scope | None:
    """The scope of a check made in a configuration class's ``__init__`` / ``from_config`` or a linear
    method's ``create_weights``, where the facts list the class in the check's file."""
    owner, _, function = str(check["function"]).rpartition(".")
    if function in _CONFIG_FUNCTIONS:
        entry = facts.get("classes", {}).get(owner)
    elif function == "create_weights":
        entry = facts.get("linear_methods", {}).get(owner)
        if entry is not None and entry["config"] not in facts.get("classes", {}):
            entry = None
    else:
        entry = None
    if entry is None or entry["file"] != path:
        return None
    return _Scope(facts, owner, function)


def bindable(check: Mapping[str, Any], release_facts: Mapping[str, Any], path: str | None = None) -> bool:
    """Whether every name of the check's conditions is bound by the release's facts (the judge can then
    decide it on any quantization_config and layer): the check is made in a configuration class's
    ``__init__`` or ``from_config`` or in a linear method's ``create_weights``, has at least one condition,
    and reads only arguments, fields, locals, constants and the layer's shape and dtype."""
    scope = _scope_of(check, release_facts, path or check["file"])
    if scope is None or not check["conditions"]:
        return False
    for condition in check["conditions"]:
        leaves = _leaves(condition)
        if leaves is None:
            return False
        for leaf in leaves:
            found = _spec_of(leaf, scope)
            if found is None or not _binds(found[0], found[1]):
                return False
    return True


# --- evaluating a spec on quantization_config and a layer ----------------------------------------


def _read(spec: Mapping[str, Any], scope: _Scope, depth: int = 0) -> object:
    """A spec's value (KNOWN_NONE for a known None), None where it is unknown."""
    declared = scope.declared or {}
    if depth > _DEPTH:
        return None
    if "value" in spec:
        return _known(spec["value"])
    if "layer" in spec:
        return (scope.layer or {}).get(str(spec["layer"]))
    if "keys" in spec:
        for key in spec["keys"]:
            if key in declared and not (declared[key] is None and spec.get("null_is_default")):
                return _known(declared[key])
        return _known(spec["default"]) if "default" in spec else None
    if "expr" in spec:
        try:
            tree = ast.parse(str(spec["expr"]), mode="eval").body
        except SyntaxError:
            return None
        names = spec.get("names")
        if names is not None:  # from_config's expression of its own locals

            def inner(node: ast.expr) -> object:
                found = names.get(ast.unparse(node))
                return _read(found, scope, depth + 1) if isinstance(found, Mapping) else None

            return value(tree, inner)
        return value(tree, _resolver(scope, depth + 1))
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


def _resolver(scope: _Scope, depth: int = 0) -> Resolve:
    def resolve(node: ast.expr) -> object:
        found = _spec_of(node, scope)
        return None if found is None else _read(found[0], found[1], depth)

    return resolve


# --- the layers whose weights a linear method creates ---------------------------------------------


def _layers(config: CanonicalConfig, target: Target, tp: int | None) -> list[tuple[str, dict[str, object]]]:
    """The attention and MLP projections of one decoder layer as vLLM's linear layers give them to
    create_weights at TP ``tp``: (name, arguments). Empty where the layout is not the standard one (latent
    attention), and the MLP left out for an MoE model (its experts are not linear layers) and for a model
    type whose MLP is not known to be gated (the up projection's partitions differ)."""
    from lmi_config.knowledge.models import architecture_family

    arch = target.arch
    if arch is None or not tp or tp < 1 or arch.kv_lora_rank:
        return []
    heads, kv, head_dim, hidden = (
        arch.num_attention_heads,
        arch.num_key_value_heads,
        arch.head_dim,
        arch.hidden_size,
    )
    dtype = canonical_dtype(config.get("option.dtype"))  # params_dtype only where the file states it
    common: dict[str, object] = {"params_dtype": dtype} if dtype else {}
    layers: list[tuple[str, dict[str, object]]] = []
    if heads % tp == 0 and (kv % tp == 0 or tp % kv == 0):
        kv_here = max(1, kv // tp)
        layers.append(
            (
                "the QKV projection",
                {
                    "input_size": hidden,
                    "input_size_per_partition": hidden,
                    "output_partition_sizes": [
                        heads // tp * head_dim,
                        kv_here * head_dim,
                        kv_here * head_dim,
                    ],
                    # as QKVParallelLinear states it: the per-rank heads (KV replicated past their count) x TP
                    "output_size": (heads // tp + 2 * kv_here) * tp * head_dim,
                },
            )
        )
        layers.append(
            (
                "the attention output projection",
                {
                    "input_size": heads * head_dim,
                    "input_size_per_partition": heads * head_dim // tp,
                    "output_partition_sizes": [hidden],
                    "output_size": hidden,
                },
            )
        )
    inter = arch.intermediate_size
    if not arch.num_experts and inter and inter % tp == 0:
        if arch.model_type in architecture_family("gated_mlp"):
            layers.append(
                (
                    "the MLP's gate-up projection",
                    {
                        "input_size": hidden,
                        "input_size_per_partition": hidden,
                        "output_partition_sizes": [inter // tp, inter // tp],
                        "output_size": 2 * inter,
                    },
                )
            )
        layers.append(
            (
                "the MLP's down projection",
                {
                    "input_size": inter,
                    "input_size_per_partition": inter // tp,
                    "output_partition_sizes": [hidden],
                    "output_size": hidden,
                },
            )
        )
    return [(name, {**arguments, **common}) for name, arguments in layers]


# --- the judgement --------------------------------------------------------------------------------


def built_method(config: CanonicalConfig, target: Target) -> tuple[str | None, str | None]:
    """(the option naming it, or None for the checkpoint's own; the method) vLLM builds a configuration
    class for: the one ``option.quantize`` names where the file names one, else config.json's."""
    from lmi_config.shape.dimensions import checkpoint_method

    asked_key = next((key for key in _QUANTIZE_KEYS if config.get(key)), None)
    asked = str(config.get(asked_key)).strip().lower() if asked_key else ""
    if asked_key and asked:
        return asked_key, asked
    return None, checkpoint_method(target.arch, target.release.vllm)


def judge_quant_config_checks(
    config: CanonicalConfig, target: Target, tp: int | None = None
) -> list[Problem]:
    """The first check of the configuration class vLLM builds for the checkpoint, or of its linear method on
    a layer at TP ``tp``, that the checkpoint fails."""
    from lmi_config.shape.dimensions import _kept_unquantized

    arch, vllm = target.arch, target.release.vllm
    if target.backend != "vllm" or not vllm or arch is None or arch.quantization_from is not None:
        return []
    declared = arch.declared_quantization
    facts = quant_configs(vllm)
    if not isinstance(declared, Mapping) or facts is None:
        return []
    asked_key, method = built_method(config, target)
    asked = method if asked_key else None
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
    # a checkpoint that keeps modules unquantized (or quantizes some differently) builds other methods there
    per_module = bool(_kept_unquantized(arch)) or bool(declared.get("dynamic"))
    layers = [] if per_module else _layers(config, target, tp)
    for check in covered_checks(RULE, vllm):
        scope = _scope_of(_as_entry(check), facts, check.path)
        if scope is None:
            continue
        owning = scope.entry["config"] if scope.function == "create_weights" else scope.owner
        if owning not in classes:
            continue
        shapes = layers if scope.function == "create_weights" else [("", {})]
        for layer_name, layer in shapes:
            here = replace(scope, declared=declared, layer=layer)
            resolve = _resolver(here)
            if all(holds(condition, resolve) for condition in check.conditions):
                return [
                    _problem(target, check, method, asked_key, [] if asked else takers, here, layer_name, tp)
                ]
    return []


def _as_entry(check: EngineCheck) -> dict[str, Any]:
    return {"function": check.function, "file": check.path, "conditions": list(check.conditions)}


def _problem(
    target: Target,
    check: EngineCheck,
    method: str,
    asked_key: str | None,
    takers: list[str],
    scope: _Scope,
    layer_name: str,
    tp: int | None,
) -> Problem:
    resolve = _resolver(scope)
    values = _placeholder_values(check, resolve)
    said = (
        f"'{check.message_with(values)}'"
        if check.message.strip()
        else f"an assertion ({' and '.join(check.conditions)})"
    )
    arch = target.arch
    model = arch.model_id if arch is not None else "the model"
    declared = scope.declared or {}
    written = ", ".join(f"{key}={declared[key]!r}" for key in _keys_read(check, scope) if key in declared)
    which = f"{asked_key}={method}" if asked_key else f"its quant_method {method}"
    vllm = target.release.vllm
    where = f"{check.function} ({check.cited})"
    what = f"{model}'s quantization_config" + (f" ({written})" if written else "")
    if layer_name:
        what = f"{model} ({method}" + (f", {written}" if written else "") + f") at TP {tp}, on {layer_name},"
    if takers:
        message = (
            f"{what} fails vLLM {vllm}'s {method} method: where vLLM builds it for {which}, the start-up stops "
            f"with {said} ({where}); vLLM {vllm} may serve such a checkpoint with {', '.join(dict.fromkeys(takers))} "
            "instead, which this does not judge — check which method the start-up log names, and use a checkpoint "
            "(or a TP degree) that method accepts"
        )
        return Problem(RULE, "warning", message, "option.model_id")
    fix = (
        "use a TP degree whose slices the method accepts, or a checkpoint quantized for it"
        if layer_name
        else f"re-quantize or re-save the checkpoint with values vLLM's {method} accepts, or serve another "
        "checkpoint of the model"
    )
    message = f"{what} fails vLLM {vllm}'s {method} method ({which}): the start-up stops with {said} ({where}) — {fix}"
    if layer_name and "params_dtype" in " ".join(check.conditions):
        return Problem(RULE, "error", message, "option.dtype")
    key = TP_KEY if layer_name else asked_key or "option.model_id"
    return Problem(RULE, "error", message, key)


def _placeholder_values(check: EngineCheck, resolve: Resolve) -> dict[str, object]:
    """Each placeholder of the message that what is known evaluates (``{self.weight_bits}``,
    ``{len(weight_block_size)}``, ``{sum(output_partition_sizes)}``), keyed as EngineCheck.fill looks it up."""
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


def _keys_read(check: EngineCheck, scope: _Scope) -> list[str]:
    """The quantization_config keys the check's names are read from, in order."""
    keys: list[str] = []

    def collect(spec: Mapping[str, Any], where: _Scope, depth: int = 0) -> None:
        if depth > _DEPTH:
            return
        keys.extend(str(key) for key in spec.get("keys", ()))
        for inner in (spec.get("names") or {}).values():
            collect(inner, where, depth + 1)
        if "expr" in spec and "names" not in spec:
            for leaf in _leaves(str(spec["expr"])) or []:
                found = _spec_of(leaf, where)
                if found is not None:
                    collect(found[0], found[1], depth + 1)

    for condition in check.conditions:
        for leaf in _leaves(condition) or []:
            found = _spec_of(leaf, scope)
            if found is not None:
                collect(*found)
    return list(dict.fromkeys(keys))
