"""What a validator does: the errors it raises and the warnings it logs, with their conditions."""

from __future__ import annotations

import ast
import json
from typing import Any

from djl_options.evaluation import UNKNOWN, Scope, message_text, plain

VALIDATOR_DECORATORS = ("field_validator", "model_validator", "validator", "root_validator")
WARNING_CALLS = ("warning", "warn")


def decorator_info(function: ast.FunctionDef) -> tuple[str, list[str], str | None] | None:
    """(decorator name, fields, mode) of a pydantic validator, else None."""
    for decorator in function.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        target = call.func if call else decorator
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name not in VALIDATOR_DECORATORS:
            continue
        fields = [str(arg.value) for arg in (call.args if call else []) if isinstance(arg, ast.Constant)]
        mode: str | None = None
        for keyword in call.keywords if call else []:
            if keyword.arg == "mode" and isinstance(keyword.value, ast.Constant):
                mode = str(keyword.value.value)
            elif keyword.arg == "pre" and getattr(keyword.value, "value", False) is True:
                mode = "before"
        if name == "root_validator" and mode is None:
            mode = "after"
        return name, fields, mode
    return None


class OutcomeFinder:
    """Walks one function body and collects what it raises and what it warns about."""

    def __init__(
        self, scope: Scope, methods: dict[str, ast.FunctionDef], subjects: dict[str, str], known: set[str]
    ) -> None:
        self.scope = scope
        self.methods = methods
        self.subjects = subjects  # local name -> the field it holds
        self.known = known  # field names of the class
        self.lowered: set[str] = set()
        self.local_functions: dict[str, ast.FunctionDef] = {}
        self.active: tuple[str, ...] = ()
        self.outcomes: list[dict[str, Any]] = []

    def walk(
        self,
        statements: list[ast.stmt],
        conditions: list[str],
        preceding: list[ast.stmt],
        via: str | None = None,
    ) -> None:
        """Record outcomes in ``statements`` under ``conditions``; ``preceding`` ran before them."""
        for index, statement in enumerate(statements):
            before = [*preceding, *statements[:index]]
            self._note_lowering(statement)
            if isinstance(statement, ast.If):
                test = ast.unparse(statement.test)
                self.walk(statement.body, [*conditions, test], before, via)
                self.walk(statement.orelse, [*conditions, f"not ({test})"], before, via)
            elif isinstance(statement, ast.Try):
                self.walk(statement.body, conditions, before, via)
                for handler in statement.handlers:
                    caught = ast.unparse(handler.type) if handler.type else "Exception"
                    self._walk_handler(statement, handler, [*conditions, f"except {caught}"], before, via)
                self.walk(statement.orelse + statement.finalbody, conditions, before, via)
            elif isinstance(statement, ast.For | ast.While | ast.With):
                label = ast.unparse(statement).split("\n", 1)[0].rstrip(":")
                self.walk(statement.body, [*conditions, label], before, via)
            elif isinstance(statement, ast.Raise | ast.Assert):
                self._error(statement, before, conditions, via)
            elif isinstance(statement, ast.FunctionDef):
                self.local_functions[statement.name] = statement
            else:
                self._calls(statement, statements, before, conditions, via)

    def _walk_handler(
        self,
        tried: ast.Try,
        handler: ast.ExceptHandler,
        conditions: list[str],
        preceding: list[ast.stmt],
        via: str | None,
    ) -> None:
        start = len(self.outcomes)
        self.walk(handler.body, conditions, preceding, via)
        enum_values = self._enum_called(tried.body)
        for outcome in self.outcomes[start:]:
            if enum_values is not None and outcome["allowed_values"] is None:
                outcome["allowed_values"], outcome["subject"] = enum_values

    def _enum_called(self, statements: list[ast.stmt]) -> tuple[list, str | None] | None:
        # `try: Enum(value) except ValueError: raise ...`: the Enum's values pass
        for node in ast.walk(ast.Module(body=statements, type_ignores=[])):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in self.scope.enums
            ):
                subject = self._subject(node.args[0] if node.args else None)
                return sorted((plain(m) for m in self.scope.enums[node.func.id].values()), key=str), subject
        return None

    def _note_lowering(self, statement: ast.stmt) -> None:
        # `x = x.lower()` before a check: the check is case-insensitive
        if not isinstance(statement, ast.Assign) or not isinstance(statement.targets[0], ast.Name):
            return
        if ast.unparse(statement.value).endswith(".lower()"):
            self.lowered.add(statement.targets[0].id)

    def _error(
        self,
        statement: ast.Raise | ast.Assert,
        preceding: list[ast.stmt],
        conditions: list[str],
        via: str | None,
    ) -> None:
        if isinstance(statement, ast.Assert):
            outcome = {
                "kind": "error",
                "exception": "AssertionError",
                "message": message_text(statement.msg, self.scope),
            }
            conditions = [*conditions, f"not ({ast.unparse(statement.test)})"]
        elif isinstance(statement.exc, ast.Call):
            call = statement.exc
            outcome = {
                "kind": "error",
                "exception": ast.unparse(call.func),
                "message": message_text(call.args[0] if call.args else None, self.scope),
            }
        else:
            return  # a re-raise or `raise value`: no message of its own
        self._add(outcome, preceding, conditions, via)

    def _calls(
        self,
        statement: ast.stmt,
        block: list[ast.stmt],
        preceding: list[ast.stmt],
        conditions: list[str],
        via: str | None,
    ) -> None:
        for node in ast.walk(statement):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Attribute) and node.func.attr in WARNING_CALLS:
                outcome = {
                    "kind": "warning",
                    "message": message_text(node.args[0] if node.args else None, self.scope),
                }
                coerced = _returned_constant(block, self.scope)
                if coerced is not UNKNOWN:
                    outcome["kind"], outcome["coerces_to"] = "coercion", coerced
                self._add(outcome, preceding, conditions, via)
            else:
                self._helper(node, conditions)

    def _helper(self, call: ast.Call, conditions: list[str]) -> None:
        name = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")
        function = self.local_functions.get(name) or self.methods.get(name) or self.scope.functions.get(name)
        if function is None or name in self.active:
            return
        parameters = [arg.arg for arg in function.args.args if arg.arg not in ("self", "cls")]
        inner = OutcomeFinder(self.scope, self.methods, {}, self.known)
        inner.local_functions, inner.active = self.local_functions, (*self.active, name)
        for parameter, argument in zip(parameters, call.args, strict=False):
            subject = self._subject(argument)
            if subject:
                inner.subjects[parameter] = subject
                if ast.unparse(argument).endswith(".lower()"):
                    inner.lowered.add(parameter)
        inner.walk(function.body, conditions, [], via=name)
        self.outcomes.extend(inner.outcomes)

    def _subject(self, node: ast.AST | None) -> str | None:
        """The field an argument holds (``self.dtype.lower()`` -> dtype, ``properties['dtype']`` -> dtype)."""
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        if isinstance(node, ast.Name):
            return self.subjects.get(node.id)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            return node.attr if node.attr in self.known else None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            return str(node.slice.value) if node.slice.value in self.known else None
        return None

    def _add(
        self, outcome: dict[str, Any], preceding: list[ast.stmt], conditions: list[str], via: str | None
    ) -> None:
        allowed, name = _allowed_values(conditions, preceding, self.scope)
        subject = self.subjects.get(name or "") or (name if name in self.known else None)
        outcome.update(when=conditions, via=via, allowed_values=allowed, subject=subject)
        outcome.setdefault("coerces_to", None)
        outcome.setdefault("exception", None)
        outcome["case_insensitive"] = bool(name and name in self.lowered)
        self.outcomes.append(outcome)


