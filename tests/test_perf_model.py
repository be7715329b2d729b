"""The performance model (issue 18): the physics a user would notice, the fit that reproduces
data/perf_fit.json, and the accuracy benchmark's output and refusals, through the real scripts."""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, shared_path
from test_hostile_inputs import settle, untouched  # noqa: F401  (untouched is a fixture)

from lmi_config.knowledge.instances import resolve_instance
from lmi_config.knowledge.perf_data import measured_caveats
from lmi_config.modelarch import from_catalog
from lmi_config.perf import (
    Configuration,
    UnsupportedConfiguration,
    Workload,
    configuration_from_shape,
    predict,
)
from lmi_config.perf.devices import device_for, engine_family, fitted_harness
from lmi_config.perf.measured import harness_of, read_row
from lmi_config.perf.types import Efficiency
from lmi_config.sizing import Shape, estimate_memory

LLAMA_8B = from_catalog("meta-llama/Llama-3.1-8B-Instruct")
LLAMA_70B = from_catalog("meta-llama/Llama-3.1-70B-Instruct")
P5 = resolve_instance("ml.p5.48xlarge")
INF2 = resolve_instance("ml.inf2.48xlarge")
SUMMARY_KEYS = {
    "rows",
    "skipped",
    "ttft_mape",
    "tpot_mape",
    "throughput_mape",
    "pair_order_agreement",
    "left_out",
    "development_fit",
}
TIMEOUT_SECONDS = 300  # the fit and its leave-one-source-out folds take a minute or two on a loaded machine


def _gpu(tp: int, batch: int = 1, model: object = LLAMA_8B, **options: object) -> Configuration:
    assert model is not None
    return Configuration(model, P5, "vllm", tp, batch, **options)  # type: ignore[arg-type]


def _terms(prediction_phase: object) -> dict[str, float]:
    return {term.name: term.milliseconds for term in prediction_phase.terms}  # type: ignore[attr-defined]


# --- physics -------------------------------------------------------------------------------------


def test_tpot_grows_with_model_size() -> None:
    workload = Workload(1024, 256, 1)
    small = predict(_gpu(8), workload)
    large = predict(_gpu(8, model=LLAMA_70B), workload)
    assert large.tpot_ms > 2 * small.tpot_ms
    assert _terms(large.tpot)["weight reads"] > 8 * _terms(small.tpot)["weight reads"]


def test_tpot_falls_with_tp_until_collectives_dominate_the_weight_reads() -> None:
    workload = Workload(1024, 256, 1)
    by_tp = {tp: predict(_gpu(tp), workload) for tp in (1, 2, 4, 8)}
    tpots = [by_tp[tp].tpot_ms for tp in (1, 2, 4, 8)]
    assert tpots == sorted(tpots, reverse=True)
    # once there are all-reduces (TP 2 on), each doubling gains less: they do not shrink with TP,
    # the weight reads do
    assert tpots[1] - tpots[2] > tpots[2] - tpots[3] > 0
    assert _terms(by_tp[1].tpot)["collectives"] == 0
    at_two = _terms(by_tp[2].tpot)
    assert at_two["collectives"] < at_two["weight reads"]
    assert by_tp[2].tpot.bound == "memory bandwidth"
    at_eight = _terms(by_tp[8].tpot)
    assert at_eight["collectives"] > at_eight["weight reads"]
    # no longer the memory: what TP does not divide (the all-reduces, or the fixed time per step)
    assert by_tp[8].tpot.bound in ("collectives", "fixed overhead")


def test_decode_at_small_batch_is_bandwidth_bound_and_says_so() -> None:
    prediction = predict(_gpu(4, model=LLAMA_70B), Workload(1024, 256, 1))
    assert prediction.tpot.bound == "memory bandwidth"
    terms = _terms(prediction.tpot)
    assert terms["compute"] == 0  # overlapped with the reads, never added to them
    assert "overlapped" in next(t.note for t in prediction.tpot.terms if t.name == "compute")


def test_decode_at_a_large_batch_of_long_sequences_reads_more_kv_than_weights() -> None:
    prediction = predict(_gpu(1, batch=256), Workload(8192, 1024, 256))
    terms = _terms(prediction.tpot)
    assert terms["KV reads"] > terms["weight reads"]
    assert prediction.tpot.bound == "memory bandwidth"


def test_prefill_time_grows_with_input_length_and_becomes_compute_bound() -> None:
    ttfts = [predict(_gpu(1), Workload(tokens, 128, 1)) for tokens in (128, 1024, 4096, 16384)]
    values = [p.ttft_ms for p in ttfts]
    assert values == sorted(values) and len(set(values)) == 4
    assert ttfts[-1].ttft.bound == "compute"
    # linear layers alone would make 12,288 more tokens cost 4x what 3,072 more cost; causal
    # attention, quadratic in the prompt, makes it more
    assert values[3] - values[2] > 4 * (values[2] - values[1])


def _tnx(sequence_length: int, batch: int = 1, model: object = LLAMA_8B) -> Configuration:
    return Configuration(  # type: ignore[arg-type]
        model, INF2, "transformers-neuronx", 24, batch, sequence_length=sequence_length, batching="static"
    )


def test_neuron_prefill_rises_in_steps_at_the_context_encoding_buckets() -> None:
    # compiled for 4,096 positions: context buckets 64 ... 1,024, 2,048 (half the decode buckets)
    def ttft(prompt: int) -> float:
        return predict(_tnx(4096), Workload(prompt, 16)).ttft_ms

    assert ttft(1025) == ttft(1500) == ttft(2048)  # all padded to the 2,048 bucket
    assert ttft(1024) < ttft(1025)  # one token past a bucket costs the next bucket
    padded = predict(_tnx(4096), Workload(1025, 16))
    assert any("padded to its 2048-token bucket" in note for note in padded.notes)
    # the padding is time the batch spends before its first token: output tokens/s counts it
    assert padded.output_tokens_per_second < predict(_tnx(4096), Workload(1024, 16)).output_tokens_per_second
    # engines with paged attention compute the prompt as it is
    assert predict(_gpu(1), Workload(1025, 16, 1)).ttft_ms < predict(_gpu(1), Workload(1500, 16, 1)).ttft_ms


def test_neuron_decode_reads_the_kv_cache_of_the_whole_bucket_it_runs_in() -> None:
    # 8 sequences of 4,097 to 4,160 tokens run in the 8,192-position bucket: the KV of 8,192
    # positions is read per step whatever the sequence length in it
    in_bucket = predict(_tnx(8192, batch=8), Workload(4096, 64))
    shorter = predict(_tnx(8192, batch=8), Workload(2048, 64))
    assert _terms(in_bucket.tpot)["KV reads"] == pytest.approx(2 * _terms(shorter.tpot)["KV reads"])
    # compiled for 4,160 positions, the same requests run in a bucket half the size
    tight = predict(_tnx(4160, batch=8), Workload(4096, 64))
    assert _terms(tight.tpot)["KV reads"] < 0.6 * _terms(in_bucket.tpot)["KV reads"]


