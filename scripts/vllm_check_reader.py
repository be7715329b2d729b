"""Read the start-up checks out of one vLLM release's sources with ``ast`` (vLLM is never imported).

A *check* is a statement that stops the start-up when its condition holds: ``raise E(...)``,
``assert cond, msg``, ``sys.exit(...)`` / ``os._exit(...)`` / ``exit(...)``, and a
``logger.error(...)`` / ``logger.critical(...)`` followed in the same block by one of those (its
message is the logged one when the stop carries none). For each, :func:`read_checks` records the
file and line, the enclosing function's qualified name, the conditions on the way to it (the
enclosing ``if`` tests, negated on ``else`` branches, ``for`` headers, ``except`` clauses, and an
assert's own test), the message as source text (an f-string kept as its skeleton, placeholders as
their source), and the inputs its conditions read (attribute names, called names, bare names).

Which files and functions are read is :data:`AREAS`: the paths issue 31 names (config
construction and verification, engine argument parsing, platforms, attention-backend selection
and construction, quantization-method verification and layer construction, model loaders, LoRA,
the worker's device and KV-cache checks, and the constructors of model classes); per area, the
functions that run per step rather than at start-up (``forward``, ``apply`` …) are left out.

Stdlib only; deterministic.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fnmatch import fnmatch

# functions that run per request or per step, never while the engine starts (whatever their area)
_RUNTIME_NAME = re.compile(
    r"^(forward|_forward\w*|forward_\w+|\w+_forward|apply|_apply\w*|apply_\w+|__call__|execute_model|_execute\w*|"
    r"sample|_sample\w*|compute_logits|decode\w*|_decode\w*|prefill\w*|_prefill\w*|step|add_request|abort\w*|"
    r"build|_build\w*|build_for_\w+|reorder_batch|begin_forward|end_forward|plan|_plan\w*|run|__repr__|__str__|"
    r"extra_repr|get_name)$"
)
# classes whose methods run per step (attention metadata and its builders, samplers, KV-cache managers at run time)
_RUNTIME_CLASS = re.compile(
    r"(Metadata|MetadataBuilder|State|Sampler|Wrapper|Runner|Queue|Pool|BlockHash\w*)$"
)


@dataclass(frozen=True)
class Area:
    """A part of vLLM whose checks run at start-up: file patterns and which functions count."""

    name: str
    patterns: tuple[str, ...]
    functions: str = "all"  # all but the runtime ones | constructors | startup (those STARTUP names)
    exclude: tuple[str, ...] = ()
    runtime: str | None = None  # more function names that run per step in this area
    startup: str | None = None  # functions="startup": the names that run at start-up (default: STARTUP)
    # ``Class.function`` names that run per step but also in the start-up profile run (the V0 engine's
    # attention metadata builders): their checks count where they read only the model's config.json
    profile_run: str | None = None


# what of an attention backend runs while the engine starts: selection, validation, construction
STARTUP = re.compile(
    r"^(__init__|__post_init__|__new__|validate\w*|_validate\w*|verify\w*|_verify\w*|check\w*|_check\w*|supports?_\w+"
    r"|get_supported\w*|get_attn_backend\w*|_cached_get_\w+|which_attn_to_use|get_\w*backend\w*|_get_\w*backend\w*"
    r"|select\w*|choose\w*|get_kv_cache_shape|get_min_capability|is_\w+_supported|validate_kv_sharing_target"
    r"|process_weights_after_loading|get_impl_cls|get_builder_cls|get_state_cls)$"
)


AREAS: tuple[Area, ...] = (
    Area("config", ("vllm/config.py", "vllm/config/*.py")),
    Area("engine-args", ("vllm/engine/arg_utils.py",)),
    Area("platform", ("vllm/platforms/__init__.py", "vllm/platforms/interface.py", "vllm/platforms/cuda.py")),
    Area(
        "attention",
        (
            "vllm/attention/selector.py",
            "vllm/attention/layer.py",
            "vllm/attention/backends/*.py",
            "vllm/attention/backends/*/*.py",
            "vllm/v1/attention/selector.py",
            "vllm/v1/attention/backends/*.py",
            "vllm/v1/attention/backends/*/*.py",
            "vllm/model_executor/layers/attention/*.py",
        ),
        functions="startup",
        profile_run=r"MetadataBuilder\.build$",
        # backends of other platforms: never chosen on an LMI GPU image
        exclude=(
            "*rocm*",
            "*aiter*",
            "*cpu*",
            "*xpu*",
            "*tpu*",
            "*pallas*",
            "*hpu*",
            "*ipex*",
            "*neuron*",
            "*openvino*",
        ),
    ),
    Area(
        "quantization",
        (
            "vllm/model_executor/layers/quantization/*.py",
            "vllm/model_executor/layers/quantization/*/*.py",
            "vllm/model_executor/layers/quantization/*/*/*.py",
            "vllm/model_executor/layers/quantization/*/*/*/*.py",
            "vllm/model_executor/layers/linear.py",
        ),
        exclude=(
            "*rocm*",
            "*ipex*",
            "*tpu*",
            "*neuron*",
            "*hpu*",
            "*xpu*",
            "*cpu*",
            "*/ops/*",
            "*triton*",
            "*_test*",
        ),
        # kernels' entry points and tensor helpers, called per step or by tests
        runtime=r"^(?!(get|create|verify|check|from|choose|select|is|can|_check|_verify)_)(\w*quantize\w*|\w*dequant\w*"
        r"|\w*_gemm\w*|\w*_mm|\w*matmul\w*|\w*_linear|per_\w+|scaled_\w+|\w*_fp8_quant\w*|\w*_moe_\w*_impl)$",
    ),
    Area(
        "model-loader",
        ("vllm/model_executor/model_loader/*.py", "vllm/model_executor/model_loader.py"),
        exclude=("*neuron*", "*tpu*", "*openvino*"),
    ),
    Area("lora", ("vllm/lora/*.py",), exclude=("*punica*", "*/ops/*", "*layers*", "*fully_sharded*")),
    Area(
        "worker",
        (
            "vllm/worker/worker.py",
            "vllm/v1/worker/gpu_worker.py",
            "vllm/v1/worker/utils.py",
            "vllm/v1/core/kv_cache_utils.py",
            "vllm/executor/gpu_executor.py",
            "vllm/utils/mem_utils.py",
        ),
        functions="startup",
        # the device, the memory profile and the KV cache's size and layout; not the block queues that run per step
        startup=r"^(__init__|init_device|_init_\w+|init_\w+|initialize\w*|_initialize\w*|determine_\w+|_check\w*|check\w*"
        r"|raise_if\w*|load_model|get_kv_cache\w*|_get_kv_cache\w*|unify\w*|estimate\w*|get_max_shared\w*"
        r"|compile_or_warm_up\w*|_warm_up\w*|profile_run|determine_available_memory|verify\w*|_verify\w*|validate\w*"
        r"|_validate\w*|may_reinitialize\w*|is_kv_cache_type_uniform|get_num_blocks|_report_kv_cache_config"
        r"|request_memory)$",
    ),
    Area("model-registry", ("vllm/model_executor/models/registry.py", "vllm/transformers_utils/config.py")),
    Area("models", ("vllm/model_executor/models/*.py",), functions="constructors"),
)


def area_of(path: str) -> Area | None:
    """The first area whose patterns take ``path`` (and whose exclusions do not)."""
    for area in AREAS:
        if any(fnmatch(path, pattern) for pattern in area.patterns) and not any(
            fnmatch(path, pattern) for pattern in area.exclude
        ):
            return area
    return None


# files that vLLM split or moved between releases: their checks keep one identity across the move
_IDENTITY_FILES = (
    (re.compile(r"^vllm/config(\.py|/[\w]+\.py)$"), "vllm/config"),
    (re.compile(r"^vllm/model_executor/model_loader(\.py|/[\w]+\.py)$"), "vllm/model_executor/model_loader"),
)


def identity_file(path: str) -> str:
    """The file part of a check's identity: ``path``, or the family a split module belongs to."""
    for pattern, family in _IDENTITY_FILES:
        if pattern.match(path):
            return family
    return path


