"""A results location written by someone else (issue 33): a merge takes a shard's results only from
that shard's own object, for trials of that shard's plan, with the journal record of each trial.
Anything else — an object under a name no shard writes, another shard's results renamed, proofs
of TP sizes, lengths, targets or tasks the shard never ran, proofs with no journal record, a
damaged or oversized object — is refused by name and the rest still merges; a shard of more
shards than its grid has TP sizes is complete at once. All through the real CLI, with the fake
Neuron machines of ``shard_machines``, on a shared directory and on S3 (moto on 127.0.0.1)."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from conftest import moto_server
from shard_machines import MISTRAL, Machines, proven, truth
from test_hostile_inputs import Run, assert_refused, run, settle
from test_hostile_inputs import untouched as untouched  # noqa: F401  (the fixture)

INSTANCE = "inf2.24xlarge"  # TP 2, 4 and 8: shard 1/3 runs TP 2, 2/3 TP 4, 3/3 TP 8
pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="the fake machines run real processes")


def _label(index: int) -> str:
    return f"{INSTANCE}-{index}of3"


def _shard_arguments(index: int, count: int, results: str, instance: str = INSTANCE) -> list[str]:
    return [
        "search",
        "--model",
        MISTRAL,
        "--instance",
        instance,
        "--shard",
        f"{index}/{count}",
        "--results",
        results,
    ]


def _machines(root: Path) -> Machines:
    overrides = {"2,128,16384": {"export": "compiler-error"}, "4,64,16384": {"export": "host-oom"}}
    return Machines(root, truth(MISTRAL, INSTANCE, 0.9, overrides))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results location the three shards of one search wrote, as they write it (copied by each test)."""
    root = tmp_path_factory.mktemp("pristine")
    machines = _machines(root)
    for index in (1, 2, 3):
        done = machines.run(_shard_arguments(index, 3, str(root / "shared")), root / f"machine{index}")
        assert done.returncode == 0, done.stderr
    return root / "shared"


@pytest.fixture
def shared(pristine: Path, tmp_path: Path) -> Path:
    target = tmp_path / "shared"
    shutil.copytree(pristine, target)
    return target


def _object_path(shared: Path, index: int) -> Path:
    return shared / "shards" / f"{_label(index)}.json"


def _read_object(shared: Path, index: int) -> dict[str, Any]:
    return json.loads(_object_path(shared, index).read_text())


def _merge(shared: Path, cwd: Path, *extra: str) -> Run:
    output = str(cwd / "merged.json")
    return run(
        "search", "--model", MISTRAL, "--results", str(shared), "--merge", "-o", output, *extra, cwd=cwd
    )


def _proven_tp_sizes(results: Path) -> set[int]:
    return {key[0] for key in proven(results)} if results.exists() else set()


def _journal(results: Path) -> list[dict[str, Any]]:
    return json.loads(results.with_name(results.stem + ".journal.json").read_text())["entries"]


def _refusal(result: Run, name: object) -> str:
    """The error line that names ``name`` (an object's path or URI)."""
    found = [line for line in result.stderr.splitlines() if line.startswith(f"lmi-config: error: {name}: ")]
    assert len(found) == 1, result.stderr[-2000:]
    return found[0]


