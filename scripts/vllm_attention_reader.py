"""Read how one vLLM release picks its attention backend on an NVIDIA GPU, and what each backend
accepts, out of its sources with ``ast`` (vLLM is never imported).

For every CUDA attention backend of the release (``vllm/attention/backends/*.py`` of the V0 engine,
``vllm/v1/attention/backends/*.py`` of V1; the latent-attention ones under ``mla/`` and those of
other platforms left out) :func:`read_attention` records:

- the head sizes it supports: the list ``get_supported_head_sizes`` returns (a reference to another
  class's list, ``PagedAttention``'s for instance, resolved; an empty list is "any"), or the
  expression of its own ``supports_head_size`` (``head_size % 8 == 0 and head_size <= 256``);
- the head sizes its implementation's constructor checks, where it checks them itself;
- the compute capabilities (``supports_compute_capability``) and dtypes (``supported_dtypes``) it
  accepts, where it says;
- the features its implementation's constructor (or, in the V0 engine, its metadata builder, which
  the start-up profile run calls) refuses: logits soft-capping, a sliding window, ALiBi, a quantized
  KV cache, and the block-size multiple its KV-cache shape requires. Each is the identity of the
  check in the catalogue of scripts/gen_vllm_checks.py.

And the selection, in the one of three shapes the pinned releases have (anything else is an error,
so a release that changes it is read by a person before it is judged):

- ``selector`` (0.4-0.6): ``vllm/attention/selector.py`` ``which_attn_to_use``: FlashAttention unless
  the GPU is below a compute capability or another listed condition holds, then xFormers;
- ``platform`` (0.7-0.10): ``CudaPlatform.get_attn_backend_cls``: the same for the V0 engine, and for
  V1 FlashAttention from a compute capability, with the fallbacks the release has (FlexAttention on
  older GPUs or for a head size FlashAttention refuses, FlashInfer first on Blackwell);
- ``priority`` (0.11+): an ordered list of backends per compute-capability major, the first whose
  ``validate_configuration`` accepts the model chosen, none: "No valid attention backend found".

Stdlib only; deterministic.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from vllm_check_reader import Check

GITHUB = "https://github.com/vllm-project/vllm/blob/v{version}/{path}#L{line}"
_OTHER_PLATFORMS = re.compile(r"rocm|aiter|cpu|xpu|tpu|pallas|hpu|ipex|neuron|openvino")
_BACKEND_DIRS = ("vllm/attention/backends/", "vllm/v1/attention/backends/")
_PAGED_ATTENTION = "vllm/attention/ops/paged_attn.py"

# a refused feature: the failing condition of a check in the backend's implementation (or builder)
FEATURES: dict[str, re.Pattern[str]] = {
    "logits_soft_cap": re.compile(r"^(self\.)?logits_soft_cap is not None$|^not (self\.)?logits_soft_cap is None$"),
    "sliding_window": re.compile(r"^(self\.)?sliding_window is not None$|^not (self\.)?sliding_window is None$"),
    "alibi": re.compile(r"^(self\.)?alibi_slopes is not None$|^not (self\.)?alibi_slopes is None$"),
    "quantized_kv_cache": re.compile(r"^is_quantized_kv_cache\((self\.)?kv_cache_dtype\)$|^kv_cache_dtype != 'auto'$"),
}  # fmt: skip
_BLOCK_MULTIPLE = re.compile(r"^block_size % (\d+) != 0$")
_HEAD_SIZE = re.compile(r"^head_size not in \w+$")


class UnknownShape(Exception):
    """The release selects its backend in a way this reader does not know: read it before judging."""


def url(release: str, path: str, line: int) -> str:
    return GITHUB.format(version=release, path=path, line=line)


# --------------------------------------------------------------------------------------------
# classes and their methods
# --------------------------------------------------------------------------------------------


def _classes(sources: dict[str, str]) -> dict[str, list[tuple[str, ast.ClassDef]]]:
    """Class name -> [(path, node)] over the attention packages and PagedAttention."""
    found: dict[str, list[tuple[str, ast.ClassDef]]] = {}
    for path in sorted(sources):
        if not (path.startswith(("vllm/attention/", "vllm/v1/attention/")) and path.endswith(".py")):
            continue
        try:
            tree = ast.parse(sources[path])
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append((path, node))
    return found


def _method(node: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    for statement in node.body:
        if isinstance(statement, ast.FunctionDef) and statement.name == name:
            return statement
    return None


def _returned(function: ast.FunctionDef) -> ast.expr | None:
    """The value of the function's one top-level ``return``."""
    returns = [s for s in function.body if isinstance(s, ast.Return) and s.value is not None]
    return returns[-1].value if returns else None


