"""Read, from one vLLM release's sources, what each quantization method's configuration class takes from a
checkpoint's ``quantization_config``: the keys its ``from_config`` reads into each constructor argument (with
the default where one is given), the ``self.<field>`` its ``__init__`` stores each argument in, and the
constant lists and values of the quantization package its checks compare them with.

This is what lets lmi-config evaluate the checks that ``from_config`` and ``__init__`` make (a GPTQ
checkpoint's ``bits`` outside 2/3/4/8, an FP8 checkpoint's ``activation_scheme``) on a checkpoint's
``quantization_config`` as written, offline. Only the plain forms are read, each a fact of the code:

- in ``from_config``: ``x = cls.get_from_keys(config, [keys])``, ``x = cls.get_from_keys_or(config, [keys],
  default)``, ``x = config.get("key", default)``, ``x = config["key"]``, a literal, or an expression of names
  read so (kept as its source text, evaluated by the judge); a name assigned twice is not read, since which
  value a check sees depends on the path taken;
- ``return cls(...)``: positional arguments matched to ``__init__``'s parameters in order, keywords by name;
- in ``__init__``: ``self.<field> = <parameter>`` or a literal, each field and parameter assigned once;
- class bodies' and modules' ``NAME = <literal>`` (numbers, strings, booleans, None, and lists, tuples and
  sets of them); a name the package defines twice with different values is left out.

Stdlib only; the judge never imports vLLM.
"""

from __future__ import annotations

import ast
from typing import Any

PACKAGE = "vllm/model_executor/layers/quantization/"
_KEYS_CALLS = {"get_from_keys": False, "get_from_keys_or": True}
_MISSING = object()


def _literal(node: ast.expr | None) -> Any:
    """The value of a literal node (numbers, strings, booleans, None, and lists/tuples/sets of them), else
    _MISSING."""
    if node is None:
        return _MISSING
    try:
        found = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _MISSING
    if isinstance(found, set | frozenset | tuple):
        found = sorted(found, key=repr) if isinstance(found, set | frozenset) else list(found)
    if isinstance(found, list):
        if all(isinstance(item, int | float | str | bool) or item is None for item in found):
            return found
        return _MISSING
    if isinstance(found, int | float | str | bool) or found is None:
        return found
    return _MISSING


def _helpers(function: ast.FunctionDef) -> dict[str, ast.FunctionDef]:
    """from_config's own helpers that read keys: a nested ``def h(config, keys, default)`` whose body calls
    ``cls.get_from_keys(config, keys)`` (bitsandbytes' ``get_safe_value``: the default where the keys are
    absent or null)."""
    found: dict[str, ast.FunctionDef] = {}
    for statement in function.body:
        if not isinstance(statement, ast.FunctionDef):
            continue
        parameters = [argument.arg for argument in statement.args.args]
        if len(parameters) < 3:
            continue
        for sub in ast.walk(statement):
            if (
                isinstance(sub, ast.Call)
                and isinstance(sub.func, ast.Attribute)
                and sub.func.attr in _KEYS_CALLS
                and [ast.unparse(argument) for argument in sub.args[:2]] == parameters[:2]
            ):
                found[statement.name] = statement
    return found


def _helper_spec(call: ast.Call, helper: ast.FunctionDef) -> dict[str, Any] | None:
    parameters = [argument.arg for argument in helper.args.args]
    if len(call.args) < 2:
        return None
    keys = _literal(call.args[1])
    if not isinstance(keys, list) or not keys or not all(isinstance(key, str) for key in keys):
        return None
    default_node: ast.expr | None = call.args[2] if len(call.args) > 2 else None
    for keyword in call.keywords:
        if keyword.arg == parameters[2]:
            default_node = keyword.value
    if default_node is None:
        defaults = helper.args.defaults
        default_node = defaults[-1] if len(defaults) and len(parameters) == 3 else None
    default = _literal(default_node)
    if default is _MISSING:
        return None
    return {"keys": keys, "default": default, "null_is_default": True}


