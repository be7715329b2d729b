"""``render``: a validated serving.properties, env file or SageMaker Environment JSON from a spec.

``auto`` for the tensor-parallel degree, the batch size or the sequence length is resolved by the
planner over the one judge (:mod:`lmi_config.shape`), writing the keys the container reads for
that backend and release (``data/container_shape.json``). The file names its target in a
``# lmi-config:`` pragma, so lint and explain read it exactly as render meant it; what is
rendered is linted with the full rule set before it is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmi_config import __version__
from lmi_config.convert import ordered
from lmi_config.escaping import ValueNotCarried
from lmi_config.formats import format_output, written_from
from lmi_config.knowledge import Backend, Release, default_release, parse_lmi_version, resolve_backend
from lmi_config.knowledge.container import batch_keys, dimension_of, sequence_keys
from lmi_config.knowledge.options import catalogue
from lmi_config.rules.base import Finding
from lmi_config.shape.values import read_count
from lmi_config.spec import AUTO, Spec, SpecError
from lmi_config.strict_json import json_text, non_finite_place

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
TP_KEY = "option.tensor_parallel_degree"


@dataclass
class Rendered:
    """What render produced, what ``auto`` became, and what it found."""

    text: str
    format: str
    items: list[tuple[str, str]]
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # limits or mappings that make the output unusable
    auto: dict[str, int] = field(default_factory=dict)  # dimension -> the value auto became
    target: dict[str, Any] = field(default_factory=dict)  # backend, lmi_version, instance, model
    assessment: Any = None  # the judge's shape.Assessment of the rendered configuration (as lint reads it)

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
        return json_text(value, indent=None, separators=(",", ":"))
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


def spec_keys(spec: Spec) -> set[str]:
    """The canonical keys the spec itself sets."""
    return {canonical_key(key) for key in spec.options}


@dataclass
class _Target:
    backend: Backend
    release: Release
    instance: Any  # knowledge.instances.Instance | None
    arch: Any  # modelarch.ModelArch | None
    model_name: str


def _resolve_target(spec: Spec, name: str, hub: bool, notes: list[str]) -> _Target:
    from lmi_config.knowledge.instances import resolve_instance

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
            neuron = instance is not None and instance.accelerator == "neuron"
            backend = resolve_backend("transformers-neuronx" if neuron else "vllm")
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
    if not backend.render_base:
        raise SpecError(
            f"{name}: render does not support backend {backend.id}; use vllm, tensorrt-llm, lmi-dist, "
            "transformers-neuronx, nxdi or huggingface"
        )
    return _Target(backend, release, instance, None, spec.model_architecture or spec.model)


def _auto_keys(items: dict[str, str], name: str) -> dict[str, str]:
    """The ``auto`` values render resolves, by key → dimension; refuses an ``auto`` it cannot resolve."""
    autos: dict[str, str] = {}
    for key, value in items.items():
        if value.strip().lower() != AUTO:
            continue
        dimension = dimension_of(key)
        if dimension is not None:
            autos[key] = dimension
            continue
        if any(AUTO in (spec.allowed or ()) or spec.default == AUTO for spec in catalogue().get(key, ())):
            continue  # the container's own auto (dtype, rolling_batch …): passed through
        raise SpecError(
            f"{name}: {key}: auto is not a value the container accepts, and lmi-config chooses only the "
            "tensor-parallel degree, the batch size and the sequence length; give a value"
        )
    return autos


def build_items(
    spec: Spec, *, name: str = "spec", hub: bool = False
) -> tuple[dict[str, str], _Target, list[str], dict[str, int]]:
    """The canonical key/value map a spec describes, with ``auto`` resolved.

    Returns (items, target, notes, what auto became). Raises :class:`SpecError` for an unusable
    spec and :class:`lmi_config.planner.PlanningError` when nothing fits.
    """
    from lmi_config.modelarch import ModelResolutionError, resolve_model

    notes: list[str] = []
    target = _resolve_target(spec, name, hub, notes)
    backend, release = target.backend, target.release
    items = backend.render_options(release)
    items["option.model_id"] = spec.model
    for raw_key, raw_value in spec.options.items():
        key = canonical_key(raw_key)
        place = non_finite_place(raw_value, str(raw_key))
        if place is not None:  # the container reads no NaN or infinity, and JSON has none
            raise SpecError(
                f"{name}: options: {place} is not a finite number (NaN or infinity); write the number"
            )
        value = value_text(raw_value)
        _check_line_safe(key, value, f"{name}: options")
        items[key] = value
    for env_name, env_value in spec.env.items():
        _check_line_safe(env_name, env_value, f"{name}: env")
    _refuse_secrets(items, spec.env, name)
    autos = _auto_keys(items, name)
    static_batch = next(
        (
            read_count(items[key], minimum=0).value
            for key in ("batch_size", "max_dynamic_batch_size")
            if read_count(items.get(key), minimum=0).value is not None
        ),
        None,
    )
    if static_batch and static_batch > 1 and "option.rolling_batch" not in spec_keys(spec):
        items["option.rolling_batch"] = "disable"  # the container's own choice for dynamic batching
        notes.append("option.rolling_batch=disable: batch_size > 1 asks for dynamic batching")
    try:
        target.arch = resolve_model(target.model_name, allow_hub=hub)
    except ModelResolutionError as error:
        if autos or target.instance is not None:
            raise SpecError(
                f"{name}: the model's architecture is needed for `auto` and the fit checks: {error}; "
                "set `model_architecture:` to a catalog id or a local directory with config.json"
            ) from None
    became: dict[str, int] = {}
    if autos:
        if target.instance is None or target.arch is None:
            raise SpecError(
                f"{name}: {', '.join(autos)}: auto needs `instance:` (and the model's architecture)"
            )
        items, became, note = _resolve_auto(items, autos, spec, target)
        notes.append(note)
    batch_note = _write_batch_where_read(items, target)
    if batch_note:
        notes.append(batch_note)
    context_note = _write_length_of_unknown_context(items, target)
    if context_note:
        notes.append(context_note)
    timeout_note = _loading_timeout(items, target)
    if timeout_note:
        notes.append(timeout_note)
    return items, target, notes, became


def _write_length_of_unknown_context(items: dict[str, str], target: _Target) -> str | None:
    """Where the model's context length is not known here (a catalog entry from a table of
    dimensions), the length every check judged is written: left out, the engine would take
    config.json's, which nothing here has checked."""
    key = sequence_keys(target.backend.id).render_key
    if target.arch is None or target.arch.max_position_embeddings or not key or key in items:
        return None
    from lmi_config.planner import configuration
    from lmi_config.shape import resolve_shape

    length = resolve_shape(configuration(items), _judge_target(target)).sequence_length
    if length is None or length.key is not None:
        return None
    items[key] = str(length.value)
    return (
        f"{key}={length.value}: {target.arch.model_id}'s context length is not known here, so the length "
        "the checks judged is written (the engine would otherwise take config.json's)"
    )


