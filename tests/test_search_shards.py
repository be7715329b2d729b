"""``search --shard K/N --results DIR`` on several fake machines (processes, each with its own work
directory) against one shared results location, and ``search --merge``: the merged result is the
single search's, merging again adds nothing, a shard run again repeats nothing, and what is not
a shard of this search is refused by its key."""

from __future__ import annotations

import json
import shutil
import signal
import time
from pathlib import Path

import pytest
from shard_machines import MISTRAL, Machines, failed, proven, truth
from test_hostile_inputs import assert_refused, run, settle
from test_hostile_inputs import untouched as untouched  # noqa: F401  (the fixture)

from lmi_config.errors import InputError
from lmi_config.search.shards import Shard, parse_shard, plan_shards

INSTANCE = "inf2.24xlarge"  # 12 NeuronCores: TP 2, 4 and 8 divide Mistral's 32 heads
pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="the fake machines run real processes")


def _shard(index: int, count: int, results: Path, *extra: str) -> list[str]:
    return [
        "search",
        "--model",
        MISTRAL,
        "--instance",
        INSTANCE,
        "--shard",
        f"{index}/{count}",
        "--results",
        str(results),
        *extra,
    ]


def _machines(tmp_path: Path) -> Machines:
    overrides = {"2,128,16384": {"export": "compiler-error"}, "4,64,16384": {"export": "host-oom"}}
    return Machines(tmp_path, truth(MISTRAL, INSTANCE, 0.9, overrides))


def test_three_machines_with_one_shard_each_merge_into_the_single_search_result(tmp_path: Path) -> None:
    machines = _machines(tmp_path)
    shared = tmp_path / "shared"
    processes = [
        machines.start(_shard(index, 3, shared), tmp_path / f"machine{index}") for index in (1, 2, 3)
    ]
    for process in processes:
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
    single = machines.run(
        ["search", "--model", MISTRAL, "--instance", INSTANCE, "-o", str(tmp_path / "single.json")],
        tmp_path / "alone",
    )
    assert single.returncode == 0, single.stderr
    merge = [
        "search",
        "--model",
        MISTRAL,
        "--results",
        str(shared),
        "--merge",
        "-o",
        str(tmp_path / "merged.json"),
    ]
    first = machines.run(merge, tmp_path / "coordinator")
    assert first.returncode == 0, first.stderr
    merged = proven(tmp_path / "merged.json")
    assert len(merged) == len(set(merged))  # each configuration once
    assert set(merged) == set(proven(tmp_path / "single.json"))
    assert failed(tmp_path / "merged.journal.json") == failed(tmp_path / "single.journal.json") != set()
    before = (tmp_path / "merged.json").read_bytes(), (tmp_path / "merged.journal.json").read_bytes()
    again = machines.run(merge, tmp_path / "coordinator")
    assert again.returncode == 0 and "0 new" in again.stdout
    assert (
        (tmp_path / "merged.json").read_bytes(),
        (tmp_path / "merged.journal.json").read_bytes(),
    ) == before
    for entry in json.loads((tmp_path / "merged.json").read_text())[MISTRAL]:
        # where and when: the shard whose TP sizes hold it (round robin: TP 2 -> 1of3, 4 -> 2of3, 8 -> 3of3)
        shard = {2: "1of3", 4: "2of3", 8: "3of3"}[entry["tensor_parallel_size"]]
        assert (
            entry["proven_on"]["shard"] == f"{INSTANCE}-{shard}"
            and entry["proven_on"]["instance"] == INSTANCE
        )
        assert entry["proven_at"].startswith("20")


def test_a_shard_started_again_on_another_machine_resumes_from_its_object(tmp_path: Path) -> None:
    machines = _machines(tmp_path)
    shared = tmp_path / "shared"
    first = machines.run(_shard(2, 2, shared), tmp_path / "machine-a")
    assert first.returncode == 0, first.stderr
    exported = machines.exports()
    assert exported and {key[0] for key in exported} == {4}  # shard 2 of 2 holds TP 4 only
    second = machines.run(_shard(2, 2, shared), tmp_path / "machine-b")  # an empty work directory
    assert second.returncode == 0, second.stderr
    assert "this run: 0 trial(s)" in second.stdout
    assert machines.exports() == exported