@dataclass
class Check:
    """One start-up check at one version."""

    path: str
    line: int
    function: str
    kind: str  # raise | assert | exit
    exception: str | None
    conditions: list[str]
    message: str
    inputs: list[str]
    area: str
    structural: list[str] = field(default_factory=list)  # the conditions without the guards: the identity's
    occurrence: int = 0  # the same check twice in one function: 0, 1 …
    # a message joined from a list the function (or a method it calls) appends to: each part's condition
    # and message, in code order (PEFTHelper.validate_legal: "LoRA rank … is greater than max_lora_rank …")
    parts: list[dict[str, str]] = field(default_factory=list)

    @property
    def identity(self) -> str:
        """``file::function::hash`` of the normalized structural conditions, kind, exception and message."""
        text = "|".join(
            [self.kind, self.exception or "", " && ".join(self.structural), _collapse(self.message)]
        )
        digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:10]
        suffix = f"#{self.occurrence}" if self.occurrence else ""
        return f"{identity_file(self.path)}::{self.function}::{digest}{suffix}"


def _collapse(text: str) -> str:
    return " ".join(text.split())


# --------------------------------------------------------------------------------------------
# messages
# --------------------------------------------------------------------------------------------


def message_skeleton(node: ast.AST | None, names: dict[str, ast.AST] | None = None) -> str:
    """The message as source text: literal parts as written, each placeholder as ``{source}``."""
    if node is None:
        return ""
    names = names or {}
    if isinstance(node, ast.Constant):
        return str(node.value)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                inner = value.value
                # ``f"{msg} …"`` after ``msg = "…"``: the text of msg, not its name
                if isinstance(inner, ast.Name) and inner.id in names and value.format_spec is None:
                    parts.append(message_skeleton(names[inner.id], {}))
                else:
                    parts.append("{" + ast.unparse(inner) + "}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return message_skeleton(node.left, names) + message_skeleton(node.right, names)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant):
        return str(node.left.value)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, ast.Constant | ast.JoinedStr)
    ):
        return message_skeleton(node.func.value, names)
    if isinstance(node, ast.Name) and node.id in names:
        return message_skeleton(names[node.id], {})
    return "{" + ast.unparse(node) + "}"


