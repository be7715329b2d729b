"""Evaluating an engine check's condition, as the catalogue records it (Python source), on what is known.

A condition is read with Kleene's three-valued logic: a name whose value is not known is None, and an
``and`` / ``or`` is decided without it only where the known parts decide it. Only comparisons of names
and literals, membership in a list of literals, ``is None`` and the boolean operators are read; any
other expression (a call, an index, arithmetic) is unknown. So a check is made only where what is known
settles it, and never on a guess.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

Resolve = Callable[[ast.expr], object]  # the value of a name or attribute node; None where it is unknown


def holds(condition: str, resolve: Resolve) -> bool:
    """Whether the condition is true of what ``resolve`` knows (False where it is false or unknown)."""
    try:
        tree = ast.parse(condition, mode="eval").body
    except SyntaxError:
        return False
    return value(tree, resolve) is True


def value(node: ast.expr, resolve: Resolve) -> object:
    """The node's value, None where it is unknown."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float | bool | str):
        return node.value
    if isinstance(node, ast.Attribute | ast.Name):
        return resolve(node)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = value(node.operand, resolve)
        return None if inner is None else not inner
    if isinstance(node, ast.BoolOp):
        parts = [value(part, resolve) for part in node.values]
        decisive = isinstance(node.op, ast.Or)  # True decides an or, False an and
        if any(part is not None and bool(part) is decisive for part in parts):
            return decisive
        return None if any(part is None for part in parts) else not decisive
    if not isinstance(node, ast.Compare) or len(node.ops) != 1:
        return None
    operator, right = node.ops[0], node.comparators[0]
    if isinstance(operator, ast.In | ast.NotIn):
        member = value(node.left, resolve)
        if member is None or not isinstance(right, ast.List | ast.Tuple):
            return None
        choices = [item.value for item in right.elts if isinstance(item, ast.Constant)]
        if len(choices) != len(right.elts):
            return None  # a list built at run time
        return (member in choices) is isinstance(operator, ast.In)
    if isinstance(operator, ast.Is | ast.IsNot):
        left = value(node.left, resolve)
        if not (isinstance(right, ast.Constant) and right.value is None) or left is None:
            return None  # None is "not known" here, so only a known value is known not to be None
        return isinstance(operator, ast.IsNot)
    left, other = value(node.left, resolve), value(right, resolve)
    if isinstance(operator, ast.Eq | ast.NotEq) and isinstance(left, str) and isinstance(other, str):
        return (left == other) is isinstance(operator, ast.Eq)
    if not _number(left) or not _number(other):
        return None
    compare = {ast.Lt: float.__lt__, ast.LtE: float.__le__, ast.Gt: float.__gt__, ast.GtE: float.__ge__,
               ast.Eq: float.__eq__, ast.NotEq: float.__ne__}.get(type(operator))  # fmt: skip
    return None if compare is None else compare(float(left), float(other))  # type: ignore[arg-type]


def _number(found: object) -> bool:
    return isinstance(found, int | float) and not isinstance(found, bool)
