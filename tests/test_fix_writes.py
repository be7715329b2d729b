"""What ``lint --fix`` (and every other writer of a user's files) does to the files: links followed to
their target, read-only files refused, a file changed since it was read left as the user made it,
a batch that says exactly which files it changed, and a fixed point reached or the rest named."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT, run_cli

from lmi_config import fixes
from lmi_config.cli import main

TARGET = ("--backend", "vllm", "--lmi-version", "0.30.0")
BLANKS = "option.model_id=Qwen/Qwen2.5-1.5B-Instruct  \noption.rolling_batch=vllm\n"
FIXED = "option.model_id=Qwen/Qwen2.5-1.5B-Instruct\noption.rolling_batch=vllm\n"


def _fix(*paths: Path) -> tuple[int, str]:
    result = run_cli("lint", "--fix", *TARGET, *map(str, paths))
    assert "Traceback" not in result.stderr
    return result.returncode, result.stderr


def test_a_file_reached_through_a_symlink_is_fixed_in_its_target_and_the_link_stays(tmp_path: Path) -> None:
    real = tmp_path / "real.properties"
    real.write_text(BLANKS)
    link = tmp_path / "serving.properties"
    link.symlink_to(real.name)
    code, stderr = _fix(link)
    assert code == 0, stderr
    assert link.is_symlink() and os.readlink(link) == real.name
    assert real.read_text() == FIXED


def test_a_file_with_two_hard_links_is_fixed_under_both_names(tmp_path: Path) -> None:
    first = tmp_path / "serving.properties"
    first.write_text(BLANKS)
    second = tmp_path / "copy.properties"
    os.link(first, second)
    code, stderr = _fix(first)
    assert code == 0, stderr
    assert first.read_text() == second.read_text() == FIXED
    assert first.stat().st_ino == second.stat().st_ino


def test_a_read_only_file_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    target = tmp_path / "serving.properties"
    target.write_text(BLANKS)
    target.chmod(0o444)
    code, stderr = _fix(target)
    assert code == 2
    assert f"cannot write {target}: it is read-only (mode 0444)" in stderr
    assert "no file was changed" in stderr
    assert target.read_text() == BLANKS and stat.S_IMODE(target.stat().st_mode) == 0o444


def test_a_batch_with_one_unwritable_file_changes_none_and_names_it(tmp_path: Path) -> None:
    names = [tmp_path / f"{index}.properties" for index in range(4)]
    for name in names:
        name.write_text(BLANKS)
    names[2].chmod(0o444)
    code, stderr = _fix(*names)
    assert code == 2
    assert f"cannot write {names[2]}: it is read-only" in stderr and "no file was changed" in stderr
    assert [name.read_text() for name in names] == [BLANKS] * 4


def test_render_and_convert_refuse_a_read_only_destination(tmp_path: Path) -> None:
    target = tmp_path / "serving.properties"
    target.write_text("mine\n")
    target.chmod(0o444)
    result = run_cli("render", "samples/specs/mistral-7b-inf2-8xlarge.yaml", "-o", str(target), cwd=ROOT)
    assert result.returncode == 2 and "read-only" in result.stderr and "Traceback" not in result.stderr
    assert target.read_text() == "mine\n"


def test_a_name_longer_than_the_file_system_allows_is_a_message(tmp_path: Path) -> None:
    target = tmp_path / ("x" * 300 + ".properties")
    result = run_cli("render", "samples/specs/mistral-7b-inf2-8xlarge.yaml", "-o", str(target), cwd=ROOT)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "file name is too long" in result.stderr


def test_a_name_of_255_bytes_is_written(tmp_path: Path) -> None:
    target = tmp_path / ("x" * 244 + ".properties")  # the longest name ext4 allows
    result = run_cli("render", "samples/specs/mistral-7b-inf2-8xlarge.yaml", "-o", str(target), cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert target.read_text().startswith("#") or "option." in target.read_text()


def _invoke(args: list[str]) -> tuple[int, str]:
    import inspect

    separate = {"mix_stderr": False} if "mix_stderr" in inspect.signature(CliRunner).parameters else {}
    result = CliRunner(**separate).invoke(main, args, catch_exceptions=False)
    return result.exit_code, result.stderr


def test_a_line_added_while_fix_worked_is_kept_and_the_file_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [tmp_path / f"{index}.properties" for index in range(3)]
    for name in names:
        name.write_text(BLANKS)
    real = fixes.fix_to_fixed_point

    def editor_meanwhile(*args, **kwargs):  # type: ignore[no-untyped-def]
        outcome = real(*args, **kwargs)
        with open(names[1], "a", encoding="utf-8") as stream:  # the user saves a new line meanwhile
            stream.write("option.max_model_len=4096\n")
        return outcome

    monkeypatch.setattr(fixes, "fix_to_fixed_point", editor_meanwhile)
    code, stderr = _invoke(["lint", "--fix", *TARGET, *map(str, names)])
    assert code == 2
    assert f"cannot write {names[1]}: changed after lmi-config read it" in stderr
    assert names[1].read_text() == BLANKS + "option.max_model_len=4096\n"  # nothing lost
    assert "no file was changed" in stderr
    assert names[0].read_text() == names[2].read_text() == BLANKS


def test_a_file_changed_between_two_writes_of_a_batch_is_left_and_the_others_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lmi_config import io

    names = [tmp_path / f"{index}.properties" for index in range(3)]
    for name in names:
        name.write_text(BLANKS)
    real = io.write_atomically

    def write_then_edit(path, text, **kwargs):  # type: ignore[no-untyped-def]
        real(path, text, **kwargs)
        if Path(path) == names[0]:  # right after the first write, the user edits the last file
            names[2].write_text(BLANKS + "# mine\n")

    monkeypatch.setattr(io, "write_atomically", write_then_edit)
    code, stderr = _invoke(["lint", "--fix", *TARGET, *map(str, names)])
    assert code == 2
    assert f"cannot write {names[2]}: changed after lmi-config read it" in stderr
    assert f"changed 2 file(s): {names[0]}, {names[1]}" in stderr
    assert f"not changed: {names[2]}" in stderr
    assert names[0].read_text() == names[1].read_text() == FIXED
    assert names[2].read_text() == BLANKS + "# mine\n"


def _many_blanks(path: Path, count: int) -> None:
    lines = ["option.model_id=Qwen/Qwen2.5-1.5B-Instruct", "option.rolling_batch=vllm"]
    lines += [f"option.custom_{index}=v{index}   " for index in range(count)]
    path.write_text("\n".join(lines) + "\n")


def test_fix_reaches_its_fixed_point_on_a_file_of_1500_slips(tmp_path: Path) -> None:
    target = tmp_path / "serving.properties"
    _many_blanks(target, 1500)
    code, stderr = _fix(target)
    assert code == 0, stderr
    assert "fixed 1500 finding(s) in 1 file(s) (LMI003 x1500)" in stderr
    assert not [line for line in target.read_text().splitlines() if line.endswith(" ")]
    again = run_cli("lint", "--diff", *TARGET, str(target))
    assert again.returncode == 0 and again.stdout == ""  # nothing left to fix


def test_plain_lint_says_its_fixable_count_leaves_out_what_it_did_not_show(tmp_path: Path) -> None:
    target = tmp_path / "serving.properties"
    _many_blanks(target, 100)
    result = run_cli("lint", *TARGET, str(target))
    assert (
        "20 fixable with --fix; maybe more, not judged yet (80 of the findings not shown)"
        in result.stderr + result.stdout
    )


def test_fix_that_stops_at_its_cap_says_how_much_is_left_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "serving.properties"
    # an inline comment and blanks after it on one line: two fixes of one line, one pass each
    target.write_text(
        "option.model_id=Qwen/Qwen2.5-1.5B-Instruct\noption.rolling_batch=vllm\n"
        "option.max_model_len=4096 # tuned  \n"
    )
    monkeypatch.setattr(fixes, "MAX_PASSES", 1)
    code, stderr = _invoke(["lint", "--fix", *TARGET, str(target)])
    assert code == 1, stderr
    assert "--fix stopped before everything fixable was fixed: 1 judged fix(es) not applied" in stderr
    assert "it stopped after 1 passes" in stderr and "Run it again" in stderr
    monkeypatch.setattr(fixes, "MAX_PASSES", 50)
    code, stderr = _invoke(["lint", "--fix", *TARGET, str(target)])
    assert code == 0 and "stopped before" not in stderr
    assert target.read_text().endswith("# tuned\noption.max_model_len=4096\n")


def test_fix_of_a_file_too_large_to_judge_says_so_and_does_not_ask_to_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lmi_config.fixers import judge

    target = tmp_path / "serving.properties"
    _many_blanks(target, 40)
    size = target.stat().st_size
    monkeypatch.setattr(judge, "MAX_JUDGED_BYTES", size // 2)  # as a file of megabytes is
    monkeypatch.setattr(fixes, "MAX_JUDGED_BYTES", size // 2)
    before = target.read_text()
    code, stderr = _invoke(["lint", "--fix", *TARGET, str(target)])
    assert code == 1
    assert f"files over {size // 2:,} bytes are not judged" in stderr and "Run it again" not in stderr
    assert target.read_text() == before
