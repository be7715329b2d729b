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
