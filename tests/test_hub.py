"""Models outside the catalog: the Hub through transformers, cached; offline gives one clear line."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import FIXTURES, run_cli

from lmi_config.modelarch import from_hub, hub_cache_path


def test_a_cached_hub_lookup_needs_no_network(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    config = json.loads((FIXTURES / "models" / "qwen2.5-7b" / "config.json").read_text())
    cache = hub_cache_path("someone/private-qwen")
    cache.parent.mkdir(parents=True)
    cache.write_text(json.dumps({"config": config, "total_params": 7_615_616_512}))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    arch = from_hub("someone/private-qwen")
    assert arch.num_key_value_heads == 4 and arch.total_params == 7_615_616_512
    assert "cached" in arch.source


def test_offline_unknown_explicit_model_skips_only_the_model_checks(tmp_path: Path) -> None:
    spec = tmp_path / "serving.properties"
    spec.write_text("option.model_id=someone/not-in-the-catalog\noption.rolling_batch=vllm\n")
    env = dict(os.environ, HF_HUB_OFFLINE="1", XDG_CACHE_HOME=str(tmp_path), HF_HOME=str(tmp_path / "hf"))
    import subprocess
    import sys

    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "lmi_config",
            "lint",
            str(spec),
            "--hub",
            "--model",
            "someone/not-in-the-catalog",
            "--instance",
            "g5.12xlarge",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    # issue 10: an explicit --model that cannot be resolved offline no longer stops the whole lint
    assert completed.returncode == 0, completed.stderr
    notes = [line for line in completed.stdout.splitlines() if "model checks skipped" in line]
    assert len(notes) == 1 and "cannot read the config of someone/not-in-the-catalog" in notes[0], (
        completed.stdout
    )
    assert "1 file checked" in completed.stdout
    assert "Traceback" not in completed.stderr


def test_without_hub_an_unknown_model_in_the_file_only_skips_the_fit_checks(tmp_path: Path) -> None:
    spec = tmp_path / "serving.properties"
    spec.write_text(
        "option.model_id=someone/not-in-the-catalog\noption.rolling_batch=vllm\noption.tensor_parallel_degree=4\n"
    )
    result = run_cli("lint", str(spec), "--instance", "g5.12xlarge")
    assert result.returncode == 0
    assert "model checks skipped" in result.stdout


def test_a_hub_modelopt_checkpoint_is_judged_by_its_hf_quant_config(tmp_path: Path, monkeypatch) -> None:
    # nvidia's ModelOpt checkpoints keep their quantization in hf_quant_config.json beside config.json;
    # a Hub look-up keeps it with the config, so the A100 refusal (modelopt needs 8.9) holds for them too
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = json.loads((FIXTURES / "models" / "llama-3.1-8b" / "config.json").read_text())
    quant = {"producer": {"name": "modelopt", "version": "0.23.0"}, "quantization": {"quant_algo": "FP8"}}
    cache = hub_cache_path("someone/llama-fp8")
    cache.parent.mkdir(parents=True)
    cache.write_text(json.dumps({"config": config, "total_params": 8_030_261_248, "hf_quant_config": quant}))
    assert from_hub("someone/llama-fp8").loading["hf_quant_config"] == quant
    spec = tmp_path / "serving.properties"
    spec.write_text("option.model_id=someone/llama-fp8\noption.rolling_batch=vllm\n")
    # the subprocess inherits the cache and offline settings above
    result = run_cli(
        "lint",
        str(spec),
        "--hub",
        "--instance",
        "ml.p4d.24xlarge",
        "--lmi-version",
        "0.34.0",
        "--format",
        "json",
    )
    codes = {finding["code"]: finding["message"] for finding in json.loads(result.stdout)["findings"]}
    assert "modelopt" in codes.get("LMI602", ""), result.stdout


def test_a_hub_cache_entry_from_before_the_quant_file_was_looked_up_still_loads(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = json.loads((FIXTURES / "models" / "qwen2.5-7b" / "config.json").read_text())
    cache = hub_cache_path("someone/older-entry")
    cache.parent.mkdir(parents=True)
    cache.write_text(json.dumps({"config": config, "total_params": 7_615_616_512}))
    arch = from_hub("someone/older-entry")
    assert arch.total_params == 7_615_616_512 and "hf_quant_config" not in arch.loading
    # looked up once (offline: not found) and recorded, so later runs do not ask again
    assert json.loads(cache.read_text())["hf_quant_config"] is None
