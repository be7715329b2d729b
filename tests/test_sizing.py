"""The memory model: KV layouts per GQA strategy, padding, budgets, and the container's smart defaults."""

from __future__ import annotations

import pytest
from conftest import load_shared_json

from lmi_config.knowledge.instances import resolve_instance
from lmi_config.modelarch import from_catalog, normalize_config
from lmi_config.shape.smart_defaults import smart_defaults
from lmi_config.sizing import GIB, Shape, estimate_memory, kv_layout

LLAMA3_8B = from_catalog("meta-llama/Llama-3.1-8B-Instruct")
LLAMA3_70B = from_catalog("meta-llama/Llama-3.1-70B-Instruct")
QWEN_7B = from_catalog("Qwen/Qwen2.5-7B-Instruct")


@pytest.mark.parametrize(
    ("tp", "strategy", "per_core"),
    [
        (1, "split over TP", 8),
        (2, "split over TP", 4),
        (8, "split over TP", 1),
        (16, "REPLICATE_TO_TP_DEGREE", 1),
        (32, "REPLICATE_TO_TP_DEGREE", 1),
        (12, "CONVERT_TO_MHA", 3),
    ],
)
def test_nxdi_kv_heads_per_core_follow_gqa_py(tp: int, strategy: str, per_core: float) -> None:
    # neuron-ground-truth.md §5.2 examples for Llama-3.x-8B (32 query / 8 KV heads)
    assert LLAMA3_8B is not None
    name, padded, heads = kv_layout(LLAMA3_8B, tp, "nxdi", None)
    assert (name, heads) == (strategy, per_core)
    if tp == 12:
        assert padded == 36


def test_qwen_28_heads_pad_to_32_at_tp8() -> None:
    assert QWEN_7B is not None
    _, padded, heads = kv_layout(QWEN_7B, 8, "nxdi", None)
    assert padded == 32 and heads == 1


def test_tnx_strategies_change_the_kv_cache() -> None:
    assert LLAMA3_8B is not None
    instance = resolve_instance("inf2.48xlarge")
    by_heads = estimate_memory(LLAMA3_8B, instance, "transformers-neuronx", Shape(8, 8, 4096))
    by_batch = estimate_memory(
        LLAMA3_8B, instance, "transformers-neuronx", Shape(8, 8, 4096, gqa_strategy="shard-over-batch")
    )
    kv = {
        memory.kv_strategy: next(i.bytes for i in memory.ranks[0].items if i.name == "KV cache")
        for memory in (by_heads, by_batch)
    }
    # shard-over-heads: 1 head x 8 sequences; shard-over-batch: 8 heads x 1 sequence: the same bytes
    assert kv["shard-over-heads"] == kv["shard-over-batch"] == 2 * 32 * 8 * 4096 * 1 * 128 * 2


def test_mha_conversion_multiplies_the_kv_cache() -> None:
    assert LLAMA3_70B is not None
    instance = resolve_instance("inf2.24xlarge")
    at_8 = estimate_memory(LLAMA3_70B, instance, "transformers-neuronx", Shape(8, 1, 4096))
    at_12 = estimate_memory(LLAMA3_70B, instance, "transformers-neuronx", Shape(12, 1, 4096))
    assert at_8.kv_heads_per_core == 1 and at_12.kv_heads_per_core == 6  # 64 query heads padded to 72 / 12


def test_budget_is_16_gib_per_inf2_core_and_24_gib_per_trn2_lnc2_core() -> None:
    assert LLAMA3_8B is not None
    inf2 = estimate_memory(
        LLAMA3_8B, resolve_instance("ml.inf2.xlarge"), "transformers-neuronx", Shape(2, 1, 1024)
    )
    trn2 = estimate_memory(LLAMA3_8B, resolve_instance("trn2.48xlarge"), "nxdi", Shape(2, 1, 1024))
    assert inf2.budget_bytes == 16 * GIB
    assert trn2.budget_bytes == 24 * GIB


def test_opt13b_notebook_batch_2_fits_and_batch_3_does_not() -> None:
    arch = from_catalog("facebook/opt-13b")
    assert arch is not None
    instance = resolve_instance("inf2.8xlarge")
    assert estimate_memory(arch, instance, "transformers-neuronx", Shape(2, 2, 2048, "fp16", "fp16")).fits
    assert not estimate_memory(arch, instance, "transformers-neuronx", Shape(2, 3, 2048, "fp16", "fp16")).fits


