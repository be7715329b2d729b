"""Relations between settings that vLLM refuses at start-up, judged offline where the image's vLLM makes
the check: each finding quotes vLLM's message and cites the line of the release the image runs."""

from __future__ import annotations

import pytest
from conftest import ROOT

from lmi_config.api import lint_text

MODELS = ROOT / "tests" / "fixtures" / "models"
VLLM = "https://github.com/vllm-project/vllm/blob/"
LLAMA = (
    "option.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.rolling_batch=vllm\noption.max_model_len=8192\n"
)
MISTRAL = "option.model_id=mistralai/Mistral-7B-v0.1\noption.rolling_batch=vllm\noption.max_model_len=4096\n"


def findings(
    text: str, lmi: str, code: str, instance: str = "ml.g5.2xlarge", model: str | None = None
) -> list:
    result = lint_text(text, backend="vllm", lmi_version=lmi, instance=instance, model=model)
    return [finding for finding in result.findings if finding.code == code]


@pytest.mark.parametrize(
    ("lmi", "line"),
    [
        ("0.31.0", "v0.6.3.post1/vllm/config.py#L"),  # SchedulerConfig._verify_args
        ("0.35.0", "v0.11.1/vllm/config/scheduler.py#L"),  # SchedulerConfig.verify_max_model_len
    ],
)
def test_a_token_budget_below_the_sequences_of_a_step_is_refused(lmi: str, line: str) -> None:
    text = LLAMA + "option.max_rolling_batch_prefill_tokens=128\noption.enable_chunked_prefill=true\n"
    [finding] = findings(text, lmi, "LMI626")
    assert finding.line == 4 and finding.severity == "error"
    assert (
        "'max_num_batched_tokens (128) must be greater than or equal to max_num_seqs (256).'"
        in finding.message
    )
    assert VLLM + line in finding.message
    assert not findings(text + "option.max_rolling_batch_size=64\n", lmi, "LMI626")


@pytest.mark.parametrize(
    ("lmi", "refused"),
    [
        ("0.29.0", True),  # 0.5.3 CacheConfig._verify_prefix_caching
        ("0.32.0", True),  # 0.7.3
        ("0.33.0", False),  # 0.8.4 refuses it only in the V0 engine; V1 by default
        ("0.34.0", False),
    ],
)
def test_prefix_caching_with_a_sliding_window_is_refused_where_the_release_does(
    lmi: str, refused: bool
) -> None:
    text = MISTRAL + "option.enable_prefix_caching=true\n"
    found = findings(text, lmi, "LMI627", model=str(MODELS / "mistral-7b-v0.1"))
    assert bool(found) is refused
    if refused:
        assert "'Prefix caching is not supported with sliding window." in found[0].message
        assert "sliding window of 4096" in found[0].message
    # Qwen2.5 writes a sliding_window but use_sliding_window false: no window, no refusal
    qwen = "option.model_id=Qwen/Qwen2.5-7B\noption.rolling_batch=vllm\noption.max_model_len=4096\n"
    assert not findings(
        qwen + "option.enable_prefix_caching=true\n", lmi, "LMI627", model=str(MODELS / "qwen2.5-7b")
    )


def test_an_unknown_kv_cache_dtype_is_refused() -> None:
    [finding] = findings(LLAMA + "option.kv_cache_dtype=int8\n", "0.33.0", "LMI628")
    assert "'Unknown kv cache dtype: int8'" in finding.message and "fp8_e5m2" in finding.message
    assert VLLM + "v0.8.4/vllm/config.py#L" in finding.message
    assert not findings(LLAMA + "option.kv_cache_dtype=fp8_e4m3\n", "0.33.0", "LMI628")


def test_a_swap_space_above_the_hosts_share_is_refused() -> None:
    text = LLAMA + "option.tensor_parallel_degree=4\noption.swap_space=48\n"
    [finding] = findings(text, "0.33.0", "LMI629", instance="ml.g5.12xlarge")
    assert "192 GiB of swap space" in finding.message and "192 GiB of host memory" in finding.message
    assert "at most 33" in finding.message
    # the same on a host with twice the memory
    assert not findings(text, "0.33.0", "LMI629", instance="ml.g5.24xlarge")


