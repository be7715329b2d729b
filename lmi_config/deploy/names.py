"""The names deploy gives what it creates: a model and an endpoint config per run, named after the
endpoint and stamped with the run's UTC time to the millisecond -- two runs for one endpoint (a
``--update`` right after a ``--no-wait`` deploy) never ask SageMaker for a name that exists.
"""

from __future__ import annotations

import time

from lmi_config.knowledge.sagemaker import sagemaker_limits

STAMP_FORMAT = "%Y%m%d-%H%M%S"  # then "-" and the milliseconds
STAMP_LENGTH = len("00000000-000000-000")


def name_length() -> int:
    """The longest name SageMaker takes for a model, an endpoint config and an endpoint alike (63,
    from botocore's API model: ``data/sagemaker_api.json``)."""
    names = sagemaker_limits().names
    return min(
        bound
        for key in ("model_name", "endpoint_config_name", "endpoint_name")
        if (bound := names[key].maximum) is not None
    )


def base_length() -> int:
    """How much of the endpoint name a stamped model or endpoint-config name keeps."""
    return name_length() - 1 - STAMP_LENGTH


def stamp(now: float) -> str:
    """The UTC time ``now`` as ``YYYYmmdd-HHMMSS-mmm``."""
    return f"{time.strftime(STAMP_FORMAT, time.gmtime(now))}-{int(now * 1000) % 1000:03d}"


def stamped(base: str, now: float) -> str:
    """A name unique per run: the base, cut so the whole fits SageMaker's length, and a UTC stamp."""
    return f"{base[: base_length()].rstrip('-')}-{stamp(now)}"


COMPONENT_SUFFIX_LENGTH = len("-c99")


def component_model_name(endpoint_name: str, index: int, now: float) -> str:
    """The model of an endpoint's ``index``-th inference component: ``ENDPOINT-c2-STAMP``, the
    endpoint's name cut so the suffix and the stamp fit."""
    suffix = f"-c{index}"
    base = endpoint_name[: base_length() - COMPONENT_SUFFIX_LENGTH].rstrip("-")
    return stamped(f"{base}{suffix}", now)


def search_fragment(endpoint_name: str) -> str:
    """The part of the endpoint's name every model and endpoint config deploy makes for it contains
    (narrows a listing; the ``lmi-config:endpoint`` tag decides)."""
    return endpoint_name[: base_length() - COMPONENT_SUFFIX_LENGTH].rstrip("-")
