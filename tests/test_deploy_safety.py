"""Deploy deletes only what it made and what nothing else uses; an interrupted create leaves nothing
unlisted; tags never carry a credential — against moto's real HTTP server, through the real CLI.

Every test starts with bystanders on the server: an endpoint, config and model made by hand (no
lmi-config tag), and objects in `models/`, `models2/` and `models-archive/`. Each test checks they
are exactly as they were afterwards. Interruptions are injected at a chosen API call by a small
wrapper around botocore in the CLI's own process: a real SIGINT or SIGTERM sent to itself, or an
AWS error, before or after the call reaches the server.
"""

# ruff: noqa: F401, F811 - the imported fixtures (server, clients, aws) are requested by the tests by name
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_deploy_server import (  # the moto server fixtures are requested by name
    BUCKET,
    COMMON,
    HF_TOKEN,
    QWEN,
    REGION,
    ROLE,
    Run,
    aws,
    clients,
    deploy,
    everything,
    server,
)

from lmi_config import __version__

BYSTANDER_OBJECTS = {
    "models/shared-notes.txt": b"not deploy's",
    "models2/weights.bin": b"\x00model two",
    "models-archive/2024/serving.properties": b"option.model_id=archived\n",
}
OWNED = [{"Key": "lmi-config:version", "Value": __version__}]
GENERATED_KEY = (
    "q9Xv2LmT7rB4kWz8NcY3pHd6FsJ1gUe5"  # the look of an AWS secret key or an API key, no known prefix
)
INJECTOR = r"""
import os, signal, sys, time
import botocore.client
from botocore.exceptions import ClientError

signal.signal(signal.SIGINT, signal.default_int_handler)
if os.environ.get("IGNORE_HANGUP"):
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as nohup starts it
wanted, _, nth = os.environ["INJECT_AT"].partition(":")
action, when = os.environ["INJECT"], os.environ.get("INJECT_WHEN", "before")
seen = [0]
original = botocore.client.BaseClient._make_api_call


def strike(operation):
    if action == "error":
        message = "injected: " + operation + " is not allowed"
        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": message}}, operation)
    os.kill(os.getpid(), getattr(signal, action))
    time.sleep(1)  # the signal is delivered here, as the reply would have been


def patched(self, operation, parameters):
    hit = operation == wanted
    if hit:
        seen[0] += 1
        hit = nth == "*" or seen[0] == int(nth or 1)
    if hit and when == "before":
        strike(operation)
    result = original(self, operation, parameters)
    if hit and when == "after":
        strike(operation)
    return result


botocore.client.BaseClient._make_api_call = patched
from lmi_config.cli import main

main(sys.argv[1:], prog_name="lmi-config")
"""


def environment(tmp: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The CLI's environment in test_deploy_server: fake credentials, nothing can reach AWS."""
    kept = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AWS_", "HF_", "XDG_")) and key.lower() not in ("http_proxy", "https_proxy")
    }
    return {
        **kept,
        "AWS_ACCESS_KEY_ID": "AKIAFAKEFAKEFAKEFAKE",
        "AWS_SECRET_ACCESS_KEY": "fake/Secret+Access/Key0123456789abcdefghij",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(tmp / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp / "no-aws-credentials"),
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
        "XDG_CONFIG_HOME": str(tmp / "config"),
        **(extra or {}),
    }


def injected(
    server: str, *arguments: str, tmp: Path, at: str, action: str, when: str = "before", nohup: bool = False
) -> Run:
    """The CLI with an interruption or an AWS error injected at one API call (``Operation:N``)."""
    extra = {
        "INJECT_AT": at,
        "INJECT": action,
        "INJECT_WHEN": when,
        **({"IGNORE_HANGUP": "1"} if nohup else {}),
    }
    completed = subprocess.run(
        [sys.executable, "-c", INJECTOR, "deploy", *arguments, "--endpoint-url", server],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        env=environment(tmp, extra),
        cwd=tmp,
        timeout=180,
    )
    return Run(completed.returncode, completed.stdout.decode(), completed.stderr.decode())


