"""``render`` and ``convert``: validated serving.properties, env files and SageMaker Environment JSON.

Templates live in ``templates/`` and are rendered by jinja2 with ``StrictUndefined``; keys and
values are passed as data, already escaped for the target format, never as template source.
What is rendered is linted with the full rule set before it is written.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmi_config import __version__
from lmi_config.configfile.canonical import classify_env, env_name_for_key
from lmi_config.configfile.envfile import quote_env_value
from lmi_config.configfile.properties import escape_properties_text
from lmi_config.knowledge import Release, default_release, load_data, parse_lmi_version, resolve_backend
from lmi_config.knowledge.options import catalogue
from lmi_config.rules.base import Finding
from lmi_config.spec import AUTO, Spec, SpecError

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
TEMPLATES = {"properties": "serving.properties.j2", "env": "env.j2", "json": "environment.json.j2"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
TP_KEY = "option.tensor_parallel_degree"
BATCH_KEYS = ("option.max_rolling_batch_size", "batch_size")
SEQUENCE_KEYS = ("option.n_positions", "option.max_model_len")


@dataclass
class Rendered:
    """What render produced, and what it found."""

    text: str
    format: str
    items: list[tuple[str, str]]
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # limits or mappings that make the output unusable

    @property
    def errors(self) -> list[Finding]:
        return [finding for finding in self.findings if finding.severity == "error"]


def canonical_key(name: str) -> str:
    """``tensor_parallel_degree`` → ``option.tensor_parallel_degree``; server keys stay as they are."""
    name = name.strip()
    if name.startswith("option.") or name in catalogue() and not name.startswith("option."):
        return name
    return f"option.{name}"


def value_text(value: Any) -> str:
    """Spec values as the container reads them: booleans lower-case, dicts and lists as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    if value is None:
        return ""
    return str(value)


def _check_line_safe(key: str, value: str, where: str) -> None:
    if _CONTROL.search(key) or _CONTROL.search(value):
        raise SpecError(
            f"{where}: {key} contains a newline or control character, which would inject a line into the generated "
            "file; write it on one line (use \\u escapes inside JSON values)"
        )


def _refuse_secrets(items: dict[str, str], env: dict[str, str], where: str) -> None:
    """Credentials never go into a generated configuration (they would be printed and committed)."""
    from lmi_config.secrets import looks_like_secret, secret_variable_names

    for key, value in [*items.items(), *env.items()]:
        if key.upper() in secret_variable_names() or looks_like_secret(value, key):
            raise SpecError(
                f"{where}: {key} holds a credential (value not shown); lmi-config does not write credentials into "
                "configurations — pass it at deploy time (e.g. the SageMaker Environment from a secret store)"
            )


def _base_options(backend_id: str, release: Release) -> dict[str, str]:
    row = next(item for item in load_data("backends.json")["backends"] if item["id"] == backend_id)
    render = row.get("render")
    if not render:
        raise SpecError(
            f"render does not support backend {backend_id}; use vllm, tensorrt-llm, lmi-dist, transformers-neuronx, nxdi or huggingface"
        )
    for entry in render["base"]:
        if release.in_range(entry.get("since"), entry.get("until")):
            return dict(entry["options"])
    return dict(render["base"][-1]["options"])


def _render_keys(backend_id: str) -> tuple[str, str | None]:
    row = next(item for item in load_data("backends.json")["backends"] if item["id"] == backend_id)
    return row["render"]["batch_key"], row["render"]["sequence_key"]


def spec_keys(spec: Spec) -> set[str]:
    """The canonical keys the spec itself sets."""
    return {canonical_key(key) for key in spec.options}


