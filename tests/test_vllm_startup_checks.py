"""vLLM's own start-up checks, judged offline: each finding quotes vLLM's message and cites the line of the
release the image runs (read from that release's code into data/vllm_checks.json), and fires only on the
releases whose code makes the check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

BNB = str(ROOT / "tests" / "fixtures" / "models" / "llama-3.1-8b-instruct-bnb-4bit")
GPTQ = str(ROOT / "tests" / "fixtures" / "models" / "qwen2.5-14b-instruct-gptq-int4")
VLLM = "https://github.com/vllm-project/vllm/blob/"


def lint(tmp_path: Path, text: str, *args: str) -> tuple[int, list[dict]]:
    path = tmp_path / "serving.properties"
    path.write_text(text, encoding="utf-8")
    result = run_cli("lint", str(path), "--backend", "vllm", "--format", "json", *args)
    return result.returncode, json.loads(result.stdout)["findings"]


def of(findings: list[dict], code: str) -> list[dict]:
    return [finding for finding in findings if finding["code"] == code]


TOKENS = (
    "option.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.rolling_batch=vllm\noption.tensor_parallel_degree=4\n"
    "option.max_model_len=8192\noption.max_rolling_batch_prefill_tokens=4096\n"
)


@pytest.mark.parametrize(
    ("lmi", "line"),
    [
        ("0.31.0", "v0.6.3.post1/vllm/config.py#L1041"),  # SchedulerConfig._verify_args
        ("0.35.0", "v0.11.1/vllm/config/scheduler.py#L254"),  # SchedulerConfig.verify_max_model_len
    ],
)
def test_batched_tokens_below_model_len_without_chunked_prefill_is_refused(
    tmp_path: Path, lmi: str, line: str
) -> None:
    code, findings = lint(
        tmp_path,
        TOKENS + "option.enable_chunked_prefill=false\n",
        "--lmi-version",
        lmi,
        "--instance",
        "ml.g5.12xlarge",
    )
    [finding] = of(findings, "LMI615")
    assert code == 1 and finding["severity"] == "error" and finding["line"] == 5
    assert (
        "'max_num_batched_tokens (4096) is smaller than max_model_len (8192). This effectively limits"
        in (finding["message"])
    )
    assert VLLM + line in finding["message"]
    assert finding["fix"]["changes"] == [
        {"action": "set", "key": "option.max_rolling_batch_prefill_tokens", "value": "8192", "new_key": ""}
    ]


def test_batched_tokens_are_not_refused_where_the_release_forces_chunked_prefill(tmp_path: Path) -> None:
    # vLLM 0.8.4 (LMI 0.33.0): "V1 always uses chunked prefills" sets it whatever the file says
    _, findings = lint(
        tmp_path,
        TOKENS + "option.enable_chunked_prefill=false\n",
        "--lmi-version",
        "0.33.0",
        "--instance",
        "ml.g5.12xlarge",
    )
    assert not of(findings, "LMI615")
    # with chunked prefill on, the budget is per step: a longer sequence is prefilled in chunks
    _, findings = lint(
        tmp_path,
        TOKENS + "option.enable_chunked_prefill=true\n",
        "--lmi-version",
        "0.35.0",
        "--instance",
        "ml.g5.12xlarge",
    )
    assert not of(findings, "LMI615")


def test_v0_releases_refuse_a_small_budget_when_nothing_turns_chunked_prefill_on(tmp_path: Path) -> None:
    # vLLM 0.6.3: chunked prefill is on by default only past 32K tokens; 8192 is below
    _, findings = lint(tmp_path, TOKENS, "--lmi-version", "0.31.0", "--instance", "ml.g5.12xlarge")
    assert "chunked prefill off (this release's default here)" in of(findings, "LMI615")[0]["message"]


BNB_FILE = (
    "option.model_id=unsloth/Meta-Llama-3.1-8B-Instruct-bnb-4bit\noption.rolling_batch=vllm\n"
    "option.tensor_parallel_degree={tp}\noption.max_model_len=8192\n"
)


@pytest.mark.parametrize(
    ("lmi", "line"),
    [
        ("0.31.0", "v0.6.3.post1/vllm/model_executor/model_loader/loader.py#L1070"),
        ("0.33.0", "v0.8.4/vllm/model_executor/model_loader/loader.py#L1185"),
        ("v19", "v0.14.0/vllm/model_executor/model_loader/bitsandbytes_loader.py#L"),
    ],
)
def test_a_bitsandbytes_checkpoint_with_tensor_parallelism_is_refused(
    tmp_path: Path, lmi: str, line: str
) -> None:
    code, findings = lint(
        tmp_path, BNB_FILE.format(tp=4), "--lmi-version", lmi, "--instance", "ml.g5.12xlarge", "--model", BNB
    )
    [finding] = of(findings, "LMI616")
    assert code == 1 and finding["line"] == 3
    assert "'Prequant BitsAndBytes models with" in finding["message"] and VLLM + line in finding["message"]
    assert finding["fix"]["changes"][0]["key"] == "option.tensor_parallel_degree"
    assert finding["fix"]["changes"][0]["value"] == "1"


def test_a_bitsandbytes_checkpoint_on_one_gpu_loads(tmp_path: Path) -> None:
    _, findings = lint(
        tmp_path,
        BNB_FILE.format(tp=1),
        "--lmi-version",
        "0.33.0",
        "--instance",
        "ml.g5.2xlarge",
        "--model",
        BNB,
    )
    assert not of(findings, "LMI616")


def test_in_flight_bitsandbytes_with_tensor_parallelism_is_refused_only_by_vllm_0_5(tmp_path: Path) -> None:
    text = (
        "option.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.rolling_batch=vllm\noption.quantize=bitsandbytes\n"
        "option.tensor_parallel_degree=4\noption.max_model_len=8192\n"
    )
    _, findings = lint(tmp_path, text, "--lmi-version", "0.29.0", "--instance", "ml.g5.12xlarge")
    [finding] = of(findings, "LMI616")
    assert "'BitAndBytes quantization with TP or PP is not supported yet.'" in finding["message"]
    assert VLLM + "v0.5.3.post1/vllm/config.py#L281" in finding["message"]
    _, findings = lint(tmp_path, text, "--lmi-version", "0.31.0", "--instance", "ml.g5.12xlarge")
    assert not of(findings, "LMI616")  # from 0.6 only a checkpoint stored in bitsandbytes is refused


GPTQ_FILE = (
    "option.model_id=Qwen/Qwen2.5-14B-Instruct-GPTQ\noption.rolling_batch=vllm\noption.tensor_parallel_degree={tp}\n"
    "option.max_model_len=8192\n"
)


@pytest.mark.parametrize(
    ("lmi", "lines"),
    [
        (
            "0.31.0",
            (
                "v0.6.3.post1/vllm/model_executor/layers/quantization/gptq.py#L117",
                "v0.6.3.post1/vllm/model_executor/layers/quantization/utils/marlin_utils.py#L116",
            ),
        ),
        ("v19", ("v0.14.0/vllm/model_executor/layers/quantization/gptq.py#L251",)),
    ],
)
def test_a_gptq_group_cut_by_tensor_parallelism_is_refused(
    tmp_path: Path, lmi: str, lines: tuple[str, ...]
) -> None:
    code, findings = lint(
        tmp_path,
        GPTQ_FILE.format(tp=8),
        "--lmi-version",
        lmi,
        "--instance",
        "ml.g5.48xlarge",
        "--model",
        GPTQ,
    )
    [finding] = of(findings, "LMI617")
    assert code == 1 and finding["line"] == 3
    message = finding["message"]
    assert "intermediate_size (13824) is 1728 inputs, not a multiple of 128" in message
    assert "'The input size is not aligned with the quantized weight shape." in message
    assert "Weight input_size_per_partition = 1728 is not divisible by" in message
    assert all(VLLM + line in message for line in lines)
    assert finding["fix"]["changes"][0] == {
        "action": "set",
        "key": "option.tensor_parallel_degree",
        "value": "4",
        "new_key": "",
    }


def test_a_gptq_tensor_parallel_degree_that_keeps_whole_groups_loads(tmp_path: Path) -> None:
    _, findings = lint(
        tmp_path,
        GPTQ_FILE.format(tp=4),
        "--lmi-version",
        "0.31.0",
        "--instance",
        "ml.g5.12xlarge",
        "--model",
        GPTQ,
    )
    assert not of(findings, "LMI617")


# --- FP8 weight blocks (weight_block_size) that a tensor-parallel slice cuts ------------------------

QWEN3_MOE_FP8 = (
    "option.model_id=Qwen/Qwen3-30B-A3B-FP8\noption.rolling_batch=vllm\noption.tensor_parallel_degree={tp}\n"
)


@pytest.mark.parametrize(
    ("lmi", "line"),
    [
        (
            "0.33.0",
            "v0.8.4/vllm/model_executor/layers/quantization/fp8.py#L472",
        ),  # Fp8MoEMethod.create_weights
        ("0.35.0", "v0.11.1/vllm/model_executor/layers/quantization/fp8.py#L694"),
    ],
)
def test_fp8_blocks_cut_by_tensor_parallelism_are_refused(tmp_path: Path, lmi: str, line: str) -> None:
    # Qwen3-30B-A3B-FP8: experts of 768 in 128 x 128 blocks; TP 4 leaves 192 per rank
    code, findings = lint(
        tmp_path, QWEN3_MOE_FP8.format(tp=4), "--lmi-version", lmi, "--instance", "ml.g6e.12xlarge"
    )
    [finding] = of(findings, "LMI617")
    assert code == 1 and finding["line"] == 3
    assert (
        "'The output_size of gate's and up's weight = 192 is not divisible by weight quantization block_n = 128.'"
        in finding["message"]
    )
    assert VLLM + line in finding["message"]
    assert finding["fix"]["changes"][0]["value"] == "2"  # 384 per rank: three whole blocks


def test_fp8_experts_kept_whole_or_sliced_into_whole_blocks_load(tmp_path: Path) -> None:
    _, findings = lint(tmp_path, QWEN3_MOE_FP8.format(tp=2), "--lmi-version", "0.33.0")
    assert not of(findings, "LMI617")
    expert_parallel = QWEN3_MOE_FP8.format(tp=4) + "option.enable_expert_parallel=true\n"
    _, findings = lint(tmp_path, expert_parallel, "--lmi-version", "0.34.0")
    assert not of(findings, "LMI617")


def test_a_dense_fp8_mlp_cut_by_tensor_parallelism_is_refused(tmp_path: Path) -> None:
    # a block-quantized dense checkpoint: gate_up_proj's 11008 / TP 4 = 2752 outputs per rank, 21.5 blocks
    model = tmp_path / "model"
    model.mkdir()
    config = json.loads((ROOT / "tests" / "fixtures" / "models" / "llama-3.1-8b" / "config.json").read_text())
    config |= {
        "intermediate_size": 11008,
        "quantization_config": {
            "quant_method": "fp8",
            "activation_scheme": "dynamic",
            "weight_block_size": [128, 128],
        },
    }
    (model / "config.json").write_text(json.dumps(config), encoding="utf-8")
    text = "option.model_id=fp8-dense\noption.rolling_batch=vllm\noption.tensor_parallel_degree={tp}\n"
    for lmi, said, line in (
        ("0.33.0", "Weight output_partition_size = 2752 is not divisible", "v0.8.4/vllm/model_executor/layers/quantization/fp8.py#L221"),
        ("0.35.0", "Weight output_partition_size = 2752 is not divisible", "v0.11.1/vllm/model_executor/layers/quantization/utils/fp8_utils.py#L1030"),
    ):  # fmt: skip
        _, findings = lint(tmp_path, text.format(tp=4), "--lmi-version", lmi, "--model", str(model))
        [finding] = of(findings, "LMI617")
        assert said in finding["message"] and VLLM + line in finding["message"]
    _, findings = lint(tmp_path, text.format(tp=2), "--lmi-version", "0.35.0", "--model", str(model))
    assert not of(findings, "LMI617")  # 5504 = 43 blocks


SCOUT = (
    "option.model_id=meta-llama/Llama-4-Scout-17B-16E-Instruct\noption.rolling_batch=vllm\n"
    "option.tensor_parallel_degree=8\noption.max_model_len=8192\noption.quantize=bitsandbytes\n"
)


def test_bitsandbytes_for_experts_without_a_mapping_is_refused(tmp_path: Path) -> None:
    # vLLM 0.10.2's Llama 4 classes have no get_expert_mapping (0.11 adds one to Llama4ForConditionalGeneration)
    target = ("--instance", "ml.p4d.24xlarge", "--lmi-version")
    _, found = lint(tmp_path, SCOUT, *target, "0.34.0")
    [finding] = of(found, "LMI661")
    assert (
        "'MoE Model Llama4ForConditionalGeneration does not support BitsAndBytes quantization yet."
        in (finding["message"])
    )
    assert VLLM + "v0.10.2/vllm/model_executor/model_loader/bitsandbytes_loader.py#L" in finding["message"]
    assert finding["line"] == 5
    _, later = lint(tmp_path, SCOUT, *target, "0.35.0")
    assert not of(later, "LMI661")
    # Mixtral's model maps its experts; a dense model has none to map
    mixtral = SCOUT.replace("meta-llama/Llama-4-Scout-17B-16E-Instruct", "mistralai/Mixtral-8x7B-v0.1")
    _, found = lint(tmp_path, mixtral, *target, "0.34.0")
    assert not of(found, "LMI661")
    dense = SCOUT.replace("meta-llama/Llama-4-Scout-17B-16E-Instruct", "meta-llama/Llama-3.1-70B-Instruct")
    _, found = lint(tmp_path, dense, *target, "0.34.0")
    assert not of(found, "LMI661")


def test_the_reader_finds_an_expert_mapping_through_the_modules_a_model_imports() -> None:
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    from vllm_model_reader import _expert_mapping_modules, _model_trees

    models = "vllm/model_executor/models/"
    sources = {
        models + "base_moe.py": "class BaseMoeModel:\n    def get_expert_mapping(self):\n        return []\n",
        models + "wrapper.py": "from .base_moe import BaseMoeModel\nclass WrapperForCausalLM:\n    pass\n",
        models
        + "vision.py": "from .wrapper import WrapperForCausalLM\nclass VisionForConditionalGeneration:\n    pass\n",
        models + "lonely_moe.py": "from .utils import maybe_prefix\nclass LonelyMoeForCausalLM:\n    pass\n",
        models + "utils.py": "def maybe_prefix(prefix, name):\n    return name\n",
    }
    assert _expert_mapping_modules(_model_trees(sources)) == {"base_moe", "wrapper", "vision"}