def with_stdin(server: str, *arguments: str, tmp: Path, stdin: bytes | None) -> Run:
    """The real CLI with standard input a pipe (``stdin`` bytes) or /dev/null (None): never a terminal."""
    completed = subprocess.run(
        [sys.executable, "-m", "lmi_config", "deploy", *arguments, "--endpoint-url", server],
        capture_output=True,
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        env=environment(tmp),
        cwd=tmp,
        timeout=180,
    )
    return Run(completed.returncode, completed.stdout.decode(), completed.stderr.decode())


def make_model(
    aws: Any, name: str, *, tags: list[dict[str, str]] | None = None, s3_uri: str | None = None
) -> None:
    container: dict[str, Any] = {"Image": "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.36.0"}
    if s3_uri:
        container["ModelDataSource"] = {
            "S3DataSource": {"S3Uri": s3_uri, "S3DataType": "S3Prefix", "CompressionType": "None"}
        }
    aws["sagemaker"].create_model(
        ModelName=name, ExecutionRoleArn=ROLE, PrimaryContainer=container, Tags=tags or []
    )


def make_config(aws: Any, name: str, model: str, *, tags: list[dict[str, str]] | None = None) -> None:
    variant = {"VariantName": "AllTraffic", "ModelName": model, "InstanceType": "ml.g5.12xlarge"}
    aws["sagemaker"].create_endpoint_config(
        EndpointConfigName=name, ProductionVariants=[{**variant, "InitialInstanceCount": 1}], Tags=tags or []
    )


def make_endpoint(aws: Any, name: str, config: str, *, tags: list[dict[str, str]] | None = None) -> None:
    aws["sagemaker"].create_endpoint(EndpointName=name, EndpointConfigName=config, Tags=tags or [])


def made_for(endpoint: str) -> list[dict[str, str]]:
    """The tags deploy puts on what it makes for ``endpoint``."""
    return [*OWNED, {"Key": "lmi-config:endpoint", "Value": endpoint}]


def state(aws: Any) -> dict[str, Any]:
    """Everything on the server, with each resource's description and each object's bytes."""
    sagemaker = aws["sagemaker"]
    listed = everything(aws)

    def clean(document: dict[str, Any]) -> dict[str, Any]:
        return {
            key: value
            for key, value in document.items()
            if key not in ("ResponseMetadata", "LastModifiedTime")
        }

    return {
        "models": {name: clean(sagemaker.describe_model(ModelName=name)) for name in listed["models"]},
        "configs": {
            name: clean(sagemaker.describe_endpoint_config(EndpointConfigName=name))
            for name in listed["configs"]
        },
        "endpoints": {
            name: clean(sagemaker.describe_endpoint(EndpointName=name)) for name in listed["endpoints"]
        },
        "objects": {
            key: aws["s3"].get_object(Bucket=BUCKET, Key=key)["Body"].read() for key in listed["objects"]
        },
        "targets": listed["targets"],
    }


@pytest.fixture
def bystanders(aws: Any) -> Any:
    """Resources nobody asked lmi-config to touch; after the test they must be exactly as they were."""
    make_model(aws, "hand-made-model")
    make_config(aws, "hand-made-config", "hand-made-model")
    make_endpoint(aws, "hand-made", "hand-made-config")
    for key, body in BYSTANDER_OBJECTS.items():
        aws["s3"].put_object(Bucket=BUCKET, Key=key, Body=body)
    before = state(aws)
    yield before
    after = state(aws)
    for kind in ("models", "configs", "endpoints", "objects"):
        for name, described in before[kind].items():
            assert after[kind].get(name) == described, f"{kind} {name} changed"


def deployed(server: str, tmp: Path, endpoint: str, *extra: str) -> tuple[str, str]:
    """Deploy QWEN as ``endpoint`` (serving.properties under s3://BUCKET/models); (model, config)."""
    arguments = (
        "--endpoint-name",
        endpoint,
        "--delivery",
        "s3",
        "--s3-prefix",
        f"s3://{BUCKET}/models",
        *extra,
    )
    run = deploy(server, str(QWEN), *COMMON, *arguments, tmp=tmp)
    assert run.returncode == 0, run.output
    described = json.loads(
        deploy(
            server, "--delete", endpoint, "--region", REGION, "--dry-run", "--format", "json", tmp=tmp
        ).stdout
    )
    names = {row["kind"]: row["name"] for row in described["remove"]}
    return names["model"], names["endpoint-config"]


