"""The judge's verdict on what the GPU and the image's vLLM can run (``knowledge/capabilities.py``).

Each problem's ``check`` is the slug of the rule that reports it (``rules/hardware.py``); errors block
the planner like every other error of the judge, so ``plan`` and ``render auto`` never choose what
these checks refuse.
"""

from typing import TYPE_CHECKING, NamedTuple

from lmi_config.configfile.text import shorten
from lmi_config.knowledge.capabilities import (
    GpuDevice,
    QuantizationMethod,
    VllmCapabilities,
    canonical_dtype,
    families_with_capability,
    first_release_with,
    gpu_device,
    vllm_capabilities,
)
from lmi_config.shape.problems import Problem

if TYPE_CHECKING:
    from lmi_config.configfile.canonical import CanonicalConfig
    from lmi_config.shape.dimensions import Target

MODEL_KEY = "option.model_id"
_NO_QUANTIZATION = ("", "none", "false")
# methods that run a checkpoint quantized with another of the family: vLLM's override_quantization_method
# accepts quantization=marlin / gptq_marlin for a GPTQ checkpoint and marlin / awq_marlin for an AWQ one —
# https://github.com/vllm-project/vllm/blob/v0.10.2/vllm/model_executor/layers/quantization/gptq_marlin.py#L163
# https://github.com/vllm-project/vllm/blob/v0.10.2/vllm/model_executor/layers/quantization/awq_marlin.py#L108
_FAMILIES = (
    frozenset({"gptq", "auto_gptq", "gptq_marlin", "marlin", "gptq_marlin_24", "gptq_bitblas", "bitblas"}),
    frozenset({"awq", "awq_marlin", "marlin"}),
)


class Engine(NamedTuple):
    """The vLLM release the image runs and the GPU of the instance (unknown: None)."""

    capabilities: VllmCapabilities
    gpu: GpuDevice | None

    @property
    def supports_bfloat16(self) -> bool:
        minimum = self.capabilities.bfloat16_min_capability
        return self.gpu is None or minimum is None or self.gpu.compute_capability >= minimum


class Dtype(NamedTuple):
    name: str  # float16 | bfloat16 | float32
    reason: str
    key: str | None  # option.dtype where the file sets it


class Quantization(NamedTuple):
    method: QuantizationMethod
    key: str | None  # option.quantize / option.quantization; None: the checkpoint's own
    explicit: bool
    named_by: str | None = None  # the suffix of a copy's name it is read from, where config.json is not known


def _capability_text(value: int) -> str:
    return f"{value // 10}.{value % 10}"


def engine_of(target: "Target") -> Engine | None:
    """The vLLM facts that apply: the vLLM backend at a release the generated data covers."""
    if target.backend != "vllm":
        return None
    capabilities = vllm_capabilities(target.release.vllm)
    if capabilities is None:
        return None
    instance = target.instance
    gpu = (
        gpu_device(instance.accelerator_name)
        if instance is not None and instance.accelerator == "gpu"
        else None
    )
    return Engine(capabilities, gpu)


def effective_dtype(config: "CanonicalConfig", target: "Target", engine: Engine) -> Dtype | None:
    """The dtype vLLM runs with: option.dtype, else what ``auto`` makes of the checkpoint's torch_dtype
    in this release (before 0.10 vLLM keeps it; later releases pick one the GPU and the model allow)."""
    written = (config.get("option.dtype") or "").strip().lower()
    key = "option.dtype" if config.has("option.dtype") else None
    if written not in ("", "auto"):
        name = canonical_dtype(written)
        return Dtype(name, f"option.dtype={written}", key) if name else None
    if target.arch is None or not target.arch.config_verbatim:
        return None
    checkpoint = canonical_dtype(target.arch.torch_dtype) or "float32"  # none named: transformers' float32
    capabilities = engine.capabilities
    if not capabilities.auto_dtype_supported_by_gpu:
        if checkpoint == "float32":
            return Dtype("float16", "dtype auto: vLLM loads a float32 checkpoint as float16", key)
        return Dtype(
            checkpoint, f"dtype auto keeps the checkpoint's {checkpoint} in vLLM {capabilities.version}", key
        )
    supported = ["bfloat16", "float16", "float32"] if engine.supports_bfloat16 else ["float16", "float32"]
    if target.arch.model_type in capabilities.float16_unsupported:
        supported.remove("float16")
    chosen = supported[0] if checkpoint == "float32" or checkpoint not in supported else checkpoint
    return Dtype(
        chosen, f"dtype auto in vLLM {capabilities.version} picks {chosen} for this GPU and model", key
    )


