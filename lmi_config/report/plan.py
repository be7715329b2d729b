"""Output of ``plan``: the ranked table, the JSON document, render specs and cache-config entries."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lmi_config.secrets import redact
from lmi_config.strict_json import dump_json

if TYPE_CHECKING:
    from lmi_config.plan import PlannedCandidate, PlanResult

GIB = 2**30


def candidate_document(candidate: PlannedCandidate) -> dict[str, Any]:
    """One candidate as ``--format json`` prints it."""
    figures = candidate.figures
    return {
        "rank": candidate.rank,
        "instance": candidate.instance,
        "backend": candidate.backend,
        "lmi_version": candidate.lmi_version,
        "tensor_parallel_degree": candidate.tensor_parallel_degree,
        "batch_size": candidate.batch_size,
        "sequence_length": candidate.sequence_length,
        "copies": candidate.copies,
        "concurrent_sequences": candidate.concurrency,
        "feasible": candidate.feasible,
        "per_device": {
            "unit": candidate.unit,
            "peak_gib": round(candidate.peak_bytes / GIB, 2),
            "budget_gib": round(candidate.budget_bytes / GIB, 2),
            "headroom_fraction": round(candidate.headroom_fraction, 4),
        },
        "predicted": figures.as_dict() if figures is not None else None,
        "not_predicted": candidate.not_predicted or None,
        "usd_per_hour": candidate.usd_per_hour,
        "price_kind": candidate.price_kind,
        "batch_reason": candidate.batch_reason or None,
        "kv_cache_sequences": figures.kv_sequences if figures is not None else None,
        "price_stand_in": candidate.price_stand_in,
        "latency_target_misses": list(candidate.target_misses),
        "tie_with_rank": candidate.tie_with,
        "reason": candidate.reason,
        "blocked_by": list(candidate.blocked_by),
        "warnings": list(candidate.warnings),
        "problems": list(candidate.problems),
    }


def format_plan_json(result: PlanResult) -> str:
    """``{"model", "objective", "workload", "candidates": [...] best first, "notes"}``."""
    workload = result.workload
    document = {
        "model": redact(result.model),
        "objective": result.objective,
        "workload": {
            "input_tokens": workload.input_tokens,
            "output_tokens": workload.output_tokens,
            "concurrency": workload.concurrency,
            "request_rate": workload.request_rate,
            "longest_request_tokens": workload.longest_request,
            "max_ttft_ms": workload.max_ttft_ms,
            "max_tpot_ms": workload.max_tpot_ms,
            "latency_target": dict(zip(("ttft_ms", "tpot_ms"), workload.target(), strict=True)),
        },
        "candidates": [candidate_document(candidate) for candidate in result.candidates],
        "notes": result.notes,
    }
    return dump_json(document)


def _figures_columns(candidate: PlannedCandidate) -> str:
    figures = candidate.figures
    if figures is None:
        return f"{'-':>8} {'-':>7} {'-':>8} {'-':>8}"
    cost = figures.usd_per_million_tokens
    price = f"{cost:.3f}" if cost is not None else "-"
    return f"{figures.ttft_ms:>8,.0f} {figures.tpot_ms:>7.1f} {figures.output_tokens_per_second:>8,.0f} {price:>8}"


def _batch(candidate: PlannedCandidate) -> str:
    """The batch as it runs: the configured maximum, and in parentheses the sequences that run at once
    where fewer -- what the KV cache holds of the workload's requests, or what the workload puts in
    flight (the engine queues the rest)."""
    figures = candidate.figures
    running = figures.running_sequences if figures is not None else candidate.batch_size
    return (
        f"{candidate.batch_size} ({running})" if running < candidate.batch_size else str(candidate.batch_size)
    )


def _line(candidate: PlannedCandidate) -> str:
    use = f"{candidate.peak_bytes / GIB:.1f}/{candidate.budget_bytes / GIB:.1f} GiB"
    unit = "core" if candidate.unit == "NeuronCore" else "GPU"
    rank = str(candidate.rank) if candidate.rank is not None else "-"
    return (
        f"{rank:>3}  {candidate.instance:<15} {candidate.tensor_parallel_degree:>3} {candidate.copies:>6} "
        f"{_batch(candidate):>11} {candidate.sequence_length:>7}  {_figures_columns(candidate)}  "
        f"{use + '/' + unit:>17}  {_why(candidate)}"
    )


def format_plan_text(result: PlanResult) -> str:
    """The ranked table (rows priced from another list apart, for cost), refused candidates
    (``--all``) after it, then the notes."""
    from lmi_config.plan.performance import describe_error

    header = (
        f"{'#':>3}  {'instance':<15} {'TP':>3} {'copies':>6} {'batch (run)':>11} {'seq len':>7}  "
        f"{'TTFT ms':>8} {'TPOT ms':>7} {'tok/s':>8} {'$/M tok':>8}  {'use / budget':>17}  why"
    )
    lines = [f"plan for {redact(result.model)} (objective {result.objective})", header]
    ranked = [c for c in result.candidates if c.feasible]
    apart = [c for c in ranked if result.objective == "cost" and c.price_stand_in]
    lines.extend(_line(candidate) for candidate in ranked if candidate not in apart)
    if apart:
        lines.append(
            "   priced only from another list (EC2 on-demand, or none): shown apart, never ranked against the rows above"
        )
        lines.extend(_line(candidate) for candidate in apart)
    lines.extend(_line(candidate) for candidate in result.candidates if not candidate.feasible)
    lines.extend(f"note: {note}" for note in result.notes)
    families = {c.figures.engine_family: c.figures for c in ranked if c.figures is not None}
    lines.extend(f"note: error {describe_error(figures)}" for _, figures in sorted(families.items()))
    lines.append(
        "note: TTFT, TPOT and tok/s (output tokens/s per instance) are the performance model's predictions for "
        "the workload above, $/M tok the on-demand price per million output tokens; batch: max sequences per "
        "copy, in parentheses what runs at once where fewer (what its KV cache holds of the workload's requests, "
        "or what the workload puts in flight; the engine queues the rest); "
        "see README, Performance model"
    )
    return "\n".join(lines) + "\n"


def _why(candidate: PlannedCandidate) -> str:
    if not candidate.feasible:
        return (
            f"{candidate.reason}: {'; '.join(candidate.problems)}" if candidate.problems else candidate.reason
        )
    copies = f"{candidate.copies} cop{'ies' if candidate.copies != 1 else 'y'}"
    parts = [f"{copies} x {candidate.batch_size} sequences"]
    figures = candidate.figures
    capacity = figures.capacity_requests_per_second if figures else None
    if capacity is not None:
        # under a request rate every ranked row serves the rate: what orders them is the headroom
        from lmi_config.plan.performance import completes

        parts.append(completes(capacity))
    if figures is not None:
        ranges = figures.ranges()
        if "tpot_ms" in ranges:
            low, high = ranges["tpot_ms"]
            parts.append(f"TPOT {low:.1f}-{high:.1f}")
        if "output_tokens_per_second" in ranges:
            low, high = ranges["output_tokens_per_second"]
            parts.append(f"tok/s {low:,.0f}-{high:,.0f}")
    if candidate.tie_with is not None:
        parts.insert(0, f"tie with #{candidate.tie_with} (within the model's error)")
    if candidate.target_misses:
        parts.insert(0, f"over the latency target ({'; '.join(candidate.target_misses)})")
    if figures is None:
        parts.append(f"no performance prediction ({candidate.not_predicted})")
    if candidate.warnings:
        parts.insert(0, f"edge of the estimate ({', '.join(candidate.warnings)})")
    if candidate.price_kind == "ec2":
        parts.append("EC2 price")
    elif candidate.price_kind is None:
        parts.append("no price")
    return "; ".join(parts)


def spec_documents(result: PlanResult, *, limit: int) -> list[tuple[str, str]]:
    """Render specs (file name, YAML text) for the top ``limit`` feasible candidates.

    A spec carries the candidate's TP, batch and sequence-length keys as the planner wrote them
    and the LMI version it was judged for, so ``lmi-config render`` writes exactly that shape.
    """
    import yaml  # only on this path

    from lmi_config import __version__
    from lmi_config.knowledge import parse_lmi_version, resolve_backend
    from lmi_config.shape.values import read_count

    documents = []
    for candidate in [item for item in result.candidates if item.feasible][:limit]:
        base_options = resolve_backend(candidate.backend).render_options(
            parse_lmi_version(candidate.lmi_version)
        )
        options: dict[str, Any] = {}
        for key, value in candidate.items:
            if key == "option.model_id" or base_options.get(key) == value:
                continue
            name = key.removeprefix("option.")
            number = read_count(value, minimum=0).value
            options[name] = int(number) if number is not None and value.strip() == value else value
        spec: dict[str, Any] = {
            "model": result.model,
            "instance": f"ml.{candidate.instance}",
            "backend": candidate.backend,
            "lmi_version": candidate.lmi_version,
            "options": options,
        }
        spec["objective"] = result.objective
        workload = result.workload
        spec["workload"] = {
            key: value
            for key, value in (
                ("input_tokens", workload.input_tokens),
                ("output_tokens", workload.output_tokens),
                ("concurrency", workload.concurrency),
                ("request_rate", workload.request_rate),
                ("max_ttft_ms", workload.max_ttft_ms),
                ("max_tpot_ms", workload.max_tpot_ms),
            )
            if value is not None
        }
        comment = (
            f"# planned by lmi-config {__version__}: rank {candidate.rank} for {result.model} "
            f"(objective {result.objective})\n# {candidate.reason}\n"
        )
        name = (
            f"{candidate.rank:02d}-{candidate.instance}-tp{candidate.tensor_parallel_degree}"
            f"-bs{candidate.batch_size}-sl{candidate.sequence_length}.yaml"
        )
        documents.append((name, comment + yaml.safe_dump(spec, sort_keys=False)))
    return documents


def cache_config_entries(result: PlanResult, cache_format: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The exportable Neuron configurations (each (instance, TP, batch) at its longest feasible
    length, :mod:`lmi_config.plan.exportable`) as cache-config entries, and what was left out."""
    from lmi_config.knowledge.instances import resolve_instance
    from lmi_config.search.cache_config import current_entry, legacy_entry

    entries: list[dict[str, Any]] = []
    left_out: set[str] = set()
    for candidate in result.exportable or result.feasible:
        instance = resolve_instance(candidate.instance)
        if instance.accelerator != "neuron":
            left_out.add(candidate.instance)
            continue
        try:
            if cache_format == "legacy":
                entry = legacy_entry(
                    candidate.tensor_parallel_degree,
                    candidate.batch_size,
                    candidate.sequence_length,
                    result.auto_cast_type,
                )
            else:
                entry = current_entry(
                    result.task,
                    instance.family,
                    candidate.tensor_parallel_degree,
                    candidate.batch_size,
                    candidate.sequence_length,
                )
        except ValueError:
            left_out.add(candidate.instance)
            continue
        entries.append(entry)
    notes = (
        [f"not in the cache config (optimum-neuron does not compile for them): {', '.join(sorted(left_out))}"]
        if left_out
        else []
    )
    return entries, notes
