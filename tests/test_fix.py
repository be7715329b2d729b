"""lint --fix / --diff: judged line edits that keep everything else of the file."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lmi_config import api
from lmi_config.fixes import FIXERS, candidate_fixes
from lmi_config.lint import LintOptions

OPTIONS = LintOptions(backend="vllm", lmi_version="0.30.0")
TARGET = ("--backend", "vllm", "--lmi-version", "0.30.0")
GOOD_LINES = [
    "option.model_id=mistralai/Mistral-7B-v0.1",
    "option.rolling_batch=vllm",
    "option.tensor_parallel_degree=2",
    "option.max_rolling_batch_size=32",
    "option.max_model_len=4096",
    "# a comment that must survive",
    "",
]


def mistakes(line: str) -> st.SearchStrategy[str]:
    """One of the mistakes the fixers handle, made on a good line (or the line unchanged)."""
    if not line or line.startswith("#"):
        return st.just(line)
    key, _, value = line.partition("=")
    return st.sampled_from(
        [
            line,
            line + "  ",  # trailing blanks
            f"{key}: {value}",  # separator style
            f"{key}={value} # tuned",  # inline comment
            line.replace("rolling_batch", "roling_batch").replace("max_model_len", "max_modle_len"),  # typos
        ]
    )


configurations = st.lists(st.sampled_from(GOOD_LINES), min_size=1, max_size=8).flatmap(
    lambda lines: st.tuples(*[mistakes(line) for line in lines])
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(configurations, st.sampled_from(["\n", "\r\n"]))
def test_fix_removes_what_it_fixes_adds_no_error_and_a_second_run_changes_nothing(
    tmp_path: Path, lines: tuple[str, ...], ending: str
) -> None:
    path = tmp_path / "serving.properties"
    path.write_bytes(ending.join(lines).encode() + ending.encode())
    before = api.lint_paths([str(path)], OPTIONS)
    errors_before = {(f.code, f.key) for f in before.findings if f.severity == "error"}
    api.fix_paths([str(path)], OPTIONS, unsafe=True)
    after = api.lint_paths([str(path)], OPTIONS)
    assert not list(candidate_fixes(after, unsafe=True)), "--fix left a finding it can fix"
    assert {(f.code, f.key) for f in after.findings if f.severity == "error"} <= errors_before
    fixed_once = path.read_bytes()
    api.fix_paths([str(path)], OPTIONS, unsafe=True)
    assert path.read_bytes() == fixed_once
    if ending == "\n":
        assert b"\r\n" not in fixed_once
    else:  # every line keeps its CRLF, inserted lines included
        assert fixed_once.count(b"\n") == fixed_once.count(b"\r\n")
    for line in lines:  # comments and untouched lines are kept byte for byte
        if (
            line in GOOD_LINES
            and line
            and line.split("=")[0] not in {ln.split("=")[0] for ln in lines if ln != line}
        ):
            assert line.encode() in fixed_once


def test_diff_writes_nothing_and_fix_keeps_mode_comments_and_order(tmp_path: Path) -> None:
    text = "# owner: platform\noption.model_id=gpt2\noption.rolling_batch=vllm \noption.tensor_parallel_degree=1\n"
    path = tmp_path / "serving.properties"
    path.write_text(text)
    os.chmod(path, 0o640)
    shown = run_cli("lint", str(path), *TARGET, "--diff")
    assert (
        shown.returncode == 1 and "-option.rolling_batch=vllm \n+option.rolling_batch=vllm\n" in shown.stdout
    )
    assert path.read_text() == text
    fixed = run_cli("lint", str(path), *TARGET, "--fix")
    assert fixed.returncode == 0 and "fixed 1 finding(s) in 1 file(s) (LMI003 x1)" in fixed.stderr
    assert path.read_text() == text.replace("vllm \n", "vllm\n")
    assert oct(path.stat().st_mode & 0o777) == "0o640"


def test_a_typo_rename_is_unsafe(tmp_path: Path) -> None:
    path = tmp_path / "serving.properties"
    path.write_text("option.model_id=gpt2\noption.rolling_batch=vllm\noption.max_modle_len=1024\n")
    safe = run_cli("lint", str(path), *TARGET, "--fix")
    assert "max_modle_len" in path.read_text() and "LMI101" in safe.stdout
    unsafe = run_cli("lint", str(path), *TARGET, "--fix", "--unsafe-fixes")
    assert unsafe.returncode == 0 and "option.max_model_len=1024" in path.read_text()


def test_a_fix_that_would_bring_an_error_is_not_applied(tmp_path: Path) -> None:
    # gpt2 holds 1024 positions: renaming the typo would make max_model_len 2048 count, an error
    path = tmp_path / "serving.properties"
    text = "option.model_id=gpt2\noption.rolling_batch=vllm\noption.max_modle_len=2048\n"
    path.write_text(text)
    result = run_cli("lint", str(path), *TARGET, "--fix", "--unsafe-fixes")
    assert path.read_text() == text and "fixed 0 finding(s)" in result.stderr


def test_duplicates_in_an_env_file_keep_the_value_that_counted(tmp_path: Path) -> None:
    path = tmp_path / "model.env"
    path.write_text(
        "HF_MODEL_ID=gpt2\nOPTION_ROLLING_BATCH=vllm\nOPTION_TENSOR_PARALLEL_DEGREE=1\nOPTION_TENSOR_PARALLEL_DEGREE=2\n"
    )
    api.fix_paths([str(path)], OPTIONS)
    assert (
        path.read_text() == "HF_MODEL_ID=gpt2\nOPTION_ROLLING_BATCH=vllm\nOPTION_TENSOR_PARALLEL_DEGREE=2\n"
    )


def test_every_fixer_belongs_to_a_rule() -> None:
    from lmi_config.rules import load_rules

    assert set(FIXERS) <= {rule.code for rule in load_rules()}


def test_only_a_slip_of_the_keyboard_is_renamed() -> None:
    from lmi_config.fixes import is_misspelling

    assert is_misspelling("opiton.s3url", "option.s3url")  # two letters swapped
    assert is_misspelling("option.entry_point", "option.entryPoint")  # case and underscore
    assert is_misspelling("option.max_rolling_batch_prefill_tokes", "option.max_rolling_batch_prefill_tokens")
    # a different option the user may have meant, not mistyped: the message names it, --fix does not rename
    assert not is_misspelling("option.max_new_tokens", "option.max_num_tokens")
    assert not is_misspelling("option.pretrained_model_name", "option.served_model_name")


def test_fix_refuses_standard_input_it_cannot_rewrite() -> None:
    result = run_cli("lint", "-", "--fix", stdin=b"option.model_id=gpt2\noption.rolling_batch=vllm \n")
    assert result.returncode == 2 and "cannot rewrite standard input" in result.stderr
