"""LMI215: variables DJL Serving's Python engine sets for each worker (generated from Connection.java)."""

from __future__ import annotations

import sys

from conftest import ROOT

from lmi_config.api import lint_text
from lmi_config.lint import LintOptions

sys.path.insert(0, str(ROOT / "scripts"))

import gen_worker_environment as generator  # noqa: E402

NEURON_FILE = (
    "HF_MODEL_ID=meta-llama/Llama-3.1-8B-Instruct\nOPTION_ENTRYPOINT=djl_python.transformers_neuronx\n"
    "OPTION_TENSOR_PARALLEL_DEGREE=2\n{extra}"
)
GPU_FILE = "HF_MODEL_ID=Qwen/Qwen2.5-7B-Instruct\nOPTION_ROLLING_BATCH=vllm\n{extra}"


def _replaced(text: str, instance: str, version: str) -> list:
    result = lint_text(text, "env", LintOptions(instance=instance, lmi_version=version), name="model.env")
    return [finding for finding in result.findings if finding.code == "LMI215"]


def test_neuron_cores_set_for_the_container_never_reach_the_worker() -> None:
    """Connection.java (0.30.0-dlc): pyEnv.addEnv("NEURON_RT_VISIBLE_CORES", …) in the "nc" device block,
    applied over the process environment by PyEnv.getEnvironmentVars."""
    found = _replaced(NEURON_FILE.format(extra="NEURON_RT_VISIBLE_CORES=0-1\n"), "inf2.24xlarge", "0.30.0")
    assert [(finding.line, finding.key, finding.severity) for finding in found] == [
        (4, "NEURON_RT_VISIBLE_CORES", "warning")
    ]
    assert "NEURON_RT_VISIBLE_CORES=0-1 has no effect" in found[0].message


def test_a_core_count_for_the_container_is_overruled_by_the_cores_the_engine_sets() -> None:
    """nrt-configurable-parameters.rst (SDK 2.20, note 5): "NEURON_RT_VISIBLE_CORES takes precedence over
    NEURON_RT_NUM_CORES" — and the engine sets NEURON_RT_VISIBLE_CORES for every Neuron worker (0.22.1 on)."""
    found = _replaced(NEURON_FILE.format(extra="NEURON_RT_NUM_CORES=2\n"), "inf2.24xlarge", "0.30.0")
    assert [(finding.line, finding.key, finding.severity) for finding in found] == [
        (4, "NEURON_RT_NUM_CORES", "warning")
    ]
    assert "takes NEURON_RT_VISIBLE_CORES over NEURON_RT_NUM_CORES" in found[0].message
    # before the engine placed Neuron workers itself, the container's count reached the runtime
    assert not _replaced(NEURON_FILE.format(extra="NEURON_RT_NUM_CORES=2\n"), "inf2.24xlarge", "0.21.0")


def test_a_variable_is_reported_only_on_releases_that_set_it() -> None:
    """OMP_NUM_THREADS is set for Neuron workers from 0.27.0 on (0.27.0-dlc Connection.java)."""
    text = NEURON_FILE.format(extra="OMP_NUM_THREADS=8\n")
    assert _replaced(text, "inf2.24xlarge", "0.30.0")
    assert not _replaced(text, "inf2.24xlarge", "0.26.0")


def test_gpu_devices_are_replaced_on_gpu_only() -> None:
    assert _replaced(GPU_FILE.format(extra="CUDA_VISIBLE_DEVICES=0\n"), "g5.12xlarge", "0.33.0")
    assert not _replaced(NEURON_FILE.format(extra="CUDA_VISIBLE_DEVICES=0\n"), "inf2.24xlarge", "0.30.0")
    assert not _replaced(GPU_FILE.format(extra="NEURON_RT_VISIBLE_CORES=0-1\n"), "g5.12xlarge", "0.33.0")


def test_the_generator_reads_both_ways_the_engine_sets_a_variable() -> None:
    """addEnv inside the Neuron or GPU device block, and -x NAME=value on the mpirun command line."""
    java = "\n".join(
        [
            "    if (pyEnv.isMpiMode()) {",
            "        String[] args = new String[4];",
            '        args[0] = "mpirun";',
            '        args[1] = "-x";',
            '        args[2] = "CUDA_VISIBLE_DEVICES=" + cudaDevices;',
            "        return args;",
            "    }",
            "    if (worldSize > 0 && device.isGpu()) {",
            '        pyEnv.addEnv("CUDA_VISIBLE_DEVICES", cudaDevices);',
            "    }",
            '    if ("nc".equals(device.getDeviceType())) {',
            '        pyEnv.addEnv("NEURON_RT_VISIBLE_CORES", visibleCores);',
            "    }",
            '    String other = "PYTHONPATH=" + path;',
        ]
    )
    assert generator.assignments(java) == {
        ("CUDA_VISIBLE_DEVICES", "gpu"): 5,
        ("NEURON_RT_VISIBLE_CORES", "neuron"): 12,
    }


def test_a_long_value_is_shown_shortened() -> None:
    found = _replaced(
        NEURON_FILE.format(extra="NEURON_RT_NUM_CORES=" + "1" * 3000 + "\n"), "inf2.24xlarge", "0.30.0"
    )
    assert found and len(found[0].message) < 600
