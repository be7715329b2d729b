"""The names deploy gives what it creates: a model and an endpoint config per run, named after the
endpoint and stamped with the run's UTC time to the millisecond -- two runs for one endpoint (a
``--update`` right after a ``--no-wait`` deploy) never ask SageMaker for a name that exists.
"""

from __future__ import annotations

import time

STAMP_FORMAT = "%Y%m%d-%H%M%S"  # then "-" and the milliseconds
STAMP_LENGTH = len("00000000-000000-000")
NAME_LENGTH = 63  # SageMaker's longest model, endpoint config and endpoint name


def stamp(now: float) -> str:
    """The UTC time ``now`` as ``YYYYmmdd-HHMMSS-mmm``."""
    return f"{time.strftime(STAMP_FORMAT, time.gmtime(now))}-{int(now * 1000) % 1000:03d}"


def stamped(base: str, now: float) -> str:
    """A name unique per run: the base, cut so the whole fits in 63 characters, and a UTC stamp."""
    return f"{base[: NAME_LENGTH - 1 - STAMP_LENGTH].rstrip('-')}-{stamp(now)}"
