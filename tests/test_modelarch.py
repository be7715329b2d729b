"""Model architectures: one normalizer for local config.json, the catalog and the Hub."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, load_shared_json

from lmi_config.modelarch import ModelResolutionError, from_catalog, from_directory, resolve_model

MODELS = FIXTURES / "models"


def test_llama_config_normalizes_gqa_and_params() -> None:
    arch = from_directory(MODELS / "llama-3.1-8b")
    assert (arch.num_attention_heads, arch.num_key_value_heads, arch.head_dim) == (32, 8, 128)
    assert arch.max_position_embeddings == 131072
    # computed count equals the published 8,030,261,248 within 0.1 %
    assert abs(arch.total_params - 8_030_261_248) / 8_030_261_248 < 0.001


@pytest.mark.parametrize("name", ["falcon-7b", "falcon-7b-refinedweb", "falcon-7b-resaved-num-kv-heads"])
def test_falcon_multi_query_means_one_kv_head_in_every_layout(name: str) -> None:
    arch = from_directory(MODELS / name)
    assert arch.num_attention_heads == 71
    assert arch.num_key_value_heads == 1


def test_gpt2_naming_is_understood() -> None:
    arch = from_directory(MODELS / "gpt2")
    assert (arch.num_attention_heads, arch.hidden_size, arch.num_layers) == (12, 768, 12)
    assert arch.intermediate_size == 4 * 768
    assert arch.max_position_embeddings == 1024
    assert arch.tie_word_embeddings


def test_mixtral_counts_every_expert() -> None:
    arch = from_directory(MODELS / "mixtral-8x7b")
    assert arch.num_experts == 8
    assert abs(arch.total_params - 46_702_792_704) / 46_702_792_704 < 0.01


def test_nested_text_config_is_read() -> None:
    arch = from_directory(MODELS / "gemma-3-4b-it")
    assert arch.num_attention_heads == 8 and arch.num_key_value_heads == 4 and arch.head_dim == 256


def test_safetensors_index_gives_exact_weight_bytes() -> None:
    arch = from_directory(MODELS / "llama-3.2-1b-with-index")
    assert arch.weight_bytes == 2_471_628_800
    assert arch.head_dim == 64


def test_sliding_window_and_disabled_sliding_window() -> None:
    assert from_directory(MODELS / "mistral-7b-v0.1").sliding_window == 4096
    assert from_directory(MODELS / "qwen2.5-7b").sliding_window is None  # use_sliding_window false


def test_catalog_matches_reference_models() -> None:
    for row in load_shared_json("reference", "ground_truth.json")["models"]:
        arch = from_catalog(row["model_id"])
        assert arch is not None, row["model_id"]
        assert arch.num_attention_heads == row["num_attention_heads"], row["model_id"]
        assert arch.num_layers == row["num_hidden_layers"], row["model_id"]
        assert arch.hidden_size == row["hidden_size"], row["model_id"]
        assert arch.total_params == row["total_params"], row["model_id"]


def test_catalog_lookup_is_case_insensitive_and_accepts_the_repo_name() -> None:
    assert from_catalog("META-LLAMA/Llama-3.1-8B-Instruct") is not None
    assert from_catalog("Llama-3.1-8B-Instruct") is not None


def test_unknown_model_offline_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ModelResolutionError, match="not in the built-in catalog"):
        resolve_model("some-org/not-a-model", allow_hub=False)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    with pytest.raises(ModelResolutionError, match="cannot read config.json"):
        resolve_model(str(broken))
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "config.json").write_text(json.dumps({"model_type": "x"}))
    with pytest.raises(ModelResolutionError, match="lacks the attention heads"):
        resolve_model(str(empty))
