"""Fuzzing the three readers, the spec loader and the model-config normalizer: whatever the input,
each returns a document or raises only its documented error, and nothing it reads is lost."""

from __future__ import annotations

import json
import math
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lmi_config.configfile.envfile import parse_env_json, parse_env_text
from lmi_config.configfile.loader import InputError, parse_source
from lmi_config.configfile.properties import parse_properties
from lmi_config.configfile.text import MAX_JSON_DEPTH, json_nesting_depth, split_lines
from lmi_config.modelarch import ModelArch, ModelResolutionError, normalize_config
from lmi_config.spec import Spec, SpecError, parse_spec_text

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# characters that mean something to one of the readers, plus some that mean nothing
_SYNTAX = "=:#! \t\f\\\"'$\n\r{}[],-*&|>%@`\x00\x1b\u00e9\u202e\ud800"
syntax_text = st.text(alphabet=st.sampled_from(_SYNTAX) | st.characters(), max_size=300)
names = st.from_regex(r"[A-Z_][A-Z0-9_]{0,12}", fullmatch=True)
plain_values = st.from_regex(r"[A-Za-z0-9_./:-]{0,12}", fullmatch=True)


# --- serving.properties --------------------------------------------------------------------------


@FUZZ
@given(syntax_text)
def test_properties_reader_takes_any_text(text: str) -> None:
    document = parse_properties(text)
    line_count = len(split_lines(text))
    for entry in document.entries:
        assert 1 <= entry.line <= entry.end_line <= line_count
    assert all(1 <= error.line <= line_count for error in document.errors)


@FUZZ
@given(st.lists(st.tuples(names, plain_values), max_size=20), st.sampled_from(["\n", "\r\n", "\r"]))
def test_every_plain_properties_line_is_an_entry(pairs: list[tuple[str, str]], newline: str) -> None:
    text = newline.join(f"option.{name.lower()}={value}" for name, value in pairs)
    document = parse_properties(text)
    assert [(entry.key, entry.value, entry.line) for entry in document.entries] == [
        (f"option.{name.lower()}", value, index + 1) for index, (name, value) in enumerate(pairs)
    ]


# --- env files -----------------------------------------------------------------------------------


@FUZZ
@given(syntax_text)
def test_env_reader_takes_any_text(text: str) -> None:
    document = parse_env_text(text)
    line_count = len(split_lines(text))
    assert all(entry.line is not None and 1 <= entry.line <= line_count for entry in document.entries)
    assert all(error.line is not None and 1 <= error.line <= line_count for error in document.errors)


env_lines = st.one_of(
    st.tuples(st.just("plain"), names, plain_values),
    st.tuples(st.just("broken"), names, st.sampled_from(['"abc', "'abc", '"a b', "'"])),
    st.tuples(st.just("junk"), st.just(""), st.sampled_from(["just words", "1BAD=x", "= x"])),
)


@FUZZ
@given(st.lists(env_lines, max_size=25))
def test_a_broken_quote_never_swallows_the_lines_after_it(lines: list[tuple[str, str, str]]) -> None:
    text = "\n".join(f"{name}={value}" if kind != "junk" else value for kind, name, value in lines)
    document = parse_env_text(text)
    entries = {entry.line: (entry.name, entry.value) for entry in document.entries}
    errors = {error.line for error in document.errors}
    for number, (kind, name, value) in enumerate(lines, start=1):
        if kind == "plain":
            assert entries.get(number) == (name, value), (number, text)
        else:  # reported on its own line, never silently dropped
            assert number in errors, (number, text)


# --- SageMaker Environment JSON ---------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=30,
)


@FUZZ
@given(st.one_of(syntax_text, json_values.map(json.dumps)))
def test_environment_json_reader_takes_any_text(text: str) -> None:
    document = parse_env_json(text)
    assert all(isinstance(entry.value, str) for entry in document.entries)


# keys that make an object a CreateModel document (or its container) holding the Environment, not one
CONTAINER_KEYS = ("Environment", "environment", "PrimaryContainer", "Containers")
variable_names = st.text(max_size=15).filter(lambda name: name not in CONTAINER_KEYS)


@FUZZ
@given(st.dictionaries(variable_names, json_values, max_size=10))
def test_every_environment_value_is_an_entry_or_an_error(environment: dict[str, Any]) -> None:
    text = json.dumps(environment, indent=1)
    if json_nesting_depth(text) > MAX_JSON_DEPTH:
        return
    document = parse_env_json(text)
    refused = [error for error in document.errors if error.severity == "error"]
    # each variable is an entry (numbers and booleans as strings, with a warning) or one error
    assert len(document.entries) + len(refused) == len(environment)
    assert {entry.name for entry in document.entries} <= set(environment)


