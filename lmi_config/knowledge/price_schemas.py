"""Schema of the price table in ``data/instances.json`` (``on_demand_prices``, written by
``scripts/gen_prices.py``)."""

from __future__ import annotations

from pydantic import Field

from lmi_config.knowledge.schema_base import Sourced, Strict


class PriceEntry(Sourced):
    """One instance type's on-demand price, where and when it was listed."""

    usd_per_hour: float = Field(gt=0)
    region: str
    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")


class OnDemandPrices(Sourced):
    """List prices per instance-hour (plan's $/M tokens), generated with their sources."""

    unit: str
    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    generated_by: str
    note: str
    sagemaker: dict[str, PriceEntry]
    ec2: dict[str, PriceEntry]
    not_found: dict[str, str]


__all__ = ["OnDemandPrices", "PriceEntry", "Strict"]
