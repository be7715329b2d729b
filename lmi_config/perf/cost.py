"""Dollars per million output tokens: an instance's hourly price over what it generates in an hour."""

from __future__ import annotations

import math

SECONDS_PER_HOUR = 3600
TOKENS_PER_MILLION = 1_000_000


def usd_per_million_output_tokens(usd_per_hour: float, output_tokens_per_second: float) -> float | None:
    """The price of a million output tokens at a sustained rate; None when nothing is generated, or
    so little that the price is beyond any number (a figure JSON can carry and a table can print)."""
    if not output_tokens_per_second > 0:
        return None
    price = usd_per_hour / (output_tokens_per_second * SECONDS_PER_HOUR) * TOKENS_PER_MILLION
    return price if math.isfinite(price) else None
