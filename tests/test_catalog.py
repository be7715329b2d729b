"""The generated model catalog (models_generated.json): what a user linting a model the hand catalog
lacks now sees, and the file's consistency with the project's own formulas (no network: the
generator's download is not run here, its output is checked against the code that reads it)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from test_hostile_inputs import run, write

from lmi_config.knowledge.models import generated_catalog_rows, hand_catalog_rows
from lmi_config.modelarch import from_catalog, normalize_config, quantized_copy_of, reupload_of

ROOT = Path(__file__).resolve().parent.parent


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location(
        "gen_model_catalog", ROOT / "scripts" / "gen_model_catalog.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_model_catalog"] = module
    spec.loader.exec_module(module)
    return module


def _row(model_id: str) -> dict[str, Any]:
    return next(row for row in generated_catalog_rows() if row["model_id"] == model_id)


def _lint(
    tmp_path: Path, model_id: str, instance: str, *extra: str, lines: str = "", rolling_batch: str = "vllm"
) -> Any:
    properties = write(
        tmp_path / "serving.properties",
        f"engine=Python\noption.model_id={model_id}\noption.rolling_batch={rolling_batch}\n{lines}",
    )
    return run("lint", str(properties), "--instance", instance, "--format", "json", *extra, cwd=tmp_path)


def _notes(result: Any) -> str:
    return "\n".join(json.loads(result.stdout)["summary"]["notes"])


def _codes(result: Any) -> dict[str, str]:
    return {finding["code"]: finding["message"] for finding in json.loads(result.stdout)["findings"]}


# --- the file against the code that reads it ----------------------------------------------------


def test_no_generated_model_repeats_a_hand_curated_id_or_alias() -> None:
    hand = {name.lower() for row in hand_catalog_rows() for name in [row["model_id"], *row["aliases"]]}
    repeated = [row["model_id"] for row in generated_catalog_rows() if row["model_id"].lower() in hand]
    assert not repeated
    assert len(generated_catalog_rows()) >= 40


def test_a_generated_model_resolves_by_its_last_path_part_and_its_aliases_too() -> None:
    hand = {
        part
        for row in hand_catalog_rows()
        for name in [row["model_id"], *row["aliases"]]
        for part in (name.lower(), name.lower().split("/")[-1])
    }
    first: dict[str, str] = {}
    for row in generated_catalog_rows():
        for name in [row["model_id"], *row.get("aliases", [])]:
            for part in (name.lower(), name.lower().split("/")[-1]):
                first.setdefault(part, row["model_id"])
    checked = 0
    for part, model_id in first.items():
        if part in hand:
            continue
        arch = from_catalog(part.upper())  # looked up case-insensitively
        assert arch is not None and arch.model_id == model_id, part
        checked += 1
    assert checked > len(generated_catalog_rows())  # ids and last path parts alike


def test_every_generated_model_resolves_to_its_own_row() -> None:
    # a hand entry's short name (the part after the slash) must not shadow a generated id
    for row in generated_catalog_rows():
        arch = from_catalog(row["model_id"])
        assert arch is not None and arch.model_id == row["model_id"], row["model_id"]
        assert row["source"] in arch.source and ("aiconfigurator" in arch.source or "litgpt" in arch.source)


def test_stored_parameter_counts_are_the_formula_applied_to_the_stored_config() -> None:
    sized = [row for row in generated_catalog_rows() if row["total_params"]]
    assert sized
    for row in sized:
        computed = normalize_config(row["config"], model_id=row["model_id"], source=row["source"])
        assert computed.total_params == row["total_params"], row["model_id"]


def test_stored_reasons_are_what_the_generator_decides_from_the_stored_config() -> None:
    generator = _generator()
    known = generator.sized_types()
    for row in generated_catalog_rows():
        expected = generator.memory_not_estimated(row["config"], known)
        assert row["memory_not_estimated"] == expected, row["model_id"]


@pytest.mark.parametrize(
    ("model_id", "reason"),
    [
        ("nvidia/Nemotron-H-56B-Base-8K", "hybrid layers"),
        ("Qwen/Qwen3.5-27B", "linear_attention layers"),
        ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", "experts in one layer of every 2"),
        ("deepseek-ai/DeepSeek-V3.2", "indexer"),
        ("nvidia/Llama-3_3-Nemotron-Super-49B-v1", "block_configs"),
    ],
)
def test_a_layout_the_formulas_do_not_cover_is_not_estimated_from_any_source(
    tmp_path: Path, model_id: str, reason: str
) -> None:
    # the same config.json in a local directory (or from the Hub) gets the same verdict as the catalog's
    write(tmp_path / "model" / "config.json", json.dumps(_row(model_id)["config"]))
    result = _lint(
        tmp_path, str(tmp_path / "model"), "ml.p5.48xlarge", lines="option.tensor_parallel_degree=8\n"
    )
    assert result.returncode in (0, 1), result.stderr
    assert f"memory not estimated for {tmp_path / 'model'}: " in _notes(result)
    assert reason in _notes(result)
    assert not {"LMI301", "LMI302"} & set(_codes(result))


def _litgpt_rows() -> list[dict[str, Any]]:
    return [row for row in generated_catalog_rows() if "litgpt" in row["source"]]


def test_a_model_from_litgpts_table_has_the_architecture_of_a_catalog_model_with_its_dimensions() -> None:
    """LitGPT's table states dimensions, not architectures: a row from it takes the architecture of a
    catalog model of the same organisation whose dimensions are identical, and its source names it."""
    rows = _litgpt_rows()
    assert len(rows) >= 30
    compared = (
        "hidden_size",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "num_layers",
        "intermediate_size",
        "num_experts",
        "moe_intermediate_size",
    )
    for row in rows:
        match = row["source"].split(" those of ")[1].split(",")[0]
        assert match.split("/")[0].lower() == row["model_id"].split("/")[0].lower(), row["model_id"]
        ours, theirs = from_catalog(row["model_id"]), from_catalog(match)
        assert ours is not None and theirs is not None and theirs.model_id != ours.model_id
        assert ours.architectures == theirs.architectures and ours.model_type == theirs.model_type
        assert [getattr(ours, key) for key in compared] == [getattr(theirs, key) for key in compared]
        # LitGPT's context and dtype are not config.json's: neither is taken
        assert ours.max_position_embeddings is None and ours.sliding_window is None
        assert not ours.config_verbatim and ours.torch_dtype is None and "auto_map" not in ours.loading


def test_a_model_only_litgpt_names_is_judged_by_its_heads(tmp_path: Path) -> None:
    # Qwen2.5-Coder-7B-Instruct: 28 heads and 4 KV heads (those of Qwen2.5-7B); TP 3 divides neither
    result = _lint(
        tmp_path,
        "Qwen/Qwen2.5-Coder-7B-Instruct",
        "ml.g5.12xlarge",
        lines="option.tensor_parallel_degree=3\n",
    )
    assert result.returncode == 1
    codes = _codes(result)
    assert "has 28 attention heads, which TP 3 does not divide" in codes["LMI305"]
    assert "model checks skipped" not in _notes(result)


def test_trust_remote_code_for_a_model_known_only_by_its_dimensions_stays_unverified(tmp_path: Path) -> None:
    # Phi-3-mini-128k-instruct ships modelling code (auto_map in its config.json); LitGPT's table does
    # not say so, so the flag is reported as unverified rather than passed as harmless
    result = _lint(
        tmp_path,
        "microsoft/Phi-3-mini-128k-instruct",
        "ml.g5.2xlarge",
        lines="option.trust_remote_code=true\n",
    )
    assert "without the model's config.json" in _codes(result)["LMI503"]
    assert "context length and dtype are not known here" in _notes(result)


def test_a_model_whose_dtype_is_not_stated_draws_the_unknown_dtype_warning_not_a_verdict(
    tmp_path: Path,
) -> None:
    # a V100 on vLLM 0.4.2 keeps the checkpoint's dtype: unknown here, so the warning for an unknown
    # model, not the float32 default of a config.json without torch_dtype (which would pass silently)
    result = _lint(tmp_path, "Qwen/Qwen2.5-Coder-7B-Instruct", "ml.p3.2xlarge", "--lmi-version", "0.28.0")
    message = _codes(result)["LMI601"]
    assert "Its dtype is not known here" in message
    assert (
        next(f for f in json.loads(result.stdout)["findings"] if f["code"] == "LMI601")["severity"]
        == "warning"
    )


# --- what a user sees ---------------------------------------------------------------------------


def test_gpt_oss_on_lmi_14_is_judged_by_its_architecture(tmp_path: Path) -> None:
    # the example: openai/gpt-oss-20b on 0.32.0-lmi14.0.0-cu126 (vLLM 0.7.3)
    result = _lint(tmp_path, "openai/gpt-oss-20b", "ml.g6e.2xlarge", "--lmi-version", "0.32.0")
    codes = _codes(result)
    assert "(GptOssForCausalLM) is not in vLLM 0.7.3's model registry" in codes["LMI607"]
    assert "model checks skipped" not in _notes(result)
    assert "memory not estimated for openai/gpt-oss-20b: the memory model does not describe the gpt_oss" in (
        _notes(result)
    )


def test_gpt_oss_on_a_current_image_runs_natively(tmp_path: Path) -> None:
    result = _lint(tmp_path, "openai/gpt-oss-20b", "ml.g6e.2xlarge", "--lmi-version", "0.36.0")
    assert result.returncode == 0, result.stdout
    assert not {"LMI606", "LMI607"} & set(_codes(result))


def test_a_vision_language_model_on_a_g5_reports_no_text_only_capacity(tmp_path: Path) -> None:
    properties = write(
        tmp_path / "serving.properties",
        "engine=Python\noption.model_id=Qwen/Qwen3-VL-8B-Instruct\noption.rolling_batch=vllm\n"
        "option.tensor_parallel_degree=1\n",
    )
    result = run("explain", str(properties), "--instance", "ml.g5.2xlarge", "--format", "json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["model"] == "Qwen/Qwen3-VL-8B-Instruct"
    assert document["memory"] is None  # no KV capacity of a text-only model of the same size
    assert any(
        "memory not estimated for Qwen/Qwen3-VL-8B-Instruct: the vision encoder's weights" in note
        for note in document["notes"]
    )
    assert not any("model checks skipped" in note for note in document["notes"])


def test_an_fp8_checkpoint_on_an_a10g_is_refused_where_the_images_vllm_needs_8_9(tmp_path: Path) -> None:
    # vLLM 0.4.2 (LMI 0.28.0): fp8 kernels need compute capability 8.9; the g5's A10G has 8.6
    old = _lint(tmp_path, "Qwen/Qwen3-30B-A3B-FP8", "ml.g5.12xlarge", "--lmi-version", "0.28.0")
    assert old.returncode == 1
    assert "fp8 kernels need compute capability 8.9; the A10G has 8.6" in _codes(old)["LMI602"]
    # from vLLM 0.5.3 weight-only FP8 runs on 8.0 (Marlin): no error on a current image
    current = _lint(tmp_path, "Qwen/Qwen3-30B-A3B-FP8", "ml.g5.12xlarge", "--lmi-version", "0.36.0")
    assert "LMI602" not in _codes(current)


def test_deepseek_v3s_fp8_checkpoint_is_sized_as_vllm_loads_it(tmp_path: Path) -> None:
    # 671 B parameters stored in fp8 (config.json's quantization_config): ~78 GiB per GPU at TP 8, more
    # than an H100's budget, within an H200's
    lines = "option.tensor_parallel_degree=8\n"
    h100 = _lint(tmp_path, "deepseek-ai/DeepSeek-V3", "ml.p5.48xlarge", lines=lines)
    assert h100.returncode == 1
    assert "weights 78.3 GiB" in _codes(h100)["LMI301"]
    h200 = _lint(tmp_path, "deepseek-ai/DeepSeek-V3", "ml.p5e.48xlarge", lines=lines)
    assert h200.returncode == 0, h200.stdout
    assert not any(code.startswith("LMI3") and code != "LMI311" for code in _codes(h200))
    assert "memory not estimated" not in _notes(h200)


def test_a_download_beyond_the_start_up_limit_is_told_to_stage_the_weights_and_then_passes(
    tmp_path: Path,
) -> None:
    # 625 GiB of DeepSeek-R1 from the Hub: nothing compiles on a GPU, so the advice is about the
    # download (the Neuron advice, compile ahead of time, would not help), and following it clears it
    lines = "option.tensor_parallel_degree=8\noption.model_loading_timeout=3600\n"
    hub = _lint(tmp_path, "deepseek-ai/DeepSeek-R1", "ml.p5e.48xlarge", lines=lines)
    advice = _codes(hub)["LMI311"]
    assert "stage the weights in S3" in advice and "compile ahead of time" not in advice
    staged = _lint(
        tmp_path, "/opt/ml/model", "ml.p5e.48xlarge", "--model", "deepseek-ai/DeepSeek-R1", lines=lines
    )
    assert "LMI311" not in _codes(staged), staged.stdout


def test_a_stored_quantized_checkpoint_is_not_sized_where_its_loader_is_not_vllm(tmp_path: Path) -> None:
    # TensorRT-LLM builds its own engine from nvidia's ModelOpt FP8 checkpoint: the weight table
    # sizes a method as vLLM loads it, so TensorRT-LLM gets no figure rather than a bf16 one
    result = _lint(
        tmp_path,
        "nvidia/Llama-3.1-70B-Instruct-FP8",
        "ml.p5.48xlarge",
        lines="option.tensor_parallel_degree=4\n",
        rolling_batch="trtllm",
    )
    assert result.returncode == 0, result.stdout
    assert (
        "memory not estimated for nvidia/Llama-3.1-70B-Instruct-FP8: the checkpoint is stored quantized"
        in (_notes(result))
    )
    assert "not as tensorrt-llm does" in _notes(result)
    # vLLM (0.10+) reads hf_quant_config.json as modelopt: 67.7 GiB of FP8 weights leave one H100 too
    # little KV cache for the model's 131,072 tokens, and TP 2 is the fix
    vllm = _lint(
        tmp_path,
        "nvidia/Llama-3.1-70B-Instruct-FP8",
        "ml.p5.48xlarge",
        lines="option.tensor_parallel_degree=1\n",
    )
    assert "memory not estimated" not in _notes(vllm)
    assert "set option.tensor_parallel_degree=2" in _codes(vllm)["LMI312"]


def test_a_sized_generated_model_is_sized(tmp_path: Path) -> None:
    # Qwen3-Coder-480B in bf16 on one 8 x 24 GiB g5.48xlarge: 960 GB of weights cannot fit
    result = _lint(
        tmp_path,
        "Qwen/Qwen3-Coder-480B-A35B-Instruct",
        "ml.g5.48xlarge",
        lines="option.tensor_parallel_degree=8\n",
    )
    assert result.returncode == 1
    assert any(code.startswith("LMI3") for code in _codes(result)), result.stdout
    assert "memory not estimated" not in _notes(result)


def test_the_model_listing_shows_no_parameter_count_the_formula_did_not_make(tmp_path: Path) -> None:
    result = run("models", "--format", "json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    listed = {row["model_id"]: row for row in json.loads(result.stdout)}
    assert listed["openai/gpt-oss-20b"]["parameters"] is None  # gpt_oss: a layout the formula does not cover
    assert (
        listed["Qwen/Qwen3-Coder-480B-A35B-Instruct"]["parameters"]
        == _row("Qwen/Qwen3-Coder-480B-A35B-Instruct")["total_params"]
    )
    assert "aiconfigurator" in listed["openai/gpt-oss-20b"]["source"]
    text = run("models", cwd=tmp_path)
    assert text.returncode == 0
    assert (
        next(line for line in text.stdout.splitlines() if line.startswith("openai/gpt-oss-20b ")).split()[1]
        == "-"
    )


def test_plan_and_render_auto_say_memory_is_not_estimated_instead_of_nothing_fits(tmp_path: Path) -> None:
    """gpt-oss: a layout the memory model does not describe; 'no configuration serves …, try a larger
    instance' would send the user after the wrong cause."""
    refused = run_cli("plan", "--model", "openai/gpt-oss-20b", "--instance", "ml.g6e.2xlarge")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "memory is not estimated for openai/gpt-oss-20b" in refused.stderr
    assert "larger instance" not in refused.stderr
    spec = tmp_path / "oss.yaml"
    spec.write_text(
        "model: openai/gpt-oss-20b\ninstance: ml.g6e.2xlarge\nbackend: vllm\noptions:\n  tensor_parallel_degree: auto\n",
        encoding="utf-8",
    )
    rendered = run_cli("render", str(spec))
    assert rendered.returncode != 0 and "memory is not estimated" in rendered.stderr


