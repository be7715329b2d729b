"""The Java front end's part of the shape: what ``option.rolling_batch`` becomes and whether the
request batching is rolling, async or dynamic (``LmiConfigRecommender.setRollingBatch``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lmi_config.configfile.canonical import CanonicalConfig
from lmi_config.knowledge import Release
from lmi_config.knowledge.container import (
    async_entry_points,
    dynamic_batch_keys,
    handler_rolling_batch,
    rolling_batch_rule,
)
from lmi_config.modelarch import ModelArch
from lmi_config.shape.types import Batching, Resolved
from lmi_config.shape.values import read_count

if TYPE_CHECKING:
    from lmi_config.shape.dimensions import Target


def integer(config: CanonicalConfig, *keys: str) -> tuple[int | None, str | None]:
    """The first of ``keys`` whose value is a non-negative integer the container can parse, and that key.

    A key whose value cannot be used is skipped here; :func:`lmi_config.shape.values.unusable_values`
    reports it, and the resolvers leave its dimension unknown rather than defaulted.
    """
    for key in keys:
        value = read_count(config.get(key), minimum=0).value
        if value is not None:
            return int(value), key
    return None, None


def reaches_vllm(key: str, target: Target) -> bool:
    """Whether the container passes ``key`` to the image's vLLM: a catalogue entry for the backend at
    the target release, or an engine argument of that vLLM once LMI passes those through (0.32)."""
    from lmi_config.knowledge import resolve_backend
    from lmi_config.knowledge.options import catalogue, engine_args_for, passes_engine_args

    backend = resolve_backend(target.backend)
    if any(
        spec.applies_to(backend) and spec.available_in(target.release) for spec in catalogue().get(key, ())
    ):
        return True
    return passes_engine_args(backend, target.release) and key.removeprefix("option.") in engine_args_for(
        target.release.vllm
    )


def flag(config: CanonicalConfig, key: str) -> bool:
    """A boolean option as the container's pydantic classes read ``true``."""
    return (config.get(key) or "").strip().lower() == "true"


def resolve_batching(
    config: CanonicalConfig, backend: str, release: Release, arch: ModelArch | None
) -> Batching:
    """The effective rolling batch and batching mode, as the recommender decides them."""
    rule = rolling_batch_rule(backend, release)
    dynamic, dynamic_key = integer(config, *dynamic_batch_keys())
    written = (config.get("option.rolling_batch") or "").strip().lower()
    via_auto = False
    if dynamic is not None and dynamic > 1:
        rolling = Resolved(
            "disable", f"{dynamic_key}={dynamic} > 1: the recommender disables rolling batch", dynamic_key
        )
    elif written and written != "auto":
        rolling = _handler_runs(written, backend, release)
    else:
        rolling, via_auto = _resolve_auto(config, written, rule, arch)
    entry_point = (config.get("option.entryPoint") or "").strip()
    async_mode = (
        flag(config, "option.async_mode")
        or entry_point in async_entry_points()
        or (via_auto and rule.async_mode and rolling.value == "disable")
    )
    if async_mode:
        mode = "async"
    elif rolling.value == "disable":
        mode = "dynamic"
    else:
        mode = "rolling"
    return Batching(rolling, mode, async_mode)


def _handler_runs(written: str, backend: str, release: Release) -> Resolved[str]:
    """A written rolling_batch as the backend's handler runs it (transformers-neuronx runs its own
    rolling batch for lmi-dist or tnx alike)."""
    handler = handler_rolling_batch(backend, release)
    runs = handler[0].get(written, handler[1]) if handler is not None else written
    if runs == written:
        return Resolved(written, "option.rolling_batch", "option.rolling_batch")
    return Resolved(
        runs,
        f"option.rolling_batch={written}: the {backend} handler runs {runs} for it",
        "option.rolling_batch",
    )


def _resolve_auto(
    config: CanonicalConfig, written: str, rule, arch: ModelArch | None
) -> tuple[Resolved[str], bool]:
    """``auto`` (written or the absent default) → the value for this backend and release."""
    if not written and rule.absent != "auto":
        return Resolved(rule.absent, f"container default option.rolling_batch={rule.absent}"), False
    if arch is not None and not arch.is_text_generation:
        return Resolved("disable", "rolling_batch auto: not a text-generation model"), True
    user_batch, _ = integer(config, "option.max_rolling_batch_size")
    if (
        rule.large_batch_threshold is not None
        and user_batch is not None
        and user_batch >= rule.large_batch_threshold
        and rule.large_batch_becomes
    ):
        return (
            Resolved(
                rule.large_batch_becomes,
                f"rolling_batch auto with max_rolling_batch_size >= {rule.large_batch_threshold}: "
                f"{rule.large_batch_becomes}",
            ),
            True,
        )
    where = "option.rolling_batch=auto" if written else "option.rolling_batch not set"
    return Resolved(rule.auto, f"{where}: the recommender chooses {rule.auto}"), True
