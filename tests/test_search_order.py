"""The guided search spends its trials in the planner's order of value (issue 18): the (TP, batch)
pairs ``plan`` ranks best for the workload and objective first, with every guarantee the
strategy had — no recorded trial again, resume exactly where it stopped, and run to its end the
same valid configurations in whatever order — and stopped early it has proven the pairs the
planner ranks highest."""

from __future__ import annotations

import functools
import json
import signal
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shard_machines import Machines, truth
from test_search import _setup as search_setup

from lmi_config import api
from lmi_config.plan.order import order_pairs
from lmi_config.plan.workload import DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS, PlanWorkload
from lmi_config.search.grid import Trial, TrialGrid
from lmi_config.search.strategy import GuidedStrategy, Outcomes, SeedStrategy

MISTRAL = "mistralai/Mistral-7B-Instruct-v0.2"
MACHINES = [
    (MISTRAL, "inf2.8xlarge"),
    ("meta-llama/Llama-3.1-8B-Instruct", "inf2.24xlarge"),
    ("Qwen/Qwen2.5-7B-Instruct", "trn1.32xlarge"),
]
MONOTONE_FAILURES = ("device-oom", "host-oom", "compiler-error", "timeout")
Key = tuple[int, int, int]


_setup = functools.cache(search_setup)  # the grid and predictor test_search builds, once per case


@functools.cache
def _planner_pairs(
    model: str, instance: str, objective: str, input_tokens: int, output_tokens: int
) -> tuple[tuple[int, int], ...]:
    grid, predict = _setup(model, instance)
    workload = PlanWorkload(input_tokens=input_tokens, output_tokens=output_tokens)
    order = order_pairs(
        predict.writer, predict.instance, predict.release, grid.seed_pairs(), workload, objective
    )
    return tuple(value.pair for value in order)


def _fake_exporter_outcome(table: dict[str, dict], trial: Trial) -> str | None:
    """What the fake exporter and fake load do with a trial: None when both succeed, else the
    failure class the search classifies (the table's ``export``/``load`` behaviour)."""
    behaviour = table[",".join(map(str, trial.key))]
    for step in ("export", "load"):
        if behaviour.get(step, "ok") != "ok":
            return str(behaviour[step])
    return None


def _simulate(
    strategy, table: dict[str, dict], stop_after: int | None = None
) -> tuple[list[Trial], Outcomes]:
    """The search's loop without processes: journal the skips, run the next trial, record it."""
    outcomes = Outcomes()
    order: list[Trial] = []
    while stop_after is None or len(order) < stop_after:
        for trial, reason in strategy.skips(outcomes):
            outcomes.skipped[trial.key] = reason
        trial = strategy.next_trial(outcomes)
        if trial is None:
            break
        assert trial.key not in outcomes.successes and trial.key not in outcomes.failures, f"{trial} again"
        order.append(trial)
        failure = _fake_exporter_outcome(table, trial)
        if failure is None:
            outcomes.successes.add(trial.key)
        else:
            outcomes.failures[trial.key] = failure
    return order, outcomes


def _longest(successes: set[Key]) -> dict[tuple[int, int], int]:
    best: dict[tuple[int, int], int] = {}
    for tensor_parallel, batch, length in successes:
        best[(tensor_parallel, batch)] = max(best.get((tensor_parallel, batch), 0), length)
    return best


def _proven(grid: TrialGrid, successes: set[Key]) -> set[Key]:
    """Every configuration of the grid a recorded success proves (the same TP, a batch and a
    length no larger): what the results file tells a user can run."""
    return {
        trial.key
        for trial in grid.seed_order()
        if any(
            key[0] == trial.tensor_parallel_size
            and key[1] >= trial.batch_size
            and key[2] >= trial.sequence_length
            for key in successes
        )
    }


