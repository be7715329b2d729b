"""The bucket facts the performance model times transformers-neuronx with are read from the engine's
own source by scripts/gen_neuron_buckets.py, through the real script on a small git repository."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from lmi_config.knowledge.perf_data import engine_buckets

TIMEOUT_SECONDS = 60
BUCKET = """import bisect


def token_sizes(buckets_or_size):
    if isinstance(buckets_or_size, list):
        return sorted(buckets_or_size)
    return utils.power_of_two_bucket_sizes({smallest}, buckets_or_size)


def context_sizes(buckets_or_size, token_buckets=None):
    if token_buckets is not None and buckets_or_size is None:
        return [bucket // {divisor} for bucket in token_buckets]
"""
UTILS = """def power_of_two_bucket_sizes(min_bucket_size, max_bucket_size):
    sizes = []
    bucket_size = min_bucket_size
    while bucket_size < max_bucket_size:
        sizes.append(bucket_size)
        bucket_size *= 2
    sizes.append(max_bucket_size)
    return sizes
"""


def _repository(tmp_path: Path, bucket_text: str) -> Path:
    work = tmp_path / "transformers-neuronx"
    package = work / "src" / "transformers_neuronx"
    package.mkdir(parents=True)
    (package / "bucket.py").write_text(bucket_text, encoding="utf-8")
    (package / "utils.py").write_text(UTILS, encoding="utf-8")
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True, timeout=TIMEOUT_SECONDS)
    subprocess.run([*git, "add", "."], check=True, timeout=TIMEOUT_SECONDS)
    subprocess.run([*git, "commit", "-qm", "sources"], check=True, timeout=TIMEOUT_SECONDS)
    return work / ".git"


def _generate(git_dir: Path, output: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_neuron_buckets.py"), "--git-dir", str(git_dir)]
        + ["--output", str(output), *extra],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
    )


@pytest.fixture
def devices_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "perf_devices.json"
    shutil.copyfile(ROOT / "lmi_config" / "data" / "perf_devices.json", copy)
    return copy


def test_the_bucket_facts_are_read_from_the_engine_source_with_their_lines(
    tmp_path: Path, devices_copy: Path
) -> None:
    git_dir = _repository(tmp_path, BUCKET.format(smallest=256, divisor=4))
    result = _generate(git_dir, devices_copy)
    assert result.returncode == 0, result.stderr
    written = json.loads(devices_copy.read_text(encoding="utf-8"))
    (entry,) = written["engine_buckets"]
    assert (
        entry["smallest_token_bucket"],
        entry["bucket_growth_factor"],
        entry["context_bucket_divisor"],
    ) == (
        256,
        2,
        4,
    )
    assert "bucket.py#L7" in entry["source"] and "bucket.py#L12" in entry["source"]
    assert "utils.py#L6" in entry["source"]
    # the devices are kept as they were; only the bucket facts are generated
    stored = json.loads((ROOT / "lmi_config" / "data" / "perf_devices.json").read_text(encoding="utf-8"))
    assert written["devices"] == stored["devices"]
    assert _generate(git_dir, devices_copy, "--check").returncode == 0


def test_a_source_whose_buckets_changed_shape_is_refused_not_guessed(
    tmp_path: Path, devices_copy: Path
) -> None:
    before = devices_copy.read_bytes()
    git_dir = _repository(tmp_path, BUCKET.replace("bucket // {divisor}", "bucket").format(smallest=128))
    result = _generate(git_dir, devices_copy)
    assert result.returncode == 2
    assert result.stderr.startswith("gen_neuron_buckets: error:") and "context_sizes()" in result.stderr
    assert "Traceback" not in result.stderr
    assert devices_copy.read_bytes() == before


def test_the_stored_bucket_facts_are_transformers_neuronx_defaults() -> None:
    entry = engine_buckets("transformers-neuronx")
    assert entry is not None and "github.com/aws-neuron/transformers-neuronx/blob/" in entry["source"]
    assert engine_buckets("no-such-engine") is None
