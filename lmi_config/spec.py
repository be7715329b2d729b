"""The deployment spec: a small YAML file that ``render`` (and later ``deploy``) turns into a
configuration. Modelled with pydantic; errors point at the YAML line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from lmi_config.configfile.text import yaml_nesting_bound
from lmi_config.errors import SpecError as SpecError
from lmi_config.spec_deploy import OptionValue, SpecDeploy

AUTO = "auto"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class SpecWorkload(BaseModel):
    """The requests `auto` is ranked for (the defaults are `plan`'s)."""

    model_config = ConfigDict(extra="forbid")

    input_tokens: int = Field(default=1024, ge=1, description="Input tokens per request.")
    output_tokens: int = Field(default=256, ge=1, description="Output tokens per request.")
    concurrency: int | None = Field(
        default=None,
        ge=1,
        description="Requests in flight per model copy (default: every sequence slot busy).",
    )
    request_rate: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description="Requests per second arriving at the instance (instead of a concurrency).",
    )
    max_ttft_ms: float | None = Field(
        default=None, gt=0, description="Longest acceptable time to first token."
    )
    max_tpot_ms: float | None = Field(
        default=None, gt=0, description="Longest acceptable time per output token."
    )


class Spec(BaseModel):
    """What to serve, where, and with which backend."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model: str = Field(
        description="Hugging Face id, s3:// prefix or local directory of the model (becomes option.model_id)."
    )
    model_architecture: str | None = Field(
        default=None,
        description="Catalog id or local directory with config.json, when `model` is an s3:// prefix or a private id.",
    )
    instance: str | None = Field(
        default=None, description="Instance type, e.g. ml.inf2.24xlarge (the ml. prefix is optional)."
    )
    backend: str | None = Field(
        default=None,
        description="vllm, tensorrt-llm, lmi-dist, transformers-neuronx (tnx), neuronx-distributed (nxdi), huggingface. Default: from the instance.",
    )
    lmi_version: str | None = Field(
        default=None,
        description="DJL / LMI version (0.30.0, v12) or an image tag; default: the backend's newest image.",
    )
    options: dict[str, OptionValue] = Field(
        default_factory=dict,
        description="Options by canonical name; the option. prefix is optional. tensor_parallel_degree, batch and sequence length may be `auto`.",
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Extra environment variables (env and json outputs)."
    )
    files: list[str] = Field(
        default_factory=list,
        description="deploy: files uploaded beside serving.properties (model.py, requirements.txt), relative to the spec file.",
    )
    format: Literal["properties", "env", "json"] | None = Field(
        default=None, description="Output format (default: properties)."
    )
    objective: Literal["throughput", "latency", "cost"] = Field(
        default="throughput",
        description="What `auto` optimizes for the workload: throughput (output tokens/s per instance), latency (time per output token) or cost (dollars per million output tokens).",
    )
    workload: SpecWorkload | None = Field(
        default=None,
        description="The requests `auto` is ranked for (default: 1024 input + 256 output tokens).",
    )
    deploy: SpecDeploy | None = Field(
        default=None,
        description="deploy only: VPC and network isolation, KMS keys, data capture, asynchronous inference "
        "and scaling, inference components, blue/green updates (render ignores it).",
    )
    # where each deploy value was written ("spec.yaml:12" or "--subnet"), for refusals
    _origins: dict[str, str] = PrivateAttr(default_factory=dict)

    def origin(self, key: str) -> str:
        """``spec.yaml:12: deploy.network.isolation`` (or ``--network-isolation``) for a deploy key;
        a key inside a list is named by its nearest written parent."""
        candidates = [*_parents(key), *sorted(item for item in self._origins if item.startswith(key + "."))]
        for candidate in candidates:
            if candidate in self._origins:
                written = self._origins[candidate]
                return written if written.startswith(("--", "settings[")) else f"{written}: {key}"
        return key

    @field_validator("model", "instance", "backend", "lmi_version", "model_architecture")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        if value is not None and _CONTROL.search(value):
            raise ValueError("contains a newline or control character")
        return value.strip() if value is not None else None

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", name):
                raise ValueError(
                    f"{name!r} is not a valid environment variable name ([a-zA-Z_][a-zA-Z0-9_]*)"
                )
        return value


def _parents(key: str) -> list[str]:
    """``deploy.a.b`` → ``deploy.a.b``, ``deploy.a``, ``deploy``."""
    parts = key.split(".")
    return [".".join(parts[:end]) for end in range(len(parts), 0, -1)]


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the spec, for editors."""
    schema = Spec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "lmi-config deployment spec"
    return schema


