"""The changes semantic rules propose, from the judge's own searches (never arithmetic in a rule).

A proposer takes the unit and a finding and returns the candidate changes, nearest first; the
judge (:mod:`lmi_config.fixers.judge`) keeps those that, applied, remove the finding and add no
error. Every semantic fix changes what the container does, so all are unsafe (``--unsafe-fixes``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from lmi_config.fixers.edits import Change

if TYPE_CHECKING:
    from lmi_config.rules.base import Finding, LintUnit

TP_KEY = "option.tensor_parallel_degree"
MAX_DEGREES_TRIED = 6  # the nearest runnable degrees judged per finding: advice names a few, not all


class Proposals(NamedTuple):
    """Candidate fixes of one finding (each a set of changes), and what to say when none passes."""

    candidates: tuple[tuple[Change, ...], ...]
    fallback: str = ""
    safe: bool = False
    supersedes: str = ""  # advice the rule's message already gives in words: the judged fix replaces it


def _tensor_parallel(unit: LintUnit, finding: Finding) -> Proposals | None:
    """Set option.tensor_parallel_degree to the nearest degrees the judge lets run (devices, Neuron topology, attention and KV heads)."""
    from lmi_config.shape.frontend import flag
    from lmi_config.shape.parallelism import ParallelTarget, runnable_degrees

    assessment = unit.assessment
    # key None: the TP the container chose itself (not written), reported on no line
    if assessment is None or finding.key not in (TP_KEY, None) or assessment.shape.tensor_parallel is None:
        return None
    target = assessment.target
    parallel = ParallelTarget(
        backend=target.backend,
        backend_accelerator=unit.context.backend.accelerator,
        instance=target.instance,
        arch=target.arch,
        multi_node=flag(unit.config, "option.multi_node"),
        nodes=assessment.shape.nodes.value,
    )
    current = assessment.shape.tensor_parallel
    degrees = sorted(
        (degree for degree in runnable_degrees(parallel) if degree != current),
        key=lambda degree: (abs(degree - current), -degree),
    )[:MAX_DEGREES_TRIED]
    return Proposals(
        tuple((Change("set", TP_KEY, str(degree)),) for degree in degrees),
        "no TP degree runs this model on this target"
        if not degrees
        else "no nearby TP degree passes every check",
    )


def _sequence_length(unit: LintUnit, finding: Finding) -> Proposals | None:
    """Set the sequence length to the longest the model and the KV cache hold, on the key the judge
    read it from (else the key render writes for this backend)."""
    from lmi_config.knowledge.container import sequence_keys
    from lmi_config.shape.remedies import longest_sequence_length

    assessment = unit.assessment
    if assessment is None or assessment.shape.sequence_length is None:
        return None
    key = assessment.shape.sequence_length.key or sequence_keys(assessment.target.backend).render_key
    longest = longest_sequence_length(assessment)
    if longest is None or key is None:
        return None
    return Proposals(((Change("set", key, str(longest)),),))


def _kv_capacity(unit: LintUnit, finding: Finding) -> Proposals | None:
    """Set a shorter option.max_model_len, a larger option.gpu_memory_utilization or a wider TP, each searched by the memory model."""
    from lmi_config.shape import sizing_backend
    from lmi_config.shape.parallelism import ParallelTarget
    from lmi_config.shape.remedies import kv_utilization_needed, kv_wider_degree
    from lmi_config.shape.resources import MemoryTarget

    assessment = unit.assessment
    shape = assessment.shape.sizing_shape() if assessment is not None else None
    if assessment is None or shape is None or assessment.memory is None:
        return None
    target = assessment.target
    if target.arch is None or target.instance is None:
        return None
    sequence = _sequence_length(unit, finding)
    candidates = sequence.candidates if sequence is not None else ()
    parallel = ParallelTarget(target.backend, unit.context.backend.accelerator, target.instance, target.arch)
    judged = MemoryTarget(target.arch, target.instance, sizing_backend(target), parallel)
    utilization = kv_utilization_needed(judged, shape, assessment.memory)
    if utilization is not None:
        candidates += ((Change("set", "option.gpu_memory_utilization", f"{utilization:g}"),),)
    degree = kv_wider_degree(judged, shape)
    if degree is not None:
        candidates += ((Change("set", TP_KEY, str(degree)),),)
    return Proposals(candidates, "use a larger instance")


def _memory(unit: LintUnit, finding: Finding) -> Proposals | None:
    """Set the planner's nearest shape that fits: another TP, a smaller batch or a shorter sequence length."""
    from lmi_config.knowledge.container import batch_keys, sequence_keys
    from lmi_config.planner import alternatives

    assessment = unit.assessment
    shape = assessment.shape.sizing_shape() if assessment is not None else None
    if assessment is None or shape is None or assessment.memory is None:
        return None
    backend = assessment.target.backend
    batch_render = batch_keys(backend, assessment.shape.batching.mode).render_keys
    sequence_key = sequence_keys(backend).render_key
    candidates = []
    for alternative, _ in alternatives(assessment, unit.context.backend.accelerator):
        changes: list[Change] = []
        if alternative.tensor_parallel_degree != shape.tensor_parallel_degree:
            changes.append(Change("set", TP_KEY, str(alternative.tensor_parallel_degree)))
        if alternative.batch_size != shape.batch_size:
            changes.extend(Change("set", key, str(alternative.batch_size)) for key in batch_render)
        if alternative.sequence_length != shape.sequence_length and sequence_key:
            changes.append(Change("set", sequence_key, str(alternative.sequence_length)))
        if changes:
            candidates.append(tuple(changes))
    return Proposals(tuple(candidates), "nothing close fits on this instance — choose a larger instance")