@pytest.mark.parametrize("model", ["meta-llama/Llama-4-Maverick-17B-128E-Instruct", "Qwen/Qwen3-32B-FP8"])
def test_search_refuses_a_model_whose_memory_is_not_estimated_without_a_traceback(model: str) -> None:
    """Types optimum-neuron exports (llama4_text, qwen3) whose memory the formulas do not give: the
    search's predictor met no memory figure and stopped on an AssertionError."""
    result = run_cli("search", "--model", model, "--instance", "ml.trn1.32xlarge", "--dry-run")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"memory is not estimated for {model}" in result.stderr and "by hand" in result.stderr


def test_render_writes_the_judged_length_for_a_model_whose_context_is_not_known(tmp_path: Path) -> None:
    # QwQ-32B's config.json says 40,960 tokens, LitGPT's table 131,072: neither is judged here, so the
    # file pins the length the checks judged instead of leaving vLLM to take one nothing checked
    spec = tmp_path / "qwq.yaml"
    spec.write_text(
        "model: Qwen/QwQ-32B\ninstance: ml.g5.12xlarge\nbackend: vllm\noptions:\n  tensor_parallel_degree: auto\n",
        encoding="utf-8",
    )
    rendered = run_cli("render", str(spec), "--output", str(tmp_path / "serving.properties"))
    assert rendered.returncode == 0, rendered.stderr
    text = (tmp_path / "serving.properties").read_text(encoding="utf-8")
    assert "option.max_model_len=2048\n" in text
    assert "context length is not known here" in rendered.stderr
    strict = run("lint", "--strict", str(tmp_path / "serving.properties"), cwd=tmp_path)
    assert strict.returncode == 0, strict.stdout


