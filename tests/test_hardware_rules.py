"""What the GPU and the image's vLLM can run, each check pinned to the vLLM line (or GPU fact) it comes from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from lmi_config.knowledge import load_data
from lmi_config.knowledge.capabilities import gpu_device, vllm_capabilities
from lmi_config.lint import LintOptions, lint_text

BIOGPT = str(ROOT / "tests" / "fixtures" / "models" / "biogpt")
QWEN = ROOT / "tests" / "fixtures" / "models" / "qwen2.5-7b" / "config.json"


def codes(text: str, **options: str) -> dict[str, str]:
    """Code -> severity of the findings of ``text`` linted for vLLM with ``options``."""
    result = lint_text(text, options=LintOptions(backend="vllm", **options))
    return {finding.code: finding.severity for finding in result.findings}


LLAMA_ON_FOUR_T4S = (
    "option.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.rolling_batch=vllm\n"
    "option.tensor_parallel_degree=4\noption.max_model_len=4096\n"
)


def test_generated_facts_cite_the_vllm_line_that_states_them() -> None:
    release = load_data("vllm_capabilities.json")["versions"]["0.6.2"]
    assert release["bfloat16_min_capability"]["value"] == 80
    assert release["bfloat16_min_capability"]["source"].startswith("vllm/worker/worker.py:")
    assert "/blob/v0.6.2/vllm/worker/worker.py#L" in release["bfloat16_min_capability"]["source"]
    # FP8 kernels: L4/L40S/H100 only in vLLM 0.4.2, weight-only on Ampere from 0.5.3, on Turing in later releases
    assert [
        vllm_capabilities(v).quantization["fp8"].min_capability for v in ("0.4.2", "0.5.3.post1", "0.14.0")
    ] == [
        89,
        80,
        75,
    ]
    assert vllm_capabilities("0.10.2").float16_unsupported["gemma2"].startswith("Numerical instability")


def test_every_gpu_instance_type_has_a_compute_capability() -> None:
    gpus = {
        row["accelerator_name"]
        for row in load_data("instances.json")["instances"]
        if row["accelerator"] == "gpu"
    }
    assert {name for name in gpus if gpu_device(name) is None} == set()
    assert gpu_device("T4").compute_capability == 75 and gpu_device("A10G").compute_capability == 86


def test_a_development_build_reads_the_release_it_precedes() -> None:
    assert vllm_capabilities("0.15.1.dev2").read_from == "0.15.1"
    assert vllm_capabilities("0.3.3") is None  # older than the data: no judgement, no guess


def test_bfloat16_checkpoint_on_a_t4_fails_with_dtype_auto_before_vllm_0_10() -> None:
    # vLLM 0.6.2 keeps the checkpoint's bfloat16 for dtype=auto and its worker refuses it below 8.0
    assert (
        codes(LLAMA_ON_FOUR_T4S, lmi_version="0.30.0", instance="ml.g4dn.12xlarge").get("LMI601") == "error"
    )
    # vLLM 0.10.2 resolves auto to a dtype the GPU supports (float16) and only logs the fallback: a warning
    assert (
        codes(LLAMA_ON_FOUR_T4S, lmi_version="0.34.0", instance="ml.g4dn.12xlarge").get("LMI601") == "warning"
    )
    # an explicit bf16 fails with every release; an A10G (8.6) runs it
    explicit = LLAMA_ON_FOUR_T4S + "option.dtype=bf16\n"
    assert codes(explicit, lmi_version="0.34.0", instance="ml.g4dn.12xlarge").get("LMI601") == "error"
    assert "LMI601" not in codes(explicit, lmi_version="0.34.0", instance="ml.g5.12xlarge")


def test_the_t4_finding_names_the_line_and_the_way_out() -> None:
    result = lint_text(
        LLAMA_ON_FOUR_T4S + "option.dtype=bf16\n",
        options=LintOptions(backend="vllm", lmi_version="0.30.0", instance="ml.g4dn.12xlarge"),
    )
    finding = next(finding for finding in result.findings if finding.code == "LMI601")
    assert finding.line == 5 and finding.key == "option.dtype"
    assert "T4 (compute capability 7.5" in finding.message and "option.dtype=fp16" in finding.message


def test_dtype_auto_on_a_t4_for_a_model_not_known_here_is_a_warning_with_the_fix() -> None:
    # the kept checkpoint dtype is unknown, but most current checkpoints are bfloat16 (the error above)
    unknown = "option.model_id=someorg/fine-tuned-7b\noption.rolling_batch=vllm\noption.max_model_len=4096\n"
    result = lint_text(
        unknown, options=LintOptions(backend="vllm", lmi_version="0.30.0", instance="ml.g4dn.xlarge")
    )
    finding = next(finding for finding in result.findings if finding.code == "LMI601")
    assert finding.severity == "warning" and finding.key == "option.model_id"
    assert finding.fix is not None and finding.fix.description == "set option.dtype=fp16"
    # no warning where the file decides, where vLLM picks a dtype the GPU runs (0.10+), or on a GPU with bfloat16
    assert "LMI601" not in codes(
        unknown + "option.dtype=fp16\n", lmi_version="0.30.0", instance="ml.g4dn.xlarge"
    )
    assert "LMI601" not in codes(unknown, lmi_version="0.34.0", instance="ml.g4dn.xlarge")
    assert "LMI601" not in codes(unknown, lmi_version="0.30.0", instance="ml.g5.xlarge")
    # no model named at all (corpus 510: an image classifier packaged beside the file): nothing to warn about
    nameless = "engine=Python\n"
    assert "LMI601" not in codes(nameless, lmi_version="0.29.0", instance="ml.g4dn.2xlarge")
    # a known bfloat16 model with the dtype left out: the error, and the same one-line fix
    known = lint_text(
        LLAMA_ON_FOUR_T4S,
        options=LintOptions(backend="vllm", lmi_version="0.30.0", instance="ml.g4dn.12xlarge"),
    )
    error = next(finding for finding in known.findings if finding.code == "LMI601")
    assert (
        error.severity == "error"
        and error.fix is not None
        and error.fix.description == "set option.dtype=fp16"
    )


def test_float16_is_refused_for_gemma2_but_auto_falls_back_to_float32_on_a_t4() -> None:
    gemma = "option.model_id=google/gemma-2-2b-it\noption.rolling_batch=vllm\noption.max_model_len=2048\n"
    assert (
        codes(gemma + "option.dtype=fp16\n", lmi_version="0.34.0", instance="ml.g5.2xlarge")["LMI603"]
        == "error"
    )
    # dtype auto on a T4: vLLM 0.10.2 drops float16 for gemma2 and bfloat16 for the GPU, and runs float32
    found = codes(gemma, lmi_version="0.34.0", instance="ml.g4dn.2xlarge")
    assert "LMI603" not in found and "LMI601" not in found


def test_fp8_needs_the_capability_of_the_release() -> None:
    text = (
        "option.model_id=mistralai/Mistral-7B-v0.1\noption.rolling_batch=vllm\noption.quantize=fp8\n"
        "option.dtype=fp16\noption.tensor_parallel_degree=4\noption.max_model_len=4096\n"
    )
    assert codes(text, lmi_version="0.29.0", instance="ml.g4dn.12xlarge")["LMI602"] == "error"  # T4 7.5 < 8.0
    assert "LMI602" not in codes(text, lmi_version="0.29.0", instance="ml.g5.12xlarge")  # A10G 8.6


def test_a_modelopt_checkpoint_declared_only_in_hf_quant_config_json_needs_8_9_where_vllm_reads_that_file() -> (
    None
):
    # nvidia/Llama-3.1-70B-Instruct-FP8 keeps its quantization in hf_quant_config.json (ModelOpt 0.23);
    # from vLLM 0.10 the config loader reads that file unasked and the checkpoint loads as modelopt, whose
    # kernels need compute capability 8.9 (generated: modelopt_checkpoint_detected, quantization.modelopt)
    text = (
        "option.model_id=nvidia/Llama-3.1-70B-Instruct-FP8\noption.rolling_batch=vllm\n"
        "option.tensor_parallel_degree=4\noption.max_model_len=8192\n"
    )
    assert vllm_capabilities("0.10.2").modelopt_checkpoint_detected  # type: ignore[union-attr]
    assert not vllm_capabilities("0.8.4").modelopt_checkpoint_detected  # type: ignore[union-attr]
    assert codes(text, lmi_version="0.34.0", instance="ml.p4d.24xlarge")["LMI602"] == "error"  # A100 8.0
    assert codes(text, lmi_version="lmi27", instance="ml.p4d.24xlarge")["LMI602"] == "error"
    assert "LMI602" not in codes(text, lmi_version="lmi27", instance="ml.p5.48xlarge")  # H100 9.0
    # vLLM 0.8.4 reads hf_quant_config.json only when told --quantization modelopt
    assert "LMI602" not in codes(text, lmi_version="0.33.0", instance="ml.p4d.24xlarge")


def test_a_modelopt_checkpoint_vllm_does_not_read_unasked_must_be_named_in_option_quantize() -> None:
    # vLLM 0.8.4 (LMI 0.33) loads nvidia's ModelOpt FP8 checkpoint unquantized unless --quantization
    # modelopt: its weight scales have no parameter (llama.py load_weights: KeyError at start-up)
    text = (
        "option.model_id=nvidia/Llama-3.1-70B-Instruct-FP8\noption.rolling_batch=vllm\n"
        "option.tensor_parallel_degree=4\noption.max_model_len=8192\n"
    )
    assert codes(text, lmi_version="0.33.0", instance="ml.p5.48xlarge")["LMI613"] == "error"
    named = text + "option.quantize=modelopt\n"
    assert "LMI613" not in codes(named, lmi_version="0.33.0", instance="ml.p5.48xlarge")
    assert "LMI613" not in codes(text, lmi_version="0.34.0", instance="ml.p5.48xlarge")  # vLLM 0.10 reads it


def test_awq_on_a_checkpoint_that_is_not_quantized_is_an_error(tmp_path: Path) -> None:
    text = (
        "option.model_id=Qwen/Qwen2.5-7B-Instruct\noption.rolling_batch=vllm\noption.quantize=awq\n"
        "option.tensor_parallel_degree=4\noption.max_model_len=4096\noption.dtype=fp16\n"
    )
    assert codes(text, lmi_version="0.33.0", instance="ml.g5.12xlarge")["LMI605"] == "error"
    config = json.loads(QWEN.read_text())
    awq = tmp_path / "awq"
    awq.mkdir()
    (awq / "config.json").write_text(
        json.dumps({**config, "quantization_config": {"quant_method": "awq", "bits": 4}})
    )
    assert "LMI605" not in codes(text, lmi_version="0.33.0", instance="ml.g5.12xlarge", model=str(awq))
    gptq = tmp_path / "gptq"
    gptq.mkdir()
    (gptq / "config.json").write_text(
        json.dumps({**config, "quantization_config": {"quant_method": "gptq", "bits": 4}})
    )
    assert codes(text, lmi_version="0.33.0", instance="ml.g5.12xlarge", model=str(gptq))["LMI605"] == "error"
    # in-flight bitsandbytes reads no checkpoint settings (get_quant_config returns before looking for files)
    online = text.replace("quantize=awq", "quantize=bitsandbytes")
    assert "LMI605" not in codes(online, lmi_version="0.33.0", instance="ml.g5.12xlarge")
    # but an online method on an already quantized checkpoint is the same mismatch (_verify_quantization
    # compares any quantization argument with config.json's quant_method, after the Marlin overrides)
    for method in ("bitsandbytes", "fp8"):
        asked = text.replace("quantize=awq", f"quantize={method}")
        assert (
            codes(asked, lmi_version="0.33.0", instance="ml.g5.12xlarge", model=str(awq))["LMI605"] == "error"
        )


def test_a_quantized_copy_whose_base_is_not_known_is_held_to_the_method_its_name_states() -> None:
    # vllm-project/vllm#4202: Qwen1.5-32B-Chat-AWQ on a V100 (7.0); AWQ's kernels need 7.5. Qwen1.5 is not in
    # the catalog, but the -AWQ suffix says the method, which is all the GPU check needs
    text = "option.model_id=Qwen/Qwen1.5-32B-Chat-AWQ\noption.rolling_batch=vllm\noption.max_model_len=512\n"
    result = lint_text(
        text, options=LintOptions(backend="vllm", lmi_version="0.28.0", instance="ml.p3dn.24xlarge")
    )
    [finding] = [f for f in result.findings if f.code == "LMI602"]
    assert finding.severity == "error" and "its name's -AWQ suffix says so" in finding.message
    assert "need compute capability 7.5; the V100-32GB has 7.0" in finding.message
    # the same copy on a T4 (7.5) runs; a name without a method's suffix says nothing
    assert "LMI602" not in codes(text, lmi_version="0.28.0", instance="ml.g4dn.xlarge")
    plain = text.replace("-AWQ", "")
    assert "LMI602" not in codes(plain, lmi_version="0.28.0", instance="ml.p3dn.24xlarge")


def test_awq_kernels_take_float16_only() -> None:
    text = (
        "option.model_id=Qwen/Qwen2.5-7B-Instruct\noption.rolling_batch=vllm\noption.quantize=awq\n"
        "option.tensor_parallel_degree=4\noption.max_model_len=4096\noption.dtype=bf16\n"
    )
    assert codes(text, lmi_version="0.31.0", instance="ml.g5.12xlarge")["LMI604"] == "error"
    assert "LMI604" not in codes(
        text.replace("bf16", "fp16"), lmi_version="0.31.0", instance="ml.g5.12xlarge"
    )


@pytest.mark.parametrize(
    ("lmi_version", "expected"),
    [("0.30.0", ("LMI606", "error")), ("0.34.0", ("LMI607", "warning"))],
)
def test_an_architecture_outside_the_registry(lmi_version: str, expected: tuple[str, str]) -> None:
    text = "option.model_id=microsoft/biogpt\noption.rolling_batch=vllm\noption.max_model_len=1024\n"
    found = codes(text, lmi_version=lmi_version, instance="ml.g5.2xlarge", model=BIOGPT)
    code, severity = expected
    assert found.get(code) == severity
    assert not ({"LMI606", "LMI607"} - {code}) & set(found)


def test_lint_cli_reports_bfloat16_on_a_t4(tmp_path: Path) -> None:
    (tmp_path / "serving.properties").write_text(LLAMA_ON_FOUR_T4S)
    result = run_cli(
        "lint", str(tmp_path / "serving.properties"), "--instance", "ml.g4dn.12xlarge", "--lmi-version", "0.30.0",
        "--format", "json",
    )  # fmt: skip
    assert result.returncode == 1
    found = [finding for finding in json.loads(result.stdout)["findings"] if finding["code"] == "LMI601"]
    assert found and found[0]["rule"] == "dtype-unsupported-by-gpu" and found[0]["severity"] == "error"


def test_render_auto_writes_a_dtype_the_t4_can_run(tmp_path: Path) -> None:
    out = tmp_path / "serving.properties"
    result = run_cli(
        "render", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--instance", "ml.g4dn.12xlarge",
        "--backend", "vllm", "--lmi-version", "0.30.0", "--set", "tensor_parallel_degree=auto", "-o", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    written = out.read_text()
    assert "option.dtype=fp16" in written
    lint = run_cli(
        "lint", str(out), "--instance", "ml.g4dn.12xlarge", "--lmi-version", "0.30.0", "--format", "json"
    )
    assert not [f for f in json.loads(lint.stdout)["findings"] if f["severity"] == "error"]


def test_plan_ranks_nothing_the_engine_refuses() -> None:
    from lmi_config.api import plan
    from lmi_config.errors import PlanningError

    # FP8 kernels need 8.0 in vLLM 0.5.3 (LMI 0.29): nothing on a T4 may rank; on an A10G it does
    with pytest.raises(PlanningError):
        plan(model="mistralai/Mistral-7B-v0.1", instances=("ml.g4dn.12xlarge",), backend="vllm", lmi_version="0.29.0",
             dtype="fp16", options=(("option.quantize", "fp8"),))  # fmt: skip
    ranked = plan(model="mistralai/Mistral-7B-v0.1", instances=("ml.g5.12xlarge",), backend="vllm", lmi_version="0.29.0",
                  dtype="fp16", options=(("option.quantize", "fp8"),))  # fmt: skip
    assert ranked.candidates and not [c for c in ranked.candidates if c.blocked_by]


def test_a_vision_language_model_gets_an_upper_bound_not_a_kv_capacity(tmp_path: Path) -> None:
    text = (
        "option.model_id=google/gemma-3-12b-it\noption.rolling_batch=vllm\noption.tensor_parallel_degree=4\n"
    )
    (tmp_path / "serving.properties").write_text(text + "option.max_model_len=8192\n")
    result = run_cli(
        "explain", str(tmp_path / "serving.properties"), "--instance", "ml.g5.12xlarge", "--lmi-version", "0.34.0",
        "--format", "json",
    )  # fmt: skip
    memory = json.loads(result.stdout)["memory"]
    assert memory["kv_upper_bound_only"] is True
    assert any("multimodal" in note and "vision encoder" in note for note in memory["notes"])
    text_only = run_cli(
        "explain", str(tmp_path / "serving.properties"), "--instance", "ml.g5.12xlarge", "--lmi-version", "0.34.0",
    )  # fmt: skip
    assert "KV cache: at most" in text_only.stdout


def test_a_pre_quantized_checkpoint_is_sized_as_vllm_loads_it_without_option_quantize(tmp_path: Path) -> None:
    """vLLM reads quantization_config from config.json on its own: an AWQ Llama-3.1-70B on four A10Gs
    (about 9.4 GiB of weights per GPU) was sized at 2 bytes per weight (32.9 GiB) — a false LMI301."""
    from lmi_config.knowledge.models import hand_catalog_rows

    row = next(row for row in hand_catalog_rows() if row["model_id"] == "meta-llama/Llama-3.1-70B-Instruct")
    awq = tmp_path / "llama-70b-awq"
    awq.mkdir()
    quantization = {
        "quant_method": "awq",
        "bits": 4,
        "group_size": 128,
        "version": "gemm",
        "zero_point": True,
    }
    (awq / "config.json").write_text(
        json.dumps({**row["config"], "torch_dtype": "float16", "quantization_config": quantization})
    )
    text = "option.model_id=/opt/ml/model\noption.rolling_batch=vllm\noption.tensor_parallel_degree=4\noption.max_model_len=4096\n"
    found = codes(text, lmi_version="0.33.0", instance="ml.g5.12xlarge", model=str(awq))
    assert "LMI301" not in found and "LMI605" not in found
    unquantized = tmp_path / "llama-70b"
    unquantized.mkdir()
    (unquantized / "config.json").write_text(json.dumps({**row["config"], "torch_dtype": "float16"}))
    assert (
        codes(text, lmi_version="0.33.0", instance="ml.g5.12xlarge", model=str(unquantized))["LMI301"]
        == "error"
    )


def test_a_checkpoint_format_newer_than_the_images_vllm_stops_the_start_up() -> None:
    # gpt-oss is stored in MXFP4 (config.json quantization_config); vLLM 0.7.3 (LMI 0.32) has no such method:
    # ModelConfig._verify_quantization raises "Unknown quantization method: mxfp4" — the issue's own example
    text = "option.model_id=openai/gpt-oss-20b\noption.rolling_batch=vllm\noption.max_model_len=4096\n"
    found = lint_text(
        text, options=LintOptions(backend="vllm", lmi_version="0.32.0", instance="ml.g6e.2xlarge")
    )
    finding = next(finding for finding in found.findings if finding.code == "LMI613")
    assert finding.severity == "error" and "mxfp4" in finding.message and "vLLM 0.10.2" in finding.message
    assert "LMI613" not in codes(text, lmi_version="0.34.0", instance="ml.g6e.2xlarge")
    # a method the release knows (AWQ) is not this finding
    assert "LMI613" not in codes(
        text.replace("openai/gpt-oss-20b", "Qwen/Qwen2.5-7B-Instruct"), lmi_version="0.32.0"
    )


def test_an_unknown_quantization_method_from_config_json_is_shown_short(tmp_path: Path) -> None:
    config = json.loads(QWEN.read_text())
    method = "evil\nLMI999 error injected" + "x" * 5000
    (tmp_path / "config.json").write_text(
        json.dumps({**config, "quantization_config": {"quant_method": method}})
    )
    text = "option.model_id=Qwen/Qwen2.5-7B-Instruct\noption.rolling_batch=vllm\noption.max_model_len=4096\n"
    result = lint_text(
        text,
        options=LintOptions(
            backend="vllm", lmi_version="0.30.0", instance="ml.g5.2xlarge", model=str(tmp_path)
        ),
    )
    finding = next(finding for finding in result.findings if finding.code == "LMI613")
    assert len(finding.message) < 600 and "x" * 100 not in finding.message


@pytest.mark.parametrize(
    ("loading", "vllm", "expected"),
    [
        (
            {"hf_quant_config": {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4"}}},
            "0.23.0",
            "modelopt_fp4",
        ),
        (
            {"hf_quant_config": {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP8"}}},
            "0.23.0",
            "modelopt",
        ),
        (
            {"hf_quant_config": {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP8"}}},
            "0.8.4",
            None,
        ),
        # config.json's own quantization_config is what vLLM reads first
        (
            {
                "quantization_config": {"quant_method": "fp8"},
                "hf_quant_config": {"producer": {"name": "modelopt"}},
            },
            "0.23.0",
            "fp8",
        ),
    ],
)
def test_the_checkpoint_method_is_read_as_the_release_reads_it(
    loading: dict, vllm: str, expected: str | None
) -> None:
    from lmi_config.modelarch import from_catalog
    from lmi_config.shape.dimensions import checkpoint_method

    arch = from_catalog("meta-llama/Llama-3.1-8B-Instruct")
    assert arch is not None
    assert checkpoint_method(arch._replace(loading=loading), vllm) == expected


def test_the_fallback_of_dtype_auto_is_a_warning_quoting_vllms_log_line() -> None:
    # _resolve_auto_dtype (vllm/config/__init__.py of 0.10.2) logs "Falling back to torch.float16" and runs
    t4 = LintOptions(backend="vllm", lmi_version="0.34.0", instance="ml.g4dn.12xlarge")
    found = lint_text(LLAMA_ON_FOUR_T4S, options=t4)
    [finding] = [item for item in found.findings if item.code == "LMI601"]
    assert finding.severity == "warning"
    assert (
        "doesn't support torch.bfloat16. Falling back to torch.float16 for compatibility." in finding.message
    )
    assert (
        "https://github.com/vllm-project/vllm/blob/v0.10.2/vllm/config/__init__.py#L2716" in finding.message
    )
    # written out, the dtype is the file's own choice: nothing to say
    written = lint_text(LLAMA_ON_FOUR_T4S + "option.dtype=fp16\n", options=t4)
    assert not [item for item in written.findings if item.code == "LMI601"]
