"""One resolver per dimension of the shape: sequence length, tensor parallelism, batch, precision,
engine settings and copies, each filling what the configuration leaves out the way the container
does (its defaults and, on Neuron from 0.30, its smart defaults)."""

import ast
import json
from typing import Any, NamedTuple

from lmi_config.configfile.canonical import CanonicalConfig
from lmi_config.knowledge import Release, version_tuple
from lmi_config.knowledge.container import batch_keys, recommended_max_rolling_batch_size, sequence_keys
from lmi_config.knowledge.instances import Instance
from lmi_config.knowledge.memory import container_default
from lmi_config.knowledge.models import ModelIdentity
from lmi_config.modelarch import ModelArch
from lmi_config.shape.frontend import flag, integer
from lmi_config.shape.types import Batching, EngineSettings, Resolved
from lmi_config.shape.values import (
    fraction_or_none,
    read_count,
    tensor_parallel_minimum,
    written_but_unusable,
)
from lmi_config.sizing.model import NEURON_BACKENDS, VLLM_BACKENDS

TP_KEY = "option.tensor_parallel_degree"


class Target(NamedTuple):
    """What the configuration is judged for: backend, release and, when known, instance and model."""

    backend: str
    accelerator: str  # neuron | gpu | cpu: the instance's, else the backend's
    release: Release
    instance: Instance | None = None
    arch: ModelArch | None = None
    nodes: int | None = None  # DJL_CLUSTER_SIZE of a multi-node deployment
    # what loads the model: None, the LMI image (its handler and loaders at its release); a version,
    # an export by that optimum-neuron (search, plan --cache-config), whose exporter registry differs
    optimum_neuron_export: str | None = None
    # a model whose config.json is not at hand but whose architecture is known (knowledge/models.py)
    identity: ModelIdentity | None = None

    @property
    def architectures(self) -> tuple[str, ...]:
        """The architectures the checkpoint declares: its config.json's, else its known identity's."""
        if self.arch is not None:
            return tuple(self.arch.architectures)
        return (self.identity.architecture,) if self.identity is not None else ()

    @property
    def model_type(self) -> str | None:
        """config.json's model_type as AutoConfig reads it: the config's, else the known identity's."""
        if self.arch is not None:
            return str(self.arch.loading.get("model_type") or self.arch.model_type)
        return self.identity.model_type if self.identity is not None else None

    @property
    def inferred_from(self) -> str | None:
        """The sibling checkpoint a model's identity is inferred from (its findings are then warnings)."""
        return self.identity.sibling if self.arch is None and self.identity is not None else None

    @property
    def model_id(self) -> str | None:
        return (
            self.arch.model_id
            if self.arch is not None
            else (self.identity.model_id if self.identity else None)
        )

    @property
    def planned_for(self) -> str:
        """What the configuration is judged for, in words."""
        if self.optimum_neuron_export is not None:
            return f"an optimum-neuron {self.optimum_neuron_export} export"
        return f"the LMI {self.release.label()} image"

    @property
    def smart_defaults_apply(self) -> bool:
        """The container's Neuron smart defaults run: Neuron, DJL 0.30+, a text-generation model."""
        return (
            self.accelerator == "neuron"
            and self.arch is not None
            and self.arch.is_text_generation
            and self.release.djl_tuple >= version_tuple(container_default("smart_defaults_since"))
        )


