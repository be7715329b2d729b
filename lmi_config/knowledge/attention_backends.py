"""How each pinned vLLM release picks its attention backend on an NVIDIA GPU, and what each backend
accepts (``data/vllm_attention.json``, generated from the releases' code by ``scripts/gen_vllm_checks.py``
with ``scripts/vllm_attention_reader.py``).

The facts are typed here; the selection itself, which differs in shape between releases, is the
judge's (``shape/attention_backend.py``). A backend's head-size rule is an expression of the
release's code (``head_size % 8 == 0 and head_size <= 256``) evaluated with three values: a call in
it (a kernel's version) is not known before deployment, and neither is the answer then.
"""

import ast
import operator
from collections.abc import Callable, Mapping
from functools import cache
from types import MappingProxyType
from typing import Any, NamedTuple

from lmi_config.knowledge import load_data, load_table


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
    # what it requires to run attention sinks (its supports_sink, or its implementation's check)
    sink_rule: str | None = None
    flash_attn: bool = False  # runs the FlashAttention build get_flash_attn_version picks

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

    def accepts_sink(self, values: Mapping[str, object]) -> bool | None:
        """Whether it runs attention sinks on this GPU (None: unknown; True where it says nothing)."""
        if self.sink_rule is None:
            return True
        value = evaluate_rule(self.sink_rule, values)
        return None if value is UNKNOWN else bool(value)

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
    flash_attn_version: Mapping[str, Any] | None = None  # the steps of get_flash_attn_version, and its source
    # sinks -> always / conditional -> the model modules whose attention layers pass them
    attention_kwargs: Mapping[str, Mapping[str, frozenset[str]]] = MappingProxyType({})
    # argument: the release has option.attention_backend; variable: it reads VLLM_ATTENTION_BACKEND
    backend_setting: Mapping[str, bool] = MappingProxyType({})
    # supports_sink -> 'sink setting not supported': what validate_configuration says of each test
    validation_reasons: Mapping[str, str] = MappingProxyType({})

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

    def passes(self, keyword: str, module: str | None) -> bool | None:
        """Whether the model module's attention layers pass ``keyword`` (``sinks``, ``alibi_slopes``);
        None where they pass it only under a condition of the config (Falcon's ``alibi``)."""
        groups = self.attention_kwargs.get(keyword, {})
        if module is not None and module in groups.get("always", frozenset()):
            return True
        if module is not None and module in groups.get("conditional", frozenset()):
            return None
        return False

    def fa_version(self, values: Mapping[str, object]) -> object:
        """The FlashAttention version get_flash_attn_version returns for these values: its steps run in
        the code's order; UNKNOWN where a step the values cannot decide would change it."""
        if self.flash_attn_version is None:
            return UNKNOWN
        version: object = None
        for step in self.flash_attn_version["steps"]:
            scope = {**values, "fa_version": version}
            when = evaluate_rule(step["when"], scope)
            if when is not UNKNOWN and not when:
                continue
            value = evaluate_rule(step["value"], scope)
            if when is UNKNOWN:
                version = version if value == version else UNKNOWN
            else:
                version = value
            if step["returns"] and when is not UNKNOWN:
                break
        return version


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
        sink_rule=row.get("sink_rule"),
        flash_attn=bool(row.get("flash_attn")),
    )


@cache
def attention_release(vllm_version: str | None) -> AttentionRelease | None:
    """The attention facts of an image's vLLM version; None for a version the data does not list."""
    if not vllm_version:
        return None
    row = load_table("vllm_attention.json", "versions").get(vllm_version)
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
        flash_attn_version=row.get("flash_attn_version"),
        attention_kwargs=MappingProxyType(
            {
                name: MappingProxyType({kind: frozenset(modules) for kind, modules in groups.items()})
                for name, groups in (row.get("attention_kwargs") or {}).items()
            }
        ),
        backend_setting=MappingProxyType(row.get("backend_setting") or {}),
        validation_reasons=MappingProxyType(row.get("validation_reasons") or {}),
    )


# --------------------------------------------------------------------------------------------
# FlashAttention builds (data/vllm_flash_attn.json, scripts/gen_vllm_flash_attn.py)
# --------------------------------------------------------------------------------------------


class FlashAttentionRefusal(NamedTuple):
    """A feature a FlashAttention build is compiled without, and the check that refuses it."""

    message: str
    source: str


class FlashAttentionBuild(NamedTuple):
    """One FlashAttention build (FA2, FA3) of a release's vllm_flash_attn."""

    version: int
    supported: str  # the GPUs it runs on, an expression of capability / major
    supported_source: str
    disabled: tuple[str, ...]
    refuses: Mapping[str, FlashAttentionRefusal]  # logits_soft_cap -> the check
    source: str


class FlashAttentionBuilds(NamedTuple):
    """The vllm-project/flash-attention commit a vLLM release compiles, and its builds."""

    commit: str
    commit_source: str
    builds: Mapping[int, FlashAttentionBuild]

    def supported(self) -> dict[str, object]:
        """``fa2_supported`` … as the judge's values: an expression each, UNKNOWN for a build not read."""
        return {f"fa{number}_supported": build.supported for number, build in self.builds.items()}