def _returned_constant(block: list[ast.stmt], scope: Scope) -> Any:
    for statement in block:
        if isinstance(statement, ast.Return):
            return plain(scope.evaluate(statement.value))
    return UNKNOWN


def _allowed_values(
    conditions: list[str], preceding: list[ast.stmt], scope: Scope
) -> tuple[list | None, str | None]:
    """Values that pass, where the code lists them, and the local name checked.

    Two shapes: the innermost condition is ``name not in LIST`` (a module constant or dict), and
    ``if name == constant: return ...`` statements that ran before (a chain ending in a raise).
    """
    values: list = []
    name = None
    try:
        test = ast.parse(conditions[-1], mode="eval").body if conditions else None
    except SyntaxError:  # "except ValueError", "for item in ...": not a test
        test = None
    if isinstance(test, ast.Compare) and isinstance(test.left, ast.Name):
        listed = scope.evaluate(test.comparators[0])
        if isinstance(test.ops[0], ast.NotIn) and isinstance(listed, list | dict):
            values, name = list(listed), test.left.id
        elif isinstance(test.ops[0], ast.NotEq) and listed is not UNKNOWN:  # `if x != "Python": raise`
            values, name = [plain(listed)], test.left.id
    for statement in preceding:
        check = statement.test if isinstance(statement, ast.If) else None
        if not (isinstance(check, ast.Compare) and isinstance(check.left, ast.Name)):
            continue
        returns = isinstance(statement, ast.If) and isinstance(statement.body[-1], ast.Return)
        if returns and isinstance(check.ops[0], ast.Eq | ast.Is) and name in (None, check.left.id):
            value = plain(scope.evaluate(check.comparators[0]))
            if value is not UNKNOWN:
                values.append(value)
                name = check.left.id
    known = [value for value in values if value is not None]
    return (sorted(set(known), key=str), name) if known else (None, None)


def read_fields(function: ast.FunctionDef, known: set[str]) -> list[str]:
    """Field names the function mentions (``self.x``, ``values['x']``, ``info.data.get('x')``)."""
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            names.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)
    return sorted(names & known)


def class_methods(node: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    """The functions defined in a class body, by name."""
    return {item.name: item for item in node.body if isinstance(item, ast.FunctionDef)}


def validators_of(node: ast.ClassDef, scope: Scope, known_fields: set[str]) -> dict[str, dict[str, Any]]:
    """Validators of one class, and the other methods that raise, with their outcomes."""
    methods = class_methods(node)
    called = {
        call.func.attr
        for method in methods.values()
        if decorator_info(method)
        for call in ast.walk(method)
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
    }
    result = {}
    for name, method in methods.items():
        info = decorator_info(method)
        if info is None and (name in called or not any(isinstance(n, ast.Raise) for n in ast.walk(method))):
            continue
        decorator, fields, mode = info or ("method", [], None)
        parameters = [arg.arg for arg in method.args.args]
        subjects = {parameters[1]: fields[0]} if fields and len(parameters) > 1 else {}
        finder = OutcomeFinder(scope, methods, subjects, known_fields)
        finder.walk(method.body, [], [])
        outcomes = unique(finder.outcomes)
        if info is None and not outcomes:
            continue
        result[name] = {
            "decorator": decorator,
            "fields": fields,
            "mode": mode,
            "reads": read_fields(method, known_fields),
            "outcomes": outcomes,
            "line": method.lineno,
        }
    return result


def unique(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Items in first-seen order without repeats (a helper called twice with the same field)."""
    seen: dict[str, dict[str, Any]] = {}
    for item in items:
        seen.setdefault(json.dumps(item, sort_keys=True), item)
    return list(seen.values())
