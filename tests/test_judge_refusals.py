"""The judge refuses what it cannot use (issue 16): a value outside what the container parses or
the model holds is an error naming the key, the line and the range — never swapped for a default —
and a model config or spec it cannot read is refused naming the file. Every case runs the real CLI
in a fresh process (the helpers of test_hostile_inputs.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_hostile_inputs import LLAMA_CONFIG, assert_refused, run, settle, write
from test_hostile_inputs import untouched as untouched  # noqa: F401  (the fixture)

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
HUGE = "9" * 5000


def _properties(*lines: str) -> str:
    return "\n".join([f"option.model_id={MODEL}", *lines]) + "\n"


def _no_traceback(result) -> None:
    assert "Traceback" not in result.stdout + result.stderr, result.stderr[-2000:]


# --- counts past the container's integers are errors, not the default ---------------------------


def test_n_positions_past_java_int_is_an_error_not_the_4096_default(untouched: Path) -> None:
    write(
        untouched / "serving.properties",
        _properties(
            "option.rolling_batch=auto", "option.tensor_parallel_degree=2", "option.n_positions=2147483648"
        ),
    )
    settle(untouched)
    args = ("serving.properties", "--instance", "ml.inf2.8xlarge", "--backend", "tnx")
    lint = run("lint", *args, cwd=untouched)
    assert lint.returncode == 1, lint.stdout
    assert "serving.properties:4: LMI102 error [invalid-value] option.n_positions='2147483648'" in lint.stdout
    assert "from 1 to 2147483647" in lint.stdout
    explain = run("explain", *args, cwd=untouched)
    _no_traceback(explain)
    assert "smart default min(max_position_embeddings" not in explain.stdout  # the old, silent 4096


@pytest.mark.parametrize(
    "key", ["option.max_num_batched_tokens", "option.max_model_len", "option.max_rolling_batch_size"]
)
def test_a_five_thousand_digit_count_is_an_error_in_lint_explain_and_render(
    untouched: Path, key: str
) -> None:
    write(untouched / "serving.properties", _properties("option.rolling_batch=vllm", f"{key}={HUGE}"))
    settle(untouched)
    lint = run("lint", "serving.properties", "--instance", "ml.g5.12xlarge", cwd=untouched)
    assert (
        lint.returncode == 1 and f"serving.properties:3: LMI102 error [invalid-value] {key}=" in lint.stdout
    )
    _no_traceback(lint)
    explain = run("explain", "serving.properties", "--instance", "ml.g5.12xlarge", cwd=untouched)
    assert explain.returncode == 1
    _no_traceback(explain)
    name = key.removeprefix("option.")
    render = run(
        "render", "--model", MODEL, "--instance", "ml.g5.12xlarge", "--set", f"{name}={HUGE}", cwd=untouched
    )
    assert render.returncode == 1 and "nothing written" in render.stderr and "LMI102" in render.stderr
    _no_traceback(render)


def test_a_five_thousand_digit_number_in_a_spec_names_its_line(untouched: Path) -> None:
    write(untouched / "spec.yaml", f"model: {MODEL}\noptions:\n  dtype: fp16\n  max_model_len: {HUGE}\n")
    settle(untouched)
    assert_refused(run("render", "spec.yaml", cwd=untouched), 2, "spec.yaml:4", "5000 digits", "2147483647")


# --- memory fractions: zero, negative, above one, non-finite --------------------------------------


@pytest.mark.parametrize("value", ["0", "0.0", "-0.5", "1.5", "1e308", "inf", "infinity", "nan"])
def test_gpu_memory_utilization_the_judge_cannot_use_is_an_error(untouched: Path, value: str) -> None:
    write(
        untouched / "serving.properties",
        _properties("option.rolling_batch=vllm", f"option.gpu_memory_utilization={value}"),
    )
    settle(untouched)
    lint = run("lint", "serving.properties", "--instance", "ml.g5.12xlarge", cwd=untouched)
    assert lint.returncode == 1, lint.stdout + lint.stderr
    assert "serving.properties:3: LMI102 error [invalid-value] option.gpu_memory_utilization=" in lint.stdout
    _no_traceback(lint)
    explain = run("explain", "serving.properties", "--instance", "ml.g5.12xlarge", cwd=untouched)
    assert explain.returncode == 1
    _no_traceback(explain)
    render = run(
        "render",
        "--model",
        MODEL,
        "--instance",
        "ml.g5.12xlarge",
        "--set",
        f"gpu_memory_utilization={value}",
        cwd=untouched,
    )
    assert render.returncode == 1 and "option.gpu_memory_utilization" in render.stderr
    _no_traceback(render)


def test_a_usable_gpu_memory_utilization_is_sized_with_its_own_value(untouched: Path) -> None:
    """The other side of the refusal: 0.5 is judged as 0.5, not as the 0.9 default."""
    for value in ("0.5", "0.9"):
        write(
            untouched / f"{value}.properties",
            _properties("option.rolling_batch=vllm", f"option.gpu_memory_utilization={value}"),
        )
    half = run("explain", "0.5.properties", "--instance", "ml.g5.12xlarge", "--format", "json", cwd=untouched)
    usual = run(
        "explain", "0.9.properties", "--instance", "ml.g5.12xlarge", "--format", "json", cwd=untouched
    )
    assert half.returncode in (0, 1) and usual.returncode in (0, 1)
    assert (
        json.loads(half.stdout)["memory"]["budget_bytes"] < json.loads(usual.stdout)["memory"]["budget_bytes"]
    )


# --- keys the container reads case-sensitively ----------------------------------------------------


def test_a_key_that_differs_only_by_case_is_reported_with_the_right_spelling(untouched: Path) -> None:
    write(
        untouched / "serving.properties",
        _properties(
            "option.rolling_batch=auto",
            "OPTION.TENSOR_PARALLEL_DEGREE=4",
            "Option.dtype=fp16",
            "ENGINE=Python",
        ),
    )
    settle(untouched)
    result = run(
        "lint", "serving.properties", "--instance", "ml.inf2.8xlarge", "--backend", "tnx", cwd=untouched
    )
    assert result.returncode == 0, result.stderr
    assert (
        "serving.properties:3: LMI101 warning [unknown-option] OPTION.TENSOR_PARALLEL_DEGREE is not an option"
        in result.stdout
    )
    assert "case-sensitive: write option.tensor_parallel_degree" in result.stdout
    assert "serving.properties:4: LMI101" in result.stdout and "write option.dtype" in result.stdout
    assert "serving.properties:5: LMI006" in result.stdout and "write engine=Python" in result.stdout


# --- a spec that says one key twice ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "mentions"),
    [
        (
            "model: gpt2\noptions:\n  max_model_len: 1024\n  dtype: fp16\n  option.max_model_len: 2048\n",
            ("spec.yaml:5", "line 3"),
        ),
        ("model: gpt2\noptions:\n  dtype: fp16\n  dtype: bf16\n", ("spec.yaml:4", "line 3")),
        ("model: gpt2\ninstance: ml.g5.xlarge\nmodel: gpt3\n", ("spec.yaml:3", "line 1")),
    ],
)
def test_a_key_written_twice_in_a_spec_is_refused_naming_both_lines(
    untouched: Path, text: str, mentions: tuple[str, ...]
) -> None:
    write(untouched / "spec.yaml", text)
    write(untouched / "serving.properties", "option.model_id=previous\n")
    settle(untouched)
    result = run("render", "spec.yaml", "-o", "serving.properties", "--force", cwd=untouched)
    assert_refused(result, 2, *mentions, "written twice")
    deploy = run("deploy", "spec.yaml", "--dry-run", "--region", "us-east-1", cwd=untouched)
    assert_refused(deploy, 2, *mentions)


def test_set_replaces_the_option_however_the_spec_spells_it(untouched: Path) -> None:
    write(untouched / "spec.yaml", "model: gpt2\noptions:\n  option.max_model_len: 1024\n")
    settle(untouched)
    result = run("render", "spec.yaml", "--set", "max_model_len=512", cwd=untouched)
    assert result.returncode == 0, result.stderr
    assert "option.max_model_len=512" in result.stdout and "1024" not in result.stdout


# --- model configs the judge cannot size -----------------------------------------------------------


@pytest.mark.parametrize("kv_heads", [5, 64, 12])
def test_kv_heads_that_do_not_divide_the_attention_heads_are_refused(untouched: Path, kv_heads: int) -> None:
    write(untouched / "model" / "config.json", json.dumps({**LLAMA_CONFIG, "num_key_value_heads": kv_heads}))
    write(untouched / "serving.properties", "option.rolling_batch=vllm\n")
    settle(untouched)
    mentions = ("model/config.json", f"num_key_value_heads {kv_heads} does not divide num_attention_heads 32")
    lint = run(
        "lint", "serving.properties", "--model", "model", "--instance", "ml.g5.12xlarge", cwd=untouched
    )
    assert_refused(lint, 2, *mentions)
    plan = run("plan", "--model", "model", "--instance", "ml.g5.12xlarge", cwd=untouched)
    assert_refused(plan, 2, *mentions)
    assert "ranks" not in plan.stdout and plan.stdout == ""


def test_kv_heads_that_divide_the_attention_heads_are_planned(untouched: Path) -> None:
    write(untouched / "model" / "config.json", json.dumps({**LLAMA_CONFIG, "num_key_value_heads": 4}))
    result = run("plan", "--model", "model", "--instance", "ml.g5.12xlarge", "--top", "1", cwd=untouched)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("factor", ["1e308", "Infinity", "NaN", "0", "-2", '"8"'])
def test_a_rope_scaling_factor_the_judge_cannot_use_is_refused(untouched: Path, factor: str) -> None:
    config = json.dumps({**LLAMA_CONFIG, "max_position_embeddings": 8192})[:-1]
    write(
        untouched / "model" / "config.json",
        config + f', "rope_scaling": {{"type": "linear", "factor": {factor}}}}}',
    )
    write(untouched / "serving.properties", "option.rolling_batch=vllm\noption.max_model_len=16384\n")
    settle(untouched)
    for command in ("lint", "explain"):
        result = run(
            command, "serving.properties", "--model", "model", "--instance", "ml.g5.12xlarge", cwd=untouched
        )
        assert_refused(result, 2, "model/config.json", "rope_scaling.factor")
    render = run("render", "--model", "model", "--instance", "ml.g5.12xlarge", cwd=untouched)
    assert_refused(render, 2, "model/config.json", "rope_scaling.factor")


# --- flags: out of range is a usage error ---------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (("plan", "--model", MODEL, "--min-sequence-length", "4294967296"), "--min-sequence-length"),
        (("plan", "--model", MODEL, "--min-batch-size", "2147483648"), "--min-batch-size"),
        (("search", "--model", MODEL, "--dry-run", "--require-free-gib", "nan"), "--require-free-gib"),
        (("search", "--model", MODEL, "--dry-run", "--export-timeout", HUGE), "--export-timeout"),
        (
            ("deploy", "--model", MODEL, "--dry-run", "--region", "us-east-1", "--poll-seconds", "nan"),
            "--poll-seconds",
        ),
        (("deploy", "--model", MODEL, "--dry-run", "--autoscale-target", "inf"), "--autoscale-target"),
    ],
)
def test_flags_past_their_range_are_usage_errors(untouched: Path, args: tuple[str, ...], flag: str) -> None:
    result = (
        run(*args, "--emit-spec", "specs", cwd=untouched) if args[0] == "plan" else run(*args, cwd=untouched)
    )
    assert result.returncode == 2, result.stdout[-2000:]
    assert flag in result.stderr
    _no_traceback(result)
    assert not (untouched / "specs").exists()


def test_a_sequence_length_past_the_model_is_not_planned_on_gpu(untouched: Path) -> None:
    """vLLM refuses max_model_len past the model's maximum: plan must not rank it (it used to)."""
    result = run(
        "plan",
        "--model",
        MODEL,
        "--instance",
        "ml.g5.48xlarge",
        "--min-sequence-length",
        "200000",
        cwd=untouched,
    )
    assert result.returncode == 1 and "no configuration" in result.stderr
    everything = run(
        "plan",
        "--model",
        MODEL,
        "--instance",
        "ml.g5.48xlarge",
        "--min-sequence-length",
        "200000",
        "--all",
        "--format",
        "json",
        cwd=untouched,
    )
    candidates = json.loads(everything.stdout)["candidates"]
    assert candidates and not any(candidate["feasible"] for candidate in candidates)
    assert all("sequence-exceeds-model-max" in candidate["blocked_by"] for candidate in candidates)