def runnable_dtype(config: "CanonicalConfig", target: "Target") -> str | None:
    """``fp16`` where the configuration leaves the dtype to vLLM, vLLM would run bfloat16, the GPU has no
    bfloat16 and the model allows float16 — the dtype the planner writes so that what it proposes runs."""
    engine = engine_of(target)
    if (
        engine is None
        or engine.supports_bfloat16
        or (config.get("option.dtype") or "auto").strip().lower() != "auto"
    ):
        return None
    dtype = effective_dtype(config, target, engine)
    refused = target.arch is not None and target.arch.model_type in engine.capabilities.float16_unsupported
    return "fp16" if dtype is not None and dtype.name == "bfloat16" and not refused else None


def quantization(config: "CanonicalConfig", target: "Target", engine: Engine) -> Quantization | None:
    """The quantization method: the one the configuration names, else the checkpoint's own."""
    methods = engine.capabilities.quantization
    for key in ("option.quantize", "option.quantization"):
        name = (config.get(key) or "").strip().lower()
        if name not in _NO_QUANTIZATION:
            return Quantization(methods[name], key, True) if name in methods else None
    declared = checkpoint_method(target)
    if declared is None and target.arch is None:
        # a quantized copy whose base the catalog lacks: its name's suffix still says the method
        from lmi_config.modelarch import named_quantization

        named = named_quantization(target.model_id or config.get(MODEL_KEY))
        if named is not None and named[0] in methods:
            return Quantization(methods[named[0]], None, False, named[1])
    return Quantization(methods[declared], None, False) if declared in methods else None


def checkpoint_method(target: "Target") -> str | None:
    """The quantization method the checkpoint declares, as the image's vLLM reads it."""
    from lmi_config.shape.dimensions import checkpoint_method as declared

    return declared(target.arch, target.release.vllm)


def transformers_knows(target: "Target") -> bool | None:
    """Whether the transformers of the image that runs the backend knows the model type (None: unknown)."""
    from lmi_config.knowledge import backends
    from lmi_config.knowledge.image_support import image_of, known_to_transformers, pins_at

    backend, model_type = backends().get(target.backend), target.model_type
    if backend is None or model_type is None:
        return None
    image = image_of(backend, target.release, None)
    pins = pins_at(image, target.release) if image else None
    version = pins.pinned("transformers", target.backend) if pins else None
    return known_to_transformers(model_type, version) if version else None


def judge_capabilities(config: "CanonicalConfig", target: "Target") -> list[Problem]:
    """Every refusal of the GPU and the image's vLLM, as problems of the verdict."""
    engine = engine_of(target)
    if engine is None:
        return []
    dtype = effective_dtype(config, target, engine)
    found = quantization(config, target, engine)
    problems = [
        *_dtype_problems(target, engine, dtype),
        *_auto_dtype_fallback(config, target, engine, dtype),
        *_unknown_checkpoint_dtype(config, target, engine),
        *_quantization_problems(target, engine, dtype, found),
        *_unknown_checkpoint_method(config, target, engine),
        *_unread_modelopt_checkpoint(config, target, engine),
        *_architecture_problems(target, engine),
        *_build_problems(target, engine),
    ]
    return problems


def _vllm_model_type(target: "Target") -> str | None:
    """The model type vLLM's float16 table is keyed by: the normalized config's, else the identity's."""
    return target.arch.model_type if target.arch is not None else target.model_type


