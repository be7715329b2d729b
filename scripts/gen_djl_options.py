#!/usr/bin/env python3
"""Generate lmi_config/data/djl_properties.json from a git clone of deepjavalibrary/djl-serving.

For every release branch (``0.25.0-dlc`` ... ``0.35.1-dlc``, ``0.36.0-lmiNN-dlc``, ``master``) it reads
the sources with ``git ls-tree`` / ``git cat-file`` -- nothing is checked out, imported or run -- and
records:

- every pydantic class in ``engines/python/setup/djl_python/properties_manager/``: its fields (type
  annotation, default, allowed values of Enum and Literal annotations, aliases), its ``extra`` policy,
  and the keys its methods read from ``__pydantic_extra__``;
- every validator (``field_validator``, ``model_validator``, ``validator``, ``root_validator``) and
  every other method that raises: the fields it reads and each outcome -- the error it raises or the
  warning it logs (with the value it coerces to), the conditions around it, and where the code says
  so, the values that pass (``x not in LIST``, an ``if x == "a": return`` chain, ``Enum(x)``);
- the handler modules (a top-level ``handle`` function) and which module instantiates which class;
- what ``LmiConfigRecommender.java`` reads, writes and assigns, with the ``if`` conditions around
  each, found with regular expressions over the Java text (string literals and comments masked).

Each entry names the branch range where it is identical (``first`` .. ``last``) and a ``source`` URL
at the commit of its first branch. Stdlib only; the output is deterministic.

    python scripts/gen_djl_options.py /work/.mirror/deepjavalibrary+djl-serving/repo
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
GITHUB = "https://github.com/deepjavalibrary/djl-serving"
PYTHON_ROOT = "engines/python/setup/djl_python"
PROPERTIES_DIR = f"{PYTHON_ROOT}/properties_manager"
RECOMMENDER = "wlm/src/main/java/ai/djl/serving/wlm/LmiConfigRecommender.java"
BRANCH_PATTERN = re.compile(r"^(?P<djl>\d+\.\d+\.\d+)-(?:lmi(?P<lmi>\d+)-)?dlc$")
VALIDATOR_DECORATORS = ("field_validator", "model_validator", "validator", "root_validator")
WARNING_CALLS = ("warning", "warn")
# lmi-config's backend groups (data/backends.json) for each class; our vocabulary, not djl-serving's.
CLASS_BACKENDS = {
    "Properties": ["common"],
    "HuggingFaceProperties": ["huggingface"],
    "SchedulerRbProperties": ["huggingface"],
    "VllmRbProperties": ["vllm"],
    "LmiDistRbProperties": ["lmi-dist"],
    "TensorRtLlmProperties": ["tensorrt-llm"],
    "TransformerNeuronXProperties": ["transformers-neuronx", "nxdi"],
    "StableDiffusionNeuronXProperties": ["transformers-neuronx"],
    "DeepSpeedProperties": ["deepspeed"],
}


def log(message: str) -> None:
    """Progress on stderr (stdout carries the summary)."""
    print(message, file=sys.stderr, flush=True)


# --- git --------------------------------------------------------------------------------------


class Git:
    """Read-only access to one repository (bare or not) through git plumbing."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._blobs: dict[str, str] = {}
        self._reader: subprocess.Popen[bytes] | None = None

    def run(self, *args: str) -> str:
        """Output of ``git <args>``."""
        return subprocess.run(
            ["git", "-C", str(self.path), *args], check=True, capture_output=True, text=True
        ).stdout

    def branches(self) -> dict[str, str]:
        """Branch name -> commit, from refs/heads (a mirror) or refs/remotes/origin (a clone)."""
        found: dict[str, str] = {}
        for prefix in ("refs/remotes/origin/", "refs/heads/"):
            for line in self.run("for-each-ref", "--format=%(refname) %(objectname)", prefix).splitlines():
                ref, commit = line.split()
                found[ref.removeprefix(prefix)] = commit
        return found

    def tree(self, commit: str, path: str) -> dict[str, str]:
        """Path -> blob id of every file under ``path`` at ``commit``."""
        result = {}
        for line in self.run("ls-tree", "-r", commit, "--", path).splitlines():
            meta, name = line.split("\t", 1)
            kind, blob = meta.split()[1:3]
            if kind == "blob":
                result[name] = blob
        return result

    def blob(self, blob_id: str) -> str:
        """Text of one blob (cached: most files are identical on many branches)."""
        if blob_id not in self._blobs:
            if self._reader is None:
                self._reader = subprocess.Popen(
                    ["git", "-C", str(self.path), "cat-file", "--batch"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                )
            assert self._reader.stdin is not None and self._reader.stdout is not None
            self._reader.stdin.write(blob_id.encode() + b"\n")
            self._reader.stdin.flush()
            size = int(self._reader.stdout.readline().split()[2])
            data = self._reader.stdout.read(size + 1)[:-1]
            self._blobs[blob_id] = data.decode("utf-8", errors="replace")
        return self._blobs[blob_id]

    def close(self) -> None:
        """Stop the cat-file process."""
        if self._reader is not None:
            assert self._reader.stdin is not None
            self._reader.stdin.close()
            self._reader.wait()


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def select_releases(git: Git, releases_json: dict, min_version: str) -> list[dict]:
    """Release branches at or after ``min_version`` in release order, ``master`` last."""
    known = [(row["djl"], row.get("lmi")) for row in releases_json["releases"]]
    rows = []
    for branch, commit in git.branches().items():
        match = BRANCH_PATTERN.match(branch)
        if branch == "master":
            djl = _gradle_version(git, commit)
            rows.append({"branch": branch, "commit": commit, "djl": djl, "lmi": None, "order": (9999,)})
            continue
        if not match or version_tuple(match["djl"]) < version_tuple(min_version):
            continue
        djl, lmi = match["djl"], match["lmi"]
        if lmi is None:  # 0.NN.M-dlc: the LMI number of that DJL version (or of 0.NN.0)
            same = [k[1] for k in known if k[0] == djl] or [
                k[1] for k in known if k[0].rsplit(".", 1)[0] == djl.rsplit(".", 1)[0]
            ]
            lmi = same[0] if same else None
        row = {"branch": branch, "commit": commit, "djl": djl, "lmi": lmi}
        row["in_releases_json"] = (djl, lmi) in known
        row["order"] = (*version_tuple(djl), int(match["lmi"] or 0))
        rows.append(row)
    rows.sort(key=lambda row: row["order"])
    for row in rows:
        del row["order"]
        row.setdefault("in_releases_json", False)
    return rows


def _gradle_version(git: Git, commit: str) -> str | None:
    blob = git.tree(commit, "gradle/libs.versions.toml").get("gradle/libs.versions.toml")
    found = re.search(r'^serving\s*=\s*"([^"]+)"', git.blob(blob), re.M) if blob else None
    return found.group(1) if found else None


# --- static evaluation of module constants ------------------------------------------------------


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


# --- validators ---------------------------------------------------------------------------------


def decorator_info(function: ast.FunctionDef) -> tuple[str, list[str], str | None] | None:
    """(decorator name, fields, mode) of a pydantic validator, else None."""
    for decorator in function.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        target = call.func if call else decorator
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name not in VALIDATOR_DECORATORS:
            continue
        fields = [arg.value for arg in (call.args if call else []) if isinstance(arg, ast.Constant)]
        mode = None
        for keyword in call.keywords if call else []:
            if keyword.arg == "mode" and isinstance(keyword.value, ast.Constant):
                mode = keyword.value.value
            elif keyword.arg == "pre" and getattr(keyword.value, "value", False) is True:
                mode = "before"
        if name == "root_validator" and mode is None:
            mode = "after"
        return name, fields, mode
    return None


class OutcomeFinder:
    """Walks one function body and collects what it raises and what it warns about."""

    def __init__(self, scope: Scope, methods: dict[str, ast.FunctionDef], subjects: dict[str, str], known: set[str]) -> None:
        self.scope = scope
        self.methods = methods
        self.subjects = subjects  # local name -> the field it holds
        self.known = known  # field names of the class
        self.lowered: set[str] = set()
        self.local_functions: dict[str, ast.FunctionDef] = {}
        self.active: tuple[str, ...] = ()
        self.outcomes: list[dict[str, Any]] = []

    def walk(self, statements: list[ast.stmt], conditions: list[str], preceding: list[ast.stmt], via: str | None = None) -> None:
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

    def _walk_handler(self, tried: ast.Try, handler: ast.ExceptHandler, conditions: list[str], preceding: list[ast.stmt], via: str | None) -> None:
        start = len(self.outcomes)
        self.walk(handler.body, conditions, preceding, via)
        enum_values = self._enum_called(tried.body)
        for outcome in self.outcomes[start:]:
            if enum_values is not None and outcome["allowed_values"] is None:
                outcome["allowed_values"], outcome["subject"] = enum_values

    def _enum_called(self, statements: list[ast.stmt]) -> tuple[list, str | None] | None:
        # `try: Enum(value) except ValueError: raise ...`: the Enum's values pass
        for node in ast.walk(ast.Module(body=statements, type_ignores=[])):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.scope.enums:
                subject = self._subject(node.args[0] if node.args else None)
                return sorted((plain(m) for m in self.scope.enums[node.func.id].values()), key=str), subject
        return None

    def _note_lowering(self, statement: ast.stmt) -> None:
        # `x = x.lower()` before a check: the check is case-insensitive
        if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name):
            if ast.unparse(statement.value).endswith(".lower()"):
                self.lowered.add(statement.targets[0].id)

    def _error(self, statement: ast.Raise | ast.Assert, preceding: list[ast.stmt], conditions: list[str], via: str | None) -> None:
        if isinstance(statement, ast.Assert):
            outcome = {"kind": "error", "exception": "AssertionError", "message": message_text(statement.msg, self.scope)}
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

    def _calls(self, statement: ast.stmt, block: list[ast.stmt], preceding: list[ast.stmt], conditions: list[str], via: str | None) -> None:
        for node in ast.walk(statement):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Attribute) and node.func.attr in WARNING_CALLS:
                outcome = {"kind": "warning", "message": message_text(node.args[0] if node.args else None, self.scope)}
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

    def _add(self, outcome: dict[str, Any], preceding: list[ast.stmt], conditions: list[str], via: str | None) -> None:
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


