"""Which attention backend the image's vLLM picks for the model on the instance's GPU
(``knowledge/attention_backends.py``, generated per release), in the shape each release's code has:

- ``selector`` (0.4-0.6) and the V0 engine of ``platform`` (0.7-0.10): FlashAttention, else xFormers
  (below compute capability 8.0, for a dtype, an FP8 KV cache, a block size, a head size …);
- the V1 engine of ``platform`` (0.8-0.10): FlashAttention from compute capability 8.0 (0.10: only
  for head sizes and dtypes it supports, else FlexAttention; FlexAttention too on older GPUs);
- ``priority`` (0.11+): the first of an ordered list whose own validation accepts the model.

Where the facts do not decide (an unread condition, a package the image may lack), every backend the
release could pick stays possible; ``VLLM_ATTENTION_BACKEND`` and ``VLLM_USE_V1`` are read from the
env files (the container's environment, which the worker inherits) and ``option.env``.
"""

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from lmi_config.knowledge.attention_backends import (
    UNKNOWN,
    AttentionBackend,
    AttentionRelease,
    flash_attention_builds,
)

if TYPE_CHECKING:
    from lmi_config.configfile.canonical import CanonicalConfig
    from lmi_config.knowledge.capabilities import GpuDevice
    from lmi_config.shape.dimensions import Target
    from lmi_config.shape.types import ContainerShape

ENV_KEY = "option.env"
_HALF = ("float16", "bfloat16")


class AttentionInputs(NamedTuple):
    """What vLLM's selection and the backends' checks read."""

    gpu: str
    capability: int  # 86 = 8.6
    head_size: int
    dtype: str | None  # float16 | bfloat16 | float32; None: unknown
    kv_cache_dtype: str  # auto unless set
    block_size: int
    sliding_window: int | None
    soft_cap: float | None
    model_type: str
    architectures: tuple[str, ...]
    forced: str | None  # the backend the user names (option.attention_backend, VLLM_ATTENTION_BACKEND)
    use_v1: bool | None  # VLLM_USE_V1 in option.env
    # settings the V1 oracle may fall back to V0 for, where the facts cannot tell whether it does
    open_engine_settings: frozenset[str] = frozenset()
    forced_by: str | None = None  # option.attention_backend | VLLM_ATTENTION_BACKEND
    has_sinks: bool = False  # the model class's attention layers pass sinks (gpt-oss)
    requires_alibi: bool | None = False  # … ALiBi slopes (BLOOM, MPT); None: under a condition (Falcon)
    environment: Mapping[str, str] = MappingProxyType({})  # the engine's variables


class Selection(NamedTuple):
    """The backends the release may pick (more than one where the facts leave it open; none: no
    backend accepts the model), which engine, in words why, and the code that decides. A backend the
    user named that its validation refuses is ``forced`` with the reasons it gives (``refused``)."""

    engine: str
    possible: tuple[AttentionBackend, ...]
    why: str
    source: str
    forced: str | None = None
    refused: tuple[str, ...] = ()


def engine_environment(config: "CanonicalConfig") -> dict[str, str]:
    """The engine's environment: the container's (the env files' process variables, which the Python
    worker inherits), then ``option.env``'s variables (``K1=V1,K2=V2``, split as djl-serving's PyModel
    splits them), which are set for the worker over them."""
    found: dict[str, str] = dict(getattr(config, "process_environment", {}))
    for part in (config.get(ENV_KEY) or "").split(","):
        name, equals, value = part.partition("=")
        if equals and name.strip():
            found[name.strip()] = value.strip()
    return found


