"""TensorRT-LLM engine-build limits against what the configuration promises (LMI609, LMI610), each fact
pinned to the djl-serving line it is generated from, through the real entry point."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import ROOT, run_cli

from lmi_config.knowledge.engine_support import trtllm_build

sys.path.insert(0, str(ROOT / "scripts"))

import gen_engine_registries as generator  # noqa: E402  (the generator under test)

LLAMA_ON_TRTLLM = (
    "engine=MPI\noption.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.rolling_batch=trtllm\n"
    "option.tensor_parallel_degree=4\n"
)
ON_G5 = ("--backend", "tensorrt-llm", "--instance", "ml.g5.12xlarge")


def lint(tmp_path: Path, text: str, version: str) -> tuple[int, dict[str, list[dict]]]:
    """Exit code and findings by code of ``lmi-config lint --format json`` on one serving.properties."""
    path = tmp_path / "serving.properties"
    path.write_text(text, encoding="utf-8")
    result = run_cli("lint", str(path), "--format", "json", "--lmi-version", version, *ON_G5)
    assert "Traceback" not in result.stderr, result.stderr
    found: dict[str, list[dict]] = {}
    for finding in json.loads(result.stdout)["findings"]:
        found.setdefault(finding["code"], []).append(finding)
    return result.returncode, found


def test_the_build_facts_are_read_from_djl_servings_own_trtllm_build() -> None:
    """djl-serving 0.33.0-dlc serving/docker/partition/trt_llm_partition.py parse_build_config:
    properties["max_batch_size"] = properties["max_rolling_batch_size"]; BuildConfig.from_dict lists
    max_input_len / max_seq_len / max_num_tokens but no max_output_len; trt_properties.py max_input_len: int =
    1024; LmiConfigRecommender.java sets option.max_num_tokens=16384 for trtllm."""
    build = trtllm_build("0.33.0")
    assert build is not None
    assert build.replaced["max_batch_size"].value == "max_rolling_batch_size"
    assert "trt_llm_partition.py#L" in build.replaced["max_batch_size"].source
    assert {"max_input_len", "max_seq_len", "max_num_tokens", "max_batch_size"} <= build.build_arguments
    assert "max_output_len" not in build.build_arguments
    assert build.defaults["max_input_len"].value == 1024 and build.defaults["max_num_tokens"].value == 16384
    # before 0.33 the trtllm toolkit builds the engine: its code is not public, nothing is judged
    assert trtllm_build("0.30.0") is None


def test_the_generator_reads_the_build_config_literal_and_the_replacements() -> None:
    text = (
        "def parse(properties):\n"
        '    if "a" in properties:\n'
        '        properties["max_batch_size"] = properties["max_rolling_batch_size"]\n'
        '    return BuildConfig.from_dict({"max_input_len": 1, "max_seq_len": x})\n'
    )
    assert generator.partition_facts(text) == (
        ["max_input_len", "max_seq_len"],
        4,
        {"max_batch_size": ("max_rolling_batch_size", 3)},
    )
    assert generator.handler_defaults("class P:\n    max_input_len: int = 1024\n    other: int = 3\n") == {
        "max_input_len": (1024, 2)
    }


def test_a_batch_size_the_build_overwrites_is_a_warning_naming_the_effective_value(tmp_path: Path) -> None:
    text = LLAMA_ON_TRTLLM + "option.max_batch_size=64\noption.max_rolling_batch_size=16\n"
    code, found = lint(tmp_path, text, "0.33.0")
    [replaced] = found["LMI609"]
    assert code == 0 and replaced["severity"] == "warning" and replaced["line"] == 5
    assert "built for max_batch_size=16" in replaced["message"]
    code, found = lint(tmp_path, LLAMA_ON_TRTLLM + "option.max_rolling_batch_size=64\n", "0.33.0")
    assert "LMI609" not in found


def test_max_output_len_is_reported_as_not_reaching_the_build_with_the_disagreement(tmp_path: Path) -> None:
    code, found = lint(tmp_path, LLAMA_ON_TRTLLM + "option.max_output_len=2048\n", "0.33.0")
    [ignored] = found["LMI609"]
    assert code == 0 and "the code and the guide disagree" in ignored["message"]
    assert "max_seq_len=131072 (the model's max_position_embeddings" in ignored["message"]


def test_a_max_input_len_the_engine_cannot_serve_is_an_error(tmp_path: Path) -> None:
    text = LLAMA_ON_TRTLLM + "option.max_input_len=8192\noption.max_seq_len=4096\n"
    code, found = lint(tmp_path, text, "0.33.0")
    [refused] = found["LMI610"]
    assert code == 1 and refused["severity"] == "error" and refused["line"] == 5
    assert "max_seq_len=4096 (option.max_seq_len)" in refused["message"]
    code, found = lint(
        tmp_path, LLAMA_ON_TRTLLM + "option.max_input_len=4096\noption.max_seq_len=8192\n", "0.33.0"
    )
    assert "LMI610" not in found
    # the same file for an image whose engine the trtllm toolkit builds: no fact, no finding
    _, found = lint(tmp_path, text, "0.30.0")
    assert "LMI610" not in found and "LMI609" not in found


def test_a_file_that_names_no_release_gets_no_replaced_setting_warning(tmp_path: Path) -> None:
    """Before LMI 0.33 the trtllm toolkit reads max_output_len; a file naming no image shows neither."""
    path = tmp_path / "serving.properties"
    path.write_text(
        LLAMA_ON_TRTLLM + "option.max_input_len=1024\noption.max_output_len=512\n", encoding="utf-8"
    )
    result = run_cli("lint", str(path), "--format", "json", *ON_G5)
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert "LMI609" not in {finding["code"] for finding in json.loads(result.stdout)["findings"]}


# --- the attention kernels' head sizes (data/trtllm_attention.json) ------------------------------------

OCTOML = "https://github.com/octoml/TensorRT-LLM-release/blob/"
# openlm-research/open_llama_3b's config.json: hidden 3200 over 32 heads, a head size of 100
OPEN_LLAMA_3B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 3200, "intermediate_size": 8640,
    "num_attention_heads": 32, "num_hidden_layers": 26, "max_position_embeddings": 2048, "vocab_size": 32000,
    "torch_dtype": "float16",
}  # fmt: skip


def lint_model(tmp_path: Path, text: str, version: str, config: dict) -> dict[str, list[dict]]:
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text(json.dumps(config), encoding="utf-8")
    path = tmp_path / "serving.properties"
    path.write_text(text, encoding="utf-8")
    result = run_cli(
        "lint", str(path), "--format", "json", "--lmi-version", version, "--model", str(model), *ON_G5
    )
    assert "Traceback" not in result.stderr, result.stderr
    found: dict[str, list[dict]] = {}
    for finding in json.loads(result.stdout)["findings"]:
        found.setdefault(finding["code"], []).append(finding)
    return found


def test_a_head_size_the_attention_kernels_cannot_vectorise_is_refused(tmp_path: Path) -> None:
    """TensorRT-LLM 0.7.1 unfusedAttentionKernels_2.cu: constexpr int x = (sizeof(T) == 4) ? 4 : 8;
    TLLM_CHECK_WITH_INFO(size_per_head % x == 0, "Size per head is not a multiple of X") (NVIDIA/TensorRT-LLM#855)."""
    text = "engine=MPI\noption.model_id=openlm-research/open_llama_3b\noption.rolling_batch=trtllm\n"
    [refused] = lint_model(tmp_path, text, "0.26.0", OPEN_LLAMA_3B)["LMI618"]
    assert refused["severity"] == "error" and "not a multiple of 8" in refused["message"]
    assert "'Size per head is not a multiple of X'" in refused["message"]
    commit = "80bc07510ac4ddf13c0d76ad295cdb2b75614618"
    assert (
        OCTOML + f"{commit}/cpp/tensorrt_llm/kernels/unfusedAttentionKernels_2.cu#L355" in refused["message"]
    )
    # float32 vectorises over 4 elements, which 100 is a multiple of
    assert "LMI618" not in lint_model(tmp_path, text + "option.dtype=fp32\n", "0.26.0", OPEN_LLAMA_3B)
    # a head size of 128, and a release whose sources were not read (TensorRT-LLM 0.9.0): nothing
    llama = {**OPEN_LLAMA_3B, "hidden_size": 4096}
    assert "LMI618" not in lint_model(tmp_path, text, "0.26.0", llama)
    assert "LMI618" not in lint_model(tmp_path, text, "0.28.0", OPEN_LLAMA_3B)


def test_the_generator_reads_the_vector_width_and_the_check_from_a_release_branch(tmp_path: Path) -> None:
    import subprocess

    import gen_trtllm_attention as trtllm_generator

    kernels = tmp_path / "cpp" / "tensorrt_llm" / "kernels"
    kernels.mkdir(parents=True)
    (kernels / "unfusedAttentionKernels_2.cu").write_text(
        "void f() {\n    constexpr int x = (sizeof(T) == 4) ? 4 : 8;\n"
        '    TLLM_CHECK_WITH_INFO(size_per_head % x == 0, "Size per head is not a multiple of X");\n}\n'
    )
    (tmp_path / "tensorrt_llm").mkdir()
    (tmp_path / "tensorrt_llm" / "version.py").write_text('__version__ = "9.9.9"\n')
    run = {"cwd": tmp_path, "check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q", "-b", "release/9.9.9"], **run)  # type: ignore[call-overload]
    subprocess.run(["git", "add", "."], **run)  # type: ignore[call-overload]
    subprocess.run(  # type: ignore[call-overload]
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x"], **run
    )
    assert trtllm_generator.branch_version(tmp_path, "release/9.9.9") == "9.9.9"
    [check] = trtllm_generator.head_size_checks(tmp_path, "release/9.9.9")
    assert check["multiple"] == {"4": 4, "2": 8} and check["source"].endswith(
        "unfusedAttentionKernels_2.cu#L3"
    )
    assert trtllm_generator.fused_attention(tmp_path, "release/9.9.9") is None
