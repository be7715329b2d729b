"""The 99th percentile of TTFT (what latency targets such as MLPerf's are held at): the mean with the
tails of its waits. The M/D/1 tail is checked against a simulated queue, and the percentile against
what it must be in every prediction: never below the mean, equal to it where nothing random is
waited for (a static batch), and growing with the load."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lmi_config.knowledge.instances import resolve_instance
from lmi_config.modelarch import from_catalog
from lmi_config.perf import Configuration, Workload, predict
from lmi_config.perf.model import _queue_tail


def _simulated_wait_p99(rho: float, service: float, arrivals: int = 200_000) -> tuple[float, float]:
    """(mean, 99th percentile) of the wait of a simulated M/D/1 queue (Lindley's recursion)."""
    generator = random.Random(20261202)
    wait, waits = 0.0, []
    rate = rho / service
    for _ in range(arrivals):
        waits.append(wait)
        wait = max(wait + service - generator.expovariate(rate), 0.0)
    waits.sort()
    return sum(waits) / len(waits), waits[int(0.99 * len(waits))]


@pytest.mark.parametrize("rho", [0.1, 0.3, 0.6, 0.85])
def test_the_md1_tail_is_the_simulated_queues_99th_percentile(rho: float) -> None:
    service = 100.0  # ms
    mean = rho * service / (2 * (1 - rho))  # Pollaczek-Khinchine for deterministic service
    simulated_mean, simulated_p99 = _simulated_wait_p99(rho, service)
    assert simulated_mean == pytest.approx(mean, rel=0.05)  # the simulation is an M/D/1 queue
    predicted_p99 = mean + _queue_tail(mean, rho, service)
    assert predicted_p99 == pytest.approx(simulated_p99, rel=0.1, abs=2.0)


def test_below_one_percent_waiting_there_is_no_tail() -> None:
    assert _queue_tail(0.05, 0.005, 100.0) == 0.0


def _configuration(backend: str, instance: str, tp: int, batch: int, batching: str) -> Configuration:
    model = from_catalog("meta-llama/Llama-3.1-8B-Instruct")
    assert model is not None
    return Configuration(
        model, resolve_instance(instance), backend, tp, batch, sequence_length=8192, batching=batching
    )


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(
    engine=st.sampled_from(
        (
            ("vllm", "ml.p5.48xlarge", 1),
            ("tensorrt-llm", "ml.p5.48xlarge", 2),
            ("nxdi", "ml.trn1.32xlarge", 8),
        )
    ),
    users=st.integers(1, 256),
    prompt=st.integers(16, 8192),
    output=st.integers(8, 1024),
)
def test_the_p99_ttft_is_never_below_the_mean(
    engine: tuple[str, str, int], users: int, prompt: int, output: int
) -> None:
    backend, instance, tp = engine
    prediction = predict(
        _configuration(backend, instance, tp, 64, "continuous"), Workload(prompt, output, users)
    )
    assert prediction.ttft_p99_ms >= prediction.ttft_ms


def test_a_static_batch_waits_for_nothing_random_so_its_p99_is_its_mean() -> None:
    configuration = _configuration("transformers-neuronx", "ml.inf2.48xlarge", 24, 8, "static")
    prediction = predict(configuration, Workload(4096, 4096))
    assert prediction.ttft_p99_ms == prediction.ttft_ms


def test_one_request_at_a_time_has_no_tail_and_more_users_widen_it() -> None:
    configuration = _configuration("vllm", "ml.p5.48xlarge", 1, 64, "continuous")
    alone = predict(configuration, Workload(8192, 1024, 1))
    assert alone.ttft_p99_ms == alone.ttft_ms  # nothing in progress, no one ahead
    spreads = [
        (lambda p: p.ttft_p99_ms - p.ttft_ms)(predict(configuration, Workload(8192, 1024, users)))
        for users in (4, 16, 64)
    ]
    assert spreads == sorted(spreads) and spreads[0] > 0
