"""Memory and time: weights + KV cache + overheads against the budget per NeuronCore or GPU, the KV
cache vLLM is left with, host RAM, and loading time against the timeouts.

The rules report the verdict of the one judge (:mod:`lmi_config.shape`), which uses the one
memory model (:mod:`lmi_config.sizing`); they run when both the model and the instance are known.
"""

from __future__ import annotations

from collections.abc import Iterator

from lmi_config.rules.base import Example, Finding, LintUnit, rule

_SIZING_SOURCE = (
    "lmi_config/data/memory.json (neuron-ground-truth.md §4-§5: OOM logs, the measured Llama-3.1-8B breakdown) — "
    "https://github.com/aws-neuron/transformers-neuronx/issues/92 "
    "https://github.com/aws-neuron/transformers-neuronx/issues/49 "
    "https://github.com/huggingface/optimum-neuron/blob/6373c379dd9f55be2a77e94f287364349724298a/benchmark/vllm/memory_capacity_analysis.md"
)


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
    for problem in unit.problems("memory-exceeds-budget"):
        yield unit.report("LMI301", problem)


@rule(
    code="LMI302",
    slug="memory-headroom-low",
    severity="warning",
    summary="It fits, but with less of a NeuronCore's memory left than the estimate's error (headroom_warning_fraction in memory.json).",
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
    for problem in unit.problems("memory-headroom-low"):
        yield unit.report("LMI302", problem)


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
    source=(
        "lmi_config/data/memory.json (host); NxDI#26, neuronx-distributed#53, aws-neuron-sdk#1222 — "
        "https://github.com/aws-neuron/neuronx-distributed-inference/issues/26 "
        "https://github.com/aws-neuron/neuronx-distributed/issues/53 "
        "https://github.com/aws-neuron/aws-neuron-sdk/issues/1222"
    ),
)
def host_memory_insufficient(unit: LintUnit) -> Iterator[Finding]:
    for problem in unit.problems("host-memory-insufficient"):
        yield unit.report("LMI309", problem)


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
    source=(
        "lmi_config/data/memory.json (loading); sagemaker-and-user-pain.md §4 #19 (fmbench-orchestrator#28), #20 — "
        "https://github.com/awslabs/fmbench-orchestrator/issues/28 "
        "https://github.com/aws/amazon-sagemaker-examples/issues/3432 "
        "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariant.html "
        "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/engines/python/src/main/java/ai/djl/python/engine/PyEnv.java"
    ),
)
def loading_timeout_too_short(unit: LintUnit) -> Iterator[Finding]:
    for problem in unit.problems("loading-timeout-too-short"):
        yield unit.report("LMI311", problem)


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
        "vLLM version, from vLLM's sources); https://github.com/vllm-project/vllm/issues/10517 "
        "https://github.com/vllm-project/vllm/blob/v0.6.2/vllm/worker/worker.py"
    ),
)
def vllm_kv_capacity(unit: LintUnit) -> Iterator[Finding]:
    for problem in unit.problems("vllm-kv-capacity"):
        yield unit.report("LMI312", problem)