@st.composite
def _tables(draw):
    """A machine of the fake exporter: the judge's prediction off by a factor the search does not
    know (``shard_machines.truth``), a monotone failure class per failing trial."""
    model, instance = draw(st.sampled_from(MACHINES))
    factor = draw(st.floats(min_value=0.6, max_value=1.6))
    table = truth(model, instance, factor)
    failing = sorted(key for key, behaviour in table.items() if behaviour)
    for key in failing:
        kind = draw(st.sampled_from(MONOTONE_FAILURES))
        step = "export" if "export" in table[key] else "load"
        table[key] = {step: kind}
    return model, instance, table


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _tables(),
    st.sampled_from(["throughput", "latency", "cost"]),
    st.integers(min_value=64, max_value=8192),
    st.integers(min_value=16, max_value=2048),
    st.randoms(use_true_random=False),
)
def test_the_planners_order_finds_the_same_valid_configurations_as_the_seeds_order(
    machine, objective, input_tokens, output_tokens, rng
) -> None:
    model, instance, table = machine
    grid, predict = _setup(model, instance)
    planner = _planner_pairs(model, instance, objective, input_tokens, output_tokens)
    shuffled = list(grid.seed_pairs())
    rng.shuffle(shuffled)
    seed_order, seed = _simulate(GuidedStrategy(grid, predict, 0.2), table)
    reference = (_longest(seed.successes), _proven(grid, seed.successes))
    for pairs in (planner, shuffled):
        strategy = GuidedStrategy(grid, predict, 0.2, pairs)
        order, outcomes = _simulate(strategy, table)
        assert (_longest(outcomes.successes), _proven(grid, outcomes.successes)) == reference
        assert outcomes.skipped == seed.skipped  # the judge's skips do not depend on the order
        # stopped after any trial and resumed from what was recorded, it goes on exactly where it was
        for done in range(len(order)):
            resumed = Outcomes(skipped=dict(outcomes.skipped))
            for trial in order[:done]:
                if trial.key in outcomes.successes:
                    resumed.successes.add(trial.key)
                else:
                    resumed.failures[trial.key] = outcomes.failures[trial.key]
            assert strategy.next_trial(resumed) == order[done]
    # the seed's own workflow is untouched; where the judge skipped nothing that fits (the memory
    # model within its margin) it finds the same longest lengths
    if all(_fake_exporter_outcome(table, Trial(*key)) for key in seed.skipped):
        _, exact = _simulate(SeedStrategy(grid), table)
        assert _longest(exact.successes) == reference[0]


@pytest.mark.parametrize("objective", ["throughput", "latency", "cost"])
def test_the_search_order_is_plans_ranking_of_the_same_pairs(objective: str) -> None:
    model, instance = "Qwen/Qwen2.5-7B-Instruct", "trn1.32xlarge"
    grid, _ = _setup(model, instance)
    order = _planner_pairs(model, instance, objective, DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS)
    ranked = api.plan(
        model=model,
        instances=(instance,),
        backend="nxdi",
        objective=objective,
        top=0,
        optimum_neuron_export=True,
    )
    plan_pairs = [(row.tensor_parallel_degree, row.batch_size) for row in ranked.candidates if row.rank]
    common = set(plan_pairs) & set(order)
    assert len(common) >= 5  # enough pairs in both for the comparison to mean something
    assert [pair for pair in order if pair in common] == [pair for pair in plan_pairs if pair in common]
    assert order != tuple(grid.seed_pairs())  # the planner's order is not the seed's


def _trials_to_prove(grid, predict, table, pairs, pair) -> tuple[int, int]:
    """After how many trials the pair's longest valid length is recorded, and the trials in all."""
    order, outcomes = _simulate(GuidedStrategy(grid, predict, 0.2, pairs), table)
    longest = _longest(outcomes.successes)[pair]
    for count in range(1, len(order) + 1):
        if (*pair, longest) in {trial.key for trial in order[:count]}:
            return count, len(order)
    raise AssertionError(f"{pair} never proven")


