"""Which instances, backends and releases a plan covers, and the (instance, TP) groups of its grid."""

from __future__ import annotations

from typing import Any

from lmi_config.errors import InputError
from lmi_config.knowledge import Release, default_release, parse_lmi_version, resolve_backend
from lmi_config.knowledge.engine_support import ANY_OPTIMUM_NEURON
from lmi_config.knowledge.instances import Instance, instances, resolve_instance
from lmi_config.knowledge.planning import on_demand_price
from lmi_config.plan.candidates import Group, PlannedCandidate, PlanRequest, batch_grid, neuron_batch_cap
from lmi_config.plan.performance import PAGED_BACKENDS
from lmi_config.plan.workload import PlanWorkload
from lmi_config.plan.writer import planned_writer, valid_degrees


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


def absent_backend(backend: Any, release: Release) -> str | None:
    """Why no configuration of the backend can be written for the release: no image of it ships the
    backend (lint refuses every such file: LMI102/LMI103); None when one does."""
    from lmi_config.knowledge.image_support import backend_ships, releases_shipping

    if backend_ships(backend, release):
        return None
    having = [item.label() for item in releases_shipping(backend)]
    span = f"LMI {having[0]} to {having[-1]}" if having else "no known release"
    return f"no image of LMI {release.label()} ships backend {backend.id} (it ships in {span})"


def planned_sequence_length(workload: PlanWorkload, maximum: int | None, minimum: int | None) -> int:
    """The one sequence length of a plan: --max-model-len as given; else the workload's longest
    request (and --min-sequence-length) rounded up to a power of two from 1024 — the lengths
    Neuron caches compile — or to the model's maximum where that is shorter."""
    required = max(workload.longest_request, minimum or 0)
    if workload.max_model_len:
        return required
    length = 1024
    while length < required:
        length *= 2
    if maximum and required <= maximum < length:
        return maximum
    return length


def plan_groups(request: PlanRequest, arch: Any) -> tuple[list[Group], list[str]]:
    """One group per (instance, TP degree) to plan, each with its candidate writer, batches and
    sequence length, and notes saying which backend, release and prices were assumed."""
    notes: list[str] = []
    groups = []
    extra = _options(request)
    sequence = planned_sequence_length(
        request.workload, arch.max_position_embeddings, request.min_sequence_length
    )
    absent: dict[str, list[str]] = {}  # why no image ships the backend -> the instances left out
    for instance in _instances(request):
        backend = _backend(request, instance)
        release = _release(request, backend.id)
        why = absent_backend(backend, release)
        if why is not None:
            absent.setdefault(why, []).append(instance.instance_type)
            continue
        writer = planned_writer(
            backend,
            release,
            instance,
            arch,
            model_id=request.model,
            dtype=request.dtype,
            optimum_neuron_export=ANY_OPTIMUM_NEURON if request.optimum_neuron_export else None,
            extra=extra,
        )
        target = writer.target
        degrees = _degrees(request, instance, target, backend.accelerator)
        price = on_demand_price(instance.instance_type, request.price_kind)
        chosen = f"backend {backend.id} (LMI {release.label()}) on {instance.accelerator}"
        if chosen not in notes:
            notes.append(chosen)
        # on a paged KV cache the batch comes from the workload; Neuron compiles it in
        paged = instance.accelerator == "gpu" and target.backend in PAGED_BACKENDS
        batches = (
            None
            if paged
            else batch_grid(max(neuron_batch_cap(), request.min_batch_size or 1), request.min_batch_size)
        )
        for degree in degrees:
            groups.append(
                Group(
                    instance,
                    degree,
                    writer,
                    release,
                    batches,
                    sequence if writer.sequence_key else None,
                    price=price,
                    checked=False,
                    minimum_batch=request.min_batch_size or 1,
                    price_kind=request.price_kind,
                )
            )
    if absent and (request.backend or not groups):
        raise InputError(f"{min(absent)}; choose --lmi-version in that range or another backend")
    notes.extend(f"{why}: {', '.join(sorted(left))} left out" for why, left in sorted(absent.items()))
    return groups, notes


def _degrees(request: PlanRequest, instance: Instance, target: Any, accelerator: str) -> list[int]:
    """Every TP degree up to the instance's cores (the judge says which may be chosen, lazily);
    ``--all`` keeps the allowed ones and the usual powers of two, to show what blocks them."""
    if not request.include_infeasible:
        return list(range(1, instance.num_cores + 1))
    powers = {2**power for power in range(instance.num_cores.bit_length())}
    return sorted(
        set(valid_degrees(target, accelerator))
        | {1, instance.num_cores}
        | {degree for degree in powers if degree <= instance.num_cores}
    )


def price_notes(kind: str, shown: list[PlannedCandidate]) -> list[str]:
    """What the listed rows' prices are, naming only instance types among them: those priced from
    another list (shown apart for cost) and those with no price."""
    stand_ins = sorted({c.instance for c in shown if c.price_kind is not None and c.price_kind != kind})
    unpriced = sorted({c.instance for c in shown if c.price_kind is None})
    notes = []
    if stand_ins:
        notes.append(
            f"prices: no {kind} price published for {', '.join(stand_ins)}; their EC2 on-demand price "
            "stands in (data/instances.json), labelled, and is never ranked against the others for cost"
        )
    if unpriced:
        notes.append(f"prices: none found for {', '.join(unpriced)}; no $/M tokens for them")
    return notes


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
    from lmi_config.plan.writer import configuration
    from lmi_config.shape.values import COUNT_KEYS, unusable_values

    for problem in unusable_values(configuration(options, "--set"), COUNT_KEYS):
        raise InputError(f"--set {problem.message}")
