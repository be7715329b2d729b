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
