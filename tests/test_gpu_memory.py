"""vLLM's start-up KV budget (lmi_config/sizing/gpu.py), each part pinned to a logged vLLM start-up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lmi_config.knowledge.instances import resolve_instance
from lmi_config.modelarch import ModelArch, from_catalog, normalize_config
from lmi_config.sizing import GIB, Shape, estimate_memory
from lmi_config.sizing.gpu import kv_capacity_verdict, profile_tokens
from lmi_config.sizing.vllm_release import vllm_version

LLAMA31_8B = from_catalog("meta-llama/Llama-3.1-8B-Instruct")
LLAMA3_8B = from_catalog("meta-llama/Meta-Llama-3-8B")
LLAMA2_7B = from_catalog("meta-llama/Llama-2-7b-hf")
QWEN25_7B_CONFIG = Path(__file__).parent / "fixtures" / "models" / "qwen2.5-7b" / "config.json"
LLAMA31_405B = from_catalog("meta-llama/Llama-3.1-405B-Instruct")
H100 = resolve_instance("p5.48xlarge")


def _items(memory) -> dict[str, int]:
    return {item.name: item.bytes for item in memory.ranks[0].items}


def test_the_budget_is_utilization_times_what_pytorch_sees_not_nvidia_smi() -> None:
    # https://github.com/vllm-project/vllm/pull/10511: "total_gpu_memory 79.22GiB ... the current vLLM
    # instance can use 71.29GiB" on an H100 whose nvidia-smi total is 81559 MiB (79.65 GiB)
    assert LLAMA3_8B is not None
    memory = estimate_memory(LLAMA3_8B, H100, "vllm", Shape(1, 256, 8192, vllm_version="0.6.5"))
    assert memory.budget_bytes / GIB == pytest.approx(71.29, abs=0.01)


def test_weights_come_from_the_checkpoint_size_when_the_safetensors_index_gives_it() -> None:
    # the index's total_size is used as is: a 15 GiB checkpoint is 7.5 GiB per GPU at TP 2
    assert LLAMA3_8B is not None
    arch = LLAMA3_8B._replace(weight_bytes=15 * GIB)
    memory = estimate_memory(arch, H100, "vllm", Shape(2, 256, 8192, vllm_version="0.6.5"))
    assert _items(memory)["weights"] == int(7.5 * GIB)


def test_fp8_checkpoints_that_keep_attention_in_bf16_weigh_what_vllm_logged() -> None:
    # https://github.com/vllm-project/vllm/issues/6746: Llama-3.1-405B-Instruct-FP8 at TP 8,
    # "Loading model weights took 57.7520 GB" -- all-FP8 would be ~47.7 GiB. The checkpoint of that day was the
    # July-2024 upload with 16 KV heads (models.json note); its BF16 k/v projections are 4.2 B more parameters
    assert LLAMA31_405B is not None
    july_upload = LLAMA31_405B._replace(
        num_key_value_heads=16, total_params=LLAMA31_405B.total_params + 126 * 2 * 16384 * 1024
    )
    shape = Shape(8, 256, 131072, quantize="fbgemm_fp8", vllm_version="0.5.3.post1")
    weights = _items(estimate_memory(july_upload, H100, "vllm", shape))["weights"] / GIB
    assert weights == pytest.approx(57.752, rel=0.005)
    current = _items(estimate_memory(LLAMA31_405B, H100, "vllm", shape))["weights"] / GIB
    assert current == pytest.approx(
        57.752 - 0.984, rel=0.005
    )  # 8 KV heads: 126 x 2 x 16384 x 1024 x 2 B / 8 less


def test_gptq_weights_leave_the_kv_blocks_vllm_logged() -> None:
    # https://github.com/vllm-project/vllm/pull/4454: TheBloke/Llama-2-7B-GPTQ on an RTX A6000 (47.53 GiB),
    # vLLM 0.4.2: "# GPU blocks: 4877"
    assert LLAMA2_7B is not None
    a6000 = resolve_instance("g6e.xlarge")._replace(
        accelerator_name="RTX-A6000", usable_memory_gib=47.53 + 0.45
    )
    shape = Shape(1, 256, 4096, weight_dtype="fp16", quantize="gptq", vllm_version="0.4.2")
    tokens = estimate_memory(LLAMA2_7B, a6000, "vllm", shape).kv_cache_tokens
    assert tokens is not None and tokens / 16 == pytest.approx(4877, rel=0.05)


def test_without_chunked_prefill_the_profile_run_takes_max_model_len_tokens() -> None:
    # https://github.com/vllm-project/vllm/issues/10517 (vLLM 0.6.4, RTX 3090): peak_torch_memory 17.06 GiB at
    # max_model_len 20000 and 17.98 GiB at 29000, over 14.99 GiB of weights: 2.07 and 2.99 GiB of activations
    assert LLAMA31_8B is not None
    rtx3090 = resolve_instance("g5.xlarge")._replace(
        accelerator_name="RTX-3090", usable_memory_gib=23.58 + 0.45
    )
    for length, logged in ((20000, 2.07), (29000, 2.99)):
        shape = Shape(1, 256, length, vllm_version="0.6.4.post1")
        assert profile_tokens(shape, vllm_version("0.6.4.post1")) == (length, False)
        activation = _items(estimate_memory(LLAMA31_8B, rtx3090, "vllm", shape))["activations (profile run)"]
        assert activation / GIB == pytest.approx(logged, rel=0.05)


def test_chunked_prefill_defaults_come_from_the_release() -> None:
    # generated from vLLM's sources: V0 switches chunked prefill on above 32K with 512 tokens (0.6.3);
    # the V1 engine always chunks, 2048 tokens by default
    long_context = Shape(1, 256, 65536)
    assert profile_tokens(long_context, vllm_version("0.6.3.post1")) == (512, True)
    assert profile_tokens(Shape(1, 256, 8192), vllm_version("0.6.3.post1")) == (8192, False)
    assert profile_tokens(Shape(1, 256, 8192), vllm_version("0.10.2")) == (2048, True)
    assert profile_tokens(Shape(1, 256, 8192, enable_chunked_prefill=False), vllm_version("0.10.2")) == (
        8192,
        False,
    )


def test_the_sampler_sets_the_activation_peak_for_a_large_vocabulary_at_8k_tokens() -> None:
    # https://github.com/vllm-project/vllm/pull/10511: "PyTorch activation peak memory 1.26GiB" for
    # Meta-Llama-3-8B at 8192 tokens, the same at TP 1 and TP 2 (the sampler's logits are not sharded)
    assert LLAMA3_8B is not None
    for tp in (1, 2):
        memory = estimate_memory(LLAMA3_8B, H100, "vllm", Shape(tp, 256, 8192, vllm_version="0.6.5"))
        assert _items(memory)["activations (profile run)"] / GIB == pytest.approx(1.26, rel=0.06)


def test_non_torch_memory_grows_with_tp_and_nvlink_sharp_on_h100() -> None:
    # https://github.com/vllm-project/vllm/pull/12126 logs 'non_torch_memory takes 0.16GiB' at TP 1 on an H100;
    # https://github.com/vllm-project/vllm/pull/10511: 1.79 GiB more at TP 2 (NCCL 2.21, every channel connected at
    # start); https://github.com/vllm-project/vllm/issues/9699: NVLS buffers only above TP 2
    assert LLAMA3_8B is not None
    sizes = {
        tp: _items(estimate_memory(LLAMA3_8B, H100, "vllm", Shape(tp, 256, 8192, vllm_version="0.7.3")))[
            "non-torch (NCCL, CUDA)"
        ]
        / GIB
        for tp in (1, 2, 8)
    }
    assert sizes[1] == pytest.approx(0.16, abs=0.1)
    assert sizes[2] - sizes[1] == pytest.approx(1.79, rel=0.05)
    assert sizes[2] < sizes[8] < sizes[2] + 1.0  # NVLS: one nvlsPerRankSize (288 MiB) per communicator


def test_nccl_2_22_and_later_connect_channels_on_first_use() -> None:
    # vLLM 0.11 pins torch 2.9 (NCCL 2.27, connects on first use): 'Non-torch Memory 0.55 GiB' at TP 2 against
    # 0.14 at TP 1 on H100s (https://github.com/llm-d/llm-d-benchmark/blob/87ab01bebc78107815ea3bc2eccad3eb168003b0/
    # config_explorer/empirical-vllm-memory-results.md); vLLM 0.7.3 (torch 2.5, NCCL 2.21) connects all at start
    assert LLAMA3_8B is not None

    def non_torch(version: str) -> float:
        memory = estimate_memory(LLAMA3_8B, H100, "vllm", Shape(2, 256, 8192, vllm_version=version))
        return _items(memory)["non-torch (NCCL, CUDA)"] / GIB

    assert non_torch("0.11.1") == pytest.approx(0.55, abs=0.1)
    assert non_torch("0.7.3") > 3 * non_torch("0.11.1")


def test_a_405b_at_tp_8_leaves_the_kv_cache_vllm_logged() -> None:
    # https://github.com/vllm-project/vllm/issues/6746 (vLLM 0.5.3, 8 x H100, the July-2024 upload with 16 KV heads):
    # "the maximum number of tokens that can be stored in KV cache (79392)"; weights, the sampler, two NCCL
    # communicators connected at start and their NVLS buffers leave that much
    assert LLAMA31_405B is not None
    july_upload = LLAMA31_405B._replace(
        num_key_value_heads=16, total_params=LLAMA31_405B.total_params + 126 * 2 * 16384 * 1024
    )
    shape = Shape(8, 256, 131072, quantize="fbgemm_fp8", vllm_version="0.5.3")
    memory = estimate_memory(july_upload, H100, "vllm", shape)
    assert memory.kv_cache_tokens is not None and memory.kv_cache_tokens / 79392 == pytest.approx(
        1.0, abs=0.1
    )
    assert kv_capacity_verdict(memory, 131072) == "error"


def test_cuda_graphs_count_inside_the_budget_only_from_vllm_0_21_and_not_with_enforce_eager() -> None:
    # https://github.com/noonghunna/club-3090/issues/127: 'CUDA graph memory profiling is enabled (default since
    # v0.21.0)' with 'Estimated CUDA graph memory: 0.17 GiB total'
    assert LLAMA31_8B is not None
    instance = resolve_instance("g5.2xlarge")
    new = _items(estimate_memory(LLAMA31_8B, instance, "vllm", Shape(1, 32, 8192, vllm_version="0.23.0")))
    old = _items(estimate_memory(LLAMA31_8B, instance, "vllm", Shape(1, 32, 8192, vllm_version="0.14.0")))
    eager = estimate_memory(
        LLAMA31_8B, instance, "vllm", Shape(1, 32, 8192, vllm_version="0.23.0", enforce_eager=True)
    )
    assert 0.1 * GIB < new["CUDA graphs"] < 1.0 * GIB
    assert "CUDA graphs" not in old
    assert "CUDA graphs" not in _items(eager)


def test_fp8_kv_cache_doubles_the_tokens_and_blocks_follow_the_block_size() -> None:
    # https://github.com/vllm-project/vllm/pull/10511: Meta-Llama-3-8B holds 128 KiB of bf16 KV per token
    assert LLAMA3_8B is not None
    base = Shape(1, 256, 8192, vllm_version="0.7.3")
    bf16 = estimate_memory(LLAMA3_8B, H100, "vllm", base)
    fp8 = estimate_memory(LLAMA3_8B, H100, "vllm", base._replace(kv_cache_dtype="fp8"))
    blocks32 = estimate_memory(LLAMA3_8B, H100, "vllm", base._replace(block_size=32))
    assert bf16.kv_bytes_per_sequence == 8192 * 128 * 1024
    assert bf16.kv_cache_tokens and fp8.kv_cache_tokens and blocks32.kv_cache_tokens
    assert fp8.kv_cache_tokens == pytest.approx(2 * bf16.kv_cache_tokens, rel=0.001)
    assert blocks32.kv_cache_tokens % 32 == 0


def test_a_max_model_len_past_the_kv_capacity_is_an_error() -> None:
    # https://github.com/vllm-project/vllm/issues/10517: at 29000 "The model's max seq len (29000) is larger than
    # the maximum number of tokens that can be stored in KV cache (23648)"; 20000 started
    assert LLAMA31_8B is not None
    rtx3090 = resolve_instance("g5.xlarge")._replace(
        accelerator_name="RTX-3090", usable_memory_gib=23.58 + 0.45
    )
    failed = estimate_memory(LLAMA31_8B, rtx3090, "vllm", Shape(1, 256, 29000, vllm_version="0.6.4.post1"))
    started = estimate_memory(LLAMA31_8B, rtx3090, "vllm", Shape(1, 256, 20000, vllm_version="0.6.4.post1"))
    assert kv_capacity_verdict(failed, 29000) == "error"
    assert failed.kv_cache_tokens == pytest.approx(23648, rel=0.08)
    assert kv_capacity_verdict(started, 20000) is None


def test_explain_json_and_lint_report_the_kv_tokens_and_what_would_fit(tmp_path) -> None:
    # Llama-3.1-8B's default 131072-token max_model_len cannot start on one 24 GB GPU: vLLM refuses with "The
    # model's max seq len ... is larger than the maximum number of tokens that can be stored in KV cache"
    # (https://github.com/vllm-project/vllm/issues/10517, 23648 tokens on an RTX 3090)
    import json

    from conftest import run_cli

    config = tmp_path / "serving.properties"
    config.write_text(
        "option.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.rolling_batch=vllm\noption.tensor_parallel_degree=1\n"
    )
    document = json.loads(
        run_cli("explain", str(config), "--instance", "g5.2xlarge", "--format", "json").stdout
    )
    memory = document["memory"]
    assert 10_000 < memory["kv_cache_tokens"] < 131072
    assert memory["max_concurrent_sequences"] < 1
    lint = run_cli("lint", str(config), "--instance", "g5.2xlarge")
    assert lint.returncode == 1
    assert "LMI312" in lint.stdout and "option.max_model_len=" in lint.stdout


def test_vllm_serve_on_an_h100_profiles_1024_sequences_where_lmi_keeps_the_engine_defaults() -> None:
    # generated from vLLM's arg_utils.py: V1 gives `vllm serve` (OPENAI_API_SERVER) 8192 tokens and 1024
    # sequences on GPUs of 70 GiB or more except A100 (0.10+), on H100/H200 by name before; LMI's handlers build
    # the engine with from_engine_args (ENGINE_CONTEXT), which keeps the scheduler's 2048 tokens
    from lmi_config.sizing.vllm_release import ENGINE_CONTEXT, usage_context_defaults

    a100 = resolve_instance("p4de.24xlarge")
    assert usage_context_defaults("0.10.2", "OPENAI_API_SERVER", H100) == (8192, 1024)
    assert usage_context_defaults("0.10.2", "LLM_CLASS", H100) == (16384, 1024)
    assert usage_context_defaults("0.10.2", "OPENAI_API_SERVER", a100) == (2048, 256)
    assert usage_context_defaults("0.8.4", "OPENAI_API_SERVER", H100) == (8192, 1024)
    assert usage_context_defaults("0.10.2", ENGINE_CONTEXT, H100) == (None, None)
    assert usage_context_defaults("0.6.5", "OPENAI_API_SERVER", H100) == (None, None)  # V0: no tables


def test_vllm_serve_on_an_h100_samples_1024_sequences_in_its_profile() -> None:
    # https://github.com/llm-d/llm-d-benchmark/blob/87ab01bebc78107815ea3bc2eccad3eb168003b0/config_explorer/
    # empirical-vllm-memory-results.md (vLLM 0.11, `vllm serve`, one H100, max-model-len 16000): Qwen3-32B
    # "Peak Activation 5.64" GiB and "Available KV Cache 4.45" GiB -- a 256-sequence profile would promise 1.1 GiB more
    from lmi_config.sizing.vllm_release import usage_context_defaults

    qwen3 = from_catalog("Qwen/Qwen3-32B")
    assert qwen3 is not None
    tokens, sequences = usage_context_defaults("0.11.0", "OPENAI_API_SERVER", H100)
    assert (tokens, sequences) == (8192, 1024)
    shape = Shape(1, sequences, 16000, max_num_batched_tokens=tokens, block_size=128, vllm_version="0.11.0")
    items = _items(estimate_memory(qwen3, H100, "vllm", shape))
    assert items["activations (profile run)"] / GIB == pytest.approx(5.64, rel=0.05)
    assert items["KV cache (what is left)"] / GIB == pytest.approx(4.45, rel=0.1)


def test_latent_attention_caches_one_compressed_vector_per_token_from_vllm_0_7_1() -> None:
    # DeepSeek-V2's multi-head latent attention: vLLM with ModelConfig.use_mla (0.7.1+) caches kv_lora_rank +
    # qk_rope_head_dim values per token and layer on every TP rank; before, every head was expanded and padded
    # to 256 ("TODO, support head_size 192": https://github.com/vllm-project/vllm/blob/v0.6.5/vllm/model_executor/
    # models/deepseek_v2.py, Attention(self.num_local_heads, 256, ...))
    from pathlib import Path

    from lmi_config.modelarch import from_directory
    from lmi_config.sizing.gpu import kv_bytes_per_token

    lite = from_directory(Path(__file__).parent / "fixtures" / "models" / "deepseek-v2-lite")
    assert lite.total_params / 1e9 == pytest.approx(15.7, abs=0.1)  # the model card's 15.7 B
    assert kv_bytes_per_token(lite, Shape(8, 256, 8192, vllm_version="0.7.1")) == 27 * (512 + 64) * 2
    assert kv_bytes_per_token(lite, Shape(1, 256, 8192, vllm_version="0.7.1")) == 27 * (512 + 64) * 2
    assert kv_bytes_per_token(lite, Shape(8, 256, 8192, vllm_version="0.6.5")) == 2 * 27 * 2 * 256 * 2


def test_an_mla_moe_on_lmi_at_tp_8_on_p4d_leaves_the_kv_cache_it_logged() -> None:
    # https://github.com/aws-samples/aws-ai-ml-workshop-kr/blob/34145b564e4d6560ec80e6749f9b722fb83e05b3/genai/
    # aws-gen-ai-kr/40_inference/06-Deepseek-v2-Inference/README.md: DeepSeek-Coder-V2-Lite on LMI 0.32 (vLLM 0.7.1),
    # ml.p4d.24xlarge, TP 8, fp16, max_model_len 8192, max_rolling_batch_size 2: "non_torch_memory takes 2.10GiB ...
    # the rest of the memory reserved for KV Cache is 29.02GiB" of "total_gpu_memory (39.39GiB) x ... (0.90)"
    from pathlib import Path

    from lmi_config.modelarch import from_directory

    lite = from_directory(Path(__file__).parent / "fixtures" / "models" / "deepseek-v2-lite")
    p4d = resolve_instance("p4d.24xlarge")
    shape = Shape(8, 2, 8192, weight_dtype="fp16", vllm_version="0.7.1")
    items = _items(estimate_memory(lite, p4d, "vllm", shape))
    assert items["non-torch (NCCL, CUDA)"] / GIB == pytest.approx(2.10, rel=0.1)
    assert items["KV cache (what is left)"] / GIB == pytest.approx(29.02, rel=0.05)


def test_every_generated_profiling_scheme_says_what_it_counts() -> None:
    # a release whose profiler the generator recognises under a new name would otherwise be judged by nothing
    from lmi_config.sizing.vllm_release import memory_data, profiler_counts

    schemes = {entry["profiler"]["value"] for entry in memory_data()["versions"].values()}
    counts = {scheme: profiler_counts(scheme) for scheme in schemes}
    assert counts["device_used"].allocator_cache and counts["device_used"].cuda_context
    assert not counts["since_init_snapshot"].allocator_cache


def _gptq(bits: int, group_size: int) -> ModelArch:
    # Qwen2.5-7B-Instruct's config.json with a GPTQ quantization_config as Qwen publishes it (-GPTQ-Int4/-Int8)
    config = json.loads(QWEN25_7B_CONFIG.read_text())
    config.update(
        torch_dtype="float16",
        quantization_config={"quant_method": "gptq", "bits": bits, "group_size": group_size},
    )
    return normalize_config(config, model_id=f"Qwen/Qwen2.5-7B-Instruct-GPTQ-Int{bits}", source="test")


def test_a_gptq_checkpoint_is_sized_at_the_bits_its_config_states() -> None:
    # vLLM reads bits and group_size from the checkpoint (GPTQConfig.from_config): qweight packs 32/bits weights
    # per int32, so an Int8 checkpoint's linear layers weigh twice an Int4's; the embeddings stay fp16
    g5 = resolve_instance("g5.xlarge")
    shape = Shape(1, 256, 4096, weight_dtype="fp16", quantize="gptq", vllm_version="0.8.4")
    int4 = _items(estimate_memory(_gptq(4, 128), g5, "vllm", shape))["weights"]
    int8 = _items(estimate_memory(_gptq(8, 128), g5, "vllm", shape))["weights"]
    arch = _gptq(4, 128)
    embeddings = arch.embedding_params * 2  # fp16
    assert (int8 - embeddings) / (int4 - embeddings) == pytest.approx(1.97, rel=0.01)
    # the table's own layout (4-bit, group 128) keeps the table's bytes per weight
    unstated = arch._replace(loading={})
    assert int4 == pytest.approx(_items(estimate_memory(unstated, g5, "vllm", shape))["weights"], rel=0.001)
    # per-channel scales (group_size -1) drop the per-group scales and zeros
    channel = _items(estimate_memory(_gptq(4, -1), g5, "vllm", shape))["weights"]
    assert channel < int4


def test_a_compressed_tensors_int4_checkpoint_has_zero_points_only_when_asymmetric() -> None:
    # vLLM's wNa16 scheme packs the weights like GPTQ and keeps a zero point per group only when the
    # scheme is not symmetric (compressed_tensors_wNa16.py create_weights); the table's GPTQ figure also
    # counts GPTQ's g_idx, so both stay below it
    g5 = resolve_instance("g5.xlarge")

    def weights(quantize: str, arch: ModelArch) -> int:
        shape = Shape(1, 256, 4096, weight_dtype="fp16", quantize=quantize, vllm_version="0.8.4")
        return _items(estimate_memory(arch, g5, "vllm", shape))["weights"]

    def compressed(symmetric: bool) -> ModelArch:
        group = {"weights": {"num_bits": 4, "type": "int", "group_size": 128, "symmetric": symmetric}}
        declared = {"quant_method": "compressed-tensors", "config_groups": {"group_0": group}}
        return _gptq(4, 128)._replace(loading={"quantization_config": declared})

    symmetric = weights("compressed-tensors", compressed(symmetric=True))
    asymmetric = weights("compressed-tensors", compressed(symmetric=False))
    assert symmetric < asymmetric < weights("gptq", _gptq(4, 128))


MODELOPT_FP8 = {"producer": {"name": "modelopt", "version": "0.23.0"}, "quantization": {"quant_algo": "FP8"}}


def _modelopt_directory(tmp_path: Path, hf_quant_config: dict | None) -> Path:
    directory = tmp_path / "llama-fp8"
    directory.mkdir()
    source = Path(__file__).parent / "fixtures" / "models" / "llama-3.1-8b" / "config.json"
    (directory / "config.json").write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    if hf_quant_config is not None:
        (directory / "hf_quant_config.json").write_text(json.dumps(hf_quant_config), encoding="utf-8")
    (directory / "serving.properties").write_text(
        "option.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.rolling_batch=vllm\noption.max_model_len=8192\n"
    )
    return directory


def _explain(directory: Path, lmi: str, extra: str = "") -> dict:
    from conftest import run_cli

    config = directory / "serving.properties"
    if extra:
        config.write_text(config.read_text() + extra)
    result = run_cli(
        "explain",
        str(config),
        "--instance",
        "ml.g6e.xlarge",
        "--lmi-version",
        lmi,
        "--model",
        str(directory),
        "--format",
        "json",
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_vllm_0_14_and_later_take_the_kv_cache_dtype_of_a_modelopt_checkpoint(tmp_path: Path) -> None:
    # hf_quant_config.json's kv_cache_quant_algo FP8: kv_cache_dtype=auto resolves to fp8_e4m3 from vLLM 0.14
    # (resolve_kv_cache_dtype_string, generated into vllm_memory.json); vLLM 0.12 keeps the model's bf16
    directory = _modelopt_directory(
        tmp_path, {**MODELOPT_FP8, "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}
    )
    before, after = _explain(directory, "lmi18"), _explain(directory, "lmi27")
    assert before["resolved"]["kv_cache_dtype"] is None
    assert after["resolved"]["kv_cache_dtype"] == "fp8_e4m3"
    assert "ModelOpt KV cache algorithm" in after["resolved"]["sources"]["kv_cache_dtype"]
    assert 1.9 < after["memory"]["kv_cache_tokens"] / before["memory"]["kv_cache_tokens"] < 2.1
    # a dtype the configuration gives wins
    chosen = _explain(directory, "lmi27", "option.kv_cache_dtype=bfloat16\n")
    assert chosen["resolved"]["kv_cache_dtype"] == "bfloat16"
    assert chosen["resolved"]["sources"]["kv_cache_dtype"] == "option.kv_cache_dtype"
    assert 1.9 < after["memory"]["kv_cache_tokens"] / chosen["memory"]["kv_cache_tokens"] < 2.1


def test_a_modelopt_checkpoint_without_a_kv_algorithm_keeps_the_model_dtype(tmp_path: Path) -> None:
    assert (
        _explain(_modelopt_directory(tmp_path, MODELOPT_FP8), "lmi27")["resolved"]["kv_cache_dtype"] is None
    )


@pytest.mark.parametrize(
    ("declared", "version", "expected"),
    [
        # ModelOpt 0.29 and older: hf_quant_config.json, the method from the producer and quant_algo
        (
            {
                "hf_quant_config": {
                    **MODELOPT_FP8,
                    "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"},
                }
            },
            "0.23.0",
            "fp8_e4m3",
        ),
        (
            {
                "hf_quant_config": {
                    **MODELOPT_FP8,
                    "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"},
                }
            },
            "0.12.0",
            None,
        ),
        # ModelOpt 0.31 and later: config.json's quantization_config, a kv_cache_scheme dict
        (
            {
                "quantization_config": {
                    "quant_method": "modelopt",
                    "kv_cache_scheme": {"dynamic": False, "num_bits": 8, "type": "float"},
                }
            },
            "0.14.0",
            "fp8_e4m3",
        ),
        # an NVFP4 KV cache is in vLLM 0.21+'s map only
        (
            {"quantization_config": {"quant_method": "modelopt_fp4", "kv_cache_quant_algo": "NVFP4"}},
            "0.14.0",
            None,
        ),
        (
            {"quantization_config": {"quant_method": "modelopt_fp4", "kv_cache_quant_algo": "NVFP4"}},
            "0.23.0",
            "nvfp4",
        ),
        # not ModelOpt: another method's kv field is not read
        (
            {"quantization_config": {"quant_method": "compressed-tensors", "kv_cache_scheme": "FP8"}},
            "0.23.0",
            None,
        ),
    ],
)
def test_the_checkpoint_kv_algorithm_is_read_as_vllm_reads_it(
    declared: dict, version: str, expected: str | None
) -> None:
    from lmi_config.shape.dimensions import checkpoint_kv_cache_dtype

    arch = LLAMA31_8B
    assert arch is not None
    assert checkpoint_kv_cache_dtype(arch._replace(loading=declared), version) == expected


CT_FP8_DYNAMIC = {
    "quant_method": "compressed-tensors",
    "format": "float-quantized",
    "config_groups": {
        "group_0": {
            "targets": ["Linear"],
            "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True},
            "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True},
        }
    },
    "ignore": ["lm_head"],
}


@pytest.mark.parametrize(
    ("quantization_config", "hf_quant_config"),
    [
        (CT_FP8_DYNAMIC, None),  # RedHatAI's FP8-dynamic layout
        ({"quant_method": "fp8", "activation_scheme": "dynamic"}, None),
        (None, {**MODELOPT_FP8, "quantization": {"quant_algo": "FP8", "exclude_modules": ["lm_head"]}}),
    ],
    ids=["compressed-tensors", "fp8", "modelopt"],
)
def test_an_fp8_70b_checkpoint_without_its_size_weighs_what_vllm_logged(
    tmp_path: Path, quantization_config: dict | None, hf_quant_config: dict | None
) -> None:
    # llm-d-benchmark's empirical vLLM profiling (benchmarks/vllm_kv_cases_more.json, Y02):
    # RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic at TP 1 on an H100, "Model loading took 67.72 GiB".
    # A local directory holding only config.json (no safetensors index) is sized from the parameter
    # count as vLLM loads the method the checkpoint states, however it states it
    directory = tmp_path / "llama-70b-fp8"
    directory.mkdir()
    from lmi_config.knowledge.models import hand_catalog_rows

    row = next(row for row in hand_catalog_rows() if row["model_id"] == "meta-llama/Llama-3.1-70B-Instruct")
    config = dict(row["config"])
    if quantization_config is not None:
        config["quantization_config"] = quantization_config
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    if hf_quant_config is not None:
        (directory / "hf_quant_config.json").write_text(json.dumps(hf_quant_config), encoding="utf-8")
    properties = directory / "serving.properties"
    properties.write_text("option.model_id=x\noption.rolling_batch=vllm\noption.tensor_parallel_degree=1\n")
    from conftest import run_cli

    result = run_cli(
        "explain", str(properties), "--instance", "ml.p5.48xlarge", "--lmi-version", "0.34.0",
        "--model", str(directory), "--format", "json",
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr  # 1: the KV cache is too small for 131,072 tokens
    items = {item["name"]: item for item in json.loads(result.stdout)["memory"]["ranks"][0]["items"]}
    assert items["weights"]["bytes"] / GIB == pytest.approx(67.72, rel=0.005)
