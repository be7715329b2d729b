"""Files deploy reads — `--file` uploads and the image override named by LMI_CONFIG_IMAGES_FILE — go
through the one bounded reader: a FIFO nothing writes to, /dev/zero, a huge file, a directory, a
binary file or a malformed override ends at once with exit 2 and one message naming the file,
within the memory limit of tests/test_hostile_inputs.py, and leaves every file as it was.
"""

# ruff: noqa: F811 - `untouched` is test_hostile_inputs' fixture, requested by name
from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import ROOT
from test_hostile_inputs import SIZE_REFUSAL, assert_refused, run, settle, untouched  # noqa: F401

from lmi_config.io import MAX_INPUT_BYTES

QWEN = str(ROOT / "samples" / "specs" / "qwen2.5-7b-vllm-g5-12xlarge.yaml")
DRY_RUN = ("deploy", QWEN, "--dry-run", "--region", "us-east-1")
WITH_FILES = (*DRY_RUN, "--s3-prefix", "s3://lmi-artifacts/lmi")


def hostile(directory: Path, kind: str) -> str:
    """A path to an input of one hostile kind, made under ``directory`` (or a device)."""
    if kind == "dev-zero":
        return "/dev/zero"
    path = directory / kind
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "huge":
        with open(path, "wb") as handle:
            handle.truncate(MAX_INPUT_BYTES * 4)  # sparse: large by its size, cheap on disk
    elif kind == "binary":
        path.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))
    elif kind == "latin-1":
        path.write_bytes("# caf\u00e9\n".encode("latin-1"))
    return str(path)


REFUSALS = {
    "fifo": "is a FIFO (named pipe) that nothing is writing to",
    "dev-zero": SIZE_REFUSAL,
    "huge": f"file is {MAX_INPUT_BYTES * 4} bytes; lmi-config reads at most {MAX_INPUT_BYTES} bytes",
    "directory": "is a directory",
    "binary": "is a binary file",
    "latin-1": "is not UTF-8 text",
}


@pytest.mark.parametrize("kind", sorted(REFUSALS))
def test_a_hostile_file_upload_is_refused_naming_it(untouched: Path, kind: str) -> None:
    path = hostile(untouched, kind)
    (untouched / "model.py").write_text("def handle(inputs):\n    return None\n")
    settle(untouched)
    result = run(*WITH_FILES, "--file", "model.py", "--file", path, cwd=untouched, timeout=30)
    assert_refused(result, 2, f"--file {path}: {REFUSALS[kind]}")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "huge", "directory", "binary"])
def test_a_hostile_image_override_is_refused_naming_it(
    untouched: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    path = hostile(untouched, kind)
    monkeypatch.setenv("LMI_CONFIG_IMAGES_FILE", path)
    settle(untouched)
    for arguments in (DRY_RUN, ("images",)):
        result = run(*arguments, cwd=untouched, timeout=30)
        assert_refused(result, 2, path, "the image override, named by LMI_CONFIG_IMAGES_FILE")


@pytest.mark.parametrize(
    ("text", "mention"),
    [
        ("[" * 100_000, "nested too deeply"),
        ('{"sagemaker_sdk": []}', "no sagemaker_sdk.frameworks object"),
        ('{"sagemaker_sdk": {"frameworks": {"djl-lmi": {"versions": {"0.1": 7}}}}}', "framework djl-lmi"),
        ('{"sagemaker_sdk": {"frameworks": {}}, "registries": [{"region": 1}]}', "registries must be a list"),
    ],
    ids=["nested-deep", "frameworks-missing", "version-not-an-object", "registry-without-account"],
)
def test_a_malformed_image_override_is_refused_before_it_is_used(
    untouched: Path, monkeypatch: pytest.MonkeyPatch, text: str, mention: str
) -> None:
    override = untouched / "images.json"
    override.write_text(text)
    monkeypatch.setenv("LMI_CONFIG_IMAGES_FILE", str(override))
    settle(untouched)
    assert_refused(run(*DRY_RUN, cwd=untouched), 2, str(override), mention)


def test_an_override_that_does_not_exist_leaves_the_packaged_table(
    untouched: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LMI_CONFIG_IMAGES_FILE", str(untouched / "none.json"))
    result = run(*DRY_RUN, cwd=untouched)
    assert result.returncode == 0, result.stderr
    assert "djl-inference:0.36.0-lmi27.0.0-cu130" in result.stdout


def test_a_credential_in_a_malformed_tag_is_not_echoed(untouched: Path) -> None:
    token = "hf_" + "NotPrintedAnywhere0123456789abcd"
    result = run(*DRY_RUN, "--tag", token, cwd=untouched)
    assert_refused(result, 2, "write KEY=VALUE")
    assert token not in result.stderr + result.stdout


@pytest.mark.parametrize(
    ("arguments", "mention"),
    [
        (("--delete", "team_a"), "--delete 'team_a': not an endpoint name"),
        (("--delete", ""), "--delete '': not an endpoint name"),
        (("--delete", "x" * 64), "at most 63 characters"),
        ((QWEN, "--purge-s3"), "--purge-s3 goes with --delete NAME"),
    ],
    ids=["underscore", "empty", "too-long", "purge-without-delete"],
)
def test_deploy_delete_arguments_are_checked_before_any_call(
    untouched: Path, arguments: tuple[str, ...], mention: str
) -> None:
    settle(untouched)
    result = run(
        "deploy",
        *arguments,
        "--dry-run",
        "--region",
        "us-east-1",
        "--endpoint-url",
        "http://127.0.0.1:9",
        cwd=untouched,
    )
    assert_refused(result, 2, mention)