@FUZZ
@given(json_values)
def test_json_nesting_depth_is_the_depth_of_the_document(value: Any) -> None:
    def depth(item: Any) -> int:
        if isinstance(item, list):
            return 1 + max((depth(child) for child in item), default=0)
        if isinstance(item, dict):
            return 1 + max((depth(child) for child in item.values()), default=0)
        return 0

    assert json_nesting_depth(json.dumps(value)) == depth(value)


@settings(max_examples=20, deadline=None)
@given(st.integers(min_value=MAX_JSON_DEPTH + 1, max_value=20_000), st.sampled_from(["[", '{"a":']))
def test_deep_environment_json_is_an_error_not_a_recursion(levels: int, opening: str) -> None:
    closing = "]" if opening == "[" else "}"
    document = parse_env_json(opening * levels + "1" + closing * levels)
    assert document.errors and "levels deep" in document.errors[0].message


# --- any bytes, any name ------------------------------------------------------------------------


@FUZZ
@given(st.binary(max_size=600), st.sampled_from(["serving.properties", "model.env", "env.json", "noext"]))
def test_any_bytes_are_a_document_or_an_input_error(raw: bytes, name: str) -> None:
    try:
        source = parse_source(name, raw, None)
    except InputError as error:
        assert "\x00" in raw.decode("latin-1") and "binary file" in str(error)
        return
    assert source.properties is not None or source.env is not None


# --- the spec loader ---------------------------------------------------------------------------


def _load(text: str) -> Spec | None:
    try:
        return parse_spec_text(text, "spec.yaml")
    except SpecError as error:
        assert str(error).startswith("spec.yaml"), error
        return None


yaml_text = st.text(alphabet=st.sampled_from("abmodel: -[]{},&*!|>'\"#\n 0123456789.%@`\t\\"), max_size=200)


@FUZZ
@given(st.one_of(syntax_text, yaml_text))
def test_spec_loader_raises_only_spec_errors(text: str) -> None:
    _load(text)


@FUZZ
@given(json_values, json_values)
def test_spec_loader_on_generated_documents(options: Any, extra: Any) -> None:
    document = {"model": "gpt2", "options": options, "extra": extra}
    _load(yaml.safe_dump(document))
    spec = _load(yaml.safe_dump({"model": "gpt2", "options": {"x": options}}))
    assert spec is None or spec.model == "gpt2"


@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=33, max_value=3000))
def test_deeply_nested_or_aliased_specs_are_spec_errors(levels: int) -> None:
    assert _load("model: gpt2\noptions:\n  x: " + "[" * levels + "]" * levels + "\n") is None
    laughs = ["model: gpt2", "options:", "  a: &a [1,1,1,1,1,1,1,1,1,1]"]
    for previous, name in zip("abcdef", "bcdefg", strict=True):
        laughs.append(f"  {name}: &{name} [" + ",".join([f"*{previous}"] * 10) + "]")
    assert _load("\n".join(laughs) + "\n") is None


# --- model configs -------------------------------------------------------------------------------

config_fields = st.sampled_from(
    [
        "num_attention_heads",
        "num_key_value_heads",
        "hidden_size",
        "num_hidden_layers",
        "intermediate_size",
        "vocab_size",
        "head_dim",
        "num_local_experts",
        "num_experts_per_tok",
        "max_position_embeddings",
        "sliding_window",
        "moe_intermediate_size",
        "multi_query",
        "model_type",
    ]
)
config_values = st.one_of(
    st.integers(min_value=-5, max_value=100_000),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.none(),
    st.lists(st.integers(), max_size=2),
)


@FUZZ
@given(st.dictionaries(config_fields, config_values, max_size=10))
def test_model_configs_give_positive_sizes_or_a_clear_error(config: dict[str, Any]) -> None:
    base = {"num_attention_heads": 32, "hidden_size": 4096, "num_hidden_layers": 32}
    try:
        arch = normalize_config({**base, **config}, model_id="fuzz", source="fuzz/config.json")
    except ModelResolutionError as error:
        assert str(error).startswith("fuzz/config.json: ") and "\n" not in str(error)
        return
    assert isinstance(arch, ModelArch)
    for size in (arch.num_attention_heads, arch.num_key_value_heads, arch.hidden_size, arch.num_layers):
        assert isinstance(size, int) and not isinstance(size, bool) and size > 0
    assert arch.head_dim > 0 and arch.intermediate_size > 0 and arch.vocab_size > 0
    assert math.isfinite(arch.total_params) and arch.total_params > 0