class _Resolver:
    """Finds a class by name (the same file first) and what its methods return, bases included."""

    def __init__(self, sources: dict[str, str]) -> None:
        self.classes = _classes(sources)
        self.sources = sources
        self._imports: dict[str, dict[str, str]] = {}

    def imports(self, path: str) -> dict[str, str]:
        """Name -> the file it is imported from (``from vllm.attention.ops.paged_attn import X``)."""
        if path not in self._imports:
            found: dict[str, str] = {}
            for node in ast.walk(ast.parse(self.sources[path])):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    for alias in node.names:
                        found[alias.asname or alias.name] = node.module.replace(".", "/") + ".py"
            self._imports[path] = found
        return self._imports[path]

    def find(self, name: str, near: str) -> tuple[str, ast.ClassDef] | None:
        """The class ``name`` as the file ``near`` sees it: its own, else the one it imports."""
        candidates = self.classes.get(name, [])
        imported = self.imports(near).get(name) if near in self.sources else None
        for wanted in (near, imported):
            for path, node in candidates:
                if path == wanted:
                    return path, node
        return candidates[0] if len(candidates) == 1 else None

    def lineage(self, path: str, node: ast.ClassDef) -> Iterator[tuple[str, ast.ClassDef]]:
        """The class, then its bases found in the attention packages (depth first)."""
        seen: set[str] = set()
        stack = [(path, node)]
        while stack:
            current_path, current = stack.pop(0)
            if current.name in seen:
                continue
            seen.add(current.name)
            yield current_path, current
            for base in current.bases:
                name = ast.unparse(base.value if isinstance(base, ast.Subscript) else base).split(".")[-1]
                found = self.find(name, current_path)
                if found is not None:
                    stack.append(found)

    def method(self, path: str, node: ast.ClassDef, name: str) -> tuple[str, ast.FunctionDef] | None:
        for owner_path, owner in self.lineage(path, node):
            found = _method(owner, name)
            if found is not None:
                return owner_path, found
        return None

    def head_sizes(self, path: str, node: ast.ClassDef) -> tuple[list[int] | None, int] | None:
        """(sizes, line) of ``get_supported_head_sizes`` (None: any size), else None."""
        found = self.method(path, node, "get_supported_head_sizes")
        if found is None:
            return None
        owner_path, function = found
        value = _returned(function)
        if isinstance(value, ast.List):
            sizes = [element.value for element in value.elts if isinstance(element, ast.Constant)]
            if len(sizes) != len(value.elts) or not all(isinstance(size, int) for size in sizes):
                raise UnknownShape(f"{owner_path}:{function.lineno}: head sizes not a list of numbers")
            return (sorted(sizes) or None), function.lineno
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            other = ast.unparse(value.func.value)
            if value.func.attr == "get_supported_head_sizes" and other not in ("cls", "self"):
                target = self.find(other, owner_path)
                if target is None:
                    raise UnknownShape(f"{owner_path}:{function.lineno}: {other} not found")
                return self.head_sizes(*target)
        raise UnknownShape(
            f"{owner_path}:{function.lineno}: get_supported_head_sizes returns {ast.unparse(value)}"
        )


# --------------------------------------------------------------------------------------------
# one backend
# --------------------------------------------------------------------------------------------

_CAPABILITY = re.compile(r"capability\s*(>=|<=|>|<)\s*DeviceCapability\((\d+),\s*(\d+)\)")


def _capability(resolver: _Resolver, path: str, node: ast.ClassDef) -> dict[str, int] | None:
    """{"min": 80, "max": 121} of ``supports_compute_capability`` ({}: any), None where it has none."""
    found = resolver.method(path, node, "supports_compute_capability")
    if found is None:
        return None
    value = _returned(found[1])
    if isinstance(value, ast.Constant) and value.value is True:
        return {}
    text = ast.unparse(value) if value is not None else ""
    bounds: dict[str, int] = {}
    for operator, major, minor in _CAPABILITY.findall(text):
        number = int(major) * 10 + int(minor)
        if operator in (">=", ">"):
            bounds["min"] = number + (1 if operator == ">" else 0)
        else:
            bounds["max"] = number - (1 if operator == "<" else 0)
    leftover = _CAPABILITY.sub("", text).replace("and", "").replace("(", "").replace(")", "").strip()
    if not bounds or leftover:
        return {"unread": 1}  # a condition this reader does not model: the judge does not decide on it
    return bounds


def _dtypes(resolver: _Resolver, path: str, node: ast.ClassDef) -> list[str] | None:
    for _, owner in resolver.lineage(path, node):
        for statement in owner.body:
            target = statement.target if isinstance(statement, ast.AnnAssign) else None
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                target = statement.targets[0]
            value = statement.value if isinstance(statement, ast.Assign | ast.AnnAssign) else None
            if (
                isinstance(target, ast.Name)
                and target.id == "supported_dtypes"
                and isinstance(value, ast.List)
            ):
                return sorted(ast.unparse(element).split(".")[-1] for element in value.elts)
    return None


class _UnknownCalls(ast.NodeTransformer):
    """A call (a kernel's version, a package) is not known before deployment: ``unknown``."""

    def visit_Call(self, node: ast.Call) -> ast.AST:  # noqa: N802  (ast's spelling)
        return ast.copy_location(ast.Name(id="unknown", ctx=ast.Load()), node)


def _as_expression(body: list[ast.stmt], where: str) -> ast.expr:
    """A body of ``if c: return v`` steps and a last ``return v`` as one conditional expression."""
    statement, rest = body[0], body[1:]
    if isinstance(statement, ast.Return) and statement.value is not None:
        return statement.value
    if isinstance(statement, ast.If) and not statement.orelse and len(statement.body) == 1 and rest:
        inner = statement.body[0]
        if isinstance(inner, ast.Return) and inner.value is not None:
            return ast.IfExp(test=statement.test, body=inner.value, orelse=_as_expression(rest, where))
    raise UnknownShape(f"{where}: supports_head_size is not a chain of returns")


