"""Sequence length: against the model's maximum, and transformers-neuronx's bucket layout."""

from __future__ import annotations

from collections.abc import Iterator

from lmi_config.rules.base import Example, Finding, LintUnit, rule
from lmi_config.shape.values import count_or_none, read_count


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
    source=(
        "vLLM ModelConfig (max_model_len > derived max raises unless VLLM_ALLOW_LONG_MAX_MODEL_LEN); djl-serving.md §3 (n_positions) — "
        "https://github.com/vllm-project/vllm/blob/v0.6.2/vllm/config.py "
        "https://github.com/deepjavalibrary/djl-serving/blob/afece25dd0cab637d771d061c284747bdb0f736c/wlm/src/main/java/ai/djl/serving/wlm/NeuronSmartDefaultUtils.java"
    ),
)
def sequence_exceeds_model_max(unit: LintUnit) -> Iterator[Finding]:
    for problem in unit.problems("sequence-exceeds-model-max"):  # the judge decides, with the model's limit
        yield unit.report("LMI307", problem)


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
    source=(
        "djl-serving.md §5.6 (context_length_estimate, cache_layout); seeds/002 (bucketing) — "
        "https://github.com/deepjavalibrary/djl-serving/blob/afece25dd0cab637d771d061c284747bdb0f736c/engines/python/setup/djl_python/properties_manager/tnx_properties.py "
        "https://github.com/aws-neuron/aws-neuron-sdk/blob/81ce03ae261e12925e53437a0f690478e6366155/archive/transformers-neuronx/transformers-neuronx-developer-guide.rst"
    ),
)
def bucket_invalid(unit: LintUnit) -> Iterator[Finding]:
    setting = unit.config.settings.get("option.context_length_estimate")
    if setting is None or unit.context.backend.accelerator != "neuron":
        return
    parts = [part.strip() for part in setting.value.strip().strip("[]").split(",") if part.strip()]
    readings = [read_count(part).value for part in parts]
    if not parts or None in readings:
        return  # invalid-value reports the type
    buckets = [int(reading) for reading in readings if reading is not None]
    n_positions = None
    assessment = unit.assessment
    if assessment is not None and assessment.memory is not None and assessment.shape.sequence_length:
        n_positions = assessment.shape.sequence_length.value
    else:
        n_positions = count_or_none(unit.config, "option.n_positions")
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
