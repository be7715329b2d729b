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


# --- a file that names no instance: what every GPU refuses -------------------------------------------


def test_a_file_without_an_instance_gets_what_every_gpu_refuses() -> None:
    # vLLM 0.5.3 refuses soft-capping in FlashAttention (8.0+) and in xFormers (older GPUs) alike
    result = lint_text(GEMMA2 + "option.dtype=fp16\n", backend="vllm", lmi_version="0.29.0")
    [finding] = [f for f in result.findings if f.code == "LMI619"]
    assert finding.severity == "error" and finding.message.startswith(
        "on every GPU of the SageMaker instances ("
    )
    assert VLLM + "v0.5.3.post1/vllm/attention/backends/flash_attn.py#L286" in finding.message
    # 0.10.2 refuses it on a T4 (FlexAttention) but runs it on an A10G (FlashAttention 2): no error
    result = lint_text(GEMMA2 + "option.dtype=fp16\n", backend="vllm", lmi_version="0.34.0")
    assert not [f for f in result.findings if f.code == "LMI619"]


# --- the FlashAttention build the release compiles -----------------------------------------------------

FLASH_ATTENTION = "https://github.com/vllm-project/flash-attention/blob/"


def test_a_flash_attention_build_without_soft_capping_refuses_gemma2_on_hopper() -> None:
    # vLLM 0.10.2 runs FA3 on Hopper (fa_utils.py#L36) and pins a flash-attention commit whose FA3 build sets
    # FLASHATTENTION_DISABLE_SOFTCAP: Gemma-2 stops in the profile run (vllm-project/vllm#25502)
    [finding] = findings(GEMMA2, "0.34.0", "ml.p5.4xlarge", "LMI619")
    assert "'This flash attention build does not support tanh softcapping.'" in finding.message
    commit = "ee4d25bd84e0cbc7e0b9b9685085fd5db2dcb62a"
    assert FLASH_ATTENTION + f"{commit}/hopper/flash_api.cpp#L1155" in finding.message
    assert FLASH_ATTENTION + f"{commit}/CMakeLists.txt#L264" in finding.message
    assert VLLM + "v0.10.2/cmake/external_projects/vllm_flash_attn.cmake#L41" in finding.message
    # the fix names the FA2 build, whose definitions keep soft-capping; the judge accepts it
    assert finding.fix is not None and finding.fix.changes[0].value == "VLLM_FLASH_ATTN_VERSION=2"
    assert not findings(
        GEMMA2 + "option.env=VLLM_FLASH_ATTN_VERSION=2\n", "0.34.0", "ml.p5.4xlarge", "LMI619"
    )


@pytest.mark.parametrize(
    ("lmi", "instance"),
    [
        ("0.33.0", "ml.p5.4xlarge"),  # 0.8.4's FA3 build (dc9d410b) keeps soft-capping
        ("0.34.0", "ml.g5.2xlarge"),  # 0.10.2 runs FA2 on an A10G
    ],
)
def test_soft_capping_is_not_refused_where_the_flash_attention_build_keeps_it(
    lmi: str, instance: str
) -> None:
    assert not findings(GEMMA2, lmi, instance, "LMI619")


def test_the_flash_attention_builds_are_read_from_the_pinned_commit() -> None:
    data = ROOT / "lmi_config" / "data" / "vllm_flash_attn.json"
    versions = json.loads(data.read_text(encoding="utf-8"))["versions"]
    assert versions["0.10.2"]["commit"] == "ee4d25bd84e0cbc7e0b9b9685085fd5db2dcb62a"
    assert "FLASHATTENTION_DISABLE_SOFTCAP" in versions["0.10.2"]["builds"]["3"]["disabled"]
    assert "FLASHATTENTION_DISABLE_SOFTCAP" not in versions["0.10.2"]["builds"]["2"]["disabled"]
    assert "logits_soft_cap" not in versions["0.8.4"]["builds"]["3"]["refuses"]
    # FA3 runs on Hopper only (flash_attn_interface.py _is_fa3_supported); a wheel-only release is unread
    assert versions["0.12.0"]["builds"]["3"]["supported"] == "not (major < 9 or major >= 10)"
    assert versions["0.15.1"]["commit"] is None and "wheels only" in versions["0.15.1"]["unread"]