def override_neuron_config(config: CanonicalConfig) -> dict[str, object]:
    """``option.override_neuron_config`` as a dict (JSON or a Python literal), else empty."""
    text = config.get("option.override_neuron_config")
    if not text:
        return {}
    for parser in (json.loads, ast.literal_eval):
        try:
            value = parser(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return {}


UNKNOWN_CONTEXT_ASSUMED = 2048  # the length judged where the model's context is not known


def resolve_sequence_length(config: CanonicalConfig, target: Target) -> Resolved[int] | None:
    """The sequence length the container compiles or allocates for."""
    table = sequence_keys(target.backend)
    if written_but_unusable(config, *table.keys):
        return None  # invalid-value reports it; a default would judge another configuration
    value, key = integer(config, *table.keys)
    if value is not None:
        return Resolved(value, key or "", key)
    if target.backend == "nxdi" and "seq_len" in override_neuron_config(config):
        seq_len = override_sequence_length(config)
        if seq_len is None:
            return None
        return Resolved(seq_len, "option.override_neuron_config seq_len", "option.override_neuron_config")
    arch = target.arch
    if table.default == "neuron":
        if target.smart_defaults_apply and arch is not None and arch.max_position_embeddings:
            cap = container_default("smart_defaults_max_n_positions")
            return Resolved(
                min(arch.max_position_embeddings, cap),
                f"container smart default min(max_position_embeddings, {cap})",
            )
        if arch is None and target.release.djl_tuple >= version_tuple(
            container_default("smart_defaults_since")
        ):
            return None  # the smart default needs the model
        fixed = container_default("n_positions_before_smart_defaults")
        return Resolved(fixed, f"container default n_positions={fixed} (before the smart defaults)")
    if arch is None:
        return None
    if not arch.max_position_embeddings:
        # a catalog entry from a table of dimensions states no context; the engine reads config.json's
        return Resolved(
            UNKNOWN_CONTEXT_ASSUMED,
            f"assumed {UNKNOWN_CONTEXT_ASSUMED}: the model's context length is not known here "
            f"({target.backend} takes config.json's max_position_embeddings); set it explicitly",
        )
    return Resolved(
        arch.max_position_embeddings,
        f"{target.backend} default: the model's max_position_embeddings",
    )


def override_sequence_length(config: CanonicalConfig) -> int | None:
    """``seq_len`` of ``option.override_neuron_config`` when it is a count the judge can use."""
    seq_len = override_neuron_config(config).get("seq_len")
    if isinstance(seq_len, bool) or not isinstance(seq_len, int):
        return None
    value = read_count(str(seq_len)).value if seq_len < 10**12 else None
    return int(value) if value is not None else None


def resolve_pipeline(config: CanonicalConfig) -> Resolved[int]:
    value, key = integer(config, "option.pipeline_parallel_degree")
    if value:
        return Resolved(value, key or "", key)
    return Resolved(1, "container default pipeline_parallel_degree=1")


def resolve_nodes(target: Target) -> Resolved[int]:
    """Nodes of a multi-node deployment: DJL_CLUSTER_SIZE (the engine overwrites option.cluster_size with it)."""
    if target.nodes and target.nodes > 1:
        return Resolved(target.nodes, f"DJL_CLUSTER_SIZE={target.nodes}")
    return Resolved(1, "one node")


def explicit_tensor_parallel(config: CanonicalConfig, target: Target, pipeline: int) -> Resolved[int] | None:
    """An integer TP, or ``max`` on a known instance; None when the container will choose."""
    value, _ = integer(config, TP_KEY)
    if value is not None:
        return Resolved(value, TP_KEY, TP_KEY)
    raw = (config.get(TP_KEY) or "").strip()
    instance = target.instance
    if raw == "max" and instance is not None:
        if target.accelerator == "gpu":
            devices = instance.num_cores * (target.nodes or 1)
            return Resolved(
                max(devices // max(pipeline, 1), 1),
                f"max = {devices} GPUs / PP {pipeline}",
                TP_KEY,
            )
        return Resolved(instance.num_cores, f"max = {instance.num_cores} {instance.core_word}s", TP_KEY)
    return None


def explicit_batch(config: CanonicalConfig, target: Target, batching: Batching) -> Resolved[int] | None:
    """The batch the configuration sets with the key this backend reads in this batching mode."""
    table = batch_keys(target.backend, batching.mode)
    value, key = integer(config, *table.keys)
    return Resolved(value, key or "", key) if value is not None else None


def resolve_tensor_parallel_and_batch(
    config: CanonicalConfig,
    target: Target,
    batching: Batching,
    sequence: Resolved[int] | None,
    pipeline: int,
) -> tuple[Resolved[int] | None, Resolved[int] | None]:
    """TP and batch: what the configuration sets, else the smart defaults, else the container defaults."""
    tp = explicit_tensor_parallel(config, target, pipeline)
    batch = explicit_batch(config, target, batching)
    table = batch_keys(target.backend, batching.mode)
    # a value the judge cannot use leaves its dimension unknown: a default would judge another shape
    tp_unusable = (config.get(TP_KEY) or "").strip() != "max" and written_but_unusable(
        config, TP_KEY, minimum=tensor_parallel_minimum(target.backend)
    )
    batch_unusable = written_but_unusable(config, *table.keys)
    if tp_unusable or batch_unusable:
        return (None if tp_unusable else tp), (None if batch_unusable else batch)
    rolling_batch_key = "option.max_rolling_batch_size" in table.keys
    instance = target.instance
    if (
        target.smart_defaults_apply
        and instance is not None
        and sequence is not None
        and target.arch is not None
        and (tp is None or (batch is None and rolling_batch_key))
    ):
        from lmi_config.shape.smart_defaults import smart_defaults  # only with an instance and a model

        chosen_tp, chosen_batch = smart_defaults(
            target.arch,
            instance.num_cores,
            tensor_parallel_degree=tp.value if tp else None,
            batch=batch.value if batch else None,
            quantized=_quantized(config),
            n_positions=sequence.value,
        )
        if tp is None:
            tp = Resolved(chosen_tp, "container smart default (most sequences per instance)")
        if batch is None and rolling_batch_key:
            batch = Resolved(
                chosen_batch, "container smart default (largest power of two that fits, at most 32)"
            )
    if tp is None and instance is not None and target.accelerator in ("neuron", "gpu"):
        cores = instance.num_cores // max(pipeline, 1) if target.accelerator == "gpu" else instance.num_cores
        tp = Resolved(max(cores, 1), f"container default max = {cores} {instance.core_word}s")
    if batch is None:
        if table.default is not None:
            batch = Resolved(table.default, f"container default {table.keys[0]}={table.default}")
        else:
            size = recommended_max_rolling_batch_size(batching.rolling_batch.value)
            batch = Resolved(
                size,
                f"container default max_rolling_batch_size={size} (rolling_batch={batching.rolling_batch.value})",
            )
    return tp, batch


def _quantized(config: CanonicalConfig) -> bool:
    return bool((config.get("option.quantize") or "").strip()) or flag(config, "option.load_in_8bit")


# vLLM (and lmi-dist, built on it: VLLM_BACKENDS) reads the quantization of a pre-quantized checkpoint from its
# config.json without being told (ModelConfig._verify_quantization): an AWQ checkpoint loads as AWQ


def checkpoint_method(arch: ModelArch | None, vllm: str | None = None) -> str | None:
    """The quantization method config.json declares (quantization_config / compression_config); else,
    where the vLLM release reads it unasked (0.10+), the ModelOpt method of the hf_quant_config.json
    beside it."""
    if arch is None:
        return None
    declared = arch.declared_quantization
    if isinstance(declared, dict):
        method = declared.get("quant_method")
        return str(method).strip().lower() if method else None
    separate = arch.loading.get("hf_quant_config")
    if declared is None and isinstance(separate, dict) and vllm:
        from lmi_config.knowledge.capabilities import vllm_capabilities

        capabilities = vllm_capabilities(vllm)
        if capabilities is not None and capabilities.modelopt_checkpoint_detected:
            return modelopt_method(separate, vllm)
    return None


def modelopt_method(declared: dict[str, Any], vllm: str | None) -> str | None:
    """The method vLLM's config normalization names for a ModelOpt producer's ``quant_algo`` (its map
    per release, generated into ``data/vllm_capabilities.json``), else the declared ``quant_method``."""
    from lmi_config.knowledge.capabilities import vllm_capabilities

    method = str(declared.get("quant_method") or "").strip().lower() or None
    producer, inner = declared.get("producer"), declared.get("quantization")
    capabilities = vllm_capabilities(vllm)
    if capabilities is None or not isinstance(inner, dict):
        return method
    if not isinstance(producer, dict) or producer.get("name") != "modelopt":
        return method
    algo = str(inner.get("quant_algo") or "")
    algo = algo.upper() if capabilities.modelopt_algos_case_insensitive else algo
    return capabilities.modelopt_quant_algos.get(algo, method)


def sized_methods() -> tuple[str, ...]:
    """The quantization methods the vLLM weight table sizes from the parameter count."""
    from lmi_config.knowledge.memory import vllm_memory

    table = vllm_memory()["quantization"]
    return tuple(
        name
        for name, entry in table.items()
        if isinstance(entry, dict) and ("bytes_per_weight" in entry or "config_groups" in entry)
    )


def _kept_unquantized(arch: ModelArch) -> list[str]:
    """The modules a quantized checkpoint says it left unquantized, apart from those the weight table
    keeps in the model dtype anyway or that weigh next to nothing (:func:`_kept_anyway`)."""
    lists: list[Any] = []
    declared = arch.declared_quantization
    if isinstance(declared, dict):
        lists += [declared.get(key) for key in ("modules_to_not_convert", "ignore", "exclude_modules")]
    lists.append((arch.modelopt_quantization or {}).get("exclude_modules"))
    names = [str(name) for found in lists if isinstance(found, list) for name in found]
    return [name for name in names if not _kept_anyway(name)]


def _kept_anyway(module: str) -> bool:
    """A module the weight table keeps in the model dtype anyway (the embeddings and the LM head), or
    one that weighs next to nothing (norms, MoE routers)."""
    last = module.rsplit(".", 1)[-1]
    return last in ("lm_head", "embed_tokens", "wte", "gate", "router") or "norm" in last


def unsized_checkpoint(target: Target, quantize: str | None) -> str | None:
    """Why a checkpoint stored quantized gets no memory figure, or None when it gets one. Without its
    size (a catalog model: no safetensors index), its weights are sized from the parameter count as
    vLLM loads the method ``quantize`` resolves to (``data/vllm_memory.json``): only on a vLLM
    backend and for a method that table sizes; anything else would be sized at the model's dtype."""
    arch = target.arch
    stored = arch.stored_quantization if arch is not None else None
    if arch is None or arch.weight_bytes or stored is None:
        return None
    method = (quantize or "").strip().lower()
    from lmi_config.knowledge.memory import vllm_memory

    # a method whose table entry says what it keeps in the model dtype (fbgemm_fp8) sizes that itself
    layout = vllm_memory()["quantization"].get(method)
    kept = [] if isinstance(layout, dict) and "kept_in_model_dtype" in layout else _kept_unquantized(arch)
    if kept:
        shown = ", ".join(kept[:3]) + (f" and {len(kept) - 3} more" if len(kept) > 3 else "")
        return (
            f"the checkpoint is stored quantized ({stored}) but keeps layers unquantized ({shown}): the "
            "parameter formula quantizes every linear layer"
        )
    if method == "compressed-tensors" and target.backend in VLLM_BACKENDS:
        from lmi_config.sizing.gpu import compressed_tensors_bytes

        if compressed_tensors_bytes(arch) is None:
            return (
                "the checkpoint is stored quantized (compressed-tensors) and its config_groups state a weights "
                "scheme the memory model does not size (it sizes one 4- or 8-bit integer or float scheme shared "
                "by every group)"
            )
        return None
    if target.backend in VLLM_BACKENDS and method in sized_methods():
        return None
    if target.backend not in VLLM_BACKENDS:
        return (
            f"the checkpoint is stored quantized ({stored}) and its size is not known: the memory model sizes "
            f"such a checkpoint as vLLM loads it, not as {target.backend} does"
        )
    engine = f"vLLM {target.release.vllm}" if target.release.vllm else "vLLM"
    loads = f"as {method}" if method else "unquantized"
    return (
        f"the checkpoint is stored quantized ({stored}) and {engine} would load it {loads}, which the memory "
        f"model does not size from the parameter count (it sizes {', '.join(sized_methods())}); set "
        "option.quantize to the checkpoint's method, or lint a local model directory (its safetensors index "
        "gives the size)"
    )


def resolve_quantize(config: CanonicalConfig, target: Target) -> Resolved[str] | None:
    """The weights' quantization: the option, else (vLLM) the checkpoint's own, where it is sized."""
    value = (config.get("option.quantize") or "").strip()
    if value:
        return Resolved(value, "option.quantize", "option.quantize")
    if flag(config, "option.load_in_8bit"):
        return Resolved("int8", "option.load_in_8bit=true", "option.load_in_8bit")
    if target.backend not in VLLM_BACKENDS:
        return None
    from lmi_config.knowledge.memory import vllm_memory

    method = checkpoint_method(target.arch, target.release.vllm)
    if method is None or method == "prequantized" or method not in vllm_memory()["quantization"]:
        return None  # a method the weight table does not size: the checkpoint size decides, if known
    if target.arch is not None and target.arch.quantization_from:
        return Resolved(method, f"the checkpoint's {method}, from {target.arch.quantization_basis}")
    return Resolved(
        method, f"the checkpoint's quantization_config ({method}), which vLLM reads from config.json"
    )


def resolve_dtype(config: CanonicalConfig, target: Target) -> Resolved[str] | None:
    """The weights' dtype: the option, else the backend's default, else the model's torch_dtype."""
    value = (config.get("option.dtype") or "").strip().lower()
    if value and value != "auto":
        return Resolved(value, "option.dtype", "option.dtype")
    if target.backend in NEURON_BACKENDS:
        return Resolved("fp16", "container default (transformers-neuronx dtype fp16)")
    if target.arch is None:
        return None
    if not target.arch.config_verbatim:
        # a catalog entry from a table of dimensions (LitGPT's) states no dtype
        return Resolved("bfloat16", "dtype auto: assumed bfloat16 (the model's torch_dtype is not known)")
    model_dtype = (target.arch.torch_dtype or "bfloat16").lower()
    if model_dtype in ("float32", "fp32"):
        return Resolved("fp16", "dtype auto: vLLM loads float32 checkpoints as float16")
    return Resolved(model_dtype, f"dtype auto: the model's torch_dtype ({model_dtype})")


def checkpoint_kv_cache_dtype(arch: ModelArch | None, vllm: str | None) -> str | None:
    """The KV cache dtype vLLM's ``kv_cache_dtype=auto`` takes from a ModelOpt checkpoint, where the
    release does (``resolve_kv_cache_dtype_string``, vLLM 0.14+; its map of algorithms is generated
    into ``data/vllm_memory.json``), else None: config.json's quantization_config, else the
    hf_quant_config.json beside it; the KV algorithm from ``kv_cache_scheme`` or
    ``kv_cache_quant_algo``, in the ``quantization`` section or at the top."""
    from lmi_config.sizing.vllm_release import vllm_version

    mapping = vllm_version(vllm).checkpoint_kv_cache_dtypes if vllm else None
    if arch is None or not mapping:
        return None
    declared = arch.loading.get("quantization_config") or arch.loading.get("hf_quant_config")
    if not isinstance(declared, dict):
        return None
    method = modelopt_method(declared, vllm) or ""
    if not method.startswith("modelopt"):
        return None
    inner = declared.get("quantization")
    inner = inner if isinstance(inner, dict) else declared
    scheme = (
        inner.get("kv_cache_scheme")
        or declared.get("kv_cache_scheme")
        or inner.get("kv_cache_quant_algo")
        or declared.get("kv_cache_quant_algo")
    )
    if isinstance(scheme, dict):
        floating = scheme.get("type") == "float"
        bits = scheme.get("num_bits")
        scheme = (
            "fp8"
            if floating and bits == 8 and scheme.get("dynamic") is False
            else "nvfp4"
            if floating and bits == 4
            else None
        )
    return mapping.get(scheme.lower()) if isinstance(scheme, str) else None


def resolve_engine_settings(
    config: CanonicalConfig, release: Release, target: Target | None = None
) -> EngineSettings:
    """The memory-relevant engine settings the configuration gives (and the release's vLLM); with the
    target, a vLLM KV cache dtype left to ``auto`` is the one the release takes from the checkpoint."""
    overrides = override_neuron_config(config)
    utilization = fraction_or_none(config, "option.gpu_memory_utilization")
    chunked_text = (config.get("option.enable_chunked_prefill") or "").strip().lower()
    block_size, _ = integer(config, "option.block_size")
    tokens, _ = integer(config, "option.max_rolling_batch_prefill_tokens", "option.max_num_batched_tokens")
    from lmi_config.knowledge.memory import vllm_memory

    kv_dtype = (config.get("option.kv_cache_dtype") or "").strip() or None
    kv_source = "option.kv_cache_dtype" if kv_dtype else None
    if target is not None and target.backend in VLLM_BACKENDS and (kv_dtype or "auto").lower() == "auto":
        from_checkpoint = checkpoint_kv_cache_dtype(target.arch, release.vllm)
        if from_checkpoint is not None and from_checkpoint in vllm_memory()["kv_cache_dtype_bytes"]:
            kv_dtype = from_checkpoint
            kv_source = (
                f"kv_cache_dtype auto: the checkpoint's ModelOpt KV cache algorithm, which vLLM {release.vllm} "
                f"follows ({from_checkpoint}; set option.kv_cache_dtype to choose another)"
            )
    return EngineSettings(
        gqa_strategy=(config.get("option.group_query_attention") or "").strip() or None,
        shard_over_sequence=flag(config, "option.shard_over_sequence"),
        chunked_prefill=flag(config, "option.enable_chunked_prefill")
        or bool(overrides.get("chunked_prefill_config") or overrides.get("is_chunked_prefill")),
        # absent: vLLM's default; written but unusable: invalid-value, and the shape is not sized
        gpu_memory_utilization=0.9 if utilization is None else utilization,
        max_num_batched_tokens=tokens,
        enforce_eager=flag(config, "option.enforce_eager"),
        single_worker=flag(config, "option.enable_lora") or flag(config, "option.enable_stateful_sessions"),
        kv_cache_dtype=kv_dtype,
        kv_cache_dtype_source=kv_source,
        block_size=block_size,
        enable_chunked_prefill={"true": True, "false": False}.get(chunked_text),
        kv_cache_free_gpu_mem_fraction=fraction_or_none(config, "option.kv_cache_free_gpu_mem_fraction"),
        vllm_version=release.vllm,
    )


def resolve_copies(
    target: Target, tp: Resolved[int] | None, pipeline: int, nodes: int, engine: EngineSettings
) -> Resolved[int] | None:
    """How many copies of the model the container loads (one worker per TP x PP group)."""
    instance = target.instance
    if instance is None or tp is None or target.accelerator not in ("neuron", "gpu"):
        return None
    if engine.single_worker:
        return Resolved(1, "LoRA / stateful sessions: one worker")
    devices = instance.num_cores * nodes
    copies = devices // max(tp.value * pipeline, 1)
    per = f"TP {tp.value}" + (f" x PP {pipeline}" if pipeline > 1 else "")
    return Resolved(copies, f"{devices} {instance.core_word}s / {per}")