def _write_batch_where_read(items: dict[str, str], target: _Target) -> str | None:
    """A batch given under one key is written under every key the container reads it from in this
    batching mode: with dynamic batching on transformers-neuronx both the front end's ``batch_size``
    and the compiled ``option.batch_size``; with vLLM ``max_rolling_batch_size`` (which LMI fills
    itself and compares with a lone ``max_num_seqs``)."""
    from lmi_config.planner import configuration
    from lmi_config.shape import resolve_shape

    mode = resolve_shape(configuration(items), _judge_target(target)).batching.mode
    table = batch_keys(target.backend.id, mode)
    value = next(
        (
            items[key]
            for key in table.keys + table.render_keys
            if read_count(items.get(key), minimum=0).value is not None
        ),
        None,
    )
    if value is None:
        return None
    added = [key for key in table.render_keys if items.get(key) != value]
    for key in added:
        items[key] = value
    if not added:
        return None
    written = ", ".join(f"{key}={value}" for key in added)
    return f"{written}: the container reads the batch size there ({mode} batching)"


def _judge_target(target: _Target) -> Any:
    from lmi_config.shape import make_target

    return make_target(
        target.backend.id, target.backend.accelerator, target.release, target.instance, target.arch
    )


def _resolve_auto(
    items: dict[str, str], autos: dict[str, str], spec: Spec, target: _Target
) -> tuple[dict[str, str], dict[str, int], str]:
    from lmi_config.planner import AutoRequest, configuration, describe_choice, plan_auto
    from lmi_config.shape import resolve_shape

    judged = _judge_target(target)
    fixed = {key: value for key, value in items.items() if key not in autos}
    mode = resolve_shape(configuration(fixed), judged).batching.mode
    written = {
        "tensor_parallel_degree": (TP_KEY,),
        "batch_size": batch_keys(target.backend.id, mode).render_keys,
        "sequence_length": (sequence_keys(target.backend.id).render_key or "",),
    }
    dimensions = set(autos.values())
    request = AutoRequest(
        *(
            dimension in dimensions
            for dimension in ("tensor_parallel_degree", "batch_size", "sequence_length")
        )
    )
    workload = _workload(spec, fixed, judged)
    best = plan_auto(
        fixed,
        request,
        judged,
        backend_accelerator=target.backend.accelerator,
        objective=spec.objective,
        workload=workload,
    )
    values = {
        "tensor_parallel_degree": best.tensor_parallel_degree,
        "batch_size": best.batch_size,
        "sequence_length": best.sequence_length,
    }
    chosen = [dimension for dimension in values if dimension in dimensions]  # TP, batch, sequence length
    became = {dimension: values[dimension] for dimension in chosen}
    resolved = [f"{key}={values[dimension]}" for dimension in chosen for key in written[dimension]]
    moved = sorted(key for key, dimension in autos.items() if key not in written[dimension])
    moved_text = f" ({', '.join(moved)} is written as the key the container reads)" if moved else ""
    note = f"auto: {', '.join(resolved)} — {describe_choice(best, spec.objective, workload)}{moved_text}"
    return dict(best.items), became, note


