"""Which instances, backends and releases a plan covers, and the (instance, TP) groups of its grid."""

from __future__ import annotations

from typing import Any

from lmi_config.errors import InputError
from lmi_config.knowledge import Release, default_release, parse_lmi_version, resolve_backend
from lmi_config.knowledge.instances import Instance, instances, resolve_instance
from lmi_config.knowledge.planning import on_demand_price
from lmi_config.plan.candidates import NEURON_BATCH_CAP, Group, PlanRequest, batch_grid, sequence_grid
from lmi_config.planner import GPU_BATCH_CAP, CandidateWriter, valid_degrees
from lmi_config.shape import make_target


def _instances(request: PlanRequest) -> list[Instance]:
    try:
        if request.instances:
            return [resolve_instance(name) for name in request.instances]
    except ValueError as error:
        raise InputError(str(error)) from None
    every = [item for item in instances().values() if item.accelerator in ("neuron", "gpu")]
    if request.families:
        known = {item.family for item in every}
        unknown = [family for family in request.families if family not in known]
        if unknown:
            raise InputError(
                f"unknown instance family {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        every = [item for item in every if item.family in request.families]
    if request.backend:
        accelerator = _backend(request, None).accelerator
        every = [item for item in every if item.accelerator == accelerator]
    return every


def _backend(request: PlanRequest, instance: Instance | None) -> Any:
    neuron = instance is not None and instance.accelerator == "neuron"
    name = request.backend or ("transformers-neuronx" if neuron else "vllm")
    try:
        backend = resolve_backend(name)
    except ValueError as error:
        raise InputError(str(error)) from None
    if not backend.render_base:
        raise InputError(
            f"plan writes configurations with render; render does not support backend {backend.id}"
        )
    return backend


def _release(request: PlanRequest, backend_id: str) -> Release:
    if not request.lmi_version:
        return default_release(backend_id)[0]
    try:
        return parse_lmi_version(request.lmi_version)
    except ValueError as error:
        raise InputError(str(error)) from None


def plan_groups(request: PlanRequest, arch: Any) -> tuple[list[Group], list[str]]:
    """One group per (instance, TP degree) to plan, each with its candidate writer and grid, and notes
    saying which backend and release were assumed."""
    notes: list[str] = []
    groups = []
    minimum_batch = request.min_batch_size
    extra = _options(request)
    for instance in _instances(request):
        backend = _backend(request, instance)
        release = _release(request, backend.id)
        items = backend.render_options(release)
        items["option.model_id"] = request.model
        if request.dtype:
            items["option.dtype"] = request.dtype
        items.update(extra)
        target = make_target(backend.id, backend.accelerator, release, instance, arch)
        writer = CandidateWriter(items, target, backend.accelerator)
        sequences: list[int | None] = (
            list(sequence_grid(arch.max_position_embeddings, request.min_sequence_length))
            if writer.sequence_key
            else [None]
        )
        cap = GPU_BATCH_CAP if instance.accelerator == "gpu" else NEURON_BATCH_CAP
        lazy = not (request.include_infeasible or request.complete or request.top <= 0)
        # best-first: a degree is judged when its group could still reach the top, not before
        degrees = (
            list(range(1, instance.num_cores + 1)) if lazy else valid_degrees(target, backend.accelerator)
        )
        if request.include_infeasible:
            powers = {2**power for power in range(instance.num_cores.bit_length())}
            degrees = sorted(
                set(degrees) | {1, instance.num_cores} | {d for d in powers if d <= instance.num_cores}
            )
        price = on_demand_price(instance.instance_type, request.price_kind)
        chosen = f"backend {backend.id} (LMI {release.label()}) on {instance.accelerator}"
        if chosen not in notes:
            notes.append(chosen)
        for degree in degrees:
            groups.append(
                Group(
                    instance,
                    degree,
                    writer,
                    release,
                    batch_grid(max(cap, minimum_batch or 1), minimum_batch),
                    sequences,
                    price=price.usd_per_hour if price else None,
                    checked=not lazy,
                )
            )
    return groups, notes


def _options(request: PlanRequest) -> dict[str, str]:
    """``--set`` options as canonical keys; the dimensions plan chooses are refused."""
    if not request.options:
        return {}
    from lmi_config.knowledge.container import dimension_of
    from lmi_config.render import canonical_key

    options = {}
    for key, value in request.options:
        canonical = canonical_key(key)
        dimension = dimension_of(canonical)
        if dimension is not None:
            raise InputError(
                f"--set {key}: plan chooses the {dimension.replace('_', ' ')} itself; narrow it with --instance, "
                "--min-batch-size or --min-sequence-length"
            )
        options[canonical] = value
    _refuse_unusable(options)
    return options


def _refuse_unusable(options: dict[str, str]) -> None:
    """A --set value the judge cannot use would block every candidate ("nothing fits"): say which."""
    from lmi_config.planner import configuration
    from lmi_config.shape.values import COUNT_KEYS, unusable_values

    for problem in unusable_values(configuration(options, "--set"), COUNT_KEYS):
        raise InputError(f"--set {problem.message}")