def test_an_endpoint_config_and_model_another_endpoint_uses_are_kept_and_named(
    aws: Any, server: str, tmp_path: Path, bystanders: Any
) -> None:
    model, config = deployed(server, tmp_path, "team-a")
    make_endpoint(aws, "team-b", config)  # team-b runs on team-a's config (and so its model)
    run = deploy(server, "--delete", "team-a", "--region", REGION, "--purge-s3", "--yes", tmp=tmp_path)
    assert run.returncode == 0, run.output
    assert f"kept: endpoint-config {config}: endpoint team-b still uses it" in run.stdout
    assert (
        f"kept: model {model}: endpoint config {config} still names it (used by endpoint team-b)"
        in run.stdout
    )
    left = everything(aws)
    assert "team-a" not in left["endpoints"] and "team-b" in left["endpoints"]
    assert config in left["configs"] and model in left["models"]
    assert f"models/{model}/serving.properties" in left["objects"]  # the model stays, so its files do


def test_a_model_that_another_endpoint_config_names_is_kept(
    aws: Any, server: str, tmp_path: Path, bystanders: Any
) -> None:
    model, config = deployed(server, tmp_path, "team-a")
    make_config(aws, "team-b-config", model)
    make_endpoint(aws, "team-b", "team-b-config")
    run = deploy(server, "--delete", "team-a", "--region", REGION, "--purge-s3", "--yes", tmp=tmp_path)
    assert run.returncode == 0, run.output
    assert f"endpoint-config {config}" in run.stdout.split("kept")[0]  # removed: only team-a used it
    assert (
        f"kept: model {model}: endpoint config team-b-config still names it (used by endpoint team-b)"
        in run.stdout
    )
    left = everything(aws)
    assert config not in left["configs"] and model in left["models"] and "team-b" in left["endpoints"]


def test_what_lmi_config_did_not_create_is_never_deleted(
    aws: Any, server: str, tmp_path: Path, bystanders: Any
) -> None:
    run = deploy(server, "--delete", "hand-made", "--region", REGION, "--purge-s3", "--yes", tmp=tmp_path)
    assert run.returncode == 1, run.output
    assert "endpoint hand-made: it has no lmi-config:version tag: lmi-config did not create it" in run.stdout
    assert "nothing to remove" in run.stdout
    # an endpoint lmi-config made, running on a config and model someone else made: only the endpoint goes
    make_config(aws, "lonely-config", "hand-made-model")
    make_endpoint(aws, "ours-on-theirs", "lonely-config", tags=made_for("ours-on-theirs"))
    mixed = deploy(server, "--delete", "ours-on-theirs", "--region", REGION, "--yes", tmp=tmp_path)
    assert mixed.returncode == 0, mixed.output
    assert "kept: endpoint-config lonely-config: it has no lmi-config:version tag" in mixed.stdout
    assert (
        "kept: model hand-made-model: endpoint config hand-made-config, lonely-config still names it"
        in mixed.stdout
    )
    assert "removed: endpoint ours-on-theirs\n" in mixed.stdout
    assert "lonely-config" in everything(aws)["configs"]


def test_purge_removes_only_the_models_own_prefix_by_path_component(
    aws: Any, server: str, tmp_path: Path, bystanders: Any
) -> None:
    model, _ = deployed(server, tmp_path, "team-a")
    own = f"models/{model}/serving.properties"
    aws["s3"].put_object(
        Bucket=BUCKET, Key=f"models/{model}-v2/other.txt", Body=b"a longer name, not a folder"
    )
    run = deploy(server, "--delete", "team-a", "--region", REGION, "--purge-s3", "--yes", tmp=tmp_path)
    assert run.returncode == 0, run.output
    objects = everything(aws)["objects"]
    assert own not in objects
    assert f"models/{model}-v2/other.txt" in objects
    assert sorted(BYSTANDER_OBJECTS) == sorted(
        key for key in objects if not key.startswith(f"models/{model}")
    )


