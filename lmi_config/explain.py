"""``explain``: how the container will read a configuration, and its memory per core or GPU."""

from __future__ import annotations

from typing import Any

from lmi_config.fit import alternatives, describe_shape
from lmi_config.knowledge.options import catalogue
from lmi_config.rules.base import Finding, LintUnit
from lmi_config.secrets import redact
from lmi_config.sizing import GIB, MemoryBreakdown


def _default_of(key: str, unit: LintUnit) -> str | None:
    specs = [
        spec
        for spec in catalogue().get(key, ())
        if spec.applies_to(unit.context.backend) and spec.available_in(unit.context.release)
    ]
    return specs[0].default if specs else None


def explain_unit(unit: LintUnit, findings: list[Finding]) -> dict[str, Any]:
    """Everything explain shows, as data (the JSON output is exactly this)."""
    context = unit.context
    settings = []
    for key, setting in sorted(
        unit.config.settings.items(), key=lambda item: (item[0].startswith("option."), item[0])
    ):
        shadowed = [
            {"value": redact(other.value, unit.secret_values), "from": other.origin.describe()}
            for other in unit.config.candidates.get(key, [])
            if other is not setting and other.value != setting.value
        ]
        default = _default_of(key, unit)
        settings.append(
            {
                "key": key,
                "value": redact(setting.value, unit.secret_values),
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
        "model": context.model.model_id if context.model else None,
        "settings": settings,
        "resolved": None,
        "memory": None,
        "alternatives": [],
        "findings": [finding.as_dict() for finding in findings],
        "notes": list(unit.notes),
    }
    if unit.fit is not None:
        fit = unit.fit
        shape = fit.shape
        document["resolved"] = {
            "tensor_parallel_degree": shape.tensor_parallel_degree,
            "batch_size": shape.batch_size,
            "sequence_length": shape.sequence_length,
            "dtype": shape.weight_dtype,
            "quantize": shape.quantize,
            "sources": fit.resolved.sources,
        }
        document["memory"] = memory_dict(fit.memory)
        document["alternatives"] = [
            {
                "tensor_parallel_degree": s.tensor_parallel_degree,
                "batch_size": s.batch_size,
                "sequence_length": s.sequence_length,
                "summary": describe_shape(s, m),
            }
            for s, m in alternatives(fit, limit=3)
        ]
    return document


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
    }


def format_explain_text(document: dict[str, Any]) -> str:
    """A readable report: target, effective settings, memory table, verdict, alternatives."""
    lines = [f"files: {', '.join(document['files'])}"]
    backend = document["backend"]
    version = document["lmi_version"]
    lines.append(f"backend: {backend['id']} ({'assumed: ' if backend['assumed'] else ''}{backend['reason']})")
    lmi = f" (LMI v{version['lmi']})" if version["lmi"] else ""
    lines.append(
        f"LMI: {version['djl']}{lmi} ({'assumed: ' if version['assumed'] else ''}{version['reason']})"
    )
    lines.append(f"instance: {document['instance'] or 'not given (--instance enables memory checks)'}")
    lines.append(f"model: {document['model'] or 'unknown'}")
    lines.append("")
    lines.append("effective configuration (as the container reads it):")
    width = max((len(item["key"]) for item in document["settings"]), default=10)
    for item in document["settings"]:
        flag = " (default)" if item["is_default"] else ""
        lines.append(f"  {item['key']:<{width}} = {item['value']!s}{flag}    ← {item['from']}")
        for other in item["shadowed"]:
            lines.append(f"  {'':<{width}}   not used: {other['value']!r} from {other['from']}")
    resolved = document.get("resolved")
    if resolved:
        lines.append("")
        lines.append("what the container builds:")
        for name in ("tensor_parallel_degree", "batch_size", "sequence_length", "dtype"):
            source = resolved["sources"].get(name, "")
            lines.append(f"  {name:<24} {resolved[name]!s:<8} {source}")
    memory = document.get("memory")
    if memory:
        lines.append("")
        lines.append(
            f"memory per {memory['unit']} (budget {memory['budget_bytes'] / GIB:.2f} GiB: {memory['budget']}; KV: {memory['kv_strategy']}):"
        )
        for rank in memory["ranks"]:
            lines.append(f"  {rank['label']}:")
            for item in rank["items"]:
                note = f"  {item['note']}" if item["note"] else ""
                lines.append(f"    {item['name']:<32} {item['bytes'] / GIB:8.2f} GiB{note}")
            lines.append(f"    {'total':<32} {rank['total_bytes'] / GIB:8.2f} GiB")
        verdict = "fits" if memory["fits"] else "DOES NOT FIT"
        lines.append(
            f"  verdict: {verdict} — peak {memory['peak_bytes'] / GIB:.2f} of {memory['budget_bytes'] / GIB:.2f} GiB ({memory['headroom_fraction']:.0%} headroom)"
        )
        if memory.get("kv_cache_tokens") is not None:
            lines.append(
                f"  KV cache: {memory['kv_cache_tokens']} tokens per replica, "
                f"{memory['max_concurrent_sequences']:g} sequences of max_model_len at once"
            )
        for note in memory["notes"]:
            lines.append(f"  note: {note}")
    if document.get("alternatives"):
        lines.append("")
        lines.append("nearest configurations that fit:")
        for alternative in document["alternatives"]:
            lines.append(f"  {alternative['summary']}")
    if document["findings"]:
        lines.append("")
        lines.append("findings:")
        for finding in document["findings"]:
            place = f":{finding['line']}" if finding["line"] else ""
            lines.append(
                f"  {finding['path']}{place}: {finding['code']} {finding['severity']} [{finding['rule']}] {finding['message']}"
            )
    for note in document["notes"]:
        lines.append(f"note: {note}")
    return "\n".join(lines) + "\n"