@pytest.mark.parametrize(
    ("option", "mention"),
    [("gpu_memory_utilization=0", "outside (0, 1]"), ("block_size=99999999999", "2147483647")],
)
def test_plan_set_with_a_value_the_judge_cannot_use_is_a_usage_error(
    untouched: Path, option: str, mention: str
) -> None:
    """Not "nothing fits" (exit 1) for every candidate: the flag is named (exit 2)."""
    result = run("plan", "--model", MODEL, "--instance", "ml.g5.12xlarge", "--set", option, cwd=untouched)
    assert_refused(result, 2, "--set option." + option.split("=")[0], mention)


def test_an_env_variable_in_another_letter_case_is_reported_with_its_name(untouched: Path) -> None:
    write(
        untouched / "model.env",
        f"HF_MODEL_ID={MODEL}\nOption_Dtype=fp16\nHf_Model_Id=gpt2\ntensor_parallel_degree=4\nMY_OWN_Setting=1\n"
        "OPTION_Max_Model_Len=4096\n",
    )
    settle(untouched)
    result = run("lint", "model.env", "--backend", "vllm", cwd=untouched)
    assert result.returncode == 0, result.stderr
    for line, name, right in (
        (2, "Option_Dtype", "OPTION_DTYPE"),
        (3, "Hf_Model_Id", "HF_MODEL_ID"),
        (4, "tensor_parallel_degree", "TENSOR_PARALLEL_DEGREE"),
    ):
        assert f"model.env:{line}: LMI203 warning [ignored-env-var] {name} is not a variable" in result.stdout
        assert f"case-sensitive — write {right}" in result.stdout
    assert "MY_OWN_Setting" not in result.stdout  # a variable of the user's own is not a misspelling
    # OPTION_ with a mixed-case rest is kept as written (option.Max_Model_Len): the variable to write is named
    assert "model.env:6: LMI101" in result.stdout and "write OPTION_MAX_MODEL_LEN" in result.stdout


