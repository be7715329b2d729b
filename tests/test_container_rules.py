"""Issue 10's examples, each a file under tests/fixtures/container/ linted at the release its pragma names.

Each case says what the container does with the file at that release, read from djl-serving's
code (data/djl_properties.json): the finding lint must report with the container's own message,
or the absence of any error where the container accepts the file.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from conftest import FIXTURES

from lmi_config.api import lint_paths
from lmi_config.lint import LintOptions
from lmi_config.rules.base import Finding

CONTAINER = FIXTURES / "container"


@dataclass(frozen=True)
class Case:
    """A fixture and what lint reports on it (``code`` None: no error at all)."""

    fixture: str
    code: str | None
    contains: tuple[str, ...] = ()
    severity: str = "error"


def findings_of(fixture: str) -> list[Finding]:
    return lint_paths([str(CONTAINER / fixture)], LintOptions()).findings


REPORTED = [
    # vLLM dtype: every path builds HuggingFaceProperties (auto, fp32, fp16, bf16, int8, lower-cased)
    Case("vllm-dtype-float16-030.properties", "LMI102", ("HuggingFaceProperties", "Invalid data type: float16", "set option.dtype=fp16")),
    Case("vllm-dtype-bfloat16-async-035.properties", "LMI102", ("Invalid data type: bfloat16", "set option.dtype=bf16")),
    # … and from 0.32 VllmRbProperties narrows it to its DTYPE_MAPPER
    Case("vllm-dtype-int8-033.properties", "LMI102", ("VllmRbProperties", "Invalid dtype=int8 provided")),
    Case("vllm-quantize-bitsandbytes-030.properties", "LMI102", ("VllmRbProperties", "Input should be 'awq'")),
    # pydantic v1 on the 0.25-0.27 branches: its own message
    Case("vllm-quantize-gptq-026.properties", "LMI102", ("value is not a valid enumeration member; permitted: 'awq'",)),
    Case("tnx-optimum-loader-without-schema-030.properties", "LMI201", ("Optimum model loader does not support non-optimum cache partitioning", "partition_schema=optimum")),
    Case("tnx-model-loader-nxdi-030.properties", "LMI102", ("Input should be 'tnx', 'optimum' or 'vllm'",)),
    Case("tnx-partition-schema-legacy-030.properties", "LMI102", ("Input should be 'optimum', 'safetensors' or 'compile_only'",)),
    Case("tnx-unknown-rolling-batch-030.properties", "LMI106", ("replaces it by auto", "transformer neuronx only supports rolling batch type"), "warning"),
    Case("tnx-option-batch-size-with-auto-030.properties", "LMI201", ("Dynamic batching and rolling batch cannot be enabled at the same time",)),
    Case("hf-bitsandbytes8-without-device-map-030.properties", "LMI201", ("device_map should be set when load_in_8bit is set", "option.device_map=auto")),
    Case("hf-load-in-8bit-without-device-map-031.properties", "LMI201", ("device_map should be set when load_in_8bit is set",)),
    Case("vllm-async-service-032.properties", "LMI103", ("exists in LMI 0.33.0 (LMI v15) to master",)),
    Case("trtllm-integer-prose-027.properties", "LMI102", ("max(256,value you override)", "is not an integer")),
    Case("vllm-cpu-offload-float-030.properties", "LMI102", ("Input should be a valid integer",)),
    Case("cluster-size-028.properties", "LMI103", ("0.29.0 and later",), "warning"),
    Case("bedrock-compat-028.properties", "LMI103", ("0.29.0 and later",), "warning"),
    # what each image can run (data/image_pins.json, data/transformers_model_types.json)
    Case("qwen3-on-last-neuron-image.properties", "LMI206", ("qwen3", "transformers 4.45.2", "djl-neuronx")),
    Case("gemma-on-027-neuron-image.properties", "LMI206", ("gemma model", "transformers 4.36.2")),
    Case("remote-code-untrusted.properties", "LMI207", ("auto_map", "option.trust_remote_code=true")),
    Case("model-newer-than-image.properties", "LMI208", ("4.45.0.dev0", "4.43.2"), "warning"),
    # values mangled, artifacts mismatched
    Case("model-id-blanks.properties", "LMI209", ("write meta-llama/Llama-3.1-8B-Instruct",)),
    Case("model-id-archive.env", "LMI209", ("archive", "s3://my-bucket/llama/")),
    Case("model-id-url.properties", "LMI209", ("write Qwen/Qwen2.5-7B-Instruct",)),
    Case("task-unknown-hf.properties", "LMI210", ("did you mean text-generation",), "warning"),
    Case(
        "precompiled-shape-mismatch.properties",
        "LMI211",
        ("option.tensor_parallel_degree=8", "cores (tensor parallel degree) 2"),
        "warning",
    ),
    Case("precompiled-shape-mismatch.properties", "LMI211", ("option.max_rolling_batch_size=8", "batch size 4"), "warning"),
    Case("precompiled-compiler-too-new.properties", "LMI212", ("2.14.227.0", "2.13.68.0")),
    Case("gemma-7b-catalog-027.properties", "LMI206", ("gemma model", "transformers 4.36.2")),
    Case("mpt-remote-code-023.properties", "LMI207", ("auto_map", "transformers 4.30.2")),
    Case("vllm-max-lora-rank-320-030.properties", "LMI102", ("vLLM 0.6.2", "must be one of (8, 16, 32, 64, 128, 256)")),
]  # fmt: skip

ACCEPTED = [
    "vllm-dtype-bf16-036.properties",
    "vllm-quantize-bitsandbytes-031.properties",
    "vllm-quantize-gptq-027.properties",
    "tnx-optimum-loader-with-schema-030.properties",
    "tnx-model-loader-nxdi-032.properties",
    "tnx-partition-schema-legacy-029.properties",
    "tnx-unknown-rolling-batch-030.properties",  # a warning, not an error
    "tnx-option-batch-size-with-auto-025.properties",
    "tnx-dynamic-batch-both-keys-030.properties",
    "hf-bitsandbytes8-with-device-map-030.properties",
    "vllm-async-service-033.properties",
    "vllm-option-batch-size-030.properties",
    "lmi-dist-option-batch-size-030.properties",
    "trtllm-option-batch-size-033.properties",
    "vllm-cpu-offload-float-032.properties",
    "cluster-size-029.properties",
    "tgi-compat-028.properties",
    "bedrock-compat-029.properties",
    "tnx-on-device-embedding-config-028.properties",
    "vllm-generation-config-031.properties",
    "vllm-override-neuron-config-033.properties",
    "hf-multi-gpu-030.properties",
    "lmi-dist-torch-dtype-026.properties",
    "qwen3-on-vllm-033.properties",
    "remote-code-trusted.properties",
    "precompiled-shape-match.properties",
    "vllm-max-lora-rank-320-033.properties",
    "mpt-native-030.properties",
]


@pytest.mark.parametrize("case", REPORTED, ids=lambda case: case.fixture)
def test_what_the_container_refuses_is_reported_with_its_message(case: Case) -> None:
    found = [f for f in findings_of(case.fixture) if f.code == case.code and f.severity == case.severity]
    assert found, findings_of(case.fixture)
    assert any(all(text in f.message for text in case.contains) for f in found), [f.message for f in found]
    assert all(f.line is not None for f in found)  # on the line of the key concerned


@pytest.mark.parametrize("fixture", ACCEPTED)
def test_what_the_container_accepts_has_no_error(fixture: str) -> None:
    errors = [f for f in findings_of(fixture) if f.severity == "error"]
    assert errors == [], [f.message for f in errors]


GAPS = [
    "cluster-size-029.properties",
    "tgi-compat-028.properties",
    "bedrock-compat-029.properties",
    "tnx-on-device-embedding-config-028.properties",
    "vllm-generation-config-031.properties",
    "vllm-override-neuron-config-033.properties",
    "hf-multi-gpu-030.properties",
    "lmi-dist-torch-dtype-026.properties",
    "vllm-cpu-offload-float-032.properties",
]


@pytest.mark.parametrize("fixture", GAPS)
def test_the_catalogue_knows_what_the_code_reads(fixture: str) -> None:
    """The gaps of the hand-written catalogue: no unknown-option and no version finding."""
    codes = {f.code for f in findings_of(fixture)}
    assert not codes & {"LMI101", "LMI103", "LMI104"}, findings_of(fixture)


def test_variables_the_container_never_reads_are_named_with_what_they_should_have_been() -> None:
    found = {f.key: f.message for f in findings_of("env-names-never-read.env") if f.code == "LMI203"}
    assert "set OPTION_MAX_ROLLING_BATCH_SIZE instead" in found["MAX_ROLLING_BATCH_SIZE"]
    assert "OPTION_MAX_MODEL_LEN" in found["MAX_LENGTH"]
    assert "Java arguments" in found["ARGS_MAX_ROLLING_BATCH_SIZE"]
    assert "set OPTION_MAX_ROLLING_BATCH_SIZE instead" in found["ARGS_MAX_ROLLING_BATCH_SIZE"]
    # reported once: not also as an unknown option
    assert not [f for f in findings_of("env-names-never-read.env") if f.code == "LMI101"]


def test_neuron_cc_flags_beside_pre_compiled_artifacts_are_reported_in_the_env_file() -> None:
    directory = CONTAINER / "neuron-cc-flags"
    findings = lint_paths([str(directory)], LintOptions()).findings
    [flagged] = [f for f in findings if f.code == "LMI213"]
    assert flagged.path.endswith("model.env") and flagged.line == 1 and flagged.key == "NEURON_CC_FLAGS"


def test_a_matching_pre_compiled_artifact_is_clean() -> None:
    findings = findings_of("precompiled-shape-match.properties")
    assert not [f for f in findings if f.code in ("LMI211", "LMI212", "LMI213")], findings


def test_a_top_level_key_is_named_a_model_argument_the_handler_never_sees() -> None:
    [found] = [f for f in findings_of("top-level-key.properties") if f.code == "LMI101"]
    assert "model argument" in found.message and "write option.max_rolling_batch_size" in found.message
