"""Vision-language checkpoints are sized with their vision tower, projector and cross-attention layers
(sizing/vision_language.py), checked against published parameter counts; a vision layout the formulas
do not describe stays "not estimated" rather than counted as its text model alone."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, run_cli

from lmi_config.knowledge.models import hand_catalog_rows
from lmi_config.modelarch import from_directory, normalize_config

MODELS = ROOT / "tests" / "fixtures" / "models"


def test_llama_3_2_11b_vision_counts_its_vision_tower_and_cross_attention() -> None:
    # Meta's model card: "Llama 3.2-Vision 11B (10.6B)"; the text model alone was counted ~7.4 B before
    arch = from_directory(MODELS / "llama-3.2-11b-vision")
    assert not arch.params_exact and arch.memory_not_estimated is None
    assert abs(arch.total_params - 10.6e9) / 10.6e9 < 0.01
    assert arch.total_params == 10_670_220_835  # the layout's exact count (biases, gates and norms included)


def test_qwen2_vl_7b_counts_its_vision_transformer_and_merger() -> None:
    # the Qwen2-VL series: 2B, 7B (8.3 B in total), 72B; the text model is Qwen2-7B's 7.6 B
    arch = from_directory(MODELS / "qwen2-vl-7b-instruct")
    assert abs(arch.total_params - 8.3e9) / 8.3e9 < 0.01
    assert arch.total_params - 7_615_487_488 == 675_759_104  # the ViT and its merger


@pytest.mark.parametrize(
    "model_id", ["google/gemma-3-4b-it", "google/gemma-3-12b-it", "google/gemma-3-27b-it"]
)
def test_gemma_3_from_its_config_matches_the_checkpoints_count(model_id: str) -> None:
    # the catalog's exact counts (safetensors) against the formula applied to the config alone
    row = next(row for row in hand_catalog_rows() if row["model_id"] == model_id)
    computed = normalize_config(row["config"], model_id=model_id, source="config").total_params
    assert abs(computed - row["total_params"]) / row["total_params"] < 0.001


def test_a_vision_layout_the_formulas_do_not_cover_is_not_estimated() -> None:
    raw = json.loads((MODELS / "llama-3.2-11b-vision" / "config.json").read_text())
    raw["model_type"] = "pixtral_like"  # a tower the formulas do not describe
    arch = normalize_config(raw, model_id="x", source="config")
    assert arch.memory_not_estimated and "vision tower" in arch.memory_not_estimated
    # an exact count (the Hub's safetensors metadata, the catalog) is sized as it is
    exact = normalize_config(raw, model_id="x", source="config", total_params=10_000_000_000)
    assert exact.memory_not_estimated is None and exact.total_params == 10_000_000_000


def test_the_memory_verdict_weighs_the_vision_model(tmp_path) -> None:
    (tmp_path / "serving.properties").write_text(
        "option.model_id=meta-llama/Llama-3.2-11B-Vision\noption.rolling_batch=vllm\noption.max_model_len=8192\n"
        "option.tensor_parallel_degree=1\n"
    )
    result = run_cli(
        "explain", str(tmp_path / "serving.properties"), "--instance", "ml.g5.2xlarge", "--lmi-version", "0.34.0",
        "--model", str(MODELS / "llama-3.2-11b-vision"), "--format", "json",
    )  # fmt: skip
    weights = next(
        item for item in json.loads(result.stdout)["memory"]["ranks"][0]["items"] if item["name"] == "weights"
    )
    assert "10.67 B parameters" in weights["note"] and weights["gib"] > 19.5
