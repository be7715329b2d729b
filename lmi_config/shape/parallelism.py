"""The judge of a tensor-parallel degree: devices, the Neuron topology, attention and KV heads.

Every rule comes from ``data/tp_rules.json``: ``runtime`` (the Neuron runtime refuses other
degrees: error), ``documented`` / ``observed`` (outside them: a warning the planner avoids),
``heads`` (error, pad or warn per backend and model type), ``kv_heads`` (error or warn),
``unsupported`` (the platform is not served).
"""

import math
from typing import Any, NamedTuple

from lmi_config.knowledge.instances import Instance, degree_allowed, rules_for
from lmi_config.modelarch import ModelArch
from lmi_config.shape.problems import Problem
from lmi_config.sizing.model import VLLM_BACKENDS


class ParallelTarget(NamedTuple):
    """What a TP degree is judged against."""

    backend: str
    backend_accelerator: str
    instance: Instance | None
    arch: ModelArch | None
    multi_node: bool = False
    nodes: int = 1

    @property
    def platform(self) -> str:
        if self.instance is not None:
            return str(self.instance.platform)
        return "neuron" if self.backend_accelerator == "neuron" else "gpu"


def judge_tensor_parallel(
    target: ParallelTarget,
    degree: int,
    pipeline: int = 1,
    *,
    gqa_strategy: str | None = None,
    batch: int | None = None,
) -> list[Problem]:
    """Everything wrong with this TP degree on this target, worst first."""
    problems: list[Problem] = []
    problems.extend(_devices(target, degree, pipeline))
    problems.extend(_topology(target, degree))
    problems.extend(_heads(target, degree))
    problems.extend(_kv_heads(target, degree, gqa_strategy, batch))
    return problems


def _devices(target: ParallelTarget, degree: int, pipeline: int) -> list[Problem]:
    instance = target.instance
    if instance is None or instance.accelerator == "cpu" or target.multi_node:
        return []
    devices = instance.num_cores * target.nodes
    if degree * pipeline <= devices:
        return []
    product = f"TP {degree} x PP {pipeline}" if pipeline > 1 else f"TP {degree}"
    nodes = f" ({target.nodes} nodes)" if target.nodes > 1 else ""
    return [
        Problem(
            "tp-exceeds-devices",
            "error",
            f"{product} needs {degree * pipeline} {instance.core_word}s but {instance.instance_type}{nodes} has "
            f"{devices}",
        )
    ]


def _topology(target: ParallelTarget, degree: int) -> list[Problem]:
    instance = target.instance
    if instance is None or instance.accelerator != "neuron" or target.backend_accelerator != "neuron":
        return []
    if degree > instance.num_cores * target.nodes:
        return []  # tp-exceeds-devices says what is wrong
    backend = target.backend
    for unsupported in rules_for(instance.platform, backend, "unsupported"):
        return [
            Problem("tp-unsupported-degree", "error", f"{instance.instance_type}: {unsupported['message']}")
        ]
    for runtime in rules_for(instance.platform, backend, "runtime"):
        if not degree_allowed(runtime, degree):
            allowed = ", ".join(str(d) for d in runtime.get("degrees", [])) + (
                f" or a multiple of {runtime['multiple_of']}" if runtime.get("multiple_of") else ""
            )
            return [
                Problem(
                    "tp-unsupported-degree",
                    "error",
                    f"TP {degree} on {instance.instance_type}: the Neuron runtime supports {allowed} cores "
                    f"('{runtime['message'].split('.')[0]}'); choose one of those",
                )
            ]
    listed = rules_for(instance.platform, backend, "documented") + rules_for(
        instance.platform, backend, "observed"
    )
    if listed and not any(degree_allowed(row, degree) for row in listed):
        known = sorted({d for row in listed for d in row.get("degrees") or []})
        return [
            Problem(
                "tp-unsupported-degree",
                "warning",
                f"TP {degree} is not a degree the {instance.platform} guides list or that is known to have run "
                f"({', '.join(map(str, known))}); it may fail to compile or load — prefer one of those",
                blocks_planning=True,
            )
        ]
    return []


def _policy(target: ParallelTarget, kind: str) -> dict[str, Any] | None:
    """The model-specific rule of this kind first, then the general one."""
    arch = target.arch
    assert arch is not None
    rows = [
        row
        for row in rules_for(target.platform, target.backend, kind)
        if not row.get("model_types") or arch.model_type in row["model_types"]
    ]
    rows.sort(key=lambda row: 0 if row.get("model_types") else 1)
    return rows[0] if rows else None


def _heads(target: ParallelTarget, degree: int) -> list[Problem]:
    arch = target.arch
    if arch is None or degree <= 1:
        return []
    heads = arch.num_attention_heads
    if heads % degree == 0:
        return []
    policy = _policy(target, "heads")
    if policy is None:
        return []
    if policy.get("policy") == "error":
        return [
            Problem(
                "tp-heads-divisibility",
                "error",
                f"{arch.model_id} has {heads} attention heads, which TP {degree} does not divide: {target.backend} "
                f"refuses to start ({policy.get('message', '').split(':')[0]})",
            )
        ]
    if policy.get("policy") in ("pad", "warn"):
        padded = math.ceil(heads / degree) * degree
        return [
            Problem(
                "tp-heads-divisibility",
                "warning",
                f"{arch.model_id} has {heads} attention heads, which TP {degree} does not divide: {target.backend} pads "
                f"them to {padded} ({(padded - heads) / heads:.0%} more attention compute and weights)",
            )
        ]
    return []


