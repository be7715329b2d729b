"""Values a properties class parses itself: ``ast.literal_eval`` / ``json.loads`` of the raw string.

A ``before`` field validator that calls ``ast.literal_eval(val)`` refuses JSON spellings (``true``,
``null``) with ``ValueError: malformed node or string``; one that calls ``json.loads`` refuses Python
spellings (``True``, ``None``, single quotes). What the validator then does with the parsed value
(``if not isinstance(x, dict): raise``) is found by running its ``if`` / ``isinstance`` tree on one
value of each type the parser can return: the types that reach no ``raise`` are accepted. A tree
with any other test gives no type list (lint then judges the parse only).
"""

from __future__ import annotations

import ast
from typing import Any

PARSERS = {"ast.literal_eval": "literal", "literal_eval": "literal", "json.loads": "json"}
# one value of each type ast.literal_eval / json.loads can return, by the name lint compares
SAMPLES: dict[str, Any] = {
    "dict": {},
    "list": [],
    "tuple": (),
    "set": set(),
    "int": 1,
    "float": 1.0,
    "bool": True,
    "str": "s",
    "NoneType": None,
}
JSON_TYPES = ("dict", "list", "int", "float", "bool", "str", "NoneType")
TYPE_NAMES = {"dict": dict, "Dict": dict, "list": list, "List": list, "tuple": tuple, "Tuple": tuple}
TYPE_NAMES |= {"set": set, "int": int, "float": float, "bool": bool, "str": str}


class _Unknown(Exception):
    """A test the walk cannot decide."""