def test_a_corrupt_object_and_a_shard_of_another_search_are_refused_by_key_and_the_rest_merged(
    tmp_path: Path,
) -> None:
    machines = _machines(tmp_path)
    shared, other = tmp_path / "shared", tmp_path / "other"
    assert machines.run(_shard(1, 3, shared), tmp_path / "m1").returncode == 0
    assert machines.run(_shard(3, 3, other), tmp_path / "m3").returncode == 0  # another search's location
    foreign = shared / "shards" / f"{INSTANCE}-3of3.json"
    shutil.copy(other / "shards" / f"{INSTANCE}-3of3.json", foreign)
    good = (shared / "shards" / f"{INSTANCE}-1of3.json").read_bytes()
    truncated = shared / "shards" / f"{INSTANCE}-2of3.json"
    truncated.write_bytes(good[: len(good) // 2])
    junk = json.loads(good)
    junk["shard"], junk["results"][MISTRAL][0]["tensor_parallel_size"] = f"{INSTANCE}-9of9", "8"
    wrong_types = shared / "shards" / f"{INSTANCE}-9of9.json"
    wrong_types.write_text(json.dumps(junk))
    result = run(
        "search",
        "--model",
        MISTRAL,
        "--results",
        str(shared),
        "--merge",
        "-o",
        str(tmp_path / "merged.json"),
        cwd=tmp_path,
    )
    assert_refused(result, 2, str(foreign), "a shard of another search", str(truncated))
    assert f"{wrong_types}: entry 1 of {MISTRAL} is not a configuration" in result.stderr
    assert {key[0] for key in proven(tmp_path / "merged.json")} == {2}  # the good shard only


@pytest.mark.parametrize("shard", ["0/3", "4/3", "3", "-1/2"])
def test_a_shard_outside_one_to_n_is_a_usage_error_that_touches_nothing(untouched: Path, shard: str) -> None:
    (untouched / "shared").mkdir()
    settle(untouched)
    result = run(
        "search",
        "--model",
        MISTRAL,
        "--instance",
        INSTANCE,
        "--shard",
        shard,
        "--results",
        "shared",
        cwd=untouched,
    )
    assert_refused(result, 2, f"--shard {shard}")
    assert not any((untouched / "shared").iterdir())


def test_a_shard_of_other_options_against_the_same_location_is_refused(tmp_path: Path) -> None:
    machines = _machines(tmp_path)
    shared = tmp_path / "shared"
    assert machines.run(_shard(1, 2, shared), tmp_path / "m1").returncode == 0
    mixed = machines.run(_shard(2, 2, shared, "--strategy", "seed"), tmp_path / "m2")
    assert (
        mixed.returncode == 2
        and "holds another search" in mixed.stderr
        and "strategy 'guided'" in mixed.stderr
    )
    assert machines.exports() and 4 not in {key[0] for key in machines.exports()}  # shard 2/2 ran nothing


def test_shards_split_tp_sizes_round_robin_and_jobs_across_instance_types() -> None:
    assert parse_shard("2/3") == Shard(2, 3)
    assert Shard(1, 2).sizes((2, 4, 8, 16, 32)) == (2, 8, 32)
    assert Shard(2, 2).sizes((2, 4, 8, 16, 32)) == (4, 16)
    assert Shard(3, 3).sizes((2, 4)) == ()  # a shard with nothing to do is complete at once
    planned = plan_shards({"trn1.2xlarge": (2,), "trn1.32xlarge": (2, 4, 8, 16, 32)}, 3)
    assert [(shard.instance_type, shard.shard, shard.tensor_parallel_sizes) for shard in planned] == [
        ("trn1.2xlarge", Shard(1, 1), (2,)),
        ("trn1.32xlarge", Shard(1, 2), (2, 8, 32)),
        ("trn1.32xlarge", Shard(2, 2), (4, 16)),
    ]
    assert len(plan_shards({"trn1.2xlarge": (2,)}, 5)) == 1  # never more shards than TP sizes
    with pytest.raises(InputError, match="--max-jobs 1"):
        plan_shards({"a": (2,), "b": (2,)}, 1)


def test_the_same_shard_running_twice_at_once_stops_the_stale_writer_and_keeps_the_other(
    tmp_path: Path,
) -> None:
    shared = tmp_path / "shared"
    # every export hangs: the first copy hangs in its first, whichever the order makes it
    hanging = Machines(tmp_path / "a", {key: {"export": "hang"} for key in truth(MISTRAL, INSTANCE, 0.9)})
    first = hanging.start(_shard(1, 3, shared), tmp_path / "machine-a")
    deadline = time.monotonic() + 60
    while not hanging.exports():  # the first copy published its object and hangs in its first export
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.05)
    second = _machines(tmp_path / "b").run(_shard(1, 3, shared), tmp_path / "machine-b")
    assert second.returncode == 0, second.stderr
    published = (shared / "shards" / f"{INSTANCE}-1of3.json").read_bytes()
    first.send_signal(signal.SIGTERM)
    _, stderr = first.communicate(timeout=60)
    assert first.returncode == 2 and "changed by another run of shard" in stderr, stderr
    assert (shared / "shards" / f"{INSTANCE}-1of3.json").read_bytes() == published  # not overwritten


def test_a_shard_dry_run_lists_only_its_tp_sizes_and_creates_nothing(tmp_path: Path) -> None:
    machines = _machines(tmp_path)
    result = machines.run(_shard(2, 3, tmp_path / "shared", "--dry-run"), tmp_path / "machine")
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()[1:-1]]
    assert rows and {row[0] for row in rows} == {"4"}  # shard 2 of 3 of TP 2, 4, 8
    assert not (tmp_path / "shared").exists() and machines.exports() == []