def test_vllm_kv_cache_is_what_the_weights_leave() -> None:
    assert LLAMA3_8B is not None
    memory = estimate_memory(
        LLAMA3_8B, resolve_instance("g5.2xlarge"), "vllm", Shape(1, 256, 131072, gpu_memory_utilization=0.9)
    )
    assert memory.kv_cache_capacity_bytes is not None and memory.kv_bytes_per_sequence is not None
    assert (
        memory.kv_cache_capacity_bytes < memory.kv_bytes_per_sequence
    )  # 16 GiB of KV for 128k tokens does not fit
    short = estimate_memory(LLAMA3_8B, resolve_instance("g5.2xlarge"), "vllm", Shape(1, 256, 8192))
    assert short.kv_cache_capacity_bytes is not None and short.kv_bytes_per_sequence is not None
    assert short.kv_cache_capacity_bytes > short.kv_bytes_per_sequence


def test_int8_weights_halve_the_weight_bytes() -> None:
    assert LLAMA3_8B is not None
    instance = resolve_instance("inf2.8xlarge")
    full = estimate_memory(LLAMA3_8B, instance, "transformers-neuronx", Shape(2, 1, 1024, "bf16"))
    int8 = estimate_memory(
        LLAMA3_8B, instance, "transformers-neuronx", Shape(2, 1, 1024, "bf16", quantize="static_int8")
    )
    assert int8.weight_bytes_total < 0.6 * full.weight_bytes_total


SMART = [
    entry
    for entry in load_shared_json("reference", "djl_ci_configs.json")
    if entry["kind"] == "smart_default_unit_test"
]


@pytest.mark.parametrize("entry", SMART, ids=[entry["name"] for entry in SMART])
def test_smart_defaults_match_the_containers_unit_tests(entry: dict) -> None:
    config = dict(entry["model_config"], architectures=["LlamaForCausalLM"], tie_word_embeddings=False)
    arch = normalize_config(config, model_id=entry["name"], source="djl-serving unit test")
    cores = entry["neuron_cores"] if isinstance(entry["neuron_cores"], int) else 1
    given = entry["input_properties"]
    expected = entry["expected_properties"]
    tp_text = given.get("option.tensor_parallel_degree")
    tp = cores if tp_text == "max" else (int(tp_text) if tp_text else None)
    batch = int(given["option.max_rolling_batch_size"]) if "option.max_rolling_batch_size" in given else None
    n_positions = int(given.get("option.n_positions") or expected.get("option.n_positions") or 0)
    chosen_tp, chosen_batch = smart_defaults(
        arch,
        cores,
        tensor_parallel_degree=tp,
        batch=batch,
        quantized="option.quantize" in given,
        n_positions=n_positions,
    )
    if expected.get("option.tensor_parallel_degree"):
        assert chosen_tp == int(expected["option.tensor_parallel_degree"])
    if expected.get("option.max_rolling_batch_size"):
        assert chosen_batch == int(expected["option.max_rolling_batch_size"])


def test_trn2_lnc1_doubles_the_cores_and_halves_their_memory(tmp_path) -> None:
    from lmi_config.api import lint_paths
    from lmi_config.knowledge.instances import with_lnc
    from lmi_config.lint import LintOptions

    trn2 = resolve_instance("trn2.48xlarge")
    assert (trn2.num_cores, trn2.memory_per_core_bytes) == (64, 24 * GIB)
    lnc1 = with_lnc(trn2, 1)
    assert (lnc1.num_cores, lnc1.memory_per_core_bytes) == (128, 12 * GIB)
    config = tmp_path / "serving.properties"
    config.write_text(
        "option.model_id=meta-llama/Llama-3.3-70B-Instruct\noption.rolling_batch=vllm\noption.model_loader=nxdi\noption.entryPoint=djl_python.transformers_neuronx\noption.tensor_parallel_degree=128\n"
    )
    (tmp_path / "model.env").write_text("NEURON_LOGICAL_NC_CONFIG=1\n")
    by_default = lint_paths([str(config)], LintOptions(instance="trn2.48xlarge", lmi_version="0.34.0"))
    assert "tp-exceeds-devices" in {f.rule for f in by_default.findings}
    with_env = lint_paths([str(tmp_path)], LintOptions(instance="trn2.48xlarge", lmi_version="0.34.0"))
    assert "tp-exceeds-devices" not in {f.rule for f in with_env.findings}
