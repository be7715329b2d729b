"""explain's reports: the text (target, effective settings, the shape and the memory table,
verdict) and the JSON document."""

from __future__ import annotations

from typing import Any

from lmi_config.report import visible
from lmi_config.strict_json import dump_json

GIB = 1024**3
SHAPE_LINES = (
    "tensor_parallel_degree",
    "pipeline_parallel_degree",
    "batch_size",
    "sequence_length",
    "dtype",
    "quantize",
    "rolling_batch",
    "copies",
    "kv_cache_dtype",
)


def format_explain_json(documents: list[dict[str, Any]]) -> str:
    """``--format json``: the one unit's document, or a list of them for a directory of several
    (standard JSON: never ``NaN`` or ``Infinity``)."""
    return dump_json(documents if len(documents) != 1 else documents[0])


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
        flag = (
            " (set to its default)" if item["is_default"] else ""
        )  # set by the file, to the value it has anyway
        lines.append(f"  {item['key']:<{width}} = {item['value']!s}{flag}    ← {item['from']}")
        for other in item["shadowed"]:
            lines.append(f"  {'':<{width}}   not used: {other['value']!r} from {other['from']}")
    resolved = document.get("resolved")
    if resolved:
        lines.append("")
        lines.append("what the container builds:")
        for name in SHAPE_LINES:
            if resolved.get(name) is None:
                continue
            source = resolved["sources"].get(name, "")
            lines.append(f"  {name:<24} {resolved[name]!s:<8} {source}")
        lines.append(f"  {'batching':<24} {resolved['batching']}")
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
            bound = "at most " if memory.get("kv_upper_bound_only") else ""
            lines.append(
                f"  KV cache: {bound}{memory['kv_cache_tokens']} tokens per replica, "
                f"{bound}{memory['max_concurrent_sequences']:g} sequences of max_model_len at once"
            )
        for note in memory["notes"]:
            lines.append(f"  note: {note}")
    performance = document.get("performance")
    if performance:
        lines.append("")
        lines.append(f"predicted performance ({performance['workload']}):")
        figures = performance["predicted"]
        if figures is None:
            lines.append(f"  none: {performance['not_predicted']}")
        else:
            from lmi_config.plan.performance import describe_shown  # the line render's comment prints

            lines.append(f"  predicted {describe_shown(figures)}")
            if figures.get("intervals"):
                lines.append(
                    "  in brackets: where 8 of 10 measurements fell when each source was predicted by a fit "
                    "that never saw it"
                )
            lines.append(
                f"  dominated by: {figures['ttft_bound']} (TTFT), {figures['tpot_bound']} (TPOT); "
                f"{figures['running_sequences']} sequences decoded together per copy; price: {performance['price_kind']}"
            )
            if figures.get("caveat"):
                lines.append(f"  caveat: {figures['caveat']}")
            for broken in performance.get("broken_limits") or []:
                lines.append(f"  not met: {broken}")
    loading = document.get("loading")
    if loading:
        what = "download and compile" if loading["compiles"] else "download and load"
        lines.append("")
        lines.append(
            f"loading: about {loading['estimated_seconds'] // 60} min to {what} (an estimate); timeout "
            f"{loading['timeout_seconds']} s from {loading['timeout_from']}; recommended "
            f"{loading['recommended_timeout_seconds']} s"
        )
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
    # keys and values come from the file: escape control characters, cut very long values
    return "\n".join(visible(line) for line in lines) + "\n"