def _keys_spec(call: ast.Call, helpers: dict[str, ast.FunctionDef] | None = None) -> dict[str, Any] | None:
    """``cls.get_from_keys(config, [..])`` / ``get_from_keys_or(config, [..], default)`` / ``config.get(k, d)``,
    or a call of one of from_config's key-reading helpers."""
    func = call.func
    if isinstance(func, ast.Name) and helpers and func.id in helpers:
        return _helper_spec(call, helpers[func.id])
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr in _KEYS_CALLS and len(call.args) >= 2:
        keys = _literal(call.args[1])
        if not isinstance(keys, list) or not keys or not all(isinstance(key, str) for key in keys):
            return None
        spec: dict[str, Any] = {"keys": keys}
        if _KEYS_CALLS[func.attr]:
            default_node = call.args[2] if len(call.args) > 2 else None
            for keyword in call.keywords:
                if keyword.arg == "default":
                    default_node = keyword.value
            default = _literal(default_node)
            if default is _MISSING:
                return None
            spec["default"] = default
        return spec
    if (
        func.attr == "get"
        and isinstance(func.value, ast.Name)
        and func.value.id == "config"
        and call.args
        and isinstance(call.args[0], ast.Constant)
        and isinstance(call.args[0].value, str)
    ):
        default = _literal(call.args[1]) if len(call.args) > 1 else None
        if default is _MISSING:
            return None
        return {"keys": [call.args[0].value], "default": default}
    return None


def _value_spec(
    node: ast.expr, known: dict[str, dict[str, Any]], helpers: dict[str, ast.FunctionDef] | None = None
) -> dict[str, Any] | None:
    """What a right-hand side of from_config reads: keys, a literal, or an expression of known names."""
    if isinstance(node, ast.Call):
        return _keys_spec(node, helpers)
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == "config"
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        return {"keys": [node.slice.value]}
    literal = _literal(node)
    if literal is not _MISSING:
        return {"value": literal}
    if isinstance(node, ast.Name):
        return known.get(node.id)
    names = {sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name)}
    calls = any(isinstance(sub, ast.Call) for sub in ast.walk(node))
    if (
        names
        and not calls
        and names <= set(known)
        and isinstance(node, ast.Compare | ast.BoolOp | ast.UnaryOp)
    ):
        return {"expr": ast.unparse(node), "names": {name: known[name] for name in sorted(names)}}
    return None


def _assignment_counts(body: list[ast.stmt]) -> dict[str, int]:
    """How many times each plain name or ``self.<field>`` is assigned anywhere in the body."""
    counts: dict[str, int] = {}
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For | ast.comprehension | ast.NamedExpr):
            targets = [node.target]
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name):
                    counts[sub.id] = counts.get(sub.id, 0) + 1
                elif (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.value, ast.Name)
                    and sub.value.id == "self"
                ):
                    key = f"self.{sub.attr}"
                    counts[key] = counts.get(key, 0) + 1
    return counts


def _from_config(function: ast.FunctionDef) -> tuple[dict[str, dict[str, Any]], ast.Call | None]:
    """The locals from_config reads from the config, and its ``return cls(...)``."""
    counts = _assignment_counts(
        [statement for statement in function.body if not isinstance(statement, ast.FunctionDef)]
    )
    helpers = _helpers(function)
    known: dict[str, dict[str, Any]] = {}
    returned: ast.Call | None = None
    for statement in function.body:  # top level only: a branch's assignment depends on the path
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            if isinstance(target, ast.Name) and counts.get(target.id) == 1:
                spec = _value_spec(statement.value, known, helpers)
                if spec is not None:
                    known[target.id] = spec
        elif isinstance(statement, ast.Return) and isinstance(statement.value, ast.Call):
            call = statement.value
            if isinstance(call.func, ast.Name) and call.func.id == "cls":
                returned = call
    return known, returned


def _init_parameters(function: ast.FunctionDef) -> list[str]:
    arguments = function.args
    names = [argument.arg for argument in arguments.posonlyargs + arguments.args]
    return names[1:] + [argument.arg for argument in arguments.kwonlyargs]


def _init_fields(function: ast.FunctionDef) -> dict[str, str | dict[str, Any]]:
    """``self.<field>`` -> the parameter it stores (or {"value": literal}), each assigned once."""
    counts = _assignment_counts(function.body)
    parameters = set(_init_parameters(function))
    fields: dict[str, str | dict[str, Any]] = {}
    for statement in function.body:
        if not isinstance(statement, ast.Assign | ast.AnnAssign):
            continue
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if len(targets) != 1 or statement.value is None:
            continue
        target = targets[0]
        if not (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        ):
            continue
        if counts.get(f"self.{target.attr}") != 1:
            continue
        value = statement.value
        if isinstance(value, ast.Name) and value.id in parameters and counts.get(value.id, 0) == 0:
            fields[target.attr] = value.id
            continue
        literal = _literal(value)
        if literal is not _MISSING:
            fields[target.attr] = {"value": literal}
        elif _plain_expression(value) and not (isinstance(value, ast.Name) and value.id in parameters):
            # (a parameter assigned again in __init__ is unknown: which value is stored depends on the path)
            fields[target.attr] = {"expr": ast.unparse(value)}  # read where it stands (its names, __init__'s)
    return fields


_PLAIN_CALLS = frozenset({"len", "sum"})


