"""Settings the container ignores or replaces: the judge names the value that takes effect instead."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lmi_config.knowledge.container import batch_keys, rolling_batch_rule
from lmi_config.shape.problems import Problem

if TYPE_CHECKING:
    from lmi_config.configfile.canonical import CanonicalConfig
    from lmi_config.shape.dimensions import Target
    from lmi_config.shape.types import ContainerShape

ROLLING_BATCH_KEY = "option.rolling_batch"


def judge_settings_without_effect(
    config: CanonicalConfig, shape: ContainerShape, target: Target
) -> list[Problem]:
    """A rolling_batch the handler runs as something else, and batch keys of a batching mode not in use
    (for the backends whose rolling-batch resolution the data states; a custom handler reads options
    its own way)."""
    problems = []
    rolling = shape.batching.rolling_batch
    written = (config.get(ROLLING_BATCH_KEY) or "").strip().lower()
    if rolling.key == ROLLING_BATCH_KEY and written and written != rolling.value:
        problems.append(
            Problem(
                "setting-without-effect",
                "warning",
                f"option.rolling_batch={written} is not what runs: {rolling.source} — write "
                f"option.rolling_batch={rolling.value} (or auto) so the file says what the container does",
                ROLLING_BATCH_KEY,
            )
        )
    known = "*" not in rolling_batch_rule(target.backend, target.release).backends  # a row of its own
    if shape.batching.mode == "dynamic" and shape.batch_size is not None and known:
        advice = (
            "set option.rolling_batch=auto to use {key}, or remove it"
            if not written
            else "remove it (this configuration batches requests with batch_size)"
        )
        used = set(batch_keys(target.backend, "dynamic").keys)
        for key in batch_keys(target.backend, "rolling").keys:
            value = (config.get(key) or "").strip()
            if key in used or not value or value == str(shape.batch_size.value):
                continue
            problems.append(
                Problem(
                    "setting-without-effect",
                    "warning",
                    f"{key}={value} has no effect: rolling batch is off ({rolling.source}), so the container "
                    f"batches {shape.batch_size.value} ({shape.batch_size.source}) — {advice.format(key=key)}",
                    key,
                )
            )
    return problems