def test_a_re_upload_of_a_catalog_model_is_judged_by_that_models_dimensions(tmp_path: Path) -> None:
    # TheBloke/Llama-2-13B-Chat-fp16 repeats meta-llama/Llama-2-13b-chat-hf's name with a dtype
    # suffix (seven corpus files name it): 40 heads, which TP 6 does not divide
    result = _lint(
        tmp_path,
        "TheBloke/Llama-2-13B-Chat-fp16",
        "ml.g5.48xlarge",
        lines="option.tensor_parallel_degree=6\n",
    )
    codes = _codes(result)
    assert (
        "TheBloke/Llama-2-13B-Chat-fp16 has 40 attention heads, which TP 6 does not divide" in codes["LMI305"]
    )
    assert "LMI205" not in codes  # the copy is not under meta-llama's gate
    notes = _notes(result)
    assert (
        "the dimensions of meta-llama/Llama-2-13b-hf, whose name TheBloke/Llama-2-13B-Chat-fp16 repeats"
        in notes
    )
    assert "model checks skipped" not in notes


@pytest.mark.parametrize(
    "model_id", ["TheBloke/Llama-2-13B-GPTQ", "meta-llama/Llama-2-13b-fp16", "Llama-2-13b-fp16"]
)
def test_a_quantized_copy_or_a_name_without_another_owner_is_not_taken_for_a_re_upload(model_id: str) -> None:
    # a GPTQ copy's weights are not the base model's; the base model's own owner uploads no such copy;
    # a bare name has no owner to compare
    assert reupload_of(model_id) is None


