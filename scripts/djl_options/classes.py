"""The pydantic classes of properties_manager: fields, config and the keys read from ``__pydantic_extra__``."""

from __future__ import annotations

import ast
import re
from typing import Any

from djl_options.evaluation import UNKNOWN, Scope, plain

ENVIRONMENT_READ = re.compile(r"(environ\.get|getenv|get_env_or_default)$")


def annotation_values(annotation: ast.expr, scope: Scope) -> list | None:
    """Allowed values of an Enum or Literal annotation (inside Optional / Union too)."""
    values: list = []
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name) and node.id in scope.enums:
            values.extend(plain(member) for member in scope.enums[node.id].values())
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("Literal"):
            literal = scope.evaluate(node.slice)
            values.extend(literal if isinstance(literal, list) else [literal])
    return values or None


def field_entry(statement: ast.AnnAssign, scope: Scope) -> dict[str, Any]:
    """One annotated field of a properties class."""
    entry: dict[str, Any] = {
        "annotation": ast.unparse(statement.annotation),
        "allowed": annotation_values(statement.annotation, scope),
    }
    value = statement.value
    keywords: dict[str, ast.expr] = {}
    if isinstance(value, ast.Call) and ast.unparse(value.func).endswith("Field"):
        keywords = {keyword.arg: keyword.value for keyword in value.keywords if keyword.arg}
        value = value.args[0] if value.args else keywords.get("default")
        entry["alias"] = scope.evaluate(keywords["alias"]) if "alias" in keywords else None
    entry["required"] = value is None and "default_factory" not in keywords
    default = plain(scope.evaluate(value))
    entry["default"] = None if default is UNKNOWN else default
    expression = value if default is UNKNOWN and value is not None else keywords.get("default_factory")
    entry["default_expression"] = ast.unparse(expression) if expression is not None else None
    entry["default_env"] = environment_name(expression)
    entry.setdefault("alias", None)
    return entry


def environment_name(expression: ast.expr | None) -> str | None:
    """The environment variable a default is read from (``os.environ.get("X")``, ``get_env_or_default("X")``)."""
    calls = [node for node in ast.walk(expression) if isinstance(node, ast.Call)] if expression else []
    for call in calls:
        first = call.args[0] if call.args else None
        if isinstance(first, ast.Constant) and ENVIRONMENT_READ.search(ast.unparse(call.func)):
            return str(first.value)
    return None


def class_config(node: ast.ClassDef) -> dict[str, Any]:
    """``extra`` and ``populate_by_name`` as set in the class body (v2 ConfigDict or v1 Config)."""
    config: dict[str, Any] = {}
    for statement in node.body:
        if isinstance(statement, ast.Assign) and ast.unparse(statement.targets[0]) == "model_config":
            if isinstance(statement.value, ast.Call):
                for keyword in statement.value.keywords:
                    if keyword.arg in ("extra", "populate_by_name"):
                        config[keyword.arg] = ast.unparse(keyword.value).strip("'\"").split(".")[-1]
        elif isinstance(statement, ast.ClassDef) and statement.name == "Config":
            for inner in statement.body:
                if isinstance(inner, ast.Assign) and ast.unparse(inner.targets[0]) in (
                    "extra",
                    "allow_population_by_field_name",
                ):
                    key = "extra" if ast.unparse(inner.targets[0]) == "extra" else "populate_by_name"
                    config[key] = ast.unparse(inner.value).strip("'\"").split(".")[-1]
    return config


def extra_keys(node: ast.ClassDef) -> dict[str, dict[str, Any]]:
    """Keys the class's methods read from ``self.__pydantic_extra__`` and how they convert them."""
    parents = {child: parent for parent in ast.walk(node) for child in ast.iter_child_nodes(parent)}
    found: dict[str, dict[str, Any]] = {}
    for method in (item for item in node.body if isinstance(item, ast.FunctionDef)):
        for child in ast.walk(method):
            key, default, read = _extra_read(child)
            if key is None or read is None:
                continue
            line = getattr(child, "lineno", node.lineno)
            entry = found.setdefault(key, {"methods": [], "default": None, "conversion": None, "line": line})
            if method.name not in entry["methods"]:
                entry["methods"].append(method.name)
            entry["default"] = entry["default"] if default is None else default
            entry["conversion"] = entry["conversion"] or _conversion(read, parents)
    return found


def _extra_read(node: ast.AST) -> tuple[str | None, Any, ast.AST | None]:
    """(key, default, the expression that yields the value) of one read of ``__pydantic_extra__``."""
    if isinstance(node, ast.Subscript) and _is_extra(node.value) and isinstance(node.slice, ast.Constant):
        return str(node.slice.value), None, node
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        arguments = [
            argument.value if isinstance(argument, ast.Constant) else UNKNOWN for argument in node.args
        ]
        if _is_extra(node.func.value) and arguments and arguments[0] is not UNKNOWN:
            default = arguments[1] if len(arguments) > 1 and arguments[1] is not UNKNOWN else None
            return str(arguments[0]), default, node
    if (
        isinstance(node, ast.Compare)
        and isinstance(node.ops[0], ast.In)
        and isinstance(node.left, ast.Constant)
    ):
        # `"key" in self.__pydantic_extra__`: a read, but not of the value
        return (str(node.left.value), None, None) if _is_extra(node.comparators[0]) else (None, None, None)
    return None, None, None


def _is_extra(node: ast.AST) -> bool:
    return ast.unparse(node).endswith("__pydantic_extra__")


def _conversion(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> str | None:
    parent = parents.get(node)
    if isinstance(parent, ast.Call) and node in parent.args:
        name = ast.unparse(parent.func)
        return {"int": "int", "float": "float", "json.loads": "json", "bool": "bool"}.get(name)
    if isinstance(parent, ast.Attribute) and parent.attr == "lower":
        compare = parents.get(parents.get(parent, parent), parent)
        if isinstance(compare, ast.Compare) and "'true'" in ast.unparse(compare):
            return "bool"
    return None


def properties_classes(trees: dict[str, ast.Module]) -> dict[str, tuple[str, ast.ClassDef]]:
    """Pydantic classes (BaseModel and their subclasses) by name, with their file."""
    classes = {
        node.name: (path, node)
        for path, tree in trees.items()
        for node in tree.body
        if isinstance(node, ast.ClassDef)
    }
    models: dict[str, tuple[str, ast.ClassDef]] = {}
    changed = True
    while changed:
        changed = False
        for name, (path, node) in classes.items():
            bases = {ast.unparse(base).split(".")[-1] for base in node.bases}
            if name not in models and ("BaseModel" in bases or bases & set(models)):
                models[name] = (path, node)
                changed = True
    return models


def effective_config(name: str, models: dict[str, tuple[str, ast.ClassDef]]) -> dict[str, Any]:
    """The class's config with what it inherits from its bases (its own settings win)."""
    node = models[name][1]
    config: dict[str, Any] = {}
    for base in reversed(node.bases):
        base_name = ast.unparse(base).split(".")[-1]
        if base_name in models:
            config.update(effective_config(base_name, models))
    config.update(class_config(node))
    return config


def field_names(class_name: str, models: dict[str, tuple[str, ast.ClassDef]]) -> set[str]:
    """Names of the class's fields, inherited ones included."""
    node = models[class_name][1]
    names = {
        s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
    }
    for base in node.bases:
        base_name = ast.unparse(base).split(".")[-1]
        if base_name in models:
            names |= field_names(base_name, models)
    return names