def _plain_expression(node: ast.expr) -> bool:
    """An expression the judge's evaluator reads: names, attributes, literals, arithmetic, comparisons and
    boolean operators, ``len()`` and ``sum()``; no other call, index or comprehension."""
    if not isinstance(
        node, ast.BinOp | ast.Compare | ast.BoolOp | ast.UnaryOp | ast.Attribute | ast.Name | ast.Call
    ):
        return False
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            if not (isinstance(sub.func, ast.Name) and sub.func.id in _PLAIN_CALLS):
                return False
        elif isinstance(sub, ast.Subscript | ast.Lambda | ast.comprehension | ast.Starred | ast.IfExp):
            return False
    return True


_LAYER_PARAMETER = "input_size_per_partition"  # a linear method's create_weights, not an MoE method's


def _linear_method(node: ast.ClassDef, configs: set[str], path: str) -> dict[str, Any] | None:
    """A linear method class: its configuration class (the annotation of its __init__'s parameter), and its
    create_weights' parameters, the locals it assigns once at the top level (as expressions) and the
    parameters it assigns again."""
    functions = {item.name: item for item in node.body if isinstance(item, ast.FunctionDef)}
    init, create = functions.get("__init__"), functions.get("create_weights")
    if init is None or create is None:
        return None
    parameters = _init_parameters(create)
    if _LAYER_PARAMETER not in parameters:
        return None
    config = None
    for argument in init.args.args[1:]:
        annotation = argument.annotation
        name = (
            annotation.id
            if isinstance(annotation, ast.Name)
            else annotation.value
            if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str)
            else None
        )
        if name in configs:
            config = name
    stores = [
        statement
        for statement in init.body
        if isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and ast.unparse(statement.targets[0]) == "self.quant_config"
        and isinstance(statement.value, ast.Name)
    ]
    if config is None or len(stores) != 1:
        return None
    counts = _assignment_counts(create.body)
    locals_: dict[str, dict[str, str]] = {}
    for statement in create.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            if (
                isinstance(target, ast.Name)
                and counts.get(target.id) == 1
                and _plain_expression(statement.value)
            ):
                locals_[target.id] = {"expr": ast.unparse(statement.value)}
    return {
        "file": path,
        "line": node.lineno,
        "config": config,
        "parameters": parameters,
        "locals": dict(sorted(locals_.items())),
        "reassigned": sorted(name for name in parameters if counts.get(name)),
    }


def _method_name(body: list[ast.stmt]) -> str | None:
    for node in body:
        if isinstance(node, ast.FunctionDef) and node.name == "get_name":
            returns = [sub for sub in ast.walk(node) if isinstance(sub, ast.Return)]
            if len(returns) == 1 and isinstance(returns[0].value, ast.Constant):
                value = returns[0].value.value
                return value if isinstance(value, str) else None
    return None


def _constants(body: list[ast.stmt]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for statement in body:
        target: ast.expr | None = None
        value: ast.expr | None = None
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign):
            target, value = statement.target, statement.value
        if isinstance(target, ast.Name) and target.id.isupper():
            literal = _literal(value)
            if literal is not _MISSING:
                found[target.id] = literal
    return found


def read_quant_configs(sources: dict[str, str]) -> dict[str, Any]:
    """``{"classes": {Class: {...}}, "linear_methods": {Class: {...}}, "constants": {NAME: value},
    "takes_over": {Class: {...}}}`` of one release's quantization package (``linear_methods``: the classes
    whose create_weights builds a linear layer's weights for a configuration class; ``takes_over``: the
    classes with an ``override_quantization_method``, their method and the names it compares with)."""
    classes: dict[str, Any] = {}
    constants: dict[str, Any] = {}
    clashing: set[str] = set()
    takers: dict[str, Any] = {}
    nodes: list[tuple[str, ast.ClassDef]] = []  # every class of the package, read once
    for path in sorted(sources):
        if not path.startswith(PACKAGE) or not path.endswith(".py"):
            continue
        try:
            tree = ast.parse(sources[path])
        except SyntaxError:
            continue
        for name, value in _constants(tree.body).items():
            if name in constants and constants[name] != value:
                clashing.add(name)
            constants.setdefault(name, value)
        nodes += [(path, node) for node in tree.body if isinstance(node, ast.ClassDef)]
    by_name = {node.name: node for _, node in nodes}
    for path, node in nodes:
        functions = {item.name: item for item in node.body if isinstance(item, ast.FunctionDef)}
        override = functions.get("override_quantization_method")
        if override is not None:
            takers[node.name] = {"method": _method_name(node.body), "names": _method_literals(override)}
        init, from_config = functions.get("__init__"), functions.get("from_config")
        if init is None or from_config is None:
            continue
        classes[node.name] = {
            "file": path,
            **_class_entry(node, init, from_config),
            "attention_method": _attention_method(_inherited(node, "get_quant_method", by_name)),
        }
    # a linear method names its configuration class, so the classes come first
    methods: dict[str, Any] = {}
    for path, node in nodes:
        found = _linear_method(node, set(classes), path)
        if found is not None:
            methods[node.name] = found
    return {
        "classes": dict(sorted(classes.items())),
        "linear_methods": dict(sorted(methods.items())),
        "constants": {name: value for name, value in sorted(constants.items()) if name not in clashing},
        "takes_over": dict(sorted(takers.items())),
    }


