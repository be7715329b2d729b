"""The bucket facts the performance model times the Neuron engines with (transformers-neuronx, NxD
Inference) are read from each engine's own source by scripts/gen_neuron_buckets.py, through the real
script on small git repositories (and a small vLLM sdist for the bucketing vLLM turns on)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import ROOT

from lmi_config.knowledge.perf_data import engine_buckets
from lmi_config.perf.buckets import NXDI, context_buckets, token_buckets

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


def _git_repository(work: Path, files: dict[str, str]) -> Path:
    """A git repository at ``work`` with one commit of ``files`` (path -> text); its git directory."""
    for path, text in files.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text, encoding="utf-8")
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True, timeout=TIMEOUT_SECONDS)
    subprocess.run([*git, "add", "."], check=True, timeout=TIMEOUT_SECONDS)
    subprocess.run([*git, "commit", "-qm", "sources"], check=True, timeout=TIMEOUT_SECONDS)
    return work / ".git"


def _repository(tmp_path: Path, bucket_text: str) -> Path:
    package = "src/transformers_neuronx"
    files = {f"{package}/bucket.py": bucket_text, f"{package}/utils.py": UTILS}
    return _git_repository(tmp_path / "transformers-neuronx", files)


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
    entry, *others = written["engine_buckets"]
    assert entry["engine"] == "transformers-neuronx"
    # an engine not regenerated keeps its entry
    stored_entries = json.loads(
        (ROOT / "lmi_config" / "data" / "perf_devices.json").read_text(encoding="utf-8")
    )
    assert others == [
        item for item in stored_entries["engine_buckets"] if item["engine"] != "transformers-neuronx"
    ]
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


AUTOBUCKETING = """from math import log2


def generate_buckets(min_length: int, max_length: int):
    if min_length == max_length:
        return [max_length]
    min_bound = int(log2(min_length))
    max_bound = {rounding}(log2(max_length))
    buckets = [2**i for i in range(min_bound, max_bound)] + [max_length]
    return buckets


def generate_buckets_for_cte(inference_config):
    if not inference_config.neuron_config.enable_bucketing:
        buckets = generate_buckets(inference_config.max_context_length, inference_config.max_context_length)
    else:
        buckets = generate_buckets({context}, inference_config.neuron_config.max_context_length)
    return buckets


def generate_buckets_for_tkg(inference_config):
    neuron_config = inference_config.neuron_config
    buckets = generate_buckets({token}, neuron_config.max_length)
    return buckets
"""
LOADER = """def _get_default_neuron_config(model_config, parallel_config, scheduler_config, lora_serving_config):
    neuron_config = dict(
        tp_degree=parallel_config.tensor_parallel_size,
        enable_bucketing={enabled},
    )
    return neuron_config
"""


def _nxdi_repository(tmp_path: Path, text: str) -> Path:
    files = {"src/neuronx_distributed_inference/modules/autobucketing.py": text}
    return _git_repository(tmp_path / "neuronx-distributed-inference", files)


def _sdist(tmp_path: Path, enabled: bool, version: str = "0.9.2") -> Path:
    path = tmp_path / f"vllm-{version}.tar.gz"
    data = LOADER.format(enabled=enabled).encode("utf-8")
    with tarfile.open(path, "w:gz") as archive:
        member = tarfile.TarInfo(f"vllm-{version}/vllm/model_executor/model_loader/neuronx_distributed.py")
        member.size = len(data)
        archive.addfile(member, io.BytesIO(data))
    return path


def _generate_nxdi(git_dir: Path, sdist: Path, output: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_neuron_buckets.py"), "--nxdi-git-dir", str(git_dir)]
        + ["--vllm-sdist", str(sdist), "--output", str(output), *extra],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
    )


def test_nxd_inference_buckets_and_vllms_bucketing_are_read_from_their_sources(
    tmp_path: Path, devices_copy: Path
) -> None:
    git_dir = _nxdi_repository(tmp_path, AUTOBUCKETING.format(rounding="round", context=256, token=512))
    result = _generate_nxdi(git_dir, _sdist(tmp_path, enabled=True), devices_copy)
    assert result.returncode == 0, result.stderr
    entries = {
        item["engine"]: item
        for item in json.loads(devices_copy.read_text(encoding="utf-8"))["engine_buckets"]
    }
    nxdi = entries["neuronx-distributed-inference"]
    assert (
        nxdi["smallest_token_bucket"],
        nxdi["smallest_context_bucket"],
        nxdi["bucket_growth_factor"],
        nxdi["last_bucket_rounding"],
        nxdi["bucketing_default"],
    ) == (512, 256, 2, "round", True)
    assert all(f"autobucketing.py#L{line}" in nxdi["source"] for line in (9, 17, 23))
    assert (
        "vllm-project/vllm/blob/v0.9.2/vllm/model_executor/model_loader/neuronx_distributed.py#L4"
        in nxdi["source"]
    )
    # transformers-neuronx's entry is kept as it was
    assert entries["transformers-neuronx"] == engine_buckets("transformers-neuronx")
    assert _generate_nxdi(git_dir, _sdist(tmp_path, enabled=True), devices_copy, "--check").returncode == 0
    # a vLLM that leaves bucketing off is recorded so
    _generate_nxdi(git_dir, _sdist(tmp_path, enabled=False), devices_copy)
    entries = {
        item["engine"]: item
        for item in json.loads(devices_copy.read_text(encoding="utf-8"))["engine_buckets"]
    }
    assert entries["neuronx-distributed-inference"]["bucketing_default"] is False


def test_an_nxd_inference_source_without_the_power_rule_or_a_vllm_without_its_loader_is_refused(
    tmp_path: Path, devices_copy: Path
) -> None:
    before = devices_copy.read_bytes()
    changed = AUTOBUCKETING.format(rounding="round", context=128, token=128).replace("2**i", "i * 128")
    result = _generate_nxdi(_nxdi_repository(tmp_path, changed), _sdist(tmp_path, enabled=True), devices_copy)
    assert (
        result.returncode == 2 and "generate_buckets()" in result.stderr and "Traceback" not in result.stderr
    )
    (tmp_path / "other").mkdir()
    git_dir = _nxdi_repository(
        tmp_path / "other", AUTOBUCKETING.format(rounding="round", context=128, token=128)
    )
    empty = tmp_path / "vllm-0.11.0.tar.gz"
    with tarfile.open(empty, "w:gz"):
        pass
    result = _generate_nxdi(git_dir, empty, devices_copy)
    assert result.returncode == 2 and "no NxD Inference loader" in result.stderr
    assert devices_copy.read_bytes() == before


def test_the_stored_nxd_inference_buckets_are_powers_of_two_stopped_by_the_rounded_log2() -> None:
    entry = engine_buckets(NXDI)
    assert entry is not None and entry["bucketing_default"] is True
    assert "github.com/aws-neuron/neuronx-distributed-inference/blob/" in entry["source"]
    assert token_buckets(4096, NXDI) == [128, 256, 512, 1024, 2048, 4096]
    assert token_buckets(2500, NXDI) == [128, 256, 512, 1024, 2500]  # log2 2,500 = 11.3 rounds to 11
    assert token_buckets(3000, NXDI) == [128, 256, 512, 1024, 2048, 3000]
    assert context_buckets(4096, NXDI) == token_buckets(4096, NXDI)
    assert context_buckets(4096) == [
        64,
        128,
        256,
        512,
        1024,
        2048,
    ]  # transformers-neuronx halves its decode buckets
