"""How the container decides its shape (``data/container_shape.json``): the recommender's rolling
batch per backend and release, and which keys carry the batch and the sequence length."""

from functools import cache
from typing import NamedTuple

from lmi_config.knowledge import Release, load_data


class RollingBatchRule(NamedTuple):
    """What ``option.rolling_batch`` becomes for a backend in a range of releases."""

    backends: tuple[str, ...]
    since: str | None
    until: str | None
    absent: str  # the value when the key is not set
    auto: str  # what ``auto`` resolves to
    large_batch_threshold: int | None  # a user max_rolling_batch_size at least this …
    large_batch_becomes: str | None  # … makes auto resolve to this instead
    async_mode: bool  # resolving auto also sets option.async_mode=true
    source: str

    def matches(self, backend: str, release: Release) -> bool:
        return ("*" in self.backends or backend in self.backends) and release.in_range(self.since, self.until)


class BatchKeys(NamedTuple):
    """The keys that carry the batch size for some backends in a batching mode."""

    backends: tuple[str, ...]
    modes: tuple[str, ...]  # rolling | async | dynamic
    keys: tuple[str, ...]  # read in this order
    render_keys: tuple[str, ...]  # what render writes (every one of them, same value)
    default: int | None  # None: the recommender's max_rolling_batch_size default
    source: str


class SequenceKeys(NamedTuple):
    """The keys that carry the sequence length for some backends."""

    backends: tuple[str, ...]
    keys: tuple[str, ...]
    render_key: str | None  # None: render offers no ``auto`` for the sequence length
    default: str  # neuron | model_max
    source: str


def _matches(backends: tuple[str, ...], backend: str) -> bool:
    return "*" in backends or backend in backends


@cache
def rolling_batch_rules() -> tuple[RollingBatchRule, ...]:
    """The recommender's rolling-batch resolution, first match wins."""
    rules = []
    for row in load_data("container_shape.json")["rolling_batch"]:
        large = row.get("auto_large_batch") or {}
        rules.append(
            RollingBatchRule(
                backends=tuple(row["backends"]),
                since=row.get("since"),
                until=row.get("until"),
                absent=row["absent"],
                auto=row["auto"],
                large_batch_threshold=large.get("min_max_rolling_batch_size"),
                large_batch_becomes=large.get("becomes"),
                async_mode=bool(row.get("async_mode")),
                source=row["source"],
            )
        )
    return tuple(rules)


def rolling_batch_rule(backend: str, release: Release) -> RollingBatchRule:
    """The rule for this backend and release (the table ends with a catch-all)."""
    return next(rule for rule in rolling_batch_rules() if rule.matches(backend, release))


def handler_rolling_batch(backend: str, release: Release) -> tuple[dict[str, str], str, str] | None:
    """What the backend's handler runs for each rolling_batch value (the map, the value for any other,
    the source), where its handler decides more than the recommender; None elsewhere."""
    for row in load_data("container_shape.json")["handler_rolling_batch"]:
        if backend in row["backends"] and release.in_range(row.get("since"), row.get("until")):
            return dict(row["runs"]), row["otherwise"], row["source"]
    return None


@cache
def dynamic_batch_keys() -> tuple[str, ...]:
    """Model-level keys whose value > 1 makes the recommender disable rolling batch."""
    return tuple(load_data("container_shape.json")["dynamic_batching_forces_disable"]["keys"])


@cache
def async_entry_points() -> frozenset[str]:
    """Entry points that are the async services (batch as with rolling batch)."""
    return frozenset(load_data("container_shape.json")["async_entry_points"]["modules"])


@cache
def precompiled_keys() -> tuple[str, ...]:
    """Keys that point the Neuron handler at compiled artifacts, so that nothing compiles at start-up."""
    return tuple(load_data("container_shape.json")["precompiled_artifacts"]["keys"])


@cache
def recommended_max_rolling_batch_size(rolling_batch: str) -> int:
    """The recommender's max_rolling_batch_size when the user sets none."""
    row = load_data("container_shape.json")["recommended_max_rolling_batch_size"]
    return int(row["by_rolling_batch"].get(rolling_batch, row["otherwise"]))


@cache
def _batch_tables() -> tuple[BatchKeys, ...]:
    return tuple(
        BatchKeys(
            backends=tuple(row["backends"]),
            modes=tuple(row["modes"]),
            keys=tuple(row["keys"]),
            render_keys=tuple(row["render_keys"]),
            default=row["default"] if isinstance(row["default"], int) else None,
            source=row["source"],
        )
        for row in load_data("container_shape.json")["batch"]
    )


def batch_keys(backend: str, mode: str) -> BatchKeys:
    """Which keys carry the batch for a backend in a batching mode (first match wins)."""
    return next(row for row in _batch_tables() if _matches(row.backends, backend) and mode in row.modes)


@cache
def _sequence_tables() -> tuple[SequenceKeys, ...]:
    return tuple(
        SequenceKeys(
            backends=tuple(row["backends"]),
            keys=tuple(row["keys"]),
            render_key=row.get("render_key"),
            default=row["default"],
            source=row["source"],
        )
        for row in load_data("container_shape.json")["sequence"]
    )


def sequence_keys(backend: str) -> SequenceKeys:
    """Which keys carry the sequence length for a backend (first match wins)."""
    return next(row for row in _sequence_tables() if _matches(row.backends, backend))


@cache
def _dimensions() -> dict[str, str]:
    dimensions = {"option.tensor_parallel_degree": "tensor_parallel_degree"}
    for sequence_row in _sequence_tables():
        dimensions.update(dict.fromkeys(sequence_row.keys, "sequence_length"))
    for batch_row in _batch_tables():
        dimensions.update(dict.fromkeys(batch_row.keys + batch_row.render_keys, "batch_size"))
    return dimensions


def dimension_of(key: str) -> str | None:
    """Which dimension of the shape a key carries for some backend: ``tensor_parallel_degree``,
    ``batch_size`` or ``sequence_length`` (render resolves ``auto`` for exactly these keys)."""
    return _dimensions().get(key)