def build_items(
    spec: Spec, *, name: str = "spec", hub: bool = False
) -> tuple[dict[str, str], dict[str, Any], list[str]]:
    """The canonical key/value map a spec describes, with ``auto`` resolved.

    Returns (items, context, notes); context holds backend, release, instance and model for
    the lint that follows. Raises :class:`SpecError` for an unusable spec.
    """
    from lmi_config.knowledge.instances import resolve_instance
    from lmi_config.modelarch import ModelResolutionError, resolve_model

    notes: list[str] = []
    instance = None
    if spec.instance:
        try:
            instance = resolve_instance(spec.instance)
        except ValueError as error:
            raise SpecError(f"{name}: instance: {error}") from None
    try:
        if spec.backend:
            backend = resolve_backend(spec.backend)
        else:
            backend = resolve_backend(
                "transformers-neuronx"
                if instance is not None and instance.accelerator == "neuron"
                else "vllm"
            )
            notes.append(
                f"backend {backend.id} (from the {'instance' if instance else 'default'}; set `backend:` to choose)"
            )
        if spec.lmi_version:
            release = parse_lmi_version(spec.lmi_version)
        else:
            release, why = default_release(backend.id)
            notes.append(f"LMI {release.label()}: {why}")
    except ValueError as error:
        raise SpecError(f"{name}: {error}") from None

    items = _base_options(backend.id, release)
    items["option.model_id"] = spec.model
    for raw_key, raw_value in spec.options.items():
        key = canonical_key(raw_key)
        value = value_text(raw_value)
        _check_line_safe(key, value, f"{name}: options")
        items[key] = value
    for env_name, env_value in spec.env.items():
        _check_line_safe(env_name, env_value, f"{name}: env")
    _refuse_secrets(items, spec.env, name)

    # `auto` asks the planner only for TP, batch and sequence length; elsewhere (dtype=auto,
    # rolling_batch=auto) it is the container's own value and is passed through
    autos = [
        key
        for key, value in items.items()
        if value.strip().lower() == AUTO and key in (TP_KEY, *BATCH_KEYS, *SEQUENCE_KEYS)
    ]
    static_batch = next(
        (
            items[key]
            for key in ("batch_size", "max_dynamic_batch_size")
            if items.get(key, "").strip().isdigit()
        ),
        None,
    )
    if static_batch and int(static_batch) > 1 and "option.rolling_batch" not in spec_keys(spec):
        items["option.rolling_batch"] = "disable"  # the container's own choice for dynamic batching
        notes.append("option.rolling_batch=disable: batch_size > 1 asks for dynamic batching")
    arch = None
    model_name = spec.model_architecture or spec.model
    try:
        arch = resolve_model(model_name, allow_hub=hub)
    except ModelResolutionError as error:
        if autos or instance is not None:
            raise SpecError(
                f"{name}: the model's architecture is needed for `auto` and the fit checks: {error}; "
                "set `model_architecture:` to a catalog id or a local directory with config.json"
            ) from None
    if autos:
        if instance is None or arch is None:
            raise SpecError(
                f"{name}: {', '.join(autos)}: auto needs `instance:` (and the model's architecture)"
            )
        notes.extend(_resolve_auto(items, autos, spec, arch, instance, backend.id, release))
    if (
        instance is not None
        and arch is not None
        and backend.accelerator == "neuron"
        and "option.model_loading_timeout" not in items
    ):
        from lmi_config.configfile.canonical import CanonicalConfig, Origin, Setting
        from lmi_config.fit import resolve_shape
        from lmi_config.sizing import loading_seconds

        config = CanonicalConfig()
        for key, value in items.items():
            config.offer(Setting(key, value, Origin(name, None, "spec"), "file"))
        shape = resolve_shape(config, arch, instance, backend.id, release).shape
        needed = loading_seconds(arch, shape, neuron=True)
        limit = load_data("memory.json")["loading"]["sagemaker_startup_limit_seconds"]["value"]
        timeout = min(limit, max(1800, int(-(-needed * 1.5 // 600) * 600)))
        items["option.model_loading_timeout"] = str(timeout)
        note = f"option.model_loading_timeout={timeout}: download and compile estimated at {needed // 60} min, x 1.5"
        if needed * 1.5 > limit:
            note += f", capped at SageMaker's {limit} s start-up limit — compile ahead of time (option.compiled_graph_path) to be safe"
        notes.append(note)
    context = {
        "backend": backend.id,
        "release": release,
        "instance": instance,
        "model": model_name if arch is not None else None,
    }
    return items, context, notes


def _resolve_auto(
    items: dict[str, str],
    autos: list[str],
    spec: Spec,
    arch: Any,
    instance: Any,
    backend: str,
    release: Release,
) -> list[str]:
    from lmi_config.configfile.canonical import CanonicalConfig, Origin, Setting
    from lmi_config.fit import resolve_shape
    from lmi_config.planner import (
        PlanningError,
        auto_sequence_lengths,
        choose,
        describe_choice,
        enumerate_candidates,
    )

    allowed = {TP_KEY, *BATCH_KEYS, *SEQUENCE_KEYS}
    unknown = [key for key in autos if key not in allowed]
    if unknown:
        raise SpecError(f"`auto` is only for {', '.join(sorted(allowed))}, not {', '.join(unknown)}")
    batch_key, sequence_key = _render_keys(backend)
    fixed: dict[str, int | None] = {"tp": None, "batch": None, "sequence": None}
    for role, keys in (("tp", (TP_KEY,)), ("batch", BATCH_KEYS), ("sequence", SEQUENCE_KEYS)):
        for key in keys:
            value = items.get(key, "").strip()
            if value.isdigit():
                fixed[role] = int(value)
    config = CanonicalConfig()
    for key, value in items.items():
        if key not in autos:
            config.offer(Setting(key, value, Origin("spec", None, "spec"), "file"))
    base = resolve_shape(config, arch, instance, backend, release).shape
    auto_sequence = any(key in SEQUENCE_KEYS for key in autos)
    if auto_sequence and sequence_key is None:
        raise SpecError(f"`auto` sequence length is not supported for {backend}; set it explicitly")
    lengths = (
        auto_sequence_lengths(arch, instance)
        if auto_sequence
        else [fixed["sequence"] or base.sequence_length]
    )
    search = dict(
        arch=arch,
        instance=instance,
        backend=backend,
        base=base,
        tensor_parallel_degree=None if TP_KEY in autos else (fixed["tp"] or base.tensor_parallel_degree),
        batch=None if any(key in BATCH_KEYS for key in autos) else (fixed["batch"] or base.batch_size),
        sequence_lengths=lengths,
    )
    candidates = enumerate_candidates(**search)
    if not candidates:
        # only rank 0's whole embeddings (measured once) stand in the way: accept, and say so
        candidates = enumerate_candidates(**search, lenient=True)
    if not candidates:
        raise PlanningError(
            f"no tensor-parallel degree, batch and sequence length of {arch.model_id} fits {instance.instance_type} "
            f"with {backend}; choose a larger instance (see `lmi-config explain`)"
        )
    best = choose(candidates, spec.objective)
    for key in autos:
        del items[key]
    resolved = []
    if TP_KEY in autos:
        items[TP_KEY] = str(best.shape.tensor_parallel_degree)
        resolved.append(f"{TP_KEY}={items[TP_KEY]}")
    if any(key in BATCH_KEYS for key in autos):
        items[batch_key] = str(best.shape.batch_size)
        resolved.append(f"{batch_key}={items[batch_key]}")
    if auto_sequence and sequence_key:
        items[sequence_key] = str(best.shape.sequence_length)
        resolved.append(f"{sequence_key}={items[sequence_key]}")
    return [f"auto: {', '.join(resolved)} — {describe_choice(best, spec.objective, instance)}"]


def _env_items(
    items: list[tuple[str, str]], extra_env: dict[str, str]
) -> tuple[list[tuple[str, str]], list[str]]:
    """Map canonical keys to environment variables; report what has no env form."""
    result: list[tuple[str, str]] = []
    lost: list[str] = []
    for key, value in items:
        if key == "option.model_id":
            result.append(("HF_MODEL_ID", value))
            continue
        name = env_name_for_key(key)
        if name is None and re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", key):
            name = "ARGS_" + (key.upper() if key.islower() else key)
        if name is None:
            lost.append(f"{key} has no environment-variable form (only serving.properties can set it)")
            continue
        result.append((name, value))
    result.extend(sorted(extra_env.items()))
    return result, lost


def _template_environment(template_dir: Path | None) -> Any:
    import jinja2  # only on the render path

    loaders: list[Any] = []
    if template_dir is not None:
        loaders.append(jinja2.FileSystemLoader(str(template_dir)))
    loaders.append(jinja2.FileSystemLoader(str(TEMPLATE_DIR)))
    return jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )


def _header(lines: list[str]) -> list[str]:
    return [_CONTROL.sub(" ", line) for line in lines]


def format_output(
    items: list[tuple[str, str]],
    output_format: str,
    *,
    header: list[str],
    extra_env: dict[str, str] | None = None,
    template_dir: Path | None = None,
) -> tuple[str, list[str]]:
    """Render canonical items in a format; returns (text, problems that make it unusable or lossy)."""
    environment = _template_environment(template_dir)
    template = environment.get_template(TEMPLATES[output_format])
    problems: list[str] = []
    if output_format == "properties":
        escaped = [
            (escape_properties_text(key, is_key=True), escape_properties_text(value, is_key=False))
            for key, value in items
        ]
        for name in sorted(extra_env or {}):
            problems.append(
                f"{name} is an environment variable; serving.properties cannot set it (use the env or json format)"
            )
        return template.render(header=_header(header), items=escaped), problems
    env_items, lost = _env_items(items, extra_env or {})
    problems.extend(lost)
    if output_format == "env":
        quoted = [(name, quote_env_value(value)) for name, value in env_items]
        return template.render(header=_header(header), items=quoted), problems
    limits = load_data("env_vars.json")["sagemaker_environment_limits"]
    if len(env_items) > limits["max_entries"]:
        problems.append(
            f"SageMaker allows at most {limits['max_entries']} environment variables; this has {len(env_items)}"
        )
    for name, value in env_items:
        if not re.fullmatch(limits["key_pattern"], name):
            problems.append(f"{name}: SageMaker environment keys must match [a-zA-Z_][a-zA-Z0-9_]*")
        if len(value) > limits["max_value_length"]:
            problems.append(
                f"{name}: value is {len(value)} characters; SageMaker allows {limits['max_value_length']}"
            )
    document = json.dumps(dict(env_items), indent=2, ensure_ascii=False)
    return template.render(document=document), problems


def _ordered(items: dict[str, str]) -> list[tuple[str, str]]:
    # model-level keys first (engine, batch_size …), then option.* keys, each sorted: deterministic
    return sorted(
        items.items(), key=lambda pair: (pair[0].startswith("option."), pair[0] != "engine", pair[0])
    )


def render_spec(
    spec: Spec,
    *,
    name: str = "spec",
    output_format: str | None = None,
    template_dir: Path | None = None,
    hub: bool = False,
) -> Rendered:
    """Resolve, render and lint a spec (nothing is written here)."""
    from lmi_config.api import lint_text
    from lmi_config.lint import LintOptions

    chosen = output_format or spec.format or "properties"
    items, context, notes = build_items(spec, name=name, hub=hub)
    ordered = _ordered(items)
    release: Release = context["release"]
    header = [
        f"generated by lmi-config {__version__} from {name}; edit the spec, not this file",
        f"backend {context['backend']}, LMI {release.label()}"
        + (f", instance {context['instance'].instance_type}" if context["instance"] else ""),
    ]
    header.extend(note for note in notes if note.startswith(("auto:", "option.model_loading_timeout")))
    text, problems = format_output(
        ordered, chosen, header=header, extra_env=spec.env, template_dir=template_dir
    )
    lint_options = LintOptions(
        backend=context["backend"],
        lmi_version=f"lmi{release.lmi}" if release.lmi else release.djl,
        instance=context["instance"].instance_type if context["instance"] else None,
        model=context["model"],
        hub=hub,
    )
    kind = "properties" if chosen == "properties" else ("json" if chosen == "json" else "env")
    result = lint_text(text, kind, lint_options, name=f"<rendered {chosen}>")
    findings = [_promote(finding) for finding in result.findings]
    return Rendered(
        text=text, format=chosen, items=ordered, findings=findings, notes=notes, problems=problems
    )


PROMOTED_IN_RENDER = ("LMI101",)


def is_typo(written: str, known: str) -> bool:
    """One edit away (insert, delete, substitute, or swap two neighbours): optimal string alignment."""
    if abs(len(written) - len(known)) > 1:
        return False
    rows = [[0] * (len(known) + 1) for _ in range(len(written) + 1)]
    for i in range(len(written) + 1):
        rows[i][0] = i
    for j in range(len(known) + 1):
        rows[0][j] = j
    for i in range(1, len(written) + 1):
        for j in range(1, len(known) + 1):
            cost = 0 if written[i - 1] == known[j - 1] else 1
            rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and written[i - 1] == known[j - 2] and written[i - 2] == known[j - 1]:
                rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
    return rows[-1][-1] <= 1


def _promote(finding: Finding) -> Finding:
    # a key close to a known one is a typo the spec author would want stopped; other unknown keys
    # (a custom handler's, a CI harness's) stay warnings
    from lmi_config.rules.options import suggest

    hint = suggest(finding.key) if finding.key else None
    if (
        finding.code in PROMOTED_IN_RENDER
        and finding.severity != "error"
        and hint
        and is_typo(finding.key or "", hint)
    ):
        from dataclasses import replace

        return replace(
            finding,
            severity="error",
            message=finding.message + " (an error in render: the spec asked for it)",
        )
    return finding


def write_atomically(path: Path, text: str) -> None:
    """Write a file so that a reader sees the old content or the new, never half of it."""
    directory = path.parent if str(path.parent) else Path(".")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        if path.exists():
            os.chmod(temporary, path.stat().st_mode & 0o777)
        else:
            os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def convert_items(
    effective: list[tuple[str, str]], process_env: list[tuple[str, str]], to: str
) -> tuple[list[tuple[str, str]], dict[str, str], list[str]]:
    """Prepare a converted configuration: (items, extra env, what cannot be carried over)."""
    from lmi_config.secrets import looks_like_secret, secret_variable_names

    lost: list[str] = []
    extra: dict[str, str] = {}
    kept = []
    for key, value in effective:
        if key.upper() in secret_variable_names() or looks_like_secret(value, key):
            lost.append(
                f"{key} not copied: credentials are never written by lmi-config; pass it at deploy time"
            )
        else:
            kept.append((key, value))
    effective = kept
    for name, value in process_env:
        if name in secret_variable_names():
            lost.append(
                f"{name} not copied: credentials are never written by lmi-config; pass it at deploy time"
            )
        elif to == "properties":
            lost.append(f"{name} is a process environment variable; serving.properties cannot set it")
        else:
            extra[name] = value
    return effective, extra, lost


def effective_settings(unit: Any) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(canonical key/values the container uses, process env variables) of a lint unit."""
    items = [
        (key, setting.value)
        for key, setting in unit.config.settings.items()
        if setting.role != "global" or key in ("minWorkers", "maxWorkers", "job_queue_size")
    ]
    process: list[tuple[str, str]] = []
    for source in unit.sources:
        if source.env is None:
            continue
        for entry in source.env.entries:
            kind = classify_env(entry.name).kind
            if kind in ("process", "secret", "unknown"):
                process.append((entry.name, entry.value))
    return _ordered(dict(items)), process
