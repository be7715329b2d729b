"""Issue 19: a fix is data on its finding, judged before it is shown; text, JSON, SARIF and --fix
render the same edits; the examples of the issue as classes."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import jsonschema
from conftest import run_cli
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_cli import SARIF_SUBSET_SCHEMA

from lmi_config import api
from lmi_config.errors import InputError
from lmi_config.fixers.edits import apply_edits
from lmi_config.fixes import candidate_fixes
from lmi_config.knowledge import load_data
from lmi_config.knowledge.instances import instances
from lmi_config.lint import LintOptions

QWEN_TP8 = (
    "option.model_id=Qwen/Qwen2.5-7B-Instruct\noption.rolling_batch=vllm\noption.tensor_parallel_degree=8\n"
)


def test_text_json_sarif_and_fix_render_the_same_edit(tmp_path: Path) -> None:
    path = tmp_path / "serving.properties"
    path.write_text("# tuned by hand\n" + QWEN_TP8)
    target = ("--instance", "ml.g5.48xlarge")
    text = run_cli("lint", str(path), *target)
    document = json.loads(run_cli("lint", str(path), *target, "--format", "json").stdout)
    sarif = json.loads(run_cli("lint", str(path), *target, "--format", "sarif").stdout)
    assert text.returncode == 1 and "set option.tensor_parallel_degree=4 (or 2, 1)" in text.stdout
    (finding,) = [f for f in document["findings"] if f["code"] == "LMI305"]
    assert finding["fix"]["description"] == "set option.tensor_parallel_degree=4"
    assert finding["fix"]["applicability"] == "unsafe"
    assert finding["fix"]["edits"] == [
        {"line": 4, "action": "replace", "text": "option.tensor_parallel_degree=4"}
    ]
    jsonschema.validate(sarif, SARIF_SUBSET_SCHEMA)  # fixes as SARIF 2.1.0 has them
    (result,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "LMI305"]
    (replacement,) = result["fixes"][0]["artifactChanges"][0]["replacements"]
    assert replacement == {
        "deletedRegion": {"startLine": 4, "endLine": 4},
        "insertedContent": {"text": "option.tensor_parallel_degree=4"},
    }
    assert (
        run_cli("lint", str(path), *target, "--fix").returncode == 1
    )  # unsafe: not applied without the flag
    assert path.read_text().endswith("tensor_parallel_degree=8\n")
    assert run_cli("lint", str(path), *target, "--fix", "--unsafe-fixes").returncode == 0
    assert path.read_text() == "# tuned by hand\n" + QWEN_TP8.replace("=8\n", "=4\n")


def test_a_length_is_named_once_by_every_finding_about_it() -> None:
    """LMI307 (model limit) and LMI312 (KV capacity) ask one judge for the longest length."""
    for instance in ("ml.g5.xlarge", "ml.g5.12xlarge", "ml.g6.xlarge"):
        result = api.lint_text(
            "option.model_id=Qwen/Qwen2.5-7B-Instruct\noption.rolling_batch=vllm\noption.max_model_len=65536\n",
            instance=instance,
        )
        values = {
            change.value
            for finding in result.findings
            if finding.fix is not None
            for change in finding.fix.changes
            if change.key == "option.max_model_len"
        }
        assert len(values) <= 1, (instance, [f.message for f in result.findings])
        limit = [f for f in result.findings if f.code == "LMI307"]
        assert limit and limit[0].fix is not None and int(limit[0].fix.changes[0].value) <= 32768


def test_a_custom_handler_is_not_judged_by_a_backend_memory_model() -> None:
    result = api.lint_text(
        "engine=DeepSpeed\noption.entryPoint=inference.py\noption.model_id=meta-llama/Llama-2-13b-hf\n"
        "option.load_in_4bit=true\n",
        instance="ml.g5.12xlarge",
    )
    assert not [f for f in result.findings if f.code in ("LMI301", "LMI302", "LMI312")]
    assert any("memory not estimated: custom handler" in note for note in result.notes)


def test_the_engine_error_names_each_release_span_once() -> None:
    result = api.lint_text(
        "engine=DeepSpeed\noption.entryPoint=inference.py\noption.model_id=gpt2\n", lmi_version="0.30.0"
    )
    (finding,) = [f for f in result.findings if f.key == "engine"]
    assert "DeepSpeed exists only in LMI up to 0.27.0" in finding.message
    assert finding.message.count("allowed") + finding.message.count("not one of") == 1


def test_an_env_file_and_environment_json_are_edited_in_place(tmp_path: Path) -> None:
    env = tmp_path / "model.env"
    env.write_text(
        "HF_MODEL_ID=Qwen/Qwen2.5-7B-Instruct\r\nOPTION_ROLLING_BATCH=vllm\r\nexport TENSOR_PARALLEL_DEGREE='8' # by hand\r\n"
    )
    document = tmp_path / "environment.json"
    document.write_text(
        '{\n  "HF_MODEL_ID": "Qwen/Qwen2.5-7B-Instruct",\n  "OPTION_ROLLING_BATCH": "vllm",\n'
        '  "TENSOR_PARALLEL_DEGREE": "8"\n}\n'
    )
    target = ("--instance", "ml.g5.48xlarge", "--fix", "--unsafe-fixes")
    assert run_cli("lint", str(env), *target).returncode == 0
    assert env.read_bytes().split(b"\r\n")[2] == b"export TENSOR_PARALLEL_DEGREE='4' # by hand"
    assert run_cli("lint", str(document), *target).returncode == 0
    assert json.loads(document.read_text())["TENSOR_PARALLEL_DEGREE"] == "4"
    assert document.read_text().splitlines()[1] == '  "HF_MODEL_ID": "Qwen/Qwen2.5-7B-Instruct",'


def test_lint_text_takes_the_cli_target_options() -> None:
    result = api.lint_text(QWEN_TP8, instance="ml.g5.48xlarge", lmi_version="0.30.0", select=["LMI305"])
    assert [f.code for f in result.findings] == ["LMI305"]
    assert result.units[0].context.release.djl == "0.30.0"
    paired = api.lint_text(
        "option.model_id=Qwen/Qwen2.5-7B-Instruct\n",
        env="OPTION_ROLLING_BATCH=vllm\nTENSOR_PARALLEL_DEGREE=8\n",
        instance="ml.g5.48xlarge",
    )
    (finding,) = [f for f in paired.findings if f.code == "LMI305"]
    assert finding.fix is not None and finding.fix.path == "<text> (env)"
    try:
        api.lint_text(QWEN_TP8, select=["LMI99999"])
    except InputError as error:
        assert "unknown rule" in str(error)
    else:
        raise AssertionError("an unknown rule name was accepted")


# --- the property: every offered fix, applied, removes its finding and adds no error ---------------

MODELS = sorted(row["model_id"] for row in load_data("models.json")["models"])
GPUS = sorted(name for name, item in instances().items() if item.accelerator == "gpu")
NEURON = sorted(name for name, item in instances().items() if item.accelerator == "neuron")
RELEASES = {"vllm": ("0.29.0", "0.31.0", "0.33.0", "0.36.0"), "transformers-neuronx": ("0.28.0", "0.29.0")}


@st.composite
def configurations(draw: st.DrawFn) -> tuple[str, LintOptions]:
    backend = draw(st.sampled_from(sorted(RELEASES)))
    instance = draw(st.sampled_from(GPUS if backend == "vllm" else NEURON))
    lines = [f"option.model_id={draw(st.sampled_from(MODELS))}"]
    lines.append(
        "option.rolling_batch=vllm"
        if backend == "vllm"
        else "option.entryPoint=djl_python.transformers_neuronx"
    )
    lines.append(f"option.tensor_parallel_degree={draw(st.integers(1, 32))}")
    length_key = "option.max_model_len" if backend == "vllm" else "option.n_positions"
    lines.append(f"{length_key}={draw(st.sampled_from([1024, 4096, 32768, 65536, 262144]))}")
    lines.extend(
        draw(
            st.lists(st.sampled_from(["option.dtype=bf16", "option.max_rolling_batch_size=64 "]), max_size=2)
        )
    )
    options = LintOptions(
        backend=backend, instance=instance, lmi_version=draw(st.sampled_from(RELEASES[backend]))
    )
    return "\n".join(lines) + "\n", options


def _verdict(text: str, options: LintOptions) -> Counter[tuple[str, str | None, str]]:
    return Counter((f.code, f.key, f.severity) for f in api.lint_text(text, options=options).findings)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(configurations())
def test_every_offered_fix_removes_its_finding_adds_no_error_and_fix_reaches_a_fixed_point(
    tmp_path: Path, configuration: tuple[str, LintOptions]
) -> None:
    text, options = configuration
    try:
        result = api.lint_text(text, options=options)
    except InputError:
        assume(False)
        return
    before = _verdict(text, options)
    for finding in result.findings:
        if finding.fix is None:
            continue
        after = _verdict(apply_edits(text, finding.fix.edits), options)
        mine = (finding.code, finding.key)
        assert sum(n for (c, k, _), n in after.items() if (c, k) == mine) < sum(
            n for (c, k, _), n in before.items() if (c, k) == mine
        ), finding
        assert not [item for item, n in after.items() if item[2] == "error" and n > before[item]], finding
    path = tmp_path / "serving.properties"
    path.write_text(text)
    api.fix_paths([str(path)], options, unsafe=True)
    assert not list(candidate_fixes(api.lint_paths([str(path)], options), unsafe=True))
    fixed = path.read_bytes()
    api.fix_paths([str(path)], options, unsafe=True)
    assert path.read_bytes() == fixed


def test_the_length_a_kv_capacity_finding_names_holds_once_written() -> None:
    """vLLM's profile run grows with max_model_len: the length is searched at each length, not read
    off the capacity at the length written (corpus 052: 26368 tokens did not hold once written)."""
    text = (
        "engine=MPI\noption.tensor_parallel_degree=1\noption.model_id=meta-llama/Meta-Llama-3.1-8b-Instruct\n"
        "option.rolling_batch=lmi-dist\n"
    )
    (finding,) = [f for f in api.lint_text(text, instance="ml.g5.2xlarge").findings if f.code == "LMI312"]
    assert finding.fix is not None and finding.fix.changes[0].key == "option.max_model_len"
    assert finding.message.endswith(f"; {finding.fix.description}")
    fixed = apply_edits(text, finding.fix.edits)
    assert not [f for f in api.lint_text(fixed, instance="ml.g5.2xlarge").findings if f.code == "LMI312"]


# --- messages composed from several sources say each thing once -----------------------------------

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
_LIST = re.compile(r"(?:[\w.-]+, ){2,}[\w.-]+")


def _said_twice(message: str) -> list[str]:
    """Clauses (between ``;`` and ``—``), lists of three or more, and ``pass --model`` said twice."""
    clauses = [part.strip().lower() for part in re.split(r";| — ", message) if part.strip()]
    lists = _LIST.findall(message)
    repeated = [clause for clause, count in Counter(clauses).items() if count > 1]
    repeated += [item for item, count in Counter(lists).items() if count > 1]
    if message.count("pass --model") > 1:
        repeated.append("pass --model")
    return repeated


def test_an_allowed_list_the_reason_gives_is_not_repeated_as_advice() -> None:
    result = api.lint_text("engine=Zzzqq\noption.model_id=gpt2\n")
    (finding,) = [f for f in result.findings if f.key == "engine"]
    assert "not one of Python, MPI" in finding.message and not _said_twice(finding.message)


def test_no_finding_or_note_over_the_corpus_says_the_same_thing_twice() -> None:
    index = {row["id"]: row for row in json.loads((CORPUS / "index.json").read_text())}
    said_twice = []
    for path in sorted((CORPUS / "files").iterdir()):
        options = LintOptions(instance=index.get(path.stem, {}).get("instance_type") or None)
        result = api.lint_paths([str(path)], options)
        for text in [finding.message for finding in result.findings] + result.notes:
            if _said_twice(text):
                said_twice.append((path.name, _said_twice(text), text))
    assert not said_twice, said_twice[:5]


def test_a_rule_page_says_what_its_fix_does_and_how_it_is_applied() -> None:
    from lmi_config.report.rule_pages import rule_page
    from lmi_config.rules.base import find_rule

    pages = {code: rule_page(find_rule(code)) for code in ("LMI002", "LMI305", "LMI310")}
    assert (
        "## Fix\n\nRemove every earlier assignment" in pages["LMI002"]
        and "--unsafe-fixes" not in pages["LMI002"]
    )
    assert "## Fix\n\nSet option.tensor_parallel_degree to the nearest degrees" in pages["LMI305"]
    assert "`lmi-config lint --fix --unsafe-fixes`" in pages["LMI305"]
    assert "## Fix" not in pages["LMI310"]  # an info about copies: nothing to fix


def test_advice_names_keys_as_the_file_writes_them_and_sets_a_tp_the_container_chose(tmp_path: Path) -> None:
    env = tmp_path / "model.env"
    env.write_text(
        "HF_MODEL_ID=Qwen/Qwen2.5-7B-Instruct\nOPTION_ROLLING_BATCH=vllm\nOPTION_MAX_MODEL_LEN=65536\n"
    )
    text = run_cli("lint", str(env), "--instance", "ml.g5.48xlarge")
    # TP unset: the container takes all 8 GPUs, which 28 heads refuse; the fix writes the variable
    assert "set OPTION_TENSOR_PARALLEL_DEGREE=4 (or 2, 1)" in text.stdout
    assert "set OPTION_MAX_MODEL_LEN=32768" in text.stdout
    assert (
        run_cli("lint", str(env), "--instance", "ml.g5.48xlarge", "--fix", "--unsafe-fixes").returncode == 0
    )
    assert env.read_text().splitlines()[2:] == [
        "OPTION_MAX_MODEL_LEN=32768",
        "OPTION_TENSOR_PARALLEL_DEGREE=4",
    ]


def test_a_deprecated_option_is_renamed_in_environment_json_and_the_advice_said_once(tmp_path: Path) -> None:
    document = tmp_path / "environment.json"
    document.write_text('{\n  "OPTION_ROLLING_BATCH": "vllm",\n  "OPTION_S3URL": "s3://bucket/model/"\n}\n')
    (finding,) = [f for f in api.lint_paths([str(document)]).findings if f.code == "LMI105"]
    assert finding.message.endswith("is deprecated: rename OPTION_S3URL to HF_MODEL_ID")
    assert not _said_twice(finding.message)
    assert run_cli("lint", str(document), "--fix", "--unsafe-fixes").returncode == 0
    assert json.loads(document.read_text()) == {
        "OPTION_ROLLING_BATCH": "vllm",
        "HF_MODEL_ID": "s3://bucket/model/",
    }


def test_a_misspelt_value_and_a_renamed_handler_get_the_value_the_message_named() -> None:
    dtype = api.lint_text("option.model_id=gpt2\noption.rolling_batch=vllm\noption.dtype=half\n")
    (finding,) = [f for f in dtype.findings if f.key == "option.dtype"]
    assert finding.fix is not None and finding.fix.description == "set option.dtype=fp16"
    assert "use fp16" not in finding.message and finding.message.count("fp16") == 1
    handler = api.lint_text("option.model_id=gpt2\noption.entryPoint=djl_python.transformers-neuronx\n")
    (finding,) = [f for f in handler.findings if f.key == "option.entryPoint"]
    assert finding.message.endswith("— set option.entryPoint=djl_python.transformers_neuronx")
    fixed = apply_edits(
        "option.model_id=gpt2\noption.entryPoint=djl_python.transformers-neuronx\n", finding.fix.edits
    )
    assert not [
        f for f in api.lint_text(fixed).findings if f.key == "option.entryPoint" and f.severity != "info"
    ]


def test_tp_not_dividing_the_heads_says_what_each_backend_does() -> None:
    """vLLM, lmi-dist and TensorRT-LLM refuse to start (error); transformers-neuronx and NxDI pad the
    heads (warning) — each with a fix that divides them."""
    qwen = "option.model_id=Qwen/Qwen2.5-7B-Instruct\noption.tensor_parallel_degree=8\n"
    expected = {
        ("vllm", "ml.g5.48xlarge"): ("error", "refuses to start"),
        ("lmi-dist", "ml.g5.48xlarge"): ("error", "refuses to start"),
        ("tensorrt-llm", "ml.g5.48xlarge"): ("error", "refuses to start"),
        ("transformers-neuronx", "ml.inf2.24xlarge"): ("warning", "pads them to 32"),
        ("nxdi", "ml.inf2.24xlarge"): ("warning", "pads them to 32"),
    }
    for (backend, instance), (severity, behaviour) in expected.items():
        result = api.lint_text(qwen, backend=backend, instance=instance)
        (finding,) = [f for f in result.findings if f.code == "LMI305"]
        assert (finding.severity, behaviour in finding.message) == (severity, True), (
            backend,
            finding.message,
        )
        assert finding.fix is not None and 28 % int(finding.fix.changes[0].value) == 0


def test_fixes_do_not_undo_each_other(tmp_path: Path) -> None:
    """Phi-3-medium on inf2.24xlarge: TP 1 is over budget; TP 2 fits tightly (LMI302), TP 4 splits 10 KV
    heads (LMI306). A warning's fix may not trade for another warning, so --fix stops instead of
    flipping TP 2 ↔ 4 (it did, 20 passes); then nothing fixable is left and a second run changes nothing."""
    path = tmp_path / "serving.properties"
    path.write_text(
        "option.model_id=microsoft/Phi-3-medium-4k-instruct\noption.entryPoint=djl_python.transformers_neuronx\n"
        "option.tensor_parallel_degree=1\noption.n_positions=1024\n"
    )
    options = LintOptions(backend="transformers-neuronx", lmi_version="0.28.0", instance="inf2.24xlarge")
    outcome = api.fix_paths([str(path)], options, unsafe=True)
    assert sum(outcome.applied.values()) <= 2, outcome.applied
    assert not list(candidate_fixes(api.lint_paths([str(path)], options), unsafe=True))
    fixed = path.read_bytes()
    api.fix_paths([str(path)], options, unsafe=True)
    assert path.read_bytes() == fixed
