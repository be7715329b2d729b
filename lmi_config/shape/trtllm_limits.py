"""The judge's verdict on TensorRT-LLM's engine-build limits against what the configuration promises.

From LMI 0.33 djl-serving builds the engine itself (``serving/docker/partition/trt_llm_partition.py``):
it copies ``max_rolling_batch_size`` over ``max_batch_size``, hands TensorRT-LLM's ``BuildConfig`` only
the build arguments it lists (``max_input_len``, ``max_seq_len``, ``max_num_tokens`` …), and the
defaults come from ``trt_properties.py`` (``max_input_len`` 1024) and the Java recommender
(``max_num_tokens`` 16384). The facts are generated per release (``knowledge/engine_support.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lmi_config.knowledge.engine_support import TrtllmBuild, trtllm_build
from lmi_config.shape.problems import Problem

if TYPE_CHECKING:
    from lmi_config.configfile.canonical import CanonicalConfig
    from lmi_config.shape.dimensions import Target

REPLACED = "trtllm-setting-replaced"
EXCEEDS = "trtllm-input-exceeds-engine"
HEAD_SIZE = "attention-head-size-unsupported"
_FOUR_BYTE_DTYPES = ("fp32", "float32")


def _integer(config: CanonicalConfig, key: str) -> int | None:
    text = (config.get(key) or "").strip()
    return int(text) if text.isdigit() else None


def _max_seq_len(config: CanonicalConfig, target: Target) -> tuple[int | None, str]:
    """The engine's max_seq_len and where it comes from: option.max_seq_len, else the model's positions."""
    written = _integer(config, "option.max_seq_len")
    if written is not None:
        return written, "option.max_seq_len"
    positions = target.arch.max_position_embeddings if target.arch is not None else None
    return positions, "the model's max_position_embeddings (TensorRT-LLM's default max_seq_len)"


def judge_trtllm_limits(config: CanonicalConfig, target: Target, batch_size: int | None) -> list[Problem]:
    """Settings the build replaces or ignores (warnings), and a max_input_len the engine cannot take (error)."""
    if target.backend != "tensorrt-llm":
        return []
    build = trtllm_build(target.release.djl)
    head_size = _head_size(config, target)
    if build is None:
        return head_size
    return [
        *head_size,
        *_replaced(config, build, batch_size),
        *_ignored_output_length(config, target, build),
        *_input_beyond_sequence(config, target, build),
    ]


def trtllm_version(target: Target) -> str | None:
    """The TensorRT-LLM version the image of the release pins (None: not known)."""
    from lmi_config.knowledge import backends
    from lmi_config.knowledge.image_support import image_of, pins_at

    backend = backends().get(target.backend)
    image = image_of(backend, target.release, None) if backend is not None else None
    pins = pins_at(image, target.release) if image else None
    return pins.pinned("tensorrt-llm", target.backend) if pins else None


def _head_size(config: CanonicalConfig, target: Target) -> list[Problem]:
    """A head size the attention kernels of the image's TensorRT-LLM cannot vectorise: they update the
    KV cache in vectors of 8 elements (4 in float32) and stop with 'Size per head is not a multiple of
    X' (unfusedAttentionKernels_2.cu) while the engine is built or first run."""
    from lmi_config.knowledge.attention_backends import trtllm_attention

    version = trtllm_version(target)
    facts = trtllm_attention(version)
    arch = target.arch
    if facts is None or arch is None or not arch.head_dim:
        return []
    dtype = (config.get("option.dtype") or "fp16").strip().lower()
    size = 4 if dtype in _FOUR_BYTE_DTYPES else 2
    refusing = [check for check in facts.head_size if arch.head_dim % check.multiple[size]]
    if not refusing:
        return []
    check, multiple = refusing[0], refusing[0].multiple[size]
    padded = -(-arch.head_dim // multiple) * multiple
    message = (
        f"the model's head size is {arch.head_dim} (config.json head_dim, else hidden_size / num_attention_heads), "
        f"not a multiple of {multiple}: TensorRT-LLM {version}'s attention kernels (LMI {target.release.label()}) "
        f"update the KV cache in vectors of {multiple} {dtype} elements and stop with '{check.message}' "
        f"({check.source}) — a model whose head size is a multiple of {multiple} (this one padded to {padded}), or "
        "another backend"
    )
    return [Problem(HEAD_SIZE, "error", message, "option.model_id")]


def _replaced(config: CanonicalConfig, build: TrtllmBuild, batch_size: int | None) -> list[Problem]:
    problems = []
    for name, by in build.replaced.items():
        key, written = f"option.{name}", _integer(config, f"option.{name}")
        effective = _integer(config, f"option.{by.value}") or (
            batch_size if by.value == "max_rolling_batch_size" else None
        )
        if written is None or effective is None or written == effective:
            continue
        message = (
            f"{key}={written} is replaced before the TensorRT-LLM build of LMI {build.release}: djl-serving copies "
            f"option.{by.value} over it, so the engine is built for {name}={effective} — set option.{by.value}={written} "
            f"instead"
        )
        problems.append(Problem(REPLACED, "warning", message, key))
    return problems


def _ignored_output_length(config: CanonicalConfig, target: Target, build: TrtllmBuild) -> list[Problem]:
    written = _integer(config, "option.max_output_len")
    if written is None or "max_output_len" in build.build_arguments:
        return []
    length, origin = _max_seq_len(config, target)
    effective = f"max_seq_len={length} ({origin})" if length else f"max_seq_len from {origin}"
    message = (
        f"option.max_output_len={written} does not reach the TensorRT-LLM build of LMI {build.release} (not a "
        f"BuildConfig argument of djl-serving's trt_llm_partition.py; the user guide says it maps to max_seq_len — "
        f"the code and the guide disagree): the engine is built with {effective} — set option.max_seq_len to the "
        "longest prompt plus output you serve"
    )
    return [Problem(REPLACED, "warning", message, "option.max_output_len")]


def _input_beyond_sequence(config: CanonicalConfig, target: Target, build: TrtllmBuild) -> list[Problem]:
    # only a written max_input_len is a promise: djl-serving's own CI builds gpt2 (1024 positions) with the
    # default max_input_len 1024 and serves it
    max_input_len = _integer(config, "option.max_input_len")
    length, origin = _max_seq_len(config, target)
    if max_input_len is None or length is None or max_input_len <= length:
        return []
    message = (
        f"option.max_input_len={max_input_len} is above the engine's max_seq_len={length} ({origin}): prompts "
        f"longer than {length} tokens cannot be served, because TensorRT-LLM refuses a request whose prompt plus "
        f"output exceed max_seq_len — set option.max_seq_len above {max_input_len} (prompt plus output), or lower "
        "option.max_input_len"
    )
    return [Problem(EXCEEDS, "error", message, "option.max_input_len")]
