"""One planner ranked by predicted performance: ``plan`` with and without ``--all`` agree, nothing
the judge refuses is ranked, every row serves the workload's longest request, the objectives order
rows by their metric, the vLLM batch comes from the workload, and every instance has a price."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lmi_config.api import render
from lmi_config.knowledge.instances import instances
from lmi_config.knowledge.planning import on_demand_price
from lmi_config.plan import PlanRequest, PlanWorkload, plan_model
from lmi_config.plan.writer import configuration
from lmi_config.shape import assess
from lmi_config.spec import Spec

LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"


def _plan(*args: str) -> dict:
    result = run_cli("plan", *args, "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _row(candidate: dict) -> tuple:
    return (
        candidate["rank"],
        candidate["instance"],
        candidate["tensor_parallel_degree"],
        candidate["batch_size"],
        candidate["sequence_length"],
        json.dumps(candidate["predicted"], sort_keys=True),
    )


@pytest.mark.parametrize(
    "arguments",
    [
        ("--model", LLAMA_8B, "--instance", "ml.g5.2xlarge"),
        ("--model", "mistralai/Mistral-7B-Instruct-v0.2", "--family", "inf2"),
        ("--model", "Qwen/Qwen2.5-32B-Instruct", "--family", "g6e", "--objective", "cost"),
    ],
)
def test_plan_with_and_without_all_agree_on_every_feasible_row(arguments: tuple[str, ...]) -> None:
    without = [_row(c) for c in _plan(*arguments)["candidates"] if c["feasible"]]
    with_all = [_row(c) for c in _plan(*arguments, "--all")["candidates"] if c["feasible"]]
    assert without and without == with_all


def test_no_ranked_row_is_refused_by_the_judge_and_every_row_serves_the_longest_request() -> None:
    workload = PlanWorkload(input_tokens=3000, output_tokens=500)
    result = plan_model(PlanRequest(model=LLAMA_8B, families=("inf2", "g5", "g6e"), top=0, workload=workload))
    assert result.candidates
    for candidate in result.candidates:
        assert candidate.sequence_length >= 3500
        assessment = candidate.assessment
        assert assessment is not None
        judged = assess(
            configuration(dict(candidate.items)),
            assessment.target,
            backend_accelerator="gpu" if candidate.unit == "GPU" else "neuron",
        )
        assert not [problem.check for problem in judged.problems if problem.blocking]
        assert judged.memory is not None and judged.memory.fits


def test_inf2_xlarge_does_not_rank_first_for_cost_when_its_host_ram_cannot_compile() -> None:
    result = plan_model(PlanRequest(model=LLAMA_8B, families=("inf2",), objective="cost"))
    first = result.candidates[0]
    assert first.instance != "inf2.xlarge" and not first.warnings


@pytest.mark.parametrize(
    ("model", "instance"),
    [
        (LLAMA_8B, "ml.g5.2xlarge"),
        ("Qwen/Qwen2.5-32B-Instruct", "ml.g6e.12xlarge"),
        ("Qwen/Qwen2.5-32B-Instruct", "ml.p4d.24xlarge"),
    ],
)
@pytest.mark.parametrize(("version", "default"), [("0.30.0", 256), (None, None)])
def test_the_vllm_auto_batch_is_at_least_the_container_default(
    model: str, instance: str, version: str | None, default: int | None
) -> None:
    spec = Spec(
        model=model,
        instance=instance,
        backend="vllm",
        lmi_version=version,
        options={"tensor_parallel_degree": "auto", "max_rolling_batch_size": "auto", "max_model_len": "auto"},
    )
    rendered = render(spec)
    text = rendered.text if hasattr(rendered, "text") else str(rendered)
    written = re.search(r"^option\.max_rolling_batch_size=(\d+)$", text, re.MULTILINE)
    assert written is not None, text
    batch = int(written.group(1))
    if default is None:
        from lmi_config.knowledge import default_release, resolve_backend
        from lmi_config.knowledge.instances import resolve_instance
        from lmi_config.modelarch import resolve_model
        from lmi_config.plan.writer import CandidateWriter
        from lmi_config.shape import make_target

        backend = resolve_backend("vllm")
        release = default_release(backend.id)[0]
        target = make_target(backend.id, "gpu", release, resolve_instance(instance), resolve_model(model))
        default = CandidateWriter(
            {**backend.render_options(release), "option.model_id": model}, target, "gpu"
        ).default_batch
    # below the container's default only where that batch would break the default latency target
    assert default is not None and (batch >= default or "within the latency target" in text)
    assert "batch: " in text and "objective throughput" in text and "TPOT" in text


METRICS = {
    "throughput": lambda figures: -figures.output_tokens_per_second,
    "latency": lambda figures: figures.tpot_ms,
    "cost": lambda figures: figures.usd_per_million_tokens,
}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    objective=st.sampled_from(sorted(METRICS)),
    input_tokens=st.integers(64, 6000),
    output_tokens=st.integers(16, 2000),
    concurrency=st.one_of(st.none(), st.integers(1, 64)),
)
def test_objectives_order_rows_by_their_metric(
    objective: str, input_tokens: int, output_tokens: int, concurrency: int | None
) -> None:
    workload = PlanWorkload(input_tokens=input_tokens, output_tokens=output_tokens, concurrency=concurrency)
    result = plan_model(
        PlanRequest(
            model="Qwen/Qwen2.5-7B-Instruct", families=("inf2", "g5"), objective=objective, workload=workload
        )
    )
    # rows tied with the first within the model's error come first (for cost by hourly price)
    clean = [
        c
        for c in result.candidates[1:]
        if c.feasible and not c.warnings and c.figures is not None and c.tie_with is None
    ]
    within = [c for c in clean if not c.target_misses]
    for group in (within, [c for c in clean if c.target_misses]):
        values = [METRICS[objective](c.figures) for c in group]
        assert values == sorted(values)
    assert clean[: len(within)] == within  # every row within the latency target before any over it


def test_latency_limits_leave_out_every_row_that_breaks_them() -> None:
    loose = plan_model(PlanRequest(model=LLAMA_8B, families=("g5",), top=0))
    limit = sorted(c.figures.tpot_ms for c in loose.candidates if c.figures is not None)[
        len(loose.candidates) // 2
    ]
    tight = plan_model(
        PlanRequest(model=LLAMA_8B, families=("g5",), top=0, workload=PlanWorkload(max_tpot_ms=limit))
    )
    assert tight.candidates and all(
        c.figures is not None and c.figures.tpot_ms <= limit for c in tight.candidates
    )
    assert len(tight.candidates) < len(loose.candidates)


def test_every_accelerated_catalog_instance_has_a_price_or_a_reason() -> None:
    from lmi_config.knowledge import load_data

    table = load_data("instances.json")["on_demand_prices"]
    for instance in instances().values():
        price = on_demand_price(instance.instance_type)
        if price is None:
            assert instance.instance_type in table["not_found"], instance.instance_type
            continue
        assert price.usd_per_hour > 0 and price.source.startswith("https://github.com/") and price.date
    accelerated = [i.instance_type for i in instances().values() if i.accelerator in ("neuron", "gpu")]
    unpriced = [name for name in accelerated if on_demand_price(name) is None]
    assert set(unpriced) <= {"trn2.3xlarge", "trn2u.48xlarge"}
    for name in ("g6e.xlarge", "p4de.24xlarge", "p5e.48xlarge", "trn2.48xlarge"):
        assert on_demand_price(name) is not None, name


def test_a_workload_longer_than_max_model_len_is_refused_with_exit_2() -> None:
    result = run_cli("plan", "--model", LLAMA_8B, "--max-model-len", "1000", "--input-tokens", "2000")
    assert (
        result.returncode == 2
        and "--max-model-len 1000" in result.stderr
        and "Traceback" not in result.stderr
    )


def test_explain_prints_the_predicted_performance_of_a_file() -> None:
    from conftest import ROOT

    path = ROOT / "samples" / "rendered" / "llama-3.1-8b-inf2-24xlarge.serving.properties"
    text = run_cli("explain", str(path))
    assert text.returncode == 0, text.stderr
    assert "predicted performance (workload: 1024 input + 256 output tokens" in text.stdout
    said = path.read_text(encoding="utf-8").split("predicted TTFT", 1)[1].split(";", 1)[0]
    assert f"predicted TTFT{said}" in text.stdout  # the figures render's comment names
    document = json.loads(run_cli("explain", str(path), "--format", "json").stdout)
    figures = document["performance"]["predicted"]
    assert figures["output_tokens_per_second"] > 0 and figures["tpot_ms"] > 0


def test_explain_predicts_for_the_workload_it_is_given() -> None:
    """explain --input-tokens/--output-tokens/--concurrency: the same workload plan takes, so a spec's own
    workload (render's comment) can be checked with explain too; plan's defaults otherwise."""
    from conftest import ROOT

    path = str(ROOT / "samples" / "rendered" / "llama-3.1-8b-inf2-24xlarge.serving.properties")
    default = json.loads(run_cli("explain", path, "--format", "json").stdout)["performance"]
    longer = json.loads(
        run_cli(
            "explain", path, "--format", "json", "--input-tokens", "3000", "--output-tokens", "512"
        ).stdout
    )["performance"]
    assert "3000 input + 512 output tokens" in longer["workload"]
    assert "1024 input + 256 output tokens" in default["workload"]
    assert (
        longer["predicted"]["ttft_ms"] > default["predicted"]["ttft_ms"]
    )  # a longer prompt takes longer to prefill
    refused = run_cli("explain", path, "--concurrency", "0")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr


@pytest.mark.parametrize(
    ("model", "instance", "backend", "version", "length_key"),
    [
        (LLAMA_8B, "ml.g5.12xlarge", "vllm", None, "max_model_len"),
        (
            "mistralai/Mistral-7B-Instruct-v0.2",
            "ml.inf2.24xlarge",
            "transformers-neuronx",
            "0.30.0",
            "n_positions",
        ),
    ],
)
@pytest.mark.parametrize("objective", ["throughput", "latency", "cost"])
def test_render_auto_writes_the_top_of_plans_ranking(
    model: str, instance: str, backend: str, version: str | None, length_key: str, objective: str
) -> None:
    fields = {"instances": (instance,), "backend": backend, "lmi_version": version, "objective": objective}
    top = plan_model(PlanRequest(model=model, **fields)).candidates[0]  # type: ignore[arg-type]
    spec = Spec(
        model=model,
        instance=instance,
        backend=backend,
        lmi_version=version,
        objective=objective,  # type: ignore[arg-type]
        options={
            "tensor_parallel_degree": "auto",
            "max_rolling_batch_size": "auto",
            length_key: top.sequence_length,
        },
    )
    rendered = render(spec)
    assert rendered.auto == {
        "tensor_parallel_degree": top.tensor_parallel_degree,
        "batch_size": top.batch_size,
    }


def test_the_price_table_is_exactly_what_gen_prices_writes() -> None:
    """The checked-in table has the script's layout (hand edits show up here) and its parser reads
    FMBench's two kinds of keys."""
    import importlib.util

    from conftest import ROOT

    spec = importlib.util.spec_from_file_location("gen_prices", ROOT / "scripts" / "gen_prices.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    path = ROOT / "lmi_config" / "data" / "instances.json"
    text = path.read_text(encoding="utf-8")
    assert script.replace_prices(text, json.loads(text)["on_demand_prices"]) == text
    sagemaker, ec2 = script.fmbench_prices(
        "pricing:\n  instance_based:\n    ml.g5.xlarge: 1.4084\n    g5.xlarge: 1.006\n  token_based:\n    x.y: 3\n"
    )
    assert sagemaker == {"g5.xlarge": 1.4084} and ec2 == {"g5.xlarge": 1.006}


# --- a workload given as a request rate ------------------------------------------------------------


def test_under_a_request_rate_the_load_is_what_littles_law_gives_and_more_is_slower() -> None:
    from lmi_config.modelarch import from_catalog
    from lmi_config.perf import Configuration, Workload, predict

    arch = from_catalog(LLAMA_8B)
    assert arch is not None
    configuration = Configuration(arch, instances()["g5.2xlarge"], "vllm", 1, 64, 4096)
    alone = predict(configuration, Workload(1024, 256, concurrency=1))
    slow = predict(configuration, Workload(1024, 256, request_rate=0.01))
    busy = predict(configuration, Workload(1024, 256, request_rate=1.0))
    # a trickle of requests is served as if each were alone (within 1 %: a rare wait for another)
    assert slow.tpot_ms == pytest.approx(alone.tpot_ms, rel=0.01)
    assert slow.ttft_ms == pytest.approx(alone.ttft_ms, rel=0.01)
    # the instance completes what arrives; the mean in flight is the rate times the request latency
    assert busy.requests_per_second == pytest.approx(1.0)
    assert busy.output_tokens_per_second == pytest.approx(256.0)
    in_flight = float(busy.notes[-1].split(", ")[1].split(" ")[0])
    assert in_flight == pytest.approx(busy.end_to_end_ms / 1000, rel=0.05)
    assert busy.tpot_ms > slow.tpot_ms and busy.ttft_ms > slow.ttft_ms
    # more than it completes with every slot busy: overloaded, said so
    capacity = busy.capacity_requests_per_second
    assert capacity is not None and not busy.overloaded
    flooded = predict(configuration, Workload(1024, 256, request_rate=capacity * 2))
    assert flooded.overloaded and "queue grows without bound" in flooded.notes[-1]
    # the engine queues alike in both loops (M/D/1 at the utilisation its arrivals give): at the same
    # load the open loop's TTFT is the closed loop's, within what the fractional load changes
    in_flight = round(float(busy.notes[-1].split(", ")[1].split(" ")[0]))
    closed = predict(configuration, Workload(1024, 256, concurrency=in_flight))
    assert busy.ttft_ms == pytest.approx(closed.ttft_ms, rel=0.05)
    assert any("M/D/1" in term.note for term in busy.ttft.terms)


def test_plan_ranks_only_what_completes_the_request_rate() -> None:
    document = _plan(
        "--model", LLAMA_8B, "--family", "g5", "--request-rate", "3", "--top", "0", "--all", "--objective", "throughput"
    )  # fmt: skip
    assert document["workload"]["request_rate"] == 3
    ranked = [c for c in document["candidates"] if c["feasible"]]
    refused = [c for c in document["candidates"] if "workload-limits" in (c.get("blocked_by") or [])]
    assert ranked and refused
    for candidate in ranked:
        figures = candidate["predicted"]
        assert figures["capacity_requests_per_second"] > 3
        assert figures["requests_per_second"] == pytest.approx(3, rel=1e-3)
    assert all("--request-rate 3 is more than" in " ".join(c["problems"]) for c in refused)
    # every ranked row delivers the rate: the throughput objective ranks by the headroom instead
    clean = [c["predicted"]["capacity_requests_per_second"] for c in ranked if not c["warnings"]]
    assert clean == sorted(clean, reverse=True) and clean[0] > clean[-1]
    text = run_cli("plan", "--model", LLAMA_8B, "--instance", "ml.g5.2xlarge", "--request-rate", "1")
    assert text.returncode == 0 and "1 requests/s arriving at the instance" in text.stdout
    # the table says what orders rows whose figures at the rate are alike: how much more they complete
    rows = [line for line in text.stdout.splitlines() if " g5.2xlarge " in line]
    assert rows and all(re.search(r"completes up to [0-9.]+ requests/s(;|$)", line) for line in rows)


@pytest.mark.parametrize(
    ("arguments", "code", "said"),
    [
        # nothing completes it: exit 1 as for latency limits, naming the rate and what to change
        (("--request-rate", "1000"), 1, "at 1000 requests/s; try --all"),
        (("--request-rate", "1", "--concurrency", "4"), 2, "not both"),
        (("--request-rate", "0"), 2, "--request-rate"),
        (("--request-rate", "inf"), 2, "--request-rate"),
    ],
)
def test_a_request_rate_nothing_completes_or_a_bad_one_is_refused_in_one_line(
    arguments: tuple[str, ...], code: int, said: str
) -> None:
    result = run_cli("plan", "--model", LLAMA_8B, "--instance", "ml.g5.2xlarge", *arguments)
    assert result.returncode == code and said in result.stderr and "Traceback" not in result.stderr


def test_explain_and_render_take_a_request_rate() -> None:
    from conftest import ROOT

    path = str(ROOT / "samples" / "rendered" / "llama-3.1-8b-inf2-24xlarge.serving.properties")
    light = json.loads(run_cli("explain", path, "--format", "json", "--request-rate", "0.1").stdout)
    assert "0.1 requests/s arriving" in light["performance"]["workload"]
    assert light["performance"]["broken_limits"] == []
    flooded = run_cli("explain", path, "--request-rate", "10000")
    assert flooded.returncode == 0 and "not met: --request-rate 10000 is more than" in flooded.stdout
    spec = Spec(
        model=LLAMA_8B,
        instance="ml.g5.12xlarge",
        backend="vllm",
        options={"tensor_parallel_degree": "auto", "max_rolling_batch_size": "auto"},
        workload={"request_rate": 2},
    )
    comment = next(line for line in render(spec).text.splitlines() if line.startswith("# auto:"))
    assert "1024 input + 256 output tokens at 2 requests/s: predicted" in comment
    assert "512 output tokens/s per instance" in comment  # what arrives is what it completes


def test_rows_without_a_prediction_rank_by_what_the_objective_favours_not_by_the_order_tried() -> None:
    # the performance model refuses a mixture of experts on NxD Inference: no figures for any row
    arguments = ("--model", "mistralai/Mixtral-8x7B-Instruct-v0.1", "--instance", "ml.trn1.32xlarge")
    arguments += ("--backend", "nxdi", "--lmi-version", "0.34.0", "--top", "0")
    # rows at the edge of the memory estimate rank after the clean ones: compare the clean ones
    throughput = [c for c in _plan(*arguments)["candidates"] if c["feasible"] and not c["warnings"]]
    assert len(throughput) > 3 and all(c["predicted"] is None for c in throughput)
    slots = [c["concurrent_sequences"] for c in throughput]
    assert slots == sorted(slots, reverse=True) and slots[0] > slots[-1]
    latency = [
        c
        for c in _plan(*arguments, "--objective", "latency")["candidates"]
        if c["feasible"] and not c["warnings"]
    ]
    batches = [c["batch_size"] for c in latency]
    assert batches == sorted(batches) and batches[0] < batches[-1]


def test_a_configuration_the_model_finds_overloaded_at_the_rate_is_never_ranked() -> None:
    # long prompts at a few tenths of a request per second: rows whose capacity the rate reaches are the
    # model's verdict (overloaded), never ranked, and say why
    overloaded_seen = 0
    for rate in (0.25, 0.3, 0.35, 0.4, 0.5):
        document = _plan(
            "--model", LLAMA_8B, "--family", "g5", "--input-tokens", "8000", "--output-tokens", "16",
            "--request-rate", str(rate), "--top", "0", "--all",
        )  # fmt: skip
        rows = [c for c in document["candidates"] if c["predicted"]]
        overloaded = [c for c in rows if c["predicted"]["overloaded"]]
        overloaded_seen += len(overloaded)
        assert all(not c["feasible"] and "workload-limits" in c["blocked_by"] for c in overloaded)
        assert all(not c["predicted"]["overloaded"] for c in rows if c["feasible"])
        assert all("--request-rate" in " ".join(c["problems"]) for c in overloaded)
    assert overloaded_seen


def test_a_mixture_of_experts_on_gpus_carries_how_far_measured_runs_were_from_its_figures(
    tmp_path: Path,
) -> None:
    # measured GPU MoE runs (benchmarks/aiconfigurator_perf.json) were 1.3-2.8x slower to the first token:
    # the figures stay, marked optimistic where a user reads them -- plan's notes, explain, the JSON
    moe = _plan("--model", "Qwen/Qwen3-30B-A3B", "--family", "p5", "--top", "3")
    predicted = [c["predicted"] for c in moe["candidates"] if c["predicted"]]
    assert predicted and all("predicted too fast" in figures["caveat"] for figures in predicted)
    assert sum("a mixture of experts on GPUs" in note for note in moe["notes"]) == 1
    dense = _plan("--model", LLAMA_8B, "--family", "p5", "--top", "3")
    assert all(c["predicted"]["caveat"] is None for c in dense["candidates"] if c["predicted"])
    assert not any("mixture of experts" in note for note in dense["notes"])
    properties = tmp_path / "serving.properties"
    properties.write_text(
        "option.model_id=Qwen/Qwen3-30B-A3B\noption.rolling_batch=vllm\noption.tensor_parallel_degree=2\n"
        "option.max_rolling_batch_size=64\noption.max_model_len=8192\n"
    )
    explained = run_cli("explain", str(properties), "--instance", "ml.p5.48xlarge")
    assert explained.returncode == 0, explained.stderr
    assert "  caveat: a mixture of experts on GPUs is predicted too fast" in explained.stdout
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "model: Qwen/Qwen3-30B-A3B\ninstance: ml.p5.48xlarge\nbackend: vllm\noptions:\n"
        "  tensor_parallel_degree: auto\n  max_rolling_batch_size: auto\n  max_model_len: 8192\n"
    )
    rendered = run_cli("render", str(spec), "-o", "-")
    assert rendered.returncode == 0, rendered.stderr
    comment = next(line for line in rendered.stdout.splitlines() if line.startswith("# auto:"))
    assert "(a mixture of experts on GPUs is predicted too fast" in comment
