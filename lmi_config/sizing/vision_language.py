"""The parameters a vision-language checkpoint holds besides its text model: the vision tower, the
projector into the text model, and what the text model adds for images (Llama-3.2-Vision's
cross-attention norms and gates, its image-token embedding rows), from config.json's ``vision_config``
and ``text_config``.

The layouts are those of the transformers classes the checkpoints load into: ``MllamaVisionModel``,
``CLIPVisionModel`` and ``SiglipVisionModel`` (LLaVA, Gemma 3), ``Qwen2VisionTransformer`` (Qwen2-VL)
and ``Qwen2_5_VisionTransformer`` (Qwen2.5-VL). A checkpoint with a ``vision_config`` of another layout
is *not covered*: the memory model then says it does not estimate it, rather than counting its text
model alone. Pure arithmetic on plain dicts (no lmi_config import), so modelarch can use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple


class VisionLanguageParams(NamedTuple):
    """What a vision-language checkpoint adds to its text model, by part."""

    layout: str  # mllama | llava (clip / siglip tower) | gemma3 | qwen2_vl | qwen2_5_vl
    vision: int
    projector: int
    text_extra: int

    @property
    def total(self) -> int:
        return self.vision + self.projector + self.text_extra


class NotCovered(NamedTuple):
    """A vision-language checkpoint whose layout the formulas do not describe, and why."""

    reason: str


def _count(config: Mapping[str, Any], *names: str, default: int | None = None) -> int:
    for name in names:
        value = config.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    if default is None:
        raise KeyError(names[0])
    return default


def vision_language_params(config: Mapping[str, Any]) -> VisionLanguageParams | NotCovered | None:
    """The extra parameters of a vision-language ``config.json``; None for a config without a vision
    tower; :class:`NotCovered` for a vision layout the formulas do not describe."""
    vision = config.get("vision_config")
    if not isinstance(vision, Mapping):
        return None
    model_type = str(config.get("model_type") or "")
    nested = config.get("text_config")
    text: Mapping[str, Any] = nested if isinstance(nested, Mapping) else config
    builder = _LAYOUTS.get(model_type)
    if builder is None:
        return NotCovered(
            f"the {model_type or 'unnamed'} vision tower and projector are not in the parameter formula"
        )
    try:
        return builder(vision, text, config)
    except KeyError as missing:
        return NotCovered(
            f"the {model_type} vision_config lacks {missing.args[0]}, which the parameter formula needs"
        )


# --- towers ----------------------------------------------------------------------------------------


def _encoder_layer(width: int, inner: int) -> int:
    """A ViT encoder layer with biases: q, k, v, o; fc1, fc2; two LayerNorms."""
    return 4 * (width * width + width) + 2 * width * inner + inner + width + 4 * width


def _clip(vision: Mapping[str, Any]) -> int:
    width, inner = _count(vision, "hidden_size"), _count(vision, "intermediate_size")
    patch, image = _count(vision, "patch_size"), _count(vision, "image_size")
    channels, layers = _count(vision, "num_channels", default=3), _count(vision, "num_hidden_layers")
    positions = (image // patch) ** 2 + 1
    embeddings = (
        width + channels * patch * patch * width + positions * width
    )  # class token, patches (no bias)
    return embeddings + 2 * width + layers * _encoder_layer(width, inner) + 2 * width  # pre- and post-norm


def _siglip(vision: Mapping[str, Any]) -> int:
    width, inner = _count(vision, "hidden_size"), _count(vision, "intermediate_size")
    patch, image = _count(vision, "patch_size"), _count(vision, "image_size")
    channels, layers = _count(vision, "num_channels", default=3), _count(vision, "num_hidden_layers")
    embeddings = channels * patch * patch * width + width + (image // patch) ** 2 * width  # patches with bias
    total = embeddings + layers * _encoder_layer(width, inner) + 2 * width  # post-norm
    if vision.get("vision_use_head", True):  # the attention-pooling head SiglipVisionModel adds by default
        total += width + 3 * width * width + 3 * width + width * width + width + 2 * width
        total += 2 * width * inner + inner + width
    return total


def _tower(vision: Mapping[str, Any]) -> int:
    kind = str(vision.get("model_type") or "")
    if kind in ("clip_vision_model", "clip"):
        return _clip(vision)
    if kind in ("siglip_vision_model", "siglip"):
        return _siglip(vision)
    raise KeyError(f"a known vision tower (model_type {kind or 'absent'})")


# --- layouts ---------------------------------------------------------------------------------------


def _mllama(
    vision: Mapping[str, Any], text: Mapping[str, Any], config: Mapping[str, Any]
) -> VisionLanguageParams:
    width, inner = _count(vision, "hidden_size"), _count(vision, "intermediate_size")
    patch, image = _count(vision, "patch_size"), _count(vision, "image_size")
    channels, tiles = _count(vision, "num_channels", default=3), _count(vision, "max_num_tiles")
    ratios = len(vision.get("supported_aspect_ratios") or []) + 1  # embedding rows: one per ratio id, and 0
    positions = (image // patch) ** 2 + 1
    embeddings = (
        channels * patch * patch * width + width + positions * width + 1
    )  # patches, class, gated positions
    embeddings += ratios * tiles * positions * width  # the tile-position embedding
    embeddings += 2 * (ratios * tiles * width + 1)  # pre- and post-tile aspect-ratio embeddings, gated
    layer = 4 * width * width + 2 * width * inner + inner + width + 4 * width  # attention without biases
    local, global_ = _count(vision, "num_hidden_layers"), _count(vision, "num_global_layers")
    tower = embeddings + 4 * width + local * layer + global_ * (layer + 2)  # two norms; gated global layers
    hidden = _count(text, "hidden_size")
    projector = _count(vision, "vision_output_dim") * hidden + hidden
    heads = _count(text, "num_attention_heads")
    head_dim = _count(text, "head_dim", default=hidden // heads)
    cross = len(text.get("cross_attention_layers") or [])
    extra = (
        cross * (2 * head_dim + 2) + 8 * hidden
    )  # q/k norms and two gates per cross layer; 8 image-token rows
    return VisionLanguageParams("mllama", tower, projector, extra)


def _llava(
    vision: Mapping[str, Any], text: Mapping[str, Any], config: Mapping[str, Any]
) -> VisionLanguageParams:
    width = _count(vision, "hidden_size")
    hidden = _count(text, "hidden_size")
    layers = config.get("vision_feature_layer", -2)
    inputs = width * (len(layers) if isinstance(layers, list) else 1)
    bias = 1 if config.get("multimodal_projector_bias", True) else 0
    projector = inputs * hidden + bias * hidden + hidden * hidden + bias * hidden
    newline = hidden if str(config.get("model_type")) in ("llava_next", "llava_onevision") else 0
    return VisionLanguageParams("llava", _tower(vision), projector + newline, 0)


def _gemma3(
    vision: Mapping[str, Any], text: Mapping[str, Any], config: Mapping[str, Any]
) -> VisionLanguageParams:
    width = _count(vision, "hidden_size")
    hidden = _count(text, "hidden_size")
    projector = width * hidden + width  # mm_input_projection_weight, mm_soft_emb_norm
    return VisionLanguageParams("gemma3", _siglip({**vision, "vision_use_head": False}), projector, 0)


def _qwen2_vl(
    vision: Mapping[str, Any], text: Mapping[str, Any], config: Mapping[str, Any]
) -> VisionLanguageParams:
    width = _count(vision, "embed_dim")
    inner = width * _count(vision, "mlp_ratio", default=4)
    patch, frames = _count(vision, "patch_size"), _count(vision, "temporal_patch_size", default=2)
    channels, depth = _count(vision, "in_chans", "in_channels", default=3), _count(vision, "depth")
    merged = width * _count(vision, "spatial_merge_size", default=2) ** 2
    out = _count(vision, "hidden_size")
    block = (
        4 * width + 3 * width * width + 3 * width + width * width + width + 2 * width * inner + inner + width
    )
    tower = channels * frames * patch * patch * width + depth * block
    merger = 2 * width + merged * merged + merged + merged * out + out  # LayerNorm, two linears with biases
    return VisionLanguageParams("qwen2_vl", tower, merger, 0)


def _qwen2_5_vl(
    vision: Mapping[str, Any], text: Mapping[str, Any], config: Mapping[str, Any]
) -> VisionLanguageParams:
    width, inner = _count(vision, "hidden_size"), _count(vision, "intermediate_size")
    patch, frames = _count(vision, "patch_size"), _count(vision, "temporal_patch_size", default=2)
    channels, depth = _count(vision, "in_chans", "in_channels", default=3), _count(vision, "depth")
    merged = width * _count(vision, "spatial_merge_size", default=2) ** 2
    out = _count(vision, "out_hidden_size")
    block = (
        2 * width
        + 3 * width * width
        + 3 * width
        + width * width
        + width
        + 3 * width * inner
        + 2 * inner
        + width
    )
    tower = channels * frames * patch * patch * width + depth * block
    merger = width + merged * merged + merged + merged * out + out  # RMSNorm, two linears with biases
    return VisionLanguageParams("qwen2_5_vl", tower, merger, 0)


_LAYOUTS = {
    "mllama": _mllama,
    "llava": _llava,
    "llava_next": _llava,
    "gemma3": _gemma3,
    "qwen2_vl": _qwen2_vl,
    "qwen2_5_vl": _qwen2_5_vl,
}