TRN2 = resolve_instance("ml.trn2.3xlarge")


def _nxd(slots: int, sequence_length: int = 4096) -> Configuration:
    return Configuration(  # type: ignore[arg-type]
        LLAMA_8B, TRN2, "vllm-neuron", 4, slots, sequence_length=sequence_length
    )


def test_nxd_decode_computes_every_compiled_slot_even_with_one_request_in_flight() -> None:
    # a Neuron graph has a fixed batch: one user on a graph compiled for 32 sequences still reads the
    # KV cache of 32 slots per step; a GPU engine reads the running sequence's only
    one_user = Workload(1500, 250, concurrency=1)
    wide, narrow = predict(_nxd(32), one_user), predict(_nxd(4), one_user)
    assert _terms(wide.tpot)["KV reads"] == pytest.approx(8 * _terms(narrow.tpot)["KV reads"])
    assert wide.tpot_ms > narrow.tpot_ms
    assert "32 compiled slots" in next(t.note for t in wide.tpot.terms if t.name == "KV reads")
    gpu_wide, gpu_narrow = predict(_gpu(1, 32), one_user), predict(_gpu(1, 4), one_user)
    assert _terms(gpu_wide.tpot)["KV reads"] == pytest.approx(_terms(gpu_narrow.tpot)["KV reads"])


def test_nxd_prefill_computes_the_prompt_padded_to_nxd_inference_buckets() -> None:
    # NxD Inference buckets (vLLM turns bucketing on): powers of two from 128, then the compiled length;
    # compiled for 2,500 positions there is no 2,048 bucket (log2 2,500 rounds to 11): 1,500 pads to 2,500
    def ttft(prompt: int, length: int = 4096) -> float:
        return predict(_nxd(4, length), Workload(prompt, 16, concurrency=1)).ttft_ms

    assert ttft(1025) == ttft(2048) < ttft(2049)
    assert ttft(1500, 2500) == ttft(2500, 2500) > ttft(1500, 4096)


def test_a_new_request_under_continuous_batching_waits_for_the_decode_step_in_progress() -> None:
    alone = predict(_gpu(1, batch=64), Workload(1024, 256, 1))
    crowded = predict(_gpu(1, batch=64), Workload(1024, 256, 64))
    assert "step in progress" not in _terms(alone.ttft)
    step = _terms(crowded.ttft)["step in progress"]
    decoding = sum(
        term.milliseconds for term in crowded.tpot.terms if term.name != "prefill of arriving requests"
    )
    assert step == pytest.approx(decoding / 2)
    assert crowded.ttft_ms > alone.ttft_ms + step


def test_fp8_weights_read_half_the_bytes_of_bf16() -> None:
    workload = Workload(1024, 256, 1)
    bf16 = _terms(predict(_gpu(8, model=LLAMA_70B), workload).tpot)["weight reads"]
    fp8 = _terms(predict(_gpu(8, model=LLAMA_70B, quantization="fp8"), workload).tpot)["weight reads"]
    # the embeddings stay 16-bit: a little over half
    assert 0.5 <= fp8 / bf16 < 0.53


def test_fp8_kv_cache_reads_half_the_kv_bytes() -> None:
    workload = Workload(8192, 1024, 64)
    bf16 = _terms(predict(_gpu(1, batch=64), workload).tpot)["KV reads"]
    fp8 = _terms(predict(_gpu(1, batch=64, kv_dtype="fp8"), workload).tpot)["KV reads"]
    assert fp8 == pytest.approx(bf16 / 2, rel=0.01)


def test_a_mixture_of_experts_reads_only_the_routed_experts_at_batch_one() -> None:
    from lmi_config.sizing.gpu import weight_bytes

    moe = from_catalog("Qwen/Qwen3-30B-A3B")
    assert moe is not None and moe.num_experts and moe.experts_per_token
    one = predict(Configuration(moe, P5, "vllm", 1, 1), Workload(1024, 256, 1))
    full = predict(Configuration(moe, P5, "vllm", 1, 256), Workload(1024, 256, 256))
    assert 0 < _terms(one.tpot)["weight reads"] < 0.25 * _terms(full.tpot)["weight reads"]
    # at batch 256 nearly every expert is routed to by some sequence: all the weights are read but the
    # input embedding (untied: its rows are gathered, the LM head is read)
    assert not moe.tie_word_embeddings
    embedding = moe.vocab_size * moe.hidden_size * 2
    every_weight = (weight_bytes(moe, Shape(1, 256, 4096))[0] - embedding) / 1e9
    read = next(t.note for t in full.tpot.terms if t.name == "weight reads")
    assert float(read.split()[0]) == pytest.approx(every_weight, rel=0.01)


def test_decode_reads_the_lm_head_but_gathers_the_input_embedding() -> None:
    from lmi_config.sizing.gpu import weight_bytes

    assert LLAMA_8B is not None and not LLAMA_8B.tie_word_embeddings
    tied = LLAMA_8B._replace(tie_word_embeddings=True)
    workload = Workload(1024, 256, 1)
    for arch, gathered in ((LLAMA_8B, LLAMA_8B.vocab_size * LLAMA_8B.hidden_size * 2), (tied, 0)):
        step = predict(Configuration(arch, P5, "vllm", 1, 1), workload).tpot
        read = next(t.note for t in step.terms if t.name == "weight reads")
        stored = weight_bytes(arch, Shape(1, 1, 4096))[0]
        assert float(read.split()[0]) == pytest.approx((stored - gathered) / 1e9, abs=0.01)


def test_prefill_multiplies_the_lm_head_for_the_last_prompt_token_only() -> None:
    assert LLAMA_8B is not None
    head = LLAMA_8B.vocab_size * LLAMA_8B.hidden_size
    layers = LLAMA_8B.total_params - 2 * head  # untied: the embedding and the LM head
    slow = Efficiency(1e-3, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0)  # compute-bound, attention nearly free
    short, long = (
        predict(Configuration(LLAMA_8B, P5, "vllm", 1, 1), Workload(tokens, 1, 1), slow).ttft_ms
        for tokens in (1000, 2000)
    )
    # a thousand more prompt tokens cost 2 FLOPs per layer parameter each, none for the embeddings
    peak = device_for(P5).flops("bf16") * 1e-3
    assert long - short == pytest.approx(2 * layers * 1000 / peak * 1e3, rel=0.01)


def test_neuron_weights_are_read_over_the_chips_the_tp_group_spans() -> None:
    assert LLAMA_8B is not None
    workload = Workload(128, 256, 1)
    two = predict(Configuration(LLAMA_8B, INF2, "transformers-neuronx", 2, 1), workload)
    eight = predict(Configuration(LLAMA_8B, INF2, "transformers-neuronx", 8, 1), workload)
    assert _terms(two.tpot)["weight reads"] == pytest.approx(4 * _terms(eight.tpot)["weight reads"], rel=0.05)
    assert two.engine_family == "neuron-tnx"