def _head_size_rule(resolver: _Resolver, path: str, node: ast.ClassDef) -> tuple[str, int] | None:
    """The expression of an own ``supports_head_size`` (not the base's list test), with its line;
    calls in it (a kernel's version) become ``unknown``."""
    found = resolver.method(path, node, "supports_head_size")
    if found is None:
        return None
    if "get_supported_head_sizes" in ast.unparse(found[1]):
        return None  # the base's: the list decides
    body = [s for s in found[1].body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    text = ast.unparse(_UnknownCalls().visit(_as_expression(body, f"{found[0]}:{found[1].lineno}")))
    if not re.fullmatch(r"[\shead_size0-9%<>=!andortifelsTrueFalunkw()]+", text):
        raise UnknownShape(f"{found[0]}:{found[1].lineno}: supports_head_size is {text}")
    return text, found[1].lineno


def _returned_class(
    resolver: _Resolver, path: str, node: ast.ClassDef, method: str
) -> tuple[str, ast.ClassDef] | None:
    found = resolver.method(path, node, method)
    if found is None:
        return None
    value = _returned(found[1])
    if isinstance(value, ast.Name):
        return resolver.find(value.id, found[0])
    return None


def _impl_head_sizes(resolver: _Resolver, impl: tuple[str, ast.ClassDef] | None) -> list[int] | None | str:
    """The sizes the implementation's constructor checks: a list, None (any), or "backend" (its
    backend's ``validate_head_size``), "" where it checks none."""
    if impl is None:
        return ""
    constructor = _method(impl[1], "__init__")
    if constructor is None:
        return ""
    for statement in ast.walk(constructor):
        if isinstance(statement, ast.Call) and isinstance(statement.func, ast.Attribute):
            owner = ast.unparse(statement.func.value)
            if statement.func.attr == "validate_head_size":
                return "backend"
            if statement.func.attr == "get_supported_head_sizes":
                target = resolver.find(owner, impl[0])
                if target is not None:
                    found = resolver.head_sizes(*target)
                    return found[0] if found else None
    return ""


def _refusals(checks: list[Check], places: list[tuple[str, str]]) -> dict[str, list[str]]:
    """Feature -> the identities of the checks that refuse it in these (path, function) places."""
    refused: dict[str, list[str]] = {}
    for check in checks:
        if (check.path, check.function) not in places or not check.structural:
            continue
        failing = check.structural[-1]
        for feature, pattern in FEATURES.items():
            if pattern.match(failing) and len(check.structural) == 1:
                refused.setdefault(feature, []).append(check.identity)
        block = _BLOCK_MULTIPLE.match(failing)
        if block and check.function.endswith("get_kv_cache_shape"):
            refused.setdefault(f"block_size_multiple_{block.group(1)}", []).append(check.identity)
        if _HEAD_SIZE.match(failing):
            refused.setdefault("head_size", []).append(check.identity)
    return {feature: sorted(set(identities)) for feature, identities in sorted(refused.items())}


def _backends(sources: dict[str, str], release: str, checks: list[Check]) -> dict[str, dict[str, Any]]:
    resolver = _Resolver(sources)
    backends: dict[str, dict[str, Any]] = {}
    for name, places in sorted(resolver.classes.items()):
        for path, node in places:
            directory = str(PurePosixPath(path).parent) + "/"
            if (
                directory not in _BACKEND_DIRS
                or _OTHER_PLATFORMS.search(path)
                or not name.endswith("Backend")
            ):
                continue
            impl = _returned_class(resolver, path, node, "get_impl_cls")
            if impl is None:
                continue
            label = _method(node, "get_name")
            label_value = _returned(label) if label else None
            engine = "v1" if path.startswith("vllm/v1/") else "v0"
            key = f"{engine}/{PurePosixPath(path).stem}"
            entry: dict[str, Any] = {
                "class": name,
                "name": label_value.value if isinstance(label_value, ast.Constant) else None,
                "source": url(release, path, node.lineno),
            }
            sizes = resolver.head_sizes(path, node)
            if sizes is not None:
                entry["head_sizes"] = sizes[0]
            rule = _head_size_rule(resolver, path, node)
            if rule is not None:
                entry["head_size_rule"] = rule[0]
            impl_sizes = _impl_head_sizes(resolver, impl)
            if impl_sizes != "":
                entry["impl_head_sizes"] = entry.get("head_sizes") if impl_sizes == "backend" else impl_sizes
            capability = _capability(resolver, path, node)
            if capability is not None:
                entry["capability"] = capability
            dtypes = _dtypes(resolver, path, node)
            if dtypes is not None:
                entry["dtypes"] = dtypes
            builder = _returned_class(resolver, path, node, "get_builder_cls") if engine == "v0" else None
            where = [
                (path, f"{name}.get_kv_cache_shape"),
                (path, f"{name}.validate_head_size"),
                (impl[0], f"{impl[1].name}.__init__"),
            ]
            if builder is not None:
                where += [
                    (owner_path, f"{owner.name}.build") for owner_path, owner in resolver.lineage(*builder)
                ]
            entry["refuses"] = _refusals(checks, where)
            sink = _sink_rule(resolver, path, node) or _impl_sink_rule(checks, impl)
            if sink is not None:
                entry["sink_rule"] = sink[0]
                if len(sink) > 2:
                    entry["refuses"]["sinks"] = [sink[2]]  # type: ignore[misc]
            constructor = _method(impl[1], "__init__")
            if constructor is not None and "get_flash_attn_version(" in ast.unparse(constructor):
                entry["flash_attn"] = True  # runs the FlashAttention version get_flash_attn_version picks
            backends[key] = entry
    return backends


# --------------------------------------------------------------------------------------------
# the selection
# --------------------------------------------------------------------------------------------


def _function(tree: ast.Module, qualified: str) -> ast.FunctionDef | None:
    parts = qualified.split(".")
    scope: list[ast.stmt] = list(tree.body)
    for part in parts[:-1]:
        owner = next((n for n in scope if isinstance(n, ast.ClassDef) and n.name == part), None)
        if owner is None:
            return None
        scope = list(owner.body)
    return next((n for n in scope if isinstance(n, ast.FunctionDef) and n.name == parts[-1]), None)


def _paths(body: list[ast.stmt], conditions: list[str]) -> Iterator[tuple[ast.stmt, list[str]]]:
    """Every statement with the ``if`` conditions on its way (``not (c)`` on else branches)."""
    for statement in body:
        yield statement, conditions
        if isinstance(statement, ast.If):
            test = ast.unparse(statement.test)
            yield from _paths(statement.body, [*conditions, test])
            yield from _paths(statement.orelse, [*conditions, f"not ({test})"])
        elif isinstance(statement, ast.Try):
            yield from _paths(statement.body, conditions)
            for handler in statement.handlers:
                yield from _paths(handler.body, [*conditions, "except"])
        elif isinstance(statement, ast.With | ast.For):
            yield from _paths(statement.body, conditions)


_FALLBACK_TAGS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "capability",
        re.compile(r"get_device_capability\(\)\[0\] < (\d+)|not \w+\.has_device_capability\((\d+)\)"),
    ),
    ("dtype", re.compile(r"dtype not in \(torch\.float16, torch\.bfloat16\)")),
    ("quantized_kv_cache", re.compile(r"kv_cache_dtype\.startswith\('fp8'\)|fp8_kv_cache and")),
    ("block_size", re.compile(r"block_size % 16 != 0")),
    ("sliding_window", re.compile(r"sliding_window is not None")),
    ("head_size", re.compile(r"head_size not in supported_sizes")),
    ("package", re.compile(r"^except$")),
)