def _runnable_dtype(unit: LintUnit, finding: Finding) -> Proposals | None:
    """Set option.dtype=fp16 where the GPU has no bfloat16 (written, or left to dtype auto)."""
    if unit.assessment is None:
        return None
    return Proposals(((Change("set", "option.dtype", "fp16"),),))


_USE_KEY = re.compile(r"use (option\.[A-Za-z0-9_]+|[a-z_]+)(?:=([A-Za-z0-9_.-]+))?$")


def _deprecated(unit: LintUnit, finding: Finding) -> Proposals | None:
    """Replace a deprecated option by the one the catalogue names (``use KEY`` renames, ``use KEY=VALUE`` sets it)."""
    from lmi_config.knowledge.options import catalogue

    setting = unit.config.settings.get(finding.key or "")
    if setting is None:
        return None
    notes = {spec.deprecated for spec in catalogue().get(setting.key, ()) if spec.deprecated}
    matches = [_USE_KEY.match(note) for note in notes]
    if len(matches) != 1 or matches[0] is None:
        return None
    replacement, value = matches[0].group(1), matches[0].group(2)
    if unit.config.settings.get(replacement) is not None:
        return None  # the replacement is set already: which one wins is for the user to decide
    note = matches[0].group(0)
    if value is None:
        return Proposals(((Change("rename", setting.key, new_key=replacement),),), supersedes=note)
    if setting.value.strip().lower() != "true":
        return Proposals(((Change("remove", setting.key),),), supersedes=note)
    return Proposals(((Change("remove", setting.key), Change("set", replacement, value)),), supersedes=note)


def _allowed_value(unit: LintUnit, finding: Finding) -> Proposals | None:
    """Set the value invalid-value names (``use fp16``; a handler module's new name), the same search."""
    from lmi_config.rules.value_suggestions import allowed_replacement

    setting = unit.config.settings.get(finding.key or "")
    if setting is None or finding.line != setting.origin.line:
        return None  # a value refused by the container's own classes, or a judge's refusal: no search
    replacement = allowed_replacement(unit, setting)
    if replacement is None or replacement == setting.value.strip():
        return None
    if " use " in finding.message and f"use {replacement}" not in finding.message:
        return None  # the message advises another value (the container's own list): never two answers
    return Proposals(((Change("set", setting.key, replacement),),), supersedes=f"use {replacement}")


def _parsed_value(unit: LintUnit, finding: Finding) -> Proposals | None:
    """Rewrite a value the container's ast.literal_eval / json.loads refuses into the form it reads."""
    from lmi_config.rules.container import parsed_rewrite

    setting = unit.config.settings.get(finding.key or "")
    if setting is None or finding.line != setting.origin.line:
        return None
    replacement = parsed_rewrite(unit, setting)
    if replacement is None:
        return None
    return Proposals(((Change("set", setting.key, replacement),),), supersedes=f"write {replacement}")


def _batched_tokens(unit: LintUnit, finding: Finding) -> Proposals | None:
    """Raise the token budget of the key the finding names to the sequence length the judge read."""
    assessment = unit.assessment
    if assessment is None or assessment.shape.sequence_length is None or finding.key is None:
        return None
    return Proposals(((Change("set", finding.key, str(assessment.shape.sequence_length.value)),),))


def _startup_utilization(unit: LintUnit, finding: Finding) -> Proposals | None:
    """Lower option.gpu_memory_utilization to the highest the device has free at start (the judge's
    figure); the judge then checks that the KV cache still holds a sequence."""
    assessment = unit.assessment
    if assessment is None or assessment.target.instance is None or finding.key is None:
        return None
    from lmi_config.sizing.vllm_release import startup_utilization_limit

    limit = startup_utilization_limit(assessment.target.instance)
    return Proposals(
        ((Change("set", finding.key, f"{limit:g}"),),),
        "lower option.gpu_memory_utilization, then shorten option.max_model_len if the KV cache no longer holds it",
        supersedes=f"set option.gpu_memory_utilization to at most {limit:g}",
    )


