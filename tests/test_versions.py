"""Backend, LMI version and image: what the file names, what is assumed, and what an image ships."""

from __future__ import annotations

import pytest

from lmi_config.api import lint_text
from lmi_config.knowledge import image_framework, parse_lmi_version
from lmi_config.lint import LintOptions

TNX = "option.model_id=gpt2\noption.entryPoint=djl_python.transformers_neuronx\noption.tensor_parallel_degree=2\n"


@pytest.mark.parametrize(
    ("text", "djl", "lmi"),
    [
        ("0.30.0", "0.30.0", "12"),
        ("v12", "0.30.0", "12"),
        ("lmi27", "0.36.0", "27"),
        ("0.30.0-neuronx-sdk2.20.1", "0.30.0", "12"),
        ("763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.36.0-lmi27.0.0-cu130", "0.36.0", "27"),
    ],
)
def test_versions_and_image_tags_resolve(text: str, djl: str, lmi: str) -> None:
    release = parse_lmi_version(text)
    assert (release.djl, release.lmi) == (djl, lmi)


def test_unknown_version_lists_what_is_known() -> None:
    with pytest.raises(ValueError, match="unknown LMI version '9.9'"):
        parse_lmi_version("9.9")


def test_image_family_is_read_from_the_tag() -> None:
    assert image_framework("0.33.0-lmi15.0.0-cu128") == "djl-lmi"
    assert image_framework("0.30.0-neuronx-sdk2.20.1") == "djl-neuronx"
    assert image_framework("0.30.0") is None


@pytest.mark.parametrize(
    ("tag", "djl", "framework"),
    [
        ("deepjavalibrary/djl-serving:0.25.0-tensorrt-llm", "0.25.0", "djl-tensorrtllm"),
        ("deepjavalibrary/djl-serving:0.26.0-pytorch-inf2", "0.26.0", "djl-neuronx"),
        ("deepjavalibrary/djl-serving:0.28.0-lmi", "0.28.0", "djl-lmi"),
        ("deepjavalibrary/djl-serving:0.27.0-deepspeed", "0.27.0", "djl-deepspeed"),
    ],
)
def test_djl_docker_hub_tags_name_the_release_and_the_image(tag: str, djl: str, framework: str) -> None:
    """DJL's own Docker Hub images (serving/docker/docker-compose.yml names them <version>-tensorrt-llm,
    -pytorch-inf2, -lmi, -deepspeed): five corpus files name 0.25.0-0.30.0-tensorrt-llm and could not be
    linted at their version before."""
    assert parse_lmi_version(tag).djl == djl
    assert image_framework(tag) == framework


@pytest.mark.parametrize("tag", ["0.26.0-tensorrt-llm", "0.30.0-tensorrtllm0.12.0-cu125"])
def test_a_file_that_leaves_the_backend_unsaid_runs_the_one_backend_of_the_image_named(tag: str) -> None:
    """DJL's TensorRT-LLM tutorial writes no rolling_batch for its image (rolling_batch=auto is trtllm
    there); before, the file was judged as vLLM (the djl-lmi default) and refused for that image."""
    text = (
        "engine=Python\noption.mpi_mode=true\noption.model_id=s3://bucket/trtllm/llama-7b-tp2/\n"
        "option.tensor_parallel_degree=2\noption.max_rolling_batch_size=64\n"
    )
    result = lint_text(text, "properties", LintOptions(lmi_version=tag))
    unit = result.units[0]
    assert unit.context.backend.id == "tensorrt-llm" and unit.context.backend_assumed
    assert "djl-tensorrtllm image named" in unit.context.backend_reason
    assert not [f for f in result.findings if f.severity == "error"]
    explicit = lint_text(text + "option.rolling_batch=vllm\n", "properties", LintOptions(lmi_version=tag))
    assert explicit.units[0].context.backend.id == "vllm"  # what the file says wins over the image


def test_neuron_handler_in_a_gpu_image_is_an_error() -> None:
    gpu = lint_text(TNX, "properties", LintOptions(lmi_version="0.33.0-lmi15.0.0-cu128"))
    assert any(
        f.rule == "option-version" and f.severity == "error" and "djl-neuronx" in f.message
        for f in gpu.findings
    )
    neuron = lint_text(TNX, "properties", LintOptions(lmi_version="0.30.0-neuronx-sdk2.20.1"))
    assert not [f for f in neuron.findings if f.rule == "option-version"]


def test_an_image_named_in_a_comment_sets_the_version() -> None:
    text = (
        "# image: 763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:0.29.0-neuronx-sdk2.19.1\n" + TNX
    )
    unit = lint_text(text, "properties").units[0]
    assert unit.context.release.djl == "0.29.0" and not unit.context.release_assumed


def test_neuron_backends_are_gone_after_0_34() -> None:
    result = lint_text(TNX, "properties", LintOptions(lmi_version="0.36.0"))
    messages = [f.message for f in result.findings if f.rule == "option-version"]
    assert any("0.22.1" in message and "0.34.0" in message for message in messages), messages


def test_the_version_is_inferred_from_the_options_the_file_uses() -> None:
    # option.paged_attention was read by lmi-dist only up to 0.26: an old file is not judged as 0.32
    unit = lint_text(
        "option.model_id=gpt2\noption.rolling_batch=lmi-dist\noption.paged_attention=true\nengine=MPI\n",
        "properties",
    ).units[0]
    assert unit.context.release_assumed and unit.context.release.djl_tuple <= (0, 26, 0)
