"""Every JSON document lmi-config prints is standard JSON (issue 33): ``plan --request-rate 1e-320
--format json`` printed ``Infinity`` (the cost per token overflowed), which ``jq``, JavaScript and
Go refuse. A rate below one request a year is refused (exit 2, saying what is allowed); a figure
the performance model cannot give finitely is no figure (``predicted`` null, ``not_predicted``
saying why); and every JSON writer goes through one strict dumper, which never writes NaN or
Infinity.

Extreme values the flags accept — tiny and huge request rates and latency limits, token counts up
to the container's 2**31 - 1 — run through the real command group (in-process, standalone mode, as
the console script runs it; the reported case also in a fresh process): the exit code is 0, 1 or 2,
never a traceback, and whatever is printed parses with a parser that refuses NaN and Infinity.
"""

from __future__ import annotations

import ast
import inspect
import json
import math
import os
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from conftest import ROOT, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lmi_config.cli import main

NEURON_MODEL = "mistralai/Mistral-7B-Instruct-v0.2"
GPU_MODEL = "Qwen/Qwen2.5-7B-Instruct"
EXPLAINED = str(ROOT / "samples" / "lint" / "qwen2.5-7b-vllm-g5" / "serving.properties")
COUNT_MAX = 2**31 - 1
RATES = st.one_of(
    st.sampled_from(
        [
            "1e-320",
            "5e-324",
            "1e-300",
            "1e-9",
            "3.17e-08",
            "3.2e-08",
            "1e-6",
            "1e20",
            "1e300",
            "1.7976931348623157e308",
        ]
    ),
    st.floats(min_value=5e-324, max_value=1.7976931348623157e308).map(repr),
)
LIMITS_MS = st.one_of(
    st.sampled_from(["5e-324", "1e-300", "0.001", "1e300", "1.7976931348623157e308"]),
    st.floats(min_value=5e-324, max_value=1e308).map(repr),
)
COUNTS = st.one_of(st.sampled_from([1, 2, COUNT_MAX, COUNT_MAX - 1, 2**20]), st.integers(1, COUNT_MAX)).map(
    str
)
# the workload flags plan and explain share, each drawn or left out
WORKLOAD_FLAGS = {
    "--request-rate": RATES,
    "--input-tokens": COUNTS,
    "--output-tokens": COUNTS,
    "--concurrency": COUNTS,
}
PLAN_FLAGS = {
    **WORKLOAD_FLAGS,
    "--max-ttft-ms": LIMITS_MS,
    "--max-tpot-ms": LIMITS_MS,
    "--max-model-len": COUNTS,
}
# a rate or a concurrency, not both: the pair is refused on its own (exit 2), already tested
EXCLUSIVE = ("--request-rate", "--concurrency")


def strict_loads(text: str) -> Any:
    """``json.loads`` that refuses NaN, Infinity and -Infinity, as other languages' readers do."""

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def _runner() -> CliRunner:
    # click 8.1 mixes stderr into stdout unless told; 8.2 always keeps both
    separate = {"mix_stderr": False} if "mix_stderr" in inspect.signature(CliRunner).parameters else {}
    return CliRunner(**separate)


def invoke_json(*args: str) -> click.testing.Result:
    """The real command group with ``--format json``: a documented exit code, no traceback, and standard JSON."""
    result = _runner().invoke(main, [*args, "--format", "json"], catch_exceptions=True)
    shown = f"lmi-config {' '.join(args)}\n{(result.stdout or '')[-1500:]}{(result.stderr or '')[-1500:]}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"raised {result.exception!r}\n{shown}")
    assert result.exit_code in (0, 1, 2), shown
    assert "Traceback" not in (result.stdout or "") + (result.stderr or ""), shown
    if result.exit_code == 2:
        assert not result.stdout and result.stderr.startswith("lmi-config: error: "), shown
    elif result.stdout:
        strict_loads(result.stdout)
    return result


def _flags(data: st.DataObject, strategies: dict[str, st.SearchStrategy[str]]) -> list[str]:
    chosen = data.draw(st.sets(st.sampled_from(sorted(strategies)), min_size=1, max_size=3), label="flags")
    if all(flag in chosen for flag in EXCLUSIVE):
        chosen.discard("--concurrency")
    return [part for flag in sorted(chosen) for part in (flag, data.draw(strategies[flag], label=flag))]