@pytest.mark.parametrize(("model", "instance"), MACHINES)
@pytest.mark.parametrize("objective", ["throughput", "latency", "cost"])
def test_stopped_early_the_guided_search_has_proven_what_the_planner_ranks_highest(
    model: str, instance: str, objective: str
) -> None:
    grid, predict = _setup(model, instance)
    table = truth(model, instance, 0.9)
    planner = _planner_pairs(model, instance, objective, DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS)
    best = planner[0]
    planned, planned_total = _trials_to_prove(grid, predict, table, planner, best)
    seed, seed_total = _trials_to_prove(grid, predict, table, None, best)
    assert planned <= 2  # the best pair's longest length is the first thing the search proves
    assert planned <= seed
    if objective == "latency" or instance == "inf2.24xlarge":
        assert seed > planned + 5  # the seed's order reaches it only after most of the grid
    assert planned_total <= seed_total + 2  # the same search, in a different order


def test_a_search_stopped_by_ctrl_c_has_proven_the_planners_best_pair_and_says_so(tmp_path: Path) -> None:
    planner = _planner_pairs(
        MISTRAL, "inf2.8xlarge", "throughput", DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS
    )
    best, second = planner[0], planner[1]
    table = truth(MISTRAL, "inf2.8xlarge", 0.9)
    for key in table:  # the second pair's first export hangs until the search is stopped
        if tuple(map(int, key.split(",")))[:2] == second:
            table[key] = {"export": "hang"}
    machines = Machines(tmp_path, table)
    results = tmp_path / "results.json"
    arguments = ["search", "--model", MISTRAL, "--instance", "inf2.8xlarge", "--output", str(results)]
    process = machines.start(arguments, tmp_path / "work")
    try:
        _wait_for_export(machines, second)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    exported = machines.exports()
    assert [key[:2] for key in exported[:-1]] == [best] * (len(exported) - 1)  # the best pair first
    proven = {
        (entry["tensor_parallel_size"], entry["batch_size"], entry["sequence_length"])
        for entry in json.loads(results.read_text())[MISTRAL]
    }
    fits = {
        tuple(map(int, key.split(",")))
        for key, behaviour in truth(MISTRAL, "inf2.8xlarge", 0.9).items()
        if not behaviour
    }
    assert _longest(proven)[best] == _longest({key for key in fits if key[:2] == best})[best]
    assert (
        "order: (TP, batch) pairs by the planner's throughput ranking for 1024 input + 256 output tokens"
        in stderr
    )
    assert f"TP {best[0]}, batch {best[1]}" in stderr and "planner's #1: TTFT" in stderr
    assert "planner's #2" in stderr  # the trial it was running when stopped


def test_the_seed_strategy_says_it_keeps_the_seeds_order(tmp_path: Path) -> None:
    machines = Machines(tmp_path, truth(MISTRAL, "inf2.8xlarge", 0.9))
    arguments = [
        "search",
        "--model",
        "Qwen/Qwen2.5-0.5B",
        "--instance",
        "inf2.8xlarge",
        "--strategy",
        "seed",
        "--dry-run",
    ]
    result = machines.run(arguments, tmp_path / "work")
    assert result.returncode == 0, result.stderr
    assert "order: the seed's (increasing TP, decreasing batch, decreasing length)" in result.stderr
    assert "planner's #" not in result.stdout + result.stderr


def test_the_objective_and_workload_change_the_order_a_dry_run_shows(tmp_path: Path) -> None:
    machines = Machines(tmp_path, truth(MISTRAL, "inf2.8xlarge", 0.9))
    base = ["search", "--model", MISTRAL, "--instance", "inf2.8xlarge", "--dry-run"]
    throughput = machines.run(base, tmp_path / "work")
    latency = machines.run(
        [*base, "--objective", "latency", "--input-tokens", "200", "--output-tokens", "50"], tmp_path / "work"
    )
    assert throughput.returncode == latency.returncode == 0, latency.stderr
    assert "first TP 2, batch 32" in throughput.stderr
    assert (
        "latency ranking for 200 input + 50 output tokens" in latency.stderr
        and "first TP 2, batch 1:" in latency.stderr
    )
    assert "planner's #1 (TP, batch)" in throughput.stdout
    refused = machines.run([*base, "--input-tokens", "0"], tmp_path / "work")
    assert (
        refused.returncode == 2 and "--input-tokens" in refused.stderr and "Traceback" not in refused.stderr
    )