def _dtype_problems(target: "Target", engine: Engine, dtype: Dtype | None) -> list[Problem]:
    if dtype is None:
        return []
    capabilities, gpu, model_type = engine.capabilities, engine.gpu, _vllm_model_type(target)
    refused = capabilities.float16_unsupported.get(model_type) if model_type is not None else None
    key = dtype.key or MODEL_KEY
    if dtype.name == "bfloat16" and gpu is not None and not engine.supports_bfloat16:
        minimum = _capability_text(capabilities.bfloat16_min_capability or 80)
        newer = ", ".join(families_with_capability(capabilities.bfloat16_min_capability or 80))
        advice = (
            f"float16 is refused for {model_type or 'this model'} too: use a GPU of compute capability "
            f"{minimum} or more ({newer})"
            if refused
            else f"set option.dtype=fp16, or use a GPU of compute capability {minimum} or more ({newer})"
        )
        message = (
            f"{dtype.reason}: bfloat16, which vLLM {capabilities.version} refuses on the {gpu.name} (compute "
            f"capability {_capability_text(gpu.compute_capability)}; bfloat16 needs {minimum}) — {advice}"
        )
        return [Problem("dtype-unsupported-by-gpu", "error", message, key)]
    if dtype.name == "float16" and refused:
        advice = (
            "set option.dtype=bf16"
            if engine.supports_bfloat16
            else "use a GPU with bfloat16 (compute capability 8.0+)"
        )
        message = (
            f"{dtype.reason}: float16, which vLLM {capabilities.version} refuses for {model_type or ''} "
            f"({refused.rstrip('.')}) — {advice}"
        )
        return [Problem("dtype-refused-for-model", "error", message, key)]
    return []


def _auto_dtype_fallback(
    config: "CanonicalConfig", target: "Target", engine: Engine, dtype: Dtype | None
) -> list[Problem]:
    """dtype auto with a checkpoint dtype the GPU lacks, in a vLLM that picks another (``_resolve_auto_dtype``,
    0.10+): no refusal — vLLM logs a warning and runs the dtype it falls back to, so a warning here too."""
    capabilities, gpu, arch = engine.capabilities, engine.gpu, target.arch
    fallback = capabilities.auto_dtype_fallback
    if (
        dtype is None
        or gpu is None
        or arch is None
        or fallback is None
        or not capabilities.auto_dtype_supported_by_gpu
        or (config.get("option.dtype") or "auto").strip().lower() != "auto"
    ):
        return []
    checkpoint = canonical_dtype(arch.torch_dtype)
    if checkpoint is None or checkpoint == dtype.name or checkpoint == "float32":
        return []  # float32 checkpoints run float16 on every GPU: that is no fallback
    message, source = fallback
    device = f"'{gpu.name}' (with compute capability {_capability_text(gpu.compute_capability)})"
    said = (
        message.replace("%s", device, 1)
        .replace("%s", f"torch.{checkpoint}", 1)
        .replace("%s", f"torch.{dtype.name}", 1)
    )
    minimum = _capability_text(capabilities.bfloat16_min_capability or 80)
    text = (
        f"dtype auto: {arch.model_id} is stored in {checkpoint}, which the {gpu.name} (compute capability "
        f"{_capability_text(gpu.compute_capability)}) does not run; vLLM {capabilities.version} does not stop but logs "
        f"'{said}' ({source}) and serves {dtype.name}, whose range differs from what the model was trained in — write "
        f"option.dtype to make the choice explicit, or use a GPU of compute capability {minimum} or more"
    )
    return [Problem("dtype-unsupported-by-gpu", "warning", text, MODEL_KEY)]