# 30 examples per command: about two seconds; LMI_CONFIG_FUZZ_EXAMPLES=1000 for a longer hunt
EXTREME = settings(
    max_examples=int(os.environ.get("LMI_CONFIG_FUZZ_EXAMPLES", "30")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@EXTREME
@given(data=st.data())
def test_plan_json_is_standard_json_for_extreme_workloads(data: st.DataObject) -> None:
    target = data.draw(
        st.sampled_from(
            [
                ("--model", NEURON_MODEL, "--instance", "ml.inf2.8xlarge"),
                ("--model", GPU_MODEL, "--instance", "ml.g5.2xlarge"),
            ]
        ),
        label="target",
    )
    invoke_json("plan", *target, *_flags(data, PLAN_FLAGS), "--top", "3")


@EXTREME
@given(data=st.data())
def test_explain_json_is_standard_json_for_extreme_workloads(data: st.DataObject) -> None:
    invoke_json("explain", EXPLAINED, *_flags(data, WORKLOAD_FLAGS))


def test_the_reported_request_rate_is_refused_with_what_is_allowed() -> None:
    for command in (
        ("plan", "--model", "meta-llama/Llama-3.1-8B-Instruct"),
        ("explain", EXPLAINED),
    ):
        result = run_cli(*command, "--request-rate", "1e-320", "--format", "json")
        assert result.returncode == 2 and result.stdout == "", result.stderr
        assert "--request-rate 1e-320 is less than one request a year" in result.stderr
        assert "give at least 3.17e-08" in result.stderr and "Traceback" not in result.stderr


def test_a_rate_of_one_request_a_year_is_predicted_with_finite_figures() -> None:
    result = invoke_json(
        "plan", "--model", NEURON_MODEL, "--instance", "ml.inf2.8xlarge", "--request-rate", "3.2e-8"
    )
    assert result.exit_code == 0
    candidates = strict_loads(result.stdout)["candidates"]
    costs = [candidate["predicted"]["usd_per_million_output_tokens"] for candidate in candidates]
    assert costs and all(isinstance(cost, float) and math.isfinite(cost) and cost > 1e6 for cost in costs)


def test_a_price_beyond_any_number_is_no_price() -> None:
    from lmi_config.perf.cost import usd_per_million_output_tokens

    assert usd_per_million_output_tokens(100.0, 5e-324) is None  # overflowed to infinity before
    assert usd_per_million_output_tokens(100.0, math.nan) is None
    assert usd_per_million_output_tokens(36.0, 10.0) == pytest.approx(1000.0)


def test_a_non_finite_figure_is_no_prediction_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    from lmi_config import api
    from lmi_config.plan import performance
    from lmi_config.report.plan import format_plan_json

    real = performance.predict
    monkeypatch.setattr(
        performance, "predict", lambda *a, **k: real(*a, **k)._replace(end_to_end_ms=math.inf)
    )
    document = strict_loads(format_plan_json(api.plan(model=NEURON_MODEL, instances=("ml.inf2.8xlarge",))))
    assert document["candidates"]
    for candidate in document["candidates"]:
        assert candidate["predicted"] is None
        assert candidate["not_predicted"] == "the performance model gives no finite figure for this workload"


def test_the_strict_dumper_refuses_nan_naming_where_it_is() -> None:
    from lmi_config.errors import OutputError
    from lmi_config.strict_json import dump_json

    with pytest.raises(OutputError, match=r"\$\.candidates\[1\]\.cost is not a finite number"):
        dump_json({"candidates": [{"cost": 1.0}, {"cost": math.inf}]})
    assert dump_json({"cost": 1.5}, indent=None) == '{"cost": 1.5}\n'


# json.dumps outside the strict dumper, and why each writes no document a user reads as output
NOT_OUTPUT = {
    "lmi_config/strict_json.py": "the strict dumper itself (and a key quoted in a message)",
    "lmi_config/templating.py": "the rendered text sent from a forked child to its parent",
    "lmi_config/modelarch.py": "the Hub config cache, read back by json.loads",
    "lmi_config/modelfields.py": "a probe: whether a config value is JSON at all",
    "lmi_config/configfile/envfile.py": "a parsed value's text, read, not written",
    "lmi_config/fixers/locate.py": "a string key or value put into a user's JSON file",
    "lmi_config/baseline.py": "a baseline entry's value quoted in a message",
}


def test_json_documents_are_written_only_through_the_strict_dumper() -> None:
    writers = set()
    for path in sorted((ROOT / "lmi_config").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("dumps", "dump")
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "json"
            ):
                writers.add(path.relative_to(ROOT).as_posix())
    unexplained = writers - set(NOT_OUTPUT)
    assert not unexplained, (
        f"write JSON with lmi_config.strict_json.dump_json / json_text: {sorted(unexplained)}"
    )
    assert not set(NOT_OUTPUT) - writers, "an exception that no longer calls json.dumps: remove it"


@pytest.mark.parametrize(
    "command",
    [("models",), ("instances",), ("rules",), ("rules", "unknown-option"), ("images",), ("lint", EXPLAINED)],
)
def test_listings_and_lint_print_standard_json(command: tuple[str, ...]) -> None:
    result = invoke_json(*command)
    assert result.exit_code in (0, 1) and result.stdout


def test_sarif_is_standard_json(tmp_path: Path) -> None:
    result = _runner().invoke(main, ["lint", EXPLAINED, "--format", "sarif"], catch_exceptions=False)
    assert result.exit_code in (0, 1)
    assert strict_loads(result.stdout)["version"] == "2.1.0"


def test_plan_help_states_the_lowest_request_rate() -> None:
    from lmi_config.plan.workload import MIN_REQUEST_RATE

    result = _runner().invoke(main, ["plan", "--help"])
    assert f"at least {MIN_REQUEST_RATE:.3g}, one a year" in " ".join(result.stdout.split())
