"""The attention backend each vLLM release picks on the instance's GPU, and what that backend refuses,
judged offline from the facts read out of every pinned release's code (data/vllm_attention.json). Each
finding quotes vLLM's message and cites the line of the release the image runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from lmi_config.api import lint_paths, lint_text
from lmi_config.lint import LintOptions

sys.path.insert(0, str(ROOT / "scripts"))

from vllm_attention_reader import read_attention  # noqa: E402
from vllm_check_reader import read_checks  # noqa: E402

PHI2 = str(ROOT / "tests" / "fixtures" / "models" / "phi-2")
MISTRAL = str(ROOT / "tests" / "fixtures" / "models" / "mistral-7b-v0.1")
VLLM = "https://github.com/vllm-project/vllm/blob/"
PHI2_FILE = "option.model_id=microsoft/phi-2\noption.rolling_batch=vllm\noption.max_model_len=2048\n"
GEMMA2 = "option.model_id=google/gemma-2-2b-it\noption.rolling_batch=vllm\noption.max_model_len=2048\n"
LLAMA = (
    "option.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.rolling_batch=vllm\noption.max_model_len=8192\n"
)


def findings(text: str, lmi: str, instance: str, code: str, model: str | None = None) -> list:
    result = lint_text(text, backend="vllm", lmi_version=lmi, instance=instance, model=model)
    return [finding for finding in result.findings if finding.code == code]


# --- head sizes ---------------------------------------------------------------------------------


def test_a_head_size_the_chosen_backend_lacks_is_refused() -> None:
    # vLLM 0.8.4's V1 engine takes FlashAttention on an A10G whatever the head size; Phi-2's is 80
    [finding] = findings(PHI2_FILE, "0.33.0", "ml.g5.2xlarge", "LMI618", PHI2)
    assert finding.severity == "error"
    assert (
        "'Head size 80 is not supported by FlashAttention. Supported head sizes are: [32, 64, 96, 128, 160, "
        in (finding.message)
    )
    assert VLLM + "v0.8.4/vllm/v1/attention/backends/flash_attn.py#L397" in finding.message
    assert VLLM + "v0.8.4/vllm/platforms/cuda.py#L215" in finding.message
    # the fix vLLM's message names, judged: the V0 engine falls back to xFormers, which takes 80
    assert finding.fix is not None and finding.fix.changes[0].value == "VLLM_USE_V1=0"


@pytest.mark.parametrize(
    ("lmi", "instance", "extra"),
    [
        # V0: its selector falls back from FlashAttention to xFormers, which runs 80
        ("0.33.0", "ml.g5.2xlarge", "option.env=VLLM_USE_V1=0\n"),
        # below compute capability 8.0 the V1 oracle runs V0 (arg_utils.py#L1422)
        ("0.33.0", "ml.g4dn.2xlarge", ""),
        ("0.34.0", "ml.g5.2xlarge", ""),  # 0.10.2 takes FlexAttention for a head size FlashAttention lacks
        ("0.31.0", "ml.g5.2xlarge", ""),  # 0.6.3's selector falls back to xFormers for the head size
    ],
)
def test_a_head_size_is_not_refused_where_the_release_picks_a_backend_that_takes_it(
    lmi: str, instance: str, extra: str
) -> None:
    assert not findings(PHI2_FILE + extra, lmi, instance, "LMI618", PHI2)


# --- logits soft-capping, sliding windows ---------------------------------------------------------


@pytest.mark.parametrize(
    ("lmi", "instance", "dtype", "line"),
    [
        # 0.5.3: FlashAttention's and xFormers' metadata builders refuse it on every GPU
        ("0.29.0", "ml.g5.xlarge", "bf16", "v0.5.3.post1/vllm/attention/backends/flash_attn.py#L286"),
        ("0.29.0", "ml.g4dn.xlarge", "fp16", "v0.5.3.post1/vllm/attention/backends/utils.py#L162"),
        # 0.6: FlashAttention caps logits, but a T4 gets xFormers, which does not
        ("0.31.0", "ml.g4dn.xlarge", "fp16", "v0.6.3.post1/vllm/attention/backends/xformers.py#L425"),
        # 0.10: FlexAttention on a T4, which refuses the sliding window first, then soft-capping
        ("0.34.0", "ml.g4dn.xlarge", "fp32", "v0.10.2/vllm/v1/attention/backends/flex_attention.py#L645"),
    ],
)
def test_soft_capping_needs_a_backend_that_caps_logits(
    lmi: str, instance: str, dtype: str, line: str
) -> None:
    [finding] = findings(GEMMA2 + f"option.dtype={dtype}\n", lmi, instance, "LMI619")
    assert finding.severity == "error"
    assert "logits soft-capping (config.json attn_logit_softcapping=50.0)" in finding.message
    assert VLLM + line in finding.message


def test_flashinfer_named_in_option_env_is_the_way_out_vllm_0_5_names() -> None:
    [finding] = findings(GEMMA2 + "option.dtype=bf16\n", "0.29.0", "ml.g5.xlarge", "LMI619")
    assert "export VLLM_ATTENTION_BACKEND=FLASHINFER" in finding.message
    assert finding.fix is not None and finding.fix.changes[0].value == "VLLM_ATTENTION_BACKEND=FLASHINFER"
    fixed = GEMMA2 + "option.dtype=bf16\noption.env=VLLM_ATTENTION_BACKEND=FLASHINFER\n"
    assert not findings(fixed, "0.29.0", "ml.g5.xlarge", "LMI619")


@pytest.mark.parametrize(
    ("lmi", "instance", "dtype"),
    [
        # 0.6.3: FlashAttention from 8.0 (Gemma-2's sliding window is turned off)
        ("0.31.0", "ml.g5.xlarge", "bf16"),
        ("0.33.0", "ml.g4dn.xlarge", "fp16"),  # 0.8.4 on a T4: V0 xFormers only warns about soft-capping
        ("0.34.0", "ml.g5.xlarge", "bf16"),  # 0.10.2: V1 FlashAttention from 8.0
        ("0.35.0", "ml.g4dn.xlarge", "fp32"),  # 0.11.1: FlashInfer or Triton on a T4, both cap logits
    ],
)
def test_soft_capping_is_not_refused_where_the_backend_caps_logits(
    lmi: str, instance: str, dtype: str
) -> None:
    assert not findings(GEMMA2 + f"option.dtype={dtype}\n", lmi, instance, "LMI619")


def test_a_sliding_window_on_flex_attention_is_refused() -> None:
    text = (
        "option.model_id=mistralai/Mistral-7B-v0.1\noption.rolling_batch=vllm\noption.tensor_parallel_degree=4\n"
        "option.max_model_len=4096\n"
    )
    [finding] = findings(text, "0.34.0", "ml.g4dn.12xlarge", "LMI619", MISTRAL)
    assert "a sliding window (config.json sliding_window=4096)" in finding.message
    assert "'FlexAttention does not support sliding window yet.'" in finding.message
    assert not findings(text, "0.34.0", "ml.g5.12xlarge", "LMI619", MISTRAL)


# --- block size, backend names ------------------------------------------------------------------------


def test_a_block_size_that_is_not_a_multiple_of_16_is_refused() -> None:
    [finding] = findings(LLAMA + "option.block_size=8\n", "0.34.0", "ml.g5.2xlarge", "LMI620")
    assert finding.line == 4 and "'Block size must be a multiple of 16.'" in finding.message
    assert VLLM + "v0.10.2/vllm/v1/attention/backends/flash_attn.py#L" in finding.message
    assert finding.fix is not None and finding.fix.changes[0].value == "16"
    # the V0 selector of 0.6 falls back to xFormers for such a block size instead
    assert not findings(LLAMA + "option.block_size=8\n", "0.31.0", "ml.g5.2xlarge", "LMI620")


@pytest.mark.parametrize(
    ("lmi", "line"),
    [
        ("0.34.0", "v0.10.2/vllm/attention/selector.py#L"),
        ("0.29.0", "v0.5.3.post1/vllm/attention/selector.py#L"),
    ],
)
def test_an_unknown_attention_backend_name_is_refused(lmi: str, line: str) -> None:
    text = LLAMA + "option.env=VLLM_ATTENTION_BACKEND=FLASH_ATTENTION\n"
    [finding] = findings(text, lmi, "ml.g5.2xlarge", "LMI621")
    assert "VLLM_ATTENTION_BACKEND=FLASH_ATTENTION" in finding.message and VLLM + line in finding.message
    assert "FLASH_ATTN" in finding.message  # the names the release knows
    assert not findings(
        LLAMA + "option.env=VLLM_ATTENTION_BACKEND=FLASH_ATTN\n", lmi, "ml.g5.2xlarge", "LMI621"
    )


# --- the facts, read from the code ----------------------------------------------------------------------


def test_the_head_sizes_are_the_releases_own_lists() -> None:
    data = ROOT / "lmi_config" / "data" / "vllm_attention.json"
    versions = json.loads(data.read_text(encoding="utf-8"))["versions"]

    def backend(version: str, key: str) -> dict:
        return versions[version]["backends"][key]

    assert backend("0.4.2", "v0/xformers")["impl_head_sizes"] == [64, 80, 96, 112, 128, 256]
    assert (
        120 in backend("0.6.3.post1", "v0/xformers")["impl_head_sizes"]
    )  # PagedAttention gained 120 and 192
    assert 80 not in backend("0.8.4", "v1/flash_attn")["impl_head_sizes"]
    assert backend("0.12.0", "v1/flash_attn")["head_size_rule"] == "head_size % 8 == 0 and head_size <= 256"
    assert backend("0.23.0", "v1/flashinfer")["capability"] == {"min": 75, "max": 121}
    assert versions["0.23.0"]["selection"]["priorities"]["default"][:2] == ["FLASH_ATTN", "FLASHINFER"]
    assert versions["0.10.2"]["selection"]["v1"]["older_gpus"] == "FLEX_ATTENTION"


BACKEND = """
from vllm.attention.ops.paged_attn import PagedAttention