def test_every_phase_is_the_sum_of_its_terms_and_names_its_largest_group() -> None:
    prediction = predict(_gpu(2, batch=32, model=LLAMA_70B), Workload(2048, 512, 32))
    for phase in (prediction.ttft, prediction.tpot):
        assert phase.milliseconds == pytest.approx(sum(term.milliseconds for term in phase.terms))
        assert phase.bound in {term.name for term in phase.terms} | {"memory bandwidth"}


def test_throughput_is_sequences_in_flight_over_the_request_time_times_copies() -> None:
    workload = Workload(1024, 512, 16)
    one = predict(_gpu(4, batch=16), workload)
    assert one.end_to_end_ms == pytest.approx(one.ttft_ms + 511 * one.tpot_ms)
    assert one.output_tokens_per_second == pytest.approx(16 * 512 / (one.end_to_end_ms / 1000))
    assert one.requests_per_second == pytest.approx(one.output_tokens_per_second / 512)
    # the load is the instance's, spread over its copies: two copies serve twice the users as fast
    two = predict(_gpu(4, batch=16, copies=2), workload._replace(concurrency=32))
    assert two.output_tokens_per_second == pytest.approx(2 * one.output_tokens_per_second)


def test_more_requests_than_slots_wait_in_a_queue() -> None:
    within = predict(_gpu(8, batch=8), Workload(1024, 256, 8))
    beyond = predict(_gpu(8, batch=8), Workload(1024, 256, 32))
    assert beyond.running_sequences == 8
    assert "queueing" in _terms(beyond.ttft) and beyond.ttft_ms > 3 * within.ttft_ms
    assert beyond.notes and "above the 8 sequences" in beyond.notes[0]


def test_a_device_without_facts_or_an_unknown_backend_is_refused_with_the_reason() -> None:
    assert LLAMA_8B is not None
    with pytest.raises(UnsupportedConfiguration, match="RTX-PRO-6000"):
        predict(Configuration(LLAMA_8B, resolve_instance("g7e.2xlarge"), "vllm", 1, 1), Workload(10, 10))
    with pytest.raises(UnsupportedConfiguration, match="deepspeed"):
        predict(Configuration(LLAMA_8B, P5, "deepspeed", 1, 1), Workload(10, 10))
    with pytest.raises(UnsupportedConfiguration, match="at least one"):
        predict(_gpu(1), Workload(0, 10))


def test_a_memory_model_shape_is_timed_with_the_weights_it_is_sized_with() -> None:
    assert LLAMA_8B is not None
    shape = Shape(8, 4, 4096, "bf16", "bf16", quantize="int8")
    memory = estimate_memory(LLAMA_8B, INF2, "transformers-neuronx", shape)
    configuration = configuration_from_shape(LLAMA_8B, INF2, "transformers-neuronx", shape, copies=3)
    assert (configuration.tensor_parallel_degree, configuration.max_concurrent_sequences) == (8, 4)
    assert configuration.quantization == "int8" and configuration.copies == 3
    prediction = predict(configuration, Workload(1024, 256, 4))
    weight_note = next(t.note for t in prediction.tpot.terms if t.name == "weight reads")
    # every weight the memory table holds but the 16-bit input embedding, whose rows are gathered
    gathered = LLAMA_8B.vocab_size * LLAMA_8B.hidden_size * 2
    assert weight_note == f"{(memory.weight_bytes_total - gathered) / 1e9:.2f} GB of weights"


def test_every_catalog_model_on_every_accelerator_instance_is_predicted_or_refused() -> None:
    from lmi_config.knowledge.instances import instances
    from lmi_config.knowledge.models import catalog_rows

    models = [from_catalog(row["model_id"]) for row in catalog_rows()]
    predicted = 0
    for instance in instances().values():
        if instance.accelerator == "cpu":
            continue
        backends = (
            ("transformers-neuronx", "nxdi") if instance.accelerator == "neuron" else ("vllm", "tensorrt-llm")
        )
        for backend in backends:
            for model in models:
                assert model is not None
                for tp in {1, instance.num_cores}:
                    try:
                        prediction = predict(
                            Configuration(model, instance, backend, tp, 16, 4096), Workload(1000, 200, 16)
                        )
                    except UnsupportedConfiguration as refusal:
                        assert instance.accelerator_name in str(refusal)
                        continue
                    figures = (prediction.ttft_ms, prediction.tpot_ms, prediction.output_tokens_per_second)
                    assert all(math.isfinite(f) and f > 0 for f in figures), (model.model_id, instance, tp)
                    predicted += 1
    assert predicted > 10_000


def test_the_model_imports_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "from lmi_config.perf import predict, Configuration, Workload\n"
        "from lmi_config.modelarch import from_catalog\n"
        "from lmi_config.knowledge.instances import resolve_instance\n"
        "p = predict(Configuration(from_catalog('meta-llama/Llama-3.1-8B-Instruct'),"
        " resolve_instance('p5.48xlarge'), 'vllm', 1, 8), Workload(512, 128))\n"
        "heavy = [m for m in ('pydantic', 'boto3', 'transformers', 'torch', 'jinja2') if m in sys.modules]\n"
        "print(heavy, p.tpot_ms > 0)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=TIMEOUT_SECONDS
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "[] True"


def test_a_mixture_of_experts_on_nxd_inference_gets_no_figures_rather_than_wrong_ones() -> None:
    mixtral = from_catalog("mistralai/Mixtral-8x7B-Instruct-v0.1")
    assert mixtral is not None
    trn1 = resolve_instance("ml.trn1.32xlarge")
    with pytest.raises(UnsupportedConfiguration, match="mixture of experts on NxD Inference"):
        predict(Configuration(mixtral, trn1, "nxdi", 16, 8, 4096), Workload(1000, 200, 8))
    # transformers-neuronx and GPUs keep their figures; a dense model on NxD too
    llama = from_catalog("meta-llama/Llama-3.1-8B-Instruct")
    assert llama is not None
    p5 = resolve_instance("ml.p5.48xlarge")
    for kept in (
        Configuration(mixtral, trn1, "transformers-neuronx", 16, 8, 4096),
        Configuration(mixtral, p5, "vllm", 8, 8, 4096),
        Configuration(llama, trn1, "nxdi", 8, 8, 4096),
    ):
        figures = predict(kept, Workload(1000, 200, 8))
        assert figures.ttft_ms > 0 and figures.tpot_ms > 0 and figures.output_tokens_per_second > 0


