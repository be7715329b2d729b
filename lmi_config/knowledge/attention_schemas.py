"""Schemas of the attention facts beside vllm_attention.json: the steps of vLLM's
``get_flash_attn_version`` (scripts/vllm_attention_reader.py), the FlashAttention builds each vLLM release
compiles (vllm_flash_attn.json, scripts/gen_vllm_flash_attn.py) and TensorRT-LLM's attention kernels'
limits (trtllm_attention.json, scripts/gen_trtllm_attention.py)."""

from __future__ import annotations

from pydantic import Field

from lmi_config.knowledge.schema_base import Sourced, Strict

_VLLM_LINE = r"^https://github\.com/vllm-project/vllm/blob/v[\w.]+/\S+#L\d+$"
_FLASH_ATTENTION_LINE = r"^https://github\.com/vllm-project/flash-attention/blob/[0-9a-f]{40}/\S+#L\d+$"
_TRTLLM_LINE = r"^https://github\.com/\S+/TensorRT-LLM\S*/blob/\S+#L\d+$"


class FlashAttnVersionStep(Strict):
    """One assignment (or return) of the version in get_flash_attn_version, with its conditions."""

    when: str = Field(min_length=1)
    value: str = Field(min_length=1)
    returns: bool
    line: int = Field(ge=1)


class FlashAttnVersionSteps(Strict):
    steps: list[FlashAttnVersionStep]
    source: str = Field(pattern=_VLLM_LINE)


class FlashAttnRefusal(Strict):
    message: str = Field(min_length=5)
    source: str = Field(pattern=_FLASH_ATTENTION_LINE)


class FlashAttnBuild(Strict):
    supported: str = Field(min_length=1)
    supported_source: str = Field(pattern=_FLASH_ATTENTION_LINE)
    disabled: list[str]
    refuses: dict[str, FlashAttnRefusal]
    source: str = Field(pattern=_FLASH_ATTENTION_LINE)


class FlashAttnVersion(Strict):
    """One pinned vLLM version: the flash-attention commit its CMake files pin and its builds."""

    read_from: str
    commit: str | None = Field(pattern=r"^[0-9a-f]{40}$")
    commit_source: str | None = Field(default=None, pattern=_VLLM_LINE)
    builds: dict[str, FlashAttnBuild] | None = None
    unread: str | None = Field(default=None, min_length=20)


class VllmFlashAttnFile(Sourced):
    versions: dict[str, FlashAttnVersion]


class TrtllmHeadSizeCheck(Strict):
    """A head-size check of the attention kernels: the multiple per byte size of the compute type."""

    multiple: dict[str, int]
    message: str = Field(min_length=5)
    source: str = Field(pattern=_TRTLLM_LINE)


class TrtllmFusedAttention(Strict):
    capabilities: list[int] = Field(min_length=1)
    message: str
    source: str = Field(pattern=_TRTLLM_LINE)
    falls_back: bool
    falls_back_source: str | None = Field(pattern=_TRTLLM_LINE)


class TrtllmAttentionVersion(Strict):
    """One TensorRT-LLM release an LMI image pins: read from its branch, or unread with the reason."""

    branch: str | None = None
    commit: str | None = Field(default=None, pattern=r"^[0-9a-f]{40}$")
    head_size: list[TrtllmHeadSizeCheck] | None = None
    fused_attention: TrtllmFusedAttention | None = None
    unread: str | None = Field(default=None, min_length=20)


class TrtllmAttentionFile(Sourced):
    versions: dict[str, TrtllmAttentionVersion]
