"""Secrets by meaning (issue 16): credentials in URLs and under credential names are masked wherever
lmi-config prints them (lint in every format, explain, convert to standard output, render's
messages), refused by render, and kept by convert in a file the user names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_hostile_inputs
from test_hostile_inputs import assert_refused, run, settle, write

from lmi_config.knowledge.options import catalogue
from lmi_config.secrets import MASK, is_secret_name, looks_like_secret, mask_value, redact

untouched = test_hostile_inputs.untouched  # the fixture: pre-existing files must stay as they were

PASSWORD = "Pa55w0rdZ"
API_KEY = "sk-" + "a1B2c3D4" * 4
URL = f"https://alice:{PASSWORD}@models.example.com/llama?revision=main"
PROPERTIES = f"option.model_id={URL}\noption.api_key={API_KEY}\noption.db_password=hunter22\n"


@pytest.mark.parametrize(
    "name",
    [
        "option.api_key",
        "OPENAI_API_KEY",
        "OPTION_API_KEY",
        "STRIPE_KEY",
        "option.encryption_key",
        "clientSecret",
        "DB_PASSWORD",
        "option.db_passwd",
        "MY_API_TOKEN",
        "option.hf_token",
        "option.use_auth_token",
        "HF_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "CLIENT_SECRET_VALUE",
        "X-Amz-Security-Token",
        "X-Amz-Signature",
    ],
)
def test_credential_names_are_secret(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "option.rolling_batch",
        "option.max_rolling_batch_prefill_tokens",
        "option.max_tokens",
        "option.tokenizer",
        "option.image_placeholder_token",
        "option.max_prompt_adapter_token",
        "option.sink_token_length",
        # vLLM engine arguments every release types as a number (passed through from LMI 0.32)
        "option.long_prefill_token_threshold",
        "OPTION_LONG_PREFILL_TOKEN_THRESHOLD",
        "includeTokenTypes",
        "PUBLIC_KEY",
        "option.sort_key",
        "S3_KEY",
        "HF_TOKEN_PATH",
        "API_KEY_FILE",
        "DB_SECRET_ARN",
        "num_key_value_heads",
        "MONKEY",
    ],
)
def test_names_that_only_look_like_credentials_are_not_secret(name: str) -> None:
    assert not is_secret_name(name)


def test_a_pass_through_engine_argument_is_a_credential_unless_vllm_types_it_as_a_number() -> None:
    from lmi_config.knowledge.options import all_engine_arg_names

    # hf_token (str | bool) stays masked; the counts and thresholds whose names end in _token do not
    secret = sorted(name for name in all_engine_arg_names() if is_secret_name(f"option.{name}"))
    assert "hf_token" in secret
    assert "long_prefill_token_threshold" not in secret and "num_speculative_tokens" not in secret


def test_no_catalogue_option_but_the_auth_token_is_a_credential_by_name() -> None:
    # the catalogue's keys ending in _key, _token … are counts, flags and tokenizer settings
    assert sorted(key for key in catalogue() if is_secret_name(key)) == ["option.use_auth_token"]


def test_a_password_in_a_url_is_masked_and_the_rest_of_the_url_kept() -> None:
    assert looks_like_secret(URL) and looks_like_secret(URL, "option.model_id")
    assert (
        mask_value(URL, "option.model_id") == f"https://alice:{MASK}@models.example.com/llama?revision=main"
    )
    assert redact(f"see {URL}?token=t0ps3cret&x=1") == (
        f"see https://alice:{MASK}@models.example.com/llama?revision=main?token={MASK}&x=1"
    )
    assert not looks_like_secret("ssh://git@github.com/org/repo") and not looks_like_secret(
        "s3://bucket/model"
    )


def test_an_api_key_is_masked_by_its_name_and_by_its_format() -> None:
    assert mask_value("abc", "option.api_key") == MASK
    assert API_KEY not in redact(f"value {API_KEY} here") and "task-" + "a" * 30 in redact("task-" + "a" * 30)


# --- through the real command line ------------------------------------------------------------------


def _leaks(text: str) -> list[str]:
    return [secret for secret in (PASSWORD, API_KEY, "hunter22") if secret in text]


@pytest.mark.parametrize("output_format", ["text", "json", "sarif", "github"])
def test_lint_never_prints_a_credential_in_any_format(untouched: Path, output_format: str) -> None:
    write(untouched / "serving.properties", PROPERTIES)
    settle(untouched)
    result = run("lint", "serving.properties", "--format", output_format, cwd=untouched)
    assert result.returncode == 1 and "LMI502" in result.stdout, result.stderr
    assert not _leaks(result.stdout + result.stderr)


@pytest.mark.parametrize("output_format", ["text", "json"])
def test_explain_masks_url_passwords_and_api_keys(untouched: Path, output_format: str) -> None:
    write(untouched / "serving.properties", PROPERTIES)
    settle(untouched)
    result = run("explain", "serving.properties", "--format", output_format, cwd=untouched)
    assert result.returncode == 1, result.stderr
    assert not _leaks(result.stdout + result.stderr)
    assert "models.example.com/llama" in result.stdout and "(redacted)" in result.stdout


@pytest.mark.parametrize("target", ["env", "json", "properties"])
def test_convert_leaves_credentials_out_of_standard_output(untouched: Path, target: str) -> None:
    write(untouched / "serving.properties", PROPERTIES)
    settle(untouched)
    result = run("convert", "serving.properties", "--to", target, cwd=untouched)
    assert result.returncode == 1, result.stderr
    assert not _leaks(result.stdout + result.stderr)
    for key in ("option.model_id", "option.api_key", "option.db_password"):
        assert f"{key} not copied" in result.stderr
    assert "-o FILE" in result.stderr and "Traceback" not in result.stderr
    assert f"shown masked: https://alice:{MASK}@models.example.com/llama" in result.stderr


def test_convert_into_a_named_file_keeps_the_users_credentials(untouched: Path) -> None:
    write(untouched / "serving.properties", PROPERTIES)
    settle(untouched)
    result = run("convert", "serving.properties", "--to", "json", "-o", "environment.json", cwd=untouched)
    assert result.returncode == 0, result.stderr
    document = json.loads((untouched / "environment.json").read_text())
    assert document["HF_MODEL_ID"] == URL and document["OPTION_API_KEY"] == API_KEY
    assert document["OPTION_DB_PASSWORD"] == "hunter22"
    assert "holds the credentials" in result.stderr and not _leaks(result.stdout + result.stderr)


@pytest.mark.parametrize(
    "flags",
    [
        ["--model", URL],
        ["--model", "gpt2", "--set", f"api_key={API_KEY}"],
        ["--model", "gpt2", "--env", f"OPENAI_API_KEY={API_KEY}", "--format", "env"],
        ["--model", "gpt2", "--set", "db_password=hunter22"],
    ],
)
def test_render_refuses_a_credential_and_never_prints_it(untouched: Path, flags: list[str]) -> None:
    write(untouched / "serving.properties", "option.model_id=previous\n")
    settle(untouched)
    result = run("render", *flags, "-o", "serving.properties", cwd=untouched)
    assert_refused(result, 2, "holds a credential (value not shown)")
    assert not _leaks(result.stdout + result.stderr)