def _workload(spec: Spec, fixed: dict[str, str], judged: Any) -> Any:
    """The spec's workload, else plan's default fitted to a sequence length the spec fixes."""
    from lmi_config.plan.workload import PlanWorkload, default_workload
    from lmi_config.planner import configuration
    from lmi_config.shape import resolve_shape

    if spec.workload is not None:
        return PlanWorkload(**spec.workload.model_dump())
    length = resolve_shape(configuration(fixed), judged).sequence_length
    return default_workload(length.value if length is not None and length.key is not None else None)


def _loading_timeout(items: dict[str, str], target: _Target) -> str | None:
    """Write a loading timeout long enough for the download (and, on Neuron, the compile): the
    judge's advice, so that what render writes passes ``lint --strict`` on the same target."""
    if target.instance is None or target.arch is None or "option.model_loading_timeout" in items:
        return None
    from lmi_config.knowledge.memory import loading_constants
    from lmi_config.planner import configuration
    from lmi_config.shape import assess
    from lmi_config.shape.resources import beyond_startup_limit_fix

    loading = assess(
        configuration(items), _judge_target(target), backend_accelerator=target.backend.accelerator
    ).loading
    if loading is None:
        return None
    items["option.model_loading_timeout"] = str(loading.recommended_seconds)
    limit = loading_constants().sagemaker_startup_limit_seconds
    work = "download and compile" if loading.compiles else "download and load"
    note = (
        f"option.model_loading_timeout={loading.recommended_seconds}: {work} estimated at "
        f"{loading.needed_seconds // 60} min, x {loading_constants().timeout_margin_factor:g}"
    )
    if loading.beyond_startup_limit:
        note += f", capped at SageMaker's {limit} s start-up limit — {beyond_startup_limit_fix(loading)}"
    return note


def _pragma(target: _Target, spec: Spec) -> str:
    """The target, as a pragma lint and explain read back."""
    release = target.release
    parts = [
        f"backend={target.backend.id}",
        f"lmi-version={'lmi' + release.lmi if release.lmi else release.djl}",
    ]
    if target.instance is not None:
        parts.append(f"instance={target.instance.instance_type}")
    if spec.model_architecture and target.arch is not None:
        parts.append(f"model={spec.model_architecture}")
    return "lmi-config: " + " ".join(parts)


def render_spec(
    spec: Spec,
    *,
    name: str = "spec",
    output_format: str | None = None,
    template_dir: Path | None = None,
    hub: bool = False,
) -> Rendered:
    """Resolve, render and lint a spec (nothing is written here)."""
    from lmi_config.lint import LintOptions, lint_text

    chosen = output_format or spec.format or "properties"
    items, target, notes, became = build_items(spec, name=name, hub=hub)
    listed = ordered(items)
    release = target.release
    header = [
        f"generated by lmi-config {__version__} from {name}; edit the spec, not this file",
        f"backend {target.backend.id}, LMI {release.label()}"
        + (f", instance {target.instance.instance_type}" if target.instance else ""),
        _pragma(target, spec),
    ]
    header.extend(note for note in notes if note.startswith(("auto:", "option.model_loading_timeout")))
    try:
        text, problems = format_output(
            listed, chosen, header=header, extra_env=spec.env, template_dir=template_dir
        )
    except ValueNotCarried as error:
        raise SpecError(f"{name}: {written_from(error.key, items, spec.env)}{error}") from None
    lint_options = LintOptions(
        backend=target.backend.id,
        lmi_version=f"lmi{release.lmi}" if release.lmi else release.djl,
        instance=target.instance.instance_type if target.instance else None,
        model=(spec.model_architecture or spec.model) if target.arch is not None else None,
        hub=hub,
    )
    result = lint_text(text, chosen, lint_options, name=f"<rendered {chosen}>")
    findings = [_promote(finding) for finding in result.findings]
    return Rendered(
        text=text,
        format=chosen,
        items=listed,
        findings=findings,
        notes=notes,
        problems=problems,
        auto=became,
        assessment=result.units[0].assessment if result.units else None,
        target={
            "backend": target.backend.id,
            "lmi_version": lint_options.lmi_version,
            "instance": lint_options.instance,
            "model": lint_options.model,
        },
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
    if finding.code not in PROMOTED_IN_RENDER or finding.severity == "error" or not finding.key:
        return finding
    from lmi_config.rules.suggestions import suggest

    hint = suggest(finding.key)
    if hint and is_typo(finding.key, hint):
        return finding._replace(
            severity="error",
            message=finding.message + " (an error in render: the spec asked for it)",
        )
    return finding
