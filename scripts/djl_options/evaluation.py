"""Static evaluation: the values of Enum members, module constants and messages, where the source fixes them."""

from __future__ import annotations

import ast
from typing import Any


class EnumMember:
    """A member of an Enum class found in the source."""

    def __init__(self, enum: str, name: str, value: Any) -> None:
        self.enum, self.name, self.value = enum, name, value


class DictKeys(list):
    """``d.keys()`` of a constant dict, printed as Python prints it in a message."""

    def __str__(self) -> str:
        return f"dict_keys({list(self)!r})"


UNKNOWN = object()


class Scope:
    """Enums and constants of one branch's properties modules, for evaluating expressions."""

    def __init__(self) -> None:
        self.enums: dict[str, dict[str, EnumMember]] = {}
        self.constants: dict[str, Any] = {}
        self.functions: dict[str, ast.FunctionDef] = {}

    def evaluate(self, node: ast.AST | None, names: dict[str, Any] | None = None) -> Any:
        """The value of ``node`` when the source alone fixes it, else ``UNKNOWN``."""
        names = names or {}
        if node is None:
            return UNKNOWN
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in names:
                return names[node.id]
            return self.constants.get(node.id, UNKNOWN)
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items = [self.evaluate(item, names) for item in node.elts]
            return UNKNOWN if UNKNOWN in items else [plain(item) for item in items]
        if isinstance(node, ast.Dict):
            keys = [self.evaluate(key, names) for key in node.keys]
            values = [self.evaluate(value, names) for value in node.values]
            return UNKNOWN if UNKNOWN in keys + values else dict(zip(keys, values, strict=True))
        if isinstance(node, ast.Attribute):
            return self._attribute(node, names)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "keys":
            mapping = self.evaluate(node.func.value, names)
            return DictKeys(mapping) if isinstance(mapping, dict) else UNKNOWN
        if isinstance(node, ast.ListComp) and len(node.generators) == 1:
            return self._comprehension(node, names)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return self._compare(node, names)
        return UNKNOWN

    def _attribute(self, node: ast.Attribute, names: dict[str, Any]) -> Any:
        if isinstance(node.value, ast.Name) and node.value.id in self.enums and node.value.id not in names:
            return self.enums[node.value.id].get(node.attr, UNKNOWN)
        owner = self.evaluate(node.value, names)
        if isinstance(owner, EnumMember) and node.attr in ("value", "name"):
            return getattr(owner, node.attr)
        return UNKNOWN

    def _comprehension(self, node: ast.ListComp, names: dict[str, Any]) -> Any:
        generator = node.generators[0]
        if not isinstance(generator.target, ast.Name):
            return UNKNOWN
        if isinstance(generator.iter, ast.Name) and generator.iter.id in self.enums:
            items: Any = list(self.enums[generator.iter.id].values())
        else:
            items = self.evaluate(generator.iter, names)
        if not isinstance(items, list):
            return UNKNOWN
        result = []
        for item in items:
            scope = {**names, generator.target.id: item}
            keep = [self.evaluate(test, scope) for test in generator.ifs]
            if UNKNOWN in keep:
                return UNKNOWN
            if all(keep):
                value = self.evaluate(node.elt, scope)
                if value is UNKNOWN:
                    return UNKNOWN
                result.append(plain(value))
        return result

    def _compare(self, node: ast.Compare, names: dict[str, Any]) -> Any:
        left = plain(self.evaluate(node.left, names))
        right = plain(self.evaluate(node.comparators[0], names))
        if UNKNOWN in (left, right):
            return UNKNOWN
        operator = node.ops[0]
        if isinstance(operator, ast.Eq | ast.NotEq):
            return (left == right) == isinstance(operator, ast.Eq)
        if isinstance(operator, ast.In | ast.NotIn) and isinstance(right, list | dict):
            return (left in right) == isinstance(operator, ast.In)
        return UNKNOWN


def plain(value: Any) -> Any:
    """Enum members as their values (a str Enum compares and prints as its value here)."""
    return value.value if isinstance(value, EnumMember) else value


def load_scope(modules: dict[str, ast.Module]) -> Scope:
    """Enums, constants and module-level functions of all properties modules of one branch."""
    scope = Scope()
    for tree in modules.values():
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any("Enum" in ast.unparse(base) for base in node.bases):
                members = {}
                for statement in node.body:
                    if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name):
                        name = statement.targets[0].id
                        members[name] = EnumMember(node.name, name, scope.evaluate(statement.value))
                scope.enums[node.name] = members
            elif isinstance(node, ast.FunctionDef):
                scope.functions[node.name] = node
    for tree in modules.values():
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                value = scope.evaluate(node.value)
                if value is not UNKNOWN:
                    scope.constants[node.targets[0].id] = value
    return scope


def message_text(node: ast.AST | None, scope: Scope) -> str | None:
    """A message as the container prints it; parts only known at run time stay ``{expression}``."""
    if node is None:
        return None
    if isinstance(node, ast.Constant):
        return str(node.value)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                parts.append(str(part.value))
                continue
            assert isinstance(part, ast.FormattedValue)
            value = scope.evaluate(part.value)
            known = value is not UNKNOWN and not isinstance(value, EnumMember) and part.format_spec is None
            parts.append(str(value) if known else "{" + ast.unparse(part.value) + "}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = message_text(node.left, scope), message_text(node.right, scope)
        return None if left is None or right is None else left + right
    return "{" + ast.unparse(node) + "}"