def _proof_and_record(document: dict[str, Any], **changes: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A proven entry of the object (as the shard wrote it) and the journal record a shard writes for
    it, with ``changes`` applied to both (``proven_on``: the shard the proof names, to the proof only)."""
    proof = copy.deepcopy(document["results"][MISTRAL][0])
    claimed = changes.pop("proven_on", None)
    proof.update(changes)
    fields = ("instance_type", "task", "tensor_parallel_size", "batch_size", "sequence_length")
    record = {
        "model": MISTRAL,
        **{name: proof[name] for name in fields},
        "outcome": "exported-and-loaded",
        "where": proof["proven_on"],
        "at": proof["proven_at"],
    }
    if claimed is not None:
        proof["proven_on"] = {**proof["proven_on"], "shard": claimed}
    return proof, record


def _forge(shared: Path, index: int, edit: Callable[[dict[str, Any]], None]) -> Path:
    path = _object_path(shared, index)
    document = json.loads(path.read_text())
    edit(document)
    path.write_text(json.dumps(document, indent=1))
    return path


# --- proofs a shard never ran ------------------------------------------------------------------

# a trial of shard 1/3 (TP 2) it did not prove: the judge rules (2, 128, 16384) out, journaled as skipped
NOT_RUN = {"tensor_parallel_size": 2, "batch_size": 128, "sequence_length": 16384}
FORGERIES = {
    "TP of another shard": ({**NOT_RUN, "tensor_parallel_size": 8}, True, "not trials of shard"),
    "TP the grid lacks": ({**NOT_RUN, "tensor_parallel_size": 6}, True, "not trials of shard"),
    "length the grid lacks": ({**NOT_RUN, "sequence_length": 3000}, True, "not trials of shard"),
    "batch the grid lacks": ({**NOT_RUN, "batch_size": 3}, True, "not trials of shard"),
    "another compile target": ({**NOT_RUN, "instance_type": "trn2"}, True, "not trials of shard"),
    "another task": ({**NOT_RUN, "task": "feature-extraction"}, True, "not trials of shard"),
    "proven on another shard": ({**NOT_RUN, "proven_on": _label(2)}, True, "proven on another shard"),
    "no journal record": (NOT_RUN, False, "with no journal record of the trial"),
    # journaled as exported and loaded, and as ruled out (skipped) by the shard itself
    "a trial its journal says it skipped": (NOT_RUN, True, "journaled as failed or skipped in this object"),
}


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_a_proof_the_shard_never_ran_is_refused_by_name_and_the_rest_merged(
    shared: Path, tmp_path: Path, forgery: str
) -> None:
    changes, journaled, why = FORGERIES[forgery]
    expected = _merge(shared, tmp_path)  # the location as its shards wrote it
    assert expected.returncode == 0, expected.stderr
    honest = set(proven(tmp_path / "merged.json"))
    (tmp_path / "merged.json").unlink()
    (tmp_path / "merged.journal.json").unlink()

    def add(document: dict[str, Any]) -> None:
        proof, record = _proof_and_record(document, **changes)
        document["results"][MISTRAL].append(proof)
        if journaled:
            document["journal"]["entries"].append(record)

    forged = _forge(shared, 1, add)
    result = _merge(shared, tmp_path)
    assert_refused(result, 2, f"{forged}: 1 proven configuration not merged", why)
    assert "merged 3 shard(s)" in result.stdout  # the rest, this object's honest part included
    assert set(proven(tmp_path / "merged.json")) == honest
    trial = tuple(changes.get(name, NOT_RUN[name]) for name in NOT_RUN)
    assert trial not in honest and f"TP {trial[0]}, batch {trial[1]}, length {trial[2]}" in result.stderr


def test_journal_entries_of_trials_outside_the_shards_plan_are_not_merged(
    shared: Path, tmp_path: Path
) -> None:
    def add(document: dict[str, Any]) -> None:
        failure = next(entry for entry in document["journal"]["entries"] if entry["outcome"] == "failed")
        failure = {**failure, "forged": True}
        document["journal"]["entries"] += [
            {**failure, "tensor_parallel_size": 8, "batch_size": 1, "sequence_length": 1024},  # shard 3's
            {**failure, "model": "someone/else", "batch_size": 1, "sequence_length": 1024},
            {**failure, "outcome": "job-failed", "job": "lmic-forged-job"},  # the coordinator's to write
            {**failure, "batch_size": 1, "sequence_length": 1024, "where": {"shard": _label(2)}},
        ]

    forged = _forge(shared, 1, add)
    result = _merge(shared, tmp_path)
    assert_refused(result, 2, f"{forged}: 1 journal entry not merged, not trials of shard {_label(1)}")
    assert "of another model" in result.stderr and "not a trial's outcome" in result.stderr
    assert (
        "recorded by another shard: " in result.stderr and "recorded on inf2.24xlarge-2of3)" in result.stderr
    )
    journal = _journal(tmp_path / "merged.json")
    assert not [entry for entry in journal if entry["outcome"] == "job-failed"]
    assert {entry["model"] for entry in journal} == {MISTRAL}
    assert not [entry for entry in journal if entry.get("forged")]
    assert {entry["tensor_parallel_size"] for entry in journal if entry["shard"] == _label(1)} == {2}


def test_an_object_of_many_forged_entries_is_refused_in_a_few_lines_and_the_rest_merged(
    shared: Path, tmp_path: Path
) -> None:
    def add(document: dict[str, Any]) -> None:
        for number in range(5000):
            for changes in (
                {"proven_on": f"forged-{number}"},
                {"tensor_parallel_size": 8, "batch_size": number + 1},
            ):
                proof, record = _proof_and_record(document, **{**NOT_RUN, **changes})
                document["results"][MISTRAL].append(proof)
                document["journal"]["entries"].append(
                    {**record, "where": {"shard": f"\x1b[31mforged-{number}"}}
                )

    forged = _forge(shared, 1, add)
    result = _merge(shared, tmp_path)
    assert_refused(result, 2, f"{forged}: 5000 proven configurations not merged, not trials of shard")
    assert (
        "\x1b" not in result.stderr
        and "5000 proven configurations not merged, proven on another shard" in result.stderr
    )
    assert len(result.stderr.splitlines()) < 30, result.stderr
    assert _proven_tp_sizes(tmp_path / "merged.json") == {2, 4, 8}
    assert not [entry for entry in _journal(tmp_path / "merged.json") if "forged" in str(entry.get("where"))]


# --- objects that are not a shard's own --------------------------------------------------------


def _renamed(document: dict[str, Any], name: str) -> dict[str, Any]:
    """Another shard's object made to claim ``name`` everywhere it names its shard."""
    text = json.dumps(document).replace(json.dumps(document["shard"]), json.dumps(name))
    return json.loads(text)


@pytest.mark.parametrize(
    "key",
    [
        "shards/extra.json",
        "shards/nested/inf2.24xlarge-2of3.json",
        "shards/inf2.24xlarge-02of3.json",
        "shards/INF2.24xlarge-2of3.json",
        "shards/inf2.24xlarge-2of3.json.bak",
        "shards/inf2.24xlarge-3of3.json",  # shard 3's own name: TP 4 is not in its plan
        "shards/p5.48xlarge-1of1.json",  # no NeuronCores
    ],
)
def test_another_shards_results_under_any_other_name_are_refused_by_key(
    shared: Path, tmp_path: Path, key: str
) -> None:
    document = _read_object(shared, 2)
    _object_path(shared, 2).unlink()  # TP 4 could come from nowhere else
    name = key.removeprefix("shards/").removesuffix(".json")
    target = shared / key
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(_renamed(document, name)))
    result = _merge(shared, tmp_path)
    assert_refused(result, 2, str(target), "not merged")
    assert _proven_tp_sizes(tmp_path / "merged.json") == {2, 8} - (
        {8} if key.endswith("3of3.json") else set()
    )
    assert 4 not in {entry["tensor_parallel_size"] for entry in _journal(tmp_path / "merged.json")}


