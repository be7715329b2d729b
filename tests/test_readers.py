"""The readers: java.util.Properties semantics, env files, Environment JSON; round trips."""

from __future__ import annotations

from env_writer import dump_env, dump_env_json
from hypothesis import given, settings
from hypothesis import strategies as st

from lmi_config.configfile.envfile import parse_env_json, parse_env_text
from lmi_config.configfile.loader import InputError, parse_source
from lmi_config.configfile.properties import dump_properties, parse_properties


def test_properties_separators_comments_and_positions() -> None:
    text = "# comment\n  ! also a comment\na=1\nb : 2\nc   3\n\nd=x\\\n   y\n"
    document = parse_properties(text)
    assert document.as_dict() == {"a": "1", "b": "2", "c": "3", "d": "xy"}
    lines = {entry.key: (entry.line, entry.separator) for entry in document.entries}
    assert lines == {"a": (3, "="), "b": (4, ":"), "c": (5, " "), "d": (7, "=")}
    assert [comment.line for comment in document.comments] == [1, 2]


def test_properties_keep_trailing_blanks_and_inline_hash() -> None:
    document = parse_properties("option.rolling_batch=vllm  \noption.dtype=fp16 # half\n")
    assert document.as_dict() == {"option.rolling_batch": "vllm  ", "option.dtype": "fp16 # half"}


def test_properties_escapes_and_unicode() -> None:
    document = parse_properties("k\\ ey=\\u00e9\\t\\x\\\\\n")
    assert document.as_dict() == {"k ey": "\u00e9\tx\\"}


def test_properties_malformed_unicode_is_an_error_with_line() -> None:
    document = parse_properties("a=1\nb=\\u12zz\n")
    assert document.as_dict() == {"a": "1"}
    assert [error.line for error in document.errors] == [2]


def test_properties_last_duplicate_wins() -> None:
    assert parse_properties("a=1\na=2\n").as_dict() == {"a": "2"}


def test_properties_cr_and_crlf_line_ends() -> None:
    assert parse_properties("a=1\r\nb=2\rc=3").as_dict() == {"a": "1", "b": "2", "c": "3"}


def test_properties_continuation_after_comment_is_not_a_comment() -> None:
    # a backslash continues the value; the next line's '#' is then data, not a comment
    assert parse_properties("a=x\\\n#y\n").as_dict() == {"a": "x#y"}


def test_env_file_quotes_export_and_comments() -> None:
    text = "# c\nexport HF_MODEL_ID=meta-llama/Llama-3.1-8B\nOPTION_DTYPE='bf16'\nA=\"x\\ny\"\nB=v # note\n"
    document = parse_env_text(text)
    assert document.as_dict() == {
        "HF_MODEL_ID": "meta-llama/Llama-3.1-8B",
        "OPTION_DTYPE": "bf16",
        "A": "x\ny",
        "B": "v",
    }
    assert [entry.line for entry in document.entries] == [2, 3, 4, 5]


def test_env_file_bad_lines_are_errors() -> None:
    document = parse_env_text("JUST_A_WORD\n1BAD=x\nOK=1\n")
    assert document.as_dict() == {"OK": "1"}
    assert [error.line for error in document.errors] == [1, 2]


def test_environment_json_forms() -> None:
    flat = parse_env_json('{\n  "HF_MODEL_ID": "gpt2",\n  "OPTION_DTYPE": "fp16"\n}')
    assert flat.as_dict() == {"HF_MODEL_ID": "gpt2", "OPTION_DTYPE": "fp16"}
    assert [entry.line for entry in flat.entries] == [2, 3]
    nested = parse_env_json('{"PrimaryContainer": {"Image": "x", "Environment": {"A": "1"}}}')
    assert nested.as_dict() == {"A": "1"}
    broken = parse_env_json('{"A": ')
    assert broken.errors and broken.errors[0].line == 1


def test_binary_input_is_refused() -> None:
    try:
        parse_source("model.bin", b"\x00\x01\x02", None)
    except InputError as error:
        assert "binary" in str(error)
    else:
        raise AssertionError("binary input was accepted")


values = st.text(max_size=60)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=30), values, max_size=8))
def test_properties_write_then_read_is_identity(mapping: dict[str, str]) -> None:
    text = dump_properties(list(mapping.items()))
    assert text.isascii()
    assert parse_properties(text).as_dict() == mapping


env_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(env_names, st.text(max_size=60), max_size=8))
def test_env_write_then_read_is_identity(mapping: dict[str, str]) -> None:
    assert parse_env_text(dump_env(list(mapping.items()))).as_dict() == mapping
    assert parse_env_json(dump_env_json(list(mapping.items()))).as_dict() == mapping


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=400), st.sampled_from(["serving.properties", "model.env", "env.json", "noext"]))
def test_any_bytes_give_a_document_or_our_own_error(raw: bytes, name: str) -> None:
    try:
        source = parse_source(name, raw, None)
    except InputError:
        return
    assert source.properties is not None or source.env is not None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_any_text_parses_without_exceptions(text: str) -> None:
    parse_properties(text)
    parse_env_text(text)
    parse_env_json(text)


def test_environment_json_numbers_are_read_but_flagged() -> None:
    document = parse_env_json('{\n  "OPTION_TENSOR_PARALLEL_DEGREE": 4,\n  "OPTION_ENABLE_LORA": true\n}')
    assert document.as_dict() == {"OPTION_TENSOR_PARALLEL_DEGREE": "4", "OPTION_ENABLE_LORA": "true"}
    assert [(error.line, error.severity) for error in document.errors] == [(2, "warning"), (3, "warning")]
    assert 'write "4"' in document.errors[0].message


def test_templated_values_are_recognised_as_placeholders() -> None:
    from lmi_config.knowledge.options import is_placeholder

    for value in (
        "{{model_id}}",
        "<your model>",
        "${TP}",
        "json.dumps(num_gpu)",
        'EXAMPLE_ENV[model_id]["tp"]',
        "'bf16'",
    ):
        assert is_placeholder(value), value
    for value in ("4", "meta-llama/Llama-3.1-8B", "vllm", '["8"]', "max(256,value you override)"):
        assert not is_placeholder(value), value
