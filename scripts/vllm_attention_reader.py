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
    }
