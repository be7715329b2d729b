"""The performance model: one pure function from (configuration, workload) to TTFT, TPOT,
end-to-end latency, tokens/s and requests/s, each itemized by what it spends time on.

Physics (a roofline per phase, per TP group: :mod:`lmi_config.perf.steps`):

- a decode step reads every weight once and every running sequence's KV cache once, and does
  2 FLOPs per active parameter and token plus the attention over the context: its time is the
  larger of memory time and compute time, plus two all-reduces per layer across the TP group and a
  fixed per-step overhead; under continuous batching it also carries the prefill of the requests
  that arrive meanwhile (one per sequence every ``output_tokens`` steps);
- prefill (the first token) is compute: 2 FLOPs per parameter and token plus causal attention,
  plus its all-reduces and a fixed per-request overhead; a static batch prefills all its sequences
  before the first token.

Queueing (here), the same in both loops. The load is the instance's (a closed loop of users, or an
open loop of requests/s), spread evenly over the copies; a copy runs at most its slots at once.
Throughput saturates at what the slots complete -- more users only wait longer for a slot -- and
Little's law holds in every prediction: requests/s x end-to-end latency = requests in flight. Under
continuous batching a request waits for the decode step in progress and for the prefills ahead of
it, a single server's queue (M/D/1) at the utilisation its arrivals give: in an open loop the rate,
in a closed loop the throughput the users' own requests make (at most the others in flight).

The 99th percentile of TTFT over requests (what latency targets such as MLPerf's hold) adds the
tails of those waits: a whole decode step in progress rather than half of one, and the M/D/1 wait's
99th percentile from its exponential tail (Cramer-Lundberg: the decay rate and constant of M/D/1
at the same utilisation), bounded in a closed loop by the others' prefills as the mean is. A static
batch waits for nothing random: its p99 is its mean. TPOT is a mean over a request's own steps, so
its spread over requests is small and it is not widened.

What a benchmark's harness adds (users started in waves, a warm-up counted in TTFT) is a
:class:`Harness`, fitted per source by ``scripts/fit_perf.py`` and never folded into an engine's
constants; a prediction for an endpoint has none.

Bytes come from ``sizing`` (:mod:`lmi_config.perf.costs`); device facts from
``data/perf_devices.json``; the few efficiencies of each engine family from ``data/perf_fit.json``.
No I/O beyond those data files.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from lmi_config.knowledge.perf_data import measured_caveats
from lmi_config.perf.costs import Costs, compiled_lengths, costs_of
from lmi_config.perf.devices import UnsupportedConfiguration, fitted_efficiency
from lmi_config.perf.steps import (
    MS,
    count_text,
    decode_step,
    decoding_ms,
    dominant,
    first_token,
    phase,
    prefill_seconds,
)
from lmi_config.perf.types import (
    Configuration,
    Efficiency,
    Harness,
    Phase,
    Prediction,
    Term,
    Workload,
)

RATE_BISECTIONS = 40  # halvings of [0, slots]: the load under a request rate to ~1e-12 of the slots
NO_HARNESS = Harness()
PERCENTILE = 0.99  # the share of requests the p99 TTFT covers


class _Copy(NamedTuple):
    """One model copy under a workload: what its steps cost, computed once per prediction."""

    configuration: Configuration
    workload: Workload
    costs: Costs
    params: Efficiency
    harness: Harness
    static: bool
    slots: int
    context: float  # positions a decode step attends over on average
    prompt: int  # prompt tokens prefill computes
    prefill_ms: float  # one prompt's prefill and its all-reduces: the prefill queue's service time


class _Service(NamedTuple):
    """A request served by a copy with ``running`` sequences decoding at once (no wait for a slot)."""

    ttft: Phase
    tpot: Phase
    milliseconds: float  # TTFT + (output - 1) x TPOT
    tail_ms: float = 0.0  # what the 99th percentile of TTFT adds to its mean (the waits' tails)


def predict(
    configuration: Configuration,
    workload: Workload,
    efficiency: Efficiency | None = None,
    harness: Harness | None = None,
) -> Prediction:
    """Predicted TTFT, TPOT, end-to-end latency, output tokens/s and requests/s per instance.

    ``efficiency`` overrides the fitted parameters and ``harness`` adds a benchmark's own effects
    (the fit script evaluates measured rows with both). Raises :class:`UnsupportedConfiguration` when
    the device or the backend has no facts.
    """
    _check(configuration, workload)
    costs = costs_of(configuration)
    caveat = _measured_caveat(configuration, costs.family)
    if caveat is not None and caveat["verdict"] == "refuse":
        # no figures rather than wrong ones (data/perf_caveats.json)
        raise UnsupportedConfiguration(
            f"a mixture of experts on {caveat['on']} ({costs.device.accelerator_name}) is not predicted "
            f"({_how_far(caveat)}); measure it with `lmi-config search`"
        )
    params = efficiency or fitted_efficiency(costs.family)
    context, prompt = compiled_lengths(configuration, costs, workload)
    copy = _Copy(
        configuration,
        workload,
        costs,
        params,
        harness or NO_HARNESS,
        configuration.batching == "static",
        configuration.max_concurrent_sequences,
        context,
        prompt,
        prefill_seconds(costs, params, prompt) * MS,
    )
    if workload.request_rate is not None:
        prediction = _open_loop(copy, workload.request_rate)
    else:
        every_slot = configuration.max_concurrent_sequences * configuration.copies
        prediction = _closed_loop(copy, float(workload.concurrency or every_slot))
    if caveat is not None:
        prediction = prediction._replace(
            caveat=f"a mixture of experts on {caveat['on']} is predicted too fast: {_how_far(caveat)}; "
            "measure before relying on them"
        )
    return prediction


def _measured_caveat(configuration: Configuration, family: str) -> dict[str, Any] | None:
    """Where measured runs of this layout on this engine family were far from the figures, if they were."""
    if not configuration.arch.num_experts:
        return None
    return next((entry for entry in measured_caveats() if family in entry["families"]), None)


def _how_far(caveat: dict[str, Any]) -> str:
    """How far measured runs were from the figures, as the data file states it."""
    ttft, tpot = (f"{low:g}-{high:g}x" for low, high in (caveat["ttft_ratio"], caveat["tpot_ratio"]))
    return (
        f"measured runs ({caveat['measured']}) took {ttft} the predicted TTFT and {tpot} the TPOT "
        f"({caveat['statistic']})"
    )


def _serve(copy: _Copy, running: float, users: float, arrivals: float | None) -> _Service:
    """A request at a copy decoding ``running`` sequences at once, with ``users`` requests in flight
    there (the mean an arrival sees under a rate); ``arrivals`` requests/s per copy in an open loop,
    None in a closed one."""
    workload = copy.workload
    tpot = decode_step(copy.costs, copy.params, running, copy.context, workload, copy.static, copy.slots)
    terms = first_token(copy.costs, copy.params, running if copy.static else 1, copy.prompt)
    rest_ms = max(workload.output_tokens - 1, 0) * tpot.milliseconds
    tail_ms = 0.0
    if not copy.static:
        waits, tail_ms = _waits(copy, running, users, arrivals, decoding_ms(tpot), rest_ms, terms)
        terms += waits
    ttft = phase("TTFT", terms)
    return _Service(ttft, tpot, ttft.milliseconds + rest_ms, tail_ms)


def _waits(
    copy: _Copy,
    running: float,
    users: float,
    arrivals: float | None,
    step_ms: float,
    rest_ms: float,
    own: list[Term],
) -> tuple[list[Term], float]:
    """What a request waits for before its prefill under continuous batching -- the decode step in
    progress (half of one, as often as others are decoding), the prefills ahead of it, and what the
    harness adds -- and what the 99th percentile of those waits adds to their mean."""
    prefill_ms = copy.prefill_ms
    harness = copy.harness
    terms = []
    tail_ms = 0.0
    if arrivals is not None:
        busy = min(users, 1.0)  # an arrival sees the mean in flight (PASTA)
        terms.append(
            Term("step in progress", busy * step_ms / 2, f"half a decode step, {busy:.0%} of the time")
        )
        rho = arrivals * prefill_ms / MS
        wait_ms = rho * prefill_ms / (2 * (1 - rho)) if rho < 1 else math.inf
        note = f"queue of prefills at utilisation {rho:.2f} (M/D/1, requests arriving at random)"
        terms.append(Term("waiting for other prefills", wait_ms, note))
        tail_ms = _step_tail(busy, step_ms) + _queue_tail(wait_ms, rho, prefill_ms)
    else:
        busy = min(running - 1, 1.0)
        if busy > 0:
            terms.append(
                Term("step in progress", busy * step_ms / 2, "half a decode step of the running sequences")
            )
        if running > 1:
            queue, rho = _closed_queue(
                running, prefill_ms, sum(t.milliseconds for t in own + terms) + rest_ms
            )
            terms.append(queue)
            # the tail of a closed loop's queue is bounded by the others, as its mean is
            tail = _queue_tail(queue.milliseconds, rho, prefill_ms)
            tail_ms = _step_tail(busy, step_ms) + min(tail, (running - 1) * prefill_ms - queue.milliseconds)
    if harness.burst_wait_fraction and users > 1 and arrivals is None:
        wait_ms = harness.burst_wait_fraction * (users - 1) * prefill_ms
        note = f"{harness.burst_wait_fraction:.2f} of the {count_text(users - 1)} other users' prefills (fitted per source)"
        terms.append(Term("harness: users started in waves", wait_ms, note))
    return terms, max(tail_ms, 0.0)


def _step_tail(busy: float, step_ms: float) -> float:
    """What the 99th percentile of the wait for the step in progress adds to its mean: the residual
    of a step is uniform over it, found busy ``busy`` of the time."""
    if busy <= 1 - PERCENTILE:
        return 0.0
    return step_ms * (1 - (1 - PERCENTILE) / busy) - busy * step_ms / 2


def _queue_tail(mean_ms: float, rho: float, service_ms: float) -> float:
    """What the 99th percentile of an M/D/1 wait adds to its mean ``mean_ms``, at utilisation ``rho``
    and service time ``service_ms``: the wait's tail is P(W > t) = C exp(-theta t), theta D = x the
    positive root of rho (e^x - 1) = x and C = (1 - rho) / (rho e^x - 1) (Cramer-Lundberg for M/G/1,
    exact in the limit); none when fewer than 1 % of requests wait that long."""
    if rho >= 1 or not math.isfinite(mean_ms):
        return math.inf
    if rho <= 1 - PERCENTILE or service_ms <= 0:
        return 0.0
    low, high = 0.0, 1.0
    while rho * math.expm1(high) <= high:  # the root lies above x = 0, where both sides meet
        high *= 2
    for _ in range(RATE_BISECTIONS):
        middle = (low + high) / 2
        low, high = (middle, high) if rho * math.expm1(middle) < middle else (low, middle)
    x = high
    scale = (1 - rho) / (rho * math.exp(x) - 1)
    if scale <= 1 - PERCENTILE:
        return 0.0
    return max(math.log(scale / (1 - PERCENTILE)) * service_ms / x - mean_ms, 0.0)


def _closed_queue(running: float, prefill_ms: float, service_ms: float) -> tuple[Term, float]:
    """The prefill queue of a closed loop and its utilisation: the ``running`` requests' own
    arrivals, at the throughput they make (running / end-to-end, Little's law), queue at a single
    server as M/D/1 -- mean wait rho p / (2 (1 - rho)) at rho = running x p / end-to-end -- but never
    for more than the others. With E = ``service_ms`` + wait that is a quadratic in E; its larger root
    is the one with rho < 1."""
    total = running * prefill_ms
    end_to_end = (
        (service_ms + total) + math.sqrt((service_ms - total) ** 2 + 2 * running * prefill_ms**2)
    ) / 2
    wait_ms = min(max(end_to_end - service_ms, 0.0), (running - 1) * prefill_ms)
    rho = total / (service_ms + wait_ms) if service_ms + wait_ms > 0 else 0.0
    note = f"queue of the {count_text(running - 1)} others' prefills at utilisation {rho:.2f} (M/D/1, closed loop)"
    return Term("waiting for other prefills", wait_ms, note), rho


def _closed_loop(copy: _Copy, in_flight: float) -> Prediction:
    """``in_flight`` requests at the instance, each user sending its next request when one ends:
    spread over the copies, a copy with a request runs at least that one; past its slots the rest
    wait for a slot, so throughput stays at what the slots complete and only latency grows."""
    configuration = copy.configuration
    slots = copy.slots
    users = max(in_flight / configuration.copies, 1.0)  # at a copy serving any
    running = min(users, slots)
    service = _serve(copy, running, users, None)
    ttft = service.ttft
    notes = _notes(copy)
    wait_ms = 0.0
    if users > slots:
        # Little's law at the copy: users = slots x (service + wait) / service
        wait_ms = (users - slots) / slots * service.milliseconds
        ttft = _with(
            ttft, Term("queueing", wait_ms, f"{count_text(users - slots)} requests wait for {slots} slots")
        )
        notes.append(
            f"{count_text(users)} requests in flight per copy are above the {slots} sequences a copy runs at once"
        )
    if in_flight < configuration.copies:
        notes.append(
            f"{count_text(in_flight)} request(s) in flight over {configuration.copies} copies: each runs alone"
        )
    busy_copies = in_flight / users
    requests_per_second = busy_copies * running / (service.milliseconds / MS) if service.milliseconds else 0.0
    return _prediction(
        copy, ttft, service, running, service.milliseconds + wait_ms, requests_per_second, notes
    )


def _open_loop(copy: _Copy, rate: float) -> Prediction:
    """Requests arriving at ``rate`` per second at the instance, spread over the copies: the mean in
    flight at a copy is its rate times the request latency at that load (Little's law), found by
    bisection since the latency grows with the load; a request alone is never faster than at one in
    flight. The capacity is the fewer of what a copy completes with every slot busy and the prompts it
    prefills per second; a rate at or above it, or one whose load would not fit the slots, is
    overloaded: its queue grows without bound."""
    configuration = copy.configuration
    copies = configuration.copies
    slots = copy.slots
    per_copy = rate / copies
    full = _serve(copy, slots, slots, None)
    capacity = min(
        slots / (full.milliseconds / MS) if full.milliseconds > 0 else math.inf,
        MS / copy.prefill_ms if copy.prefill_ms > 0 else math.inf,
    )

    def served(in_flight: float) -> _Service:
        return _serve(copy, min(max(in_flight, 1.0), slots), in_flight, per_copy)

    if not (per_copy < capacity and per_copy * served(slots).milliseconds / MS <= slots):
        # what arrives cannot all be served: the queue grows without bound
        why = (
            f"the {capacity * copies:.3g} the instance completes"
            if per_copy >= capacity
            else f"its {slots} sequence slots per copy hold at that load"
        )
        saturated = _closed_loop(copy, float(slots * copies))
        return saturated._replace(
            notes=(
                *saturated.notes,
                f"{rate:g} requests/s are more than {why}: the queue grows without bound",
            ),
            capacity_requests_per_second=capacity * copies,
            overloaded=True,
        )
    low, high = 0.0, float(slots)
    for _ in range(RATE_BISECTIONS):
        middle = (low + high) / 2
        low, high = (middle, high) if per_copy * served(middle).milliseconds / MS > middle else (low, middle)
    service = served(high)
    notes = [
        *_notes(copy),
        f"at {rate:g} requests/s, {high * copies:.1f} are in flight on average (Little's law)",
    ]
    prediction = _prediction(
        copy, service.ttft, service, min(max(high, 1.0), slots), service.milliseconds, rate, notes
    )
    return prediction._replace(capacity_requests_per_second=capacity * copies)


def _prediction(
    copy: _Copy,
    ttft: Phase,
    service: _Service,
    running: float,
    end_to_end_ms: float,
    requests_per_second: float,
    notes: list[str],
) -> Prediction:
    output = copy.workload.output_tokens
    return Prediction(
        ttft_p99_ms=ttft.milliseconds + service.tail_ms,
        engine_family=copy.costs.family,
        batching="static" if copy.static else "continuous",
        running_sequences=math.ceil(running),
        ttft=ttft,
        tpot=service.tpot,
        end_to_end_ms=end_to_end_ms,
        output_tokens_per_second=requests_per_second * output,
        requests_per_second=requests_per_second,
        notes=tuple(notes),
        requests_in_flight=requests_per_second * end_to_end_ms / MS,
    )


def _notes(copy: _Copy) -> list[str]:
    notes = []
    if copy.prompt != copy.workload.input_tokens:
        notes.append(
            f"prefill computes the {copy.workload.input_tokens}-token prompt padded to its {copy.prompt}-token bucket"
        )
    if copy.configuration.pipeline_parallel_degree > 1:
        notes.append("pipeline stages are counted one after the other (no micro-batch overlap)")
    return notes


def _with(ttft: Phase, term: Term) -> Phase:
    terms = (*ttft.terms, term)
    return Phase(ttft.name, ttft.milliseconds + term.milliseconds, terms, dominant(terms))


def _check(configuration: Configuration, workload: Workload) -> None:
    if configuration.tensor_parallel_degree < 1 or configuration.pipeline_parallel_degree < 1:
        raise UnsupportedConfiguration("tensor and pipeline parallel degrees must be at least 1")
    if configuration.max_concurrent_sequences < 1 or configuration.copies < 1:
        raise UnsupportedConfiguration("max concurrent sequences and copies must be at least 1")
    if workload.input_tokens < 1 or workload.output_tokens < 1:
        raise UnsupportedConfiguration("a request needs at least one input and one output token")
    if workload.concurrency is not None and not (1 <= workload.concurrency < math.inf):
        raise UnsupportedConfiguration("concurrency must be at least 1")
    if workload.request_rate is not None and not (0 < workload.request_rate < math.inf):
        raise UnsupportedConfiguration("a request rate must be a positive number of requests per second")
    if workload.request_rate is not None and workload.concurrency is not None:
        raise UnsupportedConfiguration("give a concurrency or a request rate, not both")
