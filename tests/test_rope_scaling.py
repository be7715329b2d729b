"""A rope_scaling the image's transformers or vLLM cannot parse stops the start-up (LMI614), and an
option.rope_scaling vLLM has no branch for is a value it refuses (LMI102). Each finding quotes the
engine's own message and cites the line of the release the image pins (data/rope_scaling.json, read from
the transformers wheels and vLLM sdists by scripts/gen_rope_scaling.py)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import ROOT

from lmi_config.api import lint_text

LLAMA_31 = ROOT / "tests" / "fixtures" / "models" / "llama-3.1-8b"
TRANSFORMERS = "https://github.com/huggingface/transformers/blob/"
VLLM = "https://github.com/vllm-project/vllm/blob/"
TEXT = (
    "option.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.rolling_batch=vllm\noption.max_model_len=8192\n"
)


def findings(text: str, lmi: str, model: str | None = None, backend: str = "vllm") -> list:
    return list(lint_text(text, backend=backend, lmi_version=lmi, model=model).findings)


def of(found: list, code: str) -> list:
    return [finding for finding in found if finding.code == code]


def model_with(tmp_path: Path, rope_scaling: dict | None) -> str:
    """The Llama 3.1 fixture's config.json with another rope_scaling."""
    config = json.loads((LLAMA_31 / "config.json").read_text(encoding="utf-8"))
    config["rope_scaling"] = rope_scaling
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(tmp_path)


def test_llama_31_is_refused_by_the_transformers_of_lmi_0_28() -> None:
    # LlamaConfig._rope_scaling_validation of transformers 4.41.1 (LMI 0.28's pin): exactly `type` and `factor`
    [finding] = of(findings(TEXT, "0.28.0"), "LMI614")
    assert finding.severity == "error" and finding.key == "option.model_id"
    assert (
        "'`rope_scaling` must be a dictionary with two fields, `type` and `factor`, got {" in finding.message
    )
    assert (
        TRANSFORMERS + "v4.41.1/src/transformers/models/llama/configuration_llama.py#L182" in finding.message
    )
    assert "use LMI 0.29.0 (LMI v11) or later, whose transformers 4.43.2 reads it" in finding.message


def test_llama_31_loads_from_the_release_whose_transformers_reads_llama3() -> None:
    assert not of(
        findings(TEXT, "0.29.0"), "LMI614"
    )  # 4.43.2: the shared rope_config_validation knows llama3


def test_a_legacy_linear_scaling_with_an_integer_factor_is_refused_by_transformers_4_41(
    tmp_path: Path,
) -> None:
    # configuration_llama.py:191 of 4.41.1: `not isinstance(rope_scaling_factor, float) or rope_scaling_factor <= 1.0`
    refused = model_with(tmp_path / "int", {"type": "linear", "factor": 2})
    [finding] = of(findings(TEXT, "0.28.0", refused), "LMI614")
    assert "'`rope_scaling`'s factor field must be a float > 1, got 2'" in finding.message
    assert (
        TRANSFORMERS + "v4.41.1/src/transformers/models/llama/configuration_llama.py#L192" in finding.message
    )
    accepted = model_with(tmp_path / "float", {"type": "linear", "factor": 2.0})
    assert not of(findings(TEXT, "0.28.0", accepted), "LMI614")


def test_missing_keys_of_the_shared_validation_are_refused(tmp_path: Path) -> None:
    # modeling_rope_utils._check_received_keys of 4.45.2 (LMI 0.30): llama3 requires the frequency factors
    model = model_with(tmp_path, {"rope_type": "llama3", "factor": 8.0})
    [finding] = of(findings(TEXT, "0.30.0", model), "LMI614")
    assert "Missing required keys in `rope_scaling` for 'rope_type'='llama3'" in finding.message
    assert "high_freq_factor" in finding.message and "original_max_position_embeddings" in finding.message
    assert TRANSFORMERS + "v4.45.2/src/transformers/modeling_rope_utils.py#L" in finding.message


def test_a_type_vllm_get_rope_has_no_branch_for_is_refused(tmp_path: Path) -> None:
    # transformers 4.43.2 takes rope_type default; vLLM 0.5.3.post1's get_rope has no `default` branch (0.6.3 has)
    model = model_with(tmp_path, {"rope_type": "default"})
    [finding] = of(findings(TEXT, "0.29.0", model), "LMI614")
    assert "'Unknown RoPE scaling type default'" in finding.message
    assert VLLM + "v0.5.3.post1/vllm/model_executor/layers/rotary_embedding.py#L860" in finding.message
    assert "vLLM 0.6.3.post1 is the first" in finding.message
    assert not of(findings(TEXT, "0.31.0", model), "LMI614")


OVERRIDE = TEXT + 'option.rope_scaling={"type": "extended", "factor": 8.0}\n'


def test_an_override_with_a_type_vllm_does_not_know_is_an_invalid_value() -> None:
    # LMI passes vLLM's engine arguments from 0.32.0 (backends.json engine_args_since)
    [finding] = [item for item in of(findings(OVERRIDE, "0.32.0"), "LMI102") if "RoPE" in item.message]
    assert finding.severity == "error" and finding.line == 4
    assert "'Unknown RoPE scaling type extended'" in finding.message
    assert VLLM + "v0.7.3/vllm/model_executor/layers/rotary_embedding.py#L1117" in finding.message


def test_an_override_lmi_does_not_pass_or_vllm_knows_is_not_refused() -> None:
    assert not [item for item in findings(OVERRIDE, "0.31.0") if "RoPE" in item.message]
    known = TEXT + 'option.rope_scaling={"type": "dynamic", "factor": 2.0}\n'
    assert not [item for item in findings(known, "0.32.0") if "RoPE" in item.message]


def test_every_backend_reads_config_json_with_its_images_transformers() -> None:
    # the HF Accelerate handler's AutoConfig (transformers 4.41.1 in the 0.28 LMI image) refuses it too
    text = "option.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.rolling_batch=disable\n"
    [finding] = of(findings(text, "0.28.0", backend="huggingface"), "LMI614")
    assert "transformers 4.41.1" in finding.message


def test_a_model_with_its_own_configuration_class_is_not_judged_by_transformers(tmp_path: Path) -> None:
    config = json.loads((LLAMA_31 / "config.json").read_text(encoding="utf-8"))
    config["auto_map"] = {"AutoConfig": "configuration_custom.CustomConfig"}
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    text = TEXT + "option.trust_remote_code=true\n"
    assert not of(findings(text, "0.28.0", str(tmp_path)), "LMI614")


def test_vllms_config_reader_refuses_two_types_that_disagree(tmp_path: Path) -> None:
    # patch_rope_scaling_dict of vLLM 0.8.4 (LMI 0.33): `type` and `rope_type` both set, to different types
    model = model_with(
        tmp_path,
        {
            "type": "linear",
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
    )
    [finding] = of(findings(TEXT, "0.33.0", model), "LMI614")
    assert "'Found conflicts between 'rope_type=llama3' (modern field) and 'type=linear'" in finding.message
    assert VLLM + "v0.8.4/vllm/transformers_utils/config.py#L202" in finding.message
    # the pairs the reader renames itself (su -> longrope) pass from 0.12 (patch_rope_parameters_dict)
    renamed = model_with(tmp_path / "renamed", {"type": "su", "rope_type": "longrope", "factor": 2.0})
    assert not [
        item for item in of(findings(TEXT, "0.36.0", renamed), "LMI614") if "conflicts" in item.message
    ]