def _unknown_checkpoint_dtype(config: "CanonicalConfig", target: "Target", engine: Engine) -> list[Problem]:
    """dtype auto on a GPU without bfloat16, in a vLLM that keeps the checkpoint's dtype, for a model not
    known here: most current checkpoints are bfloat16, and the file is one line from running either way."""
    capabilities, gpu = engine.capabilities, engine.gpu
    if (
        (target.arch is not None and target.arch.config_verbatim)
        or not (config.get(MODEL_KEY) or "").strip()  # no model named: nothing says a checkpoint is bfloat16
        or gpu is None
        or engine.supports_bfloat16
        or capabilities.auto_dtype_supported_by_gpu
        or _vllm_model_type(target) in capabilities.float16_unsupported  # fp16 would not help either
        or (config.get("option.dtype") or "auto").strip().lower() != "auto"
    ):
        return []
    minimum = _capability_text(capabilities.bfloat16_min_capability or 80)
    message = (
        f"dtype auto keeps the checkpoint's dtype in vLLM {capabilities.version}, and the {gpu.name} (compute "
        f"capability {_capability_text(gpu.compute_capability)}) has no bfloat16 (it needs {minimum}): a bfloat16 "
        "checkpoint — most current models (Llama 3, Qwen 2.5, Mistral, Gemma) — fails at start-up. "
        f"{'The model is' if target.arch is None else 'Its dtype is'} not known here, so this cannot be checked: "
        "set option.dtype=fp16, or pass --model DIR (or --hub) to check it"
    )
    key = "option.dtype" if config.has("option.dtype") else MODEL_KEY
    return [Problem("dtype-unsupported-by-gpu", "warning", message, key)]


def _quantization_problems(
    target: "Target", engine: Engine, dtype: Dtype | None, found: Quantization | None
) -> list[Problem]:
    if found is None:
        return []
    problems = []
    method, gpu, version = found.method, engine.gpu, engine.capabilities.version
    key = found.key or MODEL_KEY
    if gpu is not None and gpu.compute_capability < method.min_capability:
        what = (
            f"{found.key}={method.name}" if found.explicit else f"the checkpoint's {method.name} quantization"
        )
        if found.named_by:
            what += f" (its name's {found.named_by} suffix says so; config.json is not read offline)"
        problems.append(
            Problem(
                "quantization-unsupported-by-gpu",
                "error",
                f"{what}: vLLM {version}'s {method.name} kernels need compute capability "
                f"{_capability_text(method.min_capability)}; the {gpu.name} has "
                f"{_capability_text(gpu.compute_capability)} — use a newer GPU, another method, or a newer LMI release",
                key,
            )
        )
    if not found.explicit:
        return problems  # for a checkpoint's own method vLLM may pick a variant (awq -> awq_marlin) that takes more
    if dtype is not None and method.activation_dtypes and dtype.name not in method.activation_dtypes:
        allowed = ", ".join(method.activation_dtypes)
        problems.append(
            Problem(
                "quantization-dtype-unsupported",
                "error",
                f"{dtype.reason}: {dtype.name}, which vLLM {version}'s {method.name} kernels do not take (they take "
                f"{allowed}) — set option.dtype to {method.activation_dtypes[0]}",
                dtype.key or key,
            )
        )
    problems.extend(_checkpoint_problems(target, method, key))
    return problems


def _unknown_checkpoint_method(config: "CanonicalConfig", target: "Target", engine: Engine) -> list[Problem]:
    """A checkpoint quantized with a method the image's vLLM does not know: ModelConfig stops the start-up
    ("Unknown quantization method: mxfp4. Must be one of [...]") before any weight is read."""
    from lmi_config.knowledge.capabilities import first_release_knowing_quantization, quantization_name

    known, declared = engine.capabilities.known_quantization, checkpoint_method(target)
    if known is None or declared is None or target.arch is None:
        return []
    if quantization_name(declared) in {quantization_name(name) for name in known}:
        return []
    version, shown = engine.capabilities.version, shorten(declared, 40)
    first = first_release_knowing_quantization(declared)
    later = (
        f"vLLM {first} is the first LMI image's vLLM that loads it"
        if first
        else "no LMI image's vLLM loads it"
    )
    message = (
        f"{target.model_id} is quantized with {shown} ({target.arch.quantization_basis}), a method vLLM {version} "
        f"does not know: the start-up stops with 'Unknown quantization method: {shown}' — {later}; use an LMI "
        "release whose vLLM has it, or a checkpoint in another format"
    )
    key = "option.quantize" if config.has("option.quantize") else MODEL_KEY
    return [Problem("quantization-unknown-to-engine", "error", message, key)]


