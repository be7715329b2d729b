"""Real user problems (sagemaker-and-user-pain.md §4) that the current rules catch before deployment.

Each fixture under ``tests/fixtures/pain/`` is the configuration as the user wrote it (or the
environment the tool in question produced), named after the issue; the test asserts that the
named rule reports it on the right line and, where there is something to do instead, that the
message says what.

| § 4 # | issue | fixture | rule (slug) |
|---|---|---|---|
| 23 | aws/amazon-sagemaker-examples#4595 | amazon-sagemaker-examples-4595.serving.properties | trailing-whitespace, inline-comment, separator-style (``:`` and ``\\``), duplicate-key, invalid-value |
| 24 | deepjavalibrary/djl-serving#1173 | djl-serving-1173.serving.properties (as filed, comment after the value) | inline-comment, invalid-value |
| 24 | deepjavalibrary/djl-serving#1173 | djl-serving-1173-comment-on-own-line.serving.properties | conflicting-options |
| 25 | deepjavalibrary/djl-serving#1352 | djl-serving-1352.serving.properties | invalid-value |
| 26 | djl-serving PR #1078 (handler renamed) | djl-serving-1078.serving.properties | option-version |
| 26 | djl-serving PR #1825 (guide showed a handler that never existed) | djl-serving-1825.serving.properties | invalid-value |
| 27 | djl-serving PR #1404 | djl-serving-1404.serving.properties | conflicting-options |
| 28 | deepjavalibrary/djl-serving#2784 | djl-serving-2784.serving.properties (env var in the file) | env-style-key |
| 28 | deepjavalibrary/djl-serving#2784 | djl-serving-2784.env (option key in the environment) | env-style-key |
| 29 | aws/sagemaker-python-sdk#5698 | sagemaker-python-sdk-5698/ (serving.properties + ModelBuilder's env) | shadowed-setting |
| §4 silent-ignore | vLLM drops non-EngineArgs names | vllm-option-typo.serving.properties | unknown-option |
| djl-serving.md §1.1, §10.3 | TGI variables on the Neuron image | djl-neuronx-tgi-variables.env | ignored-env-var |
| djl-serving.md §10.3 | TGI launcher variables no LMI image reads | tgi-launcher-variables.env | ignored-env-var |
| djl-serving.md §10.5 | vLLM's native names next to LMI's | vllm-native-names.serving.properties | conflicting-options |
| §1.1(b) | DJLModel passes HF_TOKEN in the environment | sagemaker-djlmodel-hf-token.env | secret-in-config |
| djl-serving.md §6.1 | trust_remote_code without a pinned revision | trust-remote-code.serving.properties | trust-remote-code |
| djl-serving.md §1.1 | HF_MODEL_TRUST_REMOTE_CODE translated on GPU | tgi-trust-remote-code.env | trust-remote-code |

Not covered here (they need instance, model, memory, artifact or SageMaker-API knowledge:
another issue): #1, #2 (trn1 TP topology), #3, #4 (TP > NeuronCores, compiler limits),
#5, #6, #7, #8 (per-core memory: weights + KV cache, MoE total parameters), #9 (KV heads vs
TP), #10 (host RAM), #11 (heads divisible by TP), #12 (model copies per instance),
#13, #14, #15, #16, #17 (precompiled artifacts vs serving parameters, compiler and SDK
versions, NEURON_CC_FLAGS), #18 (explicit TP on Neuron), #19, #20 (loading and health-check
timeouts), #21, #22 (disk, VolumeSizeInGB), #30 (model support per Neuron container),
#31 (rope scaling on old Neuron SDKs), #32 (image table). For #29 only the precedence part is
covered: the SDK overwriting the user's own HF_MODEL_ID happens before any file exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import FIXTURES

from lmi_config.api import lint_paths
from lmi_config.lint import LintOptions
from lmi_config.rules import load_rules
from lmi_config.rules.base import Finding, find_rule

PAIN = FIXTURES / "pain"
load_rules()


@dataclass(frozen=True)
class Case:
    """One expected finding: ``slug`` on the line of ``fixture`` that contains ``anchor``."""

    issue: str
    fixture: str
    slug: str
    anchor: str | None  # text of the line the finding points at; None: not tied to a line
    advice: tuple[str, ...] = ()  # what the message must name (the fix)
    options: dict[str, str] = field(default_factory=dict)
    anchor_file: str | None = None  # for a directory fixture: the file the finding is in
    severity: str | None = None  # asserted where the issue is a start-up failure


CASES = [
    # 23: format pitfalls
    Case(
        "4595",
        "amazon-sagemaker-examples-4595.serving.properties",
        "trailing-whitespace",
        "option.model_id = s3://",
        ("delete",),
    ),
    Case(
        "4595",
        "amazon-sagemaker-examples-4595.serving.properties",
        "trailing-whitespace",
        "option.rolling_batch = trtllm",
        ("delete",),
    ),
    Case(
        "4595",
        "amazon-sagemaker-examples-4595.serving.properties",
        "invalid-value",
        "option.rolling_batch = trtllm",
        ("trtllm",),
        severity="error",
    ),
    Case(
        "4595",
        "amazon-sagemaker-examples-4595.serving.properties",
        "inline-comment",
        "# 32 was too small",
        ("own line", "'64'"),
    ),
    Case(
        "4595",
        "amazon-sagemaker-examples-4595.serving.properties",
        "separator-style",
        "option.model_loading_timeout :",
        ("option.model_loading_timeout=3600",),
    ),
    Case(
        "4595",
        "amazon-sagemaker-examples-4595.serving.properties",
        "separator-style",
        "option.task = text-\\",
        ("one line",),
    ),
    Case(
        "4595",
        "amazon-sagemaker-examples-4595.serving.properties",
        "duplicate-key",
        "option.output_formatter=jsonlines",
        ("remove",),
    ),
    # 24: engine x entryPoint x rolling_batch
    Case(
        "1173",
        "djl-serving-1173.serving.properties",
        "inline-comment",
        "option.rolling_batch=lmi-dist #",
        ("own line", "'lmi-dist'"),
    ),
    Case(
        "1173",
        "djl-serving-1173.serving.properties",
        "invalid-value",
        "option.rolling_batch=lmi-dist #",
        (),
        severity="error",
    ),
    Case(
        "1173",
        "djl-serving-1173-comment-on-own-line.serving.properties",
        "conflicting-options",
        "option.rolling_batch=lmi-dist",
        ("djl_python.deepspeed", "remove option.entryPoint"),
        severity="error",
    ),
    # 25: enum per option
    Case(
        "1352",
        "djl-serving-1352.serving.properties",
        "invalid-value",
        "option.enable_streaming=deepspeed",
        ("true", "false"),
        severity="error",
    ),
    # 26: entryPoint per container version
    Case(
        "1078",
        "djl-serving-1078.serving.properties",
        "option-version",
        "option.entryPoint=",
        ("djl_python.transformers_neuronx",),
        {"lmi_version": "0.24.0"},
    ),
    Case(
        "1825",
        "djl-serving-1825.serving.properties",
        "invalid-value",
        "option.entryPoint=",
        ("djl_python.transformers_neuronx",),
        severity="error",
    ),
    # 27: dynamic batch and rolling batch
    Case(
        "1404",
        "djl-serving-1404.serving.properties",
        "conflicting-options",
        "batch_size=4",
        ("option.rolling_batch=disable",),
        severity="error",
    ),
    # 28: env vs properties
    Case(
        "2784",
        "djl-serving-2784.serving.properties",
        "env-style-key",
        "VLLM_USE_V1=0",
        ("option.env=VLLM_USE_V1=0", "environment variable"),
    ),
    Case(
        "2784",
        "djl-serving-2784.env",
        "env-style-key",
        "option.rolling_batch=vllm",
        ("OPTION_ROLLING_BATCH",),
    ),
    Case(
        "2784",
        "djl-serving-2784.env",
        "env-style-key",
        "option.max_rolling_batch_size=64",
        ("OPTION_MAX_ROLLING_BATCH_SIZE",),
    ),
    # 29: precedence of the file over what ModelBuilder put in the environment
    Case(
        "5698",
        "sagemaker-python-sdk-5698",
        "shadowed-setting",
        "TENSOR_PARALLEL_DEGREE=4",
        ("option.tensor_parallel_degree='1'",),
        anchor_file="modelbuilder.env",
    ),
    Case(
        "5698",
        "sagemaker-python-sdk-5698",
        "shadowed-setting",
        "OPTION_DTYPE=bf16",
        ("option.dtype='fp16'",),
        anchor_file="modelbuilder.env",
    ),
    # silent ignores, TGI variables, vLLM names, secrets, remote code
    Case(
        "vllm-typo",
        "vllm-option-typo.serving.properties",
        "unknown-option",
        "option.max_rolling_batch_szie",
        ("option.max_rolling_batch_size",),
    ),
    Case(
        "vllm-typo",
        "vllm-option-typo.serving.properties",
        "unknown-option",
        "option.gpu_memory_utilisation",
        ("option.gpu_memory_utilization",),
    ),
    Case(
        "tgi-neuron",
        "djl-neuronx-tgi-variables.env",
        "ignored-env-var",
        "SM_NUM_GPUS=2",
        ("Neuron", "TENSOR_PARALLEL_DEGREE"),
    ),
    Case(
        "tgi-neuron",
        "djl-neuronx-tgi-variables.env",
        "ignored-env-var",
        "MAX_BATCH_SIZE=4",
        ("OPTION_MAX_ROLLING_BATCH_SIZE",),
    ),
    Case(
        "tgi-launcher",
        "tgi-launcher-variables.env",
        "ignored-env-var",
        "MAX_INPUT_LENGTH=4096",
        ("OPTION_MAX_MODEL_LEN",),
    ),
    Case(
        "tgi-launcher",
        "tgi-launcher-variables.env",
        "ignored-env-var",
        "MAX_TOTAL_TOKENS=8192",
        ("OPTION_MAX_MODEL_LEN",),
    ),
    Case(
        "vllm-names",
        "vllm-native-names.serving.properties",
        "conflicting-options",
        "option.tensor_parallel_size=2",
        ("option.tensor_parallel_degree",),
        severity="error",
    ),
    Case(
        "vllm-names",
        "vllm-native-names.serving.properties",
        "conflicting-options",
        "option.max_num_seqs=128",
        ("option.max_rolling_batch_size",),
        severity="error",
    ),
    Case(
        "hf-token",
        "sagemaker-djlmodel-hf-token.env",
        "secret-in-config",
        "HF_TOKEN=",
        ("deploy time",),
        severity="error",
    ),
    Case(
        "remote-code",
        "trust-remote-code.serving.properties",
        "trust-remote-code-unverified",  # Phi-3-mini-128k is not in the catalog: offline, whether code runs is unknown
        "option.trust_remote_code=true",
        ("option.revision",),
    ),
    Case(
        "remote-code",
        "tgi-trust-remote-code.env",
        "trust-remote-code-unverified",
        "HF_MODEL_TRUST_REMOTE_CODE=true",
        ("option.revision",),
    ),
]


def _anchor_line(path: Path, anchor: str) -> int:
    lines = path.read_text(encoding="latin-1").splitlines()
    matches = [
        number for number, line in enumerate(lines, start=1) if anchor in line and not line.startswith("#")
    ]
    assert len(matches) == 1, f"anchor {anchor!r} must name exactly one setting line of {path}: {matches}"
    return matches[0]


def _lint(fixture: str, options: dict[str, str]) -> list[Finding]:
    path = PAIN / fixture
    assert path.exists(), path
    return lint_paths([str(path)], LintOptions(**options)).findings


def _case_id(case: Case) -> str:
    anchor = re.sub(r"[^A-Za-z0-9_.]+", "_", case.anchor or "file").strip("_")
    return f"{case.issue}-{case.slug}-{anchor}"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(case) for case in CASES])
def test_pain_case_is_reported_where_it_happens(case: Case) -> None:
    assert find_rule(case.slug) is not None, f"no rule {case.slug}"
    findings = _lint(case.fixture, case.options)
    anchor_path = PAIN / case.fixture / case.anchor_file if case.anchor_file else PAIN / case.fixture
    line = _anchor_line(anchor_path, case.anchor) if case.anchor else None
    matching = [f for f in findings if f.rule == case.slug and f.line == line and Path(f.path) == anchor_path]
    shown = "\n".join(f"{f.path}:{f.line} {f.rule} {f.message}" for f in findings)
    assert matching, f"expected {case.slug} at {anchor_path.name}:{line}; got\n{shown}"
    finding = matching[0]
    for text in case.advice:
        assert text in finding.message, f"{case.slug} message should name {text!r}: {finding.message}"
    if case.severity:
        assert finding.severity == case.severity, finding


def test_every_fixture_is_used_by_a_case() -> None:
    used = {case.fixture for case in CASES}
    present = {path.name for path in PAIN.iterdir()}
    assert present == used


def test_precedence_message_names_the_file_value_as_the_winner() -> None:
    """#29: ModelBuilder's TENSOR_PARALLEL_DEGREE and OPTION_DTYPE lose to the user's file."""
    findings = [f for f in _lint("sagemaker-python-sdk-5698", {}) if f.rule == "shadowed-setting"]
    by_key = {f.key: f.message for f in findings}
    assert re.search(
        r"TENSOR_PARALLEL_DEGREE='4' is not used: option\.tensor_parallel_degree='1' \(.*serving\.properties:\d+\) wins",
        by_key["option.tensor_parallel_degree"],
    )
    assert re.search(
        r"OPTION_DTYPE='bf16' is not used: option\.dtype='fp16' \(.*serving\.properties:\d+\) wins",
        by_key["option.dtype"],
    )
    # the workers and timeouts ModelBuilder sets are not in the file: nothing is shadowed there
    assert "option.model_loading_timeout" not in by_key
    assert "option.predict_timeout" not in by_key


def test_token_in_the_pain_fixture_is_not_echoed() -> None:
    text = (PAIN / "sagemaker-djlmodel-hf-token.env").read_text()
    token = re.search(r"^HF_TOKEN=(\S+)$", text, re.M)[1]
    findings = _lint("sagemaker-djlmodel-hf-token.env", {})
    assert all(token not in f.message and token[3:] not in f.message for f in findings)


def test_neuron_image_reports_tgi_variables_that_the_gpu_image_translates() -> None:
    """The same TGI variables are fine on a GPU image: the warning depends on the target."""
    gpu = {
        f.key
        for f in _lint("djl-neuronx-tgi-variables.env", {"backend": "vllm"})
        if f.rule == "ignored-env-var"
    }
    neuron = {
        f.key
        for f in _lint("djl-neuronx-tgi-variables.env", {"backend": "transformers-neuronx"})
        if f.rule == "ignored-env-var"
    }
    assert {"SM_NUM_GPUS", "MAX_BATCH_SIZE"} <= neuron
    assert not ({"SM_NUM_GPUS", "MAX_BATCH_SIZE"} & gpu)
