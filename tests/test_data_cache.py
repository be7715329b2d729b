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


def _load_table(name: str = "table.json", field: str = "versions"):
    knowledge.load_table.cache_clear()  # what a fresh process does
    return knowledge.load_table(name, field)


@pytest.fixture
def table_file(data_dir):
    versions = {"0.1.0": {"fields": ["a"]}, "0.2.0": {"same_as": "0.1.0"}, "0.3.0": {"fields": [None, 1.5]}}
    (data_dir / "table.json").write_text(json.dumps({"source": "test", "versions": versions}))
    yield versions
    knowledge.load_table.cache_clear()


def test_a_table_reads_the_same_cold_and_warm_and_decodes_an_entry_only_when_read(
    table_file, tmp_path
) -> None:
    cold = _load_table()
    assert dict(cold) == table_file
    warm = _load_table()
    assert isinstance(warm, knowledge.EncodedTable)  # from the entry the cold load wrote
    assert list(warm) == list(table_file) and len(warm) == 3 and "0.2.0" in warm and "0.9.0" not in warm
    assert warm.get("0.9.0") is None
    with pytest.raises(KeyError):
        warm["0.9.0"]
    assert warm._decoded == {}  # keys, membership and misses decode nothing
    assert warm["0.3.0"] == {"fields": [None, 1.5]}
    assert list(warm._decoded) == ["0.3.0"]
    assert dict(warm) == table_file


def test_a_damaged_table_entry_is_ignored_and_an_edit_is_read(table_file, data_dir, tmp_path) -> None:
    _load_table()
    (entry,) = (path for path in _entries(tmp_path) if "+versions" in path.name)
    entry.write_bytes(b"\x00 not marshal")
    assert dict(_load_table()) == table_file
    path = data_dir / "table.json"
    path.write_text(json.dumps({"source": "test", "versions": {"0.4.0": {"fields": ["edited"]}}}))
    os.utime(path, ns=(1, 1))
    assert dict(_load_table()) == {"0.4.0": {"fields": ["edited"]}}
    assert [p.name.split("-")[0] for p in _entries(tmp_path)] == ["table+versions"]  # the stale one is gone


def test_every_shipped_per_release_table_reads_as_its_json(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(knowledge.CACHE_VARIABLE, str(tmp_path / "cache"))
    try:
        for name in ("vllm_capabilities.json", "vllm_engine_args.json", "vllm_attention.json"):
            expected = json.loads((knowledge.DATA_DIR / name).read_bytes())["versions"]
            assert dict(_load_table(name)) == expected  # cold: parsed
            assert dict(_load_table(name)) == expected  # warm: from the entry
    finally:
        knowledge.load_table.cache_clear()


def _load_derived(derive, name: str = "facts.json"):
    knowledge.load_data.cache_clear()  # what a fresh process does
    knowledge.load_derived.cache_clear()
    return knowledge.load_derived(name, derive)


def _count_rows(document):
    return len(document["rows"])


def test_a_derived_value_is_kept_and_derived_again_when_its_code_or_its_file_changes(
    data_dir, tmp_path, monkeypatch
) -> None:
    try:
        assert _load_derived(_count_rows) == 3
        # the same file with other bytes: only the kept entry gives 3 again
        path = data_dir / "facts.json"
        stat = path.stat()
        path.write_text(path.read_text().replace("[1, 2,", "[1,   "))
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        assert _load_derived(_count_rows) == 3

        def _count_rows_again(document):  # another derivation of the same file is not served the first's
            return -len(document["rows"])

        assert _load_derived(_count_rows_again) == -3  # derived anew (from the file's own kept entry)
        os.utime(path, ns=(1, 1))  # an edit: derived again from the file
        assert _load_derived(_count_rows) == 2
    finally:
        knowledge.load_derived.cache_clear()


def test_the_option_catalogue_reads_the_same_cold_and_warm(tmp_path, monkeypatch) -> None:
    from lmi_config.knowledge import options

    monkeypatch.setenv(knowledge.CACHE_VARIABLE, str(tmp_path / "cache"))
    rows = json.loads((knowledge.DATA_DIR / "options.json").read_bytes())["options"]
    try:
        for _ in ("cold", "warm"):
            knowledge.load_derived.cache_clear()
            options.catalogue.cache_clear()
            specs = options.catalogue()
            assert sum(map(len, specs.values())) == len(rows)
            spec = specs["option.max_rolling_batch_size"][0]
            assert isinstance(spec, options.OptionSpec) and spec.key == "option.max_rolling_batch_size"
            assert isinstance(spec.backends, tuple) and spec.source
        assert any(name.startswith("options+_catalogue_rows") for name in os.listdir(tmp_path / "cache"))
    finally:
        knowledge.load_derived.cache_clear()
        options.catalogue.cache_clear()


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