def test_a_model_whose_source_is_a_bare_string_prefix_never_purges_its_neighbours(
    aws: Any, server: str, tmp_path: Path, bystanders: Any
) -> None:
    # the reported case: a model reading s3://bucket/models (no slash), which as a string prefix
    # covers models2/ and models-archive/ too
    make_model(aws, "legacy-model", tags=made_for("legacy"), s3_uri=f"s3://{BUCKET}/models")
    make_config(aws, "legacy-config", "legacy-model", tags=made_for("legacy"))
    make_endpoint(aws, "legacy", "legacy-config", tags=made_for("legacy"))
    dry = deploy(server, "--delete", "legacy", "--region", REGION, "--purge-s3", "--dry-run", tmp=tmp_path)
    assert dry.returncode == 0, dry.output
    assert (
        f"s3-prefix s3://{BUCKET}/models/: it is not the prefix deploy makes for model legacy-model"
        in dry.stdout
    )
    run = deploy(server, "--delete", "legacy", "--region", REGION, "--purge-s3", "--yes", tmp=tmp_path)
    assert run.returncode == 0, run.output
    assert "s3-object" not in run.stdout
    assert "legacy-model" not in everything(aws)["models"]


def test_objects_another_model_reads_are_kept(aws: Any, server: str, tmp_path: Path, bystanders: Any) -> None:
    model, _ = deployed(server, tmp_path, "team-a")
    make_model(aws, "reads-everything", s3_uri=f"s3://{BUCKET}/models/")
    run = deploy(server, "--delete", "team-a", "--region", REGION, "--purge-s3", "--yes", tmp=tmp_path)
    assert run.returncode == 0, run.output
    assert (
        f"kept: s3-prefix s3://{BUCKET}/models/{model}/: model reads-everything also reads it" in run.stdout
    )
    assert f"models/{model}/serving.properties" in everything(aws)["objects"]


def test_a_dry_run_of_a_delete_lists_what_goes_and_what_stays_and_removes_nothing(
    aws: Any, server: str, tmp_path: Path, bystanders: Any
) -> None:
    model, config = deployed(server, tmp_path, "team-a")
    make_config(aws, "team-b-config", model)
    before = state(aws)
    run = deploy(server, "--delete", "team-a", "--region", REGION, "--purge-s3", "--dry-run", tmp=tmp_path)
    assert run.returncode == 0, run.output
    assert run.stdout.splitlines()[:4] == [
        "Dry run: delete team-a in us-east-1",
        "remove, in this order:",
        "  endpoint team-a",
        f"  endpoint-config {config}",
    ]
    assert f"  model {model}: endpoint config team-b-config still names it" in run.stdout
    document = json.loads(
        deploy(
            server,
            "--delete",
            "team-a",
            "--region",
            REGION,
            "--purge-s3",
            "--dry-run",
            "--format",
            "json",
            tmp=tmp_path,
        ).stdout
    )
    assert document["remove"] == [
        {"kind": "endpoint", "name": "team-a"},
        {"kind": "endpoint-config", "name": config},
    ]
    assert [row["name"] for row in document["keep"]] == [model]
    assert state(aws) == before


@pytest.mark.parametrize("stdin", [None, b"y\n"], ids=["dev-null", "a-pipe-saying-yes"])
def test_delete_without_a_terminal_and_without_yes_is_refused(
    aws: Any, server: str, tmp_path: Path, bystanders: Any, stdin: bytes | None
) -> None:
    deployed(server, tmp_path, "team-a")
    before = state(aws)
    run = with_stdin(
        server, "--delete", "team-a", "--region", REGION, "--purge-s3", tmp=tmp_path, stdin=stdin
    )
    assert run.returncode == 2, run.output
    assert "standard input is not a terminal" in run.stderr and "pass --yes" in run.stderr
    assert "Traceback" not in run.output
    assert state(aws) == before


