"""``search --on sagemaker`` against moto's real HTTP server on 127.0.0.1, driven as a user drives it
(the server, the coordinator and the jobs' machines: ``tests/search_jobs_harness.py``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from search_jobs_harness import (
    BUCKET,
    FAILURE_LINES,
    LOG_GROUP,
    PREFIX,
    SECRET_KEY,
    Search,
    aws,
    end,
    jobs,
    named,
    server,
    usd,
)
from shard_machines import MISTRAL, failed, proven

from lmi_config.knowledge.planning import on_demand_price

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="the fake machines run real processes")
__all__ = ["aws", "server"]  # fixtures


def test_three_shards_over_two_instance_types_one_failing_and_a_coordinator_restarted_half_way(
    aws: dict[str, Any], server: str, tmp_path: Path
) -> None:
    search = Search(server, tmp_path)
    started = search.coordinate("--yes", "--no-wait")
    assert started.returncode == 0, started.stderr
    prices = {name: on_demand_price(name) for name in ("trn1.32xlarge", "trn1.2xlarge")}
    bound = 8 * (2 * usd(prices["trn1.32xlarge"]) + usd(prices["trn1.2xlarge"]))  # 3 jobs x 8 h at most
    assert f"at most ${bound:,.2f}" in started.stderr and "24 instance-hours at most" in started.stderr
    for name, price in prices.items():
        assert (f"the hours of {name}" in started.stderr or f", {name} (no list" in started.stderr) == (
            price is None
        )
    assert sorted(jobs(aws).values()) == ["InProgress"] * 3
    small, first, second = (
        named(aws, "trn1-2xlarge-1of1"),
        named(aws, "32xlarge-1of2"),
        named(aws, "32xlarge-2of2"),
    )
    search.play(aws, second)  # jobs end in an order of their own: the second shard first
    half_way = search.coordinate("--no-wait")  # the coordinator started again: it finds its jobs by name
    assert half_way.returncode == 0, half_way.stderr
    assert "started" not in half_way.stderr and len(jobs(aws)) == 3
    # shard 2 of 2 of trn1.32xlarge: TP 4 and 16 (the judge rules TP 4 out on trn1, so 16 only proves)
    half = {key[0] for key in proven(search.results)}
    assert half and half <= {4, 16}
    search.play(aws, small)
    aws["logs"].create_log_stream(logGroupName=LOG_GROUP, logStreamName=f"{first}/algo-1-1700000000")
    aws["logs"].put_log_events(
        logGroupName=LOG_GROUP,
        logStreamName=f"{first}/algo-1-1700000000",
        logEvents=[
            {"timestamp": int(time.time() * 1000) + index, "message": line}
            for index, line in enumerate(FAILURE_LINES)
        ],
    )
    end(first, "Failed", "AlgorithmError: the shard stopped")
    ended = search.coordinate()  # waits until every job has ended
    assert ended.returncode == 3, ended.stderr
    assert f"job {first} (trn1.32xlarge-1of2) Failed: AlgorithmError" in ended.stderr
    assert FAILURE_LINES[-1] in ended.stderr and "--retry-failed" in ended.stderr
    valid = proven(search.results)
    assert len(valid) == len(set(valid)) and {key[0] for key in valid} == half | {2}
    failures = [e for e in json.loads(search.journal.read_text())["entries"] if e["outcome"] == "job-failed"]
    assert [(e["job"], e["last_lines"]) for e in failures] == [(first, FAILURE_LINES)]
    state = (search.results.read_bytes(), search.journal.read_bytes())
    assert search.coordinate().returncode == 3
    assert (search.results.read_bytes(), search.journal.read_bytes()) == state  # nothing repeated
    retried = search.coordinate("--yes", "--retry-failed", "--no-wait")
    assert retried.returncode == 0 and f"started {first}-r1" in retried.stderr
    search.play(aws, f"{first}-r1")
    done = search.coordinate()
    assert done.returncode == 0, done.stderr
    # exactly the valid configurations of one search on trn1.32xlarge (trn1.2xlarge's TP 2 is among them), each once
    alone = search.machines.run(
        ["search", "--model", MISTRAL, "--instance", "trn1.32xlarge", "-o", str(tmp_path / "alone.json")],
        tmp_path / "alone",
    )
    assert alone.returncode == 0, alone.stderr
    merged = proven(search.results)
    assert len(merged) == len(set(merged)) and set(merged) == set(proven(tmp_path / "alone.json"))
    assert failed(search.journal) == failed(tmp_path / "alone.journal.json")
    where = {entry["proven_on"]["job"] for entry in json.loads(search.results.read_text())[MISTRAL]}
    assert where <= {small, second, f"{first}-r1"}


def test_a_dry_run_prints_the_plan_and_the_calls_and_starts_nothing(
    aws: dict[str, Any], server: str, tmp_path: Path
) -> None:
    search = Search(server, tmp_path)
    result = search.coordinate("--dry-run")
    assert result.returncode == 0, result.stderr
    calls = [line for line in result.stdout.splitlines() if line.startswith("sagemaker.create_training_job ")]
    requests = [json.loads(line.split(" ", 1)[1]) for line in calls]
    assert [request["ResourceConfig"]["InstanceType"] for request in requests] == [
        "ml.trn1.2xlarge",
        "ml.trn1.32xlarge",
        "ml.trn1.32xlarge",
    ]
    assert all(request["StoppingCondition"]["MaxRuntimeInSeconds"] == 8 * 3600 for request in requests)
    assert "24 instance-hours at most" in result.stdout and SECRET_KEY not in result.stdout + result.stderr
    assert jobs(aws) == {} and "Contents" not in aws["s3"].list_objects_v2(Bucket=BUCKET)
    assert result.stdout.count("s3.put_object ") == 1  # the lmi-config the jobs install, uploaded once
    # five shards of trn1.32xlarge: the one holding only TP 4, which the judge rules out on trn1, gets no job
    wide = search.coordinate("--dry-run", "--max-jobs", "6")
    assert wide.returncode == 0, wide.stderr
    assert wide.stdout.count("sagemaker.create_training_job ") == 5
    assert "trn1.32xlarge-2of5: no job — the judge rules out every candidate of TP 4" in wide.stdout
    assert jobs(aws) == {}


def test_each_job_installs_the_coordinators_own_lmi_config_from_the_search_prefix(
    aws: dict[str, Any], server: str, tmp_path: Path
) -> None:
    """Not an index's lmi-config of the same version (it may not be published): the package the
    coordinator runs, uploaded once under the prefix and copied into every job by an input channel."""
    import io
    import sysconfig
    import tarfile
    import tomllib

    import lmi_config

    search = Search(server, tmp_path)
    planned = search.coordinate("--dry-run")
    upload = json.loads(
        next(line for line in planned.stdout.splitlines() if line.startswith("s3.put_object "))[14:]
    )
    assert upload["Bucket"] == BUCKET and upload["Key"].startswith("mistral/code/lmi-config-")
    started = search.coordinate("--yes", "--no-wait")
    assert started.returncode == 0, started.stderr
    keys = [
        row["Key"] for row in aws["s3"].list_objects_v2(Bucket=BUCKET, Prefix="mistral/code/")["Contents"]
    ]
    assert keys == [upload["Key"]]  # one upload for three jobs
    for name in jobs(aws):
        described = aws["sagemaker"].describe_training_job(TrainingJobName=name)
        (channel,) = described["InputDataConfig"]
        assert channel["DataSource"]["S3DataSource"]["S3Uri"] == f"s3://{BUCKET}/{upload['Key']}"
    body = aws["s3"].get_object(Bucket=BUCKET, Key=upload["Key"])["Body"].read()
    unpacked = tmp_path / "job-package"
    with tarfile.open(fileobj=io.BytesIO(body)) as archive:
        archive.extractall(unpacked, filter="data")
    (root,) = list(unpacked.iterdir())
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["version"] == lmi_config.__version__
    assert {line.split(">=")[0].lower() for line in project["dependencies"]} >= {"boto3", "click", "pydantic"}
    here = Path(lmi_config.__file__).resolve().parent
    for relative in ("search/shard_run.py", "data/search.json", "templates/serving.properties.j2"):
        assert (root / "lmi_config" / relative).read_bytes() == (here / relative).read_bytes()
    # -S: not this checkout's editable install; the dependencies from this interpreter's site-packages
    imported = subprocess.run(
        [
            sys.executable,
            "-S",
            "-c",
            "import lmi_config.search.shard_run, lmi_config.cli; print(lmi_config.__file__)",
        ],
        env={"PYTHONPATH": f"{root}:{sysconfig.get_paths()['purelib']}", "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,  # -c puts the working directory first on the path: not this checkout
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert imported.returncode == 0 and imported.stdout.startswith(str(root)), imported.stderr
    again = search.coordinate("--no-wait")
    assert again.returncode == 0, again.stderr
    assert len(aws["s3"].list_objects_v2(Bucket=BUCKET, Prefix="mistral/code/")["Contents"]) == 1


def test_nothing_starts_without_a_terminal_and_without_yes(
    aws: dict[str, Any], server: str, tmp_path: Path
) -> None:
    result = Search(server, tmp_path).coordinate()
    assert result.returncode == 2 and "pass --yes" in result.stderr and "Traceback" not in result.stderr
    assert jobs(aws) == {}


def test_an_instance_type_training_jobs_do_not_offer_is_refused(
    aws: dict[str, Any], server: str, tmp_path: Path
) -> None:
    search = Search(server, tmp_path)
    command = [
        part if part != "ml.trn1.2xlarge" else "ml.inf2.24xlarge"
        for part in search.coordinator_command("--yes")
    ]
    result = subprocess.run(command, env=search.environment(), capture_output=True, text=True, timeout=120)
    assert (
        result.returncode == 2
        and "do not offer ml.inf2.24xlarge" in result.stderr
        and "as trn1" in result.stderr
    )
    assert jobs(aws) == {}


def test_stop_stops_every_job_and_a_second_coordinator_is_refused_while_one_watches(
    aws: dict[str, Any], server: str, tmp_path: Path
) -> None:
    search = Search(server, tmp_path)
    assert search.coordinate("--yes", "--no-wait").returncode == 0
    watching = subprocess.Popen(
        search.coordinator_command("--poll-seconds", "0.2"),
        env=search.environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while "Contents" not in aws["s3"].list_objects_v2(Bucket=BUCKET, Prefix="mistral/coordinator.json"):
        assert time.monotonic() < deadline and watching.poll() is None, watching.communicate()
        time.sleep(0.05)
    second = search.coordinate("--no-wait")
    assert (
        second.returncode == 2
        and "another coordinator" in second.stderr
        and "coordinator.json" in second.stderr
    )
    watching.send_signal(signal.SIGINT)
    _, stderr = watching.communicate(timeout=60)
    assert watching.returncode == 130 and "the jobs keep running" in stderr, stderr
    assert "Contents" not in aws["s3"].list_objects_v2(Bucket=BUCKET, Prefix="mistral/coordinator.json")
    stopped = search.coordinate("--stop")
    assert stopped.returncode == 0 and "stopped 3 job(s)" in stopped.stdout
    assert sorted(jobs(aws).values()) == ["Stopped"] * 3
    assert os.environ.get("AWS_SECRET_ACCESS_KEY") != SECRET_KEY  # the fake keys stay in the subprocesses


def test_a_corrupt_shard_object_in_s3_is_refused_by_key_and_the_others_merged(
    aws: dict[str, Any], server: str, tmp_path: Path
) -> None:
    search = Search(server, tmp_path)
    assert search.coordinate("--yes", "--no-wait").returncode == 0
    search.play(aws, named(aws, "trn1-2xlarge-1of1"))
    aws["s3"].put_object(
        Bucket=BUCKET, Key="mistral/shards/trn1.32xlarge-1of2.json", Body=b'{"format": 1, "kind": "lmi-con'
    )
    result = search.coordinate("--no-wait")
    assert result.returncode == 2, result.stderr
    assert f"{PREFIX}/shards/trn1.32xlarge-1of2.json" in result.stderr and "Traceback" not in result.stderr
    assert {key[0] for key in proven(search.results)} == {2}  # the small job's shard, merged