def _exception_parts(node: ast.expr | None) -> tuple[str | None, ast.AST | None]:
    """(exception name, message node) of ``raise E(msg)`` / ``raise E`` / ``raise module.E(msg)``."""
    if node is None:
        return None, None
    if isinstance(node, ast.Call):
        name = ast.unparse(node.func)
        if node.args:
            return name, node.args[0]
        for keyword in node.keywords:
            if keyword.arg in ("msg", "message", "detail"):
                return name, keyword.value
        return name, None
    return ast.unparse(node), None


# --------------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------------

_NOT_INPUTS = frozenset(
    {
        "self", "cls", "None", "True", "False", "isinstance", "len", "hasattr", "getattr", "any", "all", "int",
        "str", "float", "bool", "list", "dict", "set", "tuple", "type", "min", "max", "sum", "sorted", "range",
        "issubclass", "callable", "zip", "enumerate", "print", "repr", "abs", "round", "divmod", "next", "iter",
        "torch", "envs", "os", "math", "logger", "sys", "json", "re", "_for_", "_except_", "_case_",
    }
)  # fmt: skip


def inputs_of(nodes: list[ast.AST]) -> list[str]:
    """What the conditions read: leaf attribute names, called names (``name()``) and bare names."""
    found: set[str] = set()
    for root in nodes:
        called: set[int] = set()
        inner: set[int] = set()
        for node in ast.walk(root):
            if isinstance(node, ast.Call):
                called.add(id(node.func))
            if isinstance(node, ast.Attribute):
                inner.add(id(node.value))
        for node in ast.walk(root):
            if isinstance(node, ast.Attribute) and id(node) not in inner:
                found.add(node.attr + ("()" if id(node) in called else ""))
            elif isinstance(node, ast.Name) and id(node) not in inner and node.id not in _NOT_INPUTS:
                found.add(node.id + ("()" if id(node) in called else ""))
    return sorted(found)


