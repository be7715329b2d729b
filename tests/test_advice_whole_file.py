"""Advice judged against the whole file: the findings of one key offer one value, the one that
leaves the file with the fewest errors (issue 34: TP 2 cleared the heads and kept the memory error)."""

from __future__ import annotations

from conftest import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lmi_config import api
from lmi_config.fixers.edits import apply_edits
from lmi_config.lint import LintOptions

TP_KEY = "option.tensor_parallel_degree"
MODELS = [
    "meta-llama/Llama-3.1-70B-Instruct",
    "meta-llama/Llama-3.1-8B-Instruct",
    "Qwen/Qwen2.5-72B-Instruct",
    "Qwen/Qwen2.5-7B-Instruct",
    "mistralai/Mistral-7B-Instruct-v0.2",
]
INSTANCES = ["ml.p4d.24xlarge", "ml.g5.12xlarge", "ml.g5.48xlarge", "ml.g6e.12xlarge", "ml.p5.48xlarge"]


def _errors(text: str, options: LintOptions) -> int:
    return api.lint_text(text, options=options).errors


def test_every_finding_on_the_tp_line_offers_the_value_that_clears_them_all(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "serving.properties"
    config.write_text(
        "option.model_id=meta-llama/Llama-3.1-70B-Instruct\noption.rolling_batch=vllm\n"
        "option.tensor_parallel_degree=3\n"
    )
    result = run_cli(
        "lint", str(config), "--instance", "ml.p4d.24xlarge", "--backend", "vllm", "--lmi-version", "0.30.0",
        "--format", "json",
    )  # fmt: skip
    import json

    findings = json.loads(result.stdout)["findings"]
    on_tp = {finding["code"]: finding for finding in findings if finding.get("key") == TP_KEY}
    assert {"LMI301", "LMI305", "LMI306"} <= set(on_tp)
    offered = {
        code: finding["fix"]["changes"][0]["value"] for code, finding in on_tp.items() if finding["fix"]
    }
    assert offered == {"LMI301": "8", "LMI305": "8", "LMI306": "8"}
    fixed = run_cli(
        "lint", str(config), "--instance", "ml.p4d.24xlarge", "--backend", "vllm", "--lmi-version", "0.30.0",
        "--fix", "--unsafe-fixes",
    )  # fmt: skip
    assert "option.tensor_parallel_degree=8" in config.read_text()
    assert "0 errors" in fixed.stderr + fixed.stdout


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    model=st.sampled_from(MODELS),
    instance=st.sampled_from(INSTANCES),
    degree=st.sampled_from([3, 5, 6, 7, 12]),
    length=st.sampled_from([None, 4096, 131072]),
)
def test_findings_of_one_key_offer_one_value_and_no_offered_value_leaves_fewer_errors(
    model: str, instance: str, degree: int, length: int | None
) -> None:
    text = f"option.model_id={model}\noption.rolling_batch=vllm\n{TP_KEY}={degree}\n"
    if length is not None:
        text += f"option.max_model_len={length}\n"
    options = LintOptions(backend="vllm", lmi_version="0.30.0", instance=instance)
    result = api.lint_text(text, options=options)
    fixes = [
        finding.fix
        for finding in result.findings
        if finding.fix is not None and finding.fix.changes and finding.fix.changes[0].key == TP_KEY
    ]
    first_values = {fix.changes[0].value for fix in fixes if len(fix.changes) == 1}
    assert len(first_values) <= 1, f"{model} TP {degree} on {instance}: {first_values}"
    if not fixes:
        return
    chosen = fixes[0]
    after = _errors(apply_edits(text, chosen.edits), options)
    offered = {fix.changes[0].value for fix in fixes if len(fix.changes) == 1}
    offered |= {value for fix in fixes for value in _alternative_values(fix.alternatives)}
    for value in offered:
        other = text.replace(f"{TP_KEY}={degree}\n", f"{TP_KEY}={value}\n")
        assert after <= _errors(other, options), f"TP {value} leaves fewer errors than the fix TP {chosen}"


def _alternative_values(alternatives: tuple[str, ...]) -> list[str]:
    prefix = f"set {TP_KEY}="
    return [item[len(prefix) :] for item in alternatives if item.startswith(prefix) and " " not in item]


def test_lint_and_explain_name_the_same_length_for_a_kv_cache_too_small(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    config = tmp_path / "model.env"
    config.write_text(
        "OPTION_MODEL_ID=meta-llama/Llama-3.1-8B-Instruct\nOPTION_ROLLING_BATCH=vllm\n"
        "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzabcdefgh\n"
    )
    target = ("--instance", "ml.g5.2xlarge", "--backend", "vllm", "--lmi-version", "0.30.0")
    linted = json.loads(run_cli("lint", str(config), *target, "--format", "json").stdout)
    [kv] = [finding for finding in linted["findings"] if finding["code"] == "LMI312"]
    suggested = int(kv["fix"]["changes"][0]["value"])
    explained = json.loads(run_cli("explain", str(config), *target, "--format", "json").stdout)
    lengths = {item["sequence_length"] for item in explained["alternatives"]}
    assert suggested in lengths, (suggested, lengths)  # one function names the longest that holds
