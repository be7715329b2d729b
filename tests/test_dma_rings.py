"""transformers-neuronx DMA rings that grew with the compiled buckets (transformers-neuronx#49, SDK 2.14):
a warning on images of that SDK, nothing on the others, where configurations like it ran."""

from __future__ import annotations

from lmi_config.api import lint_text
from lmi_config.lint import LintOptions
from lmi_config.shape.dma_rings import bucket_factor

LOGGED_FAILURE = (
    "option.model_id=meta-llama/Llama-2-7b-hf\noption.entryPoint=djl_python.transformers_neuronx\n"
    "option.tensor_parallel_degree=2\noption.n_positions=2048\noption.dtype=fp16\noption.rolling_batch=auto\n"
    "option.max_rolling_batch_size={batch}\n"
)


def _findings(batch: int, lmi_version: str) -> list:
    result = lint_text(
        LOGGED_FAILURE.format(batch=batch),
        "properties",
        LintOptions(instance="inf2.8xlarge", lmi_version=lmi_version),
        name="serving.properties",
    )
    return result.findings


def test_the_logged_failure_is_warned_about_on_the_sdk_it_failed_on() -> None:
    """https://github.com/aws-neuron/transformers-neuronx/issues/49: batch 4 x 2048 on inf2.8xlarge, SDK 2.14
    (LMI 0.24.0's image), failed allocating DMA rings; the fixed-overhead model says it fits."""
    findings = _findings(4, "0.24.0")
    growth = [finding for finding in findings if finding.code == "LMI313"]
    assert len(growth) == 1 and growth[0].severity == "warning"
    assert "2.14" in growth[0].message and "GiB" in growth[0].message
    assert not [finding for finding in findings if finding.severity == "error"]


def test_a_smaller_batch_on_the_same_sdk_is_not_warned_about() -> None:
    assert not [finding for finding in _findings(2, "0.24.0") if finding.code == "LMI313"]


def test_other_sdks_keep_the_fixed_dma_rings() -> None:
    """Configurations that would exceed with the same growth ran on other SDKs (optimum-neuron hub-cache
    entries, the opt-13b notebook), so the growth is not applied there."""
    assert not [finding for finding in _findings(4, "0.30.0") if finding.code == "LMI313"]


def test_buckets_are_the_developer_guides_defaults() -> None:
    """Token generation: 128, 256, 512, 1024 and n_positions 2048; context encoding at half of each."""
    assert bucket_factor(2048, 128, 0.5) == (128 + 256 + 512 + 1024 + 2048) * 1.5 / 2048
    assert bucket_factor(3000, 128, 0.5) == (128 + 256 + 512 + 1024 + 2048 + 3000) * 1.5 / 3000
    assert bucket_factor(128, 128, 0.5) == 1.5
