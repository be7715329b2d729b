"""``lmi_config.io.update_locked`` and ``exclusive_lock``: the one read-merge-write every shared file
goes through. A lock held by another process is waited for, then refused by name; a lock file that
is not a plain file is never followed; a merge that fails leaves the file as it was."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from lmi_config.io import InputError, OutputError, exclusive_lock, lock_path, update_locked

HOLD = "import fcntl, sys, time; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(float(sys.argv[2]))"


def _hold(lock: Path, seconds: float) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(lock), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def test_a_writer_waits_for_the_lock_and_then_sees_the_other_writers_content(tmp_path: Path) -> None:
    target = tmp_path / "cache.json"
    target.write_text("first\n")
    holder = _hold(lock_path(target), 0.5)
    started = time.monotonic()
    seen = update_locked(target, lambda current: ((current or b"").decode() + "second\n", current))
    assert time.monotonic() - started >= 0.3  # it waited for the holder
    holder.wait(timeout=10)
    assert seen == b"first\n" and target.read_text() == "first\nsecond\n"


def test_a_lock_held_too_long_is_refused_naming_the_file(tmp_path: Path) -> None:
    target = tmp_path / "cache.json"
    holder = _hold(lock_path(target), 30)
    try:
        with (
            pytest.raises(OutputError, match=r"cannot write .*cache\.json: another process has held"),
            exclusive_lock(lock_path(target), shown=str(target), wait_seconds=0.3),
        ):
            pass
    finally:
        holder.kill()
        holder.wait()
    assert not target.exists()


def test_a_lock_that_is_a_symlink_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "cache.json"
    elsewhere = tmp_path / "precious.txt"
    elsewhere.write_text("keep me\n")
    lock_path(target).symlink_to(elsewhere)
    with pytest.raises(OutputError, match="cannot create its lock"):
        update_locked(target, lambda current: ("new\n", None))
    assert elsewhere.read_text() == "keep me\n" and not target.exists()


def test_a_failed_merge_leaves_the_file_and_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "cache.json"
    target.write_text("{}\n")

    def refuse(current: bytes | None) -> tuple[str, None]:
        raise InputError("cache.json: not a cache config")

    with pytest.raises(InputError):
        update_locked(target, refuse)
    assert target.read_text() == "{}\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["cache.json", "cache.json.lock"]