def _allowed_values(conditions: list[str], preceding: list[ast.stmt], scope: Scope) -> tuple[list | None, str | None]:
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
    if isinstance(test, ast.Compare) and isinstance(test.ops[0], ast.NotIn) and isinstance(test.left, ast.Name):
        listed = scope.evaluate(test.comparators[0])
        if isinstance(listed, list | dict):
            values, name = list(listed), test.left.id
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


# --- classes ----------------------------------------------------------------------------------


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
    entry: dict[str, Any] = {"annotation": ast.unparse(statement.annotation), "allowed": annotation_values(statement.annotation, scope)}
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
    for node in ast.walk(expression) if expression is not None else ():
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            if re.search(r"(environ\.get|getenv|get_env_or_default)$", ast.unparse(node.func)):
                return str(node.args[0].value)
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
                if isinstance(inner, ast.Assign) and ast.unparse(inner.targets[0]) in ("extra", "allow_population_by_field_name"):
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
            entry = found.setdefault(key, {"methods": [], "default": None, "conversion": None, "line": child.lineno})
            if method.name not in entry["methods"]:
                entry["methods"].append(method.name)
            entry["default"] = entry["default"] if default is None else default
            entry["conversion"] = entry["conversion"] or _conversion(read, parents)
    return found


def _extra_read(node: ast.AST) -> tuple[str | None, Any, ast.AST | None]:
    if isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("__pydantic_extra__"):
        if isinstance(node.slice, ast.Constant):
            return str(node.slice.value), None, node
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        if ast.unparse(node.func.value).endswith("__pydantic_extra__") and node.args and isinstance(node.args[0], ast.Constant):
            default = node.args[1].value if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) else None
            return str(node.args[0].value), default, node
    if isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In) and isinstance(node.left, ast.Constant):
        if ast.unparse(node.comparators[0]).endswith("__pydantic_extra__"):
            return str(node.left.value), None, None
    return None, None, None


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
    return {item.name: item for item in node.body if isinstance(item, ast.FunctionDef)}


