"""vLLM's LoRA start-up checks, judged offline: the adapters LMI loads from adapters/ beside the model
(their adapter_config.json read with bounded reads), the LoRA settings vLLM's LoRAConfig refuses, and
model classes without LoRA. Each finding quotes vLLM's message and cites the line of the release the
image runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from lmi_config.api import lint_options, lint_paths, lint_text

MODELS = ROOT / "tests" / "fixtures" / "models"
ADAPTERS = str(MODELS / "llama-3.1-8b-with-adapters")
DORA = str(MODELS / "llama-3.1-8b-with-dora-adapter")
LLAMA = str(MODELS / "llama-3.1-8b")
VLLM = "https://github.com/vllm-project/vllm/blob/"
LORA = (
    "option.model_id=meta-llama/Llama-3.1-8B\noption.rolling_batch=vllm\noption.max_model_len=8192\n"
    "option.enable_lora=true\n"
)


def findings(
    text: str, lmi: str, code: str, model: str | None = LLAMA, instance: str = "ml.g5.2xlarge"
) -> list:
    result = lint_text(text, backend="vllm", lmi_version=lmi, instance=instance, model=model)
    return [finding for finding in result.findings if finding.code == code]


def model_directory(tmp_path: Path, adapters: dict[str, object]) -> Path:
    """A model directory as SageMaker unpacks it: serving.properties, config.json and adapters/<name>/."""
    directory = tmp_path / "model"
    directory.mkdir()
    shutil.copy(MODELS / "llama-3.1-8b" / "config.json", directory / "config.json")
    for name, config in adapters.items():
        (directory / "adapters" / name).mkdir(parents=True)
        text = config if isinstance(config, str) else json.dumps(config)
        (directory / "adapters" / name / "adapter_config.json").write_text(text, encoding="utf-8")
    return directory


PLAIN = json.loads(
    (MODELS / "llama-3.1-8b-with-adapters" / "adapters" / "support" / "adapter_config.json").read_text()
)


# --- ranks -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lmi", "line"),
    [
        ("0.28.0", "v0.4.2/vllm/lora/worker_manager.py#L165"),  # WorkerLoRAManager._load_lora
        ("0.31.0", "v0.6.3.post1/vllm/lora/worker_manager.py#L109"),  # WorkerLoRAManager._load_adapter
        ("0.34.0", "v0.10.2/vllm/lora/peft_helper.py#L127"),  # PEFTHelper.validate_legal
    ],
)
def test_an_adapter_rank_above_max_lora_rank_is_refused(lmi: str, line: str) -> None:
    [finding] = findings(LORA, lmi, "LMI622", ADAPTERS)
    assert finding.severity == "error" and finding.line == 4
    assert "adapter french (r=64)" in finding.message and "support" not in finding.message  # r=16 fits
    assert "'LoRA rank 64 is greater than max_lora_rank 16.'" in finding.message
    assert VLLM + line in finding.message
    assert finding.fix is not None and finding.fix.changes[0].value == "64"
    assert not findings(LORA + "option.max_lora_rank=64\n", lmi, "LMI622", ADAPTERS)


def test_adapters_are_found_beside_the_serving_properties_and_only_with_lora_on(tmp_path: Path) -> None:
    directory = model_directory(tmp_path, {"big": {**PLAIN, "r": 32}})
    (directory / "serving.properties").write_text(LORA, encoding="utf-8")
    options = lint_options(backend="vllm", lmi_version="0.34.0", instance="ml.g5.2xlarge")
    result = lint_paths([str(directory / "serving.properties")], options)
    [finding] = [f for f in result.findings if f.code == "LMI622"]
    assert "adapter big (r=32)" in finding.message and "set option.max_lora_rank=32" in finding.message
    (directory / "serving.properties").write_text(LORA.replace("enable_lora=true", "enable_lora=false"))
    result = lint_paths([str(directory / "serving.properties")], options)
    assert not [f for f in result.findings if f.code.startswith("LMI62")]


def test_an_unreadable_or_huge_adapter_config_is_no_finding_and_no_crash(tmp_path: Path) -> None:
    directory = model_directory(tmp_path, {"broken": "{not json", "deep": "[" * 5000 + "]" * 5000})
    (directory / "adapters" / "huge").mkdir()
    (directory / "adapters" / "huge" / "adapter_config.json").write_bytes(b" " * (2 << 20))
    (directory / "adapters" / "empty").mkdir()  # no adapter_config.json at all
    result = lint_text(
        LORA, backend="vllm", lmi_version="0.34.0", instance="ml.g5.2xlarge", model=str(directory)
    )
    assert not [f for f in result.findings if f.code in ("LMI622", "LMI623")]


# --- what else PEFTHelper refuses ------------------------------------------------------------------------


def test_a_dora_adapter_is_refused() -> None:
    [finding] = findings(LORA, "0.34.0", "LMI623", DORA)
    assert "adapter dora" in finding.message and "'vLLM does not yet support DoRA.'" in finding.message
    assert VLLM + "v0.10.2/vllm/lora/peft_helper.py#L127" in finding.message
    assert not findings(LORA, "0.31.0", "LMI623", DORA)  # vLLM 0.6.3 reads no use_dora


@pytest.mark.parametrize(
    ("lmi", "extra", "said"),
    [
        ("0.34.0", "", "'Adapter bias cannot be used without bias_enabled.'"),
        ("0.34.0", "option.enable_lora_bias=true\n", None),  # 0.10.2 serves a bias when asked to
        ("0.36.0", "option.enable_lora_bias=true\n", "'Adapter bias is not supported.'"),  # 0.23: never
    ],
)
def test_an_adapter_bias_is_refused_as_the_release_decides(
    tmp_path: Path, lmi: str, extra: str, said: str | None
) -> None:
    directory = model_directory(tmp_path, {"biased": {**PLAIN, "bias": "lora_only"}})
    found = findings(LORA + extra, lmi, "LMI623", str(directory))
    assert [said in found[0].message] if said else not found


def test_an_adapter_config_without_its_required_fields_is_refused(tmp_path: Path) -> None:
    directory = model_directory(tmp_path, {"partial": {"r": 8, "lora_alpha": 16, "peft_type": "LORA"}})
    [finding] = findings(LORA, "0.34.0", "LMI623", str(directory))
    assert "'Missing required configuration fields: {'target_modules'}'" in finding.message
    assert VLLM + "v0.10.2/vllm/lora/peft_helper.py#L" in finding.message


# --- LoRAConfig and its verification ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lmi", "extra", "said"),
    [
        # LMI passes max_loras 4 unless told otherwise
        ("0.34.0", "option.max_cpu_loras=2\n", "'max_cpu_loras (2) must be >= max_loras (4)'"),
        (
            "0.36.0",
            "option.max_loras=8\noption.max_cpu_loras=4\n",
            "'max_cpu_loras (4) must be >= max_loras (8).",
        ),
        ("0.33.0", "option.lora_extra_vocab_size=0\n", "must be one of {(256, 512)}"),
        (
            "0.31.0",
            "option.enable_chunked_prefill=true\n",
            "'LoRA is not supported with chunked prefill yet.'",
        ),
        ("0.29.0", "option.max_rolling_batch_prefill_tokens=131072\noption.max_model_len=131072\n", "65528"),
        ("0.32.0", "option.cpu_offload_gb=4\n", "'CPU offload is not supported with LoRA yet.'"),
    ],
)
def test_lora_settings_vllm_refuses(lmi: str, extra: str, said: str) -> None:
    text = LORA.replace("option.max_model_len=8192\n", "") if "max_model_len" in extra else LORA
    found = findings(text + extra, lmi, "LMI624", None, instance="ml.g5.12xlarge")
    assert found and said in found[0].message, [f.message for f in found]


@pytest.mark.parametrize(
    ("lmi", "extra"),
    [
        ("0.31.0", "option.lora_extra_vocab_size=0\n"),  # 0.6.3 still takes 0
        ("0.33.0", "option.enable_chunked_prefill=true\n"),  # 0.8.4 serves LoRA with chunked prefill
        ("0.34.0", "option.max_cpu_loras=4\n"),
    ],
)
def test_lora_settings_the_release_accepts_are_not_refused(lmi: str, extra: str) -> None:
    assert not findings(LORA + extra, lmi, "LMI624", None, instance="ml.g5.12xlarge")


# --- model classes ------------------------------------------------------------------------------------------


def test_lora_on_a_model_class_without_lora_is_refused() -> None:
    text = "option.model_id=tiiuae/falcon-7b\noption.rolling_batch=vllm\noption.enable_lora=true\noption.max_model_len=2048\n"
    [finding] = findings(text, "0.34.0", "LMI625", str(MODELS / "falcon-7b"))
    assert "FalconForCausalLM" in finding.message and "is not supported for LoRA." in finding.message
    assert VLLM + "v0.10.2/vllm/model_executor/models/registry.py#L" in finding.message
    assert not findings(LORA, "0.34.0", "LMI625")  # Llama's class supports LoRA