# --- attention sinks (gpt-oss) ---------------------------------------------------------------------------

GPT_OSS = "option.model_id=openai/gpt-oss-20b\noption.max_model_len=8192\n"


def test_a_named_backend_that_refuses_attention_sinks_is_refused() -> None:
    # vLLM 0.23 validates the backend named: FlashInfer supports sinks only through TRT-LLM attention on
    # SM100 (flashinfer.py#L413), so on an RTX PRO 6000 (12.0) it stops (vllm-project/vllm#40153)
    text = GPT_OSS + "option.attention_backend=FLASHINFER\n"
    [finding] = findings(text, "0.36.0-lmi27.0.0-cu130", "ml.g7e.2xlarge", "LMI619")
    assert finding.severity == "error" and finding.key == "option.attention_backend"
    assert "Reason: ['attention sinks not supported']" in finding.message
    assert VLLM + "v0.23.0/vllm/platforms/cuda.py#L313" in finding.message
    assert finding.fix is not None and finding.fix.changes[0].action == "remove"
    # the default selection takes Triton attention, which runs sinks; naming it is no error either
    assert not findings(GPT_OSS, "0.36.0-lmi27.0.0-cu130", "ml.g7e.2xlarge", "LMI619")
    named = GPT_OSS + "option.attention_backend=TRITON_ATTN\n"
    assert not findings(named, "0.36.0-lmi27.0.0-cu130", "ml.g7e.2xlarge", "LMI619")


def test_attention_sinks_on_vllm_0_10_flash_attention_need_hopper() -> None:
    # 0.10.2 asserts FlashAttention 3 for sinks (v1 flash_attn.py#L416) and runs FA3 on Hopper only;
    # its default selection takes Triton for sinks below Hopper (cuda.py 'has_sink and not ...(90)')
    text = GPT_OSS + "option.env=VLLM_ATTENTION_BACKEND=FLASH_ATTN\n"
    [finding] = findings(text, "0.34.0", "ml.g5.2xlarge", "LMI619")
    assert "'Sinks are only supported in FlashAttention 3'" in finding.message
    assert VLLM + "v0.10.2/vllm/v1/attention/backends/flash_attn.py#L416" in finding.message
    assert not findings(text, "0.34.0", "ml.p5.4xlarge", "LMI619")
    assert not findings(GPT_OSS, "0.34.0", "ml.g5.2xlarge", "LMI619")


SINK_BACKEND = """
from vllm.attention.utils.fa_utils import flash_attn_supports_sinks

class FlashInferBackend(AttentionBackend):
    @staticmethod
    def get_name() -> str:
        return "FLASHINFER"

    @staticmethod
    def get_impl_cls():
        return FlashInferImpl

    @classmethod
    def supports_sink(cls) -> bool:
        from vllm.utils.flashinfer import supports_trtllm_attention
        if force_use_trtllm_attention() is False:
            return False
        return supports_trtllm_attention()


class FlashInferImpl(AttentionImpl):
    def __init__(self, num_heads, head_size):
        pass
"""
FLASHINFER_UTILS = """
def supports_trtllm_attention() -> bool:
    if envs.VLLM_BATCH_INVARIANT:
        return False
    return current_platform.is_device_capability_family(100) and has_nvidia_artifactory()
"""
FA_UTILS = """
def get_flash_attn_version(requires_alibi: bool = False):
    if current_platform.is_xpu():
        return 2
    try:
        device_capability = current_platform.get_device_capability()
        fa_version = 3 if (device_capability.major == 9 and is_fa_version_supported(3)) else 2
        if envs.VLLM_FLASH_ATTN_VERSION is not None:
            fa_version = envs.VLLM_FLASH_ATTN_VERSION
        if requires_alibi and fa_version == 3:
            fa_version = 2
        return fa_version
    except (ImportError, AssertionError):
        return None
"""


