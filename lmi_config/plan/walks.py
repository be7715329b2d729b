"""The candidates of one (instance, TP) group, and the best any of them could do.

Every candidate of a group is at the group's sequence length (the workload's longest request):
rows that serve different request lengths are never ranked against each other. On Neuron the
batch is compiled in and memory grows with it, so a group is judged batch by batch, ascending,
until memory runs out; on a paged KV cache (vLLM, TensorRT-LLM) the batch is what the workload
asks for (:func:`lmi_config.plan.performance.workload_batch`).
"""

from __future__ import annotations

from collections.abc import Callable

from lmi_config.knowledge.engine_limits import cuda_graph_bound, largest_cuda_graph_bound
from lmi_config.knowledge.engine_support import trtllm_build
from lmi_config.perf import UnsupportedConfiguration, configuration_from_shape, predict
from lmi_config.perf.cost import usd_per_million_output_tokens
from lmi_config.plan.candidates import Group, PlannedCandidate, throughput_metric
from lmi_config.plan.performance import (
    CONTINUOUS_MODES,
    BatchLimit,
    Figures,
    cuda_graph_limit,
    workload_batch,
)
from lmi_config.plan.workload import PlanWorkload
from lmi_config.sizing.model import VLLM_BACKENDS

Judge = Callable[[Group, int, "int | None", str], PlannedCandidate]
LIMITS = ("workload-limits",)
BEST = float("inf")


def judged_out(candidate: PlannedCandidate) -> bool:
    """Whether the judge refuses the candidate (not only the workload's latency limits)."""
    return not candidate.feasible and candidate.blocked_by != LIMITS


def group_candidates(group: Group, judge: Judge, workload: PlanWorkload) -> list[PlannedCandidate]:
    """The group's candidates the walk reaches, and the first the judge refuses (what ``--all`` shows)."""
    if group.batches is None:
        return _paged(group, judge, workload)
    found = []
    for batch in group.batches:
        candidate = judge(group, batch, group.sequence, "")
        found.append(candidate)
        if judged_out(candidate):
            break  # memory grows with the batch, and anything else blocks every batch
    return found


def batch_limit(group: Group) -> BatchLimit | None:
    """The largest batch worth asking the group's engine for: vLLM's (and lmi-dist's) default CUDA-graph
    capture batch; TensorRT-LLM's tokens per step where the release's build states them (a decode step
    takes one token per sequence); none known otherwise."""
    backend = group.writer.target.backend
    if backend in VLLM_BACKENDS:
        return cuda_graph_limit(cuda_graph_bound(group.release.vllm))
    build = trtllm_build(group.release.djl) if backend == "tensorrt-llm" else None
    tokens = build.defaults.get("max_num_tokens") if build is not None else None
    if build is None or tokens is None or not isinstance(tokens.value, int):
        return None
    return BatchLimit(
        tokens.value,
        f"TensorRT-LLM decodes at most max_num_tokens={tokens.value} tokens per step, LMI {build.release}'s "
        "default — one per sequence",
    )


def _paged(group: Group, judge: Judge, workload: PlanWorkload) -> list[PlannedCandidate]:
    default = max(group.writer.default_batch or 1, group.minimum_batch)
    probe = judge(group, default, group.sequence, "")
    if judged_out(probe) or probe.assessment is None or probe.assessment.memory is None:
        return [probe]
    batch, reason = workload_batch(probe.assessment.memory, workload, default, batch_limit(group))
    if batch == default:
        probe.batch_reason = reason
        found = [probe]
    else:
        found = [judge(group, batch, group.sequence, reason)]
    # over the latency target at the batch the KV cache holds: fewer sequences at once decode faster,
    # so halve the batch until one meets the target (each judged: the ranking chooses)
    while found[-1].feasible and found[-1].target_misses and batch > 1:
        batch //= 2
        found.append(
            judge(
                group, batch, group.sequence, f"{batch} sequences at once: the most within the latency target"
            )
        )
    return found


def bound(group: Group, objective: str, workload: PlanWorkload) -> tuple[float, ...]:
    """The best rank key any candidate of the group could have, from the performance model alone
    (no judgement): throughput and cost at the largest batch, latency at the smallest."""
    # optimistic in every place rank_key looks: within the latency target, clean, predicted
    listed = 1.0 if objective != "cost" or group.listed else 0.0
    figures = _best_figures(group, objective, workload)
    if figures is None:
        return (
            listed,
            1.0,
            1.0,
            0.0,
            BEST,
            BEST,
            0.0,
        )  # no prediction: its rows rank after every predicted one
    if objective == "latency":
        first = -figures.tpot_ms
    elif objective == "cost":
        cost = figures.usd_per_million_tokens
        first = -cost if cost is not None else float("-inf")
    else:
        first = throughput_metric(figures)
    return (listed, 1.0, 1.0, 1.0, first, BEST, 0.0)


def _best_figures(group: Group, objective: str, workload: PlanWorkload) -> Figures | None:
    writer = group.writer
    shape = writer.base.sizing_shape()
    if shape is None:
        return None
    if not group.batches:  # paged: at most the engine's limit (the largest any vLLM states if unknown)
        limit = batch_limit(group)
        batches = [1, limit.batch if limit is not None else largest_cuda_graph_bound()]
    else:
        batches = group.batches
    batch = min(batches) if objective == "latency" else max(batches)
    shape = shape._replace(
        tensor_parallel_degree=group.degree,
        batch_size=batch,
        sequence_length=group.sequence or shape.sequence_length,
    )
    target = writer.target
    assert target.arch is not None
    copies = max(group.instance.num_cores // group.degree, 1)
    configuration = configuration_from_shape(target.arch, group.instance, target.backend, shape, copies)
    continuous = writer.base.batching.mode in CONTINUOUS_MODES
    configuration = configuration._replace(batching="continuous" if continuous else "static")
    try:
        prediction = predict(configuration, workload.performance(copies))
    except UnsupportedConfiguration:
        return None
    tokens = prediction.output_tokens_per_second
    price = group.price
    return Figures(
        prediction.ttft_ms,
        prediction.tpot_ms,
        prediction.end_to_end_ms,
        tokens,
        prediction.requests_per_second,
        usd_per_million_output_tokens(price.usd_per_hour, tokens) if price else None,
        prediction.running_sequences,
        prediction.tpot.bound,
        prediction.ttft.bound,
        prediction.capacity_requests_per_second,
        prediction.overloaded,
    )


__all__ = ["Judge", "bound", "group_candidates", "judged_out"]