@pytest.mark.parametrize(
    ("at", "action", "when", "code"),
    [
        ("CreateModel:1", "SIGINT", "after", 130),  # made, but the answer never arrived
        ("CreateEndpointConfig:1", "SIGTERM", "after", 143),
        ("CreateEndpoint:1", "SIGINT", "before", 130),
        ("DescribeEndpoint:2", "SIGTERM", "before", 143),  # while waiting for InService
        ("PutObject:1", "SIGINT", "after", 130),
        ("CreateEndpoint:1", "error", "before", 3),  # AWS refuses part-way
    ],
)
def test_an_interrupted_create_rolls_back_what_it_made(
    aws: Any, server: str, tmp_path: Path, bystanders: Any, at: str, action: str, when: str, code: int
) -> None:
    arguments = ("--endpoint-name", "cut-short", "--delivery", "s3", "--s3-prefix", f"s3://{BUCKET}/models")
    run = injected(server, str(QWEN), *COMMON, *arguments, tmp=tmp_path, at=at, action=action, when=when)
    assert run.returncode == code, run.output
    assert "Traceback" not in run.output and "Aborted!" not in run.output
    assert "removed: " in run.stdout and "NOT removed" not in run.stdout
    assert state(aws) == bystanders


def test_a_rollback_that_fails_names_every_resource_left_with_its_command(
    aws: Any, server: str, tmp_path: Path, bystanders: Any
) -> None:
    arguments = (
        "--endpoint-name",
        "broken-llama",
        "--s3-prefix",
        f"s3://{BUCKET}/models",
        "--delivery",
        "s3",
    )
    run = injected(server, str(QWEN), *COMMON, *arguments, tmp=tmp_path, at="DeleteModel:*", action="error")
    assert run.returncode == 3, run.output
    model = next(name for name in everything(aws)["models"] if name.startswith("broken-llama-"))
    assert f"NOT removed model {model}: DeleteModel: AccessDeniedException" in run.stdout
    assert (
        f"aws sagemaker delete-model --region {REGION} --endpoint-url {server} --model-name {model}"
        in run.stdout
    )
    assert "still in AWS: 1 resources" in run.stdout
    # what was left is found by its tag although endpoint broken-llama is gone
    removed = deploy(server, "--delete", "broken-llama", "--region", REGION, "--yes", tmp=tmp_path)
    assert removed.returncode == 0, removed.output
    assert "(no endpoint broken-llama: what an earlier run made for it)" in removed.stdout
    assert f"removed: model {model}" in removed.stdout
    assert state(aws) == bystanders


def test_what_a_kept_failure_left_without_an_endpoint_can_be_listed_and_removed(
    aws: Any, server: str, tmp_path: Path, bystanders: Any
) -> None:
    arguments = ("--endpoint-name", "half-made", "--keep-on-failure")
    run = injected(
        server, str(QWEN), *COMMON, *arguments, tmp=tmp_path, at="CreateEndpoint:1", action="SIGINT"
    )
    assert run.returncode == 130, run.output
    assert "kept (--keep-on-failure); to remove them:" in run.stdout
    assert f"aws sagemaker delete-endpoint-config --region {REGION} --endpoint-url {server}" in run.stdout
    dry = deploy(server, "--delete", "half-made", "--region", REGION, "--dry-run", tmp=tmp_path)
    assert dry.returncode == 0, dry.output
    assert [line.split()[0] for line in dry.stdout.splitlines()[3:5]] == ["endpoint-config", "model"]
    removed = deploy(server, "--delete", "half-made", "--region", REGION, "--yes", tmp=tmp_path)
    assert removed.returncode == 0, removed.output
    assert state(aws) == bystanders


@pytest.mark.parametrize(
    ("tags", "mention", "hidden"),
    [
        (("apikey=" + HF_TOKEN,), "--tag apikey: the value is a credential", HF_TOKEN),
        (("note=" + HF_TOKEN,), "--tag note: the value is a credential", HF_TOKEN),
        (("db_password=hunter2-horse",), "--tag db_password: the value is a credential", "hunter2-horse"),
        (("x-api-key=plainlooking",), "--tag x-api-key: the value is a credential", "plainlooking"),
        (("note=" + GENERATED_KEY,), "--tag note: the value is a credential", GENERATED_KEY),
        (("ci=job-" + GENERATED_KEY[:30],), "--tag ci: the value is a credential", GENERATED_KEY[:30]),
        (("team=a", "team=b"), "tag key 'team' is given twice (--tag team=a and --tag team=b)", None),
        (("lmi-config:version=0.0.1",), "keys starting with 'lmi-config' are reserved", None),
        (("LMI-Config:endpoint=other",), "keys starting with 'lmi-config' are reserved", None),
        ((HF_TOKEN + "=x",), "a --tag key is itself a credential", HF_TOKEN),
    ],
)
def test_tags_refuse_credentials_duplicates_and_the_reserved_namespace(
    aws: Any,
    server: str,
    tmp_path: Path,
    bystanders: Any,
    tags: tuple[str, ...],
    mention: str,
    hidden: str | None,
) -> None:
    flags = [part for tag in tags for part in ("--tag", tag)]
    for extra in ((), ("--dry-run",), ("--dry-run", "--format", "json")):
        run = deploy(server, str(QWEN), *COMMON, "--endpoint-name", "tagged", *flags, *extra, tmp=tmp_path)
        assert run.returncode == 2, run.output
        assert mention in run.stderr
        assert hidden is None or hidden not in run.output
    assert state(aws) == bystanders


