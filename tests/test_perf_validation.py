"""Validation by source (issue 32): a harness's own effects are fitted apart from the engine's
constants; every development source is predicted by a fit that never saw it, and that error is what
each prediction carries; plan's pick is checked against the measured best."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import ROOT, shared_path
from test_perf_model import _gpu_row, _script

from lmi_config.knowledge.perf_data import fitted_families
from lmi_config.perf import Efficiency, predict
from lmi_config.perf.error import intervals
from lmi_config.perf.fit import fit_rows, split_rows
from lmi_config.perf.measured import read_row, source_of
from lmi_config.perf.types import Harness

TRUTH = Efficiency(0.6, 0.5, 0.8, 1.0, 20.0, 25.0, 12.0)


def _benchmark_module(name: str) -> ModuleType:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _measured(row: dict[str, Any], harness: Harness | None) -> dict[str, Any]:
    """A row whose figures are what the model predicts with ``TRUTH`` and the harness ``harness``."""
    read = read_row(row)
    assert not isinstance(read, str), read
    prediction = predict(read.configuration, read.workload, TRUTH, harness)
    return {**row, "ttft_ms": prediction.ttft_ms, "tpot_ms": prediction.tpot_ms}


def test_a_harness_that_starts_its_users_in_waves_is_fitted_apart_from_the_engine() -> None:
    # two sources measure the same engine: one harness starts its users together (each waits for half
    # the others' prefills), the other does not; the wait is fitted to the first harness, not to the
    # engine's per-request overhead, which stays what one request alone takes
    rows = []
    for harness, waves in (("waves", Harness(burst_wait_fraction=0.5)), ("steady", None)):
        for users in (1, 4, 16, 64):
            for tp in (1, 4):
                row = _gpu_row(
                    id=f"{harness}-{users}-{tp}",
                    source_group=harness,
                    engine_family="gpu-vllm",
                    tp=tp,
                    batch_size=64,
                    concurrency=users,
                )
                rows.append(_measured(row, waves))
    fitted, _ = split_rows("gpu-vllm", rows)
    found = fit_rows(fitted)
    assert found.harnesses["waves"].burst_wait_fraction == pytest.approx(0.5, rel=0.25)
    assert found.harnesses["steady"].burst_wait_fraction < 0.05
    assert found.efficiency.request_overhead_ms == pytest.approx(TRUTH.request_overhead_ms, rel=0.25)


def test_the_stored_fit_names_harness_terms_apart_and_validates_every_source_left_out() -> None:
    for family, fit in fitted_families().items():
        assert "prefill_wait_fraction" not in fit["parameters"]  # a harness effect, not the engine's
        assert set(fit["harnesses"]) and all(
            "burst_wait_fraction" in terms for terms in fit["harnesses"].values()
        )
        validation = fit["cross_validation"]
        assert validation["left_out"] == "source"
        assert set(validation["folds"]) == set(fit["sources"]) or len(fit["sources"]) == 1, family
        left = {entry["campaign"] for entry in validation["residuals"]}
        assert left == set(validation["folds"]), family
        for metric, interval in intervals(family).items():
            assert interval.low < 1 < interval.high, (family, metric)


def test_a_development_row_is_predicted_by_the_fit_that_left_its_source_out() -> None:
    accuracy = _benchmark_module("perf_accuracy")
    rows = json.loads(shared_path("reference", "perf_measurements.json").read_text(encoding="utf-8"))["rows"]
    row = next(r for r in rows if r["id"] == "P185")  # vLLM 0.12, Qwen3-32B on H100
    result = accuracy.evaluate(row)
    assert result.headline is not None
    fold = fitted_families()["gpu-vllm"]["cross_validation"]["folds"][source_of(row)]
    read = read_row(row)
    assert not isinstance(read, str)
    terms = fold["harnesses"].get(row["source_group"])
    left_out = predict(
        read.configuration,
        read.workload,
        Efficiency(**fold["parameters"]),
        Harness(**terms) if terms else None,
    )
    tpot = next(m for m in result.headline if m.name == "tpot")
    assert tpot.predicted == pytest.approx(left_out.tpot_ms)
    assert tpot.predicted != pytest.approx(next(m for m in result.metrics if m.name == "tpot").predicted)


def test_plan_vs_measured_reports_whether_plans_pick_is_the_measured_best(tmp_path: Path) -> None:
    # one group: the same model and request shape at three loads; the measured best is the largest load
    rows = [
        _measured(_gpu_row(id=f"G{users}", source_group="bench", batch_size=64, concurrency=users), None)
        for users in (4, 16, 64)
    ]
    measurements = tmp_path / "rows.json"
    measurements.write_text(json.dumps(rows), encoding="utf-8")
    result = _script(str(ROOT / "benchmarks" / "plan_vs_measured.py"), str(measurements))
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["groups"] == 1 and summary["best_first"] == 100.0
    assert "plan's pick G64" in result.stdout and ": best" in result.stdout
    broken = _script(str(ROOT / "benchmarks" / "plan_vs_measured.py"), str(tmp_path / "missing.json"))
    assert broken.returncode == 2 and broken.stderr.startswith("plan_vs_measured: error:")