@cache
def flash_attention_builds(vllm_version: str | None) -> FlashAttentionBuilds | None:
    """The FlashAttention builds of an image's vLLM version; None where they are not read."""
    row = load_data("vllm_flash_attn.json")["versions"].get(vllm_version or "")
    if row is None or not row.get("commit") or not row.get("builds"):
        return None
    builds = {
        int(number): FlashAttentionBuild(
            version=int(number),
            supported=build["supported"],
            supported_source=build["supported_source"],
            disabled=tuple(build["disabled"]),
            refuses=MappingProxyType(
                {
                    feature: FlashAttentionRefusal(refusal["message"], refusal["source"])
                    for feature, refusal in build["refuses"].items()
                }
            ),
            source=build["source"],
        )
        for number, build in row["builds"].items()
    }
    return FlashAttentionBuilds(row["commit"], row["commit_source"], MappingProxyType(builds))


# --------------------------------------------------------------------------------------------
# three-valued evaluation of the expressions the readers write
# --------------------------------------------------------------------------------------------


class _Unknown:
    """What only the running image knows (a kernel's version, a package): neither true nor false."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


def evaluate_rule(rule: str, values: Mapping[str, object]) -> object:
    """An expression of a release's code (``fa_version in (3, 4)``, ``capability // 10 == 10 and
    unknown``) for these values: its value, or UNKNOWN where it depends on what the values leave open.
    A value that is itself an expression (``fa3_supported``) is evaluated in the same values."""
    return _Evaluator(values).value(ast.parse(rule, mode="eval").body)


class _Evaluator:
    def __init__(self, values: Mapping[str, object]) -> None:
        self.values = values
        self.depth = 0

    def value(self, node: ast.AST) -> object:  # noqa: PLR0911, PLR0912  (one case per node kind)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.Tuple | ast.List):
            items = [self.value(element) for element in node.elts]
            return UNKNOWN if any(item is UNKNOWN for item in items) else tuple(items)
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
            left, right = self.value(node.left), self.value(node.right)
            if left is UNKNOWN or right is UNKNOWN or left is None or right is None:
                return UNKNOWN
            return _ARITHMETIC[type(node.op)](left, right)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return self._compare(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            operand = self.value(node.operand)
            return UNKNOWN if operand is UNKNOWN else not operand
        if isinstance(node, ast.BoolOp):
            return self._boolean(node)
        if isinstance(node, ast.IfExp):
            test = self.value(node.test)
            if test is UNKNOWN:
                body, orelse = self.value(node.body), self.value(node.orelse)
                return body if body == orelse and body is not UNKNOWN else UNKNOWN
            return self.value(node.body if test else node.orelse)
        raise ValueError(f"{ast.unparse(node)!r} is not part of an expression the readers write")

    def _name(self, name: str) -> object:
        if name == "unknown":
            return UNKNOWN
        if name not in self.values:
            if name.startswith("env_"):
                return None  # a variable the environment does not set: vLLM's default, None
            if name.startswith("fa"):
                return UNKNOWN  # a FlashAttention version or build the facts do not describe
            raise ValueError(f"unknown name {name!r} in an expression")
        found = self.values[name]
        if isinstance(found, str) and name.endswith("_supported"):
            self.depth += 1
            return UNKNOWN if self.depth > 4 else self.value(ast.parse(found, mode="eval").body)
        return found

    def _compare(self, node: ast.Compare) -> object:
        left, right = self.value(node.left), self.value(node.comparators[0])
        operation = node.ops[0]
        if isinstance(operation, ast.Is | ast.IsNot):
            if left is UNKNOWN or right is UNKNOWN:
                return UNKNOWN
            same = left is right or left == right
            return same if isinstance(operation, ast.Is) else not same
        if left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN
        if isinstance(operation, ast.In | ast.NotIn):
            inside = isinstance(right, tuple) and left in right
            return inside if isinstance(operation, ast.In) else not inside
        if type(operation) not in _COMPARE:
            raise ValueError(f"{ast.unparse(node)!r}: an unsupported comparison")
        if (left is None or right is None) and not isinstance(operation, ast.Eq | ast.NotEq):
            return False
        return _COMPARE[type(operation)](left, right)

    def _boolean(self, node: ast.BoolOp) -> object:
        values = [self.value(value) for value in node.values]
        known = [bool(value) for value in values if value is not UNKNOWN]
        if isinstance(node.op, ast.And):
            return False if False in known else (UNKNOWN if len(known) < len(values) else True)
        return True if True in known else (UNKNOWN if len(known) < len(values) else False)


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


# --------------------------------------------------------------------------------------------
# TensorRT-LLM's attention kernels (data/trtllm_attention.json, scripts/gen_trtllm_attention.py)
# --------------------------------------------------------------------------------------------


class TrtllmHeadSizeCheck(NamedTuple):
    """A head-size check of TensorRT-LLM's attention kernels: the multiple per byte size of the type."""

    multiple: Mapping[int, int]  # 2 (float16 / bfloat16) -> 8, 4 (float32) -> 4
    message: str
    source: str


class TrtllmAttention(NamedTuple):
    """What one TensorRT-LLM release's attention kernels require of a model, read from its branch."""

    version: str
    head_size: tuple[TrtllmHeadSizeCheck, ...]
    commit: str


@cache
def trtllm_attention(trtllm_version: str | None) -> TrtllmAttention | None:
    """The attention facts of a TensorRT-LLM release; None for one the data does not read."""
    row = load_data("trtllm_attention.json")["versions"].get(trtllm_version or "")
    if row is None or not row.get("head_size"):
        return None
    checks = tuple(
        TrtllmHeadSizeCheck(
            MappingProxyType({int(size): int(multiple) for size, multiple in check["multiple"].items()}),
            check["message"],
            check["source"],
        )
        for check in row["head_size"]
    )
    return TrtllmAttention(str(trtllm_version), checks, row["commit"])