def _unread_modelopt_checkpoint(config: "CanonicalConfig", target: "Target", engine: Engine) -> list[Problem]:
    """A ModelOpt FP8 checkpoint whose quantization only hf_quant_config.json states, on a vLLM that reads
    that file only when asked (0.8.4 and older; ``modelopt_checkpoint_detected``): without
    option.quantize it loads unquantized, its FP8 weights as 16-bit ones and its weight scales into
    parameters that do not exist (vLLM 0.8.4's llama.py stops on the first with a KeyError)."""
    arch = target.arch
    if arch is None or engine.capabilities.modelopt_checkpoint_detected or config.get("option.quantize"):
        return []
    inner = arch.modelopt_quantization
    if arch.declared_quantization or inner is None or str(inner.get("quant_algo") or "").upper() != "FP8":
        return []
    from lmi_config.knowledge.capabilities import first_release_detecting_modelopt
    from lmi_config.shape.dimensions import modelopt_method

    version, first = engine.capabilities.version, first_release_detecting_modelopt()
    # the method name: what the first release that reads the file unasked maps FP8 to (generated)
    name = modelopt_method(arch.loading["hf_quant_config"], first) if first else None
    known = engine.capabilities.known_quantization or frozenset()
    fix = (
        f"set option.quantize={name}"
        if name in known
        else f"vLLM {version} has no {name} method: use an LMI release whose vLLM has it"
        if name
        else f"set option.quantize to vLLM {version}'s ModelOpt FP8 method"
    )
    message = (
        f"{target.model_id} keeps its FP8 quantization in hf_quant_config.json (ModelOpt), which vLLM {version} "
        "reads only when asked: unasked it loads the checkpoint unquantized, its FP8 weights as 16-bit ones, and "
        "stops on the weight scales it has no parameter for (a KeyError at start-up) — "
        f"{fix}"
        + (f", or an LMI image with vLLM {first} or later, which reads the file unasked" if first else "")
    )
    return [Problem("quantization-unknown-to-engine", "error", message, MODEL_KEY)]


def _checkpoint_problems(target: "Target", method: QuantizationMethod, key: str) -> list[Problem]:
    """The method the configuration names against what config.json declares: a pre-quantized method needs a
    checkpoint quantized that way; any method, online ones too, must match a quantized checkpoint's own
    (ModelConfig._verify_quantization: "Quantization method specified in the model config (awq) does not
    match the quantization method specified in the `quantization` argument (fp8)")."""
    if target.arch is None or target.arch.quantization_unknown:
        return []  # a copy named as quantized (-FP8, -Int4) in a format not known here: nothing to compare
    declared, name = checkpoint_method(target), method.name
    if declared is None and not method.config_filenames:
        return []  # an online method (fp8, in-flight bitsandbytes) quantizes a full-precision checkpoint as it loads
    if declared is None:
        files = " / ".join(method.config_filenames)
        message = (
            f"{target.arch.model_id} has no quantization_config in config.json: vLLM's {name} reads a pre-quantized "
            f"checkpoint ({files}), so the load stops with 'Cannot find the config file for {name}' — use a "
            f"checkpoint quantized with {name}, or an online method (fp8)"
        )
        return [Problem("quantization-not-in-checkpoint", "error", message, key)]
    if (
        declared is not None
        and declared != name
        and not any({declared, name} <= family for family in _FAMILIES)
    ):
        shown = shorten(declared, 40)
        message = (
            f"the checkpoint is quantized with {shown} ({target.arch.quantization_basis}) but the configuration "
            f"asks vLLM for {name}: vLLM refuses the mismatch — remove {key} (vLLM reads {shown} from the checkpoint)"
        )
        return [Problem("quantization-not-in-checkpoint", "error", message, key)]
    return []


