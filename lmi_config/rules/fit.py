"""Parallelism and memory: TP against devices, topology and heads; memory against the budget.

These rules run when the instance (``--instance`` or a pragma) and/or the model (``--model``,
a pragma, or ``option.model_id`` found in the catalog or a local directory) are known. They
all use one memory model (:mod:`lmi_config.sizing`) through :mod:`lmi_config.fit`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from lmi_config.fit import alternatives, describe_shape
from lmi_config.knowledge.instances import degree_allowed, rules_for, tp_rules
from lmi_config.rules.base import Example, Finding, LintUnit, rule
from lmi_config.sizing import GIB, host_memory_needed_bytes, loading_seconds

_SIZING_SOURCE = "lmi_config/data/memory.json (neuron-ground-truth.md §4-§5: OOM logs, the measured Llama-3.1-8B breakdown)"


def _tp_setting(unit: LintUnit):
    return unit.config.settings.get("option.tensor_parallel_degree")


def _tp_value(unit: LintUnit) -> int | None:
    """The TP in force: resolved shape if known, else an explicit integer or ``max``."""
    if unit.fit is not None:
        return unit.fit.shape.tensor_parallel_degree
    raw = (unit.config.get("option.tensor_parallel_degree") or "").strip()
    if raw.isdigit():
        return int(raw)
    if raw == "max" and unit.context.instance is not None:
        return int(unit.context.instance.num_cores)
    return None


def _platform(unit: LintUnit) -> str:
    if unit.context.instance is not None:
        return str(unit.context.instance.platform)
    return "neuron" if unit.context.backend.accelerator == "neuron" else "gpu"


def _gib(value: float) -> str:
    return f"{value / GIB:.1f} GiB"


def _fix_hint(unit: LintUnit) -> str:
    if unit.fit is None:
        return ""
    options = alternatives(unit.fit)
    if not options:
        return "; nothing close fits on this instance — choose a larger instance"
    shape, memory = options[0]
    return "; " + describe_shape(shape, memory) + " fits instead"


@rule(
    code="LMI301",
    slug="memory-exceeds-budget",
    severity="error",
    summary="Weights + KV cache + fixed overheads exceed the memory of one NeuronCore (or GPU).",
    why=(
        "The model is sharded over TP cores and every core must hold its share of the weights, its KV "
        "cache and the runtime's buffers; past 16 GiB per inf2/trn1 core the load fails with "
        "RESOURCE_EXHAUSTED after the endpoint has downloaded and compiled for many minutes."
    ),
    bad=Example(
        "option.model_id=mistralai/Mistral-7B-v0.1\noption.entryPoint=djl_python.transformers_neuronx\n"
        "option.tensor_parallel_degree=1\noption.n_positions=4096\noption.max_rolling_batch_size=1\n",
        args={"instance": "inf2.8xlarge"},
    ),
    good=Example(
        "option.model_id=mistralai/Mistral-7B-v0.1\noption.entryPoint=djl_python.transformers_neuronx\n"
        "option.tensor_parallel_degree=2\noption.n_positions=4096\noption.max_rolling_batch_size=1\n",
        args={"instance": "inf2.8xlarge"},
    ),
    source=_SIZING_SOURCE + "; seeds/001 (Mistral-7B, 15.9 GB on one core)",
)
def memory_exceeds_budget(unit: LintUnit) -> Iterator[Finding]:
    fit = unit.fit
    if fit is None or fit.memory.fits:
        return
    memory = fit.memory
    worst = max(memory.ranks, key=lambda rank: rank.total_bytes)
    # items the sources do not settle (GPU overhead estimates, rank 0's whole embeddings measured
    # once): when only they push it over, it is a warning
    uncertain = not memory.fits_certainly_not
    demands = [item for item in worst.items if not item.name.startswith("KV cache (what")]
    parts = ", ".join(f"{item.name} {_gib(item.bytes)}" for item in demands if item.bytes >= 0.05 * GIB)
    shape = fit.shape
    estimated = ", ".join(item.name for item in demands if item.estimated and item.bytes)
    caveat = f" (over only with the estimated or once-measured items: {estimated})" if uncertain else ""
    yield unit.finding(
        "LMI301",
        f"{fit.arch.model_id} needs {_gib(memory.peak_bytes)} per {memory.unit} ({worst.label}: {parts}) at TP "
        f"{shape.tensor_parallel_degree}, batch {shape.batch_size}, {shape.sequence_length} tokens, but the budget is "
        f"{_gib(memory.budget_bytes)} ({memory.budget_note}){caveat}{_fix_hint(unit)}",
        setting=_tp_setting(unit),
        severity="warning" if uncertain else None,
    )


@rule(
    code="LMI302",
    slug="memory-headroom-low",
    severity="warning",
    summary="It fits, but with less than 5% of a NeuronCore's memory left.",
    why=(
        "The estimate carries error and DMA rings grow with batch and bucket count; the OOM logs show the "
        "allocator failing at 15.97 of 16 GiB. A configuration at the edge may fail to load."
    ),
    bad=Example(
        "option.model_id=facebook/opt-13b\noption.entryPoint=djl_python.transformers_neuronx\noption.tensor_parallel_degree=2\n"
        "option.n_positions=2048\noption.max_rolling_batch_size=2\noption.dtype=fp16\n",
        args={"instance": "inf2.8xlarge"},
    ),
    good=Example(
        "option.model_id=facebook/opt-13b\noption.entryPoint=djl_python.transformers_neuronx\noption.tensor_parallel_degree=8\n"
        "option.n_positions=2048\noption.max_rolling_batch_size=2\noption.dtype=fp16\n",
        args={"instance": "inf2.24xlarge"},
    ),
    source=_SIZING_SOURCE,
)
def memory_headroom_low(unit: LintUnit) -> Iterator[Finding]:
    from lmi_config.knowledge import load_data

    fit = unit.fit
    if fit is None or fit.memory.unit != "NeuronCore" or not fit.memory.fits:
        return
    threshold = load_data("memory.json")["headroom_warning_fraction"]["value"]
    if fit.memory.headroom_fraction >= threshold:
        return
    yield unit.finding(
        "LMI302",
        f"{describe_shape(fit.shape, fit.memory)}: under {threshold:.0%} left, within the estimate's error{_fix_hint(unit)}",
        setting=_tp_setting(unit),
    )


@rule(
    code="LMI303",
    slug="tp-exceeds-devices",
    severity="error",
    summary="tensor_parallel_degree (x pipeline) is larger than the instance's NeuronCores or GPUs.",
    why=(
        "DJL starts cores/TP workers; with TP above the core count that is zero and the model server stops "
        "with 'Neuron devices are not enough' (or 'GPU devices are not enough to run N partitions')."
    ),
    bad=Example(
        "option.model_id=meta-llama/Llama-2-13b-hf\noption.tensor_parallel_degree=24\noption.rolling_batch=auto\noption.entryPoint=djl_python.transformers_neuronx\n",
        args={"instance": "inf2.24xlarge"},
    ),
    good=Example(
        "option.model_id=meta-llama/Llama-2-13b-hf\noption.tensor_parallel_degree=12\noption.rolling_batch=auto\noption.entryPoint=djl_python.transformers_neuronx\n",
        args={"instance": "inf2.24xlarge"},
    ),
    source="djl-serving.md §3 (worker placement); sagemaker-and-user-pain.md §4 #3, #4 (aws-neuron-sdk#749, vllm-neuron#7)",
)
def tp_exceeds_devices(unit: LintUnit) -> Iterator[Finding]:
    instance = unit.context.instance
    tp = _tp_value(unit)
    if instance is None or instance.accelerator == "cpu" or tp is None:
        return
    if (unit.config.get("option.multi_node") or "").strip().lower() == "true":
        return
    pp_text = (unit.config.get("option.pipeline_parallel_degree") or "1").strip()
    pp = int(pp_text) if pp_text.isdigit() else 1
    if tp * pp <= instance.num_cores:
        return
    product = f"TP {tp} x PP {pp}" if pp > 1 else f"TP {tp}"
    yield unit.finding(
        "LMI303",
        f"{product} needs {tp * pp} {instance.core_word}s but {instance.instance_type} has {instance.num_cores}; "
        f"use option.tensor_parallel_degree={instance.num_cores} or fewer, or a larger instance",
        setting=_tp_setting(unit),
    )


@rule(
    code="LMI304",
    slug="tp-unsupported-degree",
    severity="error",
    summary="A TP degree the Neuron runtime refuses (error) or that the guides do not list (warning).",
    why=(
        "On trn1 the runtime only builds collectives for 1, 2, 8, 16 or multiples of 32 cores "
        "('Unsupported topology'); on inf2 the guides list 1, 2, 4, 8, 24 while 12 and 16 have run — "
        "other degrees are untested."
    ),
    bad=Example(
        "option.model_id=meta-llama/Llama-2-13b-hf\noption.tensor_parallel_degree=24\noption.entryPoint=djl_python.transformers_neuronx\n",
        args={"instance": "trn1.32xlarge"},
    ),
    good=Example(
        "option.model_id=meta-llama/Llama-2-13b-hf\noption.tensor_parallel_degree=32\noption.entryPoint=djl_python.transformers_neuronx\n",
        args={"instance": "trn1.32xlarge"},
    ),
    source="lmi_config/data/tp_rules.json (optimum-neuron#619, #424; transformers-neuronx and NxDI guides; Neuron Calculator)",
)
def tp_unsupported_degree(unit: LintUnit) -> Iterator[Finding]:
    instance = unit.context.instance
    tp = _tp_value(unit)
    if instance is None or tp is None or instance.accelerator != "neuron":
        return
    if unit.context.backend.accelerator != "neuron" or tp > instance.num_cores:
        return  # conflicting-options / tp-exceeds-devices say what is wrong
    backend = unit.context.backend.id
    for unsupported in rules_for(instance.platform, backend, "unsupported"):
        yield unit.finding(
            "LMI304", f"{instance.instance_type}: {unsupported['message']}", setting=_tp_setting(unit)
        )
        return
    for runtime in rules_for(instance.platform, backend, "runtime"):
        if not degree_allowed(runtime, tp):
            allowed = ", ".join(str(d) for d in runtime.get("degrees", [])) + (
                f" or a multiple of {runtime['multiple_of']}" if runtime.get("multiple_of") else ""
            )
            yield unit.finding(
                "LMI304",
                f"TP {tp} on {instance.instance_type}: the Neuron runtime supports {allowed} cores "
                f"('{runtime['message'].split('.')[0]}'); choose one of those",
                setting=_tp_setting(unit),
            )
            return
    listed = rules_for(instance.platform, backend, "documented") + rules_for(
        instance.platform, backend, "observed"
    )
    if listed and not any(degree_allowed(row, tp) for row in listed):
        known = sorted({degree for row in listed for degree in row.get("degrees") or []})
        yield unit.finding(
            "LMI304",
            f"TP {tp} is not a degree the {instance.platform} guides list or that is known to have run "
            f"({', '.join(map(str, known))}); it may fail to compile or load — prefer one of those",
            setting=_tp_setting(unit),
            severity="warning",
        )


@rule(
    code="LMI305",
    slug="tp-heads-divisibility",
    severity="error",
    summary="TP does not divide the attention heads: an error where the backend refuses, a warning where it pads.",
    why=(
        "vLLM and TensorRT-LLM split heads evenly ('Total number of attention heads must be divisible by tensor "
        "parallel size'), as does transformers-neuronx for GPT-J/GPT-NeoX/OPT/GPT-2; for Llama-family models "
        "transformers-neuronx and NxD Inference pad the heads instead, which costs compute and memory."
    ),
    bad=Example(
        "option.model_id=Qwen/Qwen2.5-7B-Instruct\noption.rolling_batch=vllm\noption.tensor_parallel_degree=8\n",
        args={"instance": "g5.48xlarge"},
    ),
    good=Example(
        "option.model_id=Qwen/Qwen2.5-7B-Instruct\noption.rolling_batch=vllm\noption.tensor_parallel_degree=4\n",
        args={"instance": "g5.12xlarge"},
    ),
    source="lmi_config/data/tp_rules.json (kind heads); vllm#414, #2652; neuron-ground-truth.md §2",
)
def tp_heads_divisibility(unit: LintUnit) -> Iterator[Finding]:
    arch = unit.context.model
    tp = _tp_value(unit)
    if arch is None or tp is None or tp <= 1:
        return
    heads = arch.num_attention_heads
    if heads % tp == 0:
        return
    backend = unit.context.backend.id
    platform = _platform(unit)
    policies = [
        row
        for row in rules_for(platform, backend, "heads")
        if not row.get("model_types") or arch.model_type in row["model_types"]
    ]
    policies.sort(key=lambda row: 0 if row.get("model_types") else 1)  # the model-specific rule first
    if not policies:
        return
    policy = policies[0]
    divisors = [d for d in range(1, heads + 1) if heads % d == 0]
    if unit.context.instance is not None:
        divisors = [d for d in divisors if d <= unit.context.instance.num_cores]
    if unit.context.backend.accelerator == "neuron":
        # only degrees some Neuron platform documents or has run
        listed = {
            d
            for row in tp_rules()
            if row.get("kind") in ("documented", "observed")
            for d in row.get("degrees") or []
        }
        divisors = [d for d in divisors if d in listed] or divisors
    valid = ", ".join(map(str, divisors))
    if policy.get("policy") == "error":
        yield unit.finding(
            "LMI305",
            f"{arch.model_id} has {heads} attention heads, which TP {tp} does not divide: {backend} fails "
            f"({policy.get('message', '').split(':')[0]}); use TP {valid}",
            setting=_tp_setting(unit),
        )
    elif policy.get("policy") in ("pad", "warn"):
        padded = math.ceil(heads / tp) * tp
        yield unit.finding(
            "LMI305",
            f"{arch.model_id} has {heads} attention heads, which TP {tp} does not divide: {backend} pads them to "
            f"{padded} ({(padded - heads) / heads:.0%} more attention compute and weights); TPs that divide: {valid}",
            setting=_tp_setting(unit),
            severity="warning",
        )


@rule(
    code="LMI306",
    slug="kv-heads-sharding",
    severity="error",
    summary="KV heads and TP that do not shard: vLLM refuses; Neuron replicates the KV cache at a memory cost.",
    why=(
        "vLLM needs the KV heads divisible by TP (or TP divisible by the KV heads, which it replicates). On "
        "Neuron a TP that neither divides nor is divided by the KV heads converts the cache to one KV head "
        "per query head (CONVERT_TO_MHA), multiplying the KV-cache memory."
    ),
    bad=Example(
        "option.model_id=Qwen/Qwen2.5-7B-Instruct\noption.rolling_batch=vllm\noption.tensor_parallel_degree=7\n",
        args={"backend": "vllm"},
    ),
    good=Example(
        "option.model_id=Qwen/Qwen2.5-7B-Instruct\noption.rolling_batch=vllm\noption.tensor_parallel_degree=4\n",
        args={"backend": "vllm"},
    ),
    source="djl-serving.md §9 (vLLM KV-head rule); neuron-ground-truth.md §5.2 (NxDI gqa.py, tnx GQA strategies); aws-neuron-sdk#1289",
)
def kv_heads_sharding(unit: LintUnit) -> Iterator[Finding]:
    arch = unit.context.model
    tp = _tp_value(unit)
    if arch is None or tp is None or tp <= 1:
        return
    kv = arch.num_key_value_heads
    heads = arch.num_attention_heads
    backend = unit.context.backend
    if backend.accelerator == "gpu" and backend.id in ("vllm", "lmi-dist"):
        if (kv >= tp and kv % tp) or (kv < tp and tp % kv):
            choices = sorted(
                {
                    d
                    for d in range(1, 2 * max(kv, tp) + 1)
                    if (kv >= d and kv % d == 0) or (kv < d and d % kv == 0 and heads % d == 0)
                }
            )
            yield unit.finding(
                "LMI306",
                f"{arch.model_id} has {kv} KV heads; vLLM needs them divisible by TP {tp} (or TP divisible by them): "
                f"use TP {', '.join(map(str, choices[:8]))}",
                setting=_tp_setting(unit),
            )
        return
    if backend.accelerator != "neuron" or kv == heads:
        return
    if kv % tp and tp % kv:
        replicated = math.ceil(heads / tp)
        yield unit.finding(
            "LMI306",
            f"{kv} KV heads do not shard over TP {tp}: the cache is converted to {replicated} KV head(s) per core "
            f"instead of {kv / tp:.2g} ({replicated * tp / kv:.1f}x the KV memory); TP that divides or is divided "
            f"by {kv} avoids it",
            setting=_tp_setting(unit),
            severity="warning",
        )
    strategy = (unit.config.get("option.group_query_attention") or "").strip()
    if strategy == "shard-over-batch" and unit.fit is not None and unit.fit.shape.batch_size % tp:
        yield unit.finding(
            "LMI306",
            f"group_query_attention=shard-over-batch needs the batch ({unit.fit.shape.batch_size}) divisible by TP {tp}",
            setting=unit.config.settings.get("option.group_query_attention"),
            severity="warning",
        )
    if strategy == "shard-over-heads" and kv % tp:
        yield unit.finding(
            "LMI306",
            f"group_query_attention=shard-over-heads needs {kv} KV heads divisible by TP {tp}; transformers-neuronx "
            "falls back to replicated heads",
            setting=unit.config.settings.get("option.group_query_attention"),
            severity="warning",
        )


@rule(
    code="LMI307",
    slug="sequence-exceeds-model-max",
    severity="error",
    summary="max_model_len / n_positions is longer than the model's max_position_embeddings.",
    why=(
        "vLLM refuses a max_model_len above the model's derived maximum; on Neuron the model compiles but "
        "positions past the trained length produce garbage."
    ),
    bad=Example(
        "option.model_id=meta-llama/Llama-2-7b-hf\noption.rolling_batch=vllm\noption.max_model_len=8192\n"
    ),
    good=Example(
        "option.model_id=meta-llama/Llama-2-7b-hf\noption.rolling_batch=vllm\noption.max_model_len=4096\n"
    ),
    source="vLLM ModelConfig (max_model_len > derived max raises unless VLLM_ALLOW_LONG_MAX_MODEL_LEN); djl-serving.md §3 (n_positions)",
)
def sequence_exceeds_model_max(unit: LintUnit) -> Iterator[Finding]:
    arch = unit.context.model
    if arch is None or not arch.max_position_embeddings:
        return
    for key in ("option.max_model_len", "option.n_positions"):
        setting = unit.config.settings.get(key)
        if setting is None or not setting.value.strip().isdigit():
            continue
        length = int(setting.value.strip())
        limit = arch.max_position_embeddings
        if (
            arch.rope_scaling
            and arch.rope_scaling.get("factor")
            and arch.rope_scaling.get("rope_type", arch.rope_scaling.get("type"))
            not in ("llama3", "longrope", "yarn")
        ):
            limit = int(limit * float(arch.rope_scaling["factor"]))
        if length <= limit:
            continue
        gpu = unit.context.backend.accelerator == "gpu"
        yield unit.finding(
            "LMI307",
            f"{key}={length} is longer than {arch.model_id}'s max_position_embeddings {limit}; "
            + ("vLLM refuses it" if gpu else "positions past the trained length give wrong output")
            + f" — use {limit} or less",
            setting=setting,
            severity=None if gpu else "warning",
        )


@rule(
    code="LMI308",
    slug="bucket-invalid",
    severity="error",
    summary="context_length_estimate buckets that exceed n_positions or break the cache layout.",
    why=(
        "transformers-neuronx compiles one context-encoding graph per bucket; a bucket longer than n_positions "
        "cannot be used, and with cache_layout=BSH the only bucket must be n_positions (else a RuntimeError)."
    ),
    bad=Example(
        "option.model_id=gpt2\noption.entryPoint=djl_python.transformers_neuronx\noption.n_positions=512\noption.context_length_estimate=256,1024\n"
    ),
    good=Example(
        "option.model_id=gpt2\noption.entryPoint=djl_python.transformers_neuronx\noption.n_positions=1024\noption.context_length_estimate=256,1024\n"
    ),
    source="djl-serving.md §5.6 (context_length_estimate, cache_layout); seeds/002 (bucketing)",
)
def bucket_invalid(unit: LintUnit) -> Iterator[Finding]:
    setting = unit.config.settings.get("option.context_length_estimate")
    if setting is None or unit.context.backend.accelerator != "neuron":
        return
    parts = [part.strip() for part in setting.value.strip().strip("[]").split(",") if part.strip()]
    if not parts or not all(part.isdigit() for part in parts):
        return  # invalid-value reports the type
    buckets = [int(part) for part in parts]
    n_positions = None
    if unit.fit is not None:
        n_positions = unit.fit.shape.sequence_length
    elif (unit.config.get("option.n_positions") or "").strip().isdigit():
        n_positions = int((unit.config.get("option.n_positions") or "0").strip())
    if n_positions is not None:
        too_long = [bucket for bucket in buckets if bucket > n_positions]
        if too_long:
            yield unit.finding(
                "LMI308",
                f"context_length_estimate bucket(s) {', '.join(map(str, too_long))} exceed n_positions {n_positions}; "
                f"keep buckets at or below {n_positions}",
                setting=setting,
            )
    if buckets != sorted(set(buckets)):
        yield unit.finding(
            "LMI308",
            "context_length_estimate buckets should be ascending and distinct",
            setting=setting,
            severity="warning",
        )
    layout = (unit.config.get("option.cache_layout") or "").strip()
    if layout == "BSH" and n_positions is not None and buckets[0] != n_positions:
        yield unit.finding(
            "LMI308",
            f"cache_layout=BSH needs the first bucket to equal n_positions ({n_positions}), not {buckets[0]}",
            setting=setting,
        )


@rule(
    code="LMI309",
    slug="host-memory-insufficient",
    severity="error",
    summary="The model does not fit in host RAM (error), or compiling it likely does not (warning).",
    why=(
        "On Neuron the weights are loaded, converted and compiled on the host; the weights must fit once, and "
        "compiling has needed about twice as much — the kernel kills the process when the host runs out "
        "(Llama-3.1-8B on trn1.2xlarge), although a 276 GB fp32 model did run on a 512 GiB trn1.32xlarge."
    ),
    bad=Example(
        "option.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.entryPoint=djl_python.transformers_neuronx\noption.tensor_parallel_degree=2\noption.max_rolling_batch_size=2\noption.n_positions=1024\n",
        args={"instance": "trn1.2xlarge"},
    ),
    good=Example(
        "option.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.entryPoint=djl_python.transformers_neuronx\noption.tensor_parallel_degree=2\noption.max_rolling_batch_size=2\noption.n_positions=1024\n",
        args={"instance": "inf2.8xlarge"},
    ),
    source="lmi_config/data/memory.json (host); NxDI#26, neuronx-distributed#53, aws-neuron-sdk#1222",
)
def host_memory_insufficient(unit: LintUnit) -> Iterator[Finding]:
    from lmi_config.knowledge.instances import instances

    fit = unit.fit
    if fit is None or fit.instance.accelerator != "neuron" or not fit.instance.host_memory_gib:
        return
    available = fit.instance.host_memory_gib * GIB
    to_load = host_memory_needed_bytes(fit.arch, fit.shape, compile=False)
    to_compile = host_memory_needed_bytes(fit.arch, fit.shape, compile=True)
    if to_compile <= available:
        return
    needed = to_load if to_load > available else to_compile
    bigger = sorted(
        (
            item
            for item in instances().values()
            if item.platform == fit.instance.platform
            and (item.host_memory_gib or 0) * GIB >= needed
            and item.num_cores >= fit.shape.tensor_parallel_degree
        ),
        key=lambda item: item.host_memory_gib or 0,
    )
    suggestion = (
        f"{bigger[0].instance_type} has {bigger[0].host_memory_gib:g} GiB"
        if bigger
        else "no instance of this family has enough"
    )
    if to_load > available:
        yield unit.finding(
            "LMI309",
            f"{fit.arch.model_id}'s weights alone ({_gib(to_load)}) are larger than the host RAM of "
            f"{fit.instance.instance_type} ({fit.instance.host_memory_gib:g} GiB); {suggestion}",
            line=None,
        )
        return
    yield unit.finding(
        "LMI309",
        f"loading and compiling {fit.arch.model_id} takes about {_gib(to_compile)} of host RAM (about 2 x the weights + 4 GiB) "
        f"but {fit.instance.instance_type} has {fit.instance.host_memory_gib:g} GiB: the compile may be killed; "
        f"load pre-compiled artifacts or use a larger instance ({suggestion})",
        line=None,
        severity="warning",
    )


@rule(
    code="LMI310",
    slug="model-copies",
    severity="info",
    summary="How many copies of the model the container will load (cores or GPUs / TP).",
    why=(
        "DJL starts one worker per TP group: 24 NeuronCores at TP 8 load three copies. That is often intended "
        "(more throughput) and sometimes not (djl-serving#1092: 'creates 2 copies')."
    ),
    bad=Example(
        "option.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.entryPoint=djl_python.transformers_neuronx\noption.tensor_parallel_degree=8\noption.max_rolling_batch_size=4\noption.n_positions=2048\n",
        args={"instance": "inf2.48xlarge"},
    ),
    good=Example(
        "option.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.entryPoint=djl_python.transformers_neuronx\noption.tensor_parallel_degree=24\noption.max_rolling_batch_size=4\noption.n_positions=2048\n",
        args={"instance": "inf2.48xlarge"},
    ),
    source="djl-serving.md §3 (worker placement); sagemaker-and-user-pain.md §4 #12 (djl-serving#1092)",
)
def model_copies(unit: LintUnit) -> Iterator[Finding]:
    instance = unit.context.instance
    tp = _tp_value(unit)
    if instance is None or instance.accelerator == "cpu" or tp is None or tp > instance.num_cores:
        return
    single = any(
        (unit.config.get(key) or "").strip().lower() == "true"
        for key in ("option.enable_lora", "option.enable_stateful_sessions")
    )
    copies = 1 if single else instance.num_cores // tp
    idle = instance.num_cores - copies * tp
    if copies <= 1 and not idle:
        return
    batch = unit.fit.shape.batch_size if unit.fit is not None else None
    concurrency = f", up to {copies * batch} sequences at once" if batch else ""
    idle_text = f"; {idle} {instance.core_word}(s) stay idle" if idle else ""
    why = " (LoRA / stateful sessions: one worker)" if single else ""
    yield unit.finding(
        "LMI310",
        f"the container loads {copies} cop{'ies' if copies != 1 else 'y'} of the model ({instance.num_cores} "
        f"{instance.core_word}s / TP {tp}){why}{concurrency}{idle_text}",
        setting=_tp_setting(unit),
    )


@rule(
    code="LMI311",
    slug="loading-timeout-too-short",
    severity="warning",
    summary="option.model_loading_timeout is shorter than downloading and compiling this model takes.",
    why=(
        "Neuron compiles at start-up; a 70B model on inf2 can take over an hour. When the timeout is shorter the "
        "worker is killed with a TimeoutException and the endpoint fails after all that time."
    ),
    bad=Example(
        "option.model_id=meta-llama/Llama-3.1-70B-Instruct\noption.entryPoint=djl_python.transformers_neuronx\noption.tensor_parallel_degree=24\noption.model_loading_timeout=1200\noption.max_rolling_batch_size=1\noption.n_positions=2048\n",
        args={"instance": "inf2.48xlarge"},
    ),
    good=Example(
        "option.model_id=meta-llama/Llama-3.1-70B-Instruct\noption.entryPoint=djl_python.transformers_neuronx\noption.tensor_parallel_degree=24\noption.model_loading_timeout=3600\noption.compiled_graph_path=s3://my-bucket/llama-3.1-70b-tp24/\noption.max_rolling_batch_size=1\noption.n_positions=2048\n",
        args={"instance": "inf2.48xlarge"},
    ),
    source="lmi_config/data/memory.json (loading); sagemaker-and-user-pain.md §4 #19 (fmbench-orchestrator#28), #20",
)
def loading_timeout_too_short(unit: LintUnit) -> Iterator[Finding]:
    from lmi_config.knowledge import load_data

    fit = unit.fit
    if fit is None:
        return
    neuron = fit.instance.accelerator == "neuron"
    precompiled = any(
        unit.config.has(key)
        for key in ("option.compiled_graph_path", "option.load_split_model", "option.save_mp_checkpoint_path")
    )
    needed = loading_seconds(fit.arch, fit.shape, neuron and not precompiled)
    setting = unit.config.settings.get("option.model_loading_timeout")
    if setting is not None and setting.value.strip().isdigit():
        timeout = int(setting.value.strip())
        where = f"option.model_loading_timeout={timeout}"
    else:
        timeout = load_data("memory.json")["loading"]["default_model_loading_timeout_seconds"]["value"]
        where = f"the image default {timeout} s"
    if needed <= timeout:
        return
    limit = load_data("memory.json")["loading"]["sagemaker_startup_limit_seconds"]["value"]
    advice = int(math.ceil(needed * 1.5 / 600) * 600)
    if advice > limit:
        fix = (
            f"that is beyond SageMaker's {limit} s start-up health check: compile ahead of time and point "
            "option.compiled_graph_path at the artifacts"
        )
    else:
        fix = f"set option.model_loading_timeout={advice} (and the SageMaker container start-up health-check timeout at least as long)"
    yield unit.finding(
        "LMI311",
        f"downloading{' and compiling' if neuron and not precompiled else ''} {fit.arch.model_id} takes roughly {needed // 60} min "
        f"(an estimate), longer than {where}; {fix}",
        setting=setting,
    )


@rule(
    code="LMI312",
    slug="vllm-kv-capacity",
    severity="error",
    summary="vLLM cannot hold one max_model_len sequence in the KV cache its start-up profile leaves.",
    why=(
        "vLLM sizes the KV cache from gpu_memory_utilization x the memory PyTorch sees, minus the weights, the "
        "profile run's activation peak and the non-torch memory its release counts, and refuses to start when one "
        "sequence of max_model_len tokens does not fit ('The model's max seq len is larger than the maximum number "
        "of tokens that can be stored in KV cache'). Within the estimate's error margin it is a warning."
    ),
    bad=Example(
        "option.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.rolling_batch=vllm\noption.tensor_parallel_degree=1\n",
        args={"instance": "g5.2xlarge"},
    ),
    good=Example(
        "option.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.rolling_batch=vllm\noption.tensor_parallel_degree=1\noption.max_model_len=8192\n",
        args={"instance": "g5.2xlarge"},
    ),
    source=(
        "vLLM worker start-up check (raise_if_cache_size_invalid); lmi_config/data/vllm_memory.json (profiler per "
        "vLLM version, from vLLM's sources); https://github.com/vllm-project/vllm/issues/10517"
    ),
)
def vllm_kv_capacity(unit: LintUnit) -> Iterator[Finding]:
    from lmi_config.gpu_memory import kv_capacity_verdict

    fit = unit.fit
    if (
        fit is None
        or fit.memory.unit != "GPU"
        or fit.backend not in ("vllm", "lmi-dist")
        or not fit.memory.fits
    ):
        return
    length = fit.shape.sequence_length
    verdict = kv_capacity_verdict(fit.memory, length)
    if verdict is None:
        return
    tokens = fit.memory.kv_cache_tokens or 0
    what = (
        "vLLM will refuse to start"
        if verdict == "error"
        else f"within the estimate's {fit.memory.kv_error_margin_fraction or 0:.0%} error margin, vLLM may refuse to start"
    )
    yield unit.finding(
        "LMI312",
        f"max_model_len {length} but the KV cache holds about {tokens} tokens per replica "
        f"({_gib(fit.memory.kv_cache_capacity_bytes or 0)} left of {fit.memory.budget_note}): {what}; "
        + _kv_advice(unit, length),
        setting=unit.config.settings.get("option.max_model_len") or _tp_setting(unit),
        severity=None if verdict == "error" else "warning",
    )


def _kv_advice(unit: LintUnit, length: int) -> str:
    """The largest max_model_len, the gpu_memory_utilization or the TP that would fit."""
    from dataclasses import replace

    from lmi_config.gpu_memory import kv_capacity_verdict, torch_visible_bytes
    from lmi_config.sizing import estimate_memory

    fit = unit.fit
    assert fit is not None
    memory, shape = fit.memory, fit.shape
    margin = memory.kv_error_margin_fraction or 0.0
    options = []
    longest = int((memory.kv_cache_tokens or 0) * (1 - margin)) // 256 * 256
    if longest >= 256:
        options.append(f"option.max_model_len={longest}")
    per_token = (memory.kv_bytes_per_sequence or 0) / max(length, 1)
    missing = per_token * length / (1 - margin) - (memory.kv_cache_capacity_bytes or 0)
    utilization = (
        math.ceil((shape.gpu_memory_utilization + missing / torch_visible_bytes(fit.instance)[0]) * 100) / 100
    )
    if utilization <= 0.98:
        options.append(f"option.gpu_memory_utilization={utilization:g}")
    tp = shape.tensor_parallel_degree * 2
    while tp <= fit.instance.num_cores:
        wider = estimate_memory(
            fit.arch, fit.instance, fit.backend, replace(shape, tensor_parallel_degree=tp)
        )
        if fit.arch.num_attention_heads % tp == 0 and kv_capacity_verdict(wider, length) is None:
            options.append(f"option.tensor_parallel_degree={tp}")
            break
        tp *= 2
    return ("set " + " or ".join(options)) if options else "use a larger instance"