def validators_of(node: ast.ClassDef, scope: Scope, known_fields: set[str]) -> dict[str, dict[str, Any]]:
    """Validators of one class, and the other methods that raise, with their outcomes."""
    methods = class_methods(node)
    called = {
        call.func.attr
        for method in methods.values() if decorator_info(method)
        for call in ast.walk(method) if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
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


# --- one branch ---------------------------------------------------------------------------------


def module_name(path: str) -> str:
    return path.removeprefix("engines/python/setup/").removesuffix(".py").replace("/", ".")


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


def branch_facts(git: Git, release: dict) -> dict[str, dict[tuple, dict[str, Any]]]:
    """Every fact of one branch, keyed by identity, each with ``path`` and ``line`` for its source."""
    files = git.tree(release["commit"], PYTHON_ROOT)
    trees = {
        path: ast.parse(git.blob(blob), filename=path)
        for path, blob in sorted(files.items())
        if path.startswith(PROPERTIES_DIR + "/") and path.endswith(".py")
    }
    scope = load_scope(trees)
    models = properties_classes(trees)
    facts: dict[str, dict[tuple, dict[str, Any]]] = {"classes": {}, "fields": {}, "validators": {}, "extra_keys": {}}
    field_names = _field_names(models)
    for name, (path, node) in models.items():
        config = effective_config(name, models)
        facts["classes"][(name,)] = {
            "class": name,
            "module": module_name(path),
            "bases": [ast.unparse(base) for base in node.bases],
            "extra": config.get("extra", "ignore"),  # pydantic's default
            "extra_declared_here": "extra" in class_config(node),
            "populate_by_name": config.get("populate_by_name") == "True",
            "backends": CLASS_BACKENDS.get(name, []),
            "path": path,
            "line": node.lineno,
        }
        for statement in node.body:
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                entry = field_entry(statement, scope)
                facts["fields"][(name, statement.target.id)] = {"class": name, "field": statement.target.id, **entry, "path": path, "line": statement.lineno}
        for method, entry in validators_of(node, scope, field_names(name)).items():
            line = entry.pop("line")
            facts["validators"][(name, method)] = {"class": name, "name": method, **entry, "path": path, "line": line}
        for key, entry in extra_keys(node).items():
            facts["extra_keys"][(name, key)] = {"class": name, "key": key, **entry, "path": path}
    facts["modules"] = module_facts(git, files, set(models))
    facts.update(recommender_facts(git, release["commit"]))
    return facts


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


def _field_names(models: dict[str, tuple[str, ast.ClassDef]]):
    def names(class_name: str) -> set[str]:
        path, node = models[class_name]
        own = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
        for base in node.bases:
            base_name = ast.unparse(base).split(".")[-1]
            if base_name in models:
                own |= names(base_name)
        return own

    return names


def module_facts(git: Git, files: dict[str, str], class_names: set[str]) -> dict[tuple, dict[str, Any]]:
    """Handler modules (a top-level ``handle``) and modules that instantiate a properties class."""
    facts = {}
    for path, blob in sorted(files.items()):
        if not path.endswith(".py") or "/tests/" in path or path.startswith(PROPERTIES_DIR):
            continue
        text = git.blob(blob)
        if "def handle(" not in text and "Properties(" not in text:
            continue
        try:
            tree = ast.parse(text, filename=path)
        except SyntaxError:
            continue
        handle = next((n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == "handle"), None)
        created = sorted({
            node.func.id for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in class_names
        })
        if handle is None and not created:
            continue
        line = handle.lineno if handle else 1
        facts[(module_name(path),)] = {"module": module_name(path), "handler": handle is not None, "instantiates": created, "path": path, "line": line}
    return facts


# --- the Java recommender -----------------------------------------------------------------------

JAVA_METHOD = re.compile(r"(?:(?:public|private|protected|static|final)\s+)+[\w<>\[\],.? ]+?\s+(\w+)\s*\([^)]*\)\s*(?:throws [\w., ]+)?\{")


def mask_java(text: str) -> str:
    """Comments and the inside of string literals blanked out, offsets kept."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'', re.S)

    def blank(match: re.Match[str]) -> str:
        token = match.group()
        if token[0] in "\"'":
            return token[0] + " " * (len(token) - 2) + token[-1]
        return re.sub(r"[^\n]", " ", token)

    return pattern.sub(blank, text)


def matching(masked: str, start: int, opening: str, closing: str) -> int:
    """Index just past the bracket that closes the one at ``start``."""
    depth = 0
    for index in range(start, len(masked)):
        depth += {opening: 1, closing: -1}.get(masked[index], 0)
        if depth == 0:
            return index + 1
    raise ValueError(f"unbalanced {opening} at {start}")


def java_blocks(text: str, masked: str, start: int, end: int, conditions: list[str]) -> Iterator[tuple[int, int, list[str]]]:
    """(start, end, conditions) of every if / else-if / else block in [start, end), nested ones too."""
    position = start
    for found in re.finditer(r"\bif\s*\(", masked[start:end]):
        at = start + found.start()
        if at < position:
            continue
        chain: list[str] = []
        cursor = at
        while True:
            parenthesis = masked.index("(", cursor)
            close = matching(masked, parenthesis, "(", ")")
            condition = " ".join(text[parenthesis + 1 : close - 1].split())
            block_start, block_end = _java_body(masked, close)
            yield from _with_nested(text, masked, block_start, block_end, [*conditions, *[f"!({c})" for c in chain], condition])
            chain.append(condition)
            following = re.match(r"\s*else\s+if\s*\(|\s*else\s*", masked[block_end:])
            if not following or not following.group().strip():
                break
            if "if" in following.group():
                cursor = block_end + following.group().index("if")
                continue
            else_start, else_end = _java_body(masked, block_end + following.end())
            yield from _with_nested(text, masked, else_start, else_end, [*conditions, *[f"!({c})" for c in chain]])
            block_end = else_end
            break
        position = block_end


def _java_body(masked: str, after: int) -> tuple[int, int]:
    brace = re.match(r"\s*\{", masked[after:])
    if brace:
        opening = after + brace.end() - 1
        return opening, matching(masked, opening, "{", "}")
    return after, masked.index(";", after) + 1


def _with_nested(text: str, masked: str, start: int, end: int, conditions: list[str]) -> Iterator[tuple[int, int, list[str]]]:
    yield start, end, conditions
    yield from java_blocks(text, masked, start + 1, end - 1, conditions)


JAVA_PATTERNS = {
    "writes": re.compile(r'\.setProperty\(\s*"([^"]+)"\s*,\s*(.+?)\)\s*;', re.S),
    "reads": re.compile(r'\.(getProperty|containsKey)\(\s*"([^"]+)"\s*(?:,\s*([^()]+?))?\)'),
    "environment": re.compile(r'(?:getenv|getEnvOrSystemProperty)\(\s*"([^"]+)"\s*(?:,\s*"([^"]*)")?'),
    "assignments": re.compile(r'(?<![=!<>])\b([a-z]\w*)\s*=\s*("[^"]*"|-?\d+|true|false|[^;?]+\?\s*"[^"]*"\s*:\s*"[^"]*")\s*;'),
}


def java_value(text: str) -> Any:
    """A Java literal as JSON (strings unquoted, integers as numbers), else the expression text."""
    text = " ".join(text.split())
    if re.fullmatch(r'"[^"]*"', text):
        return text[1:-1]
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return {"true": True, "false": False}.get(text, {"expression": text})


def recommender_facts(git: Git, commit: str) -> dict[str, dict[tuple, dict[str, Any]]]:
    """Per method of LmiConfigRecommender.java: property reads and writes, env reads, literal assignments."""
    blob = git.tree(commit, RECOMMENDER).get(RECOMMENDER)
    if blob is None:
        return {"recommender": {}, "recommender_maps": {}, "recommender_defaults": {}}
    text = git.blob(blob)
    masked = mask_java(text)
    methods: dict[tuple, dict[str, Any]] = {}
    for found in JAVA_METHOD.finditer(masked):
        start, end = found.end() - 1, matching(masked, found.end() - 1, "{", "}")
        blocks = list(java_blocks(text, masked, start + 1, end - 1, []))
        record: dict[str, Any] = {"method": found.group(1), "path": RECOMMENDER, "line": text.count("\n", 0, found.start()) + 1}
        for kind, pattern in JAVA_PATTERNS.items():
            # matched on the masked text (no hits in comments), values read from the real text
            record[kind] = [_java_item(kind, text, match, blocks) for match in pattern.finditer(masked, start, end)]
        if any(record[kind] for kind in JAVA_PATTERNS):
            methods[(found.group(1),)] = record
    maps = {}
    for found in re.finditer(r"Map<String, String> (\w+)\s*=\s*Map\.ofEntries\((.*?)\);", text, re.S):
        entries = dict(re.findall(r'Map\.entry\("([^"]+)",\s*"([^"]+)"\)', found.group(2)))
        line = text.count("\n", 0, found.start()) + 1
        maps[(found.group(1),)] = {"name": found.group(1), "entries": entries, "path": RECOMMENDER, "line": line}
    return {"recommender": methods, "recommender_maps": maps, "recommender_defaults": recommender_defaults(methods)}


ROLLING_BATCH_TEST = re.compile(r'^"([\w-]+)"\.equals\(rollingBatch\)(?:\s*\|\|\s*"([\w-]+)"\.equals\(rollingBatch\))*$')


def _rolling_batches(when: list[str]) -> list[str] | None:
    """``["*"]`` with no condition; the values of a plain ``"a".equals(rollingBatch) || ...`` test; else None."""
    if not when:
        return ["*"]
    if len(when) == 1 and ROLLING_BATCH_TEST.match(when[0]):
        return re.findall(r'"([\w-]+)"\.equals', when[0])
    return None  # anything else is left to the raw method records


def recommender_defaults(methods: dict[tuple, dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    """Per rolling batch: the default max_rolling_batch_size and whether mpi_mode is set, where the test is plain."""
    found: dict[tuple, dict[str, Any]] = {}
    sizes = methods.get(("setRollingBatchSize",), {"assignments": []})
    for item in (item for item in sizes["assignments"] if item["variable"] == "rollingBatchSize"):
        for rolling_batch in _rolling_batches(item["when"]) or []:
            key = ("option.max_rolling_batch_size", rolling_batch)
            found[key] = {"key": key[0], "rolling_batch": rolling_batch, "value": item["value"], "path": RECOMMENDER, "line": sizes["line"]}
    for method in methods.values():
        for item in method["writes"]:
            if item["key"] != "option.mpi_mode" or item["value"] != "true":
                continue
            for rolling_batch in _rolling_batches(item["when"]) or []:
                key = ("option.mpi_mode", rolling_batch)
                found[key] = {"key": key[0], "rolling_batch": rolling_batch, "value": "true", "path": RECOMMENDER, "line": method["line"]}
    return found


def _java_item(kind: str, text: str, match: re.Match[str], blocks: list[tuple[int, int, list[str]]]) -> dict[str, Any]:
    inside = [conditions for start, end, conditions in blocks if start <= match.start() < end]
    when = max(inside, key=len) if inside else []

    def group(index: int) -> str | None:
        return None if match.start(index) < 0 else text[match.start(index) : match.end(index)]

    if kind == "writes":
        return {"key": group(1), "value": java_value(group(2) or ""), "when": when}
    if kind == "reads":
        default = group(3)
        return {"key": group(2), "call": group(1), "default": None if default is None else java_value(default), "when": when}
    if kind == "environment":
        return {"name": group(1), "default": group(2), "when": when}
    return {"variable": group(1), "value": java_value(group(2) or ""), "when": when}


# --- ranges and output --------------------------------------------------------------------------


def compact(per_branch: list[tuple[dict, dict[tuple, dict[str, Any]]]]) -> list[dict[str, Any]]:
    """Runs of consecutive branches where an entry is identical, each with its first and last branch."""
    runs: list[dict[str, Any]] = []
    open_runs: dict[tuple, tuple[str, dict[str, Any]]] = {}
    for index, (release, facts) in enumerate(per_branch):
        for key, fact in facts.items():
            body = {k: v for k, v in fact.items() if k not in ("path", "line")}
            identity = json.dumps(body, sort_keys=True)
            previous = open_runs.get(key)
            if previous and previous[0] == identity and previous[1]["_last_index"] == index - 1:
                previous[1]["last"], previous[1]["_last_index"] = release["branch"], index
                continue
            run = {**body, "first": release["branch"], "last": release["branch"], "_last_index": index}
            run["source"] = f"{GITHUB}/blob/{release['commit']}/{fact['path']}#L{fact['line']}"
            runs.append(run)
            open_runs[key] = (identity, run)
    for run in runs:
        del run["_last_index"]
    return runs


def generate(repository: Path, releases_json: dict, min_version: str) -> dict[str, Any]:
    """The whole catalogue for the clone at ``repository``."""
    git = Git(repository)
    try:
        releases = select_releases(git, releases_json, min_version)
        collected = []
        for release in releases:
            log(f"{release['branch']} {release['commit'][:12]}")
            collected.append((release, branch_facts(git, release)))
    finally:
        git.close()
    order = {release["branch"]: index for index, release in enumerate(releases)}
    document: dict[str, Any] = {
        "source": f"generated by scripts/gen_djl_options.py from the release branches of {GITHUB} "
        f"({PROPERTIES_DIR}/*.py parsed with ast; {RECOMMENDER} read with regular expressions)",
        "releases": releases,
    }
    sort_keys = {
        "classes": ("class",), "fields": ("class", "field"), "validators": ("class", "name"),
        "extra_keys": ("class", "key"), "modules": ("module",), "recommender": ("method",),
        "recommender_maps": ("name",), "recommender_defaults": ("key", "rolling_batch"),
    }
    for kind, keys in sort_keys.items():
        entries = compact([(release, facts[kind]) for release, facts in collected])
        entries.sort(key=lambda entry, keys=keys: (*[entry[k] for k in keys], order[entry["first"]]))
        document[kind] = entries
    return document


def main(argv: list[str] | None = None) -> int:
    """Command line: the clone's path, where to write, which releases."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repository", type=Path, help="git clone (or bare mirror) of deepjavalibrary/djl-serving")
    parser.add_argument("--output", type=Path, default=REPO_ROOT / "lmi_config/data/djl_properties.json")
    parser.add_argument("--releases", type=Path, default=REPO_ROOT / "lmi_config/data/releases.json")
    parser.add_argument("--min-version", default="0.25.0", help="oldest release branch (default %(default)s)")
    arguments = parser.parse_args(argv)
    releases_json = json.loads(arguments.releases.read_text(encoding="utf-8"))
    try:
        document = generate(arguments.repository, releases_json, arguments.min_version)
    except subprocess.CalledProcessError as error:
        print(f"git failed on {arguments.repository}: {error.stderr.strip()}", file=sys.stderr)
        return 2
    text = json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    arguments.output.write_text(text, encoding="utf-8")
    print(f"wrote {arguments.output}")
    print(
        f"  {len(document['releases'])} releases, {len(document['classes'])} class entries, "
        f"{len({(f['class'], f['field']) for f in document['fields']})} fields ({len(document['fields'])} entries), "
        f"{len({(v['class'], v['name']) for v in document['validators']})} validators ({len(document['validators'])} entries), "
        f"{len(document['extra_keys'])} extra keys, {len(document['modules'])} module entries, "
        f"{len(document['recommender'])} recommender method entries"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
