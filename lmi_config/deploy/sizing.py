"""The endpoint's timeouts, volume and AMI, sized from the judge's assessment of the configuration.

Nothing here estimates anew: the start-up health check comes from the judge's loading estimate
(``Assessment.loading``: the configured ``option.model_loading_timeout`` and the recommended
one), the download timeout and the volume from the memory model's weights
(``Assessment.memory.weight_bytes_total``) with the judge's own rounding
(:func:`lmi_config.shape.recommended_loading_timeout`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from lmi_config.knowledge.memory import loading_constants
from lmi_config.knowledge.sagemaker import deploy_policy, sagemaker_limits
from lmi_config.shape.resources import beyond_startup_limit_fix
from lmi_config.shape.values import read_count

GIB = 1024**3


@dataclass(frozen=True)
class SizingOverrides:
    """What the user set on the command line (None: size it from the model)."""

    health_check_timeout_seconds: int | None = None
    volume_size_gb: int | None = None
    inference_ami: str | None = None


@dataclass(frozen=True)
class EndpointSizing:
    """The production variant's sizing, why each value, and what stands in the way."""

    health_check_timeout_seconds: int
    download_timeout_seconds: int | None  # only when SageMaker downloads model data (S3 delivery)
    volume_size_gb: int | None
    inference_ami: str | None
    reasons: tuple[str, ...] = field(default_factory=tuple)
    warnings: tuple[str, ...] = field(default_factory=tuple)
    problems: tuple[str, ...] = field(default_factory=tuple)


def _configured_loading_timeout(items: dict[str, str], loading: Any) -> tuple[int, str]:
    if loading is not None:
        return int(loading.timeout_seconds), str(loading.timeout_source)
    text = items.get("option.model_loading_timeout", "").strip()
    written = read_count(text).value  # "²".isdigit() is true, and int() refuses 5,000 digits
    if written is not None:
        return int(written), f"option.model_loading_timeout={int(written)}"
    default = loading_constants().default_model_loading_timeout_seconds
    return default, f"the image default {default} s"


def _health_check(
    items: dict[str, str], loading: Any, override: int | None
) -> tuple[int, list[str], list[str], list[str]]:
    """At least the model loading timeout, and long enough for the estimated download and compile."""
    bounds = sagemaker_limits().variant["container_startup_health_check_timeout_seconds"]
    lowest, highest = bounds.minimum or 60, bounds.maximum or 3600
    configured, configured_source = _configured_loading_timeout(items, loading)
    reasons: list[str] = []
    warnings: list[str] = []
    problems: list[str] = []
    if configured > highest:
        problems.append(
            f"{configured_source} is longer than SageMaker's longest start-up health check ({highest} s): "
            "SageMaker would stop the container before the model server gives up; lower it and compile ahead "
            "of time (option.compiled_graph_path)"
        )
    if override is not None:
        if override < configured:
            problems.append(
                f"--health-check-timeout {override} is shorter than {configured_source}: SageMaker would stop "
                "the container while the model is still loading"
            )
        reasons.append(f"health check {override} s: --health-check-timeout")
        return override, reasons, warnings, problems
    needed, why = configured, f"at least {configured_source}"
    if loading is not None and loading.recommended_seconds > needed:
        needed = int(loading.recommended_seconds)
        what = "download and compile" if loading.compiles else "download and load"
        why = (
            f"{what} estimated at {loading.needed_seconds // 60} min, x "
            f"{loading_constants().timeout_margin_factor:g} (the judge's recommended timeout); {configured_source}"
        )
    if loading is None:
        why += " (the model's size is unknown, so nothing is estimated)"
    if loading is not None and loading.beyond_startup_limit:
        warnings.append(
            f"loading is estimated at {loading.needed_seconds // 60} min, beyond what SageMaker's {highest} s "
            f"start-up health check allows with a margin; {beyond_startup_limit_fix(loading)}"
        )
    seconds = min(max(needed, lowest), highest)
    reasons.append(f"health check {seconds} s: {why}")
    return seconds, reasons, warnings, problems


def _download_timeout(loading: Any) -> tuple[int, str]:
    from lmi_config.shape import recommended_loading_timeout

    if loading is None:
        seconds = recommended_loading_timeout(0)
        return seconds, f"model data download {seconds} s: the weights' size is unknown (the judge's floor)"
    seconds = recommended_loading_timeout(loading.download_seconds)
    return (
        seconds,
        f"model data download {seconds} s: the weights download in about {loading.download_seconds // 60} min "
        "(the judge's estimate and recommended timeout)",
    )


