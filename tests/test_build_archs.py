"""LMI608: a GPU older than every architecture the image's vLLM kernels are built for
(CUDA_SUPPORTED_ARCHS in vLLM's CMakeLists.txt, per the image's CUDA)."""

from __future__ import annotations

import sys

from conftest import ROOT

from lmi_config.api import lint_text
from lmi_config.lint import LintOptions

sys.path.insert(0, str(ROOT / "scripts"))

import gen_vllm_cuda_archs as generator  # noqa: E402

CONFIG = (
    "option.model_id=Qwen/Qwen2.5-1.5B-Instruct\noption.rolling_batch=vllm\noption.dtype=fp16\n"
    "option.max_model_len=4096\n"
)


def _build_errors(instance: str, version: str) -> list:
    result = lint_text(
        CONFIG, "properties", LintOptions(instance=instance, lmi_version=version), name="serving.properties"
    )
    return [finding for finding in result.findings if finding.code == "LMI608"]


def test_a_v100_gets_no_kernels_from_the_cuda_13_image() -> None:
    """vLLM v0.23.0 CMakeLists.txt#L104: with CUDA >= 13.0 the architectures start at 7.5; LMI v27 is cu130."""
    found = _build_errors("ml.p3.2xlarge", "v27")
    assert len(found) == 1 and found[0].severity == "error"
    assert (
        "7.5" in found[0].message and "7.0" in found[0].message and "CMakeLists.txt:104" in found[0].message
    )
    assert "LMI 0.36.0 (LMI v19)" in found[0].message  # the newest image whose vLLM still builds for 7.0


def test_images_that_build_for_volta_and_newer_gpus_are_not_reported() -> None:
    """vLLM v0.8.4 (LMI 0.33.0, cu128) lists 7.0; a T4 (7.5) is in the CUDA 13 list."""
    assert not _build_errors("ml.p3.2xlarge", "0.33.0")
    assert not _build_errors("ml.g4dn.xlarge", "v27")
    assert not _build_errors("ml.g5.2xlarge", "v27")


def test_the_generator_reads_each_cuda_branch_of_the_cmake_list() -> None:
    text = "\n".join(
        [
            "if(DEFINED CMAKE_CUDA_COMPILER_VERSION AND",
            "   CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 13.0)",
            '  set(CUDA_SUPPORTED_ARCHS "7.5;8.0;12.0")',
            "elseif(DEFINED CMAKE_CUDA_COMPILER_VERSION AND",
            "   CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.8)",
            '  set(CUDA_SUPPORTED_ARCHS "7.0;7.5;8.0;10.0")',
            "else()",
            '  set(CUDA_SUPPORTED_ARCHS "7.0;7.5;8.0")',
            "endif()",
        ]
    )
    branches = generator.cmake_branches(text, "0.99.0")
    assert [(branch["min_cuda"], branch["archs"][0]) for branch in branches] == [
        ("13.0", "7.5"),
        ("12.8", "7.0"),
        (None, "7.0"),
    ]
    assert branches[0]["source"].startswith(
        "CMakeLists.txt:3 https://github.com/vllm-project/vllm/blob/v0.99.0/"
    )
