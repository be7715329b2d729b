"""The deploy-side commands without a server: which packages each command imports, `images`
(listing and --refresh through a stand-in SageMaker SDK), `deploy --help`, and plans that are
refused before anything is called."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

HEAVY = ("boto3", "botocore", "sagemaker")
PROBE = """
import json, sys
from lmi_config.cli import main
try:
    main({arguments!r}, standalone_mode=False)
except SystemExit:
    pass
{extra}
loaded = sorted({{name.split(".")[0] for name in sys.modules}} & {heavy!r})
sys.stderr.write("\\nLOADED=" + json.dumps(loaded) + "\\n")
"""
QWEN = str(ROOT / "samples" / "specs" / "qwen2.5-7b-vllm-g5-12xlarge.yaml")
LINT_SAMPLE = str(ROOT / "samples" / "lint" / "llama-3.1-8b-inf2")
FAKE_SDK = {
    "sagemaker/__init__.py": (
        "def get_execution_role():\n    return 'arn:aws:iam::123456789012:role/FromTheNotebook'\n"
    ),
    "sagemaker/image_uris.py": (
        "def config_for_framework(framework):\n"
        "    if framework != 'djl-lmi':\n"
        "        raise ValueError(framework)\n"
        "    return {'version_aliases': {'latest': '0.39.0'}, 'versions': {'0.39.0': {\n"
        "        'registries': {'us-east-1': '763104351884', 'eu-west-1': '763104351884'},\n"
        "        'repository': 'djl-inference', 'tag_prefix': '0.39.0-lmi30.0.0-cu130'}}}\n"
    ),
}


def loaded_packages(arguments: list[str], extra: str = "") -> list[str]:
    """Which of boto3 / botocore / sagemaker a command imported, in a fresh interpreter."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    completed = subprocess.run(
        [sys.executable, "-c", PROBE.format(arguments=arguments, extra=extra, heavy=set(HEAVY))],
        capture_output=True,
        env={**environment, "AWS_EC2_METADATA_DISABLED": "true"},
        timeout=120,
    )
    marker = completed.stderr.decode().rsplit("LOADED=", 1)
    assert len(marker) == 2, completed.stderr.decode()
    return list(json.loads(marker[1]))


@pytest.mark.parametrize(
    "arguments",
    [
        ["lint", LINT_SAMPLE],
        ["render", QWEN],
        ["deploy", QWEN, "--dry-run", "--region", "us-east-1"],
        ["images"],
    ],
    ids=["lint", "render", "deploy-dry-run", "images"],
)
def test_commands_that_call_no_aws_import_neither_boto3_nor_the_sdk(arguments: list[str]) -> None:
    assert loaded_packages(arguments) == []


def test_the_import_probe_sees_boto3_when_it_is_imported() -> None:
    assert loaded_packages(["render", QWEN], extra="import boto3") == ["boto3", "botocore"]


def test_deploy_help_shows_a_complete_example() -> None:
    result = run_cli("deploy", "--help")
    assert result.returncode == 0
    assert "lmi-config deploy samples/specs/llama-3.1-8b-inf2-24xlarge.yaml --dry-run" in result.stdout
    assert "--role arn:aws:iam::123456789012:role/SageMakerRole" in result.stdout
    assert "Exit status: 0 deployed (or dry run), 1" in result.stdout


def test_images_lists_the_table_and_where_each_image_is(tmp_path: Path) -> None:
    environment = {"LMI_CONFIG_IMAGES_FILE": str(tmp_path / "none.json")}
    listing = _run(["images"], environment)
    assert listing.returncode == 0, listing.stderr
    assert "0.30.0-neuronx-sdk2.20.1" in listing.stdout and "(regions assumed)" in listing.stdout
    seoul = _run(["images", "--framework", "djl-neuronx", "--region", "ap-northeast-2"], environment)
    assert seoul.returncode == 0, seoul.stderr
    line = next(row for row in seoul.stdout.splitlines() if "0.29.0-neuronx-sdk2.19.1" in row)
    assert "not in ap-northeast-2" in line
    rows = json.loads(_run(["images", "--format", "json", "--region", "eu-west-1"], environment).stdout)
    lmi27 = next(row for row in rows if row["tag"] == "0.36.0-lmi27.0.0-cu130")
    assert lmi27["uri"] == "763104351884.dkr.ecr.eu-west-1.amazonaws.com/djl-inference:0.36.0-lmi27.0.0-cu130"
    unknown = _run(["images", "--framework", "djl-cpu"], environment)
    assert unknown.returncode == 2 and "unknown image framework" in unknown.stderr


def _run(arguments: list[str], environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lmi_config", *arguments],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,  # never the terminal pytest may run in: deploy would ask
        env={**os.environ, **environment},
        timeout=120,
    )


def fake_sdk(directory: Path) -> Path:
    for name, text in FAKE_SDK.items():
        path = directory / "sdk" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return directory / "sdk"


def test_images_refresh_writes_a_local_override_and_never_the_package(tmp_path: Path) -> None:
    packaged = ROOT / "lmi_config" / "data" / "images.json"
    before = hashlib.sha256(packaged.read_bytes()).hexdigest()
    override = tmp_path / "config" / "images.json"
    environment = {"PYTHONPATH": str(fake_sdk(tmp_path)), "LMI_CONFIG_IMAGES_FILE": str(override)}
    refreshed = _run(["images", "--refresh"], environment)
    assert refreshed.returncode == 0, refreshed.stderr
    assert str(override) in refreshed.stdout
    assert hashlib.sha256(packaged.read_bytes()).hexdigest() == before
    rows = json.loads(_run(["images", "--framework", "djl-lmi", "--format", "json"], environment).stdout)
    assert "0.39.0-lmi30.0.0-cu130" in [row["tag"] for row in rows]
    without_sdk = _run(["images", "--refresh", "-o", str(tmp_path / "x.json")], {"PYTHONPATH": ""})
    assert without_sdk.returncode == 2 and "lmi-config[sagemaker]" in without_sdk.stderr


def test_a_run_without_a_role_outside_a_notebook_says_how_to_give_one(tmp_path: Path) -> None:
    result = _run(
        ["deploy", QWEN, "--region", "us-east-1", "--yes", "--endpoint-url", "http://127.0.0.1:9"],
        {"PYTHONPATH": "", "AWS_EC2_METADATA_DISABLED": "true"},
    )
    assert result.returncode == 3, result.stderr
    assert "give --role" in result.stderr


def test_without_a_terminal_and_without_yes_nothing_is_called(tmp_path: Path) -> None:
    result = _run(
        [
            "deploy",
            QWEN,
            "--region",
            "us-east-1",
            "--role",
            "arn:aws:iam::123456789012:role/SageMakerRole",
            "--endpoint-url",
            "http://127.0.0.1:9",
        ],
        {"AWS_EC2_METADATA_DISABLED": "true"},
    )
    # nobody could answer: a refusal (exit 2, as --delete), not a "no"
    assert result.returncode == 2, result.stderr
    assert "lmi-config: error: standard input is not a terminal" in result.stderr
    assert "pass --yes to proceed" in result.stderr
    assert "sagemaker.create_model" in result.stdout  # the plan was shown first


def test_a_configuration_with_error_findings_is_refused_like_render(tmp_path: Path) -> None:
    result = run_cli(
        "deploy",
        QWEN,
        "--dry-run",
        "--region",
        "us-east-1",
        "--set",
        "max_rolling_batch_szie=8",
    )
    assert result.returncode == 1, result.stderr
    assert "nothing deployed: the rendered configuration has errors" in result.stderr