# --------------------------------------------------------------------------------------------
# walking a module
# --------------------------------------------------------------------------------------------

_EXITS = ("sys.exit", "os._exit", "exit", "quit")
_ERROR_LOGS = ("error", "critical", "fatal", "exception")


def _is_exit(statement: ast.stmt) -> ast.Call | None:
    if (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and ast.unparse(statement.value.func) in _EXITS
    ):
        return statement.value
    return None


def _logged_error(statement: ast.stmt) -> ast.Call | None:
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        func = statement.value.func
        if isinstance(func, ast.Attribute) and func.attr in _ERROR_LOGS and "log" in ast.unparse(func.value):
            return statement.value
    return None


def _abstract(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A body that only raises NotImplementedError (after a docstring): an interface, not a check."""
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return (
        len(body) == 1
        and isinstance(body[0], ast.Raise)
        and body[0].exc is not None
        and "NotImplementedError" in ast.unparse(body[0].exc)
    )


@dataclass
class _Walker:
    path: str
    area: Area
    found: list[Check] = field(default_factory=list)
    skipped_abstract: int = 0
    _functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=list)
    _classes: list[ast.ClassDef] = field(default_factory=list)

    def module(self, tree: ast.Module) -> None:
        self.block(tree.body, [], "<module>", {}, counted=self.area.functions == "all")

    def function(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, qualname: str, in_runtime_class: bool
    ) -> None:
        name = f"{qualname}.{node.name}" if qualname != "<module>" else node.name
        if _abstract(node):
            self.skipped_abstract += 1
            return
        counted = not _RUNTIME_NAME.match(node.name) and not in_runtime_class
        if self.area.runtime and re.match(self.area.runtime, node.name):
            counted = False
        if self.area.functions == "constructors":
            counted = node.name in ("__init__", "__post_init__")
        elif self.area.functions == "startup":
            startup = re.compile(self.area.startup) if self.area.startup else STARTUP
            counted = bool(startup.match(node.name)) and not in_runtime_class
        profiled = bool(self.area.profile_run and re.search(self.area.profile_run, name)) and not counted
        names = {
            target.id: statement.value
            for statement in ast.walk(node)
            if isinstance(statement, ast.Assign)
            for target in statement.targets
            if isinstance(target, ast.Name)
        }
        self._functions.append(node)
        try:
            self.block(node.body, [], name, names, _CONFIG_ONLY if profiled else counted)
        finally:
            self._functions.pop()

    def block(
        self,
        statements: list[ast.stmt],
        conditions: list[ast.AST],
        scope: str,
        names: dict,
        counted: bool | str,
    ) -> None:
        logged: ast.Call | None = None
        conditions = list(conditions)
        for statement in statements:
            logged = _logged_error(statement) or logged
            self.statement(statement, conditions, scope, names, counted, logged)
            # ``if c: return`` (or continue, break): what follows runs only when ``not c``. A guard is part of the
            # check's conditions but not of its identity: a guard added above a check does not make it another check
            if isinstance(statement, ast.If) and not statement.orelse and _leaves(statement.body):
                conditions.append(_Guard(op=ast.Not(), operand=statement.test))

    def statement(
        self,
        node: ast.stmt,
        conditions: list[ast.AST],
        scope: str,
        names: dict,
        counted: bool | str,
        logged: ast.Call | None,
    ) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            runtime_class = (
                bool(_RUNTIME_CLASS.search(scope.rsplit(".", 1)[-1])) if scope != "<module>" else False
            )
            self.function(node, scope, runtime_class)
            return
        if isinstance(node, ast.ClassDef):
            inner = f"{scope}.{node.name}" if scope != "<module>" else node.name
            self._classes.append(node)
            for statement in node.body:
                if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                    self.function(statement, inner, bool(_RUNTIME_CLASS.search(node.name)))
                elif isinstance(statement, ast.ClassDef):
                    self.statement(statement, [], inner, {}, counted, None)
            self._classes.pop()
            return
        if isinstance(node, ast.If):
            self.block(node.body, [*conditions, node.test], scope, names, counted)
            negated = ast.UnaryOp(op=ast.Not(), operand=node.test)
            self.block(node.orelse, [*conditions, negated], scope, names, counted)
            return
        if isinstance(node, ast.For | ast.AsyncFor):
            header = ast.parse(
                f"_for_({ast.unparse(node.target)}, {ast.unparse(node.iter)})", mode="eval"
            ).body
            self.block(node.body, [*conditions, header], scope, names, counted)
            self.block(node.orelse, conditions, scope, names, counted)
            return
        if isinstance(node, ast.While):
            self.block(node.body, [*conditions, node.test], scope, names, counted)
            return
        if isinstance(node, ast.With | ast.AsyncWith):
            self.block(node.body, conditions, scope, names, counted)
            return
        if isinstance(node, ast.Try) or node.__class__.__name__ == "TryStar":
            self.block(node.body, conditions, scope, names, counted)  # type: ignore[attr-defined]
            for handler in node.handlers:  # type: ignore[attr-defined]
                caught = ast.parse(
                    f"_except_({ast.unparse(handler.type) if handler.type else 'BaseException'})", mode="eval"
                ).body
                self.block(handler.body, [*conditions, caught], scope, names, counted)
            self.block(node.orelse, conditions, scope, names, counted)  # type: ignore[attr-defined]
            self.block(node.finalbody, conditions, scope, names, counted)  # type: ignore[attr-defined]
            return
        if isinstance(node, ast.Match):
            for case in node.cases:
                pattern = ast.parse(
                    f"_case_({ast.unparse(node.subject)}, {ast.unparse(case.pattern)!r})", mode="eval"
                ).body
                self.block(case.body, [*conditions, pattern], scope, names, counted)
            return
        if not counted:
            return
        if counted == _CONFIG_ONLY and not _reads_only_config(conditions, names):
            return
        if isinstance(node, ast.Raise):
            if node.exc is None:
                return  # a bare re-raise passes on what was caught: the check is where it was raised
            exception, message = _exception_parts(node.exc)
            text = message_skeleton(message, names)
            if not text and logged is not None and logged.args:
                text = message_skeleton(logged.args[0], names)
            self.add(node, scope, "raise", exception, conditions, text)
            joined = _joined_list(message)
            if joined is not None and self._functions:
                self.found[-1].parts = _appended_parts(self._functions[-1], self._classes[-1:], joined)
        elif isinstance(node, ast.Assert):
            self.add(node, scope, "assert", "AssertionError", [*conditions, _negate(node.test)],
                     message_skeleton(node.msg, names))  # fmt: skip
        elif (call := _is_exit(node)) is not None:
            text = message_skeleton(logged.args[0], names) if logged is not None and logged.args else ""
            self.add(node, scope, "exit", ast.unparse(call.func), conditions, text)

    def add(
        self,
        node: ast.stmt,
        scope: str,
        kind: str,
        exception: str | None,
        conditions: list[ast.AST],
        message: str,
    ) -> None:
        self.found.append(
            Check(
                path=self.path,
                line=node.lineno,
                function=scope,
                kind=kind,
                exception=exception,
                conditions=[_text(condition) for condition in conditions],
                structural=[
                    _text(condition) for condition in conditions if not isinstance(condition, _Guard)
                ],
                message=message,
                inputs=inputs_of(conditions),
                area=self.area.name,
            )
        )


def _joined_list(message: ast.AST | None) -> str | None:
    """``L`` of a message ``' '.join(L)`` (also inside an f-string), else None."""
    for node in ast.walk(message) if message is not None else ():
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "join"
            and isinstance(node.func.value, ast.Constant)
            and len(node.args) == 1
            and isinstance(node.args[0], ast.Name)
        ):
            return node.args[0].id
    return None


def _appends(body: list[ast.stmt], name: str, conditions: list[str]) -> Iterator[dict[str, str]]:
    for statement in body:
        if isinstance(statement, ast.If):
            test = ast.unparse(statement.test)
            yield from _appends(statement.body, name, [*conditions, test])
            yield from _appends(statement.orelse, name, [*conditions, f"not ({test})"])
        elif isinstance(statement, ast.For | ast.With):
            yield from _appends(statement.body, name, conditions)
        elif (
            isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Call)
            and ast.unparse(statement.value.func) == f"{name}.append"
            and statement.value.args
        ):
            yield {"condition": " && ".join(conditions), "message": message_skeleton(statement.value.args[0])}


def _appended_parts(
    function: ast.FunctionDef | ast.AsyncFunctionDef, classes: list[ast.ClassDef], name: str
) -> list[dict[str, str]]:
    """What the function appends to the list ``name``, the parts a method it was assigned from
    (``name = self._validate_features()``) appends first."""
    parts: list[dict[str, str]] = []
    for statement in function.body:
        if (
            isinstance(statement, ast.Assign)
            and ast.unparse(statement.targets[0]) == name
            and isinstance(statement.value, ast.Call)
            and ast.unparse(statement.value.func).startswith("self.")
            and classes
        ):
            method = ast.unparse(statement.value.func).split(".", 1)[1]
            for helper in classes[-1].body:
                if isinstance(helper, ast.FunctionDef) and helper.name == method:
                    returned = [
                        s for s in helper.body if isinstance(s, ast.Return) and isinstance(s.value, ast.Name)
                    ]
                    if returned:
                        parts.extend(_appends(helper.body, returned[-1].value.id, []))  # type: ignore[union-attr]
    parts.extend(_appends(function.body, name, []))
    return parts


# ``counted`` in a profile-run function: a check counts where it reads only config.json
_CONFIG_ONLY = "config-only"


def _reads_only_config(conditions: list[ast.AST], names: dict) -> bool:
    """Whether every name the conditions read is assigned in the function from the model's config
    (``x = getattr(self.runner.model_config.hf_config, "attn_logit_softcapping", None)``)."""
    read = [node for condition in conditions for node in ast.walk(condition) if isinstance(node, ast.Name)]
    if not read or any(isinstance(node, ast.Attribute) for c in conditions for node in ast.walk(c)):
        return False
    return all(
        node.id in names and re.search(r"\bhf_(text_)?config\b", ast.unparse(names[node.id])) for node in read
    )


class _Guard(ast.UnaryOp):
    """``not c`` of an earlier ``if c: return``."""


def _text(condition: ast.AST) -> str:
    if isinstance(condition, _Guard):
        return ast.unparse(ast.UnaryOp(op=ast.Not(), operand=condition.operand))
    return ast.unparse(condition)


def _leaves(body: list[ast.stmt]) -> bool:
    """Whether a block always leaves its enclosing function or loop body (returns or jumps; a raise is a
    check of its own, and the checks after it are not conditioned on it)."""
    return bool(body) and isinstance(body[-1], ast.Return | ast.Continue | ast.Break)


def _negate(test: ast.expr) -> ast.expr:
    """The condition under which ``assert test`` fails."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    return ast.UnaryOp(op=ast.Not(), operand=test)


def read_checks(
    sources: dict[str, str], skip: Callable[[str], bool] | None = None
) -> tuple[list[Check], int]:
    """Every start-up check of the areas in ``sources`` (path -> text), and how many abstract methods
    (a lone ``raise NotImplementedError``) were left out."""
    checks: list[Check] = []
    abstract = 0
    for path in sorted(sources):
        area = area_of(path)
        if area is None or (skip is not None and skip(path)):
            continue
        try:
            tree = ast.parse(sources[path], filename=path)
        except SyntaxError:
            continue
        walker = _Walker(path, area)
        walker.module(tree)
        abstract += walker.skipped_abstract
        checks.extend(_numbered(walker.found))
    return checks, abstract


def _numbered(checks: list[Check]) -> Iterator[Check]:
    seen: dict[str, int] = {}
    for check in checks:
        base = check.identity
        check.occurrence = seen.get(base, 0)
        seen[base] = check.occurrence + 1
        yield check