def test_an_object_whose_name_and_writer_disagree_is_refused(shared: Path, tmp_path: Path) -> None:
    def claim(document: dict[str, Any]) -> None:
        document["where"]["shard"] = _label(3)

    forged = _forge(shared, 1, claim)
    result = _merge(shared, tmp_path)
    assert_refused(result, 2, f"{forged}: names shard '{_label(1)}' but was written by '{_label(3)}'")
    assert _proven_tp_sizes(tmp_path / "merged.json") == {4, 8}


# --- damaged and oversized objects -------------------------------------------------------------


def test_an_oversized_and_an_undecodable_object_are_refused_and_the_rest_merged(
    shared: Path, tmp_path: Path
) -> None:
    oversized = _object_path(shared, 3)
    with oversized.open("r+b") as handle:
        handle.truncate(64 * 1024 * 1024 + 1)  # sparse: no disk, one byte over the cap
    undecodable = _object_path(shared, 2)
    undecodable.write_bytes(b'{"format": 1, "kind": "\xff\xfe"}')
    result = _merge(shared, tmp_path)
    assert_refused(result, 2)
    assert _refusal(result, oversized).endswith("not merged") and _refusal(result, undecodable).endswith(
        "not merged"
    )
    assert "merged 1 shard(s)" in result.stdout
    assert _proven_tp_sizes(tmp_path / "merged.json") == {2}


# --- the same on S3 -----------------------------------------------------------------------------

BUCKET = "lmi-searches"
ACCESS_KEY = "AKIAFAKEFAKEFAKEFAKE"
SECRET_KEY = "fake/Secret+Access/Key0123456789abcdefghij"


@pytest.fixture(scope="module")
def s3_server() -> Iterator[str]:
    with moto_server() as url:
        yield url


