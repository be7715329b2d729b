"""``--retry-failed`` is bounded by ``--max-attempts`` (2 by default, the first job counted), and
the search's own ``attempts.json`` in S3 holds each shard's attempts, so a restarted coordinator
knows them. Against moto's real HTTP server (``tests/search_jobs_harness.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from moto.sagemaker.models import sagemaker_backends
from search_jobs_harness import ACCOUNT, BUCKET, REGION, Search, aws, end, jobs, named, server

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="the fake machines run real processes")
__all__ = ["aws", "server"]  # fixtures
SHARD = "trn1.32xlarge-1of2"


def attempts(aws: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    body = aws["s3"].get_object(Bucket=BUCKET, Key="mistral/attempts.json")["Body"].read()
    return {
        name: [(row["job"], row.get("status")) for row in rows]
        for name, rows in json.loads(body)["shards"].items()
    }


def test_a_shard_failing_max_attempts_times_is_not_started_again_and_the_refusal_names_its_last_failure(
    aws: dict[str, Any], server: str, tmp_path: Path
) -> None:
    search = Search(server, tmp_path)
    assert search.coordinate("--yes", "--no-wait").returncode == 0
    first = named(aws, "32xlarge-1of2")
    end(first, "Failed", "AlgorithmError: the first attempt")
    end(named(aws, "32xlarge-2of2"), "Completed")
    end(named(aws, "trn1-2xlarge-1of1"), "Completed")
    ended = search.coordinate()
    assert ended.returncode == 3 and "run again with --retry-failed" in ended.stderr, ended.stderr
    assert attempts(aws)[SHARD] == [(first, "Failed")]
    retried = search.coordinate("--yes", "--retry-failed", "--no-wait")
    assert retried.returncode == 0 and f"started {first}-r1" in retried.stderr, retried.stderr
    end(f"{first}-r1", "Failed", "AlgorithmError: the second attempt")
    again = search.coordinate()
    assert again.returncode == 3 and "every failed shard has had --max-attempts 2 job(s)" in again.stderr
    assert attempts(aws)[SHARD] == [(first, "Failed"), (f"{first}-r1", "Failed")]
    refused = search.coordinate("--yes", "--retry-failed")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    assert (
        f"--max-attempts 2: not started again: {SHARD} (2 job(s), last {first}-r1 Failed: "
        "AlgorithmError: the second attempt)" in refused.stderr
    )
    assert "nothing was started" in refused.stderr and len(jobs(aws)) == 4
    # a coordinator started again knows the attempts from the search's record, not only from the
    # jobs SageMaker lists: here SageMaker no longer lists the retry
    del sagemaker_backends[ACCOUNT][REGION].training_jobs[f"{first}-r1"]
    assert search.coordinate("--yes", "--retry-failed").returncode == 2 and len(jobs(aws)) == 3
    more = search.coordinate("--yes", "--retry-failed", "--max-attempts", "3", "--no-wait")
    assert more.returncode == 0 and f"started {first}-r2" in more.stderr, more.stderr
    assert [job for job, _ in attempts(aws)[SHARD]] == [first, f"{first}-r1", f"{first}-r2"]


def test_retrying_starts_the_shards_below_the_bound_and_names_those_at_it(
    aws: dict[str, Any], server: str, tmp_path: Path
) -> None:
    search = Search(server, tmp_path)
    assert search.coordinate("--yes", "--no-wait").returncode == 0
    first, second = named(aws, "32xlarge-1of2"), named(aws, "32xlarge-2of2")
    end(first, "Failed", "AlgorithmError: out of luck")
    end(second, "Stopped")
    end(named(aws, "trn1-2xlarge-1of1"), "Completed")
    assert search.coordinate().returncode == 3
    # with one job per shard allowed, no shard is retried
    single = search.coordinate("--yes", "--retry-failed", "--max-attempts", "1")
    assert single.returncode == 2 and SHARD in single.stderr and "trn1.32xlarge-2of2" in single.stderr
    retried = search.coordinate("--yes", "--retry-failed", "--no-wait")
    assert retried.returncode == 0, retried.stderr
    assert f"started {first}-r1" in retried.stderr and f"started {second}-r1" in retried.stderr


def test_a_damaged_attempts_record_is_refused_by_its_key_and_nothing_starts(
    aws: dict[str, Any], server: str, tmp_path: Path
) -> None:
    search = Search(server, tmp_path)
    aws["s3"].put_object(Bucket=BUCKET, Key="mistral/attempts.json", Body=b'{"format": 1, "shards": [')
    result = search.coordinate("--yes", "--no-wait")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert f"s3://{BUCKET}/mistral/attempts.json" in result.stderr and jobs(aws) == {}
    aws["s3"].put_object(Bucket=BUCKET, Key="mistral/attempts.json", Body=b'{"format": 1, "shards": []}')
    foreign = search.coordinate("--yes", "--no-wait")
    assert foreign.returncode == 2 and "not a record of a search's attempts" in foreign.stderr
    assert jobs(aws) == {}
    # a damaged record keeps nobody from stopping the jobs
    aws["s3"].delete_object(Bucket=BUCKET, Key="mistral/attempts.json")
    assert search.coordinate("--yes", "--no-wait").returncode == 0 and len(jobs(aws)) == 3
    aws["s3"].put_object(Bucket=BUCKET, Key="mistral/attempts.json", Body=b"\x00 not json")
    stopped = search.coordinate("--stop")
    assert stopped.returncode == 0 and "stopped 3 job(s)" in stopped.stdout, stopped.stderr
