"""Facts for ``plan`` and ``search``: on-demand prices (``data/instances.json``) and the search
workflow's grid, cache-config formats, memory error margin, timeouts and failure classes
(``data/search.json``)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from lmi_config.knowledge import load_data

PRICE_KINDS = ("sagemaker", "ec2")


@dataclass(frozen=True)
class Price:
    """A list price of one instance type, with where and when it was published."""

    instance_type: str
    usd_per_hour: float
    kind: str  # sagemaker | ec2: the list it comes from (ec2 may stand in for a missing sagemaker price)
    date: str
    source: str
    region: str = ""


@cache
def _prices() -> dict[str, Any]:
    return dict(load_data("instances.json")["on_demand_prices"])


def on_demand_price(instance_type: str, kind: str = "sagemaker", fallback: bool = True) -> Price | None:
    """The on-demand price per instance-hour from the ``kind`` list; with ``fallback``, a missing
    SageMaker price is stood in for by the EC2 price (its ``kind`` says so). None where no source
    has a price (``not_found`` in the data says why)."""
    table = _prices()
    name = instance_type.removeprefix("ml.")
    found = table[kind].get(name)
    if found is None and fallback and kind != "ec2":
        kind, found = "ec2", table["ec2"].get(name)
    if found is None:
        return None
    return Price(name, float(found["usd_per_hour"]), kind, found["date"], found["source"], found["region"])


@dataclass(frozen=True)
class SeedGrid:
    """The candidate lists of the optimal-export-configuration workflow (seed 000)."""

    batch_sizes: tuple[int, ...]
    minimum_sequence_length: int
    minimum_tensor_parallel_size: int


@dataclass(frozen=True)
class FailureClass:
    """How a failed trial is recognised: text in its last lines, or the signal that ended it."""

    name: str
    meaning: str
    patterns: tuple[str, ...]
    signals: tuple[int, ...]


@dataclass(frozen=True)
class SearchConstants:
    """Everything the search needs besides the memory model."""

    grid: SeedGrid
    export_arguments: tuple[str, ...]
    load_classes: dict[str, str]
    load_template: str
    current_fields: tuple[str, ...]
    legacy_fields: tuple[str, ...]
    instance_type_of_family: dict[str, str]
    auto_cast_types: tuple[str, ...]
    memory_error_margin: float
    export_minimum_seconds: int
    load_seconds: int
    disk_free_factor: float
    failure_classes: tuple[FailureClass, ...]


@cache
def search_constants() -> SearchConstants:
    """``data/search.json`` as typed values."""
    data = load_data("search.json")
    grid = data["seed_grid"]
    commands = data["commands"]
    formats = data["cache_config"]
    return SearchConstants(
        grid=SeedGrid(
            tuple(grid["batch_sizes"]),
            int(grid["minimum_sequence_length"]),
            int(grid["minimum_tensor_parallel_size"]),
        ),
        export_arguments=tuple(commands["export"]),
        load_classes=dict(commands["load_classes"]),
        load_template=commands["load"],
        current_fields=tuple(formats["current"]["fields"]),
        legacy_fields=tuple(formats["legacy"]["fields"]),
        instance_type_of_family=dict(formats["current"]["instance_type_of_family"]),
        auto_cast_types=tuple(formats["legacy"]["auto_cast_types"]),
        memory_error_margin=float(data["memory_error_margin"]["fraction"]),
        export_minimum_seconds=int(data["timeouts"]["export_minimum_seconds"]),
        load_seconds=int(data["timeouts"]["load_seconds"]),
        disk_free_factor=float(data["disk"]["free_factor"]),
        failure_classes=tuple(
            FailureClass(row["class"], row["meaning"], tuple(row["patterns"]), tuple(row.get("signals", ())))
            for row in data["failure_classes"]
        ),
    )
