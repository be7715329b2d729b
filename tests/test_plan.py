"""``lmi-config plan``: what it ranks, what it calls feasible (the judge's verdict), the known-good
configurations of the reference, and what it writes (render specs, cache-config files)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import load_shared_json, run_cli

from lmi_config.api import plan_specs, render
from lmi_config.errors import PlanningError
from lmi_config.plan import PlanRequest, plan_model, rank_key
from lmi_config.spec import load_spec

MISTRAL = "mistralai/Mistral-7B-Instruct-v0.2"
TRUTH = load_shared_json("reference", "ground_truth.json")
# Hub-cache entry that cannot fit by arithmetic (30.5B parameters in bf16 on 2 NeuronCores of 16 GiB),
# as in test_ground_truth.py
IMPOSSIBLE = {("Qwen/Qwen3-30B-A3B-Instruct-2507", "inf2.8xlarge")}
# Rows from a standalone NxD Inference tutorial whose model type the LMI image's transformers cannot read.
NEWER_THAN_THE_IMAGE = {("Qwen/Qwen3-235B-A22B", "trn2.48xlarge")}
# Rows the judge puts at the edge: under 5 % headroom, "within the estimate's error" (a warning).
# Planning inside the estimate's error is what render's auto refuses, so plan does not call them
# feasible; --all lists them with memory-headroom-low. A change of the model shows up here.
AT_THE_EDGE = {
    ("facebook/opt-13b", "inf2.8xlarge"),
    ("meta-llama/Llama-3.1-405B-Instruct", "trn2.48xlarge"),
    ("Qwen/Qwen3-235B-A22B", "trn2.48xlarge"),
}


def _plan_json(*args: str) -> dict:
    result = run_cli("plan", *args, "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_seed_case_ranks_tp2_first_and_lists_tp1_as_infeasible() -> None:
    document = _plan_json("--model", MISTRAL, "--instance", "ml.inf2.8xlarge", "--all")
    candidates = document["candidates"]
    assert candidates[0]["tensor_parallel_degree"] == 2 and candidates[0]["feasible"]
    tp1 = [c for c in candidates if c["tensor_parallel_degree"] == 1]
    # TP 1 fails on the hardware: the judge refuses it or puts it at the edge of its estimate,
    # ranked after every clean TP 2 row
    assert tp1 and all(not c["feasible"] or c["warnings"] == ["memory-headroom-low"] for c in tp1)
    clean = [c["rank"] for c in candidates if c["feasible"] and not c["warnings"]]
    assert all(c["rank"] is None or c["rank"] > max(clean) for c in tp1)
    assert {slug for c in tp1 for slug in c["blocked_by"]} <= {"memory-exceeds-budget", "memory-headroom-low"}
    assert all(c["per_device"]["peak_gib"] > 15 for c in tp1)  # one core cannot hold 14.5 GB of weights
    ranked = [c for c in candidates if c["feasible"]]
    assert [c["rank"] for c in ranked] == list(range(1, len(ranked) + 1))
    assert all(c["rank"] is None for c in candidates if not c["feasible"])
    expected = {
        "instance",
        "tensor_parallel_degree",
        "batch_size",
        "sequence_length",
        "feasible",
        "per_device",
        "reason",
    }
    assert expected <= set(candidates[0]) and {"unit", "peak_gib", "budget_gib", "headroom_fraction"} <= set(
        candidates[0]["per_device"]
    )


def _rows():
    for row in TRUTH["known_good"]:
        model = row["model_id"].split(" ")[0]
        text = row["instance_type"].replace("(CI)", "")
        instances = (
            ["trn1.32xlarge"]
            if text.startswith("any with >=32")
            else re.findall(r"(?:inf2|trn1n?|trn2)\.\d*x?large", text)
        )
        for instance in instances:
            if (model, instance) not in IMPOSSIBLE:
                yield model, instance, row


def _request(model: str, instance: str, row: dict, **changes) -> PlanRequest:
    lowered, dtype_text = row["backend"].lower(), (row.get("dtype") or "").lower()
    backend = "nxdi" if "nxd" in lowered else "transformers-neuronx"
    options = [("enable_chunked_prefill", "true")] if "chunked prefill" in lowered else []
    if "weights int8" in dtype_text and backend != "nxdi":
        options.append(("quantize", "static_int8"))
    dtype = (
        "fp16"
        if "fp16 model" in dtype_text or dtype_text in ("f16", "fp16")
        else "fp32"
        if "f32" in dtype_text
        else "bf16"
    )
    fields = dict(
        model=model,
        instances=(instance,),
        backend=backend,
        lmi_version="0.34.0" if backend == "nxdi" else "0.30.0",
        dtype=dtype,
        options=tuple(options),
        min_sequence_length=row["sequence_length"],
        min_batch_size=row["batch_size"],
        top=0,
        # an optimum-neuron export (its cache, its CI) is judged by the exporter's registry, not the LMI image's
        optimum_neuron_export="optimum" in lowered,
    )
    fields.update(changes)
    return PlanRequest(**fields)


@pytest.mark.parametrize(
    ("model", "instance", "row"), list(_rows()), ids=lambda value: value if isinstance(value, str) else ""
)
def test_known_good_rows_are_planned_as_feasible_or_dominated(model: str, instance: str, row: dict) -> None:
    copies = {
        "inf2.48xlarge": 24,
        "inf2.24xlarge": 12,
        "inf2.8xlarge": 2,
        "inf2.xlarge": 2,
        "trn1.32xlarge": 32,
        "trn1.2xlarge": 2,
        "trn2.48xlarge": 64,
    }
    served = copies[instance] // row["tp_degree"] * row["batch_size"]
    if (model, instance) in NEWER_THAN_THE_IMAGE:
        # ran with a standalone NxD Inference newer than the LMI image's: plan refuses it for the image
        # (its transformers 4.45.2 has no qwen3_moe), and its memory is judged as an export's
        with pytest.raises(PlanningError, match="does not know that model type"):
            plan_model(_request(model, instance, row))
        result = plan_model(_request(model, instance, row, optimum_neuron_export=True))
    else:
        result = plan_model(_request(model, instance, row))
    dominating = [
        c
        for c in result.feasible
        if c.instance == instance and c.sequence_length >= row["sequence_length"] and c.concurrency >= served
    ]
    assert dominating, f"{model} on {instance}: nothing serves {served} x {row['sequence_length']} tokens"
    if (model, instance) in AT_THE_EDGE:
        # the estimate puts these within its error: feasible with the warning, ranked after clean ones
        edge = [c for c in dominating if c.warnings == ("memory-headroom-low",)]
        assert edge and all(0 <= c.headroom_fraction < 0.05 for c in edge)
        assert all("at the edge of the estimate" in c.reason for c in edge)


@pytest.mark.parametrize("objective", ["throughput", "latency", "cost"])
@pytest.mark.parametrize("model", [MISTRAL, "meta-llama/Llama-3.1-70B-Instruct", "Qwen/Qwen2.5-0.5B"])
def test_the_top_n_is_the_head_of_the_complete_ranking(model: str, objective: str) -> None:
    """The lazy best-first merge stops early; it must still return exactly the best N."""
    families = ("inf2", "trn1", "g5", "p4d")
    top = plan_model(PlanRequest(model=model, families=families, objective=objective, top=10))
    complete = plan_model(PlanRequest(model=model, families=families, objective=objective, top=0))
    assert top.evaluated <= complete.evaluated
    assert_ranked(top.candidates, objective)
    shown = [(c.instance, c.tensor_parallel_degree, c.batch_size, c.copies) for c in top.candidates]
    assert shown == [
        (c.instance, c.tensor_parallel_degree, c.batch_size, c.copies) for c in complete.candidates[:10]
    ]


def assert_ranked(candidates: list, objective: str) -> None:
    """Rows in rank-key order, except the rows tied with the first within the model's error, which come
    first (for cost by hourly price, lowest first) and each rank above every row not tied."""
    tied = [candidates[0], *(c for c in candidates[1:] if c.tie_with is not None)] if candidates else []
    assert candidates[: len(tied)] == tied
    rest = [rank_key(c, objective) for c in candidates[len(tied) :]]
    assert rest == sorted(rest, reverse=True)
    assert all(rank_key(c, objective) > max(rest) for c in tied) if rest and len(tied) > 1 else True
    if objective == "cost" and len(tied) > 1:
        hourly = [c.usd_per_hour for c in tied]
        assert hourly == sorted(hourly)


def test_objectives_rank_as_documented() -> None:
    latency = plan_model(
        PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", families=("inf2",), objective="latency")
    )
    tpots = [c.figures.tpot_ms for c in latency.candidates if c.figures is not None and not c.warnings]
    assert tpots and tpots == sorted(tpots)
    cost = plan_model(
        PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", families=("inf2", "trn2"), objective="cost")
    )
    prices = [
        c.figures.usd_per_million_tokens
        for c in cost.candidates
        if c.figures is not None and not c.warnings and c.tie_with is None
    ][1:]  # after the first row and those tied with it, which come by hourly price
    assert None not in prices and prices == sorted(prices)  # type: ignore[type-var]
    assert_ranked(cost.candidates, "cost")


def test_emitted_specs_render_exactly_the_planned_shape(tmp_path: Path) -> None:
    for model, instance in ((MISTRAL, "inf2.24xlarge"), ("Qwen/Qwen2.5-7B-Instruct", "g5.12xlarge")):
        result = plan_model(PlanRequest(model=model, instances=(instance,), dtype="bf16", top=3))
        for name, text in plan_specs(result, 3):
            path = tmp_path / name
            path.write_text(text)
            planned = next(c for c in result.candidates if name.startswith(f"{c.rank:02d}-"))
            rendered = render(load_spec(path), name=str(path))
            assert not rendered.errors, [f.message for f in rendered.errors]
            shape = rendered.assessment.shape
            assert (shape.tensor_parallel, shape.batch_size.value, shape.sequence_length.value) == (
                planned.tensor_parallel_degree,
                planned.batch_size,
                planned.sequence_length,
            )


def test_cli_writes_specs_and_merges_the_cache_config(tmp_path: Path) -> None:
    cache = tmp_path / "cache.json"
    other = {
        "other/model": [{"batch_size": 1, "sequence_length": 2048, "num_cores": 2, "auto_cast_type": "fp16"}]
    }
    existing = {
        "task": "text-generation",
        "instance_type": "trn1",
        "batch_size": 4,
        "sequence_length": 4096,
        "tensor_parallel_size": 8,
    }
    cache.write_text(json.dumps({**other, MISTRAL: [existing]}))
    cache.chmod(0o640)
    arguments = ("plan", "--model", MISTRAL, "--family", "inf2", "--top", "2", "--cache-config", str(cache))
    first = run_cli(*arguments, "--emit-spec", str(tmp_path / "specs"))
    assert first.returncode == 0, first.stderr
    assert sorted(path.name[:3] for path in (tmp_path / "specs").iterdir()) == ["01-", "02-"]
    merged = json.loads(cache.read_text())
    assert merged["other/model"] == other["other/model"]
    entries = merged[MISTRAL]
    assert entries[0] == existing and len(entries) > 1
    assert len({json.dumps(entry, sort_keys=True) for entry in entries}) == len(entries)
    assert {entry["instance_type"] for entry in entries} == {"trn1"}  # inf2 compiles as trn1
    assert (
        oct(cache.stat().st_mode & 0o777) == "0o640"
        and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    )
    assert re.search(r"wrote .*cache\.json \(\d+ new entries, current format\)", first.stderr)
    text = cache.read_text()
    again = run_cli(*arguments)
    assert again.returncode == 0 and "(0 new entries" in again.stderr and cache.read_text() == text
    legacy = run_cli(*arguments, "--cache-format", "legacy", "--dtype", "fp16")
    assert legacy.returncode == 0, legacy.stderr
    added = [entry for entry in json.loads(cache.read_text())[MISTRAL] if "num_cores" in entry]
    assert added and all(
        entry["auto_cast_type"] == "fp16"
        and set(entry) == {"batch_size", "sequence_length", "num_cores", "auto_cast_type", "provenance"}
        and entry["provenance"] == "predicted"  # plan compiles nothing (search marks what it proved)
        for entry in added
    )
    cache.write_text("{not json")
    broken = run_cli(*arguments)
    assert broken.returncode == 2 and "cache.json:1" in broken.stderr and cache.read_text() == "{not json"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("--model", MISTRAL, "--instance", "inf2.9xlarge"), "did you mean"),
        (("--model", MISTRAL, "--family", "inf9"), "unknown instance family"),
        (
            ("--model", MISTRAL, "--set", "tensor_parallel_degree=8"),
            "plan chooses the tensor parallel degree",
        ),
        (("--model", "nobody/unknown-model"), "not in the built-in catalog"),
        (("--model", MISTRAL, "--set", "novalue"), "expected KEY=VALUE"),
    ],
)
def test_bad_requests_exit_2_with_a_message(arguments: tuple[str, ...], message: str) -> None:
    result = run_cli("plan", *arguments)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_nothing_fitting_exits_1() -> None:
    result = run_cli("plan", "--model", "meta-llama/Llama-3.1-405B-Instruct", "--instance", "inf2.xlarge")
    assert result.returncode == 1 and "no configuration" in result.stderr
    with pytest.raises(PlanningError):
        plan_model(PlanRequest(model="meta-llama/Llama-3.1-405B-Instruct", instances=("inf2.xlarge",)))


def test_a_sagemaker_instance_type_without_facts_is_named_as_such_not_as_a_typo() -> None:
    # ml.p6e-gb200.36xlarge is in SageMaker's hosting enum (data/sagemaker_api.json) but not in the catalog
    result = run_cli("plan", "--model", MISTRAL, "--instance", "ml.p6e-gb200.36xlarge")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "SageMaker hosting instance type lmi-config has no hardware facts for" in result.stderr
    assert "did you mean" not in result.stderr
    typo = run_cli("plan", "--model", MISTRAL, "--instance", "ml.p6-b200.48xlargee")
    assert typo.returncode == 2 and "did you mean p6-b200.48xlarge" in typo.stderr


def test_p6_b200_is_planned_with_predicted_figures_and_a_price() -> None:
    result = run_cli(
        "plan",
        "--model",
        "meta-llama/Llama-3.1-70B-Instruct",
        "--instance",
        "ml.p6-b200.48xlarge",
        "--format",
        "json",
    )
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["candidates"]
    feasible = [row for row in rows if row["feasible"]]
    assert feasible and all(row["instance"] == "p6-b200.48xlarge" for row in feasible)
    # 8 B200s of 183,359 MiB each (nvidia-smi); vLLM's budget is its 0.9 share of that, less what it reserves
    assert all(0.85 < row["per_device"]["budget_gib"] / (183359 / 1024) <= 0.9 for row in feasible)
    assert {row["tensor_parallel_degree"] for row in feasible} == {1, 2, 4, 8}
    assert all(
        row["predicted"]["ttft_ms"] > 0 and row["predicted"]["usd_per_million_output_tokens"] > 0
        for row in feasible
    )


def test_an_fp8_checkpoint_is_planned_with_its_weights_in_fp8() -> None:
    # Qwen3-32B-FP8 stores its linear layers in fp8 (config.json's quantization_config): half the bytes
    # of the bf16 model, so one 48 GB L40S holds it, where the bf16 model needs two
    def feasible(model: str) -> list[dict[str, object]]:
        result = run_cli("plan", "--model", model, "--instance", "ml.g6e.12xlarge", "--format", "json")
        assert result.returncode == 0, result.stderr
        return [row for row in json.loads(result.stdout)["candidates"] if row["feasible"]]

    fp8, bf16 = feasible("Qwen/Qwen3-32B-FP8"), feasible("Qwen/Qwen3-32B")
    assert 1 in {row["tensor_parallel_degree"] for row in fp8}
    assert 1 not in {row["tensor_parallel_degree"] for row in bf16}
    assert all(row["predicted"]["tpot_ms"] > 0 for row in fp8)


def test_a_paged_kv_cache_runs_the_requests_it_holds_at_their_mean_length() -> None:
    # vLLM allocates blocks as a sequence grows: with 1,024 input and 7,168 output tokens a request in
    # flight holds 4,608 tokens on average, not 8,192 (benchmarks/kv_admission.py has the evidence)
    from lmi_config.plan.workload import PlanWorkload

    workload = PlanWorkload(input_tokens=1024, output_tokens=7168)
    result = plan_model(
        PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", instances=("ml.g5.2xlarge",), workload=workload)
    )
    top = result.candidates[0]
    assert top.assessment is not None and top.assessment.memory is not None and top.figures is not None
    tokens = top.assessment.memory.kv_cache_tokens
    assert tokens is not None and tokens // 8192 < tokens // 4608
    assert top.figures.running_sequences == tokens // 4608
    assert "requests of 4608 tokens (input + half the output)" in top.batch_reason


def test_nxd_latency_at_one_request_prefers_the_smallest_compiled_batch() -> None:
    # a Neuron graph computes every compiled slot: with one request in flight, a graph compiled for one
    # sequence decodes fastest (a GPU engine would not care)
    request = (
        "plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--instance", "ml.trn2.3xlarge",
        "--backend", "nxdi", "--objective", "latency", "--concurrency", "1",
    )  # fmt: skip
    result = run_cli(*request, "--top", "3", "--format", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    batches = [row["batch_size"] for row in document["candidates"] if row["rank"] is not None]
    assert batches[0] == 1 and batches == sorted(batches)
    assert document["workload"]["concurrency"] == 1
    text = run_cli(*request, "--top", "1")
    assert "1 request in flight at the instance" in text.stdout + text.stderr
