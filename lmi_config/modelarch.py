"""Architecture facts of a model, from a local directory, the built-in catalog, or the Hub.

One normalizer (:func:`normalize_config`) turns any ``config.json`` — local, catalog or
Hub — into a :class:`ModelArch`, handling the naming differences between families
(``n_head``, ``num_kv_heads``, ``multi_query``, nested ``text_config``, explicit
``head_dim``). Parameter counts are exact where known (catalog, safetensors index), else
computed from the architecture.
"""

import json
import os
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from lmi_config.configfile.text import MAX_JSON_DEPTH, json_nesting_depth, shorten
from lmi_config.knowledge.models import architecture_family as _family
from lmi_config.knowledge.models import generated_catalog_row, hand_catalog_rows, type_defaults
from lmi_config.modelfields import (
    EXPERTS,
    EXPERTS_PER_TOKEN,
    HEADS,
    HIDDEN,
    INTERMEDIATE,
    LAYERS,
    POSITIONS,
    ModelResolutionError,
    ModelUnavailable,
    UnusableModelName,
    count_field,
    is_count_integer,
    key_value_heads,
    layout_not_modelled,
    rope_factor,
)


class ModelArch(NamedTuple):
    """The normalized description every size and parallelism check uses."""

    model_id: str
    model_type: str
    architectures: tuple[str, ...]
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    hidden_size: int
    num_layers: int
    intermediate_size: int
    vocab_size: int
    num_experts: int  # 0 for dense models; all experts are resident in memory
    experts_per_token: int
    moe_intermediate_size: int | None
    tie_word_embeddings: bool
    max_position_embeddings: int | None
    sliding_window: int | None
    rope_scaling: dict[str, Any] | None
    torch_dtype: str | None
    total_params: int
    params_exact: bool
    weight_bytes: int | None  # exact bytes of the checkpoint (safetensors index), if known
    source: str
    notes: tuple[str, ...] = ()
    # config.json fields that decide whether an image can load the model (rules/images.py)
    loading: Mapping[str, Any] = MappingProxyType({})
    # multi-head latent attention (DeepSeek-V2/V3): what the KV cache holds per token and layer
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    rope_scaling_factor: float | None = None  # checked finite and positive when the config sets one
    # why the memory model cannot size this model (a layout its formulas do not cover), else None:
    # memory is then not estimated rather than estimated wrong
    memory_not_estimated: str | None = None
    # config.json's attn_logit_softcapping (Gemma-2): the attention backend must cap the logits
    attn_logit_softcapping: float | None = None
    # where the dimensions come from when they are not the model's own config.json (a catalog entry
    # from a table of dimensions, a re-upload judged by the model it copies), else None: what only
    # config.json states -- the dtype, auto_map (remote code) -- is then unknown, not absent
    # (transformers' float32 default, no remote code)
    dimensions_from: str | None = None
    # where the quantization comes from when not config.json (a quantized copy's name: its -AWQ suffix)
    quantization_from: str | None = None
    # the model's config.json as written, where it is at hand (a directory, the Hub, a catalog copy of
    # it); None where the dimensions come from elsewhere: the fields a model class checks are then unknown
    config_json: Mapping[str, Any] | None = None

    @property
    def quantization_basis(self) -> str:
        """What states the checkpoint's quantization, for messages: config.json, or the name it is read from."""
        return self.quantization_from or "config.json quantization_config"

    @property
    def quantization_unknown(self) -> bool:
        """Whether the checkpoint is quantized in a way not known here (a copy whose name says -FP8 or
        -Int4 without a method): no check may take it for a full-precision checkpoint."""
        return self.quantization_from is not None and self.declared_quantization is None

    @property
    def config_verbatim(self) -> bool:
        """Whether the description is the model's own config.json (not dimensions from elsewhere)."""
        return self.dimensions_from is None

    @property
    def is_text_generation(self) -> bool:
        """The container's test: an architecture ending in ForCausalLM/LMHeadModel/ForConditionalGeneration."""
        return any(
            a.endswith(("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")) for a in self.architectures
        )

    @property
    def embedding_params(self) -> int:
        """Input embedding (+ LM head when untied)."""
        return self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)

    @property
    def declared_quantization(self) -> Any:
        """config.json's quantization_config (else compression_config) as written, if any."""
        return self.loading.get("quantization_config") or self.loading.get("compression_config")

    @property
    def modelopt_quantization(self) -> dict[str, Any] | None:
        """The ``quantization`` section of the hf_quant_config.json a ModelOpt checkpoint keeps beside
        config.json, if there is one."""
        separate = self.loading.get("hf_quant_config")
        inner = separate.get("quantization") if isinstance(separate, Mapping) else None
        return dict(inner) if isinstance(inner, Mapping) else None

    @property
    def stored_quantization(self) -> str | None:
        """The quantization the checkpoint is stored in, whatever loads it: config.json's
        ``quant_method`` (else ``quant_algo``), else the ``quant_algo`` of hf_quant_config.json; None
        for a checkpoint stored in its dtype."""
        declared = self.declared_quantization
        if isinstance(declared, Mapping):
            return (
                str(declared.get("quant_method") or declared.get("quant_algo") or "quantized").strip().lower()
            )
        algo = (self.modelopt_quantization or {}).get("quant_algo")
        return str(algo).strip().lower() if algo else None