def attention_inputs(
    config: "CanonicalConfig",
    target: "Target",
    shape: "ContainerShape",
    device: "GpuDevice | None" = None,
    facts: AttentionRelease | None = None,
) -> AttentionInputs | None:
    """The inputs on the instance's GPU (or ``device``, for a file that names no instance), or None
    where one the selection needs is unknown (no GPU, no model, latent attention)."""
    from lmi_config.knowledge.capabilities import gpu_device
    from lmi_config.knowledge.model_classes import model_classes
    from lmi_config.shape.capability import effective_dtype, engine_of
    from lmi_config.sizing.vllm_release import vllm_version

    arch, instance = target.arch, target.instance
    if arch is None or arch.kv_lora_rank or not arch.head_dim:
        return None
    device = device or (gpu_device(instance.accelerator_name) if instance is not None else None)
    engine = engine_of(target)
    if device is None or engine is None:
        return None
    dtype = effective_dtype(config, target, engine._replace(gpu=device))
    environment = engine_environment(config)
    use_v1 = environment.get("VLLM_USE_V1")
    forced, forced_by = _named_backend(config, environment, facts)
    registry = model_classes(target.release.vllm)
    module_path = registry.module_path(tuple(arch.architectures)) if registry is not None else None
    module = module_path.rsplit("/", 1)[-1].removesuffix(".py") if module_path else None
    has_sinks = facts.passes("sinks", module) if facts is not None else False
    if has_sinks is None:
        return None  # sinks only under a condition of config.json the facts do not read: not decided here
    return AttentionInputs(
        gpu=device.name,
        capability=device.compute_capability,
        head_size=arch.head_dim,
        dtype=dtype.name if dtype else None,
        kv_cache_dtype=(shape.engine.kv_cache_dtype or "auto").lower(),
        block_size=shape.engine.block_size or vllm_version(target.release.vllm).block_size,
        sliding_window=arch.sliding_window,
        soft_cap=arch.attn_logit_softcapping,
        model_type=arch.model_type,
        architectures=tuple(arch.architectures),
        forced=forced,
        use_v1=None if use_v1 is None else use_v1.strip() not in ("0", "false", "False"),
        open_engine_settings=frozenset(
            name
            for name, present in (
                ("pipeline_without_ray", shape.pipeline_parallel_degree.value > 1),
                ("speculative_decoding", any("speculative" in key for key, _ in config.items())),
            )
            if present
        ),
        forced_by=forced_by,
        has_sinks=has_sinks,
        requires_alibi=facts.passes("alibi_slopes", module) if facts is not None else False,
        environment=MappingProxyType(environment),
    )


BACKEND_KEY = "option.attention_backend"


def _named_backend(
    config: "CanonicalConfig", environment: Mapping[str, str], facts: AttentionRelease | None
) -> tuple[str | None, str | None]:
    """The backend the user names and where: the engine argument where the release has it (0.14+),
    else VLLM_ATTENTION_BACKEND where the release reads it (until 0.14; before the facts say, always)."""
    setting = facts.backend_setting if facts is not None else {}
    argument = (config.get(BACKEND_KEY) or "").strip()
    if argument and setting.get("argument"):
        return argument.upper(), BACKEND_KEY
    variable = environment.get("VLLM_ATTENTION_BACKEND") or None
    if variable and setting.get("variable", True):
        return variable, "VLLM_ATTENTION_BACKEND"
    return None, None


def expression_values(
    facts: AttentionRelease, inputs: AttentionInputs, vllm: str | None
) -> dict[str, object]:
    """What the readers' expressions read, for these inputs: the GPU, the model, the engine's
    variables, the FlashAttention builds the release compiles and the version it runs."""
    values: dict[str, object] = {
        "capability": inputs.capability,
        "major": inputs.capability // 10,
        "head_size": inputs.head_size,
        "has_sinks": inputs.has_sinks,
        "requires_alibi": UNKNOWN if inputs.requires_alibi is None else inputs.requires_alibi,
    }
    for name, value in inputs.environment.items():
        text = value.strip()
        values[f"env_{name}"] = int(text) if text.isdigit() else text
    builds = flash_attention_builds(vllm)
    if builds is not None:
        values.update(builds.supported())
    values["fa_version"] = facts.fa_version(values)
    return values


def capability_text(value: int) -> str:
    """``8.6``: a compute capability as NVIDIA writes it."""
    return f"{value // 10}.{value % 10}"


_WORDS = {
    "flash_attn": "FlashAttention", "xformers": "xFormers", "flashinfer": "FlashInfer",
    "flex_attention": "FlexAttention", "triton_attn": "Triton attention",
}  # fmt: skip


def backend_words(backend: AttentionBackend) -> str:
    """``FlashAttention (V1 engine)``: a backend as its documentation names it."""
    engine = "V1" if backend.key.startswith("v1/") else "V0"
    return f"{_WORDS.get(backend.stem, backend.name or backend.stem)} ({engine} engine)"


# --------------------------------------------------------------------------------------------
# the selection, per shape of the release's code
# --------------------------------------------------------------------------------------------


def decided_engine(facts: AttentionRelease, inputs: AttentionInputs, vllm: str | None) -> str | None:
    """v0 or v1 as the release decides it for these inputs; None where the facts leave it open."""
    from lmi_config.sizing.vllm_release import vllm_version

    if facts.kind == "selector":
        return "v0"
    if facts.kind == "priority":
        return "v1"
    v1 = facts.selection["v1"]
    wanted = inputs.use_v1 if inputs.use_v1 is not None else vllm_version(vllm).engine == "v1"
    if not wanted:
        return "v0"
    # the V1 oracle's fallbacks to V0, as the release's code lists them
    minimum = v1.get("engine_min_capability")
    if minimum and inputs.capability < minimum:
        return "v0"
    if any(architecture in v1.get("v0_only_classes", ()) for architecture in inputs.architectures):
        return "v0"
    falls_back = set(v1.get("engine_falls_back_for", ()))
    if "dtype" in falls_back and inputs.dtype not in _HALF:
        return "v0" if inputs.dtype is not None else None
    if inputs.forced and inputs.forced not in v1.get("v1_backend_names", ()):
        # a backend the oracle does not list for V1 (or a release that lists none): not decided here
        return None
    if inputs.open_engine_settings & falls_back:
        return None  # FP8 KV cache, PP without Ray, speculative decoding: not decided here
    if "kv_cache_dtype" in falls_back and inputs.kv_cache_dtype != "auto":
        return None
    return "v1"