def test_the_optimum_neuron_benchmark_rows_are_predicted_or_skipped_with_the_reason() -> None:
    measurements = ROOT / "benchmarks" / "optimum_neuron_perf.json"
    rows = json.loads(measurements.read_text(encoding="utf-8"))["rows"]
    assert rows and all(
        re.match(r"https://github.com/huggingface/optimum-neuron/blob/[0-9a-f]{40}/", row["source"]["url"])
        for row in rows
    )
    result = _script(str(ROOT / "benchmarks" / "perf_accuracy.py"), str(measurements))
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["rows"] == len(rows) and summary["rows"] - summary["skipped"] >= 2
    assert "ON-llama-3.1-8b-trn2 meta-llama/Llama-3.1-8B-Instruct on trn2.3xlarge TP 4" in result.stdout
    assert "ON-llama-3.1-8b-trn2@2.46 meta-llama/Llama-3.1-8B-Instruct" in result.stdout  # a fixed-rate run
    assert "mixture of experts on NxD Inference" in result.stdout and "ON-qwen3-30B-A3B" in result.stdout


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"tp": "eight"}, "tp is not stated"),
        ({"tp": float("nan")}, "tp is not stated"),
        ({"tp": True}, "tp is not stated"),
        ({"input_tokens": -5}, "input_tokens"),
        ({"batch_size": 10**30}, "batch_size"),
        ({"tp": 64}, "more than the 8 GPUs"),
        ({"model": "nobody/NoSuchModel-7B"}, "not in the offline catalog"),
        ({"speculative_decoding": "EAGLE"}, "speculative decoding"),
        ({"engine_family": "gpu-tgi"}, "no parameters"),
        ({"dtype": ["fp8"]}, "dtype is not text"),
        ({"instance": "ml.trn2.48xlarge", "engine_family": "neuron-nxd", "lnc": "two"}, "unreadable row"),
        ({"dtype": "int4"}, "dtype 'int4' is not one the model knows"),
        ({"quantization": "bitsandbytes nf4"}, "quantization 'bitsandbytes nf4'"),
        ({"instance": None, "hardware": "A100"}, "unknown instance 'A100'"),
        ({"instance": None, "hardware": "H100 PCIe"}, "unknown instance"),
        ({"engine_family": None, "backend": "tgi"}, "no parameters for engine family"),
        ({"engine_family": None}, "neither engine_family nor backend"),
        ({"output_tokens_measured": 0.5}, "output_tokens_measured"),
    ],
)
def test_a_measured_row_the_model_cannot_read_is_skipped_with_the_reason(
    change: dict[str, object], reason: str
) -> None:
    row = dict(_gpu_row(), **change)
    outcome = read_row(row)
    assert isinstance(outcome, str) and reason in outcome


def test_a_quantized_copy_of_a_catalog_model_is_predicted_as_that_model_with_its_quantization() -> None:
    base = read_row(_gpu_row())
    copy = read_row(_gpu_row(model="nvidia/Llama-3.1-8B-Instruct-FP8", dtype="fp8"))
    awq = read_row(_gpu_row(model="hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4", dtype="fp16"))
    assert not isinstance(base, str) and not isinstance(copy, str) and not isinstance(awq, str)
    assert copy.configuration.arch.num_layers == base.configuration.arch.num_layers == 32
    assert (copy.configuration.quantization, awq.configuration.quantization) == ("fp8", "awq")
    # decode at batch 8 reads the weights: 4-bit < 8-bit < 16-bit
    tpots = [predict(read.configuration, read.workload).tpot_ms for read in (awq, copy, base)]
    assert tpots == sorted(tpots) and tpots[0] < 0.6 * tpots[2]
    # the row's own statement wins over the name's; 4-bit layouts are not read on Neuron
    stated = read_row(_gpu_row(model="TheBloke/Llama-2-7B-Chat-AWQ", quantization="gptq"))
    assert not isinstance(stated, str) and stated.configuration.quantization == "gptq"
    neuron = read_row(
        _gpu_row(instance="ml.inf2.48xlarge", engine_family="neuron-tnx", quantization="awq", tp=8)
    )
    assert isinstance(neuron, str) and "not one the model knows on neuron" in neuron


def test_a_pre_quantized_copy_the_catalog_holds_is_read_as_itself_in_its_stored_method() -> None:
    # the catalog holds Qwen3-235B-A22B-FP8 and sizes its stored fp8 checkpoint: read as itself
    row = _gpu_row(model="Qwen/Qwen3-235B-A22B-FP8", tp=8, quantization="gemm_quant_mode=fp8")
    read = read_row(row)
    assert not isinstance(read, str), read
    assert read.configuration.arch.model_id == "Qwen/Qwen3-235B-A22B-FP8"
    assert read.configuration.quantization == "fp8" and read.configuration.arch.num_experts == 128
    # a row that does not say how the weights are stored runs the checkpoint's method (DeepSeek-V3: fp8)
    stored = read_row(_gpu_row(model="deepseek-ai/DeepSeek-V3", tp=8))
    assert not isinstance(stored, str), stored
    assert stored.configuration.quantization == "fp8"


def test_a_row_naming_only_its_accelerator_runs_on_the_smallest_instance_carrying_enough_of_them() -> None:
    read = read_row(_gpu_row(instance=None, hardware="A10G", tp=4))
    assert not isinstance(read, str) and read.configuration.instance.instance_type == "g5.12xlarge"
    read = read_row(_gpu_row(instance=None, hardware="NVIDIA A100-SXM4-80GB", tp=2))
    assert not isinstance(read, str) and read.configuration.instance.instance_type == "p4de.24xlarge"
    read = read_row(_gpu_row(instance=None, hardware="Inferentia2", engine_family="neuron-tnx", tp=24))
    assert not isinstance(read, str) and read.configuration.instance.instance_type == "inf2.48xlarge"


def test_a_row_that_writes_not_set_its_own_way_or_gives_the_devices_instead_of_tp_is_read() -> None:
    def read(**change: object) -> tuple[object, ...]:
        outcome = read_row(_gpu_row(**change))
        assert not isinstance(outcome, str), outcome
        configuration = outcome.configuration
        return (configuration.weight_dtype, configuration.quantization, configuration.tensor_parallel_degree)

    # "auto" is the engine's default, the checkpoint's dtype (Llama 3.1: bfloat16); "None" is no method
    assert read(dtype="auto", quantization="None") == read(dtype=None) == ("bf16", None, 1)
    assert read(dtype="FP16", quantization="fp16") == ("fp16", None, 1)
    # the format counts TP x PP in the accelerators (GPUs; chips on Neuron) or cores used
    assert read(tp=None, accelerator_count_used=4) == ("bf16", None, 4)
    assert read(tp=None, pp=2, accelerator_count_used=8)[2] == 4
    neuron = dict(instance="ml.trn2.48xlarge", engine_family="neuron-nxd", tp=None)
    assert read(**neuron, accelerator_count_used=16)[2] == 64  # 16 chips x 4 logical cores
    assert read(**neuron, neuron_cores_used=32)[2] == 32
    unknowable = read_row(_gpu_row(tp=None))
    assert isinstance(unknowable, str) and "tp is not stated" in unknowable


def test_a_row_measured_at_a_request_rate_is_predicted_at_that_rate() -> None:
    read = read_row(_gpu_row(concurrency=None, request_rate=6.0, dp_or_copies=2, batch_size=64))
    assert not isinstance(read, str)
    assert read.workload.request_rate == 6.0 and read.workload.concurrency is None  # the system's
    prediction = predict(read.configuration, read.workload)
    assert prediction.requests_per_second == pytest.approx(6.0)
    for change, reason in (
        ({"request_rate": 2.0}, "both concurrency and request_rate"),
        ({"concurrency": None, "request_rate": 2.0, "batch_size": None}, "batch_size is not stated"),
        ({"concurrency": None, "request_rate": float("inf")}, "request_rate is not a positive number"),
    ):
        outcome = read_row(_gpu_row(**change))
        assert isinstance(outcome, str) and reason in outcome, outcome


