"""How each pinned vLLM release picks its attention backend on an NVIDIA GPU, and what each backend
accepts (``data/vllm_attention.json``, generated from the releases' code by ``scripts/gen_vllm_checks.py``
with ``scripts/vllm_attention_reader.py``).

The facts are typed here; the selection itself, which differs in shape between releases, is the
judge's (``shape/attention_backend.py``). A backend's head-size rule is an expression of the
release's code (``head_size % 8 == 0 and head_size <= 256``) evaluated with three values: a call in
it (a kernel's version) is not known before deployment, and neither is the answer then.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from functools import cache
from types import MappingProxyType
from typing import Any, NamedTuple

from lmi_config.knowledge import load_data


class AttentionBackend(NamedTuple):
    """One CUDA attention backend of one release (``v0/xformers``, ``v1/flash_attn`` …)."""

    key: str
    name: str | None  # what its get_name() returns
    head_sizes: tuple[int, ...] | None  # None: any (or its head_size_rule decides)
    head_size_rule: str | None
    impl_head_sizes: tuple[int, ...] | None  # what its implementation checks itself (None: any)
    impl_checks_head_size: bool
    capability: Mapping[str, int] | None  # {"min": 80, "max": 121}; {} any; None: it says nothing
    dtypes: tuple[str, ...] | None
    refuses: Mapping[str, tuple[str, ...]]  # feature -> check identities of data/vllm_checks.json
    source: str

    @property
    def stem(self) -> str:
        return self.key.split("/", 1)[1]

    def accepts_head_size(self, head_size: int) -> bool | None:
        """Whether the backend's own test (its list, else its rule) takes ``head_size``; None: unknown."""
        if self.head_size_rule is not None:
            return evaluate_head_size_rule(self.head_size_rule, head_size)
        return self.head_sizes is None or head_size in self.head_sizes

    def accepts_capability(self, capability: int) -> bool | None:
        if self.capability is None or "unread" in self.capability:
            return None
        low, high = self.capability.get("min", 0), self.capability.get("max", 10_000)
        return low <= capability <= high

    def accepts_dtype(self, dtype: str | None) -> bool | None:
        if self.dtypes is None or dtype is None:
            return None
        return dtype in self.dtypes

    def block_size_multiple(self) -> tuple[int, tuple[str, ...]] | None:
        """(multiple, identities) of the block size its KV-cache shape requires, if it requires one."""
        for feature, identities in self.refuses.items():
            if feature.startswith("block_size_multiple_"):
                return int(feature.rsplit("_", 1)[1]), identities
        return None


class AttentionRelease(NamedTuple):
    """One pinned vLLM version's attention facts."""

    version: str
    read_from: str
    kind: str  # selector | platform | priority
    selection: Mapping[str, Any]
    backends: Mapping[str, AttentionBackend]
    backend_names: frozenset[str]  # what VLLM_ATTENTION_BACKEND may name
    sliding_window_disabled: Mapping[str, Any] | None

    @property
    def source(self) -> str:
        return str(self.selection["source"])

    def backend(self, engine: str, stem: str) -> AttentionBackend | None:
        return self.backends.get(f"{engine}/{stem}")

    def named(self, engine: str, name: str) -> AttentionBackend | None:
        """The backend of an engine that VLLM_ATTENTION_BACKEND / a priority list names (``FLASH_ATTN``,
        ``FLASH_ATTN_VLLM_V1``, ``TRITON_ATTN_VLLM_V1``)."""
        wanted = name.upper()
        for backend in self.backends.values():
            if backend.key.startswith(f"{engine}/") and (backend.name or "").upper() == wanted:
                return backend
        stem = wanted.removesuffix("_VLLM_V1").lower()
        return self.backend(engine, stem)


def _backend(key: str, row: dict[str, Any]) -> AttentionBackend:
    sizes = row.get("head_sizes")
    impl = row.get("impl_head_sizes")
    return AttentionBackend(
        key=key,
        name=row.get("name"),
        head_sizes=tuple(sizes) if sizes is not None else None,
        head_size_rule=row.get("head_size_rule"),
        impl_head_sizes=tuple(impl) if impl is not None else None,
        impl_checks_head_size="impl_head_sizes" in row,
        capability=MappingProxyType(row["capability"]) if "capability" in row else None,
        dtypes=tuple(row["dtypes"]) if "dtypes" in row else None,
        refuses=MappingProxyType({feature: tuple(ids) for feature, ids in row["refuses"].items()}),
        source=row["source"],
    )


@cache
def attention_release(vllm_version: str | None) -> AttentionRelease | None:
    """The attention facts of an image's vLLM version; None for a version the data does not list."""
    if not vllm_version:
        return None
    row = load_data("vllm_attention.json")["versions"].get(vllm_version)
    if row is None:
        return None
    selection = row["selection"]
    return AttentionRelease(
        version=vllm_version,
        read_from=row["read_from"],
        kind=selection["kind"],
        selection=MappingProxyType(selection),
        backends=MappingProxyType({key: _backend(key, entry) for key, entry in row["backends"].items()}),
        backend_names=frozenset(row["backend_names"]),
        sliding_window_disabled=row.get("sliding_window_disabled"),
    )


# --------------------------------------------------------------------------------------------
# three-valued evaluation of a head-size rule
# --------------------------------------------------------------------------------------------

_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
}  # fmt: skip
_ARITHMETIC: dict[type, Callable[[Any, Any], Any]] = {
    ast.Mod: operator.mod, ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
}  # fmt: skip


def evaluate_head_size_rule(rule: str, head_size: int) -> bool | None:
    """``rule`` (a release's ``supports_head_size`` as an expression) for ``head_size``: True, False,
    or None where it depends on ``unknown`` (what only the running image knows)."""
    value = _evaluate(ast.parse(rule, mode="eval").body, head_size)
    return None if value is None else bool(value)


def _evaluate(node: ast.AST, head_size: int) -> Any:  # noqa: PLR0911  (one case per node kind)
    if isinstance(node, ast.Constant) and isinstance(node.value, bool | int):
        return node.value
    if isinstance(node, ast.Name):
        if node.id == "head_size":
            return head_size
        if node.id == "unknown":
            return None
        raise ValueError(f"unknown name {node.id!r} in a head-size rule")
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        left, right = _evaluate(node.left, head_size), _evaluate(node.right, head_size)
        return None if left is None or right is None else _ARITHMETIC[type(node.op)](left, right)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        left, right = _evaluate(node.left, head_size), _evaluate(node.comparators[0], head_size)
        return None if left is None or right is None else _COMPARE[type(node.ops[0])](left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        operand = _evaluate(node.operand, head_size)
        return None if operand is None else not operand
    if isinstance(node, ast.BoolOp):
        values = [_evaluate(value, head_size) for value in node.values]
        if isinstance(node.op, ast.And):
            return False if False in values else (None if None in values else True)
        return True if True in values else (None if None in values else False)
    if isinstance(node, ast.IfExp):
        test = _evaluate(node.test, head_size)
        if test is None:
            body, orelse = _evaluate(node.body, head_size), _evaluate(node.orelse, head_size)
            return body if body == orelse and body is not None else None
        return _evaluate(node.body if test else node.orelse, head_size)
    raise ValueError(f"{ast.unparse(node)!r} is not part of a head-size rule")
