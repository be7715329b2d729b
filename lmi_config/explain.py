"""``explain``: how the container will read a configuration, and its memory per core or GPU."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lmi_config.knowledge.options import catalogue
from lmi_config.rules.base import Finding, LintUnit
from lmi_config.secrets import mask_value, redact
from lmi_config.shape import Assessment, Resolved
from lmi_config.sizing import GIB, MemoryBreakdown

if TYPE_CHECKING:
    from lmi_config.plan.workload import PlanWorkload


def _default_of(key: str, unit: LintUnit) -> str | None:
    specs = [
        spec
        for spec in catalogue().get(key, ())
        if spec.applies_to(unit.context.backend) and spec.available_in(unit.context.release)
    ]
    return specs[0].default if specs else None


def _shown(key: str, value: str, unit: LintUnit) -> str:
    """A value as explain may print it: masked under a secret-named key, credentials in it masked."""
    return redact(mask_value(value, key), unit.secret_values)


def explain_unit(
    unit: LintUnit, findings: list[Finding], workload: PlanWorkload | None = None
) -> dict[str, Any]:
    """Everything explain shows, as data (the JSON output is exactly this); the predicted performance
    is for ``workload`` (plan's default when None)."""
    context = unit.context
    settings = []
    for key, setting in sorted(
        unit.config.settings.items(), key=lambda item: (item[0].startswith("option."), item[0])
    ):
        shadowed = [
            {"value": _shown(key, other.value, unit), "from": other.origin.describe()}
            for other in unit.config.candidates.get(key, [])
            if other is not setting and other.value != setting.value
        ]
        default = _default_of(key, unit)
        settings.append(
            {
                "key": key,
                "value": _shown(key, setting.value, unit),
                "from": setting.origin.describe(),
                "role": setting.role,
                "default": default,
                "is_default": default is not None and default == setting.value.strip(),
                "shadowed": shadowed,
            }
        )
    document: dict[str, Any] = {
        "files": [source.path for source in unit.sources],
        "backend": {
            "id": context.backend.id,
            "reason": context.backend_reason,
            "assumed": context.backend_assumed,
        },
        "lmi_version": {
            "djl": context.release.djl,
            "lmi": context.release.lmi,
            "reason": context.release_reason,
            "assumed": context.release_assumed,
        },
        "instance": context.instance.instance_type if context.instance else None,
        "model": redact(context.model.model_id) if context.model else None,
        "settings": settings,
        "resolved": None,
        "memory": None,
        "alternatives": [],
        "performance": None,
        "loading": None,
        "findings": [
            {**finding.as_dict(), "message": redact(finding.message, unit.secret_values)}
            for finding in findings
        ],
        "notes": [redact(note, unit.secret_values) for note in unit.notes],
    }
    assessment = unit.assessment
    if assessment is not None:
        document["resolved"] = resolved_dict(assessment)
    if assessment is not None and assessment.memory is not None:
        from lmi_config.planner import alternatives
        from lmi_config.shape import describe_shape

        document["memory"] = memory_dict(assessment.memory)
        document["alternatives"] = [
            {
                "tensor_parallel_degree": s.tensor_parallel_degree,
                "batch_size": s.batch_size,
                "sequence_length": s.sequence_length,
                "summary": describe_shape(s, m),
            }
            for s, m in alternatives(assessment, context.backend.accelerator, limit=3)
        ]
    if assessment is not None and assessment.memory is not None and assessment.memory.fits:
        document["performance"] = performance_dict(assessment, context, workload)
    if assessment is not None and assessment.loading is not None:
        loading = assessment.loading
        document["loading"] = {
            "estimated_seconds": loading.needed_seconds,
            "compiles": loading.compiles,
            "timeout_seconds": loading.timeout_seconds,
            "timeout_from": loading.timeout_source,
            "recommended_timeout_seconds": loading.recommended_seconds,
        }
    return document


def performance_dict(
    assessment: Assessment, context: Any, workload: PlanWorkload | None = None
) -> dict[str, Any]:
    """The performance model's figures for the file under ``workload`` (plan's default when None: what
    render's ``auto`` comment prints for the same configuration and workload), or why there are none."""
    from lmi_config.knowledge.planning import on_demand_price
    from lmi_config.plan.performance import predicted
    from lmi_config.plan.workload import PlanWorkload

    workload = workload or PlanWorkload()
    copies = assessment.shape.copies.value if assessment.shape.copies else 1
    instance = context.instance
    price = on_demand_price(instance.instance_type) if instance is not None else None
    figures = predicted(assessment, copies, workload, price.usd_per_hour if price else None)
    document: dict[str, Any] = {"workload": workload.describe(), "price_kind": price.kind if price else None}
    if isinstance(figures, str):
        return {**document, "predicted": None, "not_predicted": figures}
    broken = workload.constraint_violations(
        figures.ttft_ms, figures.tpot_ms, figures.capacity_requests_per_second, figures.overloaded
    )
    return {**document, "predicted": figures.as_dict(), "not_predicted": None, "broken_limits": list(broken)}


def resolved_dict(assessment: Assessment) -> dict[str, Any]:
    """The shape the container builds: each dimension's value (null when unknown) and its source."""
    shape = assessment.shape

    def value(item: Resolved[Any] | None) -> Any:
        return item.value if item is not None else None

    return {
        "tensor_parallel_degree": value(shape.tensor_parallel_degree),
        "pipeline_parallel_degree": shape.pipeline_parallel_degree.value,
        "nodes": shape.nodes.value,
        "batch_size": value(shape.batch_size),
        "sequence_length": value(shape.sequence_length),
        "dtype": value(shape.dtype),
        "quantize": value(shape.quantize),
        "rolling_batch": shape.batching.rolling_batch.value,
        "batching": shape.batching.mode,
        "copies": value(shape.copies),
        "kv_cache_dtype": shape.engine.kv_cache_dtype,
        "kv_strategy": assessment.memory.kv_strategy if assessment.memory is not None else None,
        "sources": shape.sources(),
    }


def memory_dict(memory: MemoryBreakdown) -> dict[str, Any]:
    """The breakdown as plain data, bytes and GiB."""
    return {
        "unit": memory.unit,
        "budget_bytes": memory.budget_bytes,
        "budget": memory.budget_note,
        "kv_strategy": memory.kv_strategy,
        "query_heads_padded": memory.query_heads_padded,
        "kv_heads_per_core": memory.kv_heads_per_core,
        "ranks": [
            {
                "label": rank.label,
                "total_bytes": rank.total_bytes,
                "items": [
                    {
                        "name": item.name,
                        "bytes": item.bytes,
                        "gib": round(item.bytes / GIB, 3),
                        "note": item.note,
                    }
                    for item in rank.items
                ],
            }
            for rank in memory.ranks
        ],
        "peak_bytes": memory.peak_bytes,
        "fits": memory.fits,
        "headroom_fraction": round(memory.headroom_fraction, 4),
        "notes": list(memory.notes),
        "kv_cache_tokens": memory.kv_cache_tokens,
        "max_concurrent_sequences": memory.max_concurrent_sequences,
        "kv_upper_bound_only": memory.kv_upper_bound_only,
    }