# --- quantized copies, judged offline by the model they copy -----------------------------------------


def test_an_awq_copy_on_a_gpu_its_kernels_do_not_run_on_is_refused_by_its_name(tmp_path: Path) -> None:
    # TheBloke/Llama-2-7B-Chat-AWQ is not in the catalog; its name is Llama-2-7b-chat-hf's with -AWQ:
    # vLLM 0.4.2 (LMI 0.28.0) reads AWQ from its config.json, and AWQ's kernels need compute capability 7.5
    result = _lint(tmp_path, "TheBloke/Llama-2-7B-Chat-AWQ", "ml.p3.2xlarge", "--lmi-version", "0.28.0")
    codes = _codes(result)
    assert "the checkpoint's awq quantization" in codes["LMI602"] and "7.5" in codes["LMI602"]
    notes = _notes(result)
    assert "whose name TheBloke/Llama-2-7B-Chat-AWQ repeats with the quantized-copy suffix -AWQ" in notes
    assert "model checks skipped" not in notes
    # on an A10G (8.6) the same file starts
    on_a10g = _lint(tmp_path, "TheBloke/Llama-2-7B-Chat-AWQ", "ml.g5.2xlarge", "--lmi-version", "0.28.0")
    assert "LMI602" not in _codes(on_a10g)