@pytest.mark.parametrize(
    ("lmi", "line"),
    [
        ("0.34.0", "v0.10.2/vllm/v1/worker/gpu_worker.py#L"),  # Worker.init_device
        ("0.36.0", "v0.23.0/vllm/v1/worker/utils.py#L"),  # request_memory, which init_device calls
    ],
)
def test_a_memory_utilization_above_what_is_free_at_start_is_refused(lmi: str, line: str) -> None:
    # a 24 GB A10G: 0.99 of the 22.18 GiB PyTorch sees leaves less than a CUDA context (~0.37 GiB)
    [finding] = findings(LLAMA + "option.gpu_memory_utilization=0.99\n", lmi, "LMI659")
    assert finding.severity == "error" and finding.key == "option.gpu_memory_utilization"
    assert "on startup is less than desired GPU memory utilization (0.99, 21.96 GiB)" in finding.message
    assert VLLM + line in finding.message and finding.message.endswith(
        "set option.gpu_memory_utilization=0.98"
    )
    assert not findings(LLAMA + "option.gpu_memory_utilization=0.98\n", lmi, "LMI659")
    # an 80 GB A100 has room for 0.99 of it, not for all of it
    assert not findings(LLAMA + "option.gpu_memory_utilization=0.99\n", lmi, "LMI659", "ml.p4de.24xlarge")
    assert findings(LLAMA + "option.gpu_memory_utilization=1.0\n", lmi, "LMI659", "ml.p4de.24xlarge")


def test_a_memory_utilization_is_not_held_to_free_memory_where_vllm_does_not_ask() -> None:
    # vLLM 0.8.4 (LMI 0.33) takes the budget from the memory PyTorch sees without comparing it to what is free
    assert not findings(LLAMA + "option.gpu_memory_utilization=0.99\n", "0.33.0", "LMI659")
    # vLLM 0.10's V0 engine does not ask either: forced by option.env, or for a model only V0 serves (Mllama)
    text = LLAMA + "option.gpu_memory_utilization=0.99\n"
    assert not findings(text + "option.env=VLLM_USE_V1=0\n", "0.34.0", "LMI659")
    mllama = str(MODELS / "llama-3.2-11b-vision")
    assert not findings(
        text + "option.tensor_parallel_degree=4\n", "0.34.0", "LMI659", "ml.g5.12xlarge", mllama
    )


def test_the_fix_for_a_memory_utilization_above_free_is_the_highest_that_starts(tmp_path) -> None:
    from conftest import run_cli

    path = tmp_path / "serving.properties"
    path.write_text(LLAMA + "option.gpu_memory_utilization=0.99\n")
    target = ("--backend", "vllm", "--lmi-version", "0.36.0", "--instance", "ml.g5.2xlarge")
    run_cli("lint", str(path), *target, "--fix", "--unsafe-fixes")
    assert path.read_text().endswith("option.gpu_memory_utilization=0.98\n")
    assert "LMI659" not in run_cli("lint", str(path), *target).stdout


@pytest.mark.parametrize(("lmi", "vllm"), [("0.33.0", "0.8.4"), ("0.34.0", "0.10.2")])
def test_an_e5m2_kv_cache_with_a_quantization_that_quantizes_it_is_refused(lmi: str, vllm: str) -> None:
    # FP8's get_quant_method gives attention layers an Fp8KVCacheMethod: vLLM 0.5-0.10 refuse e5m2 there
    text = LLAMA + "option.quantize=fp8\noption.kv_cache_dtype=fp8_e5m2\n"
    [finding] = findings(text, lmi, "LMI660", instance="ml.g6e.2xlarge")
    assert "'fp8_e5m2 kv-cache is not supported with fp8 checkpoints.'" in finding.message
    assert (
        VLLM + f"v{vllm}/vllm/attention/layer.py#L" in finding.message
        and "Fp8KVCacheMethod" in finding.message
    )
    assert finding.key == "option.kv_cache_dtype"
    # e4m3 is the format those methods take; vLLM 0.11 (LMI 0.35) makes no such check
    assert not findings(text.replace("fp8_e5m2", "fp8"), lmi, "LMI660", instance="ml.g6e.2xlarge")
    assert not findings(text, "0.35.0", "LMI660", instance="ml.g6e.2xlarge")


def test_an_e5m2_kv_cache_with_a_compressed_tensors_checkpoint_is_refused_whatever_the_spelling(
    tmp_path,
) -> None:
    import json

    # vLLM 0.8's class calls itself compressed_tensors, the checkpoint says compressed-tensors
    config = json.loads((MODELS / "llama-3.1-8b" / "config.json").read_text())
    scheme = {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": True, "dynamic": False}
    config["quantization_config"] = {
        "quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": scheme,
                                      "input_activations": {**scheme, "dynamic": True}}},
    }  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    text = LLAMA + "option.kv_cache_dtype=fp8_e5m2\n"
    for lmi in ("0.33.0", "0.34.0"):
        [finding] = findings(text, lmi, "LMI660", instance="ml.g6e.2xlarge", model=str(tmp_path))
        assert "CompressedTensorsKVCacheMethod" in finding.message