def _architecture_problems(target: "Target", engine: Engine) -> list[Problem]:
    capabilities, architectures = engine.capabilities, target.architectures
    if not architectures:
        return []
    listed = capabilities.native_architectures | capabilities.through_transformers
    if any(name in listed for name in architectures) or transformers_knows(target) is False:
        return []  # transformers_knows False: model-type-unsupported says the image cannot even read the config
    architecture, model_id = architectures[0], target.model_id
    sibling = target.inferred_from
    inferred = (
        f" (the architecture of {sibling}, the same family at another size: check with --model or --hub)"
        if sibling
        else ""
    )
    newer = first_release_with(architecture)
    later = (
        f"vLLM {newer} runs it natively" if newer else "no vLLM release in an LMI image runs it natively yet"
    )
    if capabilities.transformers_fallback and architecture not in capabilities.previously_supported:
        message = (
            f"{model_id} ({architecture}) is not in vLLM {capabilities.version}'s model registry: it loads only "
            f"through the Transformers backend, if its transformers code supports it, and slower — {later}"
        )
        return [
            Problem("architecture-through-transformers-fallback", "warning", message + inferred, MODEL_KEY)
        ]
    removed = " (removed from this release)" if architecture in capabilities.previously_supported else ""
    message = (
        f"{model_id} ({architecture}) is not in vLLM {capabilities.version}'s model registry{removed}: the "
        f"start-up stops with 'Model architectures ['{architecture}'] are not supported' — {later}; use an LMI "
        "release whose vLLM has it"
    )
    # an architecture inferred from a sibling checkpoint is not the file's own fact: a warning
    severity = "warning" if inferred else "error"
    return [Problem("architecture-unknown-to-engine", severity, message + inferred, MODEL_KEY)]


def _build_problems(target: "Target", engine: Engine) -> list[Problem]:
    """A GPU the image's vLLM kernels are not built for: older than every architecture they are built
    for, or of a newer major architecture than all of them (a CUDA that predates the GPU). Code built
    for X.y runs only on X.z with z >= y."""
    from lmi_config.knowledge.build_archs import image_cuda, newest_release_built_for, vllm_build_archs

    gpu = engine.gpu
    built = vllm_build_archs(target.release.vllm, image_cuda(target.release))
    if gpu is None or built is None or built.runs_on(gpu.compute_capability):
        return []
    capability = gpu.compute_capability
    other = newest_release_built_for(capability)
    instance = target.instance.instance_type if target.instance else "this instance"
    if capability < built.oldest:
        advice = (
            f"use LMI {other.label()} (its vLLM {other.vllm} is built for it) or a GPU of compute capability "
            f"{_capability_text(built.oldest)} or more"
            if other is not None
            else f"use a GPU of compute capability {_capability_text(built.oldest)} or more"
        )
        message = (
            f"vLLM {target.release.vllm} in the LMI {target.release.label()} image (CUDA {built.cuda}) is built for compute "
            f"capability {_capability_text(built.oldest)} and newer ({built.source.split(' ')[0]}); the "
            f"{gpu.name} of {instance} is {_capability_text(capability)}, so its kernels do not run there — {advice}"
        )
        return [Problem("gpu-not-in-image-build", "error", message, None)]
    advice = (
        f"use LMI {other.label()} (its vLLM {other.vllm} is built for it)"
        if other is not None
        else "no LMI image in the data is built for it: use another GPU"
    )
    message = (
        f"vLLM {target.release.vllm} in the LMI {target.release.label()} image (CUDA {built.cuda}) is built for compute "
        f"capability {_capability_text(built.oldest)} to {_capability_text(built.newest)} "
        f"({built.source.split(' ')[0]}); the {gpu.name} of {instance} is {_capability_text(capability)}, a newer "
        "architecture than its CUDA knows: PyTorch warns that the GPU 'is not compatible with the current PyTorch "
        f"installation' and no kernel runs there — {advice}"
    )
    return [Problem("gpu-not-in-image-build", "error", message, None)]