def test_a_bitsandbytes_copy_with_tensor_parallelism_is_refused_by_its_name(tmp_path: Path) -> None:
    result = _lint(
        tmp_path,
        "unsloth/gemma-3-12b-it-bnb-4bit",
        "ml.g5.12xlarge",
        "--lmi-version",
        "0.33.0",
        lines="option.tensor_parallel_degree=2\noption.max_model_len=4096\n",
    )
    assert "stored in bitsandbytes (its name's -bnb-4bit suffix" in _codes(result)["LMI616"]


def test_a_gptq_copy_is_sized_at_four_bits_not_as_its_sixteen_bit_base(tmp_path: Path) -> None:
    # Llama-2-70B in 16 bits (138 GB) does not fit four 24 GB A10Gs; its 4-bit GPTQ copy (35 GB) does
    lines = "option.tensor_parallel_degree=4\noption.max_model_len=4096\n"
    base = _lint(
        tmp_path, "meta-llama/Llama-2-70b-hf", "ml.g5.12xlarge", "--lmi-version", "0.28.0", lines=lines
    )
    assert "LMI301" in _codes(base)
    copy = _lint(
        tmp_path, "TheBloke/Llama-2-70B-GPTQ", "ml.g5.12xlarge", "--lmi-version", "0.28.0", lines=lines
    )
    assert "LMI301" not in _codes(copy) and json.loads(copy.stdout)["summary"]["errors"] == 0
    explained = run(
        "explain",
        str(tmp_path / "serving.properties"),
        "--instance",
        "ml.g5.12xlarge",
        "--lmi-version",
        "0.28.0",
        cwd=tmp_path,
    )
    assert "4-bit, group 128 assumed, as its name's -GPTQ suffix" in explained.stdout


