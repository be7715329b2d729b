"""The planner's bound on running sequences is vLLM's CUDA-graph capture bound for the image's vLLM
version, generated from each version's code (``scripts/gen_vllm_limits.py`` →
``data/vllm_cuda_graphs.json``), not a constant in a module (issue 18)."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import ROOT, run_cli

from lmi_config.knowledge import load_data
from lmi_config.knowledge.engine_limits import cuda_graph_bound

sys.path.insert(0, str(ROOT / "scripts"))

import gen_vllm_limits as generator  # noqa: E402

SMALL_MODEL = "Qwen/Qwen2.5-0.5B"  # a KV cache that holds far more requests than any capture bound


def _bound(sources: dict[str, str]) -> dict:
    return generator.cuda_graph_bound(sources, "9.9.9")


def test_the_generator_reads_each_form_the_bound_takes_and_names_its_line() -> None:
    scheduler = "class SchedulerConfig:\n    def post_init(self):\n        self.sizes = [min(self.max_num_seqs * 2, 640)]\n"
    found = _bound({"vllm/config/scheduler.py": scheduler})
    assert found["max_capture_batch"] == 640 and found["rule"] == "min(2 x max_num_seqs, 640)"
    assert found["source"] == "https://github.com/vllm-project/vllm/blob/v9.9.9/vllm/config/scheduler.py#L3"
    speculative = (
        "def f(config, decode_query_len):\n    return min(config.max_num_seqs * decode_query_len * 2, 384)\n"
    )
    found = _bound({"vllm/config/vllm.py": speculative})
    assert found["max_capture_batch"] == 384 and "decode_query_len" in found["rule"]
    fixed = "def g(self):\n    batch_size_capture_list = [1, 2, 4] + [i for i in range(8, 257, 8)]\n"
    found = _bound({"vllm/config.py": fixed})
    assert (
        found["max_capture_batch"] == 256 and "V1 engine" in found["rule"] and found["source"].endswith("#L2")
    )
    aligned = "_BATCH_SIZE_ALIGNMENT = 16\n_BATCH_SIZES_TO_CAPTURE = [1, 2, 4] + [\n    _BATCH_SIZE_ALIGNMENT * i for i in range(1, 9)\n]\n"
    found = _bound({"vllm/worker/model_runner.py": aligned})
    assert found["max_capture_batch"] == 128 and found["source"].endswith("#L2")


def test_a_version_that_states_no_bound_is_recorded_as_such_never_guessed() -> None:
    only_prose = 'def h():\n    """The default is min(max_num_seqs * 2, 512)."""\n    return None\n'
    found = _bound({"vllm/config/vllm.py": only_prose})
    assert found["max_capture_batch"] is None and "not stated" in found["rule"]
    assert found["source"] == "https://github.com/vllm-project/vllm/tree/v9.9.9"


def test_every_vllm_version_an_image_ships_has_its_bound_or_says_it_has_none() -> None:
    versions = load_data("vllm_engine_args.json")["versions"]
    table = load_data("vllm_cuda_graphs.json")["versions"]
    assert set(table) == set(versions)
    for version, row in table.items():
        assert f"/v{version}/" in row["source"]
        if row["max_capture_batch"] is not None:
            assert "#L" in row["source"] and str(row["max_capture_batch"]) in row["rule"]
    # where the bound moved between versions: a model runner list, a config list, the scheduler, the config
    assert table["0.4.2"]["source"].split("/v0.4.2/")[1].startswith("vllm/worker/model_runner.py")
    assert table["0.10.2"]["source"].split("/v0.10.2/")[1].startswith("vllm/config/scheduler.py")
    assert table["0.11.1"]["source"].split("/v0.11.1/")[1].startswith("vllm/config/vllm.py")


def test_a_version_without_a_statement_takes_the_nearest_older_one_and_says_so() -> None:
    exact = cuda_graph_bound("0.10.2")
    assert exact is not None and exact.stated_by_version and exact.max_capture_batch == 512
    newer = cuda_graph_bound("0.10.3")  # not listed: the nearest older listed version that states one
    assert newer is not None and newer.version == "0.10.2" and not newer.stated_by_version
    assert cuda_graph_bound("0.3.0") is None and cuda_graph_bound(None) is None


@pytest.mark.parametrize(
    ("lmi_version", "vllm_version"),
    [("0.28.0", "0.4.2"), ("0.30.0", "0.6.2"), ("0.34.0", "0.10.2"), ("0.36.0", "0.23.0")],
)
def test_plan_caps_the_vllm_batch_at_the_bound_of_the_images_vllm_version(
    lmi_version: str, vllm_version: str
) -> None:
    result = run_cli(
        "plan", "--model", SMALL_MODEL, "--instance", "ml.g5.12xlarge", "--backend", "vllm",
        "--lmi-version", lmi_version, "--format", "json", "--top", "3",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["candidates"]
    bound = cuda_graph_bound(vllm_version)
    assert bound is not None and rows
    for row in rows:
        assert row["batch_size"] <= max(bound.max_capture_batch, 256)  # 256: the container's default
    if bound.max_capture_batch > 256:
        # the KV cache holds more than the bound: the batch is the bound, and the reason cites it
        capped = [row for row in rows if row["batch_size"] == bound.max_capture_batch]
        assert capped or bound.max_capture_batch > 2048
        for row in capped:
            assert f"vLLM {vllm_version}" in json.dumps(row)


def test_a_tensorrt_llm_plan_is_not_capped_by_vllms_cuda_graphs() -> None:
    # the TensorRT-LLM image runs no vLLM: its engine is built for max_batch_size = max_rolling_batch_size
    # (trt_llm_partition.py, LMI 0.33), so only the KV cache and its tokens per step bound the batch
    result = run_cli(
        "plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--instance", "ml.p4d.24xlarge",
        "--backend", "tensorrt-llm", "--lmi-version", "0.33.0", "--format", "json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["candidates"]
    assert rows and not any("CUDA graph" in row["batch_reason"] for row in rows)
    widest = max(rows, key=lambda row: row["tensor_parallel_degree"])
    assert widest["batch_size"] > 512  # TP 8 holds about 1,600 requests of the default workload