def test_on_s3_a_forged_proof_and_an_oversized_object_are_refused_and_the_rest_merged(
    s3_server: str, shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = boto3.session.Session(
        aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY, region_name="us-east-1"
    ).client("s3", endpoint_url=s3_server)
    client.create_bucket(Bucket=BUCKET)

    def add(document: dict[str, Any]) -> None:
        proof, record = _proof_and_record(document, **{**NOT_RUN, "tensor_parallel_size": 8})
        document["results"][MISTRAL].append(proof)
        document["journal"]["entries"].append(record)

    _forge(shared, 1, add)
    for path in [shared / "search.json", *(_object_path(shared, index) for index in (1, 2))]:
        client.put_object(Bucket=BUCKET, Key=f"m/{path.relative_to(shared)}", Body=path.read_bytes())
    client.put_object(Bucket=BUCKET, Key=f"m/shards/{_label(3)}.json", Body=b" " * (64 * 1024 * 1024 + 1))
    for name, value in {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-aws-credentials"),
        "NO_PROXY": "127.0.0.1,localhost",
    }.items():
        monkeypatch.setenv(name, value)  # run() passes this process's environment on
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    result = run(
        "search", "--model", MISTRAL, "--results", f"s3://{BUCKET}/m", "--merge", "-o",
        str(tmp_path / "merged.json"), "--region", "us-east-1", "--endpoint-url", s3_server, cwd=tmp_path,
    )  # fmt: skip
    assert_refused(result, 2, f"s3://{BUCKET}/m/shards/{_label(1)}.json: 1 proven configuration not merged")
    assert _refusal(result, f"s3://{BUCKET}/m/shards/{_label(3)}.json").endswith("not merged")
    assert _proven_tp_sizes(tmp_path / "merged.json") == {2, 4}


# --- a shard resumed from its object -----------------------------------------------------------


def test_a_shard_resumed_from_its_object_leaves_out_what_its_plan_does_not_hold(
    shared: Path, tmp_path: Path
) -> None:
    def add(document: dict[str, Any]) -> None:
        proof, record = _proof_and_record(document, **{**NOT_RUN, "tensor_parallel_size": 8})
        document["results"][MISTRAL].append(proof)
        document["journal"]["entries"].append(record)

    _forge(shared, 1, add)
    machines = _machines(tmp_path)
    again = machines.run(_shard_arguments(1, 3, str(shared)), tmp_path / "another-machine")
    assert again.returncode == 0, again.stderr
    assert "1 proven configuration not merged, not trials of shard" in again.stderr
    assert machines.exports() == []  # what it did prove is taken: nothing is run again
    document = _read_object(shared, 1)
    assert {entry["tensor_parallel_size"] for entry in document["results"][MISTRAL]} == {2}
    assert {entry["tensor_parallel_size"] for entry in document["journal"]["entries"]} == {2}


# --- edge shard counts ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("instance", "shard"),
    [("inf2.xlarge", "2/2"), (INSTANCE, "4/4"), (INSTANCE, "999999/999999"), (INSTANCE, "4/1000")],
)
def test_a_shard_past_the_grids_tp_sizes_is_complete_at_once(
    tmp_path: Path, instance: str, shard: str
) -> None:
    machines = _machines(tmp_path)
    index, count = (int(part) for part in shard.split("/"))
    listed = machines.run(
        [*_shard_arguments(index, count, str(tmp_path / "shared"), instance), "--dry-run"], tmp_path / "m"
    )
    assert listed.returncode == 0 and "complete at once" in listed.stdout, listed.stderr
    assert not (tmp_path / "shared").exists()
    result = machines.run(_shard_arguments(index, count, str(tmp_path / "shared"), instance), tmp_path / "m")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "this shard has none to run, complete at once" in result.stderr
    assert "0 valid configuration(s)" in result.stdout and machines.exports() == []
    published = json.loads((tmp_path / "shared" / "shards" / f"{instance}-{index}of{count}.json").read_text())
    assert published["complete"] is True
    merged = _merge(tmp_path / "shared", tmp_path)
    assert merged.returncode == 0 and "merged 1 shard(s)" in merged.stdout, merged.stderr


@pytest.mark.parametrize(
    ("shard", "message"),
    [
        ("1/0", "N is the number of shards, at least 1"),
        ("1/1000000", "N is at most 999999"),
        ("99999999999999999999/3", "K must be between 1 and N"),
        ("\u0661/\u0662", "expected K/N"),  # Arabic-Indic digits are no shard number
        ("1/\u0662", "expected K/N"),
    ],
)
def test_an_unusable_shard_count_is_a_usage_error_that_touches_nothing(
    untouched: Path, shard: str, message: str
) -> None:
    (untouched / "shared").mkdir()
    settle(untouched)
    result = run(
        *_shard_arguments(1, 1, "shared")[:5], "--shard", shard, "--results", "shared", cwd=untouched
    )
    assert_refused(result, 2, f"--shard {shard}: {message}")
    assert not any((untouched / "shared").iterdir())