def _v0_fallbacks(function: ast.FunctionDef, target_names: tuple[str, ...]) -> dict[str, Any]:
    """What makes the V0 selection fall back from FlashAttention to xFormers, with the capability."""
    tags: dict[str, Any] = {}
    for statement, conditions in _paths(function.body, []):
        assigned = (
            isinstance(statement, ast.Assign)
            and ast.unparse(statement.targets[0]) in target_names
            and ast.unparse(statement.value).endswith(".XFORMERS")
        ) or (
            isinstance(statement, ast.Return)
            and ast.unparse(statement.value or ast.Constant(None)).endswith(".XFORMERS")
        )
        if not assigned or not conditions:
            continue
        last = conditions[-1]
        for tag, pattern in _FALLBACK_TAGS:
            match = pattern.search(last)
            if match:
                if tag == "capability":
                    number = next(group for group in match.groups() if group)
                    tags["flash_min_capability"] = int(number) * (10 if len(number) == 1 else 1)
                else:
                    tags.setdefault("falls_back_for", []).append(tag)
                tags.setdefault("lines", {})[tag] = statement.lineno
                break
    if "flash_min_capability" not in tags:
        raise UnknownShape(f"{function.name}: no compute-capability fallback to xFormers found")
    tags["falls_back_for"] = sorted(set(tags.get("falls_back_for", [])))
    return tags


def _enum_names(value: ast.expr) -> list[str]:
    if not isinstance(value, ast.List):
        raise UnknownShape(f"backend priorities are {ast.unparse(value)}")
    names = []
    for element in value.elts:
        if isinstance(element, ast.Starred):
            continue  # the sparse latent-attention backends: not judged
        names.append(ast.unparse(element).split(".")[-1])
    return names


def _priorities(function: ast.FunctionDef) -> dict[str, list[str]]:
    """Non-latent backend priorities: {"10": [...], "default": [...]} (by compute-capability major)."""
    for statement in function.body:
        if isinstance(statement, ast.If) and ast.unparse(statement.test) == "use_mla":
            for inner in statement.orelse:
                if isinstance(inner, ast.If):
                    match = re.fullmatch(r"device_capability\.major == (\d+)", ast.unparse(inner.test))
                    returned = [s for s in inner.body if isinstance(s, ast.Return)]
                    other = [s for s in inner.orelse if isinstance(s, ast.Return)]
                    if match and returned and other and returned[0].value and other[0].value:
                        return {
                            match.group(1): _enum_names(returned[0].value),
                            "default": _enum_names(other[0].value),
                        }
    raise UnknownShape("_get_backend_priorities: no per-capability lists for non-MLA attention")


def _v1_platform(function: ast.FunctionDef) -> dict[str, Any]:
    """The V1 defaults of a 0.7-0.10 ``get_attn_backend_cls``, read from its ``if use_v1:`` block."""
    block = next(
        (s for s in ast.walk(function) if isinstance(s, ast.If) and ast.unparse(s.test) == "use_v1" and any(
            "FLASH_ATTN" in ast.unparse(inner) or "flash_attn" in ast.unparse(inner) for inner in s.body)),
        None,
    )  # fmt: skip
    if block is None:
        raise UnknownShape("get_attn_backend_cls: no V1 block")
    text = ast.unparse(block)
    facts: dict[str, Any] = {"line": block.lineno}
    # the compute capability on the way to the default ``return FLASH_ATTN_V1`` (not a backend the user picked)
    minimum = None
    for statement, conditions in _paths(block.body, []):
        returned = (
            ast.unparse(statement.value) if isinstance(statement, ast.Return) and statement.value else ""
        )
        if ("FLASH_ATTN_V1" in returned or "flash_attn.FlashAttentionBackend" in returned) and not any(
            "selected_backend" in condition for condition in conditions
        ):
            capability = [re.search(r"^\w+\.has_device_capability\((\d+)\)$", c) for c in conditions]
            minimum = next((int(m.group(1)) for m in capability if m), None)
            break
    # None: V1 takes FlashAttention whatever the GPU (0.7, where V1 is asked for, not the default)
    facts["flash_min_capability"] = minimum
    # FlashAttention chosen only for the head sizes and dtypes it supports, else FlexAttention
    facts["flash_checks_head_size"] = "is_attn_backend_supported(FLASH_ATTN_V1" in text
    facts["older_gpus"] = (
        "FLEX_ATTENTION"
        if re.search(r"else:\s*\n(\s*logger.*\n)*\s*return FLEX_ATTENTION_V1", text)
        else None
    )
    facts["fallback"] = (
        "FLEX_ATTENTION" if facts["flash_checks_head_size"] and "return FLEX_ATTENTION_V1" in text else None
    )
    facts["blackwell_first"] = "FLASHINFER" if re.search(r"is_device_capability\(100\)", text) else None
    facts["sinks_backend"] = "TRITON_ATTN" if "has_sink" in text else None
    # 0.10: 'if has_sink and not cls.is_device_capability(90)': Triton, but FlashAttention 3 on Hopper
    kept = re.search(r"has_sink and \(?not cls\.is_device_capability\((\d+)\)", text)
    facts["sinks_kept_on_capability"] = int(kept.group(1)) if kept else None
    # a backend the user names: 'if selected_backend == _Backend.FLASHINFER: return FLASHINFER_V1' (0.10)
    paths = {
        ast.unparse(target): statement.value.value
        for statement in ast.walk(block)
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
        for target in statement.targets
    }  # fmt: skip
    named: dict[str, str] = {}
    for statement in ast.walk(block):
        if not isinstance(statement, ast.If):
            continue
        chosen = re.fullmatch(r"selected_backend == _Backend\.(\w+)", ast.unparse(statement.test))
        returned = next(
            (s for s in statement.body if isinstance(s, ast.Return) and s.value is not None), None
        )
        if chosen and returned is not None:
            target = paths.get(ast.unparse(returned.value), "")  # type: ignore[arg-type]
            if target.startswith("vllm.v1.attention.backends."):
                named[chosen.group(1)] = target.rsplit(".", 2)[-2]
    facts["named_backends"] = dict(sorted(named.items()))
    return facts


_ORACLE_TAGS = (
    ("dtype", re.compile(r"V1_SUPPORTED_DTYPES")),
    ("kv_cache_dtype", re.compile(r"feature_name='--kv-cache-dtype'")),
    ("pipeline_without_ray", re.compile(r"Pipeline Parallelism without Ray")),
    ("speculative_decoding", re.compile(r"feature_name='Speculative Decoding'")),
)


