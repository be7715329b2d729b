"""explain: effective values with provenance and the memory table; models and instances listings."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import ROOT, run_cli

SEED = ROOT / "samples" / "lint" / "mistral-7b-inf2-one-core" / "serving.properties"


def test_explain_text_shows_provenance_memory_items_verdict_and_alternatives() -> None:
    result = run_cli("explain", str(SEED))
    assert result.returncode == 1  # the configuration has an error
    out = result.stdout
    assert "option.tensor_parallel_degree = 1" in out and f"{SEED}:8" in out
    for item in ("weights", "KV cache", "shared scratchpad", "DMA rings", "total"):
        assert item in out
    assert "DOES NOT FIT" in out
    assert "TP 2, batch 1, 4096 tokens" in out


def test_explain_json_carries_the_breakdown(tmp_path: Path) -> None:
    env = tmp_path / "model.env"
    env.write_text("OPTION_TENSOR_PARALLEL_DEGREE=8\nOPTION_N_POSITIONS=2048\n")
    result = run_cli("explain", str(SEED), "--env", str(env), "--format", "json")
    document = json.loads(result.stdout)
    settings = {item["key"]: item for item in document["settings"]}
    tp = settings["option.tensor_parallel_degree"]
    assert tp["value"] == "1" and tp["shadowed"][0]["value"] == "8"  # the file wins over OPTION_*
    assert settings["option.n_positions"]["value"] == "4096"
    memory = document["memory"]
    assert memory["unit"] == "NeuronCore" and memory["fits"] is False
    assert memory["budget_bytes"] == 16 * 2**30
    names = [item["name"] for item in memory["ranks"][0]["items"]]
    assert names[:2] == ["weights", "KV cache"]
    assert document["resolved"]["sources"]["tensor_parallel_degree"] == "option.tensor_parallel_degree"


def test_models_and_instances_list_the_data() -> None:
    models = json.loads(run_cli("models", "--format", "json").stdout)
    assert any(row["model_id"] == "mistralai/Mixtral-8x7B-v0.1" and row["experts"] == 8 for row in models)
    instances = json.loads(run_cli("instances", "--format", "json").stdout)
    inf2 = next(row for row in instances if row["instance_type"] == "inf2.48xlarge")
    assert inf2["cores_or_gpus"] == 24 and inf2["memory_per_core_gib"] == 16.0