def _first(config: dict[str, Any], *names: str) -> Any:
    for name in names:
        value = config.get(name)
        if value is not None:
            return value
    return None


def _flatten(config: dict[str, Any]) -> dict[str, Any]:
    """Merge a nested ``text_config`` (Gemma 3, Llava-style) over the top level."""
    text = config.get("text_config") or config.get("llm_config")
    if isinstance(text, dict) and _first(config, "num_attention_heads", "n_head") is None:
        merged = dict(config)
        merged.update(text)
        merged.setdefault("architectures", config.get("architectures"))
        return merged
    return config


def estimate_params(arch: dict[str, Any]) -> int:
    """Parameter count from the architecture (used when no exact count is known).

    Llama-style: embeddings + per layer (Q, K, V, O projections, gated or plain MLP per
    expert, router, norms). Families with learned positions add them. Biases are ignored
    (< 0.1 % for these models).
    """
    hidden = arch["hidden_size"]
    heads = arch["num_attention_heads"]
    kv = arch["num_key_value_heads"]
    head_dim = arch["head_dim"]
    layers = arch["num_layers"]
    experts = arch["num_experts"] or 1
    inter = (
        arch["moe_intermediate_size"]
        if arch["num_experts"] and arch["moe_intermediate_size"]
        else arch["intermediate_size"]
    )
    gated = arch["model_type"] in _family("gated_mlp")
    attention = _attention_params(arch) or hidden * heads * head_dim * 2 + hidden * kv * head_dim * 2
    per_expert = (3 if gated else 2) * hidden * inter
    mlp = per_expert * experts
    if arch["num_experts"]:
        # shared experts: DeepSeek counts them in routed-expert units, Qwen2-MoE gives their width
        mlp += per_expert * (arch.get("n_shared_experts") or 0)
        mlp += (3 if gated else 2) * hidden * (arch.get("shared_expert_intermediate_size") or 0)
    router = hidden * arch["num_experts"] if arch["num_experts"] else 0
    norms = 2 * hidden * (1 if gated else 2)
    total = arch["vocab_size"] * hidden * (1 if arch["tie_word_embeddings"] else 2)
    dense_layers = min(arch.get("first_k_dense_replace") or 0, layers) if arch["num_experts"] else 0
    dense_mlp = (3 if gated else 2) * hidden * arch["intermediate_size"]
    total += (
        layers * (attention + norms) + (layers - dense_layers) * (mlp + router) + dense_layers * dense_mlp
    )
    total += hidden
    if arch["model_type"] in _family("learned_positions") and arch["max_position_embeddings"]:
        total += arch["max_position_embeddings"] * hidden
    return int(total)


