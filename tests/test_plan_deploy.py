"""A plan a user would deploy (issue 32): across instance types the default ranks by $/M output tokens
at SageMaker prices within a printed latency target; a price from another list is shown apart;
latency without a concurrency is one request at a time; the batch column says what runs at once;
every figure carries its cross-validated error, and rows within it are called a tie."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import run_cli

from lmi_config.knowledge.instances import resolve_instance
from lmi_config.plan import PlanRequest, PlanWorkload, plan_model

LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"


def _plan(*arguments: str) -> dict[str, Any]:
    result = run_cli("plan", "--model", LLAMA_8B, *arguments, "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_default_plan_over_every_instance_type_tops_with_a_single_gpu_at_its_sagemaker_price() -> None:
    document = _plan()
    assert document["objective"] == "cost"
    target = document["workload"]["latency_target"]
    assert target == {"ttft_ms": 2000, "tpot_ms": 100}
    top = document["candidates"][0]
    instance = resolve_instance(top["instance"])
    assert instance.accelerator == "gpu" and instance.num_cores == 1
    assert top["price_kind"] == "sagemaker" and not top["price_stand_in"]
    assert (
        top["predicted"]["ttft_ms"] <= target["ttft_ms"] and top["predicted"]["tpot_ms"] <= target["tpot_ms"]
    )
    text = run_cli("plan", "--model", LLAMA_8B).stdout
    assert "default target TTFT 2000 ms and TPOT 100 ms" in text and "objective cost (the default" in text


def test_within_one_instance_type_the_default_is_throughput_per_instance() -> None:
    document = _plan("--instance", "ml.inf2.48xlarge")
    assert document["objective"] == "throughput"


def test_a_row_priced_from_another_list_is_shown_apart_and_never_ranked_against_sagemaker_prices() -> None:
    document = _plan("--family", "g5", "--family", "g6e", "--top", "0")
    ranked = [c for c in document["candidates"] if c["feasible"]]
    kinds = [c["price_stand_in"] for c in ranked]
    assert True in kinds and False in kinds
    assert kinds == sorted(kinds)  # every SageMaker-priced row before any stand-in
    text = run_cli("plan", "--model", LLAMA_8B, "--family", "g5", "--family", "g6e", "--top", "0").stdout
    lines = text.splitlines()
    apart = next(i for i, line in enumerate(lines) if "priced only from another list" in line)
    assert all(" g6e." not in line for line in lines[:apart])
    assert "EC2 price" in lines[apart + 1]


def test_the_price_notes_name_only_instance_types_the_plan_lists() -> None:
    document = _plan("--top", "3")
    shown = {c["instance"] for c in document["candidates"]}
    for note in document["notes"]:
        if note.startswith("prices:"):
            named = note.split(" for ", 1)[1].split(";", 1)[0].split(", ")
            assert set(named) <= shown, (named, shown)


def test_latency_without_a_concurrency_ranks_by_the_tpot_of_one_request() -> None:
    default = _plan("--family", "g5", "--objective", "latency", "--top", "0")
    alone = _plan("--family", "g5", "--objective", "latency", "--concurrency", "1", "--top", "0")
    assert default["workload"]["concurrency"] == 1  # the workload as ranked
    assert any("one request at a time" in note for note in default["notes"])

    def order(document: dict[str, Any]) -> list[tuple[str, int, int]]:
        return [(c["instance"], c["tensor_parallel_degree"], c["batch_size"]) for c in document["candidates"]]

    assert order(default) == order(alone)
    clean = [c for c in default["candidates"] if c["feasible"] and not c["warnings"] and c["predicted"]]
    assert all(c["predicted"]["running_sequences"] == 1 for c in clean)
    tpots = [c["predicted"]["tpot_ms"] for c in clean if c["tie_with_rank"] is None][1:]
    assert tpots == sorted(tpots)


def test_the_batch_column_shows_what_the_kv_cache_admits_when_fewer_than_the_batch() -> None:
    document = _plan("--instance", "ml.g5.xlarge", "--top", "1")
    top = document["candidates"][0]
    held = top["kv_cache_sequences"]
    assert held is not None and held < top["batch_size"]
    assert top["predicted"]["running_sequences"] == held
    text = run_cli("plan", "--model", LLAMA_8B, "--instance", "ml.g5.xlarge", "--top", "1").stdout
    row = next(line for line in text.splitlines() if " g5.xlarge " in line)
    assert f"{top['batch_size']} ({held})" in row


@pytest.mark.parametrize(
    "families", [("g6e",), ("inf2",), ("g5", "g6e", "p4d")], ids=lambda families: "+".join(families)
)
def test_no_row_over_the_latency_target_tops_one_within_it_unless_the_target_is_removed(
    families: tuple[str, ...],
) -> None:
    request = PlanRequest(
        model="meta-llama/Llama-3.1-70B-Instruct", families=families, objective="throughput", top=0
    )
    result = plan_model(request)
    ranked = [c for c in result.candidates if c.feasible and not c.warnings and c.figures is not None]
    within = [c for c in ranked if not c.target_misses]
    over = [c for c in ranked if c.target_misses]
    assert within and ranked[: len(within)] == within
    if over:
        removed = plan_model(
            PlanRequest(
                model=request.model,
                families=families,
                objective="throughput",
                top=1,
                workload=PlanWorkload(latency_target=False),
            )
        )
        assert removed.candidates[0].target_misses == ()  # no target: nothing is over it
        assert removed.candidates[0].figures is not None
        assert (
            removed.candidates[0].figures.output_tokens_per_second
            >= ranked[0].figures.output_tokens_per_second
        )


def test_every_figure_carries_its_interval_and_rows_within_it_tie_with_a_measurement_named() -> None:
    document = _plan("--family", "inf2", "--top", "10")
    figures = document["candidates"][0]["predicted"]
    for key in ("ttft_ms", "tpot_ms", "output_tokens_per_second"):
        low, high = figures["intervals"][key]
        assert low < figures[key] < high or low <= figures[key] <= high
    ties = [c for c in document["candidates"] if c["tie_with_rank"] == 1]
    note = next((n for n in document["notes"] if n.startswith("tie:")), None)
    assert ties and note is not None
    assert "lmi-config search" in note and "load test" in note
    text = run_cli("plan", "--model", LLAMA_8B, "--family", "inf2", "--top", "10").stdout
    assert "tie with #1 (within the model's error)" in text
    assert "note: error (neuron-tnx): 8 of 10 measurements fell within" in text