_MAX_DEGREE = 4096  # more devices than any deployment has: degrees past it are never advice


def _degree_limit(target: ParallelTarget) -> int:
    """The largest TP worth listing as advice: the devices when the instance is known. Bounding the
    search keeps a config.json with 2**31 heads from turning advice into a billion-step loop."""
    if target.instance is not None:
        return max(target.instance.num_cores * target.nodes, 1)
    return _MAX_DEGREE


def runnable_degrees(target: ParallelTarget) -> list[int]:
    """The TP degrees this judge lets run on the target: every check at once (devices, topology,
    attention heads, KV heads), so that advice never names a degree another check refuses."""
    arch = target.arch
    top = _degree_limit(target)
    if target.instance is None and arch is not None:
        top = min(top, max(arch.num_attention_heads, 2 * arch.num_key_value_heads, 1))
    runnable = []
    for degree in range(1, top + 1):
        problems = [
            *_devices(target, degree, 1),
            *_topology(target, degree),
            *_heads(target, degree),
            *_kv_heads(target, degree, None, None),
        ]
        if not any(problem.blocking for problem in problems):
            runnable.append(degree)
    return runnable


def _kv_heads(
    target: ParallelTarget, degree: int, gqa_strategy: str | None, batch: int | None
) -> list[Problem]:
    arch = target.arch
    if arch is None or degree <= 1:
        return []
    kv = arch.num_key_value_heads
    heads = arch.num_attention_heads
    shards = (kv >= degree and kv % degree == 0) or (kv < degree and degree % kv == 0)
    if target.backend_accelerator == "gpu":
        policy = _policy(target, "kv_heads")
        if shards or policy is None:
            return []
        error = policy.get("policy") == "error"
        engine = "vLLM" if target.backend in VLLM_BACKENDS else target.backend
        return [
            Problem(
                "kv-heads-sharding",
                "error" if error else "warning",
                f"{arch.model_id} has {kv} KV heads; {engine} needs them divisible by TP {degree} (or TP divisible by "
                "them)",
                blocks_planning=True,
            )
        ]
    if target.backend_accelerator != "neuron" or kv == heads:
        return []
    problems = []
    if not shards:
        replicated = math.ceil(heads / degree)
        problems.append(
            Problem(
                "kv-heads-sharding",
                "warning",
                f"{kv} KV heads do not shard over TP {degree}: the cache is converted to {replicated} KV head(s) per core "
                f"instead of {kv / degree:.2g} ({replicated * degree / kv:.1f}x the KV memory); TP that divides or is "
                f"divided by {kv} avoids it",
            )
        )
    if gqa_strategy == "shard-over-batch" and batch is not None and batch % degree:
        problems.append(
            Problem(
                "kv-heads-sharding",
                "warning",
                f"group_query_attention=shard-over-batch needs the batch ({batch}) divisible by TP {degree}",
                key="option.group_query_attention",
            )
        )
    if gqa_strategy == "shard-over-heads" and kv % degree:
        problems.append(
            Problem(
                "kv-heads-sharding",
                "warning",
                f"group_query_attention=shard-over-heads needs {kv} KV heads divisible by TP {degree}; "
                "transformers-neuronx falls back to replicated heads",
                key="option.group_query_attention",
            )
        )
    return problems


MPI_WORKERS_SOURCE = (
    "https://github.com/deepjavalibrary/djl-serving/blob/0.30.0-dlc/engines/python/src/main/java/ai/djl/python/"
    "engine/PyModel.java#L252 (PyEnv.getMpiWorkers: GPUs x DJL_CLUSTER_SIZE / (TP x PP); the same check from "
    "0.23.0 to 0.36.0)"
)


def judge_mpi_workers(
    engine: str, workers: tuple[str, int] | None, target: ParallelTarget, degree: int, pipeline: int
) -> list[Problem]:
    """engine=MPI starts GPUs x nodes / (TP x PP) workers and refuses a larger gpu.maxWorkers (or maxWorkers,
    which it copies there): "We can only expand worker to N but the value is set to M" (PyModel.java).
    ``workers``: the key that sets the count, and the count."""
    instance = target.instance
    if engine != "MPI" or workers is None or instance is None or instance.accelerator != "gpu":
        return []
    key, asked = workers
    possible = instance.num_cores * target.nodes // max(degree * pipeline, 1)
    if asked <= possible or possible == 0:
        return []  # none possible: tp-exceeds-devices says so
    product = f"TP {degree} x PP {pipeline}" if pipeline > 1 else f"TP {degree}"
    message = (
        f"{key}={asked} but engine=MPI can start only {possible} worker{'s' if possible > 1 else ''} "
        f"({instance.num_cores} GPUs{f' x {target.nodes} nodes' if target.nodes > 1 else ''} / {product}): the "
        f"model fails to load with 'We can only expand worker to {possible} but the value is set to {asked}' — "
        f"set {key}={possible} or remove it (the engine starts {possible} by default)"
    )
    return [Problem("conflicting-options", "error", message, key)]