def _v1_oracle(sources: dict[str, str], release: str) -> dict[str, Any]:
    """What makes ``EngineArgs._is_v1_supported_oracle`` run the V0 engine instead: the compute
    capability below which it does (0.8: 'Compute Capability < 8.0') and the settings it names."""
    path = "vllm/engine/arg_utils.py"
    oracle = (
        _function(ast.parse(sources[path]), "EngineArgs._is_v1_supported_oracle") if path in sources else None
    )
    if oracle is None:
        return {}
    facts: dict[str, Any] = {"engine_source": url(release, path, oracle.lineno)}
    for statement, conditions in _paths(oracle.body, []):
        if isinstance(statement, ast.Expr) and "Compute Capability < " in ast.unparse(statement):
            match = re.search(r"\.major < (\d+)", " && ".join(conditions))
            if match:
                facts["engine_min_capability"] = int(match.group(1)) * 10
                facts["engine_source"] = url(release, path, statement.lineno)
    text = ast.unparse(oracle)
    facts["engine_falls_back_for"] = [tag for tag, pattern in _ORACLE_TAGS if pattern.search(text)]
    # the names VLLM_ATTENTION_BACKEND may take and stay on V1 (another one runs V0)
    for statement in ast.walk(oracle):
        if (
            isinstance(statement, ast.Assign)
            and [ast.unparse(t) for t in statement.targets] == ["V1_BACKENDS"]
            and isinstance(statement.value, ast.List)
        ):
            facts["v1_backend_names"] = sorted(
                e.value
                for e in statement.value.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            )
    return facts


def _v0_only_classes(sources: dict[str, str]) -> list[str]:
    """Model classes marked ``SupportsV0Only``: the V1 oracle runs them on V0."""
    found = set()
    for path, text in sources.items():
        if not path.startswith("vllm/model_executor/models/") or "SupportsV0Only" not in text:
            continue
        for node in ast.parse(text).body:
            if isinstance(node, ast.ClassDef) and any(
                ast.unparse(b).endswith("SupportsV0Only") for b in node.bases
            ):
                found.add(node.name)
    return sorted(found)


def _selection(sources: dict[str, str], release: str) -> dict[str, Any]:
    cuda = "vllm/platforms/cuda.py"
    selector = "vllm/attention/selector.py"
    if cuda in sources:
        tree = ast.parse(sources[cuda])
        priorities = _function(tree, "_get_backend_priorities")
        if priorities is not None:
            return {
                "kind": "priority",
                "source": url(release, cuda, priorities.lineno),
                **{"priorities": _priorities(priorities)},
            }
        for owner in ("CudaPlatformBase", "CudaPlatform"):
            function = _function(tree, f"{owner}.get_attn_backend_cls")
            if function is not None:
                v0 = _v0_fallbacks(function, ("target_backend", "selected_backend"))
                lines = v0.pop("lines")
                facts: dict[str, Any] = {
                    "kind": "platform",
                    "source": url(release, cuda, function.lineno),
                    "v0": v0,
                }
                facts["v0"]["source"] = url(release, cuda, lines.get("capability", function.lineno))
                v1 = _v1_platform(function)
                facts["v1"] = {**v1, "source": url(release, cuda, v1.pop("line"))}
                facts["v1"].update(_v1_oracle(sources, release))
                facts["v1"]["v0_only_classes"] = _v0_only_classes(sources)
                return facts
    tree = ast.parse(sources[selector])
    function = _function(tree, "which_attn_to_use") or _function(tree, "_which_attn_to_use")
    if function is None:
        raise UnknownShape(f"{release}: no attention selector found")
    v0 = _v0_fallbacks(function, ("selected_backend",))
    lines = v0.pop("lines")
    return {"kind": "selector", "source": url(release, selector, function.lineno),
            "v0": {**v0, "source": url(release, selector, lines.get("capability", function.lineno))}}  # fmt: skip


def _backend_names(sources: dict[str, str]) -> list[str]:
    """The names VLLM_ATTENTION_BACKEND may take (the ``_Backend`` / ``AttentionBackendEnum`` members)."""
    for path in (
        "vllm/attention/backends/registry.py",
        "vllm/v1/attention/backends/registry.py",
        "vllm/platforms/interface.py",
        "vllm/attention/selector.py",
    ):
        if path not in sources:
            continue
        for node in ast.walk(ast.parse(sources[path])):
            if isinstance(node, ast.ClassDef) and node.name in ("_Backend", "AttentionBackendEnum"):
                return sorted(
                    target.id
                    for statement in node.body
                    if isinstance(statement, ast.Assign)
                    for target in statement.targets
                    if isinstance(target, ast.Name) and not target.id.startswith("_")
                )
    return []


def _sliding_window_disabled(sources: dict[str, str], release: str) -> dict[str, Any] | None:
    """The model types whose (interleaved) sliding window ``ModelConfig`` turns off, where it does
    (0.5-0.6: "gemma2 has interleaved attention, which is currently not supported by vLLM. Disabling
    sliding window"), with the line; None where it turns none off."""
    path = "vllm/config.py"
    if path not in sources:
        return None
    constructor = _function(ast.parse(sources[path]), "ModelConfig.__init__")
    if constructor is None:
        return None
    types: list[str] = []
    lists = False
    for statement in ast.walk(constructor):
        if isinstance(statement, ast.Assign | ast.If):
            text = ast.unparse(statement.value if isinstance(statement, ast.Assign) else statement.test)
            if "sliding_window" in text and "model_type" in text:
                for group in re.findall(r"model_type (?:==|in) \[?((?:'[\w-]+'(?:, )?)+)", text):
                    types += re.findall(r"'([\w-]+)'", group)
                lists = lists or "isinstance(sliding_window, list)" in text
    if not types:
        return None
    for statement, conditions in _paths(constructor.body, []):
        if isinstance(statement, ast.Assign) and ast.unparse(statement).startswith(
            "self.disable_sliding_window = True"
        ):
            # 0.7: only where VLLM_ATTENTION_BACKEND names xFormers or FlashInfer
            backends = re.findall(
                r"'([A-Z_]+)'", " ".join(c for c in conditions if "VLLM_ATTENTION_BACKEND" in c)
            )
            return {
                "model_types": sorted(set(types)),
                "lists": lists,
                "only_with_backends": sorted(set(backends)),
                "source": url(release, path, statement.lineno),
            }
    return None