def test_a_row_without_engine_family_is_predicted_as_its_backend_runs() -> None:
    read = read_row(_gpu_row(engine_family=None, backend="lmi-dist"))
    assert not isinstance(read, str)
    assert predict(read.configuration, read.workload).engine_family == "gpu-vllm"
    read = read_row(_gpu_row(engine_family=None, backend="transformers-neuronx", instance="ml.trn1.32xlarge"))
    assert not isinstance(read, str)
    assert predict(read.configuration, read.workload).engine_family == "neuron-tnx"
    # spellings other sources use: optimum-neuron builds NxD models, trt-llm is TensorRT-LLM
    for backend, instance, family in (
        ("optimum-neuron", "ml.trn1.32xlarge", "neuron-nxd"),
        ("trt-llm", "ml.p5.48xlarge", "gpu-trtllm"),
    ):
        read = read_row(_gpu_row(engine_family=None, backend=backend, instance=instance))
        assert (
            not isinstance(read, str) and predict(read.configuration, read.workload).engine_family == family
        )


# --- the fit -------------------------------------------------------------------------------------


def _script(
    *args: str, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=TIMEOUT_SECONDS,
        env={**os.environ, **(env or {})},
    )


def test_the_fit_script_reproduces_perf_fit_json() -> None:
    measurements = shared_path("reference", "perf_measurements.json")
    result = _script("scripts/fit_perf.py", "--measurements", str(measurements), "--check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "perf_fit.json is what the fit gives" in result.stdout


def test_the_fit_is_the_same_in_processes_with_different_hash_seeds(tmp_path: Path) -> None:
    measurements = shared_path("reference", "perf_measurements.json")
    outputs = []
    for seed in ("1", "4242"):
        output = tmp_path / f"fit-{seed}.json"
        result = _script(
            "scripts/fit_perf.py",
            "--measurements",
            str(measurements),
            "--family",
            "neuron-nxd",
            "--family",
            "gpu-vllm",
            "--output",
            str(output),
            env={"PYTHONHASHSEED": seed},
        )
        assert result.returncode == 0, result.stderr
        outputs.append(output.read_bytes())
    assert outputs[0] == outputs[1]
    fitted = json.loads(outputs[0])["families"]["gpu-vllm"]
    # every fitted row is also predicted by a fit that never saw its source
    left_out = {r["id"] for r in fitted["cross_validation"]["residuals"]}
    assert left_out == {r["id"] for r in fitted["residuals"] if r["split"] == "fitted"}
    assert set(fitted["cross_validation"]["folds"]) == set(fitted["sources"]) and len(fitted["sources"]) > 1


def _slowed_row(slowdown: float, **change: object) -> dict[str, object]:
    """A GPU row (``_gpu_row`` with ``change``, its batch the concurrency) whose figures are the model's own
    prediction times ``slowdown``."""
    base = _gpu_row(**{**change, "concurrency": change.get("batch_size", 8)})
    read = read_row(base)
    assert not isinstance(read, str), read
    predicted = predict(read.configuration, read.workload)
    return {**base, "ttft_ms": predicted.ttft_ms * slowdown, "tpot_ms": predicted.tpot_ms * slowdown}


def _cross_validate(
    tmp_path: Path, rows: list[dict[str, object]], *flags: str
) -> tuple[dict[str, float], str]:
    """``fit_perf.py --cross-validate`` on ``rows`` (gpu-vllm): the fitted errors and what it printed."""
    measurements = tmp_path / "rows.json"
    measurements.write_text(json.dumps(rows), encoding="utf-8")
    result = _script(
        "scripts/fit_perf.py",
        "--measurements",
        str(measurements),
        "--family",
        "gpu-vllm",
        "--output",
        str(tmp_path / "fit.json"),
        "--cross-validate",
        *flags,
    )
    assert result.returncode == 0, result.stderr
    fitted = json.loads((tmp_path / "fit.json").read_text())["families"]["gpu-vllm"]["errors"]["fitted"]
    return {
        f"{name}_mape_percent": figures["mape_percent"] for name, figures in fitted.items() if figures
    }, result.stdout


def test_cross_validation_predicts_each_model_from_a_fit_on_the_others(tmp_path: Path) -> None:
    # model A's figures are what the model predicts; model B's are twice as slow. Fitted on both,
    # the parameters split the difference; left out in turn, each model is predicted from the
    # other alone and misses by half (B) or double (A): the cross-validated error must show it
    rows = [
        _slowed_row(1.0, id=f"A{b}", model="meta-llama/Llama-3.1-8B-Instruct", batch_size=b)
        for b in (1, 8, 32)
    ]
    rows += [_slowed_row(2.0, id=f"B{b}", model="Qwen/Qwen2.5-7B-Instruct", batch_size=b) for b in (1, 8, 32)]
    fitted, stdout = _cross_validate(tmp_path, rows, "--leave-out", "model")
    left_out = next(line for line in stdout.splitlines() if line.startswith("GPU: leave one model out:"))
    found = re.search(r"tpot MAPE ([0-9.]+) %", left_out)
    assert found is not None, left_out
    assert float(found.group(1)) > 60 > fitted["tpot_mape_percent"]
    # every residual is printed, one line per figure
    assert sum(line.startswith("  gpu-vllm fitted") for line in stdout.splitlines()) == 12


def test_the_fit_script_refuses_an_unreadable_file_in_one_line(untouched: Path) -> None:  # noqa: F811
    (untouched / "broken.json").write_text("{not json", encoding="utf-8")
    settle(untouched)
    output = untouched / "fit.json"
    for name, mention in (("broken.json", "cannot read the measurements"), ("missing.json", "missing.json")):
        result = _script(
            str(ROOT / "scripts" / "fit_perf.py"),
            "--measurements",
            name,
            "--output",
            str(output),
            cwd=untouched,
        )
        assert result.returncode == 2, result.stdout + result.stderr
        assert result.stderr.startswith("fit_perf: error:") and mention in result.stderr
        assert "Traceback" not in result.stderr
    assert not output.exists()


def test_a_fit_that_differs_from_the_stored_file_fails_the_check(tmp_path: Path) -> None:
    from lmi_config.knowledge import DATA_DIR

    stored = json.loads((DATA_DIR / "perf_fit.json").read_text(encoding="utf-8"))
    stored["families"]["neuron-nxd"]["parameters"]["step_overhead_ms"]["value"] *= 2  # a hand edit
    edited = tmp_path / "perf_fit.json"
    edited.write_text(json.dumps(stored), encoding="utf-8")
    result = _script(
        "scripts/fit_perf.py",
        "--measurements",
        str(shared_path("reference", "perf_measurements.json")),
        "--family",
        "neuron-nxd",
        "--output",
        str(edited),
        "--check",
    )
    assert result.returncode == 1 and "differs from a fresh fit: ['neuron-nxd']" in result.stderr


def test_fitted_parameters_have_a_physical_range() -> None:
    from lmi_config.knowledge.perf_data import fitted_families

    for family, fit in fitted_families().items():
        values = {name: entry["value"] for name, entry in fit["parameters"].items()}
        assert 0 < values["prefill_flops_fraction"] <= 1, family
        assert 0 < values["decode_bandwidth_fraction"] <= 1, family
        assert all(value >= 0 for value in values.values()), family


# --- the accuracy benchmark ----------------------------------------------------------------------


def _gpu_row(**change: object) -> dict[str, object]:
    row: dict[str, object] = {
        "id": "T1",
        "source_group": "test",
        "model": "meta-llama/Llama-3.1-8B-Instruct",
        "hardware": "H100-SXM",
        "instance": "ml.p5.48xlarge",
        "engine_family": "gpu-vllm",
        "tp": 1,
        "pp": 1,
        "batch_size": 8,
        "concurrency": 8,
        "input_tokens": 1024,
        "output_tokens": 512,
        "ttft_ms": 80.0,
        "tpot_ms": 9.0,
        "quality_flags": [],
    }
    row.update(change)
    return row


def _benchmark(*files: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _script(str(ROOT / "benchmarks" / "perf_accuracy.py"), *map(str, files), cwd=cwd)


def test_the_benchmark_ends_with_one_json_summary_and_skips_with_reasons(untouched: Path) -> None:  # noqa: F811
    rows = [
        _gpu_row(),
        _gpu_row(id="T2", tp=2, tpot_ms=6.0),
        _gpu_row(id="T3", batch_size=64, concurrency=64, tpot_ms=14.0, ttft_ms=None),
        _gpu_row(id="T4", model="nobody/NoSuchModel-7B"),
        "not a row",
    ]
    # a file of the same format may lack columns: T5 has no ttft_ms, engine_family or quality_flags
    # at all (its backend says how it runs)
    bare = {
        k: v
        for k, v in _gpu_row(id="T5", tp=4, tpot_ms=5.0, backend="vllm").items()
        if k not in ("ttft_ms", "quality_flags", "engine_family")
    }
    rows.append(bare)
    measurements = untouched / "rows.json"
    measurements.write_text(json.dumps({"rows": rows}), encoding="utf-8")
    settle(untouched)
    result = _benchmark(measurements, cwd=untouched)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    summary = json.loads(lines[-1])
    assert set(summary) == SUMMARY_KEYS
    assert summary["rows"] == 6 and summary["skipped"] == 2
    assert summary["throughput_mape"] is None  # no row measures it
    assert all(isinstance(summary[key], float) for key in ("ttft_mape", "tpot_mape", "pair_order_agreement"))
    text = result.stdout
    assert "gpu-vllm:" in text and "T1 meta-llama/Llama-3.1-8B-Instruct" in text
    assert "None:" not in text  # T5 is grouped with the family its backend runs as
    assert "not in the offline catalog" in text and "T4" in text
    assert "must be a JSON object" in text and "row 5" in text
    assert any(line.startswith("GPU:") for line in lines) and any(
        line.startswith("Neuron:") for line in lines
    )
    # the measured TPOT order of T1 > T2 > T5 (TP 1, 2, 4) is kept; T3's larger batch is slower
    assert summary["pair_order_agreement"] == 100.0


def _neuron_row(**change: object) -> dict[str, object]:
    row: dict[str, object] = {
        "id": "N1",
        "source_group": "neuron-perf-page",
        "model": "meta-llama/Llama-2-70b-hf",
        "hardware": "inf2.48xlarge",
        "instance": "ml.inf2.48xlarge",
        "engine_family": "neuron-tnx",
        "neuron_sdk_version": "2.18.0",
        "tp": 24,
        "batch_size": 1,
        "input_tokens": 256,
        "output_tokens": 256,
        "max_seq_len": 512,
        "dtype": "fp16",
        "tpot_ms": 33.1,
        "throughput_output_tokens_per_s": 29.9,
    }
    row.update(change)
    return row


def test_a_row_measured_again_with_a_newer_neuron_sdk_is_shown_but_not_scored(untouched: Path) -> None:  # noqa: F811
    # the same configuration measured three times slower with an older SDK: the model predicts
    # current software, so the old figures are printed with their error and left out of the MAPE
    old = _neuron_row(id="N0", neuron_sdk_version="2.17.0", tpot_ms=99.3, throughput_output_tokens_per_s=10.0)
    measurements = untouched / "rows.json"
    measurements.write_text(json.dumps([old, _neuron_row()]), encoding="utf-8")
    settle(untouched)
    result = _benchmark(measurements, cwd=untouched)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    summary = json.loads(lines[-1])
    assert summary["rows"] == 2 and summary["skipped"] == 1
    assert any(line.startswith("skipped 1 (superseded") and line.endswith(": N0") for line in lines)
    superseded = lines.index("superseded rows, predicted but not scored:")
    assert lines[superseded + 1].startswith("  N0 meta-llama/Llama-2-70b-hf")
    alone = json.loads(_benchmark_of([_neuron_row()], untouched).strip().splitlines()[-1])
    assert summary["tpot_mape"] == alone["tpot_mape"] < 20
    # without the newer row, the old one is the current measurement and is scored
    only_old = json.loads(_benchmark_of([old], untouched).strip().splitlines()[-1])
    assert only_old["skipped"] == 0 and only_old["tpot_mape"] > 50


def _benchmark_of(rows: list[dict[str, object]], directory: Path) -> str:
    measurements = directory / "rows.json"
    measurements.write_text(json.dumps(rows), encoding="utf-8")
    settle(directory)
    result = _benchmark(measurements, cwd=directory)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_benchmark_mape_is_computed_against_each_figure(untouched: Path) -> None:  # noqa: F811
    measurements = untouched / "rows.json"
    measurements.write_text(json.dumps([_gpu_row()]), encoding="utf-8")
    settle(untouched)
    first = json.loads(_benchmark(measurements, cwd=untouched).stdout.strip().splitlines()[-1])
    configuration = read_row(_gpu_row())
    assert not isinstance(configuration, str)
    predicted = predict(configuration.configuration, configuration.workload)
    assert first["tpot_mape"] == round(100 * abs(predicted.tpot_ms - 9.0) / 9.0, 1)
    assert first["ttft_mape"] == round(100 * abs(predicted.ttft_ms - 80.0) / 80.0, 1)
    assert first["pair_order_agreement"] is None  # one row: no pair


@pytest.mark.parametrize(
    ("content", "mention"),
    [
        (None, "rows.json"),
        ("{not json", "cannot read the measurements"),
        ('{"rows": 5}', "expected a JSON list of rows"),
        ("[" * 5000 + "]" * 5000, "nested 5000 levels deep"),
        ('{"rows": [{"tp": ' + "9" * 5000 + "}]}", "cannot read the measurements"),
        (b"\xff\xfe\x00rows", "not UTF-8"),
    ],
)
def test_the_benchmark_refuses_an_unusable_file_naming_it(
    untouched: Path,  # noqa: F811
    content: str | bytes | None,
    mention: str,
) -> None:
    measurements = untouched / "rows.json"
    if isinstance(content, bytes):
        measurements.write_bytes(content)
    elif content is not None:
        measurements.write_text(content, encoding="utf-8")
    settle(untouched)
    result = _benchmark(measurements, cwd=untouched)
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("perf_accuracy: error:") and "rows.json" in result.stderr
    assert mention in result.stderr
    assert len(result.stderr) < 2000 and not result.stdout


def test_the_benchmark_refuses_a_directory_and_a_fifo_nothing_writes_to(untouched: Path) -> None:  # noqa: F811
    (untouched / "a-directory").mkdir()
    os.mkfifo(untouched / "a-fifo")
    settle(untouched)
    for name, mention in (("a-directory", "is a directory"), ("a-fifo", "FIFO")):
        result = _benchmark(untouched / name, cwd=untouched)
        assert result.returncode == 2, result.stdout[-500:]
        assert result.stderr.startswith("perf_accuracy: error:") and name in result.stderr
        assert mention in result.stderr and "Traceback" not in result.stderr


def test_hostile_values_in_rows_are_skipped_or_shown_short_never_a_traceback(untouched: Path) -> None:  # noqa: F811
    long = "x" * 3_000_000
    rows = [
        _gpu_row(id="H1", hardware=["H100"], source_group={"a": 1}),  # unhashable, still predicted
        _gpu_row(id="H2", model=long),
        _gpu_row(id="H3", instance=long),
        _gpu_row(id="H4", engine_family=["gpu-vllm"]),
        _gpu_row(id=long, tpot_ms=float("inf")),
        _gpu_row(id="H6", quality_flags=5),
    ]
    measurements = untouched / "rows.json"
    measurements.write_text(json.dumps(rows), encoding="utf-8")
    settle(untouched)
    result = _benchmark(measurements, cwd=untouched)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert len(result.stdout) < 20_000, "a value from the file is never echoed whole"
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["rows"] == 6 and summary["skipped"] == 4
    assert "unknown instance" in result.stdout and "not in the offline catalog" in result.stdout


def test_the_benchmark_on_a_closed_pipe_or_a_full_disk_is_one_line_and_exit_2(untouched: Path) -> None:  # noqa: F811
    measurements = untouched / "rows.json"
    measurements.write_text(json.dumps([_gpu_row()]), encoding="utf-8")
    settle(untouched)
    with open("/dev/full", "wb") as full:
        completed = subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / "perf_accuracy.py"), str(measurements)],
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=TIMEOUT_SECONDS,
        )
    assert completed.returncode == 2
    assert completed.stderr.decode().startswith("perf_accuracy: error:")
    assert "No space left on device" in completed.stderr.decode() and b"Traceback" not in completed.stderr
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks" / "perf_accuracy.py"), str(measurements)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before anything is written (`| head -0`)
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=TIMEOUT_SECONDS) == 2
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    assert "Broken pipe" in stderr