def test_the_reader_turns_supports_sink_and_the_flash_attention_version_into_expressions() -> None:
    from lmi_config.knowledge.attention_backends import UNKNOWN, AttentionRelease, evaluate_rule

    sources = {
        "vllm/v1/attention/backends/flashinfer.py": SINK_BACKEND,
        "vllm/utils/flashinfer.py": FLASHINFER_UTILS,
        "vllm/attention/utils/fa_utils.py": FA_UTILS,
        "vllm/attention/selector.py": SELECTOR,
    }
    checks, _ = read_checks(sources)
    facts = read_attention(sources, "9.9.9", checks)
    rule = facts["backends"]["v1/flashinfer"]["sink_rule"]
    # the calls inlined to the GPU's capability; the network look-up and the config read stay unknown
    assert evaluate_rule(rule, {"capability": 120}) is False
    assert evaluate_rule(rule, {"capability": 100}) is UNKNOWN
    release = AttentionRelease("9.9.9", "9.9.9", "selector", {"source": "x"}, {}, frozenset(), None,
                               flash_attn_version=facts["flash_attn_version"])  # fmt: skip
    hopper = {"major": 9, "capability": 90, "requires_alibi": False, "fa3_supported": "major == 9"}
    assert release.fa_version(hopper) == 3
    assert release.fa_version({**hopper, "env_VLLM_FLASH_ATTN_VERSION": 2}) == 2
    assert release.fa_version({**hopper, "requires_alibi": True}) == 2
    assert release.fa_version({**hopper, "major": 8, "capability": 86}) == 2


BLOOM = "option.model_id=bigscience/bloom-560m\noption.rolling_batch=vllm\noption.dtype=fp16\noption.max_model_len=2048\n"
FALCON = str(ROOT / "tests" / "fixtures" / "models" / "falcon-7b")


def test_alibi_on_flex_attention_is_refused() -> None:
    # BLOOM's attention layers always pass ALiBi slopes (bloom.py); 0.10.2 takes FlexAttention on a T4,
    # which refuses them (flex_attention.py#L640); an A10G gets FlashAttention, which takes them
    [finding] = findings(BLOOM, "0.34.0", "ml.g4dn.xlarge", "LMI619")
    assert "'FlexAttention does not support alibi slopes yet.'" in finding.message
    assert VLLM + "v0.10.2/vllm/v1/attention/backends/flex_attention.py#L640" in finding.message
    assert not findings(BLOOM, "0.34.0", "ml.g5.2xlarge", "LMI619")
    # Falcon passes them only with config.json alibi: true (falcon.py), which the facts do not read: no error
    falcon = "option.model_id=tiiuae/falcon-7b\noption.rolling_batch=vllm\noption.dtype=fp16\noption.max_model_len=2048\n"
    assert not findings(falcon, "0.34.0", "ml.g4dn.xlarge", "LMI619", FALCON)


def test_the_backend_variable_counts_only_where_the_release_reads_it() -> None:
    # VLLM_ATTENTION_BACKEND is read until 0.14 (0.12: attention/selector.py); 0.15.1's envs.py no longer
    # has it and only option.attention_backend names a backend, so a name in the variable stops nothing there
    text = LLAMA + "option.env=VLLM_ATTENTION_BACKEND=FLASH_ATTENTION\n"
    assert findings(text, "0.36.0-lmi18.0.0-cu128", "ml.g5.2xlarge", "LMI621")
    assert not findings(text, "0.36.0-lmi20.0.0-cu128", "ml.g5.2xlarge", "LMI621")