def test_an_e5m2_kv_cache_with_a_quantization_that_leaves_the_cache_alone_is_not_refused() -> None:
    # GPTQ's get_quant_method returns nothing for an attention layer: the KV cache is the engine's own
    gptq = str(MODELS / "qwen2.5-14b-instruct-gptq-int4")
    text = "option.model_id=Qwen/Qwen2.5-14B-Instruct-GPTQ-Int4\noption.rolling_batch=vllm\n"
    text += "option.max_model_len=4096\noption.kv_cache_dtype=fp8_e5m2\n"
    assert not findings(text, "0.33.0", "LMI660", instance="ml.g6e.2xlarge", model=gptq)


@pytest.mark.parametrize("lmi", ["0.31.0", "0.33.0", "0.34.0", "0.36.0"])
def test_pipeline_parallelism_is_refused_by_lmi_before_vllm_asks_the_model_class(lmi: str) -> None:
    # vLLM refuses pipeline parallelism for a class without SupportsPP (Mllama up to 0.10); LMI's vLLM
    # properties refuse any degree but 1 first, and a vLLM-native size other than LMI's degree
    text = LLAMA + "option.tensor_parallel_degree=2\n"
    [degree] = findings(
        text + "option.pipeline_parallel_degree=2\n", lmi, "LMI102", instance="ml.g5.12xlarge"
    )
    assert degree.key == "option.pipeline_parallel_degree" and "above the maximum 1" in degree.message
    native = findings(text + "option.pipeline_parallel_size=2\n", lmi, "LMI201", instance="ml.g5.12xlarge")
    if lmi != "0.31.0":  # LMI 0.32 and later pass vLLM's own arguments through
        [alone] = native
        assert alone.severity == "error" and "without option.pipeline_parallel_degree" in alone.message
    assert not findings(text + "option.pipeline_parallel_size=1\n", lmi, "LMI201", instance="ml.g5.12xlarge")


def test_experts_against_parallelism() -> None:
    [finding] = findings(LLAMA + "option.enable_expert_parallel=true\n", "0.34.0", "LMI630")
    assert "'Number of experts in the model must be greater than 0 when expert parallelism is enabled.'" in (
        finding.message
    )
    assert not findings(
        LLAMA + "option.enable_expert_parallel=true\n", "0.31.0", "LMI630"
    )  # 0.6.3 has no check
    # Mixtral's 8 experts at TP 8 on a p4d: its class splits each expert, so no check of this kind
    mixtral = "option.model_id=mistralai/Mixtral-8x7B-v0.1\noption.rolling_batch=vllm\noption.tensor_parallel_degree=8\n"
    assert not findings(
        mixtral, "0.34.0", "LMI630", instance="ml.p4d.24xlarge", model=str(MODELS / "mixtral-8x7b")
    )


@pytest.mark.parametrize("line", ["option.dtype=float8\n", "option.gpu_memory_utilization=1.5\n"])
def test_values_lmi_refuses_before_vllm_are_reported(line: str) -> None:
    # vLLM's 'Unknown dtype' and 'GPU memory utilization must be less than 1.0': LMI refuses the value first
    assert findings(LLAMA + line, "0.34.0", "LMI102")


def test_tp_above_the_experts_a_moe_class_splits_is_refused(tmp_path) -> None:
    import json

    # a small Qwen2-MoE layout (4 experts; the real checkpoints have 60 and more): the class refuses TP 8
    config = {
        "architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "hidden_size": 1024,
        "num_attention_heads": 16, "num_key_value_heads": 16, "num_hidden_layers": 4, "intermediate_size": 2816,
        "moe_intermediate_size": 512, "num_experts": 4, "num_experts_per_tok": 2, "vocab_size": 32000,
        "max_position_embeddings": 4096, "torch_dtype": "bfloat16", "shared_expert_intermediate_size": 1024,
    }  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    text = "option.model_id=tiny-moe\noption.rolling_batch=vllm\noption.tensor_parallel_degree=8\n"
    [finding] = findings(text, "0.34.0", "LMI630", instance="ml.g5.48xlarge", model=str(tmp_path))
    assert "'Tensor parallel size 8 is greater than the number of experts 4.'" in finding.message
    assert VLLM + "v0.10.2/vllm/model_executor/models/qwen2_moe.py#L" in finding.message
    assert not findings(
        text.replace("=8", "=4"), "0.34.0", "LMI630", instance="ml.g5.48xlarge", model=str(tmp_path)
    )
