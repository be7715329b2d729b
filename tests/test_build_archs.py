"""LMI608: a GPU the image's vLLM kernels are not built for, older or newer than every architecture
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


def test_blackwell_gpus_get_no_kernels_from_images_whose_cuda_predates_them() -> None:
    """Code built for X.y runs only on X.z, z >= y: the CUDA 12.4 / 12.6 images (LMI 0.28-0.32) build up to
    9.0, so a B200 (10.0) or an RTX PRO 6000 (12.0) gets nothing (vllm-project/vllm#20173, #21633)."""
    for instance, version, gpu in (
        ("ml.p6-b200.48xlarge", "0.30.0", "B200"),
        ("ml.p6-b200.48xlarge", "0.32.0", "B200"),
        ("ml.g7e.2xlarge", "0.31.0", "RTX-PRO-6000"),
    ):
        found = _build_errors(instance, version)
        assert len(found) == 1 and found[0].severity == "error", (instance, version)
        assert f"the {gpu} of" in found[0].message and "7.0 to 9.0" in found[0].message
        assert "use LMI 0.36.0 (LMI v27)" in found[0].message  # the newest image built for it
    # from LMI 0.33.0 (CUDA 12.8) the list has 10.0 and 12.0; a B300 (10.3) runs 10.0's code
    assert not _build_errors("ml.p6-b200.48xlarge", "0.33.0")
    assert not _build_errors("ml.g7e.2xlarge", "v27")
    assert not _build_errors("ml.p6-b300.48xlarge", "0.34.0")


def test_code_runs_on_a_later_minor_of_its_major_architecture_only() -> None:
    from lmi_config.knowledge.build_archs import BuildArchs

    hopper = BuildArchs((70, 75, 80, 86, 90), "12.4", "CMakeLists.txt:1")
    assert hopper.runs_on(89) and hopper.runs_on(90)  # an L4 runs the 8.6 code
    assert not hopper.runs_on(100) and not hopper.runs_on(120) and not hopper.runs_on(61)
    blackwell = BuildArchs((75, 80, 86, 89, 90, 100, 110, 120), "13.0", "CMakeLists.txt:1")
    assert blackwell.runs_on(103) and not blackwell.runs_on(70)