def _inherited(node: ast.ClassDef, name: str, by_name: dict[str, ast.ClassDef]) -> ast.FunctionDef | None:
    """The method ``name`` of a class, its own or the first of its bases' (depth first, left to right, the
    bases the package defines) that has one."""
    seen: set[str] = set()
    pending = [node]
    while pending:
        current = pending.pop(0)
        if current.name in seen:
            continue
        seen.add(current.name)
        for item in current.body:
            if isinstance(item, ast.FunctionDef) and item.name == name:
                return item
        bases = [base.id for base in current.bases if isinstance(base, ast.Name) and base.id in by_name]
        pending = [by_name[base] for base in bases] + pending
    return None


def _attention_method(function: ast.FunctionDef | None) -> str | None:
    """The class a configuration's ``get_quant_method`` returns for an attention layer (its KV-cache
    method: ``isinstance(layer, Attention)`` then ``return Fp8KVCacheMethod(self)``), if it returns one."""
    if function is None:
        return None
    for node in ast.walk(function):
        if not isinstance(node, ast.If) or not _tests_attention(node.test):
            continue
        for statement in node.body:
            returned = statement.value if isinstance(statement, ast.Return) else None
            if isinstance(returned, ast.Call) and isinstance(returned.func, ast.Name):
                return returned.func.id
    return None


def _tests_attention(test: ast.expr) -> bool:
    """``isinstance(layer, Attention)`` (or a tuple with it), alone or in an ``and``."""
    for node in ast.walk(test):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            kinds = node.args[1:] if len(node.args) == 2 else []
            names = [sub.id for kind in kinds for sub in ast.walk(kind) if isinstance(sub, ast.Name)]
            if "Attention" in names:
                return True
    return False


def _method_literals(override: ast.FunctionDef) -> list[str]:
    """The strings an ``override_quantization_method`` compares with: the methods whose checkpoints (or the
    user's choice) it may serve with its own class."""
    return sorted(
        {
            sub.value
            for sub in ast.walk(override)
            if isinstance(sub, ast.Constant)
            and isinstance(sub.value, str)
            and sub.value.replace("-", "_").isidentifier()
        }
    )


def _class_entry(node: ast.ClassDef, init: ast.FunctionDef, from_config: ast.FunctionDef) -> dict[str, Any]:
    known, returned = _from_config(from_config)
    parameters = _init_parameters(init)
    arguments: dict[str, dict[str, Any]] = {}
    if returned is not None:
        for position, argument in enumerate(returned.args):
            if isinstance(argument, ast.Starred) or position >= len(parameters):
                break
            spec = _value_spec(argument, known)
            if spec is not None:
                arguments[parameters[position]] = spec
        for keyword in returned.keywords:
            if keyword.arg is None or keyword.arg not in parameters:
                continue
            spec = _value_spec(keyword.value, known)
            if spec is not None:
                arguments[keyword.arg] = spec
    # a parameter from_config leaves out takes __init__'s default (where no * / ** call may pass it)
    defaults = init.args.defaults
    positional = [argument.arg for argument in init.args.posonlyargs + init.args.args][1:]
    if returned is not None and not any(isinstance(arg, ast.Starred) for arg in returned.args):
        passed = {keyword.arg for keyword in returned.keywords} | set(positional[: len(returned.args)])
        if None not in passed:
            for name, default in zip(positional[len(positional) - len(defaults) :], defaults, strict=True):
                literal = _literal(default)
                if name not in arguments and name not in passed and literal is not _MISSING:
                    arguments[name] = {"value": literal}
    counts = _assignment_counts(init.body)
    return {
        "method": _method_name(node.body),
        "from_config": dict(sorted(known.items())),
        "arguments": dict(sorted(arguments.items())),
        "fields": dict(sorted(_init_fields(init).items())),
        # parameters __init__ assigns again: a check past the assignment may see either value
        "reassigned": sorted(name for name in parameters if counts.get(name)),
        "class_constants": _constants(node.body),
        "line": node.lineno,
    }
