"""Evaluating an engine check's condition, as the catalogue records it (Python source), on what is known.

A condition is read with Kleene's three-valued logic: a name whose value is not known is None, and an
``and`` / ``or`` is decided without it only where the known parts decide it. A name known to be None is
:data:`KNOWN_NONE`. Only comparisons of names and literals, membership in a list (a literal one, or one
a name is known to hold), a string or a mapping's keys, ``is None``, ``len()`` of a known list, string or mapping, ``sum()`` of integers, integer
arithmetic and the boolean operators are read; any other expression (another call, an index) is
unknown. So a check is made only where what is known settles it, and never on a guess.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

Resolve = Callable[[ast.expr], object]  # the value of a name or attribute node; None where it is unknown


class _KnownNone:
    """A value known to be None (None itself means "not known")."""

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "None"


KNOWN_NONE = _KnownNone()
ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Pow)  # the operators value() reads


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
    if isinstance(node, ast.Constant) and node.value is None:
        return KNOWN_NONE
    if isinstance(node, ast.Attribute | ast.Name):
        return resolve(node)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("len", "sum")
        and len(node.args) == 1
        and not node.keywords
    ):
        sized = value(node.args[0], resolve)
        if node.func.id == "len":
            return len(sized) if isinstance(sized, list | str | dict) else None
        if not isinstance(sized, list) or not all(type(item) is int for item in sized):
            return None
        return sum(int(item) for item in sized)
    if isinstance(node, ast.List | ast.Tuple):
        items = [value(item, resolve) for item in node.elts]
        return None if any(item is None for item in items) else items
    if isinstance(node, ast.BinOp) and isinstance(node.op, ARITHMETIC):
        return _arithmetic(node.op, value(node.left, resolve), value(node.right, resolve))
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
        if member is None:
            return None
        if isinstance(right, ast.Set):
            right = ast.List(elts=right.elts, ctx=ast.Load())
        choices = value(right, resolve)  # a literal list: each element known (a literal or a known name)
        if isinstance(choices, list):
            choices = [None if item is KNOWN_NONE else item for item in choices]
        member = None if member is KNOWN_NONE else member
        if isinstance(choices, str) and isinstance(member, str):
            return (member in choices) is isinstance(operator, ast.In)
        if isinstance(choices, dict) and isinstance(member, str):
            return (member in choices) is isinstance(operator, ast.In)  # a mapping's keys
        if not isinstance(choices, list) or isinstance(member, list):
            return None
        return (member in choices) is isinstance(operator, ast.In)
    if isinstance(operator, ast.Is | ast.IsNot):
        left = value(node.left, resolve)
        if not (isinstance(right, ast.Constant) and right.value is None) or left is None:
            return None  # None is "not known" here, so only a known value is known not to be None
        return (left is not KNOWN_NONE) is isinstance(operator, ast.IsNot)
    left, other = value(node.left, resolve), value(right, resolve)
    if isinstance(operator, ast.Eq | ast.NotEq) and isinstance(left, str) and isinstance(other, str):
        return (left == other) is isinstance(operator, ast.Eq)
    if not _number(left) or not _number(other):
        return None
    compare = {ast.Lt: float.__lt__, ast.LtE: float.__le__, ast.Gt: float.__gt__, ast.GtE: float.__ge__,
               ast.Eq: float.__eq__, ast.NotEq: float.__ne__}.get(type(operator))  # fmt: skip
    return None if compare is None else compare(float(left), float(other))  # type: ignore[arg-type]


def _arithmetic(operator: ast.operator, left: object, right: object) -> object:
    if (
        not (isinstance(left, int) and isinstance(right, int))
        or isinstance(left, bool)
        or isinstance(right, bool)
    ):
        return None  # integers only: a float's remainder is never a shape
    if isinstance(operator, ast.FloorDiv | ast.Mod) and right == 0:
        return None
    if isinstance(operator, ast.Pow):
        return left**right if 0 <= right <= 64 else None
    if isinstance(operator, ast.Add):
        return left + right
    if isinstance(operator, ast.Sub):
        return left - right
    if isinstance(operator, ast.Mult):
        return left * right
    return left // right if isinstance(operator, ast.FloorDiv) else left % right


def _number(found: object) -> bool:
    return isinstance(found, int | float) and not isinstance(found, bool)