@pytest.mark.parametrize(
    ("text", "mention"),
    [
        (f"select = [{HUGE}]\n", "a number too long to read"),
        ('[per-path."*"]\ninstance = 5\n', "instance must be a string"),
        ("per-path = 5\n", "per-path: use tables"),
    ],
)
def test_a_settings_file_the_linter_cannot_use_is_refused(untouched: Path, text: str, mention: str) -> None:
    write(untouched / "settings.toml", text)
    write(untouched / "serving.properties", _properties())
    settle(untouched)
    result = run("lint", "serving.properties", "--config", "settings.toml", cwd=untouched)
    assert_refused(result, 2, "settings.toml", mention)


def test_a_non_finite_value_of_any_float_option_is_an_error(untouched: Path) -> None:
    write(
        untouched / "serving.properties",
        _properties("option.rolling_batch=vllm", "option.gpu_memory_utilization=inf"),
    )
    settle(untouched)
    result = run("lint", "serving.properties", "--backend", "vllm", cwd=untouched)
    assert result.returncode == 1
    assert (
        "serving.properties:3: LMI102 error [invalid-value] option.gpu_memory_utilization='inf' is not a finite number"
        in result.stdout
    )


def test_the_hf_handlers_one_device_tp_is_not_refused(untouched: Path) -> None:
    """-1 is the HF Accelerate handler's own default (one device): only backends whose TP starts at 1 refuse it."""
    write(
        untouched / "serving.properties",
        "option.model_id=gpt2\noption.tensor_parallel_degree=-1\noption.rolling_batch=disable\n",
    )
    settle(untouched)
    accelerate = run(
        "lint",
        "serving.properties",
        "--backend",
        "huggingface",
        "--instance",
        "ml.g5.12xlarge",
        cwd=untouched,
    )
    assert accelerate.returncode == 0 and "LMI102" not in accelerate.stdout, accelerate.stdout
    vllm = run(
        "lint", "serving.properties", "--backend", "vllm", "--instance", "ml.g5.12xlarge", cwd=untouched
    )
    assert vllm.returncode == 1 and "serving.properties:2: LMI102 error" in vllm.stdout


