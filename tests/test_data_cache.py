"""The parsed-data cache of ``knowledge.load_data``: a cold lint reads the catalogues from a marshal
entry in the user's cache instead of parsing their JSON, and every way that entry can be wrong
(stale, damaged, switched off, unwritable) falls back to the JSON, never to wrong facts."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

from lmi_config import collector, knowledge


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """A data directory of our own, so a test can edit a file and clear the in-process cache."""
    directory = tmp_path / "data"
    directory.mkdir()
    (directory / "facts.json").write_text(json.dumps({"source": "test", "rows": [1, 2, {"a": None}]}))
    monkeypatch.setattr(knowledge, "DATA_DIR", directory)
    monkeypatch.setenv(knowledge.CACHE_VARIABLE, str(tmp_path / "cache"))
    knowledge.load_data.cache_clear()
    yield directory
    knowledge.load_data.cache_clear()


def _load(name: str = "facts.json"):
    knowledge.load_data.cache_clear()  # what a fresh process does
    return knowledge.load_data(name)


def _entries(tmp_path):
    return sorted((tmp_path / "cache").glob("*.marshal"))


def test_the_second_load_reads_the_entry_the_first_wrote_and_gets_the_same_value(data_dir, tmp_path) -> None:
    first = _load()
    assert first == {"source": "test", "rows": [1, 2, {"a": None}]}
    assert len(_entries(tmp_path)) == 1
    # same size, same modification time, other bytes: only the entry can give back the first value
    path = data_dir / "facts.json"
    stat = path.stat()
    path.write_text(path.read_text().replace("test", "TEST"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert _load() == first


def test_an_edited_data_file_is_parsed_again_and_its_old_entry_removed(data_dir, tmp_path) -> None:
    _load()
    path = data_dir / "facts.json"
    path.write_text(json.dumps({"source": "test", "rows": ["edited"]}))
    os.utime(path, ns=(1, 1))  # a different modification time, as any edit or reinstall gives
    assert _load() == {"source": "test", "rows": ["edited"]}
    assert len(_entries(tmp_path)) == 1  # the stale one is gone


def test_a_damaged_entry_is_ignored_and_replaced(data_dir, tmp_path) -> None:
    _load()
    (entry,) = _entries(tmp_path)
    entry.write_bytes(b"\x00 not marshal")
    assert _load() == {"source": "test", "rows": [1, 2, {"a": None}]}
    knowledge.load_data.cache_clear()
    assert knowledge.load_data("facts.json")["rows"] == [1, 2, {"a": None}]


@pytest.mark.parametrize("setting", ["off", ""])
def test_switched_off_nothing_is_written(data_dir, tmp_path, monkeypatch, setting) -> None:
    monkeypatch.setenv(knowledge.CACHE_VARIABLE, setting)
    assert _load()["source"] == "test"
    assert not (tmp_path / "cache").exists()


def test_an_unwritable_cache_only_means_parsing_the_json(data_dir, tmp_path, monkeypatch) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory would be")
    monkeypatch.setenv(knowledge.CACHE_VARIABLE, str(blocker / "cache"))
    assert _load()["rows"] == [1, 2, {"a": None}]


def test_every_shipped_data_file_reads_the_same_from_its_entry(tmp_path, monkeypatch) -> None:
    """The real catalogues, through a cold and a warm load: marshal keeps every JSON value as is."""
    monkeypatch.setenv(knowledge.CACHE_VARIABLE, str(tmp_path / "cache"))
    names = sorted(path.name for path in knowledge.DATA_DIR.glob("*.json"))
    try:
        for name in names:
            knowledge.load_data.cache_clear()
            parsed = knowledge.load_data(name)
            knowledge.load_data.cache_clear()
            assert knowledge.load_data(name) == parsed == json.loads((knowledge.DATA_DIR / name).read_bytes())
        assert len(_entries(tmp_path)) == len(names)
    finally:
        knowledge.load_data.cache_clear()


def test_the_console_entry_point_lints_and_leaves_collection_on(tmp_path) -> None:
    """``python -m lmi_config`` goes through lmi_config.launch, which pauses the collector while the
    modules load: the command still runs, and a command's own code collects as usual."""
    sample = tmp_path / "serving.properties"
    sample.write_text("engine=Python\noption.model_id=facebook/opt-125m\noption.rolling_batch=vllm\n")
    probe = (
        "import gc, sys; from lmi_config import launch; from lmi_config.api import lint_paths as real\n"
        "import lmi_config.api as api\n"
        "def spy(*a, **k):\n"
        "    print('collecting' if gc.isenabled() else 'paused', file=sys.stderr); return real(*a, **k)\n"
        "api.lint_paths = spy\n"
        f"sys.argv = ['lmi-config', 'lint', {str(sample)!r}]; launch.main()\n"
    )
    environment = {**os.environ, knowledge.CACHE_VARIABLE: str(tmp_path / "cache")}
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, env=environment, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert "collecting" in completed.stderr
    assert "1 file checked" in completed.stderr + completed.stdout


def test_resume_is_a_no_op_unless_pause_turned_collection_off() -> None:
    assert gc.isenabled()
    collector.resume()
    assert gc.isenabled()
    gc.disable()
    try:
        collector.pause()  # already off: not ours to turn back on
        collector.resume()
        assert not gc.isenabled()
    finally:
        gc.enable()