def test_search_and_plan_share_the_workload_options_and_their_defaults() -> None:
    from lmi_config.cli.planning import plan, search

    def defaults(command) -> dict[str, object]:
        names = ("objective", "input_tokens", "output_tokens")
        return {param.name: (param.default, param.help) for param in command.params if param.name in names}

    searched, planned = defaults(search), defaults(plan)
    assert {k: v for k, v in searched.items() if k != "objective"} == {
        k: v for k, v in planned.items() if k != "objective"
    }
    # a search runs on one instance type, where plan's default objective is throughput too
    assert searched["objective"][0] == "throughput" and planned["objective"][0] is None
    assert "throughput within one" in str(planned["objective"][1])
    assert defaults(plan)["input_tokens"][0] == DEFAULT_INPUT_TOKENS
    assert defaults(plan)["output_tokens"][0] == DEFAULT_OUTPUT_TOKENS


def _wait_for_export(machines: Machines, pair: tuple[int, int], seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not any(key[:2] == pair for key in machines.exports()):
        assert time.monotonic() < deadline, f"no export of {pair} started"
        time.sleep(0.05)


def test_each_sagemaker_job_follows_the_order_the_user_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import run_cli

    monkeypatch.setenv("HF_TOKEN", "token-of-an-account-granted-access")  # Mistral is gated
    base = (
        "search", "--model", MISTRAL, "--on", "sagemaker", "--instance", "ml.trn1.32xlarge", "--dry-run",
        "--secret-env", "HF_TOKEN",
        "--role", "arn:aws:iam::123456789012:role/search", "--s3-prefix", "s3://bucket/searches/m",
        "--region", "us-east-1",
    )  # fmt: skip
    asked = run_cli(*base, "--objective", "latency", "--input-tokens", "300")
    default = run_cli(*base)
    assert asked.returncode == default.returncode == 0, asked.stderr
    jobs = [
        json.loads(line.split(" ", 1)[1])
        for line in asked.stdout.splitlines()
        if "create_training_job" in line
    ]
    assert jobs
    for job in jobs:
        arguments = job["AlgorithmSpecification"]["ContainerArguments"]
        assert arguments[-4:] == ["--objective", "latency", "--input-tokens", "300"]
    assert "--objective" not in default.stdout and "--input-tokens" not in default.stdout


def test_a_shard_tries_its_pairs_in_the_single_searchs_order() -> None:
    from dataclasses import replace

    from lmi_config.search.shards import Shard

    model, instance = "meta-llama/Llama-3.1-8B-Instruct", "trn1.32xlarge"
    grid, predict = _setup(model, instance)
    workload = PlanWorkload()
    whole = [
        value.pair
        for value in order_pairs(
            predict.writer, predict.instance, predict.release, grid.seed_pairs(), workload, "throughput"
        )
    ]
    for index in (1, 2, 3):
        sizes = Shard(index, 3).sizes(grid.tensor_parallel_sizes)
        part = replace(grid, tensor_parallel_sizes=sizes)
        shard_order = order_pairs(
            predict.writer, predict.instance, predict.release, part.seed_pairs(), workload, "throughput"
        )
        assert [value.pair for value in shard_order] == [pair for pair in whole if pair[0] in sizes]


def test_a_workload_no_pair_can_serve_keeps_the_seeds_order_and_says_why(tmp_path: Path) -> None:
    machines = Machines(tmp_path, truth(MISTRAL, "inf2.8xlarge", 0.9))
    arguments = [
        "search",
        "--model",
        MISTRAL,
        "--instance",
        "inf2.8xlarge",
        "--dry-run",
        "--input-tokens",
        "100000",
    ]
    result = machines.run(arguments, tmp_path / "work")
    assert result.returncode == 0, result.stderr
    assert "order: the seed's — the planner's throughput ranking for 100000 input" in result.stderr
    assert "ranks no (TP, batch) pair" in result.stderr and "Traceback" not in result.stderr
    grid, _ = _setup(MISTRAL, "inf2.8xlarge")
    listed = [
        (int(line.split()[1]), int(line.split()[2]))
        for line in result.stderr.splitlines()
        if line.split() and line.split()[0].isdigit()
    ]
    assert listed == grid.seed_pairs()
