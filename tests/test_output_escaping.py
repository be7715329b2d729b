"""Every file render and convert write is read alike by every reader of its format, and runs nothing.

Readers: real ``sh`` (dash) and ``bash`` sourcing an env file (``set -a; . FILE``), docker's
``--env-file`` rules (below, as docker implements them: no quote processing), lmi-config's own
readers, ``json.loads``, and LMI's Python line reader of serving.properties (below). A value a
format cannot carry alike for all of them is refused as a whole (exit code 2), never written
(:mod:`lmi_config.escaping` states the guarantee).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest
import test_hostile_inputs
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_hostile_inputs import assert_refused, run, settle, write

from lmi_config import api
from lmi_config.configfile.envfile import parse_env_json, parse_env_text
from lmi_config.configfile.properties import dump_properties, parse_properties
from lmi_config.errors import InputError
from lmi_config.escaping import ValueNotCarried, json_environment
from lmi_config.render import render_spec
from lmi_config.spec import SpecError, validate_spec

untouched = test_hostile_inputs.untouched  # the fixture: pre-existing files must stay as they were
CANARY = "CANARY"
# what the env writer promises to carry; everything else must be refused
BARE_ENV_VALUE = re.compile(r"[A-Za-z0-9_./:@%+,=\-]*")
HOSTILE_FRAGMENTS = [
    f"`touch {CANARY}`",
    f"$(touch {CANARY})",
    f"${{X:-`touch {CANARY}`}}",
    f";touch {CANARY}",
    f"&&touch {CANARY}",
    f"|touch {CANARY}",
    f">{CANARY}",
    "\\`",
    "$HOME",
    "'",
    '"',
    "\\",
    " ",
    "~",
    "#",
    "*",
    "{a,b}",
    "!",
    "é",
    "\u00a0",
    "\u2028",
    "\\u0041",
    "=",
    ":",
    "a",
    "s3://bucket/model",
]
printable_ascii = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=6)
values = st.lists(st.one_of(st.sampled_from(HOSTILE_FRAGMENTS), printable_ascii), max_size=5).map("".join)


def sourced(shell: str, path: Path, name: str) -> str:
    """``NAME`` after a real shell sources ``path`` with ``set -a`` (run in the file's directory)."""
    completed = subprocess.run(
        [shell, "-c", f'set -a; . "$1"; printf %s "${name}"', shell, str(path)],
        cwd=path.parent,
        capture_output=True,
        timeout=20,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout.decode("utf-8")


def docker_env_file(text: str) -> dict[str, str]:
    """``docker run --env-file`` (docker/cli opts/envfile.go): leading blanks trimmed, ``#`` lines and
    blank lines skipped, ``NAME=VALUE`` split at the first ``=``, the value taken literally to the end
    of the line: no quote removal, no escapes, no ``$``."""
    variables = {}
    for line in text.split("\n"):
        line = line.lstrip()
        if not line or line.startswith("#"):
            continue
        name, equals, value = line.partition("=")
        if equals:
            variables[name] = value
    return variables


def lmi_python_properties(text: str) -> dict[str, str]:
    """serving.properties as LMI's Python tools read it (djl_python ``load_properties``: partition,
    test_model): ``#`` lines skipped, split at the first ``=``, stripped, nothing unescaped."""
    properties = {}
    for line in text.split("\n"):
        if line.startswith("#") or not line.strip():
            continue
        key, value = line.strip().split("=", 1)
        properties[key.strip()] = value.strip()
    return properties


def assert_env_readers_agree(text: str, name: str, value: str) -> None:
    """sh, bash, docker --env-file and lmi-config read ``value`` for ``name``, and nothing ran."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "model.env"
        path.write_text(text, encoding="utf-8")
        for shell in ("sh", "bash"):
            assert sourced(shell, path, name) == value, (shell, text)
        assert not (Path(directory) / CANARY).exists(), text
    assert docker_env_file(text)[name] == value, text
    assert parse_env_text(text).as_dict()[name] == value, text


def properties_carry(value: str) -> bool:
    """What serving.properties promises to carry: printable ASCII, no backslash, no blank at an end."""
    return bool(re.fullmatch(r"[\x20-\x7e]*", value)) and "\\" not in value and value == value.strip(" ")


# --- render ---------------------------------------------------------------------------------------


def _render(value: str, output_format: str, *, env: bool) -> str:
    data: dict[str, object] = {"model": "gpt2", "format": output_format}
    data["env" if env else "options"] = {"X" if env else "chat_template": value}
    return render_spec(validate_spec(data, "spec.yaml"), name="spec.yaml").text


@settings(max_examples=60, deadline=None)
@given(values)
def test_an_env_value_render_writes_is_read_alike_by_sh_bash_docker_and_lmi_config(value: str) -> None:
    try:
        text = _render(value, "env", env=True)
    except SpecError as error:
        assert not BARE_ENV_VALUE.fullmatch(value), error
        assert "env (--env): X:" in str(error) and "--format json" in str(error)
        return
    assert BARE_ENV_VALUE.fullmatch(value)
    assert_env_readers_agree(text, "X", value)


@settings(max_examples=60, deadline=None)
@given(values)
def test_an_option_value_render_writes_is_read_alike_in_every_format(value: str) -> None:
    assume(value.strip().lower() != "auto")
    try:
        text = _render(value, "env", env=False)
        assert_env_readers_agree(text, "OPTION_CHAT_TEMPLATE", value)
    except SpecError as error:
        assert not BARE_ENV_VALUE.fullmatch(value) and "option.chat_template" in str(error), error
    try:
        text = _render(value, "properties", env=False)
        assert parse_properties(text).as_dict()["option.chat_template"] == value, text
        assert lmi_python_properties(text)["option.chat_template"] == value, text
        assert properties_carry(value)
    except SpecError as error:
        assert not properties_carry(value) and "option.chat_template" in str(error), error
    text = _render(value, "json", env=False)  # JSON carries any text
    assert json.loads(text)["OPTION_CHAT_TEMPLATE"] == value
    assert parse_env_json(text).as_dict()["OPTION_CHAT_TEMPLATE"] == value


# --- convert --------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(values)
def test_a_value_convert_writes_is_read_alike_in_every_format(value: str) -> None:
    with tempfile.TemporaryDirectory() as directory:
        source = Path(directory) / "serving.properties"
        source.write_text(dump_properties([("option.model_id", "gpt2"), ("option.chat_template", value)]))
        for target, carried in (
            ("env", BARE_ENV_VALUE.fullmatch(value)),
            ("properties", properties_carry(value)),
        ):
            try:
                text = api.convert_path(str(source), target).text
            except InputError as error:
                assert not carried, error
                assert f"{source}:2:" in str(error) and "nothing was written" in str(error)
                continue
            assert carried
            if target == "env":
                assert_env_readers_agree(text, "OPTION_CHAT_TEMPLATE", value)
            else:
                assert parse_properties(text).as_dict()["option.chat_template"] == value
                assert lmi_python_properties(text)["option.chat_template"] == value
        text = api.convert_path(str(source), "json").text
        assert json.loads(text)["OPTION_CHAT_TEMPLATE"] == value


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30))
def test_the_environment_json_carries_any_text(value: str) -> None:
    text = json_environment([("X", value)])
    assert json.loads(text) == {"X": value}
    assert parse_env_json(text).as_dict() == {"X": value}


def test_a_lone_surrogate_is_refused_by_the_json_writer() -> None:
    with pytest.raises(ValueNotCarried, match="lone UTF-16 surrogate"):
        json_environment([("X", "a\ud800b")])


# --- through the real command line ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "character"),
    [
        (f"`touch {CANARY}`", "backtick"),
        (f"$(touch {CANARY})", "dollar sign"),
        (f"a;touch {CANARY}", "';'"),
        ('"quoted"', "quote"),
        ("a b", "blank"),
    ],
)
def test_render_refuses_an_env_value_sh_would_run_or_docker_read_otherwise(
    untouched: Path, value: str, character: str
) -> None:
    write(untouched / "model.env", "HF_MODEL_ID=previous\n")
    settle(untouched)
    result = run(
        "render",
        "--model",
        "gpt2",
        "--env",
        f"X={value}",
        "--format",
        "env",
        "-o",
        "model.env",
        cwd=untouched,
    )
    assert_refused(result, 2, "--env", "X:", character, "--format json")
    assert value not in result.stdout
    assert not (untouched / CANARY).exists()


def test_convert_refuses_a_value_its_env_file_cannot_carry_naming_the_line(untouched: Path) -> None:
    write(untouched / "serving.properties", f"option.model_id=gpt2\noption.chat_template=`touch {CANARY}`\n")
    write(untouched / "model.env", "HF_MODEL_ID=previous\n")
    settle(untouched)
    result = run("convert", "serving.properties", "--to", "env", "-o", "model.env", cwd=untouched)
    assert_refused(
        result, 2, "serving.properties:2", "OPTION_CHAT_TEMPLATE", "backtick", "nothing was written"
    )
    assert not (untouched / CANARY).exists()
    converted = run("convert", "serving.properties", "--to", "json", "-o", "environment.json", cwd=untouched)
    assert converted.returncode == 0, converted.stderr
    document = json.loads((untouched / "environment.json").read_text())
    assert document["OPTION_CHAT_TEMPLATE"] == f"`touch {CANARY}`"


def test_a_file_render_writes_is_sourced_by_sh_without_running_anything(untouched: Path) -> None:
    result = run(
        "render",
        "--model",
        "gpt2",
        "--env",
        "X=s3://bucket/a=b,c@d%e+f",
        "--format",
        "env",
        "-o",
        "model.env",
        cwd=untouched,
    )
    assert result.returncode == 0, result.stderr
    assert_env_readers_agree((untouched / "model.env").read_text(), "X", "s3://bucket/a=b,c@d%e+f")


def test_render_refuses_a_properties_value_java_and_python_read_differently(untouched: Path) -> None:
    write(untouched / "serving.properties", "option.model_id=previous\n")
    settle(untouched)
    for value, mention in (("a\\nb", "backslash"), ("café", "U+00E9"), ("trailing ", "blank")):
        result = run(
            "render",
            "--model",
            "gpt2",
            "--set",
            f"chat_template={value}",
            "-o",
            "serving.properties",
            cwd=untouched,
        )
        assert_refused(result, 2, "--set", "option.chat_template", mention)


def test_newlines_and_control_characters_are_still_refused(untouched: Path) -> None:
    for output_format in ("env", "properties", "json"):
        result = run(
            "render", "--model", "gpt2", "--env", "X=a\nY=b", "--format", output_format, cwd=untouched
        )
        assert_refused(result, 2, "newline or control character")