class XFormersBackend(AttentionBackend):
    @staticmethod
    def get_name() -> str:
        return "XFORMERS"

    @staticmethod
    def get_impl_cls():
        return XFormersImpl


class XFormersImpl(AttentionImpl):
    def __init__(self, num_heads, head_size, logits_soft_cap=None):
        supported_head_sizes = PagedAttention.get_supported_head_sizes()
        if head_size not in supported_head_sizes:
            raise ValueError(f"Head size {head_size} is not supported by PagedAttention.")
        if logits_soft_cap is not None:
            raise ValueError("XFormers does not support attention logits soft capping.")
"""
PAGED = """
class PagedAttention:
    @staticmethod
    def get_supported_head_sizes():
        return [64, 80, 128]
"""
SELECTOR = """
def which_attn_to_use(head_size, dtype):
    selected_backend = _Backend.FLASH_ATTN
    if selected_backend == _Backend.FLASH_ATTN:
        if not current_platform.has_device_capability(80):
            selected_backend = _Backend.XFORMERS
        elif dtype not in (torch.float16, torch.bfloat16):
            selected_backend = _Backend.XFORMERS
    return selected_backend
"""


def test_the_reader_resolves_a_backends_head_sizes_and_refusals_from_its_code() -> None:
    sources = {
        "vllm/attention/backends/xformers.py": BACKEND,
        "vllm/attention/ops/paged_attn.py": PAGED,
        "vllm/attention/selector.py": SELECTOR,
    }
    checks, _ = read_checks(sources)
    facts = read_attention(sources, "9.9.9", checks)
    backend = facts["backends"]["v0/xformers"]
    assert backend["impl_head_sizes"] == [64, 80, 128]  # PagedAttention's, through the import
    assert backend["refuses"]["logits_soft_cap"] == [
        check.identity for check in checks if "soft capping" in check.message
    ]
    assert facts["selection"]["kind"] == "selector"
    assert facts["selection"]["v0"]["flash_min_capability"] == 80
    assert facts["selection"]["v0"]["falls_back_for"] == ["dtype"]


def test_the_engine_variable_in_an_env_file_is_seen_as_the_worker_inherits_it(tmp_path: Path) -> None:
    # the model's Environment (an env file) reaches the Python worker as option.env does: no false error
    (tmp_path / "serving.properties").write_text(PHI2_FILE)
    (tmp_path / "model.env").write_text("VLLM_USE_V1=0\n")
    options = LintOptions(backend="vllm", lmi_version="0.33.0", instance="ml.g5.2xlarge", model=PHI2)
    found = [finding for finding in lint_paths([str(tmp_path)], options).findings if finding.code == "LMI618"]
    assert not found
    (tmp_path / "model.env").write_text("VLLM_USE_V1=1\n")
    found = [finding for finding in lint_paths([str(tmp_path)], options).findings if finding.code == "LMI618"]
    assert len(found) == 1
