"""The search's decisions without processes: the seed's grid and order, its skip rules, the guided
strategy against an oracle that differs from the memory model, failure classes, and the
cache-config files both commands write."""

from __future__ import annotations

import random

import pytest

from lmi_config.knowledge.instances import resolve_instance
from lmi_config.modelarch import from_catalog
from lmi_config.search import cache_config
from lmi_config.search.grid import Predictor, Trial, seed_grid
from lmi_config.search.runner import StepResult, classify
from lmi_config.search.strategy import GuidedStrategy, Outcomes, SeedStrategy

MISTRAL = "mistralai/Mistral-7B-Instruct-v0.2"


def _setup(model: str, instance: str):
    arch = from_catalog(model)
    assert arch is not None
    machine = resolve_instance(instance)
    grid = seed_grid(
        arch.num_attention_heads, arch.max_position_embeddings, machine.num_cores, machine.cores_per_device
    )
    return grid, Predictor(arch, machine, "nxdi")


def _simulate(strategy, fits) -> tuple[list[Trial], Outcomes]:
    outcomes = Outcomes()
    order = []
    while True:
        for trial, reason in strategy.skips(outcomes):
            outcomes.skipped[trial.key] = reason
        trial = strategy.next_trial(outcomes)
        if trial is None:
            return order, outcomes
        assert trial not in order, f"{trial} ran twice"
        order.append(trial)
        if fits(trial):
            outcomes.successes.add(trial.key)
        else:
            outcomes.failures[trial.key] = "device-oom"


def _longest(outcomes: Outcomes) -> dict[tuple[int, int], int]:
    best: dict[tuple[int, int], int] = {}
    for tensor_parallel, batch, length in outcomes.successes:
        best[(tensor_parallel, batch)] = max(best.get((tensor_parallel, batch), 0), length)
    return best


def test_seed_grid_follows_the_seed_rules() -> None:
    # Llama-3.1-70B: 64 heads, 131072 positions; trn1.32xlarge: 32 cores, 2 per device
    arch = from_catalog("meta-llama/Llama-3.1-70B-Instruct")
    assert arch is not None
    grid = seed_grid(arch.num_attention_heads, arch.max_position_embeddings, 32, 2)
    assert grid.tensor_parallel_sizes == (2, 4, 8, 16, 32)  # multiples of 2, at most 32, dividing 64
    assert grid.batch_sizes == (1, 4, 8, 16, 32, 64, 128)
    assert grid.sequence_lengths == (1024, 2048, 4096, 8192, 16384, 32768, 65536)  # below 131072
    # 40 heads on 12 inf2 cores: of the even sizes up to 12, 6 and 12 do not divide 40
    assert seed_grid(40, 4096, 12, 2).tensor_parallel_sizes == (2, 4, 8, 10)
    # trn2: 4 cores per device, TP 1 and 2 are not candidates
    assert seed_grid(32, 8192, 64, 4).tensor_parallel_sizes == (4, 8, 16, 32)
    first = list(grid.seed_order())[:3]
    assert [trial.key for trial in first] == [(2, 128, 65536), (2, 128, 32768), (2, 128, 16384)]


def test_seed_strategy_skips_shorter_lengths_after_a_success_and_resumes_with_its_rules() -> None:
    grid, _ = _setup(MISTRAL, "inf2.8xlarge")
    strategy = SeedStrategy(grid)
    order, outcomes = _simulate(strategy, lambda trial: trial.batch_size * trial.sequence_length <= 8 * 4096)
    pairs = [(trial.tensor_parallel_size, trial.batch_size) for trial in order]
    for pair in set(pairs):
        tried = [
            trial.sequence_length for trial in order if (trial.tensor_parallel_size, trial.batch_size) == pair
        ]
        assert tried == sorted(tried, reverse=True)
        assert (
            sum(
                1
                for trial in order
                if (trial.tensor_parallel_size, trial.batch_size) == pair and trial.key in outcomes.successes
            )
            <= 1
        )
    assert _longest(outcomes)[(2, 8)] == 4096 and _longest(outcomes)[(2, 1)] == 16384
    # resume from the results alone (the anchor keeps no failures): the seed's rules skip every
    # (TP, batch) with a valid configuration and every batch above the largest valid one
    assert strategy.next_trial(Outcomes(successes=set(outcomes.successes))) is None
    # stopped after any trial and resumed from results + journal, it continues exactly where it was
    for done in range(len(order)):
        resumed = Outcomes()
        for trial in order[:done]:
            if trial.key in outcomes.successes:
                resumed.successes.add(trial.key)
            else:
                resumed.failures[trial.key] = "device-oom"
        assert strategy.next_trial(resumed) == order[done]