def _v0(facts: AttentionRelease, inputs: AttentionInputs) -> Selection | None:
    """FlashAttention unless a fallback of the release's list applies, then xFormers."""
    v0 = facts.selection["v0"]
    flash, xformers = facts.backend("v0", "flash_attn"), facts.backend("v0", "xformers")
    if flash is None or xformers is None:
        return None
    if inputs.forced:
        forced = facts.named("v0", inputs.forced)
        if forced is None or forced.stem not in ("flash_attn", "xformers", "flashinfer"):
            return None
        if forced.stem != "flash_attn":
            return Selection(
                "v0",
                (forced,),
                f"takes {backend_words(forced)} as VLLM_ATTENTION_BACKEND names",
                facts.source,
            )
    falls_back = set(v0["falls_back_for"])
    sliding = v0_sliding_window(facts, inputs)
    reasons = [
        (inputs.capability < v0["flash_min_capability"],
         f"FlashAttention needs compute capability {capability_text(v0['flash_min_capability'])}, the {inputs.gpu} "
         f"has {capability_text(inputs.capability)}"),
        ("dtype" in falls_back and inputs.dtype not in _HALF, f"FlashAttention runs float16 / bfloat16, not {inputs.dtype}"),
        ("quantized_kv_cache" in falls_back and inputs.kv_cache_dtype.startswith("fp8"), "FlashAttention has no FP8 KV cache here"),
        ("block_size" in falls_back and inputs.block_size % 16 != 0, f"block size {inputs.block_size} is not a multiple of 16"),
        ("sliding_window" in falls_back and sliding is not None, f"FlashAttention has no sliding window here ({sliding})"),
        ("head_size" in falls_back and flash.head_sizes is not None and inputs.head_size not in flash.head_sizes,
         f"FlashAttention has no head size {inputs.head_size}"),
    ]  # fmt: skip
    if "dtype" in falls_back and inputs.dtype is None:
        return None
    why = next((text for applies, text in reasons if applies), None)
    if why is None:
        return Selection(
            "v0", (flash,), f"takes {backend_words(flash)} on the {inputs.gpu}", str(v0["source"])
        )
    return Selection(
        "v0", (xformers,), f"takes {backend_words(xformers)} on the {inputs.gpu}: {why}", str(v0["source"])
    )


def v0_sliding_window(facts: AttentionRelease, inputs: AttentionInputs) -> int | None:
    """The sliding window the V0 layers get: none where ModelConfig turns an interleaved one off."""
    disabled = facts.sliding_window_disabled
    if disabled and not disabled.get("only_with_backends") and inputs.model_type in disabled["model_types"]:
        return None
    return inputs.sliding_window


def _v1_platform(facts: AttentionRelease, inputs: AttentionInputs) -> Selection | None:
    """FlashAttention from a compute capability (0.10: if it takes the head size and dtype, else
    FlexAttention; FlexAttention too on older GPUs; FlashInfer first on Blackwell)."""
    v1 = facts.selection["v1"]
    flash = facts.backend("v1", "flash_attn")
    if flash is None:
        return None
    source = str(v1["source"])
    if inputs.forced:
        # 0.10: the backend named is returned as it is, unvalidated ('if selected_backend == _Backend.FLASHINFER')
        stem = (v1.get("named_backends") or {}).get(inputs.forced)
        named = facts.backend("v1", stem) if stem else None
        if named is None:
            return None
        words = f"takes {backend_words(named)} as {inputs.forced_by} names"
        return Selection("v1", (named,), words, source, forced=inputs.forced)
    if v1.get("blackwell_first") and inputs.capability // 10 == 10:
        return None  # FlashInfer if it imports and takes the head size: not decided here
    minimum = v1.get("flash_min_capability")
    sinks = facts.named("v1", v1["sinks_backend"]) if v1.get("sinks_backend") else None
    if (
        inputs.has_sinks
        and sinks is not None
        and (minimum is None or inputs.capability >= minimum)
        and inputs.capability != v1.get("sinks_kept_on_capability")
    ):
        why = (
            f"takes {backend_words(sinks)}: the model's attention sinks run on FlashAttention only on Hopper"
        )
        return Selection("v1", (sinks,), why, source)
    if minimum is None or inputs.capability >= minimum:
        if v1.get("flash_checks_head_size") and v1.get("fallback"):
            fallback = facts.named("v1", v1["fallback"])
            takes = flash.head_sizes is None or inputs.head_size in flash.head_sizes
            if fallback is not None and (not takes or inputs.dtype not in _HALF):
                what = f"head size {inputs.head_size}" if not takes else f"dtype {inputs.dtype}"
                return Selection(
                    "v1",
                    (fallback,),
                    f"takes {backend_words(fallback)}: FlashAttention does not take {what}",
                    source,
                )
        return Selection("v1", (flash,), f"takes {backend_words(flash)} on the {inputs.gpu}", source)
    older = facts.named("v1", v1["older_gpus"]) if v1.get("older_gpus") else None
    if older is None:
        return None
    return Selection(
        "v1",
        (older,),
        f"takes {backend_words(older)}: FlashAttention needs compute capability {capability_text(minimum)}, the {inputs.gpu} has "
        f"{capability_text(inputs.capability)}",
        source,
    )