def test_a_copy_whose_name_does_not_say_its_format_is_not_sized_and_not_refused(tmp_path: Path) -> None:
    # -FP8 names no method (fp8, fbgemm_fp8, compressed-tensors, modelopt): memory is not estimated, and
    # the method the file asks for is not compared with a quantization_config nothing has read
    result = _lint(
        tmp_path,
        "meta-llama/Meta-Llama-3.1-405B-Instruct-FP8",
        "ml.p4de.24xlarge",
        "--lmi-version",
        "0.29.0",
        lines="option.tensor_parallel_degree=8\noption.quantize=awq\noption.max_model_len=4096\n",
    )
    codes = _codes(result)
    assert "LMI301" not in codes and "has no quantization_config" not in json.dumps(codes)
    assert "its name's suffix -FP8 says the weights are quantized, but not in which format" in _notes(result)


def test_a_quantized_copy_is_not_judged_by_its_bases_widths_for_group_alignment(tmp_path: Path) -> None:
    # Qwen's AWQ copy of Qwen2.5-72B-Instruct stores intermediate_size 29696 (padded so that TP splits
    # whole groups of 128), not the base's 29568: the base's widths would refuse a TP 4 that starts
    result = _lint(
        tmp_path,
        "Qwen/Qwen2.5-72B-Instruct-AWQ",
        "ml.g6e.12xlarge",
        "--lmi-version",
        "0.33.0",
        lines="option.tensor_parallel_degree=4\noption.max_model_len=4096\n",
    )
    assert "LMI617" not in _codes(result) and "model checks skipped" not in _notes(result)


@pytest.mark.parametrize(
    "model_id",
    ["TheBloke/Nous-Hermes-2-Mixtral-8x7B-DPO-AWQ", "Llama-2-7B-Chat-AWQ", "TheBloke/Llama-2-7B-Chat"],
)
def test_a_name_that_repeats_no_catalog_model_with_a_quantized_suffix_is_not_a_copy(model_id: str) -> None:
    # a fine-tune's name (no catalog model), a bare name, a name without a suffix
    assert quantized_copy_of(model_id) is None