def _attention_params(arch: dict[str, Any]) -> int:
    """Multi-head latent attention's projections (DeepSeek-V2/V3); 0 for other attention."""
    rank = arch.get("kv_lora_rank")
    if not rank:
        return 0
    hidden, heads = arch["hidden_size"], arch["num_attention_heads"]
    nope, rope = arch.get("qk_nope_head_dim") or 0, arch.get("qk_rope_head_dim") or 0
    value = arch.get("v_head_dim") or nope
    q_rank = arch.get("q_lora_rank")
    query = hidden * q_rank + q_rank * heads * (nope + rope) if q_rank else hidden * heads * (nope + rope)
    return query + hidden * (rank + rope) + rank * heads * (nope + value) + heads * value * hidden


def normalize_config(
    raw: dict[str, Any],
    *,
    model_id: str,
    source: str,
    total_params: int | None = None,
    weight_bytes: int | None = None,
    memory_not_estimated: str | None = None,
    hf_quant_config: Mapping[str, Any] | None = None,
) -> ModelArch:
    """Turn a Hugging Face ``config.json`` dict into a :class:`ModelArch`.

    ``memory_not_estimated``: a reason the caller knows (the generated catalog's); a layout the
    formulas do not cover is found here for any source. ``hf_quant_config``: the
    ``hf_quant_config.json`` a ModelOpt checkpoint keeps beside ``config.json`` (ModelOpt 0.29 and
    older), which vLLM reads as the quantization config when config.json has none."""
    config = _flatten(raw)
    model_type = str(config.get("model_type") or "unknown")
    defaults = type_defaults(model_type)
    if defaults:
        config = {**defaults["values"], **{key: value for key, value in config.items() if value is not None}}
    where = source if source.endswith("config.json") else f"{shorten(model_id, 100)} ({shorten(source, 200)})"
    heads = count_field(config, HEADS, where=where, required=True) or 1
    hidden = count_field(config, HIDDEN, where=where, required=True) or 1
    layers = count_field(config, LAYERS, where=where, required=True) or 1
    notes: list[str] = []
    kv = key_value_heads(config, model_type, heads, where, notes)
    head_dim = count_field(config, ("head_dim",), where=where) or max(1, hidden // heads)
    intermediate = count_field(config, INTERMEDIATE, where=where) or 4 * hidden
    experts = count_field(config, EXPERTS, where=where, minimum=0) or 0
    per_token = count_field(config, EXPERTS_PER_TOKEN, where=where, minimum=0) or 0
    max_positions = count_field(config, POSITIONS, where=where)
    vocab = count_field(config, ("vocab_size", "padded_vocab_size"), where=where) or 32000
    moe_intermediate = count_field(config, ("moe_intermediate_size",), where=where)
    tie = config.get("tie_word_embeddings")
    if tie is None:
        tie = raw.get("tie_word_embeddings", True)  # PretrainedConfig's default
    rope = config.get("rope_scaling")
    factor = rope_factor(config, where, max_positions)
    arch: dict[str, Any] = {
        "hidden_size": int(hidden),
        "num_attention_heads": int(heads),
        "num_key_value_heads": int(kv),
        "head_dim": int(head_dim),
        "num_layers": int(layers),
        "intermediate_size": int(intermediate),
        "num_experts": experts,
        "moe_intermediate_size": moe_intermediate,
        "vocab_size": vocab,
        "tie_word_embeddings": bool(tie),
        "max_position_embeddings": max_positions,
        "model_type": model_type,
    }
    for name in (
        "kv_lora_rank",
        "q_lora_rank",
        "qk_rope_head_dim",
        "qk_nope_head_dim",
        "v_head_dim",
        "n_shared_experts",
        "shared_expert_intermediate_size",
        "first_k_dense_replace",
    ):
        arch[name] = count_field(config, (name,), where=where, minimum=0)
    exact = total_params is not None
    params = int(total_params) if total_params else estimate_params(arch)
    not_covered = None
    if not total_params:
        # a vision-language checkpoint: its vision tower, projector and cross-attention extras count too
        from lmi_config.sizing.vision_language import NotCovered, vision_language_params

        vision = vision_language_params(raw)
        if isinstance(vision, NotCovered):
            not_covered = vision.reason
        elif vision is not None:
            params += vision.total
    cap: Any = config.get("attn_logit_softcapping")
    soft_cap = float(cap) if is_count_integer(cap) or (isinstance(cap, float) and 0 < cap < 1e6) else None
    window: Any = config.get("sliding_window")
    # null, false or 0 mean no sliding window
    sliding: int | None = None
    if is_count_integer(window) and window > 0 and config.get("use_sliding_window") is not False:
        sliding = int(window)
    return ModelArch(
        model_id=model_id,
        model_type=model_type,
        architectures=tuple(config.get("architectures") or ()),
        num_attention_heads=arch["num_attention_heads"],
        num_key_value_heads=arch["num_key_value_heads"],
        head_dim=arch["head_dim"],
        hidden_size=arch["hidden_size"],
        num_layers=arch["num_layers"],
        intermediate_size=arch["intermediate_size"],
        vocab_size=arch["vocab_size"],
        num_experts=experts,
        experts_per_token=per_token,
        moe_intermediate_size=arch["moe_intermediate_size"],
        tie_word_embeddings=arch["tie_word_embeddings"],
        max_position_embeddings=arch["max_position_embeddings"],
        sliding_window=sliding,
        rope_scaling=rope if isinstance(rope, dict) else None,
        rope_scaling_factor=factor,
        torch_dtype=str(_first(config, "torch_dtype", "dtype") or "") or None,
        total_params=params,
        params_exact=exact,
        weight_bytes=weight_bytes,
        source=source,
        notes=tuple(notes),
        loading={
            key: raw[key]
            for key in (
                "model_type",
                "transformers_version",
                "auto_map",
                "neuron",
                "quantization_config",
                "compression_config",
            )
            if key in raw
        }
        | ({"hf_quant_config": dict(hf_quant_config)} if isinstance(hf_quant_config, Mapping) else {}),
        kv_lora_rank=arch["kv_lora_rank"] or None,
        qk_rope_head_dim=arch["qk_rope_head_dim"] or None,
        qk_nope_head_dim=arch["qk_nope_head_dim"] or None,
        memory_not_estimated=memory_not_estimated or layout_not_modelled(config) or not_covered,
        attn_logit_softcapping=soft_cap,
        config_json=dict(raw),
    )


@cache
def _catalog_index() -> dict[str, dict[str, Any]]:
    """The hand-curated rows by lower-case id, alias and last path part; the first row to name one
    wins (the generated rows are indexed so in the data cache, generated_catalog_row)."""
    index: dict[str, dict[str, Any]] = {}
    for row in hand_catalog_rows():
        for name in [row["model_id"], *row.get("aliases", [])]:
            index.setdefault(name.lower(), row)
            index.setdefault(name.lower().split("/")[-1], row)
    return index


def from_catalog(model_id: str) -> ModelArch | None:
    """The catalog entry for a Hub id (or its last path part), else None.

    A full id is looked up in the hand-curated catalog, then in the generated one (read only then);
    a last path part only when no full id matches."""
    wanted = model_id.strip().rstrip("/").lower()
    short = wanted.split("/")[-1]
    row = (
        _catalog_index().get(wanted)
        or generated_catalog_row(wanted)
        or _catalog_index().get(short)
        or generated_catalog_row(short)
    )
    if row is None:
        return None
    arch = normalize_config(
        row["config"],
        model_id=row["model_id"],
        source=f"built-in catalog ({row['source']})",
        total_params=row.get("total_params"),
        memory_not_estimated=row.get("memory_not_estimated"),
        hf_quant_config=row.get("hf_quant_config"),
    )
    if row.get("config_verbatim", True):
        return arch
    return arch._replace(
        dimensions_from="its catalog entry gives its dimensions, not its config.json", config_json=None
    )


def read_json_file(path: Path, what: str) -> Any:
    """A JSON file read through the bounded reader, its nesting checked before parsing.

    Every failure is a :class:`ModelResolutionError` naming the file.
    """
    from lmi_config.io import InputError, read_bounded

    try:
        text = read_bounded(path).decode("utf-8")
    except InputError as error:
        raise ModelResolutionError(f"cannot read {what}: {error}") from None
    except UnicodeDecodeError as error:
        raise ModelResolutionError(
            f"{path}: cannot read {what} (not UTF-8 text at byte {error.start})"
        ) from None
    depth = json_nesting_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise ModelResolutionError(
            f"{path}: {what} is nested {depth} levels deep (at most {MAX_JSON_DEPTH} are read)"
        )
    try:
        return json.loads(text)
    except ValueError as error:  # JSONDecodeError, or an integer of more than 4300 digits
        raise ModelResolutionError(f"{path}: cannot read {what} ({shorten(str(error), 200)})") from None


def from_directory(directory: Path) -> ModelArch:
    """A local model directory: ``config.json`` plus the safetensors index for exact bytes."""
    config_path = directory / "config.json"
    if not os.path.lexists(config_path):
        raise ModelResolutionError(f"{directory}: no config.json in this directory")
    raw = read_json_file(config_path, "config.json")
    if not isinstance(raw, dict):
        raise ModelResolutionError(f"{config_path}: config.json is not a JSON object")
    weight_bytes = None
    index_path = directory / "model.safetensors.index.json"
    if index_path.exists():
        try:
            index = read_json_file(index_path, "the safetensors index")
            total = index["metadata"]["total_size"]
            weight_bytes = int(total) if is_count_integer(total) and total > 0 else None
        except (ModelResolutionError, KeyError, TypeError):
            weight_bytes = None  # the exact size is a refinement; the architecture still gives one
    quant_path = directory / "hf_quant_config.json"
    quant = None
    if quant_path.is_file():
        quant = read_json_file(quant_path, "hf_quant_config.json")
        if not isinstance(quant, dict):
            raise ModelResolutionError(f"{quant_path}: hf_quant_config.json is not a JSON object")
    name = str(raw.get("_name_or_path") or directory.name)
    catalog = from_catalog(name) if name else None
    return normalize_config(
        raw,
        model_id=str(directory),
        source=f"{config_path}",
        total_params=catalog.total_params
        if catalog and catalog.num_layers == raw.get("num_hidden_layers")
        else None,
        weight_bytes=weight_bytes,
        hf_quant_config=quant,
    )


def hub_cache_path(model_id: str) -> Path:
    """Where a Hub look-up is cached (``$XDG_CACHE_HOME/lmi-config/hub/<org>--<name>.json``)."""
    import os

    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "lmi-config" / "hub" / (model_id.replace("/", "--") + ".json")


def from_hub(model_id: str) -> ModelArch:
    """The Hugging Face Hub: ``AutoConfig`` for the architecture and the safetensors metadata for
    the exact parameter count; both cached so a model is looked up once."""
    cache = hub_cache_path(model_id)
    if _exists(cache):
        try:
            cached = read_json_file(cache, "the Hub cache entry")
            if "hf_quant_config" not in cached:  # an entry written before the file was looked up
                cached["hf_quant_config"] = _fetch_hub_quant_config(model_id)
                _write_hub_cache(cache, cached)
            return normalize_config(
                cached["config"],
                model_id=model_id,
                source=f"Hugging Face Hub config of {model_id} (cached in {cache})",
                total_params=cached.get("total_params"),
                hf_quant_config=cached.get("hf_quant_config"),
            )
        except (ValueError, KeyError, TypeError):
            pass  # a damaged cache entry (ModelResolutionError included) is fetched again
    config_dict = _fetch_hub_config(model_id)
    total_params = _fetch_hub_parameter_count(model_id)
    quant = _fetch_hub_quant_config(model_id)
    arch = normalize_config(
        config_dict,
        model_id=model_id,
        source=f"Hugging Face Hub config of {model_id}",
        total_params=total_params,
        hf_quant_config=quant,
    )
    _write_hub_cache(cache, {"config": config_dict, "total_params": total_params, "hf_quant_config": quant})
    return arch


def _write_hub_cache(cache: Path, entry: dict[str, Any]) -> None:
    from lmi_config.io import OutputError, write_atomically

    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(cache, json.dumps(entry, sort_keys=True))
    except (OSError, OutputError):
        pass  # caching is an optimisation


def _fetch_hub_quant_config(model_id: str) -> dict[str, Any] | None:
    """The ``hf_quant_config.json`` a ModelOpt checkpoint keeps beside config.json (ModelOpt 0.29 and
    older), or None: absent, offline or unreadable (the checkpoint is then judged by config.json)."""
    try:
        from huggingface_hub import hf_hub_download

        path = hf_hub_download(model_id, "hf_quant_config.json")
        found = read_json_file(Path(path), "hf_quant_config.json")
    except Exception:  # not there (most checkpoints), offline, gated
        return None
    return found if isinstance(found, dict) else None


def _fetch_hub_parameter_count(model_id: str) -> int | None:
    try:
        from huggingface_hub import get_safetensors_metadata

        metadata = get_safetensors_metadata(model_id)
        return int(sum(metadata.parameter_count.values()))
    except Exception:  # no safetensors, offline, gated: the count is computed from the config instead
        return None


def _fetch_hub_config(model_id: str) -> dict[str, Any]:
    import os

    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # one clear message, not library advisories
    try:
        from transformers import AutoConfig  # heavy: only on this path
    except ImportError:
        raise ModelUnavailable(
            f"{model_id} is not in the built-in catalog and transformers is not installed; "
            "install lmi-config[hub], pass --model with a local directory holding config.json, "
            "or run `lmi-config models` for the catalog"
        ) from None
    try:
        config = AutoConfig.from_pretrained(model_id)
    except Exception as error:  # offline, gated, missing: all one message for the user
        reason = str(error).splitlines()[0][:200]
        raise ModelUnavailable(
            f"cannot read the config of {model_id} from the Hub ({reason}); for a gated model set HF_TOKEN, "
            "offline pass --model with a local directory holding config.json"
        ) from None
    return dict(json.loads(config.to_json_string(use_diff=False)))


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):  # a name too long for a path, or holding a NUL
        return False