def _line_of(document: Any, location: tuple[Any, ...]) -> int | None:
    """The 1-based line of a YAML node at a pydantic error location."""
    node = document
    line = node.start_mark.line + 1 if node is not None else None
    for part in location:
        if node is None:
            break
        if (
            hasattr(node, "value")
            and isinstance(node.value, list)
            and node.value
            and isinstance(node.value[0], tuple)
        ):
            match = next(
                ((key, value) for key, value in node.value if getattr(key, "value", None) == part), None
            )
            if match is None:
                break
            line = match[0].start_mark.line + 1
            node = match[1]
        elif (
            hasattr(node, "value")
            and isinstance(node.value, list)
            and isinstance(part, int)
            and part < len(node.value)
        ):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


MAX_YAML_DEPTH = 32  # a spec is 2-4 levels deep; PyYAML's composer recurses per level
MAX_YAML_NODES = 100_000  # after aliases are expanded: "billion laughs" stops here, not in memory


def load_spec(path: Path) -> Spec:
    """Read and validate a spec file; every problem becomes a :class:`SpecError` with the line."""
    from lmi_config.io import InputError, read_bounded

    try:
        raw = read_bounded(path)
    except InputError as error:
        raise SpecError(str(error)) from None
    if b"\x00" in raw:
        raise SpecError(f"{path}: binary file (contains a NUL byte); a spec is a YAML text file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SpecError(f"{path}: not UTF-8 text (byte {error.start}); save the spec as UTF-8") from None
    return parse_spec_text(text, str(path))


def parse_spec_text(text: str, name: str) -> Spec:
    """Parse and validate YAML spec text; :class:`SpecError` (naming ``name`` and the line) otherwise.

    Nesting depth and the size after alias expansion are checked on the event stream first,
    so neither a deeply nested document nor a "billion laughs" of aliases is ever built.
    """
    import yaml  # only on the render path

    depth, line = yaml_nesting_bound(text)  # ours, before any parser: the same with every PyYAML
    if depth > MAX_YAML_DEPTH:
        raise SpecError(
            f"{name}:{line}: nested more than {MAX_YAML_DEPTH} levels deep; a spec is a flat mapping of a few fields"
        )
    try:
        _check_yaml_shape(text, name)
        data = yaml.safe_load(text)
        document = yaml.compose(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or error
        raise SpecError(f"{name}{where}: not valid YAML ({_one_line(str(problem))})") from None
    except SpecError:
        raise
    except ValueError as error:  # an integer of more than 4300 digits
        long_number = re.search(r"[0-9_]{4000,}", text)
        if long_number is None:
            raise SpecError(f"{name}: unusable value ({_one_line(str(error))})") from None
        line = text.count("\n", 0, long_number.start()) + 1
        raise SpecError(
            f"{name}:{line}: a number of {len(long_number.group())} digits; no option takes one past "
            "2147483647 (the container's integers) — write the value you mean"
        ) from None
    if not isinstance(data, dict):
        raise SpecError(f"{name}: a spec is a YAML mapping with at least `model:` (see `lmi-config schema`)")
    _refuse_duplicate_keys(document, name)
    return validate_spec(data, name, document)


def option_name(key: str) -> str:
    """An option's name without the optional ``option.`` prefix: ``max_model_len`` and
    ``option.max_model_len`` are one option."""
    return key[len("option.") :] if key.startswith("option.") else key


def _refuse_duplicate_keys(document: Any, name: str) -> None:
    """A key written twice in one mapping (or an option written with and without ``option.``) is a
    :class:`SpecError` naming both lines: YAML keeps the last silently, and which one the user
    meant is theirs to say."""
    import yaml

    pending = [(document, False)]
    while pending:  # iterative: the nesting is bounded already, but a walk needs no stack
        node, is_options = pending.pop()
        if isinstance(node, yaml.SequenceNode):
            pending.extend((item, False) for item in node.value)
        if not isinstance(node, yaml.MappingNode):
            continue
        seen: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = str(getattr(key_node, "value", ""))
            spelled = option_name(key) if is_options else key
            first = seen.get(spelled)
            if first is not None:
                raise SpecError(
                    f"{name}:{key_node.start_mark.line + 1}: {key} is written twice (also as {first.value} on "
                    f"line {first.start_mark.line + 1}); YAML would keep only the last, silently — keep one of them"
                )
            seen[spelled] = key_node
            pending.append((value_node, node is document and key == "options"))


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _line_of_event(event: Any) -> str:
    mark = getattr(event, "start_mark", None)
    return f":{mark.line + 1}" if mark is not None else ""


def _check_yaml_shape(text: str, name: str) -> None:
    """Refuse YAML nested deeper than ``MAX_YAML_DEPTH`` or expanding to more than ``MAX_YAML_NODES``
    nodes through aliases, reading only the parser's events (an iterative state machine)."""
    import yaml

    anchored: dict[str, int] = {}  # anchor -> nodes it expands to
    frames: list[list[Any]] = [[None, 0]]  # per open collection: [anchor, nodes so far]
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when built with it: 20x faster
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.CollectionStartEvent):
            if len(frames) > MAX_YAML_DEPTH:
                raise SpecError(
                    f"{name}{_line_of_event(event)}: nested more than {MAX_YAML_DEPTH} levels deep; "
                    "a spec is a flat mapping of a few fields"
                )
            frames.append([event.anchor, 1])
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            anchor, size = frames.pop()
        elif isinstance(event, yaml.ScalarEvent):
            anchor, size = event.anchor, 1
        elif isinstance(event, yaml.AliasEvent):
            anchor, size = None, anchored.get(event.anchor or "", 1)
        else:
            continue
        if anchor is not None:
            anchored[anchor] = size
        frames[-1][1] += size
        if frames[-1][1] > MAX_YAML_NODES:
            raise SpecError(
                f"{name}{_line_of_event(event)}: expands to more than {MAX_YAML_NODES} values through "
                "YAML aliases (&anchor / *alias); write the values out"
            )


def validate_spec(data: dict[str, Any], name: str, document: Any = None) -> Spec:
    """Validate a dict as a spec; errors name ``name`` and (with a YAML document) the line."""
    try:
        spec = Spec.model_validate(data)
    except ValidationError as error:
        problems = []
        for item in error.errors():
            location = tuple(item["loc"])
            line = _line_of(document, location) if document is not None else None
            field = ".".join(str(part) for part in location) or "spec"
            message = item["msg"]
            if item["type"] == "extra_forbidden":
                message = "unknown field; the fields are " + ", ".join(_fields_at(location[:-1]))
            elif item["type"] == "missing":
                message = "required field is missing"
            problems.append(f"{name}{f':{line}' if line else ''}: {field}: {message}")
        raise SpecError("\n".join(problems)) from None
    if document is not None:
        spec._origins = _deploy_origins(document, name)
    return spec


def _fields_at(location: tuple[Any, ...]) -> list[str]:
    """The field names (as written in YAML) of the model at a pydantic error location."""
    from typing import get_args

    model: Any = Spec
    for part in location:
        if isinstance(part, int):
            continue
        field = next((item for key, item in model.model_fields.items() if part in (key, item.alias)), None)
        if field is None:
            break
        candidates = [
            kind
            for kind in (
                field.annotation,
                *get_args(field.annotation),
                *(inner for outer in get_args(field.annotation) for inner in get_args(outer)),
            )
            if isinstance(kind, type) and issubclass(kind, BaseModel)
        ]
        if not candidates:
            break
        model = candidates[0]
    return [item.alias or key for key, item in model.model_fields.items()]


def _deploy_origins(document: Any, name: str) -> dict[str, str]:
    """``deploy.network.subnets`` → ``spec.yaml:7`` for every key and list item under ``deploy:``."""
    import yaml

    found: dict[str, str] = {}
    top = next(
        (
            (key, value)
            for key, value in getattr(document, "value", [])
            if isinstance(document, yaml.MappingNode) and getattr(key, "value", None) == "deploy"
        ),
        None,
    )
    if top is None:
        return found
    pending: list[tuple[str, Any, Any]] = [("deploy", top[0], top[1])]
    while pending:
        path, key_node, node = pending.pop()
        found[path] = f"{name}:{key_node.start_mark.line + 1}"
        if isinstance(node, yaml.MappingNode):
            pending.extend((f"{path}.{child.value}", child, value) for child, value in node.value)
        elif isinstance(node, yaml.SequenceNode):
            pending.extend((f"{path}.{index}", item, item) for index, item in enumerate(node.value))
    return found


def _written_near(key: str, origins: dict[str, str], flags: dict[str, str], name: str) -> str:
    """Where ``key`` (or, for a missing one, the nearest value of its section) was written."""
    given = {f"deploy.{item}": flag for item, flag in flags.items()}
    for parent in _parents(key):
        if parent in origins:
            return origins[parent]
        near = sorted(item for item in given if item.startswith(parent + "."))
        if near:
            return given[near[0]]
    return name


def with_deploy_settings(spec: Spec, values: dict[str, Any], flags: dict[str, str], name: str) -> Spec:
    """The spec with deploy settings given on the command line (or by the API) over its own.

    ``values`` maps keys under ``deploy`` (``network.subnets``, ``async.output``) to values, each
    replacing the spec's; ``flags`` names the flag each came from (``--subnet``), which refusals
    name. Raises :class:`SpecError` naming the flag (or the spec's line) and what is wrong.
    """
    if not values:
        return spec
    data = spec.model_dump(by_alias=True)
    deploy = dict(data.get("deploy") or {})
    for dotted, value in values.items():
        node = deploy
        parts = dotted.split(".")
        for part in parts[:-1]:
            node[part] = dict(node.get(part) or {})
            node = node[part]
        node[parts[-1]] = value
    data["deploy"] = deploy
    origins = {**spec._origins, **{f"deploy.{key}": flag for key, flag in flags.items()}}
    try:
        merged = Spec.model_validate(data)
    except ValidationError as error:
        problems = []
        for item in error.errors():
            key = ".".join(str(part) for part in item["loc"])
            where = _written_near(key, origins, flags, name)
            message = "required with the others given" if item["type"] == "missing" else item["msg"]
            problems.append(f"{where}: {key}: {message}")
        raise SpecError("\n".join(problems)) from None
    merged._origins = origins
    return merged


def build_spec(
    spec_file: str | None,
    *,
    overrides: dict[str, str | None] | None = None,
    settings: list[str] | tuple[str, ...] = (),
    env_settings: list[str] | tuple[str, ...] = (),
) -> tuple[Spec, str]:
    """A spec from a file and/or command-line values; returns (spec, the name errors use).

    ``overrides`` holds fields (model, instance, backend …; None = not given); ``settings`` are
    ``KEY=VALUE`` options and ``env_settings`` ``NAME=VALUE`` variables. Raises :class:`SpecError`.
    """
    given = {field: value for field, value in (overrides or {}).items() if value is not None}
    if spec_file:
        spec, name = load_spec(Path(spec_file)), spec_file
    elif given.get("model"):
        spec, name = validate_spec({"model": given["model"]}, "command line"), "command line"
    else:
        raise SpecError("give a SPEC.yaml or at least --model (see `lmi-config render --help`)")
    options = dict(spec.options)
    for item in settings:
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            raise SpecError(f"--set {item!r}: write KEY=VALUE")
        # --set replaces the option however the spec spells it (with or without option.)
        for existing in [name for name in options if option_name(name) == option_name(key.strip())]:
            del options[existing]
        options[key.strip()] = value
    env = dict(spec.env)
    for item in env_settings:
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            raise SpecError(f"--env {item!r}: write NAME=VALUE")
        env[key.strip()] = value
    merged = spec.model_dump()
    merged.update(given)
    merged["options"] = options
    merged["env"] = env
    built = validate_spec(merged, name)
    built._origins = dict(spec._origins)
    return built, name
