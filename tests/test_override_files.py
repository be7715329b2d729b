"""Files lmi-config reads back that a user (or an earlier run) can replace: the image override named
by ``LMI_CONFIG_IMAGES_FILE``. Read bounded and as strict JSON like every other input: a FIFO, an
endless device or a number no JSON reader agrees on is exit 2 naming the file, never a hang."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import test_hostile_inputs
from test_hostile_inputs import assert_refused, run, settle, write

untouched = test_hostile_inputs.untouched  # the fixture: files there before a run stay as they were


def test_an_image_override_that_is_a_fifo_is_refused_at_once(
    untouched: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.mkfifo(untouched / "images.json")
    settle(untouched)
    monkeypatch.setenv("LMI_CONFIG_IMAGES_FILE", str(untouched / "images.json"))
    assert_refused(run("images", cwd=untouched, timeout=20), 2, "images.json", "FIFO", "image override")


def test_an_image_override_from_an_endless_device_stops_at_the_cap(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LMI_CONFIG_IMAGES_FILE", "/dev/zero")
    result = run("images", cwd=tmp_path, memory_bytes=512 * 1024 * 1024, timeout=30)
    assert_refused(result, 2, "/dev/zero", "image override")


def test_an_image_override_with_a_number_past_any_range_is_refused(
    untouched: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(untouched / "images.json", '{"sagemaker_sdk": {"frameworks": {}},\n "registries": [1e400]}\n')
    settle(untouched)
    monkeypatch.setenv("LMI_CONFIG_IMAGES_FILE", str(untouched / "images.json"))
    assert_refused(run("images", cwd=untouched), 2, "images.json:2:", "not finite")