@pytest.mark.parametrize(
    ("model", "instance"),
    [
        (MISTRAL, "inf2.8xlarge"),
        ("meta-llama/Llama-3.1-8B-Instruct", "inf2.24xlarge"),
        ("meta-llama/Llama-3.1-70B-Instruct", "trn1.32xlarge"),
        ("Qwen/Qwen2.5-7B-Instruct", "trn2.48xlarge"),
    ],
)
@pytest.mark.parametrize("factor", [0.8, 0.95, 1.0, 1.1, 1.2])
def test_guided_finds_the_seeds_configurations_with_fewer_trials(
    model: str, instance: str, factor: float
) -> None:
    grid, predict = _setup(model, instance)

    def fits(trial: Trial) -> bool:  # the truth: the memory model off by `factor`
        prediction = predict(trial)
        return not prediction.blocking and prediction.peak_bytes * factor <= prediction.budget_bytes

    seed_order, seed = _simulate(SeedStrategy(grid), fits)
    guided_order, guided = _simulate(GuidedStrategy(grid, predict, 0.2), fits)
    assert _longest(guided) == _longest(seed)
    assert len(guided_order) <= len(seed_order)
    assert all(fits(Trial(*key)) for key in guided.successes)  # everything recorded was run and fits
    for key in guided.skipped:
        assert not fits(Trial(*key)), f"skipped {key}, which fits"


def test_guided_never_skips_what_fits_within_the_margin() -> None:
    rng = random.Random(11)
    grid, predict = _setup("meta-llama/Llama-3.1-8B-Instruct", "trn1.32xlarge")
    guided = GuidedStrategy(grid, predict, 0.2)
    for trial in grid.seed_order():
        reason = guided.skip_reason(trial)
        if reason is None or not reason.startswith("memory"):
            continue
        prediction = predict(trial)
        assert prediction.peak_bytes * rng.uniform(0.8, 1.0) > prediction.budget_bytes
        assert "20%" in reason


def test_guided_journals_runtime_topology_errors_as_skips() -> None:
    grid, predict = _setup("meta-llama/Llama-3.1-70B-Instruct", "trn1.32xlarge")
    guided = GuidedStrategy(grid, predict, 0.2)
    reason = guided.skip_reason(Trial(4, 1, 1024))  # trn1 runs 1, 2, 8, 16 or multiples of 32 cores
    assert reason is not None and reason.startswith("tp-unsupported-degree")


@pytest.mark.parametrize(
    ("tail", "returncode", "timed_out", "expected"),
    [
        (["nrt_tensor_allocate: Failed to alloc DEVICE memory"], 1, False, "device-oom"),
        (["ERROR: Estimated peak HBM usage (19.0) exceeds 16GB"], 1, False, "device-oom"),
        (["compiling"], -9, False, "host-oom"),
        (["Killed"], 137, False, "host-oom"),
        (["neuronx-cc: Compilation failed"], 70, False, "compiler-error"),
        (["still compiling"], -15, True, "timeout"),
        (["Segmentation fault"], 139, False, "other"),
    ],
)
def test_failures_are_classified_from_their_last_lines(tail, returncode, timed_out, expected) -> None:
    assert classify(StepResult(returncode, 1.0, timed_out=timed_out, tail=tail)) == expected


def test_cache_config_merge_keeps_everything_and_adds_only_new_entries() -> None:
    existing = cache_config.parse(
        '{"other/model": [{"batch_size": 1, "sequence_length": 4096, "num_cores": 2, "auto_cast_type": "bf16", "note": "kept"}],'
        ' "m": [{"task": "text-generation", "instance_type": "trn1", "batch_size": 4, "sequence_length": 4096, "tensor_parallel_size": 2}]}',
        "cache.json",
    )
    new = [
        cache_config.current_entry(
            "text-generation", "inf2", 2, 4, 4096
        ),  # already there (inf2 compiles as trn1)
        cache_config.current_entry("text-generation", "trn1", 8, 4, 4096),
        cache_config.current_entry("text-generation", "trn1", 8, 4, 4096),  # twice in the input
    ]
    merged, added = cache_config.merge(existing, "m", new)
    assert added == 1
    assert merged["other/model"] == existing["other/model"]
    assert [entry["tensor_parallel_size"] for entry in merged["m"]] == [2, 8]
    legacy = cache_config.legacy_entry(2, 1, 2048, "fp16")
    assert set(legacy) == {"batch_size", "sequence_length", "num_cores", "auto_cast_type"}
    with pytest.raises(ValueError):
        cache_config.current_entry("text-generation", "g5", 1, 1, 1024)