def test_deploy_tags_everything_it_makes_with_its_owner_and_endpoint(
    aws: Any, server: str, tmp_path: Path, bystanders: Any
) -> None:
    model, config = deployed(server, tmp_path, "team-a", "--tag", "team=search")
    sagemaker = aws["sagemaker"]
    arns = [
        sagemaker.describe_model(ModelName=model)["ModelArn"],
        sagemaker.describe_endpoint_config(EndpointConfigName=config)["EndpointConfigArn"],
        sagemaker.describe_endpoint(EndpointName="team-a")["EndpointArn"],
    ]
    for arn in arns:
        tags = {row["Key"]: row["Value"] for row in sagemaker.list_tags(ResourceArn=arn)["Tags"]}
        assert tags == {"lmi-config:version": __version__, "lmi-config:endpoint": "team-a", "team": "search"}


def test_an_interrupted_delete_lists_what_is_left_and_a_second_delete_finishes(
    aws: Any, server: str, tmp_path: Path, bystanders: Any
) -> None:
    model, config = deployed(server, tmp_path, "team-a")
    arguments = ("--delete", "team-a", "--region", REGION, "--purge-s3", "--yes")
    run = injected(server, *arguments, tmp=tmp_path, at="DeleteEndpointConfig:1", action="SIGTERM")
    assert run.returncode == 143, run.output
    assert "removed: endpoint team-a" in run.stdout
    assert f"NOT removed endpoint-config {config}: interrupted before it was removed" in run.stdout
    assert (
        f"aws sagemaker delete-model --region {REGION} --endpoint-url {server} --model-name {model}"
        in run.stdout
    )
    again = deploy(server, *arguments, tmp=tmp_path)
    assert again.returncode == 0, again.output
    assert (
        f"removed: endpoint-config {config}, model {model}, s3-object {BUCKET}/models/{model}/serving.properties"
        in (again.stdout)
    )
    assert state(aws) == bystanders


def test_when_the_endpoint_cannot_be_removed_what_it_runs_on_is_kept_and_listed(
    aws: Any, server: str, tmp_path: Path, bystanders: Any
) -> None:
    arguments = (
        "--endpoint-name",
        "broken-stuck",
        "--s3-prefix",
        f"s3://{BUCKET}/models",
        "--delivery",
        "s3",
    )
    run = injected(
        server, str(QWEN), *COMMON, *arguments, tmp=tmp_path, at="DeleteEndpoint:*", action="error"
    )
    assert run.returncode == 3, run.output
    assert "NOT removed endpoint broken-stuck: DeleteEndpoint: AccessDeniedException" in run.stdout
    left = everything(aws)
    model = next(name for name in left["models"] if name.startswith("broken-stuck-"))
    for kind, name in (("endpoint-config", model), ("model", model)):
        assert (
            f"NOT removed {kind} {name}: kept: endpoint broken-stuck was not removed and may use it"
            in run.stdout
        )
    assert (
        f"aws s3 rm --region {REGION} --endpoint-url {server} s3://{BUCKET}/models/{model}/serving.properties"
        in (run.stdout)
    )
    assert "still in AWS: 4 resources" in run.stdout
    assert "broken-stuck" in left["endpoints"] and model in left["configs"]


