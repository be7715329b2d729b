"""The flags of ``search`` beyond one machine never end in a traceback: generated hostile values for
``--shard``, ``--results``, ``--s3-prefix``, ``--region``, ``--role``, ``--image``, the counts and
the hours, through the real command group (dry runs: nothing runs, nothing reaches AWS)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from test_cli_never_traceback import HOSTILE, MODEL, hostile_number, hostile_text, invoke, workspace

FEWER = settings(
    HOSTILE, max_examples=min(HOSTILE.max_examples, 60)
)  # each run plans jobs: keep the file short
SAGEMAKER = (
    "search", "--model", MODEL, "--on", "sagemaker", "--instance", "ml.trn1.32xlarge", "--dry-run",
    "--role", "arn:aws:iam::123456789012:role/SageMakerExecution", "--s3-prefix", "s3://bucket/prefix",
    "--region", "us-east-1",
)  # fmt: skip


@FEWER
@given(
    shard=st.one_of(hostile_text, st.sampled_from(["0/3", "4/3", "1/0", "2/2/2", "1 / 2", "-1/-1"])),
    results=hostile_text,
)
def test_shard_and_results_survive_hostile_values(shard: str, results: str) -> None:
    with workspace() as directory:
        result = invoke(
            "search",
            "--model",
            MODEL,
            "--instance",
            "inf2.24xlarge",
            "--dry-run",
            "--shard",
            shard,
            "--results",
            results or ".",
        )
        assert result.exit_code == 0 or "lmi-config: error:" in (result.stderr or "") + (result.stdout or "")
        assert not any(
            path.name == "search.json" for path in directory.rglob("*")
        )  # a dry run writes nothing


@FEWER
@given(
    flag=st.sampled_from(["--s3-prefix", "--region", "--role", "--image", "--instance", "--results"]),
    value=hostile_text,
)
def test_sagemaker_text_flags_survive_hostile_values(flag: str, value: str) -> None:
    with workspace():
        invoke(*SAGEMAKER, flag, value)


@FEWER
@given(flag=st.sampled_from(["--max-jobs", "--max-hours", "--poll-seconds"]), value=hostile_number)
def test_sagemaker_number_flags_survive_hostile_values(flag: str, value: str) -> None:
    with workspace():
        invoke(*SAGEMAKER, flag, value)
