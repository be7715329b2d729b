"""The performance model's fit and held-out checks (issue 18): how strongly a family with few
measured rows is held to plausible parameters, cross-validation by hardware, and how tensor
parallelism scales a short prompt's prefill (the terms that do not shrink with TP)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest
from conftest import ROOT
from test_perf_model import _cross_validate, _script, _slowed_row

from lmi_config.knowledge.instances import resolve_instance
from lmi_config.knowledge.perf_data import fitted_families
from lmi_config.modelarch import from_catalog
from lmi_config.perf import Configuration, Workload, predict

LLAMA_8B = from_catalog("meta-llama/Llama-3.1-8B-Instruct")
LLAMA_70B = from_catalog("meta-llama/Llama-3.1-70B-Instruct")


def _fit_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fit_perf", ROOT / "scripts" / "fit_perf.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- tensor parallelism at prefill -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("instance", "backend", "batching"),
    [("ml.p5.48xlarge", "vllm", "continuous"), ("ml.trn1.32xlarge", "transformers-neuronx", "static")],
)
def test_tp_8_prefill_of_a_short_prompt_is_far_from_8_times_faster_than_tp_1(
    instance: str, backend: str, batching: str
) -> None:
    # the prompt's FLOPs divide by TP; the all-reduces (two per layer) and the fixed time before
    # the first token do not: a short prompt gains much less from TP 8 than a long one
    assert LLAMA_8B is not None

    def ttft(tp: int, prompt: int) -> float:
        configuration = Configuration(
            LLAMA_8B,
            resolve_instance(instance),
            backend,
            tp,
            1,
            sequence_length=16384,
            batching=batching,
        )
        return predict(configuration, Workload(prompt, 16, 1)).ttft_ms

    short_gain = ttft(1, 128) / ttft(8, 128)
    long_gain = ttft(1, 8192) / ttft(8, 8192)
    assert 1 < short_gain < 4
    assert short_gain < long_gain < 8


def test_the_collectives_of_a_prefill_grow_with_the_prompt_and_the_layers() -> None:
    assert LLAMA_8B is not None and LLAMA_70B is not None
    p5 = resolve_instance("ml.p5.48xlarge")

    def collectives(model: object, prompt: int) -> float:
        configuration = Configuration(model, p5, "vllm", 8, 1)  # type: ignore[arg-type]
        phase = predict(configuration, Workload(prompt, 16, 1)).ttft
        return next(term.milliseconds for term in phase.terms if term.name == "collectives")

    # bytes over NVLink grow with the tokens; the latency per all-reduce does not
    assert collectives(LLAMA_8B, 8192) > collectives(LLAMA_8B, 128)
    # 80 layers of width 8,192 all-reduce more and larger activations than 32 of width 4,096
    assert collectives(LLAMA_70B, 1024) > 2 * collectives(LLAMA_8B, 1024)


def test_neuron_computes_the_padded_and_replicated_heads_it_stores() -> None:
    # Llama-3-8B: 32 query heads, 8 KV heads. At TP 2 and TP 8 nothing is padded: the prompt's
    # FLOPs divide exactly by TP. At TP 24 the query heads are padded to 48 and the KV heads
    # replicated to 24: each core multiplies the weights it holds, so TP 24 is less than 3x TP 8
    assert LLAMA_8B is not None
    inf2 = resolve_instance("ml.inf2.48xlarge")

    def prefill_compute(tp: int) -> float:
        configuration = Configuration(
            LLAMA_8B, inf2, "transformers-neuronx", tp, 1, sequence_length=4096, batching="static"
        )
        phase = predict(configuration, Workload(256, 16)).ttft  # attention is ~3 % of it
        return next(term.milliseconds for term in phase.terms if term.name == "compute")

    assert prefill_compute(2) / prefill_compute(8) == pytest.approx(4.0)
    assert 2.4 < prefill_compute(8) / prefill_compute(24) < 2.8


# --- the prior -----------------------------------------------------------------------------------


def test_the_prior_grows_in_proportion_below_five_figures_per_parameter() -> None:
    fit = _fit_script()
    enough = fit.FIGURES_PER_PARAMETER * len(fit.PARAMETERS)
    assert fit.prior_weight(enough) == fit.PRIOR_WEIGHT
    assert fit.prior_weight(10 * enough) == fit.PRIOR_WEIGHT
    assert fit.prior_weight(enough // len(fit.PARAMETERS)) == pytest.approx(
        len(fit.PARAMETERS) * fit.PRIOR_WEIGHT
    )
    assert fit.prior_weight(1) > fit.prior_weight(2) > fit.prior_weight(8)


def test_nxd_inference_borrows_its_priors_from_transformers_neuronx_on_the_same_cores() -> None:
    # three NxD Inference rows cannot pin eight parameters; held towards generic priors its fit moved
    # far with any change of the physics, held towards what transformers-neuronx's rows measured on
    # the same NeuronCores it predicts NxD models left out in turn about twice as well
    fit = _fit_script()
    enough = fit.FIGURES_PER_PARAMETER * len(fit.PARAMETERS)
    families = fitted_families()
    nxd, tnx = families["neuron-nxd"], families["neuron-tnx"]
    assert sum(r["split"] == "fitted" for r in nxd["residuals"]) < enough
    assert nxd["priors_from"] == "neuron-tnx" and tnx["priors_from"].startswith("generic")
    for name, parameter in nxd["parameters"].items():
        assert parameter["prior"] == tnx["parameters"][name]["value"], name
        _, lower, upper, _, _ = fit.PARAMETERS[name]
        assert lower <= parameter["value"] <= upper, name
    for name, parameter in tnx["parameters"].items():
        assert parameter["prior"] == fit.PARAMETERS[name][0], name


# --- cross-validation by hardware -----------------------------------------------------------------


def test_cross_validation_can_leave_each_hardware_out(tmp_path: Path) -> None:
    # H100 rows are what the model predicts, H200 rows twice as slow: fitted on both, the
    # parameters split the difference; each hardware predicted from the other alone misses by
    # half or double, and leaving one hardware out must show it
    h100 = {"hardware": "H100-SXM", "instance": "ml.p5.48xlarge"}
    h200 = {"hardware": "H200-SXM", "instance": "ml.p5e.48xlarge"}
    rows = [_slowed_row(1.0, id=f"A{b}", batch_size=b, **h100) for b in (1, 8, 32)]
    rows += [_slowed_row(2.0, id=f"B{b}", batch_size=b, **h200) for b in (1, 8, 32)]
    fitted, stdout = _cross_validate(tmp_path, rows, "--leave-out", "hardware")
    line = next(text for text in stdout.splitlines() if text.startswith("GPU: leave one hardware out:"))
    found = re.search(r"tpot MAPE ([0-9.]+) %", line)
    assert found is not None, line
    assert float(found.group(1)) > 40 > fitted["tpot_mape_percent"]


def test_cross_validation_refuses_a_grouping_it_does_not_know(tmp_path: Path) -> None:
    completed = _script("scripts/fit_perf.py", "--cross-validate", "--leave-out", "color")
    assert completed.returncode == 2
    assert "invalid choice: 'color'" in completed.stderr and "Traceback" not in completed.stderr