@pytest.mark.parametrize(
    "tag",
    [
        "git-sha=0123456789abcdef0123456789abcdef01234567",
        "run=3f2504e0-4f89-11d3-9a0c-0305e82c3301",
        "role=arn:aws:iam::123456789012:role/SageMakerExecutionRoleForTeamSearch",
        "model=Meta-Llama-3-8B-Instruct-Inf2-24xlarge-v20241107",
        "project=LlamaThreeEightBInstructOnInf2Version20241107",
        "max_tokens=4096",
        "author=someone@example.com",
    ],
)
def test_ordinary_tag_values_are_accepted_and_shown(
    aws: Any, server: str, tmp_path: Path, bystanders: Any, tag: str
) -> None:
    run = deploy(server, str(QWEN), *COMMON, "--tag", tag, "--dry-run", tmp=tmp_path)
    assert run.returncode == 0, run.output
    key, _, value = tag.partition("=")
    assert f'"Key": "{key}"' in run.stdout and f'"Value": "{value}"' in run.stdout


def test_update_keeps_the_previous_config_and_model_when_another_endpoint_uses_them(
    aws: Any, server: str, tmp_path: Path, bystanders: Any
) -> None:
    model, config = deployed(server, tmp_path, "team-a")
    make_endpoint(aws, "team-b", config)
    arguments = ("--endpoint-name", "team-a", "--set", "max_model_len=4096", "--update")
    run = deploy(server, str(QWEN), *COMMON, *arguments, tmp=tmp_path)
    assert run.returncode == 0, run.output
    assert f"kept the previous endpoint-config {config}: endpoint team-b still uses it" in run.stdout
    left = everything(aws)
    assert config in left["configs"] and model in left["models"]
    assert aws["sagemaker"].describe_endpoint(EndpointName="team-b")["EndpointConfigName"] == config
    assert aws["sagemaker"].describe_endpoint(EndpointName="team-a")["EndpointConfigName"] != config


def test_an_update_interrupted_while_rolling_keeps_what_the_endpoint_rolls_to(
    aws: Any, server: str, tmp_path: Path, bystanders: Any
) -> None:
    model, config = deployed(server, tmp_path, "team-a")
    arguments = ("--endpoint-name", "team-a", "--set", "max_model_len=4096", "--update")
    run = injected(
        server,
        str(QWEN),
        *COMMON,
        *arguments,
        tmp=tmp_path,
        at="UpdateEndpoint:1",
        action="SIGINT",
        when="after",
    )
    assert run.returncode == 130, run.output
    assert "kept (endpoint team-a runs on or may be rolling to them): model team-a-" in run.stdout
    assert "aws sagemaker delete" not in run.stdout  # removing them would break the endpoint
    rolled_to = aws["sagemaker"].describe_endpoint(EndpointName="team-a")["EndpointConfigName"]
    left = everything(aws)
    assert rolled_to != config and rolled_to in left["configs"]
    assert config in left["configs"] and model in left["models"]  # retiring never started


def test_a_tag_repeating_a_secret_env_value_is_refused_whatever_it_looks_like(
    aws: Any, server: str, tmp_path: Path, bystanders: Any
) -> None:
    plain = "open-sesame"  # no known format: only --secret-env says it is a credential
    arguments = ("--secret-env", "DB_LOGIN", "--tag", "team=a", "--tag", f"team={plain}")
    run = deploy(server, str(QWEN), *COMMON, *arguments, tmp=tmp_path, extra_env={"DB_LOGIN": plain})
    assert run.returncode == 2, run.output
    assert "--tag team: the value is the value of --secret-env DB_LOGIN" in run.stderr
    assert "tag key 'team' is given twice (--tag team=a and --tag team=…)" in run.stderr
    assert plain not in run.output
    assert state(aws) == bystanders


@pytest.mark.parametrize("nohup", [False, True], ids=["terminal-closed", "under-nohup"])
def test_a_hangup_rolls_back_unless_the_run_ignores_hangups(
    aws: Any, server: str, tmp_path: Path, bystanders: Any, nohup: bool
) -> None:
    arguments = ("--endpoint-name", "hung-up")
    run = injected(
        server,
        str(QWEN),
        *COMMON,
        *arguments,
        tmp=tmp_path,
        at="CreateEndpoint:1",
        action="SIGHUP",
        nohup=nohup,
    )
    if nohup:
        assert run.returncode == 0, run.output
        assert "hung-up" in everything(aws)["endpoints"]
    else:
        assert run.returncode == 129, run.output
        assert state(aws) == bystanders
