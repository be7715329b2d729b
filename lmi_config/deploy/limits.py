"""Every SageMaker limit a plan must meet, checked before the first call.

botocore checks types, required fields and minimums only, and a test server accepts the rest;
SageMaker itself refuses the call after the earlier ones have created resources. The limits are
botocore's service model (``data/sagemaker_api.json``).
"""

from __future__ import annotations

import re
import unicodedata

from lmi_config.deploy.plan import DeployPlan
from lmi_config.knowledge.sagemaker import Bounds, sagemaker_limits

_TAG_PUNCTUATION = set("_.:/=+-@ ")
_NAME_WORDS = {
    "endpoint_name": "endpoint name",
    "model_name": "model name",
    "endpoint_config_name": "endpoint config name",
    "variant_name": "variant name",
}
_VARIANT_FIELDS = {
    "container_startup_health_check_timeout_seconds": "ContainerStartupHealthCheckTimeoutInSeconds",
    "model_data_download_timeout_seconds": "ModelDataDownloadTimeoutInSeconds",
    "volume_size_gb": "VolumeSizeInGB",
    "initial_instance_count": "InitialInstanceCount",
}


def _length_problem(what: str, value: str, bounds: Bounds) -> str | None:
    if bounds.maximum is not None and len(value) > bounds.maximum:
        return f"{what} is {len(value)} characters; SageMaker allows {bounds.maximum}"
    if not value:
        return f"{what} is empty"
    if bounds.minimum is not None and len(value) < bounds.minimum:
        return f"{what} {value!r} is {len(value)} characters; SageMaker needs at least {bounds.minimum}"
    return None


def _pattern_problem(what: str, value: str, bounds: Bounds) -> str | None:
    if bounds.pattern and not re.fullmatch(bounds.pattern, value):
        return f"{what} {value!r} does not match SageMaker's pattern {bounds.pattern}"
    return None


def name_problems(plan: DeployPlan) -> list[str]:
    """Names: at most 63 characters, letters, digits and hyphens (no underscores, no dots)."""
    limits = sagemaker_limits()
    problems = []
    for key, word in _NAME_WORDS.items():
        value = getattr(plan, key)
        bounds = limits.names[key]
        problem = _length_problem(word, value, bounds) or _pattern_problem(word, value, bounds)
        if problem:
            problems.append(problem + "; use letters, digits and hyphens, at most 63 characters")
    return problems


def environment_problems(environment: dict[str, str]) -> list[str]:
    """At most 100 entries, keys matching the pattern, keys and values up to 1,024 characters, 32 KB in all."""
    limits = sagemaker_limits()
    problems = []
    if len(environment) > limits.environment_entries:
        problems.append(
            f"the container Environment has {len(environment)} variables; SageMaker allows "
            f"{limits.environment_entries} (deliver the configuration as serving.properties: --delivery s3)"
        )
    total = 0
    for key, value in environment.items():
        total += len(key.encode("utf-8")) + len(value.encode("utf-8"))
        for problem in (
            _pattern_problem("Environment key", key, limits.environment_key),
            _length_problem(f"Environment key {key}", key, limits.environment_key),
            _length_problem(f"the value of {key}", value, limits.environment_value) if value else None,
        ):
            if problem:
                problems.append(problem)
    if limits.environment_total_bytes is not None and total > limits.environment_total_bytes:
        problems.append(
            f"the container Environment holds {total} bytes of keys and values; SageMaker allows "
            f"{limits.environment_total_bytes}"
        )
    return problems


def _integer_problem(field: str, value: int | None) -> str | None:
    if value is None:
        return None
    bounds = sagemaker_limits().variant[field]
    name = _VARIANT_FIELDS[field]
    if bounds.minimum is not None and value < bounds.minimum:
        return f"{name}={value} is below SageMaker's minimum {bounds.minimum}"
    if bounds.maximum is not None and value > bounds.maximum:
        return f"{name}={value} is above SageMaker's maximum {bounds.maximum}"
    return None


def variant_problems(plan: DeployPlan) -> list[str]:
    """Timeouts 60-3600 s, volume 1-512 GB, at least one instance, an instance type SageMaker hosts."""
    sizing = plan.sizing
    values = {
        "container_startup_health_check_timeout_seconds": sizing.health_check_timeout_seconds,
        "model_data_download_timeout_seconds": sizing.download_timeout_seconds,
        "volume_size_gb": sizing.volume_size_gb,
        "initial_instance_count": plan.instance_count,
    }
    problems = [problem for field, value in values.items() if (problem := _integer_problem(field, value))]
    instance_type = f"ml.{plan.instance_type}"
    if instance_type not in sagemaker_limits().instance_types:
        problems.append(f"{instance_type} is not an instance type SageMaker hosts endpoints on")
    return problems


def _tag_text_ok(text: str) -> bool:
    return all(
        character in _TAG_PUNCTUATION or unicodedata.category(character)[0] in ("L", "N", "Z")
        for character in text
    )


def tag_problems(tags: tuple[tuple[str, str], ...]) -> list[str]:
    """At most 50 tags; keys 1-128 and values up to 256 letters, digits, spaces and _.:/=+-@."""
    limits = sagemaker_limits()
    problems = []
    if len(tags) > limits.tag_count:
        problems.append(f"{len(tags)} tags; SageMaker allows {limits.tag_count}")
    for key, value in tags:
        for what, text, bounds in (
            ("tag key", key, limits.tag_key),
            (f"the value of tag {key}", value, limits.tag_value),
        ):
            problem = _length_problem(what, text, bounds) if text or what == "tag key" else None
            if problem:
                problems.append(problem)
            elif not _tag_text_ok(text):
                problems.append(f"{what} {text!r}: only letters, digits, spaces and _.:/=+-@ are allowed")
        if key.lower().startswith("aws:"):
            problems.append(f"tag key {key!r}: the aws: prefix is reserved for AWS")
    return problems


def role_problems(role: str | None) -> list[str]:
    if role is None:
        return []
    bounds = sagemaker_limits().role_arn
    problem = _length_problem("the execution role ARN", role, bounds) or _pattern_problem(
        "the execution role", role, bounds
    )
    return [problem + " (an IAM role ARN: arn:aws:iam::123456789012:role/NAME)"] if problem else []


def autoscale_problems(
    autoscale: tuple[int, int] | None, instance_count: int, asynchronous: bool = False
) -> list[str]:
    if autoscale is None:
        return []
    lowest, highest = autoscale
    if lowest == 0 and not asynchronous and highest >= 1:
        return [
            f"--autoscale {lowest}:{highest}: only an asynchronous endpoint scales to zero instances (its requests "
            "wait in a queue; deploy.async, --async-output); a real-time endpoint needs MIN >= 1"
        ]
    if lowest < 0 or highest < max(lowest, 1):
        return [
            f"--autoscale {lowest}:{highest}: write MIN:MAX with 1 <= MIN <= MAX (MIN 0 for an async endpoint)"
        ]
    if not lowest <= instance_count <= highest:
        return [f"--instance-count {instance_count} is outside --autoscale {lowest}:{highest}"]
    return []


def check_plan(plan: DeployPlan, tags: tuple[tuple[str, str], ...]) -> list[str]:
    """Every limit the plan breaks, each a sentence (empty: the calls can be made)."""
    return [
        *name_problems(plan),
        *environment_problems(plan.environment),
        *variant_problems(plan),
        *tag_problems(tags),
        *role_problems(plan.role),
        *autoscale_problems(plan.autoscale, plan.instance_count, plan.asynchronous),
        *plan.sizing.problems,
    ]