def test_aiconfigurator_rows_the_development_data_does_not_carry_are_scored_as_never_fitted() -> None:
    # benchmarks/aiconfigurator_perf.json (scripts/gen_aiconfigurator_perf_rows.py): the rest of the
    # file the development data samples -- none of its rows, so every figure is one the fit never saw
    measurements = ROOT / "benchmarks" / "aiconfigurator_perf.json"
    development = json.loads(shared_path("reference", "perf_measurements.json").read_text(encoding="utf-8"))
    cited = {
        _silicon_id(row) for row in development["rows"] if row.get("source_group") == "aiconfigurator-silicon"
    }
    rows = json.loads(measurements.read_text(encoding="utf-8"))["rows"]
    ids = {_silicon_id(row) for row in rows}
    assert len(ids) == len(rows) and not ids & cited
    result = _benchmark(measurements, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    summary = json.loads(lines[-1])
    assert summary["rows"] == len(rows) and 0 < summary["skipped"] < summary["rows"]
    assert any(line.startswith("  GPU rows the fit never saw:") for line in lines)
    # a pre-quantized MoE copy is predicted as its base model; models the memory model cannot size are not
    assert any(line.startswith("  GPU aiconfigurator-silicon Qwen/Qwen3-235B-A22B-FP8:") for line in lines)
    assert any("openai/gpt-oss-120b" in line and line.startswith("skipped") for line in lines)


def _silicon_id(row: dict[str, Any]) -> str:
    """The silicon_sample.csv row id a row cites ("line N (id ...)")."""
    found = re.search(r"\(id (\S+)\)", row["source"]["line_or_row"])
    assert found is not None, row["id"]
    return found.group(1)


def test_the_benchmark_on_the_development_data_reports_neuron_and_gpu() -> None:
    result = _benchmark(shared_path("reference", "perf_measurements.json"), cwd=ROOT)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    summary = json.loads(lines[-1])
    # 24 rows the model cannot predict (7 of them continuous batching at an unstated concurrency), 22
    # measured again with a newer Neuron SDK; nvidia's FP8 copy of Llama-3.1-8B is predicted as that model
    assert summary["rows"] == 273 and summary["skipped"] == 46
    assert any(
        line.startswith("  GPU aiconfigurator-silicon nvidia/Llama-3.1-8B-Instruct-FP8: 10 rows")
        for line in lines
    )
    for group in ("Neuron:", "GPU:"):
        assert any(line.startswith(group) for line in lines)
    # the headline: every source predicted by a fit that never saw it, per family and metric
    headline = lines.index(
        "leave one source out (the headline): every row predicted by a fit that never saw its source"
    )
    assert any(line.split()[:2] == ["neuron-tnx", "tpot"] for line in lines[headline : headline + 14])
    assert set(summary["left_out"]) == {"neuron-tnx", "neuron-nxd", "gpu-vllm", "gpu-trtllm"}
    # the error per source and model, where a group's residuals come from
    assert any(line.startswith("  GPU aiconfigurator-silicon Qwen/Qwen3-32B: 45 rows") for line in lines)
    assert any(line.startswith("  Neuron neuron-perf-page facebook/opt-66b: 2 rows") for line in lines)
    assert all(math.isfinite(summary[key]) for key in SUMMARY_KEYS - {"left_out", "development_fit"})


def test_a_continuous_batching_row_without_its_concurrency_is_skipped_not_guessed() -> None:
    # aiconfigurator's dynamo rows (P177-P180, P202-P204) give the engine's batch size but no concurrency:
    # under continuous batching that bounds the engine, it does not say how loaded it was
    from lmi_config.perf.measured import read_row

    reason = read_row(_gpu_row(concurrency=None))
    assert isinstance(reason, str) and "concurrency" in reason and "not stated" in reason
    assert not isinstance(read_row(_gpu_row()), str)
    # a Neuron performance page measures a static batch: the batch is the load
    static = _gpu_row(
        concurrency=None,
        source_group="neuron-perf-page",
        engine_family="neuron-tnx",
        hardware="inf2.48xlarge",
        instance="ml.inf2.48xlarge",
        tp=24,
    )
    assert not isinstance(read_row(static), str)


@pytest.mark.parametrize("caveat", measured_caveats(), ids=lambda caveat: caveat["on"])
def test_a_measured_caveat_states_how_far_its_rows_are_from_the_model_today(
    caveat: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # data/perf_caveats.json states how far measured runs were from the figures; a change to the
    # model moves that distance, and the data must move with it: recompute it without the caveat
    import lmi_config.perf.model as model

    monkeypatch.setattr(model, "measured_caveats", lambda: [])
    ratios: dict[str, list[float]] = {"ttft": [], "tpot": []}
    for row in json.loads((ROOT / caveat["rows"]).read_text(encoding="utf-8"))["rows"]:
        read = read_row(row)
        if isinstance(read, str) or not read.configuration.arch.num_experts:
            continue
        # scored as the accuracy benchmark scores it: with what the fit says its harness adds
        family = engine_family(read.configuration.backend, read.configuration.instance)
        prediction = predict(
            read.configuration, read.workload, harness=fitted_harness(family, harness_of(row))
        )
        assert prediction.engine_family in caveat["families"]
        ratios["ttft"].append(row["ttft_ms"] / prediction.ttft_ms)
        ratios["tpot"].append(row["tpot_ms"] / prediction.tpot_ms)
    for metric, found in ratios.items():
        assert len(found) >= 8, metric
        if caveat["statistic"] == "min-max":
            low, high = min(found), max(found)
        else:
            deciles = statistics.quantiles(found, n=10)
            low, high = deciles[0], deciles[-1]
        stated = caveat[f"{metric}_ratio"]
        assert low == pytest.approx(stated[0], rel=0.05) and high == pytest.approx(stated[1], rel=0.05), (
            metric,
            round(low, 2),
            round(high, 2),
        )


def test_nvfp4_weights_run_fp4_gemms_on_blackwell_and_16_bit_ones_on_hopper() -> None:
    # a B200 multiplies FP4 at twice its FP8 rate (perf_devices.json); an H100 has no FP4 tensor cores,
    # so vLLM dequantizes to 16 bits there. Either way the weights read are 4.5 bits, not 8
    def figures(instance: str, dtype: str) -> tuple[float, float]:
        row = _gpu_row(model="meta-llama/Llama-3.1-70B-Instruct", instance=instance, tp=4, dtype=dtype)
        read = read_row(row)
        assert not isinstance(read, str), read
        prediction = predict(read.configuration, read.workload)
        return prediction.ttft_ms, prediction.tpot_ms

    stated = read_row(_gpu_row(instance="ml.p6-b200.48xlarge", dtype="fp4"))
    assert not isinstance(stated, str) and stated.configuration.quantization == "modelopt_fp4"
    (fp4_ttft, fp4_tpot), (fp8_ttft, fp8_tpot) = (
        figures("ml.p6-b200.48xlarge", "fp4"),
        figures("ml.p6-b200.48xlarge", "fp8"),
    )
    assert fp4_ttft < fp8_ttft and fp4_tpot < fp8_tpot
    (hopper_fp4_ttft, hopper_fp4_tpot), (hopper_fp8_ttft, hopper_fp8_tpot) = (
        figures("ml.p5.48xlarge", "fp4"),
        figures("ml.p5.48xlarge", "fp8"),
    )
    assert hopper_fp4_ttft > hopper_fp8_ttft and hopper_fp4_tpot < hopper_fp8_tpot


def _baseline_script(*args: str) -> subprocess.CompletedProcess[str]:
    return _script(str(ROOT / "benchmarks" / "perf_baseline.py"), *args)


def test_the_baseline_benchmark_scores_both_tools_on_the_rows_both_predict(tmp_path: Path) -> None:
    # three measured GPU rows; the baseline predicts two of them: 1.5x the TTFT, and 0.8x and 0.3x the
    # TPOT -- which reverses which of the two decodes faster (measured 10.6 and 25.6 ms)
    development = json.loads(shared_path("reference", "perf_measurements.json").read_text(encoding="utf-8"))
    chosen = [row for row in development["rows"] if row["id"] in ("P188", "P192", "P223")]
    assert len(chosen) == 3
    measurements = tmp_path / "rows.json"
    measurements.write_text(json.dumps({"rows": chosen}), encoding="utf-8")
    entries: list[dict[str, Any]] = [
        {"id": row["id"], "ttft_ms": 1.5 * row["ttft_ms"], "tpot_ms": factor * row["tpot_ms"]}
        for row, factor in zip(chosen[:2], (0.8, 0.3), strict=True)
    ]
    entries.append({"id": chosen[2]["id"], "skipped": "OOM"})
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"estimator": "a tool", "rows": entries}), encoding="utf-8")
    result = _baseline_script("--baseline", str(baseline), str(measurements))
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["rows"] == 2 and summary["only_lmi_config"] == 1 and summary["only_baseline"] == 0
    assert summary["baseline_ttft_mape"] == 50.0 and summary["baseline_tpot_mape"] == 45.0
    assert summary["baseline_tpot_order"] == 0.0
    # lmi-config's error on those two rows is the accuracy benchmark's on them
    both = tmp_path / "both.json"
    both.write_text(json.dumps({"rows": chosen[:2]}), encoding="utf-8")
    accuracy = json.loads(_benchmark(both, cwd=ROOT).stdout.strip().splitlines()[-1])
    assert summary["lmi_config_ttft_mape"] == accuracy["ttft_mape"]
    assert summary["lmi_config_tpot_mape"] == accuracy["tpot_mape"]
    assert summary["lmi_config_tpot_order"] == accuracy["pair_order_agreement"] == 100.0
    assert "lmi-config vs a tool" in result.stdout