_REASONS = {
    "supports_head_size": "head_size not supported", "supports_dtype": "dtype not supported",
    "supports_compute_capability": "compute capability not supported", "supports_sink": "sink setting not supported",
}  # fmt: skip


def _validation(
    facts: AttentionRelease, backend: AttentionBackend, inputs: AttentionInputs, values: Mapping[str, object]
) -> tuple[list[str], bool]:
    """The reasons the backend's validate_configuration gives for the model on the GPU (in the
    release's words), and whether every test it makes is decided by the facts."""
    tests = {
        "supports_head_size": backend.accepts_head_size(inputs.head_size),
        "supports_dtype": backend.accepts_dtype(inputs.dtype),
        "supports_sink": backend.accepts_sink(values) if inputs.has_sinks else True,
        "supports_compute_capability": backend.accepts_capability(inputs.capability),
        # per-backend KV-cache dtypes are not read
        "supports_kv_cache_dtype": None if inputs.kv_cache_dtype != "auto" else True,
    }
    reasons = [
        facts.validation_reasons.get(test, _REASONS.get(test, test))
        for test, passed in tests.items()
        if passed is False
    ]
    return reasons, all(passed is True for passed in tests.values())


def _priority(
    facts: AttentionRelease, inputs: AttentionInputs, values: Mapping[str, object]
) -> Selection | None:
    """The first backend of the list for the GPU's capability major that validates the model; every
    one whose validation the facts leave open stays possible until a certain one. A backend the user
    names is validated alone: refused, the start-up stops ('Selected backend ... is not valid')."""
    lists = facts.selection["priorities"]
    order = lists.get(str(inputs.capability // 10), lists["default"])
    if inputs.forced:
        named = facts.named("v1", inputs.forced)
        if named is None:
            return None
        reasons, decided = _validation(facts, named, inputs, values)
        if reasons:
            why = f"refuses {inputs.forced} ({inputs.forced_by}) on the {inputs.gpu}: {', '.join(reasons)}"
            return Selection("v1", (), why, facts.source, forced=inputs.forced, refused=tuple(reasons))
        if not decided:
            return None
        words = f"takes {backend_words(named)} as {inputs.forced_by} names"
        return Selection("v1", (named,), words, facts.source, forced=inputs.forced)
    possible: list[AttentionBackend] = []
    refused: list[str] = []
    for name in order:
        backend = facts.named("v1", name)
        if backend is None:
            return None  # a backend the facts do not describe (TURBOQUANT is asked for by name only)
        reasons, decided = _validation(facts, backend, inputs, values)
        if reasons:
            refused.append(f"{name}: [{', '.join(reasons)}]")
            continue
        possible.append(backend)
        if decided and backend.stem != "flashinfer":
            break  # certain; FlashInfer is possible only: the image may not import it
    else:
        if not possible:
            why = f"none of {', '.join(order)} takes the model on the {inputs.gpu} ({'; '.join(refused)})"
            return Selection("v1", (), why, facts.source, refused=tuple(refused))
    if len(possible) == 1:
        return Selection("v1", tuple(possible), f"takes {backend_words(possible[0])}, the first of {', '.join(order)} "
                         f"that takes the model on the {inputs.gpu}", facts.source)  # fmt: skip
    return Selection(
        "v1", tuple(possible), f"takes one of {', '.join(map(backend_words, possible))}", facts.source
    )


def select_backend(facts: AttentionRelease, inputs: AttentionInputs, vllm: str | None) -> Selection | None:
    """What the release picks for these inputs, None where the facts do not decide it."""
    engine = decided_engine(facts, inputs, vllm)
    if engine is None:
        return None
    if engine == "v0":
        return _v0(facts, inputs)
    if facts.kind == "priority":
        return _priority(facts, inputs, expression_values(facts, inputs, vllm))
    return _v1_platform(facts, inputs)
