"""A baseline hides only what it recorded: a value changed anywhere in an entry is new again, lines
are counted as the linter counts them, and a baseline that is not one lint wrote is refused."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from conftest import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

MODEL = "mistralai/Mistral-7B-v0.1"  # 32 attention heads, 8 KV heads: TP 3 and TP 5 are errors
# what str.splitlines breaks a line at and the readers do not
ODD_BREAKS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
JSON_ODD_BREAKS = ["\x85", "\u2028", "\u2029"]  # JSON strings take no raw control character


def lint(directory: Path, *args: str, stdin: bytes | None = None):
    return run_cli(
        "lint",
        *args,
        "--backend",
        "vllm",
        "--lmi-version",
        "0.30.0",
        cwd=directory,
        stdin=stdin,
    )


def lint_json(
    directory: Path, *args: str, stdin: bytes | None = None
) -> tuple[int, list[tuple[str, str | None]]]:
    result = lint(directory, *args, "--format", "json", stdin=stdin)
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, sorted((f["code"], f["key"]) for f in json.loads(result.stdout)["findings"])


TP = "option.tensor_parallel_degree"
TP_ERRORS = [("LMI305", TP), ("LMI306", TP)]


def continued_tp(tp: int, newline: str, final_newline: bool) -> str:
    text = newline.join([f"option.model_id={MODEL}", "option.rolling_batch=vllm", f"{TP}=\\", f"    {tp}"])
    return text + (newline if final_newline else "")


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
@pytest.mark.parametrize("final_newline", [True, False], ids=["newline-at-end", "no-newline-at-end"])
def test_a_value_changed_on_a_continuation_line_is_reported(
    tmp_path: Path, newline: str, final_newline: bool
) -> None:
    config = tmp_path / "serving.properties"
    config.write_bytes(continued_tp(3, newline, final_newline).encode())
    assert lint(tmp_path, ".", "--write-baseline", "baseline.json").returncode == 0
    # moved below new lines, the same entry stays baselined
    config.write_bytes(f"# tuned for g5{newline}".encode() + config.read_bytes())
    assert lint_json(tmp_path, ".", "--baseline", "baseline.json") == (0, [])
    config.write_bytes(config.read_bytes().replace(b"    3", b"    5"))
    returncode, findings = lint_json(tmp_path, ".", "--baseline", "baseline.json")
    assert returncode == 1 and set(TP_ERRORS) <= set(findings)


def test_a_value_changed_on_a_later_line_of_a_quoted_env_value_is_reported(tmp_path: Path) -> None:
    env = tmp_path / "model.env"
    env.write_text(f'HF_MODEL_ID={MODEL}\nOPTION_ROLLING_BATCH=vllm\nOPTION_TENSOR_PARALLEL_DEGRE="3\n4"\n')
    assert lint(tmp_path, "model.env", "--write-baseline", "baseline.json").returncode == 0
    assert lint_json(tmp_path, "model.env", "--baseline", "baseline.json") == (0, [])
    env.write_text(env.read_text().replace('4"', '5"'))
    assert lint_json(tmp_path, "model.env", "--baseline", "baseline.json")[1] == [
        ("LMI101", "option.tensor_parallel_degre")
    ]


def test_a_json_value_changed_on_the_line_below_its_key_is_reported(tmp_path: Path) -> None:
    environment = tmp_path / "environment.json"
    environment.write_text(
        f'{{"HF_MODEL_ID": "{MODEL}",\n "OPTION_ROLLING_BATCH": "vllm",\n'
        ' "OPTION_TENSOR_PARALLEL_DEGREE":\n   "3"}\n'
    )
    assert lint(tmp_path, "environment.json", "--write-baseline", "baseline.json").returncode == 0
    assert lint_json(tmp_path, "environment.json", "--baseline", "baseline.json") == (0, [])
    environment.write_text(environment.read_text().replace('"3"', '"5"'))
    returncode, findings = lint_json(tmp_path, "environment.json", "--baseline", "baseline.json")
    assert returncode == 1 and set(TP_ERRORS) <= set(findings)


def test_a_malformed_escape_changed_on_a_continuation_line_is_reported(tmp_path: Path) -> None:
    config = tmp_path / "serving.properties"
    config.write_text(
        f"option.model_id={MODEL}\noption.rolling_batch=vllm\noption.chat_template=\\\n  \\uZZZZ\n"
    )
    before = lint_json(tmp_path, ".")[1]
    assert lint(tmp_path, ".", "--write-baseline", "baseline.json").returncode == 0
    assert lint_json(tmp_path, ".", "--baseline", "baseline.json") == (0, [])
    config.write_text(config.read_text().replace("ZZZZ", "YYYY"))
    assert lint_json(tmp_path, ".", "--baseline", "baseline.json")[1] == before != []


def with_odd_break(kind: str, character: str, tp: int) -> tuple[str, bytes]:
    """A configuration of ``kind`` whose first line holds ``character``, and TP ``tp`` on a later line."""
    if kind == "properties":
        text = f"# tuned{character}for g5\noption.model_id={MODEL}\noption.rolling_batch=vllm\n{TP}={tp}\n"
        return "serving.properties", text.encode()
    if kind == "env":
        text = f"# tuned{character}for g5\nHF_MODEL_ID={MODEL}\nOPTION_ROLLING_BATCH=vllm\nOPTION_TENSOR_PARALLEL_DEGREE={tp}\n"
        return "model.env", text.encode()
    text = (
        f'{{"SM_NOTE": "tuned{character}for g5",\n "HF_MODEL_ID": "{MODEL}",\n'
        f' "OPTION_ROLLING_BATCH": "vllm",\n "OPTION_TENSOR_PARALLEL_DEGREE": "{tp}"}}\n'
    )
    return "environment.json", text.encode()


@pytest.mark.parametrize(
    ("kind", "character"),
    [("properties", c) for c in ODD_BREAKS]
    + [("env", c) for c in ODD_BREAKS]
    + [("json", c) for c in JSON_ODD_BREAKS],
    ids=lambda value: value if value in ("properties", "env", "json") else f"U+{ord(value):04X}",
)
def test_a_character_only_str_splitlines_breaks_at_does_not_hide_a_changed_value(
    tmp_path: Path, kind: str, character: str
) -> None:
    name, before = with_odd_break(kind, character, 3)
    (tmp_path / name).write_bytes(before)
    assert lint(tmp_path, name, "--write-baseline", "baseline.json").returncode == 0
    assert lint_json(tmp_path, name, "--baseline", "baseline.json") == (0, [])
    (tmp_path / name).write_bytes(with_odd_break(kind, character, 5)[1])
    returncode, findings = lint_json(tmp_path, name, "--baseline", "baseline.json")
    assert returncode == 1 and set(TP_ERRORS) <= set(findings)


def test_json_with_carriage_returns_alone_is_one_line_as_its_reader_numbers_it(tmp_path: Path) -> None:
    environment = tmp_path / "environment.json"
    lines = [
        f'{{"HF_MODEL_ID": "{MODEL}",',
        ' "OPTION_ROLLING_BATCH": "vllm",',
        ' "OPTION_TENSOR_PARALLEL_DEGREE": "3"}',
    ]
    environment.write_bytes("\r".join(lines).encode() + b"\r")
    assert lint(tmp_path, "environment.json", "--write-baseline", "baseline.json").returncode == 0
    assert lint_json(tmp_path, "environment.json", "--baseline", "baseline.json") == (0, [])
    environment.write_bytes(environment.read_bytes().replace(b'"3"', b'"5"'))
    returncode, findings = lint_json(tmp_path, "environment.json", "--baseline", "baseline.json")
    assert returncode == 1 and set(TP_ERRORS) <= set(findings)


@pytest.mark.parametrize(
    ("name", "setting"),
    [
        ("serving.properties", b"option.tensor_parallel_degre="),
        ("model.env", b"OPTION_TENSOR_PARALLEL_DEGRE="),
    ],
)
def test_a_byte_that_is_not_utf_8_changed_in_a_value_is_reported(
    tmp_path: Path, name: str, setting: bytes
) -> None:
    config = tmp_path / name
    config.write_bytes(setting + b"caf\xe9\n")  # é in ISO-8859-1: not UTF-8, read by the env reader as U+FFFD
    assert lint(tmp_path, name, "--write-baseline", "baseline.json").returncode == 0
    assert lint_json(tmp_path, name, "--baseline", "baseline.json") == (0, [])
    config.write_bytes(setting + b"caf\xe8\n")
    assert ("LMI101", "option.tensor_parallel_degre") in lint_json(
        tmp_path, name, "--baseline", "baseline.json"
    )[1]


def test_a_value_changed_in_standard_input_is_reported(tmp_path: Path) -> None:
    before = f"option.model_id={MODEL}\noption.rolling_batch=vllm\n{TP}=3\n".encode()
    assert lint(tmp_path, "-", "--write-baseline", "baseline.json", stdin=before).returncode == 0
    assert lint_json(tmp_path, "-", "--baseline", "baseline.json", stdin=before) == (0, [])
    returncode, findings = lint_json(
        tmp_path, "-", "--baseline", "baseline.json", stdin=before.replace(b"=3", b"=5")
    )
    assert returncode == 1 and set(TP_ERRORS) <= set(findings)


def test_a_file_reached_through_a_linked_directory_is_the_file_the_baseline_recorded(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    config = project / "serving.properties"
    config.write_text(f"option.model_id={MODEL}\noption.rolling_batch=vllm\n{TP}=3\n")
    assert lint(project, "serving.properties", "--write-baseline", "baseline.json").returncode == 0
    link = tmp_path / "checkout"
    link.symlink_to(project, target_is_directory=True)
    assert lint_json(project, str(link / "serving.properties"), "--baseline", "baseline.json") == (0, [])
    # the file itself replaced by a link to a copy elsewhere: the same text stays held, a change is new
    shared = tmp_path / "shared.properties"
    shared.write_bytes(config.read_bytes())
    config.unlink()
    config.symlink_to(shared)
    assert lint_json(project, "serving.properties", "--baseline", "baseline.json") == (0, [])
    shared.write_text(shared.read_text().replace("=3", "=5"))
    returncode, findings = lint_json(project, "serving.properties", "--baseline", "baseline.json")
    assert returncode == 1 and set(TP_ERRORS) <= set(findings)


def test_a_finding_on_no_line_stays_held_when_lines_move(tmp_path: Path) -> None:
    config = tmp_path / "serving.properties"
    config.write_text("option.rolling_batch=vllm\n")
    assert ("LMI202", None) in lint_json(tmp_path, ".")[1]
    assert lint(tmp_path, ".", "--write-baseline", "baseline.json").returncode == 0
    config.write_text("# no model yet\n\noption.rolling_batch=vllm\n")
    assert lint_json(tmp_path, ".", "--baseline", "baseline.json") == (0, [])


NOISE = st.text(alphabet=st.sampled_from([*ODD_BREAKS, "a", "b", " ", "#", "é"]), max_size=12)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(["properties", "env"]),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    above=st.lists(NOISE, max_size=4),
    below=st.lists(NOISE, max_size=3),
)
def test_generated_files_with_odd_line_breaks_keep_unchanged_findings_and_report_changed_ones(
    kind: str, newline: str, above: list[str], below: list[str]
) -> None:
    if kind == "properties":
        name, lines = (
            "serving.properties",
            [f"option.model_id={MODEL}", "option.rolling_batch=vllm", f"{TP}=3"],
        )
    else:
        name, lines = (
            "model.env",
            [f"HF_MODEL_ID={MODEL}", "OPTION_ROLLING_BATCH=vllm", "OPTION_TENSOR_PARALLEL_DEGREE=3"],
        )
    comments = [f"#{text}" for text in above] + lines + [f"#{text}" for text in below]
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        path = root / name
        path.write_bytes(newline.join(comments).encode() + newline.encode())
        assert lint(root, name, "--write-baseline", "baseline.json").returncode == 0
        assert lint_json(root, name, "--baseline", "baseline.json") == (0, [])
        path.write_bytes(path.read_bytes().replace(b"=3", b"=5"))
        returncode, findings = lint_json(root, name, "--baseline", "baseline.json")
        assert returncode == 1 and set(TP_ERRORS) <= set(findings)


WRITE_AGAIN = "write the baseline again with lint --write-baseline"
ENTRY = {
    "path": "serving.properties",
    "code": "LMI101",
    "key": "option.x",
    "fingerprint": "0123456789abcdef",
    "count": 1,
}


DROP = object()  # a field left out


def entry_with(**changes: object) -> dict[str, object]:
    entry = {**ENTRY, **changes}
    return {name: value for name, value in entry.items() if value is not DROP}


BAD_ENTRIES = {
    "a-number": 5,
    "a-string": "serving.properties",
    "null": None,
    "a-list": [],
    "path-a-number": entry_with(path=5),
    "path-empty": entry_with(path=""),
    "path-with-nul": entry_with(path="serving\x00.properties"),
    "no-path": entry_with(path=DROP),
    "code-null": entry_with(code=None),
    "no-code": entry_with(code=DROP),
    "key-a-number": entry_with(key=5),
    "key-a-list": entry_with(key=["option.x"]),
    "fingerprint-not-hex": entry_with(fingerprint="xyz"),
    "fingerprint-a-number": entry_with(fingerprint=5),
    "no-fingerprint": entry_with(fingerprint=DROP),
    "count-negative": entry_with(count=-1),
    "count-zero": entry_with(count=0),
    "count-huge": entry_with(count=2**62),
    "count-boolean": entry_with(count=True),
    "count-float": entry_with(count=1.5),
    "count-string": entry_with(count="1"),
    "count-null": entry_with(count=None),
    "unknown-field": entry_with(kye="option.x"),
}


def refused(directory: Path, baseline: bytes) -> str:
    """What lint --baseline says of ``baseline``: a usage error (exit 2), never a traceback."""
    (directory / "serving.properties").write_text("option.rolling_batch=vllm\n")
    (directory / "baseline.json").write_bytes(baseline)
    result = lint(directory, ".", "--baseline", "baseline.json")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    return result.stderr


@pytest.mark.parametrize("entry", BAD_ENTRIES.values(), ids=BAD_ENTRIES.keys())
def test_a_malformed_entry_is_a_usage_error_naming_the_file_line_and_entry(
    tmp_path: Path, entry: object
) -> None:
    document = {"lmi_config_baseline": 1, "findings": [entry]}
    message = refused(tmp_path, json.dumps(document, indent=1).encode())
    assert 'baseline.json:4: entry 1 of "findings": ' in message and WRITE_AGAIN in message


def test_an_entry_repeated_is_a_usage_error_naming_both(tmp_path: Path) -> None:
    document = {"lmi_config_baseline": 1, "findings": [ENTRY, ENTRY]}
    message = refused(tmp_path, json.dumps(document, indent=1).encode())
    assert 'baseline.json:11: entry 2 of "findings": repeats entry 1' in message and WRITE_AGAIN in message


BAD_DOCUMENTS = {
    "findings-a-number": (b'{"lmi_config_baseline": 1, "findings": 5}', 1),
    "findings-an-object": (b'{"lmi_config_baseline": 1,\n "findings": {}}', 2),
    "findings-null": (b'{"lmi_config_baseline": 1,\n "findings": null}', 2),
    "no-findings": (b'{"lmi_config_baseline": 1}', 1),
    "a-list": (b"[]", 1),
    "a-string": (b'"baseline"', 1),
    "version-true": (b'{"lmi_config_baseline": true, "findings": []}', 1),
    "version-float": (b'{"lmi_config_baseline": 1.0, "findings": []}', 1),
    "version-string": (b'{"lmi_config_baseline": "1", "findings": []}', 1),
    "version-newer": (b'{"lmi_config_baseline": 2, "findings": []}', 1),
    "unknown-field": (b'{"lmi_config_baseline": 1, "findings": [],\n "note": "x"}', 2),
}
# refused already by the strict JSON reader before baselines were checked field by field: kept as guards
UNREADABLE_DOCUMENTS = {
    "not-utf-8": (b'{"lmi_config_baseline": 1, "findings": ["\xff"]}', None),
    "not-json": (b'{"lmi_config_baseline": 1,\n "findings": [', 2),
    "empty": (b"", 1),
    "duplicate-key": (b'{"lmi_config_baseline": 1, "findings": [],\n "findings": []}', 2),
    "nan-count": (b'{"lmi_config_baseline": 1, "findings": [{"count": NaN}]}', 1),
}


@pytest.mark.parametrize(("text", "line"), BAD_DOCUMENTS.values(), ids=BAD_DOCUMENTS.keys())
def test_a_malformed_baseline_is_a_usage_error_naming_the_file_and_line(
    tmp_path: Path, text: bytes, line: int
) -> None:
    message = refused(tmp_path, text)
    assert f"baseline.json:{line}: " in message and WRITE_AGAIN in message


@pytest.mark.parametrize(("text", "line"), UNREADABLE_DOCUMENTS.values(), ids=UNREADABLE_DOCUMENTS.keys())
def test_a_baseline_that_is_not_strict_json_stays_a_usage_error_naming_the_file_and_line(
    tmp_path: Path, text: bytes, line: int | None
) -> None:
    message = refused(tmp_path, text)
    assert ("baseline.json:" if line is None else f"baseline.json:{line}: ") in message
    assert "lint --write-baseline" in message
