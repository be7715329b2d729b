"""Device memory the fixed per-core overheads do not cover: transformers-neuronx DMA rings that grow
with what is compiled, on the Neuron SDK a logged failure shows it for (see shape/dma_rings.py)."""

from __future__ import annotations

from collections.abc import Iterator

from lmi_config.rules.base import Example, Finding, LintUnit, rule

_TNX49 = (
    "option.model_id=meta-llama/Llama-2-7b-hf\noption.entryPoint=djl_python.transformers_neuronx\n"
    "option.tensor_parallel_degree=2\noption.n_positions=2048\noption.dtype=fp16\noption.rolling_batch=auto\n"
    "option.max_rolling_batch_size="
)


@rule(
    code="LMI313",
    slug="neuron-dma-rings-growth",
    severity="warning",
    summary="On the Neuron SDK where DMA rings were logged growing with the compiled buckets' KV cache, this does not fit.",
    why=(
        "DMA rings hold the descriptors of what each compiled bucket moves. The memory model counts them as a fixed "
        "amount per NeuronCore, which configurations at the edge confirm on most SDKs; on SDK 2.14 a Llama-2-7B at "
        "TP 2, batch 4, 2048 positions on inf2.8xlarge failed with 6.5 GB of DMA rings (transformers-neuronx#49) — "
        "about the KV cache summed over the default token-generation and context-encoding buckets. One log states "
        "it, so this is a warning, for images of that SDK only."
    ),
    bad=Example(_TNX49 + "4\n", args={"instance": "inf2.8xlarge", "lmi_version": "0.24.0"}),
    good=Example(_TNX49 + "2\n", args={"instance": "inf2.8xlarge", "lmi_version": "0.24.0"}),
    source=(
        "lmi_config/data/memory.json dma_ring_growth — https://github.com/aws-neuron/transformers-neuronx/issues/49 "
        "https://github.com/aws-neuron/aws-neuron-sdk/blob/81ce03ae261e12925e53437a0f690478e6366155/archive/transformers-neuronx/transformers-neuronx-developer-guide.rst"
    ),
)
def neuron_dma_rings_growth(unit: LintUnit) -> Iterator[Finding]:
    for problem in unit.problems("neuron-dma-rings-growth"):
        yield unit.report("LMI313", problem)
