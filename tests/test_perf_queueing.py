"""Queueing in the performance model (issue 32): the invariants every prediction keeps, in a closed
loop (a fixed number of users) and an open one (a request rate), over generated configurations and
workloads -- Little's law, throughput that saturates at capacity while only latency grows, and a
system load spread over the copies."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lmi_config.knowledge.instances import resolve_instance
from lmi_config.modelarch import from_catalog
from lmi_config.perf import Configuration, Workload, predict
from lmi_config.perf.types import Harness

MODELS = ("meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-70B-Instruct")
# (instance, backend, TP degrees it runs, batching)
ENGINES = (
    ("ml.p5.48xlarge", "vllm", (1, 2, 4, 8), "continuous"),
    ("ml.p5.48xlarge", "tensorrt-llm", (1, 2, 4, 8), "continuous"),
    ("ml.inf2.48xlarge", "transformers-neuronx", (8, 12, 24), "continuous"),
    ("ml.inf2.48xlarge", "transformers-neuronx", (8, 24), "static"),
    ("ml.trn1.32xlarge", "nxdi", (8, 16, 32), "continuous"),
)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def configurations(draw: st.DrawFn) -> Configuration:
    model = from_catalog(draw(st.sampled_from(MODELS)))
    assert model is not None
    instance, backend, degrees, batching = draw(st.sampled_from(ENGINES))
    tp = draw(st.sampled_from(degrees))
    located = resolve_instance(instance)
    copies = draw(st.integers(1, max(located.num_cores // tp, 1)))
    return Configuration(
        model,
        located,
        backend,
        tp,
        draw(st.sampled_from((1, 4, 16, 64, 256))),
        sequence_length=8192,
        copies=copies,
        batching=batching,
    )


def _workload(data: st.DataObject, **load: float | None) -> Workload:
    return Workload(data.draw(st.integers(16, 4096)), data.draw(st.integers(8, 1024)), **load)  # type: ignore[arg-type]


@SETTINGS
@given(configuration=configurations(), data=st.data())
def test_littles_law_holds_in_every_closed_loop_prediction(
    configuration: Configuration, data: st.DataObject
) -> None:
    users = data.draw(st.integers(1, 4 * configuration.max_concurrent_sequences * configuration.copies))
    prediction = predict(configuration, _workload(data, concurrency=users))
    # requests/s x end-to-end latency = requests in flight, waiting or served
    assert prediction.requests_per_second * prediction.end_to_end_ms / 1000 == pytest.approx(users, rel=1e-9)
    assert prediction.requests_in_flight == pytest.approx(users, rel=1e-9)


@SETTINGS
@given(configuration=configurations(), data=st.data(), share=st.floats(0.01, 0.95))
def test_littles_law_holds_under_a_request_rate_the_instance_completes(
    configuration: Configuration, data: st.DataObject, share: float
) -> None:
    workload = _workload(data)
    capacity = predict(configuration, workload._replace(request_rate=1e-3)).capacity_requests_per_second
    assert capacity is not None and capacity > 0
    rate = share * capacity
    prediction = predict(configuration, workload._replace(request_rate=rate))
    if prediction.overloaded:
        return  # the load the rate makes does not fit the slots: said so, not predicted
    assert prediction.requests_per_second == pytest.approx(rate)
    in_flight = prediction.requests_per_second * prediction.end_to_end_ms / 1000
    assert in_flight == pytest.approx(prediction.requests_in_flight, rel=1e-9)
    # the mean in flight is what the bisection found for that rate and latency
    assert float(prediction.notes[-1].split(", ")[1].split(" ")[0]) == pytest.approx(in_flight, abs=0.06)


@SETTINGS
@given(configuration=configurations(), data=st.data())
def test_throughput_grows_with_users_up_to_the_slots_and_is_flat_after(
    configuration: Configuration, data: st.DataObject
) -> None:
    workload = _workload(data)
    slots = configuration.max_concurrent_sequences * configuration.copies
    loads = sorted({1, 2, 3, slots // 2 or 1, slots - 1 or 1, slots, slots + 1, 2 * slots, 8 * slots})
    predictions = [predict(configuration, workload._replace(concurrency=users)) for users in loads]
    throughputs = [p.output_tokens_per_second for p in predictions]
    assert all(
        later >= earlier * (1 - 1e-9) for earlier, later in zip(throughputs, throughputs[1:], strict=False)
    )
    saturated = [p for users, p in zip(loads, predictions, strict=True) if users >= slots]
    # past the slots more users only wait: throughput stays at capacity, latency grows
    assert all(
        p.output_tokens_per_second == pytest.approx(saturated[0].output_tokens_per_second) for p in saturated
    )
    assert all(p.tpot_ms == pytest.approx(saturated[0].tpot_ms) for p in saturated)
    latencies = [p.end_to_end_ms for p in saturated]
    assert latencies == sorted(latencies) and (len(latencies) < 2 or latencies[-1] > latencies[0])


@SETTINGS
@given(configuration=configurations(), data=st.data())
def test_a_system_load_is_spread_over_the_copies(configuration: Configuration, data: st.DataObject) -> None:
    copies = configuration.copies
    per_copy = data.draw(st.integers(1, 2 * configuration.max_concurrent_sequences))
    workload = _workload(data)
    one = configuration._replace(copies=1)
    alone = predict(one, workload._replace(concurrency=per_copy))
    spread = predict(configuration, workload._replace(concurrency=per_copy * copies))
    # copies x per-copy load = system load: each copy runs what one copy runs at its share
    assert spread.ttft_ms == pytest.approx(alone.ttft_ms) and spread.tpot_ms == pytest.approx(alone.tpot_ms)
    assert spread.output_tokens_per_second == pytest.approx(copies * alone.output_tokens_per_second)
    # and a rate is spread alike
    rate = 0.3 * (predict(one, workload._replace(request_rate=1e-3)).capacity_requests_per_second or 0.0)
    if rate > 0:
        alone_rate = predict(one, workload._replace(request_rate=rate))
        spread_rate = predict(configuration, workload._replace(request_rate=rate * copies))
        assert spread_rate.overloaded == alone_rate.overloaded
        assert spread_rate.ttft_ms == pytest.approx(alone_rate.ttft_ms)
        assert spread_rate.requests_per_second == pytest.approx(copies * alone_rate.requests_per_second)


def test_fewer_users_than_copies_each_run_alone() -> None:
    model = from_catalog("meta-llama/Llama-3.1-8B-Instruct")
    assert model is not None
    eight = Configuration(model, resolve_instance("ml.p5.48xlarge"), "vllm", 1, 64, copies=8)
    one_user = predict(eight, Workload(1024, 256, concurrency=1))
    alone = predict(eight._replace(copies=1), Workload(1024, 256, concurrency=1))
    assert one_user.tpot_ms == pytest.approx(alone.tpot_ms)
    assert one_user.output_tokens_per_second == pytest.approx(alone.output_tokens_per_second)
    three = predict(eight, Workload(1024, 256, concurrency=3))
    assert three.output_tokens_per_second == pytest.approx(3 * alone.output_tokens_per_second)


def test_a_harness_adds_its_named_wait_and_a_prediction_without_one_is_the_engines() -> None:
    model = from_catalog("meta-llama/Llama-3.1-8B-Instruct")
    assert model is not None
    configuration = Configuration(model, resolve_instance("ml.p5.48xlarge"), "vllm", 1, 64)
    workload = Workload(1024, 256, concurrency=32)
    engine = predict(configuration, workload)
    waves = predict(configuration, workload, harness=Harness(burst_wait_fraction=0.5))
    terms = {term.name: term.milliseconds for term in waves.ttft.terms}
    assert terms["harness: users started in waves"] > 0
    assert not any(term.name.startswith("harness") for term in engine.ttft.terms)
    assert waves.ttft_ms == pytest.approx(engine.ttft_ms + terms["harness: users started in waves"])
    assert waves.tpot_ms == engine.tpot_ms
    # Little's law holds with the harness too
    assert waves.requests_per_second * waves.end_to_end_ms / 1000 == pytest.approx(32)