def validator_parsers(tree: ast.Module) -> dict[tuple[str, str], dict[str, Any]]:
    """``(class, field)`` -> ``{kind, accepted, message, line}`` for each ``before`` validator that parses."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        for method in node.body:
            if not isinstance(method, ast.FunctionDef):
                continue
            fields = _before_fields(method)
            parameters = [arg.arg for arg in method.args.args]
            if not fields or len(parameters) < 2:
                continue
            parsed = _parse_call(method, parameters[1])
            if parsed is None:
                continue
            kind, target, line = parsed
            accepted, message = _accepted_types(method, parameters[1], target, kind)
            for field in fields:
                found[(node.name, field)] = {
                    "kind": kind,
                    "accepted": accepted,
                    "message": message,
                    "line": line,
                }
    return found


def _before_fields(method: ast.FunctionDef) -> list[str]:
    for decorator in method.decorator_list:
        if not isinstance(decorator, ast.Call):
            continue
        name = ast.unparse(decorator.func).split(".")[-1]
        keywords = {k.arg: k.value for k in decorator.keywords}
        before = (
            name == "field_validator"
            and isinstance(keywords.get("mode"), ast.Constant)
            and keywords["mode"].value == "before"  # type: ignore[union-attr]
        ) or (name == "validator" and getattr(keywords.get("pre"), "value", False) is True)
        if before:
            return [str(arg.value) for arg in decorator.args if isinstance(arg, ast.Constant)]
    return []


def _parse_call(method: ast.FunctionDef, parameter: str) -> tuple[str, str, int] | None:
    """(kind, the name the parsed value is bound to, line) of ``x = parser(parameter)``."""
    for node in ast.walk(method):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        call = node.value
        kind = PARSERS.get(ast.unparse(call.func))
        argument = call.args[0] if call.args else None
        if kind and isinstance(argument, ast.Name) and argument.id == parameter:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                return kind, target.id, node.lineno
    return None


def _accepted_types(
    method: ast.FunctionDef, parameter: str, target: str, kind: str
) -> tuple[list[str] | None, str | None]:
    """The parsed types that reach no raise, and the message of the raise the others reach."""
    accepted: list[str] = []
    message: str | None = None
    for name in JSON_TYPES if kind == "json" else SAMPLES:
        try:
            raised = _walk(method.body, {parameter: "raw"}, target, SAMPLES[name])
        except _Unknown:
            return None, None
        if raised is None:
            accepted.append(name)
        elif message is None:
            message = raised
    return (None, None) if not message else (sorted(accepted), message)


def _walk(statements: list[ast.stmt], bound: dict[str, Any], target: str, sample: Any) -> str | None:
    """The message of the raise the body reaches with ``target`` bound to ``sample`` (None: none)."""
    for statement in statements:
        if isinstance(statement, ast.Return):
            return None
        if isinstance(statement, ast.Raise):
            return _message(statement)
        if isinstance(statement, ast.Assign):
            for name in (t.id for t in statement.targets if isinstance(t, ast.Name)):
                value = statement.value
                parsed = isinstance(value, ast.Call) and ast.unparse(value.func) in PARSERS
                bound[name] = sample if parsed and name == target else "changed"
        elif isinstance(statement, ast.If):
            branch = statement.body if _test(statement.test, bound) else statement.orelse
            outcome = _walk(branch, bound, target, sample)
            if outcome is not None or (branch and isinstance(branch[-1], ast.Return)):
                return outcome
        elif not isinstance(statement, ast.Expr | ast.Pass):
            raise _Unknown(ast.unparse(statement))
    return None


def _test(test: ast.expr, bound: dict[str, Any]) -> bool:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return not _test(test.operand, bound)
    if isinstance(test, ast.Call) and ast.unparse(test.func) == "isinstance" and len(test.args) == 2:
        subject, types = test.args
        if not isinstance(subject, ast.Name) or subject.id not in bound or bound[subject.id] == "changed":
            raise _Unknown(ast.unparse(test))
        names = [ast.unparse(item) for item in (types.elts if isinstance(types, ast.Tuple) else [types])]
        if any(name not in TYPE_NAMES for name in names):
            raise _Unknown(ast.unparse(test))
        value = bound[subject.id]
        if value == "raw":
            return "str" in names  # the raw value is the string from serving.properties
        return isinstance(value, tuple(TYPE_NAMES[name] for name in names))
    raise _Unknown(ast.unparse(test))


def _message(statement: ast.Raise) -> str | None:
    call = statement.exc
    if not (isinstance(call, ast.Call) and call.args):
        return None
    first = call.args[0]
    if isinstance(first, ast.Constant):
        return str(first.value)
    if isinstance(first, ast.JoinedStr):
        return "".join(
            str(part.value) if isinstance(part, ast.Constant) else "{" + ast.unparse(part.value) + "}"  # type: ignore[attr-defined]
            for part in first.values
        )
    return None


def rolling_batch_classes(
    handler: ast.Module, read_module: Any, class_names: set[str]
) -> dict[str, tuple[list[str], int]]:
    """``rolling_batch`` value -> (the properties classes the handler's branch for it builds, line).

    A handler that tests ``self.config.rolling_batch == "vllm"`` and builds ``VLLMRollingBatch``
    there builds the classes that class's module builds (``VllmRbProperties(**properties)``);
    ``read_module(name)`` gives a module's tree, or None when it is not in the tree.
    """
    imported = {
        alias.asname or alias.name: node.module
        for node in ast.walk(handler)
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }
    found: dict[str, tuple[list[str], int]] = {}
    for node in ast.walk(handler):
        test = node.test if isinstance(node, ast.If) else None
        if not (
            isinstance(test, ast.Compare)
            and ast.unparse(test.left).endswith("rolling_batch")
            and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant)
            and isinstance(test.comparators[0].value, str)
        ):
            continue
        built: set[str] = set()
        for statement in node.body:  # type: ignore[union-attr]
            for call in (item for item in ast.walk(statement) if isinstance(item, ast.Call)):
                name = call.func.id if isinstance(call.func, ast.Name) else None
                if name in class_names:
                    built.add(name)
                elif name in imported:
                    tree = read_module(imported[name])
                    built.update(_classes_built(tree, class_names) if tree is not None else ())
        if built:
            found[str(test.comparators[0].value)] = (sorted(built), node.lineno)  # type: ignore[union-attr]
    return found


def _classes_built(tree: ast.Module, class_names: set[str]) -> set[str]:
    return {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in class_names
    }
