"""Parallelism: TP against the devices, the Neuron topology and the heads; copies of the model.

The rules report the verdict of the one judge (:mod:`lmi_config.shape`): they run when the
instance (``--instance`` or a pragma) and/or the model (``--model``, a pragma, or
``option.model_id`` found in the catalog or a local directory) are known.
"""

from __future__ import annotations

from collections.abc import Iterator

from lmi_config.rules.base import Example, Finding, LintUnit, rule


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
    source=(
        "djl-serving.md §3 (worker placement); sagemaker-and-user-pain.md §4 #3, #4 (aws-neuron-sdk#749, vllm-neuron#7) — "
        "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/wlm/src/main/java/ai/djl/serving/wlm/ModelInfo.java "
        "https://github.com/aws-neuron/aws-neuron-sdk/issues/749 "
        "https://github.com/vllm-project/vllm-neuron/issues/7"
    ),
)
def tp_exceeds_devices(unit: LintUnit) -> Iterator[Finding]:
    for problem in unit.problems("tp-exceeds-devices"):
        yield unit.report("LMI303", problem)


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
    source=(
        "lmi_config/data/tp_rules.json (optimum-neuron#619, #424; transformers-neuronx and NxDI guides; Neuron Calculator) — "
        "https://github.com/huggingface/optimum-neuron/issues/619 "
        "https://github.com/huggingface/optimum-neuron/issues/424 "
        "https://github.com/aws-neuron/aws-neuron-sdk/blob/81ce03ae261e12925e53437a0f690478e6366155/archive/transformers-neuronx/transformers-neuronx-developer-guide.rst "
        "https://github.com/aws-neuron/aws-neuron-sdk/blob/81ce03ae261e12925e53437a0f690478e6366155/libraries/nxd-inference/developer_guides/feature-guide.rst "
        "https://github.com/aws-neuron/aws-neuron-sdk/blob/81ce03ae261e12925e53437a0f690478e6366155/about-neuron/calculator/neuron-calculator.rst"
    ),
)
def tp_unsupported_degree(unit: LintUnit) -> Iterator[Finding]:
    for problem in unit.problems("tp-unsupported-degree"):
        yield unit.report("LMI304", problem)


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
    source=(
        "lmi_config/data/tp_rules.json (kind heads); vllm#414, #2652; neuron-ground-truth.md §2 — "
        "https://github.com/vllm-project/vllm/issues/414 "
        "https://github.com/vllm-project/vllm/issues/2652 "
        "https://github.com/vllm-project/vllm/blob/v0.6.2/vllm/config.py "
        "https://github.com/aws-neuron/aws-neuron-sdk/blob/81ce03ae261e12925e53437a0f690478e6366155/archive/transformers-neuronx/transformers-neuronx-developer-guide.rst "
        "https://github.com/aws-neuron/aws-neuron-sdk/blob/81ce03ae261e12925e53437a0f690478e6366155/libraries/nxd-inference/developer_guides/feature-guide.rst"
    ),
)
def tp_heads_divisibility(unit: LintUnit) -> Iterator[Finding]:
    for problem in unit.problems("tp-heads-divisibility"):
        yield unit.report("LMI305", problem)


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
    source=(
        "djl-serving.md §9 (vLLM KV-head rule); neuron-ground-truth.md §5.2 (NxDI gqa.py, tnx GQA strategies); aws-neuron-sdk#1289 — "
        "https://github.com/vllm-project/vllm/blob/v0.6.2/vllm/model_executor/models/llama.py "
        "https://github.com/aws-neuron/neuronx-distributed-inference/blob/4bcdc54bf3b6ccdad490e5cd0680a3dc95270b8e/src/neuronx_distributed_inference/modules/attention/gqa.py "
        "https://github.com/aws-neuron/aws-neuron-sdk/blob/81ce03ae261e12925e53437a0f690478e6366155/archive/transformers-neuronx/transformers-neuronx-developer-guide.rst "
        "https://github.com/aws-neuron/aws-neuron-sdk/issues/1289"
    ),
)
def kv_heads_sharding(unit: LintUnit) -> Iterator[Finding]:
    for problem in unit.problems("kv-heads-sharding"):
        yield unit.report("LMI306", problem)


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
    source=(
        "djl-serving.md §3 (worker placement); sagemaker-and-user-pain.md §4 #12 (djl-serving#1092) — "
        "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/wlm/src/main/java/ai/djl/serving/wlm/ModelInfo.java "
        "https://github.com/deepjavalibrary/djl-serving/issues/1092"
    ),
)
def model_copies(unit: LintUnit) -> Iterator[Finding]:
    for problem in unit.problems("model-copies"):
        yield unit.report("LMI310", problem)