def read_attention(sources: dict[str, str], release: str, checks: list[Check]) -> dict[str, Any]:
    """The release's attention facts: its selection and, per CUDA backend, what it accepts."""
    return {
        "selection": _selection(sources, release),
        "backends": _backends(sources, release, checks),
        "backend_names": _backend_names(sources),
        "sliding_window_disabled": _sliding_window_disabled(sources, release),
        "flash_attn_version": _flash_attn_version(sources, release),
        "attention_kwargs": _attention_kwargs(sources),
        "backend_setting": _backend_setting(sources),
        "validation_reasons": _validation_reasons(sources),
    }


# --------------------------------------------------------------------------------------------
# expressions of the GPU: what a backend's supports_sink and get_flash_attn_version decide on
# --------------------------------------------------------------------------------------------

# the names an expression of the judge may read (knowledge/attention_backends.py evaluates them):
# capability (86 = 8.6) and major, the model's head_size, has_sinks and requires_alibi, the FlashAttention
# version the release runs (fa_version) and whether one is built for the GPU (fa2_supported …), and the
# engine's environment (env_VLLM_FLASH_ATTN_VERSION …); anything else is ``unknown``
EXPRESSION_NAMES = re.compile(
    r"^(capability|major|head_size|has_sinks|requires_alibi|fa_version|fa\d_supported|env_\w+|unknown)$"
)
_OTHER_PLATFORM_CALL = re.compile(r"^is_(xpu|rocm|cpu|tpu|hpu|neuron|out_of_tree|sleep_mode_available)$")
_CAPABILITY_CALLS = {"is_device_capability": "==", "has_device_capability": ">="}


def _constant(value: object) -> ast.expr:
    return ast.Constant(value=value)


def _unknown() -> ast.expr:
    return ast.Name(id="unknown", ctx=ast.Load())


def _name(node: ast.expr) -> str:
    return ast.unparse(node.func).split(".")[-1] if isinstance(node, ast.Call) else ""


def _capability_number(node: ast.expr) -> int | None:
    """``DeviceCapability(8, 0)`` -> 80, ``(8, 6)`` -> 86, ``100`` -> 100."""
    if isinstance(node, ast.Call) and _name(node) == "DeviceCapability" and len(node.args) == 2:
        parts = node.args
    elif isinstance(node, ast.Tuple) and len(node.elts) == 2:
        parts = node.elts
    elif isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    else:
        return None
    if all(isinstance(part, ast.Constant) and isinstance(part.value, int) for part in parts):
        major, minor = (part.value for part in parts)  # type: ignore[attr-defined]
        return int(major) * 10 + int(minor)
    return None


_CAPABILITY_TEXT = re.compile(r"(get_device_capability\(\w*\)|device_capability|capability)$")
_MAJOR_TEXT = re.compile(r"(get_device_capability\(\w*\)\[0\]|(device_)?capability\.major)$")