def _volume(
    instance: Any, memory: Any, compiles: bool, override: int | None
) -> tuple[int | None, list[str], list[str], list[str]]:
    """VolumeSizeInGB only where the family accepts it (not trn1, g5, g6, p5 or a family with local NVMe)."""
    bounds = sagemaker_limits().variant["volume_size_gb"]
    supported = instance.ebs_volume_size_supported
    family = instance.family
    reasons: list[str] = []
    warnings: list[str] = []
    problems: list[str] = []
    if override is not None:
        if supported is False:
            problems.append(
                f"--volume-size: ml.{family} instances do not accept VolumeSizeInGB (they use local NVMe "
                "storage; SageMaker refuses the endpoint config)"
            )
        elif supported is None:
            warnings.append(
                f"whether ml.{family} accepts VolumeSizeInGB is not known; --volume-size is passed as given"
            )
        reasons.append(f"volume {override} GB: --volume-size")
        return override, reasons, warnings, problems
    if supported is False:
        reasons.append(f"no VolumeSizeInGB: ml.{family} uses its local NVMe storage and refuses the setting")
        return None, reasons, warnings, problems
    if supported is None:
        reasons.append(f"no VolumeSizeInGB: whether ml.{family} accepts it is not known (give --volume-size)")
        return None, reasons, warnings, problems
    if memory is None:
        reasons.append("no VolumeSizeInGB: the weights' size is unknown (SageMaker's default volume)")
        return None, reasons, warnings, problems
    policy = deploy_policy()
    factor = policy.volume_factor_compiling if compiles else policy.volume_factor_loading
    size = max(math.ceil(memory.weight_bytes_total * factor / GIB), bounds.minimum or 1)
    if bounds.maximum is not None and size > bounds.maximum:
        problems.append(
            f"the weights need about {size} GB of volume{' (x2 for the compile)' if compiles else ''}, more than "
            f"SageMaker's {bounds.maximum} GB; choose an instance family with local NVMe storage"
        )
    reasons.append(
        f"volume {size} GB: {memory.weight_bytes_total / GIB:.1f} GiB of weights x {factor:g}"
        + (" (weights and compiled artifacts)" if compiles else "")
    )
    return size, reasons, warnings, problems


def _inference_ami(instance: Any, name: str | None) -> tuple[str | None, list[str]]:
    if name is None:
        return None, []
    ami = sagemaker_limits().inference_amis.get(name)
    if ami is None:
        return name, [
            f"--inference-ami {name}: SageMaker knows {', '.join(sorted(sagemaker_limits().inference_amis))}"
        ]
    if ami.accelerator != instance.accelerator:
        return name, [
            f"--inference-ami {name} is a {ami.accelerator} AMI and ml.{instance.instance_type} is not"
        ]
    return name, []


def size_endpoint(
    *,
    assessment: Any,
    items: dict[str, str],
    backend: str,
    instance: Any,
    model_data_in_s3: bool,
    overrides: SizingOverrides | None = None,
) -> EndpointSizing:
    """Size the production variant of a rendered configuration (``Rendered.assessment``, ``items``)."""
    overrides = overrides or SizingOverrides()
    loading = assessment.loading if assessment is not None else None
    memory = assessment.memory if assessment is not None else None
    health, reasons, warnings, problems = _health_check(
        items, loading, overrides.health_check_timeout_seconds
    )
    download = None
    if model_data_in_s3:
        download, why = _download_timeout(loading)
        reasons.append(why)
    compiles = bool(loading is not None and loading.compiles) or backend == "tensorrt-llm"
    volume, volume_reasons, volume_warnings, volume_problems = _volume(
        instance, memory, compiles, overrides.volume_size_gb
    )
    ami, ami_problems = _inference_ami(instance, overrides.inference_ami)
    return EndpointSizing(
        health_check_timeout_seconds=health,
        download_timeout_seconds=download,
        volume_size_gb=volume,
        inference_ami=ami,
        reasons=tuple(reasons + volume_reasons),
        warnings=tuple(warnings + volume_warnings),
        problems=tuple(problems + volume_problems + ami_problems),
    )