_ENVIRONMENT = re.compile(r"set option\.env=([A-Z][A-Z0-9_]*)=([A-Za-z0-9_]+)")


def _engine_environment(unit: LintUnit, finding: Finding) -> Proposals | None:
    """Add the engine variable vLLM's own message names (``VLLM_USE_V1=0``,
    ``VLLM_ATTENTION_BACKEND=FLASHINFER``) to option.env, keeping the variables it sets already."""
    match = _ENVIRONMENT.search(finding.message)
    if match is None or unit.assessment is None:
        return None
    from lmi_config.shape.attention_selection import ENV_KEY, engine_environment

    variables = engine_environment(unit.config)
    variables[match.group(1)] = match.group(2)
    value = ",".join(f"{name}={setting}" for name, setting in variables.items())
    return Proposals(((Change("set", ENV_KEY, value),),), supersedes=match.group(0))


def _attention_feature(unit: LintUnit, finding: Finding) -> Proposals | None:
    """Remove a named attention backend its own validation refuses (so that vLLM picks one that takes
    the model), else the engine variable vLLM's message names."""
    if finding.key == "option.attention_backend" and unit.assessment is not None:
        return Proposals(
            ((Change("remove", finding.key),),), supersedes="leave option.attention_backend unset"
        )
    return _engine_environment(unit, finding)


def _block_size(unit: LintUnit, finding: Finding) -> Proposals | None:
    """Set option.block_size to vLLM's default of 16, a multiple every backend takes."""
    if unit.assessment is None or finding.key != "option.block_size":
        return None
    return Proposals(((Change("set", "option.block_size", "16"),),))


_LORA_RANK = re.compile(r"set option\.max_lora_rank=(\d+)$")


def _lora_rank(unit: LintUnit, finding: Finding) -> Proposals | None:
    """Set option.max_lora_rank to the rank the judge named: the smallest the release accepts that
    holds the adapters' highest rank."""
    match = _LORA_RANK.search(finding.message)
    if match is None or unit.assessment is None:
        return None
    return Proposals(((Change("set", "option.max_lora_rank", match.group(1)),),), supersedes=match.group(0))


def _nxd_setting(unit: LintUnit, finding: Finding) -> Proposals | None:
    """An NxD Inference refusal: the TP degrees the judge lets run, or option.override_neuron_config with
    the edit the finding's advice names (a key removed, a key set)."""
    if finding.key == TP_KEY:
        return _tensor_parallel(unit, finding)
    if (
        unit.assessment is None
        or finding.key != "option.override_neuron_config"
        or " — " not in finding.message
    ):
        return None
    from lmi_config.shape.nxd_config import OVERRIDE_KEY, override_candidates

    advice = finding.message.rsplit(" — ", 1)[1]
    candidates = tuple(
        (Change("set", OVERRIDE_KEY, value) if value is not None else Change("remove", OVERRIDE_KEY),)
        for value in override_candidates(unit.config, advice)
    )
    return Proposals(candidates) if candidates else None


PROPOSERS: dict[str, Callable[[LintUnit, Finding], Proposals | None]] = {
    "LMI102": _allowed_value,
    "LMI103": _allowed_value,
    "LMI303": _tensor_parallel,
    "LMI304": _tensor_parallel,
    "LMI305": _tensor_parallel,
    "LMI306": _tensor_parallel,
    "LMI307": _sequence_length,
    "LMI312": _kv_capacity,
    "LMI301": _memory,
    "LMI302": _memory,
    "LMI313": _memory,  # Neuron DMA rings past the budget (main's device_memory rule): the same nearest shapes
    "LMI601": _runnable_dtype,
    "LMI615": _batched_tokens,
    "LMI616": _tensor_parallel,  # a bitsandbytes checkpoint: the judge keeps the degrees that load it (TP 1)
    "LMI617": _tensor_parallel,  # AWQ / GPTQ groups: the judge keeps the degrees whose slices hold whole groups
    "LMI658": _tensor_parallel,  # a linear method's layer checks at TP (key TP): the degrees whose slices it takes
    "LMI105": _deprecated,
    "LMI618": _engine_environment,  # the V0 engine, where vLLM's message says so
    "LMI619": _attention_feature,  # FlashInfer, where vLLM's message says so; a refused named backend removed
    "LMI620": _block_size,
    "LMI622": _lora_rank,
    "LMI653": _parsed_value,
    "LMI659": _startup_utilization,
    **dict.fromkeys(("LMI645", "LMI646", "LMI647", "LMI648", "LMI649", "LMI650", "LMI651"), _nxd_setting),
}