class _Normalize(ast.NodeTransformer):
    """A condition or value of vLLM's code in the names of :data:`EXPRESSION_NAMES`: platform calls
    become comparisons of the GPU's capability, other platforms False, calls the resolver can inline
    their returned expression, and whatever else is read at run time ``unknown``."""

    def __init__(self, inline: Any = None, renames: dict[str, str] | None = None) -> None:
        self.inline = inline
        self.renames = renames or {}

    def visit_Compare(self, node: ast.Compare) -> ast.AST:  # noqa: N802  (ast's spelling)
        text = ast.unparse(node)
        if text in (
            "vllm_config is not None",
            "current_capability is not None",
            "device_capability is not None",
        ):
            return _constant(True)
        if len(node.ops) == 1 and _CAPABILITY_TEXT.search(ast.unparse(node.left)):
            number = _capability_number(node.comparators[0])
            if number is not None:
                left = ast.Name(id="capability", ctx=ast.Load())
                return ast.copy_location(
                    ast.Compare(left=left, ops=node.ops, comparators=[_constant(number)]), node
                )
        return self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:  # noqa: N802
        if _MAJOR_TEXT.search(ast.unparse(node)):
            return ast.Name(id="major", ctx=ast.Load())
        return _unknown()

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:  # noqa: N802
        text = ast.unparse(node)
        if _MAJOR_TEXT.search(text):
            return ast.Name(id="major", ctx=ast.Load())
        if text.startswith("envs.") and text.count(".") == 1:
            return ast.Name(id=f"env_{node.attr}", ctx=ast.Load())
        if text.endswith("attention_config.flash_attn_version"):
            return ast.Name(id="env_VLLM_FLASH_ATTN_VERSION", ctx=ast.Load())  # the config the variable sets
        return _unknown()

    def visit_Name(self, node: ast.Name) -> ast.AST:  # noqa: N802
        name = self.renames.get(node.id, node.id)
        return ast.Name(id=name, ctx=ast.Load()) if EXPRESSION_NAMES.match(name) else _unknown()

    def visit_Call(self, node: ast.Call) -> ast.AST:  # noqa: N802
        name = _name(node)
        if _OTHER_PLATFORM_CALL.match(name):
            return _constant(False)
        if name in ("is_cuda", "is_cuda_alike"):
            return _constant(True)
        argument = node.args[0] if len(node.args) == 1 else None
        number = _capability_number(argument) if argument is not None else None
        if name in _CAPABILITY_CALLS and number is not None:
            return ast.Compare(
                left=ast.Name(id="capability", ctx=ast.Load()),
                ops=[ast.Eq() if _CAPABILITY_CALLS[name] == "==" else ast.GtE()],
                comparators=[_constant(number)],
            )
        if name == "is_device_capability_family" and number is not None:
            major = ast.BinOp(
                left=ast.Name(id="capability", ctx=ast.Load()), op=ast.FloorDiv(), right=_constant(10)
            )
            return ast.Compare(left=major, ops=[ast.Eq()], comparators=[_constant(number // 10)])
        if name == "is_fa_version_supported" and isinstance(argument, ast.Constant):
            return ast.Name(id=f"fa{argument.value}_supported", ctx=ast.Load())
        if name == "get_flash_attn_version":
            return ast.Name(id="fa_version", ctx=ast.Load())
        inlined = self.inline(node) if self.inline is not None else None
        return inlined if inlined is not None else _unknown()


def _returns_chain(body: list[ast.stmt]) -> ast.expr | None:
    """A body of ``if c: return v`` steps (``else`` branches too) ending in a ``return`` as one
    conditional expression; None for any other shape (assignments, loops, ``try``)."""
    steps = [
        s for s in body
        if not isinstance(s, ast.Import | ast.ImportFrom | ast.Pass)
        and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant | ast.Call))
    ]  # fmt: skip
    if not steps:
        return None
    first, rest = steps[0], steps[1:]
    if isinstance(first, ast.Return):
        return first.value if first.value is not None else None
    if isinstance(first, ast.If):
        then = _returns_chain(first.body)
        if then is None or not isinstance(first.body[-1], ast.Return):
            return None
        otherwise = _returns_chain(first.orelse + rest) if first.orelse else _returns_chain(rest)
        return None if otherwise is None else ast.IfExp(test=first.test, body=then, orelse=otherwise)
    return None


class _Inliner:
    """Inlines the calls a backend's class method makes (``cls.f()``, a module function, one the
    function imports itself) up to a depth; what it cannot read is ``unknown``."""

    def __init__(self, resolver: _Resolver, depth: int = 4) -> None:
        self.resolver = resolver
        self.depth = depth

    def _module_function(self, path: str, name: str) -> tuple[str, ast.FunctionDef] | None:
        if path not in self.resolver.sources:
            return None
        for statement in ast.parse(self.resolver.sources[path]).body:
            if isinstance(statement, ast.FunctionDef) and statement.name == name:
                return path, statement
        return None

    def function(
        self, call: ast.Call, path: str, owner: ast.ClassDef | None, local: dict[str, str]
    ) -> tuple[str, ast.FunctionDef] | None:
        name = _name(call)
        receiver = ast.unparse(call.func.value) if isinstance(call.func, ast.Attribute) else ""
        if receiver in ("cls", "self"):
            return self.resolver.method(path, owner, name) if owner is not None else None
        if receiver:
            return None
        for candidate in (local.get(name), self.resolver.imports(path).get(name), path):
            found = self._module_function(candidate, name) if candidate else None
            if found is not None:
                return found
        return None

    def expression(
        self, function: tuple[str, ast.FunctionDef], owner: ast.ClassDef | None, depth: int = 0
    ) -> str:
        """The function's returned expression, normalized (``unknown`` where it cannot be read)."""
        path, node = function
        chain = _returns_chain(node.body)
        if chain is None or depth >= self.depth:
            return "unknown"
        local = {
            alias.asname or alias.name: statement.module.replace(".", "/") + ".py"
            for statement in ast.walk(node)
            if isinstance(statement, ast.ImportFrom) and statement.module and statement.level == 0
            for alias in statement.names
        }

        def inline(call: ast.Call) -> ast.expr | None:
            found = self.function(call, path, owner, local)
            if found is None:
                return None
            return ast.parse(self.expression(found, owner, depth + 1), mode="eval").body

        normalized = _Normalize(inline).visit(ast.parse(ast.unparse(chain), mode="eval").body)
        return ast.unparse(normalized)


def _impl_sink_rule(checks: list[Check], impl: tuple[str, ast.ClassDef]) -> tuple[str, int, str] | None:
    """What the implementation's constructor requires of attention sinks (0.10: 'Sinks are only
    supported in FlashAttention 3'): the negated failing condition of its check, normalized."""
    for check in checks:
        if check.path != impl[0] or check.function != f"{impl[1].name}.__init__":
            continue
        guards = [c for c in check.conditions if re.fullmatch(r"(self\.)?sinks is not None", c)]
        if guards and check.structural and check.structural[-1].startswith("not "):
            required = check.structural[-1][4:].replace("self.vllm_flash_attn_version", "fa_version")
            normalized = ast.unparse(_Normalize().visit(ast.parse(required, mode="eval").body))
            names = {n.id for n in ast.walk(ast.parse(normalized, mode="eval")) if isinstance(n, ast.Name)}
            if names - {"unknown"}:  # a requirement of the GPU or kernel, not a shape check of the tensor
                return normalized, check.line, check.identity
    return None


def _validation_reasons(sources: dict[str, str]) -> dict[str, str]:
    """What ``validate_configuration`` (0.11+) says of each test it makes: ``supports_sink`` ->
    'sink setting not supported' (the reasons the start-up's message lists)."""
    for path in ("vllm/v1/attention/backend.py", "vllm/attention/backends/abstract.py"):
        if path not in sources:
            continue
        function = _function(ast.parse(sources[path]), "AttentionBackend.validate_configuration")
        if function is None:
            continue
        reasons: dict[str, str] = {}
        for statement in ast.walk(function):
            if not isinstance(statement, ast.If):
                continue
            tested = [_name(call) for call in ast.walk(statement.test) if isinstance(call, ast.Call)]
            appended = [
                node.args[0].value
                for inner in statement.body
                for node in ast.walk(inner)
                if isinstance(node, ast.Call) and _name(node) == "append" and node.args
                and isinstance(node.args[0], ast.Constant)
            ]  # fmt: skip
            if tested and appended and tested[0].startswith("supports_"):
                reasons.setdefault(tested[0], appended[0])
        return dict(sorted(reasons.items()))
    return {}


def _sink_rule(resolver: _Resolver, path: str, node: ast.ClassDef) -> tuple[str, int] | None:
    """The expression of the backend's ``supports_sink`` (0.11+), with its line."""
    found = resolver.method(path, node, "supports_sink")
    if found is None:
        return None
    return _Inliner(resolver).expression(found, node), found[1].lineno


def _flash_attn_version(sources: dict[str, str], release: str) -> dict[str, Any] | None:
    """The steps of ``get_flash_attn_version``: each assignment (or return) of the version with the
    conditions on its way, in the code's order, normalized; the judge runs them for the GPU."""
    for path in sorted(p for p in sources if p.endswith(("fa_utils.py", "attention/backends/utils.py"))):
        tree = ast.parse(sources[path])
        function = next(
            (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_flash_attn_version"),
            None,
        )
        if function is None:
            continue
        body = function.body
        tried = next((s for s in body if isinstance(s, ast.Try)), None)
        statements = [s for s in body if not isinstance(s, ast.Try)] + (tried.body if tried else [])
        renames = {"head_size_v": "head_size"}
        steps = []
        for statement, conditions in _paths(statements, []):
            assigned = isinstance(statement, ast.Assign) and [ast.unparse(t) for t in statement.targets] == [
                "fa_version"
            ]
            returned = isinstance(statement, ast.Return) and isinstance(statement.value, ast.Constant)
            if not (assigned or returned):
                continue
            value = statement.value
            assert value is not None
            when = " and ".join(f"({c})" for c in conditions) or "True"
            normalize = _Normalize(renames=renames)
            steps.append({
                "when": ast.unparse(normalize.visit(ast.parse(when, mode="eval").body)),
                "value": ast.unparse(_Normalize(renames=renames).visit(ast.parse(ast.unparse(value), mode="eval").body)),
                "returns": returned,
                "line": statement.lineno,
            })  # fmt: skip
        return {"steps": steps, "source": url(release, path, function.lineno)}
    return None


def _assigned_always(body: list[ast.stmt], target: str) -> bool:
    """Whether ``target`` (``x`` or ``self.x``) is assigned a value other than None by a statement at the
    top of ``body`` (not under an ``if``), and nowhere in it None."""
    top = [
        statement for statement in body
        if isinstance(statement, ast.Assign) and target in [ast.unparse(t) for t in statement.targets]
    ]  # fmt: skip
    anywhere = [
        node for node in ast.walk(ast.Module(body=body, type_ignores=[]))
        if isinstance(node, ast.Assign) and target in [ast.unparse(t) for t in node.targets]
    ]  # fmt: skip
    none = any(_may_be_none(node.value) for node in anywhere)
    return bool(top) and not none and len(anywhere) == len(top)


def _may_be_none(value: ast.expr) -> bool:
    """``None``, or a conditional expression one of whose branches may be None."""
    if isinstance(value, ast.Constant):
        return value.value is None
    if isinstance(value, ast.IfExp):
        return _may_be_none(value.body) or _may_be_none(value.orelse)
    return False


def _attention_kwargs(sources: dict[str, str]) -> dict[str, dict[str, list[str]]]:
    """Per keyword of the attention layer that changes which backend can run it (``sinks``,
    ``alibi_slopes``), the model modules whose classes pass it: ``always`` where the value is set
    unconditionally (gpt-oss's ``self.sinks = torch.nn.Parameter(...)``), ``conditional`` where it may be
    None (Falcon's ALiBi only with ``alibi: true``), which the judge leaves undecided."""
    found: dict[str, dict[str, set[str]]] = {
        name: {"always": set(), "conditional": set()} for name in ("sinks", "alibi_slopes")
    }
    for path, text in sources.items():
        if not path.startswith("vllm/model_executor/models/") or not ("sinks" in text or "alibi" in text):
            continue
        module = PurePosixPath(path).stem
        for owner in ast.walk(ast.parse(text)):
            if not isinstance(owner, ast.ClassDef):
                continue
            constructor = _method(owner, "__init__")
            for function in (s for s in owner.body if isinstance(s, ast.FunctionDef)):
                for node in ast.walk(function):
                    if not (isinstance(node, ast.Call) and _name(node) in ("Attention", "PagedAttention")):
                        continue
                    for keyword in node.keywords:
                        value = keyword.value
                        if keyword.arg not in found or (
                            isinstance(value, ast.Constant) and value.value is None
                        ):
                            continue
                        target = ast.unparse(value)
                        always = (
                            _assigned_always(constructor.body, target)
                            if target.startswith("self.") and constructor is not None
                            else _assigned_always(function.body, target)
                        )
                        found[keyword.arg]["always" if always else "conditional"].add(module)
    return {
        name: {
            kind: sorted(modules - (groups["always"] if kind == "conditional" else set()))
            for kind, modules in groups.items()
        }
        for name, groups in found.items()
    }


def _backend_setting(sources: dict[str, str]) -> dict[str, bool]:
    """How a backend is named: the engine argument ``attention_backend`` (0.14+), the variable
    ``VLLM_ATTENTION_BACKEND`` (read until 0.14)."""
    arguments = sources.get("vllm/engine/arg_utils.py", "")
    reads_variable = any(
        "VLLM_ATTENTION_BACKEND" in text
        for path, text in sources.items()
        if path in ("vllm/envs.py", "vllm/attention/selector.py", "vllm/config/attention.py")
    )
    return {
        "argument": bool(re.search(r"^\s+attention_backend:", arguments, re.MULTILINE)),
        "variable": reads_variable,
    }


# --------------------------------------------------------------------------------------------
# regenerating vllm_attention.json alone
# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Rewrite lmi_config/data/vllm_attention.json only, for the versions the catalogue lists (each with
    the release read for it), from the same archives and readers ``gen_vllm_checks.py`` uses; the
    catalogue itself is left as it is."""
    import argparse
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import gen_vllm_checks as checks_generator
    import gen_vllm_engine_args as engine_args
    from vllm_check_reader import read_checks

    parser = argparse.ArgumentParser(description=main.__doc__.splitlines()[0] if main.__doc__ else None)
    parser.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "lmi-config" / "vllm"))
    parser.add_argument("--index-url", default=engine_args.DEFAULT_INDEX)
    arguments = parser.parse_args(argv)
    document = checks_generator.read_catalogue()
    facts: dict[str, dict[str, Any]] = {}
    for release, sources in checks_generator.release_sources(
        document, arguments.cache_dir, arguments.index_url
    ):
        found, _ = read_checks(sources)
        facts[release] = read_attention(sources, release, found)
        engine_args.log(f"vllm {release}: attention facts read")
    checks_generator.ATTENTION.write_text(
        checks_generator.per_version_text(checks_generator.ATTENTION_SOURCE, facts, document),
        encoding="utf-8",
    )
    print(f"wrote {checks_generator.ATTENTION.relative_to(checks_generator.REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
