"""The candidates of the optimal-export-configuration workflow (seed 000) and the judge's
prediction for each.

The grid is the seed's: TP sizes that are multiples of the cores per device, at least 2, at
most the cores available and dividing the attention heads; the batch sizes
[1, 4, 8, 16, 32, 64, 128]; the powers of two from 1024 below the model's maximum positions.
A prediction is the one judge's assessment of the configuration the export builds, written by
the planner's candidate writer for the memory model of the exporting backend.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from lmi_config.errors import InputError
from lmi_config.knowledge.planning import search_constants

MEMORY_CHECKS = ("memory-exceeds-budget", "memory-headroom-low", "vllm-kv-capacity")
Key = tuple[int, int, int]


@dataclass(frozen=True, order=True)
class Trial:
    """One (tensor_parallel_size, batch_size, sequence_length) to export and load."""

    tensor_parallel_size: int
    batch_size: int
    sequence_length: int

    @property
    def key(self) -> Key:
        return (self.tensor_parallel_size, self.batch_size, self.sequence_length)

    def label(self) -> str:
        return f"TP {self.tensor_parallel_size}, batch {self.batch_size}, {self.sequence_length} tokens"


@dataclass(frozen=True)
class TrialGrid:
    """The candidate lists, each ascending."""

    tensor_parallel_sizes: tuple[int, ...]
    batch_sizes: tuple[int, ...]
    sequence_lengths: tuple[int, ...]

    def seed_order(self) -> Iterator[Trial]:
        """Increasing TP, decreasing batch, decreasing sequence length (the seed's order)."""
        for tensor_parallel, batch in self.seed_pairs():
            for sequence in reversed(self.sequence_lengths):
                yield Trial(tensor_parallel, batch, sequence)

    def seed_pairs(self) -> list[tuple[int, int]]:
        """The (TP, batch) pairs in the seed's order: increasing TP, decreasing batch."""
        return [
            (tensor_parallel, batch)
            for tensor_parallel in self.tensor_parallel_sizes
            for batch in reversed(self.batch_sizes)
        ]

    @property
    def size(self) -> int:
        return len(self.tensor_parallel_sizes) * len(self.batch_sizes) * len(self.sequence_lengths)


def seed_grid(
    heads: int, max_positions: int | None, available_cores: int, cores_per_device: int
) -> TrialGrid:
    """The seed's candidate lists for a model on a machine."""
    grid = search_constants().grid
    step = max(cores_per_device, 1)
    sizes = tuple(
        size
        for size in range(step, available_cores + 1, step)
        if size >= grid.minimum_tensor_parallel_size and heads % size == 0
    )
    lengths = []
    length = grid.minimum_sequence_length
    while max_positions is not None and length < max_positions:
        lengths.append(length)
        length *= 2
    return TrialGrid(sizes, tuple(sorted(grid.batch_sizes)), tuple(lengths))


@dataclass(frozen=True)
class Prediction:
    """The judge's view of one trial."""

    peak_bytes: int
    certain_peak_bytes: int  # without the items the sources do not settle
    budget_bytes: int
    blocking: tuple[tuple[str, str], ...]  # (rule slug, message) of errors other than memory
    needed_seconds: int | None  # the judge's download + compile estimate

    @property
    def fits(self) -> bool:
        """Within the device's memory as predicted (the device fails only over its budget)."""
        return self.peak_bytes <= self.budget_bytes

    def certainly_over(self, margin: float) -> bool:
        """Over the budget even if the model overestimates by ``margin``."""
        return self.certain_peak_bytes * (1 - margin) > self.budget_bytes

    def describe(self) -> str:
        return f"{self.peak_bytes / 2**30:.1f} of {self.budget_bytes / 2**30:.1f} GiB per NeuronCore"


class Predictor:
    """Writes each trial as the configuration the export builds and asks the judge (cached)."""

    def __init__(
        self,
        arch: Any,
        instance: Any,
        backend_name: str,
        dtype: str | None = None,
        exporter: str | None = None,
    ):
        from lmi_config.knowledge import default_release, resolve_backend
        from lmi_config.knowledge.engine_support import ANY_OPTIMUM_NEURON
        from lmi_config.plan.writer import planned_writer

        backend = resolve_backend(backend_name)
        release = default_release(backend.id)[0]
        self.writer = planned_writer(
            backend,
            release,
            instance,
            arch,
            model_id=arch.model_id,
            dtype=dtype,
            optimum_neuron_export=exporter or ANY_OPTIMUM_NEURON,
        )
        self.backend = backend.id
        self.instance = instance
        self.release = release
        self._cache: dict[Key, Prediction] = {}

    def refuse_unexported(self, suffix: str = "") -> None:
        """:class:`InputError` when the exporter does not register the model's type: every trial's
        export would stop the same way, so nothing is tried."""
        from lmi_config.shape.engines import export_problems

        unexported = export_problems(self.writer.target)
        if unexported:
            raise InputError(unexported[0].message + suffix)

    def __call__(self, trial: Trial) -> Prediction:
        found = self._cache.get(trial.key)
        if found is None:
            found = self._cache[trial.key] = self._predict(trial)
        return found

    def _predict(self, trial: Trial) -> Prediction:
        assessment = self.writer.judge(
            trial.tensor_parallel_size, trial.batch_size, trial.sequence_length
        ).assessment
        memory = assessment.memory
        if memory is None:  # a layout the memory model does not describe (models_generated.json says why)
            arch = self.writer.target.arch
            why = assessment.memory_not_estimated or "the judge sized no memory for it"
            raise InputError(
                f"memory is not estimated for {getattr(arch, 'model_id', 'this model')} ({why}); "
                "search predicts each trial's memory to order, prune and time its exports, so it cannot search "
                "this model — export it with optimum-neuron by hand"
            )
        blocking = tuple(
            (problem.check, problem.message)
            for problem in assessment.problems
            if problem.severity == "error" and problem.check not in MEMORY_CHECKS
        )
        loading = assessment.loading
        return Prediction(
            memory.peak_bytes,
            memory.certain_peak_bytes,
            memory.budget_bytes,
            blocking,
            loading.needed_seconds if loading is not None else None,
        )


def export_timeout_seconds(prediction: Prediction, override: int | None) -> int:
    """The export's timeout: ``override``, else the judge's compile estimate x its timeout margin,
    at least the data's minimum (the anchor waits a fixed hour for every export)."""
    if override:
        return override
    from lmi_config.knowledge.memory import loading_constants

    minimum = search_constants().export_minimum_seconds
    if prediction.needed_seconds is None:
        return minimum
    return max(minimum, math.ceil(prediction.needed_seconds * loading_constants().timeout_margin_factor))