def _is_directory(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


# a Hugging Face repository id: [namespace/]name, each at most 96 characters
_HUB_ID = re.compile(r"(?:[A-Za-z0-9][\w.\-]{0,95}/)?[A-Za-z0-9][\w.\-]{0,95}")


def resolve_model(model: str, *, base_directory: Path | None = None, allow_hub: bool = True) -> ModelArch:
    """A local directory, else the catalog, else the Hub (when allowed)."""
    candidate = Path(model)
    if not _is_absolute(candidate) and base_directory is not None and _is_directory(base_directory / model):
        candidate = base_directory / model
    if _is_directory(candidate):
        return from_directory(candidate)
    found = from_catalog(model)
    if found is not None:
        return found
    shown = shorten(model, 100)
    if not model.startswith(("s3://", "djl://", "/", ".")) and not _HUB_ID.fullmatch(model.strip()):
        raise UnusableModelName(
            f"{shown} is neither a local directory, a catalog id nor a Hugging Face model id (namespace/name, "
            "at most 96 characters each)"
        )
    if model.startswith(("s3://", "djl://", "/")):
        raise ModelUnavailable(
            f"{shown} is not a local directory and not in the catalog; pass --model with a Hub id or a "
            "local directory holding config.json"
        )
    if not allow_hub:
        copy = reupload_of(model) or quantized_copy_of(model)
        if copy is not None:
            return copy
        raise ModelUnavailable(f"{shown} is not in the built-in catalog (Hub look-ups are off)")
    return from_hub(model.strip())


# what a re-upload appends to the name it copies: a dtype or the "-hf" of a converted checkpoint
# (TheBloke/Llama-2-13B-fp16 is meta-llama/Llama-2-13b-hf in float16); a quantized copy's suffix is
# not here, its weights are not the base model's (knowledge.models.quantized_copy_base)
_REUPLOAD_SUFFIX = re.compile(r"-(?:fp16|bf16|fp32|f16|float16|bfloat16|hf)$")


def reupload_of(model_id: str) -> ModelArch | None:
    """A Hub id whose name is a catalog model's name with a re-upload suffix (``-fp16``, ``-hf``),
    under another organisation: that model's dimensions, under this id. An inference from the name,
    so what only the copy's own config.json states (its dtype, remote code) stays unknown; None when
    the name repeats no catalog model."""
    wanted = model_id.strip().rstrip("/")
    if "/" not in wanted or not _HUB_ID.fullmatch(wanted):
        return None
    owner, name = wanted.lower().rsplit("/", 1)
    stem = _REUPLOAD_SUFFIX.sub("", name)
    if stem == name:
        return None
    for candidate in (stem, f"{stem}-hf"):
        base = from_catalog(candidate)
        if base is not None and base.model_id.lower().split("/")[0] != owner:
            inferred = (
                f"the dimensions of {base.model_id}, whose name {wanted} repeats with a re-upload suffix "
                "(inferred from the name: check with --model or --hub)"
            )
            return _judged_as(base, wanted, inferred)
    return None


def _judged_as(base: ModelArch, model_id: str, inferred: str, **changes: Any) -> ModelArch:
    """``base``'s description under a copy's id: its dimensions inferred from the name, the copy's own
    config.json (its dtype, remote code, the fields a model class checks) not read."""
    return base._replace(
        model_id=model_id,
        source=f"{base.source}; {inferred}",
        dimensions_from=inferred,
        config_json=None,
        **changes,
    )


# what a quantized copy's suffix states of its quantization_config: the method, and the bits where the
# method has one width (AWQ: vLLM's AWQConfig refuses all but 4 bits, "Currently, only 4-bit weight
# quantization is supported for AWQ", vllm/model_executor/layers/quantization/awq.py) or the suffix names
# them (-GPTQ-Int8); never a group size (AWQ and GPTQ copies are published at several)
_SUFFIX_METHODS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("awq", {"quant_method": "awq", "bits": 4}),
    ("gptq", {"quant_method": "gptq"}),
    ("bnb-4bit", {"quant_method": "bitsandbytes", "load_in_4bit": True}),
)