def test_the_baseline_benchmark_refuses_an_unreadable_baseline(tmp_path: Path) -> None:
    broken = tmp_path / "baseline.json"
    broken.write_text("{not json", encoding="utf-8")
    for path in (broken, tmp_path / "absent.json"):
        result = _baseline_script("--baseline", str(path))
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert result.stderr.startswith("perf_baseline: error:") and path.name in result.stderr


def test_the_committed_baseline_names_measured_rows_by_the_silicon_row_they_cite() -> None:
    # benchmarks/aiconfigurator_baseline.json (scripts/gen_aiconfigurator_baseline.py) must describe the
    # rows the measurement files hold now: same ids, same aiconfigurator silicon_sample row
    cited = {}
    for path in (
        shared_path("reference", "perf_measurements.json"),
        ROOT / "benchmarks" / "aiconfigurator_perf.json",
    ):
        for row in json.loads(path.read_text(encoding="utf-8"))["rows"]:
            if row.get("source_group") == "aiconfigurator-silicon":
                cited[row["id"]] = _silicon_id(row)
    baseline = json.loads((ROOT / "benchmarks" / "aiconfigurator_baseline.json").read_text(encoding="utf-8"))
    entries = {entry["id"]: entry for entry in baseline["rows"]}
    assert entries.keys() == cited.keys()
    assert all(entries[key]["silicon_id"] == cited[key] for key in cited)
    assert all(("ttft_ms" in entry) != ("skipped" in entry) for entry in entries.values())
