"""Candidates as they will be written, judged by the one judge: the candidate writer every search
uses (``plan``, ``render auto``, ``search``), and the TP degrees the judge lets a planner choose.

A candidate is a configuration as it will be written (the fixed keys plus the TP, batch and
sequence-length keys the container reads for this backend, from ``data/container_shape.json``);
the judge resolves and judges exactly that configuration, so what render says ``auto`` became is
what lint and explain read back.
"""

from __future__ import annotations

from dataclasses import dataclass

from lmi_config.configfile.canonical import CanonicalConfig, Origin, Setting
from lmi_config.knowledge import Backend, Release
from lmi_config.knowledge.container import batch_keys, sequence_keys
from lmi_config.knowledge.instances import Instance
from lmi_config.modelarch import ModelArch
from lmi_config.shape import (
    Assessment,
    ParallelTarget,
    Target,
    assess,
    judge_tensor_parallel,
    make_target,
    resolve_shape,
)
from lmi_config.shape.capability import runnable_dtype
from lmi_config.sizing import MemoryBreakdown, Shape

TP_KEY = "option.tensor_parallel_degree"


@dataclass(frozen=True)
class Candidate:
    """One configuration as written, and the judge's assessment of it."""

    items: tuple[tuple[str, str], ...]
    assessment: Assessment

    @property
    def shape(self) -> Shape:
        shape = self.assessment.shape.sizing_shape()
        assert shape is not None
        return shape

    @property
    def memory(self) -> MemoryBreakdown:
        assert self.assessment.memory is not None
        return self.assessment.memory

    @property
    def copies(self) -> int:
        copies = self.assessment.shape.copies
        return copies.value if copies else 1

    @property
    def concurrency(self) -> int:
        return self.copies * self.shape.batch_size


def configuration(items: dict[str, str], name: str = "spec") -> CanonicalConfig:
    """A canonical configuration holding ``items`` as if written in a file."""
    config = CanonicalConfig()
    for key, value in items.items():
        config.offer(Setting(key, value, Origin(name, None, "spec"), "file"))
    return config


def parallel_target(target: Target, backend_accelerator: str) -> ParallelTarget:
    """The judge's TP view of a target."""
    return ParallelTarget(target.backend, backend_accelerator, target.instance, target.arch)


def valid_degrees(target: Target, backend_accelerator: str) -> list[int]:
    """TP degrees the judge does not block on this instance (runtime, documented, heads, KV heads)."""
    instance = target.instance
    if instance is None:
        return []
    return [
        degree
        for degree in range(1, instance.num_cores + 1)
        if degree_allowed(target, backend_accelerator, degree)
    ]


def degree_allowed(target: Target, backend_accelerator: str, degree: int) -> bool:
    """Whether the judge lets a planner choose this TP degree (what :func:`valid_degrees` keeps)."""
    judged = parallel_target(target, backend_accelerator)
    return not any(problem.blocking for problem in judge_tensor_parallel(judged, degree))


class CandidateWriter:
    """Writes candidates as the configuration will be written and asks the judge about each.

    ``items`` are the fixed keys (a spec's, or the backend's render options); a candidate adds
    the TP key, every key that carries the batch in this backend's batching mode, and the key
    that carries the sequence length (``data/container_shape.json``).
    """

    def __init__(self, items: dict[str, str], target: Target, backend_accelerator: str):
        dtype = runnable_dtype(configuration(items), target)
        if dtype is not None:  # a bfloat16 checkpoint on a GPU without bfloat16: write the dtype it can run
            items = {**items, "option.dtype": dtype}
        self.items = items
        self.target = target
        self.backend_accelerator = backend_accelerator
        base = resolve_shape(configuration(items), target)
        self.batch_render_keys = batch_keys(target.backend, base.batching.mode).render_keys
        self.sequence_key = sequence_keys(target.backend).render_key
        self.base = base

    @property
    def default_batch(self) -> int | None:
        """The batch the container uses when none is written (LMI's recommended rolling batch)."""
        batch = self.base.batch_size
        return batch.value if batch is not None and batch.key is None else None

    def written(self, degree: int | None, batch: int | None, sequence: int | None) -> dict[str, str]:
        """The configuration of one candidate, key by key (None leaves a dimension to the container)."""
        items = dict(self.items)
        if degree is not None:
            items[TP_KEY] = str(degree)
        if batch is not None:
            for key in self.batch_render_keys:
                items[key] = str(batch)
        if sequence is not None and self.sequence_key:
            items[self.sequence_key] = str(sequence)
        return items

    def judge(self, degree: int | None, batch: int | None, sequence: int | None) -> Candidate:
        """The judge's assessment of the candidate as written."""
        items = self.written(degree, batch, sequence)
        assessment = assess(configuration(items), self.target, backend_accelerator=self.backend_accelerator)
        return Candidate(tuple(sorted(items.items())), assessment)


def planned_writer(
    backend: Backend,
    release: Release,
    instance: Instance,
    arch: ModelArch,
    *,
    model_id: str,
    dtype: str | None,
    optimum_neuron_export: str | None,
    extra: dict[str, str] | None = None,
) -> CandidateWriter:
    """The writer of a planned configuration: the backend's render options at the release, the model,
    the dtype asked for and ``extra`` keys, judged for the instance (``plan``, and ``search``'s trials)."""
    items = backend.render_options(release)
    items["option.model_id"] = model_id
    if dtype:
        items["option.dtype"] = dtype
    items.update(extra or {})
    target = make_target(
        backend.id, backend.accelerator, release, instance, arch, optimum_neuron_export=optimum_neuron_export
    )
    return CandidateWriter(items, target, backend.accelerator)