def named_quantization(model_id: str | None) -> tuple[str, str] | None:
    """(method, suffix as written) that a quantized copy's name states (``-AWQ``, ``-GPTQ-Int4``,
    ``-bnb-4bit``), whatever its base: what the judge knows of a copy whose base is not in the catalog."""
    from lmi_config.knowledge.models import quantized_copy_base

    wanted = (model_id or "").strip().rstrip("/")
    if "/" not in wanted or not _HUB_ID.fullmatch(wanted):
        return None
    split = quantized_copy_base(wanted)
    if split is None:
        return None
    stated = _suffix_quantization(split[1])
    return (str(stated["quant_method"]), wanted[len(split[0]) :]) if stated else None


def _suffix_quantization(suffix: str) -> dict[str, Any] | None:
    """The quantization_config a copy's suffix states (``_SUFFIX_METHODS``), None where it names no method."""
    return next((dict(stated) for key, stated in _SUFFIX_METHODS if key in suffix), None)


def quantized_copy_of(model_id: str) -> ModelArch | None:
    """A Hub id that is a catalog model's name with a quantized-copy suffix (``TheBloke/Llama-2-7B-Chat-AWQ``,
    ``Qwen/Qwen3-235B-A22B-GPTQ-Int4``): the base model's dimensions under this id (quantization stores
    the weights in fewer bits; layers and heads stay, though a quantizer may pad a width). The suffix's
    method, where it names one (AWQ, GPTQ, bitsandbytes), stands for the quantization_config, with what
    the suffix states; otherwise (-FP8, -Int4 alone) the format is unknown and memory is not estimated.
    A base checkpoint's own quantization (DeepSeek-R1's FP8) is not the copy's. An inference from the
    name: its dtype and remote code stay unknown, as for a re-upload."""
    from lmi_config.knowledge.models import quantized_copy_base

    wanted = model_id.strip().rstrip("/")
    if "/" not in wanted or not _HUB_ID.fullmatch(wanted):
        return None
    split = quantized_copy_base(wanted)
    if split is None:
        return None
    base_id, suffix = split
    name = base_id.rsplit("/", 1)[-1]
    stem = _REUPLOAD_SUFFIX.sub("", name.lower())
    base = next(
        (
            found
            for found in (from_catalog(base_id), from_catalog(stem), from_catalog(f"{stem}-hf"))
            if found is not None
        ),
        None,
    )
    if base is None:
        return None
    shown = wanted.rsplit("/", 1)[-1][len(name) :]  # the suffix as the name writes it
    inferred = (
        f"the dimensions of {base.model_id}, whose name {wanted} repeats with the quantized-copy suffix {shown} "
        "(inferred from the name: check with --model or --hub)"
    )
    parts = suffix.strip("-").split("-")
    quantization = _suffix_quantization(suffix)
    if quantization is not None and quantization["quant_method"] == "gptq":
        quantization["bits"] = 8 if "int8" in parts else 4  # GPTQ copies are 4-bit unless the name says 8
    loading = dict(base.loading)
    for key in ("quantization_config", "compression_config", "hf_quant_config"):
        loading.pop(key, None)
    if quantization is not None:
        loading["quantization_config"] = quantization
    not_estimated = base.memory_not_estimated or (
        None
        if quantization is not None
        else f"its name's suffix {shown} says the weights are quantized, but not in which format, so their size is "
        "not known here"
    )
    basis = f"its name's {shown} suffix (inferred: its config.json is not read offline)"
    return _judged_as(
        base,
        wanted,
        inferred,
        loading=loading,
        weight_bytes=None,
        memory_not_estimated=not_estimated,
        quantization_from=basis,
    )