def test_a_utilization_that_rounds_the_budget_to_zero_is_judged_not_divided_by(untouched: Path) -> None:
    write(
        untouched / "serving.properties",
        _properties("option.rolling_batch=vllm", "option.gpu_memory_utilization=1e-320"),
    )
    settle(untouched)
    for command in ("lint", "explain"):
        result = run(command, "serving.properties", "--instance", "ml.g5.12xlarge", cwd=untouched)
        assert result.returncode == 1, result.stderr[-2000:]
        _no_traceback(result)
        assert "budget is 0.0 GiB" in result.stdout


@pytest.mark.parametrize("field", ["num_attention_heads", "num_key_value_heads"])
def test_two_billion_heads_are_judged_in_bounded_time(untouched: Path, field: str) -> None:
    """The advice that lists valid TP degrees searched every divisor up to the head count."""
    heads = 2**31
    write(
        untouched / "model" / "config.json",
        json.dumps({**LLAMA_CONFIG, "num_attention_heads": heads, field: heads}),
    )
    for instance in ("ml.g5.12xlarge", "ml.inf2.48xlarge"):
        result = run("plan", "--model", "model", "--instance", instance, "--all", cwd=untouched, timeout=30)
        assert result.returncode in (0, 1), result.stderr[-2000:]
        _no_traceback(result)
