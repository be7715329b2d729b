"""Files written safely: ``-o`` onto a regular file, a symlink, a FIFO, a device, ``-``, and into a
missing or read-only directory — each through the real CLI."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

SPEC = "samples/specs/mistral-7b-inf2-8xlarge.yaml"  # rendered from the repository, as the sample was
EXPECTED = (ROOT / "samples" / "rendered" / "mistral-7b-inf2-8xlarge.serving.properties").read_text(
    encoding="utf-8"
)


def _render_to(output: str) -> tuple[int, str, str]:
    result = run_cli("render", SPEC, "-o", output, cwd=ROOT)
    assert "Traceback" not in result.stderr
    return result.returncode, result.stdout, result.stderr


def test_an_existing_file_is_replaced_keeping_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "serving.properties"
    target.write_text("old\n")
    target.chmod(0o600)
    code, _, _ = _render_to(str(target))
    assert code == 0
    assert target.read_text(encoding="utf-8") == EXPECTED
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [path.name for path in tmp_path.iterdir()] == ["serving.properties"]  # no temporary left behind


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_an_existing_file_keeps_its_owner(tmp_path: Path) -> None:
    target = tmp_path / "serving.properties"
    target.write_text("old\n")
    os.chown(target, 12345, 12346)
    code, _, _ = _render_to(str(target))
    assert code == 0
    assert (target.stat().st_uid, target.stat().st_gid) == (12345, 12346)


def test_a_new_file_gets_the_usual_mode(tmp_path: Path) -> None:
    target = tmp_path / "serving.properties"
    umask = os.umask(0o022)
    try:
        code, _, _ = _render_to(str(target))
    finally:
        os.umask(umask)
    assert code == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_a_symlink_is_followed_and_its_target_updated(tmp_path: Path) -> None:
    real = tmp_path / "real.properties"
    real.write_text("old\n")
    link = tmp_path / "serving.properties"
    link.symlink_to(real.name)
    code, _, _ = _render_to(str(link))
    assert code == 0
    assert link.is_symlink() and os.readlink(link) == real.name
    assert real.read_text(encoding="utf-8") == EXPECTED


def test_a_fifo_is_written_through_and_stays_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as stream:
            received.append(stream.read())

    reader = threading.Thread(target=read)
    reader.start()
    try:
        code, _, _ = _render_to(str(fifo))
    finally:
        reader.join(timeout=30)
    assert code == 0
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert received == [EXPECTED.encode("utf-8")]


def test_a_fifo_nobody_reads_is_refused_instead_of_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    code, _, stderr = _render_to(str(fifo))
    assert code == 2
    assert "nothing is reading" in stderr
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_full_device_is_one_line_and_exit_2_and_stays_a_device() -> None:
    code, _, stderr = _render_to("/dev/full")
    assert code == 2
    assert stderr.strip().splitlines()[-1].startswith("lmi-config: error: cannot write /dev/full")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_dash_means_standard_output() -> None:
    result = run_cli("render", SPEC, "-o", "-", cwd=ROOT)
    assert result.returncode == 0
    assert result.stdout == EXPECTED
    assert not (ROOT / "-").exists()


def test_a_missing_directory_is_one_line_and_exit_2(tmp_path: Path) -> None:
    code, _, stderr = _render_to(str(tmp_path / "missing" / "serving.properties"))
    assert code == 2
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("lmi-config: error: cannot write") and "does not exist" in last


def test_a_read_only_directory_is_one_line_and_exit_2() -> None:
    # /sys refuses new files even to root, unlike a directory with its write bits cleared
    code, _, stderr = _render_to("/sys/lmi-config-test.serving.properties")
    assert code == 2
    assert "not writable" in stderr or "Read-only" in stderr


def test_a_directory_as_output_is_refused(tmp_path: Path) -> None:
    code, _, stderr = _render_to(str(tmp_path))
    assert code == 2
    assert "is a directory" in stderr


def test_convert_writes_through_the_same_path(tmp_path: Path) -> None:
    source = tmp_path / "serving.properties"
    source.write_text("option.model_id=gpt2\noption.rolling_batch=vllm\n")
    target = tmp_path / "model.env"
    target.write_text("old\n")
    target.chmod(0o640)
    result = run_cli("convert", str(source), "--to", "env", "-o", str(target))
    assert result.returncode == 0, result.stderr
    assert "OPTION_ROLLING_BATCH=vllm" in target.read_text(encoding="utf-8")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