def _is_absolute(path: Path) -> bool:
    try:
        return path.is_absolute()
    except ValueError:
        return False


# --- LoRA adapters beside the configuration --------------------------------------------------------------

ADAPTERS_DIRECTORY = (
    "adapters"  # djl-serving ModelInfo: <model dir>/adapters/<name>/, loaded when enable_lora
)
MAX_ADAPTERS = 64  # adapters read per directory: a directory of thousands is sampled, not read whole
MAX_ADAPTER_CONFIG_BYTES = 1 << 20


class LoraAdapter(NamedTuple):
    """One adapter LMI registers at start-up: its directory name and its ``adapter_config.json``."""

    name: str
    config_path: str
    config: Mapping[str, Any] | None  # None: no adapter_config.json, or one that cannot be read
    problem: str | None = None  # why the config could not be read

    @property
    def rank(self) -> int | None:
        """PEFT's ``r``, as vLLM's PEFTHelper reads it, when it is a positive integer."""
        value: Any = (self.config or {}).get("r")
        return int(value) if is_count_integer(value) and value > 0 else None


def local_adapters(model_directory: Path) -> tuple[LoraAdapter, ...]:
    """The adapters djl-serving loads when ``option.enable_lora`` is true: every entry of
    ``<model directory>/adapters/``, each read (bounded) for its ``adapter_config.json``; at most
    :data:`MAX_ADAPTERS`, in name order. Nothing is raised: an unreadable config is the adapter's
    ``problem``."""
    from lmi_config.io import InputError, read_bounded

    root = model_directory / ADAPTERS_DIRECTORY
    try:
        names = sorted(entry.name for entry in os.scandir(root) if entry.is_dir())[:MAX_ADAPTERS]
    except (OSError, ValueError):
        return ()
    found = []
    for name in names:
        path = root / name / "adapter_config.json"
        if not os.path.lexists(path):
            found.append(LoraAdapter(name, str(path), None, "no adapter_config.json"))
            continue
        try:
            text = read_bounded(path, limit_bytes=MAX_ADAPTER_CONFIG_BYTES).decode("utf-8")
            if json_nesting_depth(text) > MAX_JSON_DEPTH:
                raise ValueError(f"nested more than {MAX_JSON_DEPTH} levels deep")
            config = json.loads(text)
        except (InputError, ValueError, UnicodeDecodeError) as error:
            found.append(LoraAdapter(name, str(path), None, shorten(str(error), 200)))
            continue
        if not isinstance(config, dict):
            found.append(LoraAdapter(name, str(path), None, "adapter_config.json is not a JSON object"))
            continue
        found.append(LoraAdapter(name, str(path), MappingProxyType(config)))
    return tuple(found)
