"""What a GPU and an image's engine can run: compute capability per GPU (``gpu_devices.json``) and,
per vLLM release, its dtype checks, quantization methods and model registry (``vllm_capabilities.json``,
generated from vLLM's sources by ``scripts/gen_vllm_capabilities.py``)."""

from functools import cache
from typing import Any, NamedTuple

from lmi_config.knowledge import load_data, load_table, version_tuple

# LMI's option.dtype spellings -> torch's names (djl_python's properties map fp16/bf16/fp32 the same way)
DTYPE_NAMES = {
    "fp16": "float16", "float16": "float16", "half": "float16",
    "bf16": "bfloat16", "bfloat16": "bfloat16",
    "fp32": "float32", "float32": "float32", "float": "float32",
}  # fmt: skip


class GpuDevice(NamedTuple):
    name: str
    compute_capability: int  # 75 = 7.5
    architecture: str
    source: str

    def capability_text(self) -> str:
        """``7.5``: as NVIDIA and vLLM's messages write it."""
        return f"{self.compute_capability // 10}.{self.compute_capability % 10}"


class QuantizationMethod(NamedTuple):
    name: str
    min_capability: int
    activation_dtypes: tuple[str, ...]
    config_filenames: tuple[str, ...]  # empty: quantizes online, needs no quantized checkpoint
    source: str


class MaxLenRules(NamedTuple):
    """How one vLLM release derives the longest sequence from config.json (``_get_and_verify_max_len``)."""

    possible_keys: tuple[str, ...]
    model_max_length_replaces: bool
    not_scaled_types: frozenset[str]
    original_positions_types: frozenset[str]
    not_scaled_model_types: tuple[str, ...]  # matched as substrings of the model type, as vLLM does
    type_keys: tuple[str, ...]  # the keys the rope type is read from
    source: str


class VllmCapabilities(NamedTuple):
    """One vLLM release's facts (``version`` as the image pins it, ``read_from`` the release read)."""

    version: str
    read_from: str
    bfloat16_min_capability: int | None
    bfloat16_source: str | None
    auto_dtype_supported_by_gpu: bool
    auto_dtype_source: str
    # the warning vLLM logs when dtype auto falls back from a checkpoint dtype the GPU lacks (message, line)
    auto_dtype_fallback: tuple[str, str] | None
    float16_unsupported: dict[str, str]
    float16_source: str
    quantization: dict[str, QuantizationMethod]
    known_quantization: frozenset[str] | None  # every method name the engine accepts (None: not read)
    known_quantization_source: str | None
    native_architectures: frozenset[str]
    multimodal_architectures: frozenset[str]
    previously_supported: frozenset[str]
    through_transformers: frozenset[str]
    transformers_fallback: bool
    # hf_quant_config.json read unasked (0.10+): a ModelOpt checkpoint loads as modelopt
    modelopt_checkpoint_detected: bool
    modelopt_quant_algos: dict[str, str]  # ModelOpt quant_algo -> method (empty: no normalization)
    modelopt_algos_case_insensitive: bool
    fallback_source: str
    registry_source: str
    max_len: MaxLenRules | None = None


@cache
def gpu_device_names() -> list[str]:
    """Every GPU ``gpu_devices.json`` names (the accelerator names of the instance catalogue), sorted."""
    return sorted(load_data("gpu_devices.json")["devices"])


def gpu_device(accelerator_name: str | None) -> GpuDevice | None:
    """The GPU an instance type carries (its ``accelerator_name``), or None for an unknown one."""
    row = load_data("gpu_devices.json")["devices"].get(accelerator_name or "")
    if row is None:
        return None
    return GpuDevice(accelerator_name or "", row["compute_capability"], row["architecture"], row["source"])


def _release(version: str, row: dict[str, Any]) -> VllmCapabilities:
    bf16 = row["bfloat16_min_capability"] or {}
    registry = row["architectures"]
    known = row.get("known_quantization_methods")
    return VllmCapabilities(
        version=version,
        read_from=row["read_from"],
        bfloat16_min_capability=bf16.get("value"),
        bfloat16_source=bf16.get("source"),
        auto_dtype_supported_by_gpu=row["auto_dtype_resolution"]["value"] == "supported-by-gpu",
        auto_dtype_source=row["auto_dtype_resolution"]["source"],
        auto_dtype_fallback=(
            (fallback["message"], fallback["source"])
            if (fallback := row["auto_dtype_resolution"].get("fallback_warning"))
            else None
        ),
        float16_unsupported=dict(row["float16_unsupported_model_types"]["value"]),
        float16_source=row["float16_unsupported_model_types"]["source"],
        quantization={
            name: QuantizationMethod(
                name,
                method["min_capability"],
                tuple(method["activation_dtypes"]),
                tuple(method["config_filenames"]),
                method["source"],
            )
            for name, method in row["quantization"].items()
        },
        known_quantization=frozenset(known["values"]) if known else None,
        known_quantization_source=(known["refused_by"] or known["source"]) if known else None,
        native_architectures=frozenset(registry["native"]),
        multimodal_architectures=frozenset(registry["multimodal"]),
        previously_supported=frozenset(registry["previously_supported"]),
        through_transformers=frozenset(registry["through_transformers"]),
        transformers_fallback=bool(registry["transformers_fallback"]["value"]),
        modelopt_checkpoint_detected=bool((row.get("modelopt_checkpoint_detected") or {}).get("value")),
        modelopt_quant_algos=dict((row.get("modelopt_quant_algos") or {}).get("value") or {}),
        modelopt_algos_case_insensitive=bool((row.get("modelopt_quant_algos") or {}).get("case_insensitive")),
        fallback_source=registry["transformers_fallback"]["source"],
        registry_source=registry["source"],
        max_len=_max_len(row.get("max_model_len")),
    )


def _max_len(row: dict[str, Any] | None) -> MaxLenRules | None:
    if not row:
        return None
    return MaxLenRules(
        possible_keys=tuple(row["possible_keys"]),
        model_max_length_replaces=bool(row["model_max_length_replaces"]),
        not_scaled_types=frozenset(row["not_scaled_types"]),
        original_positions_types=frozenset(row["original_positions_types"]),
        not_scaled_model_types=tuple(row["not_scaled_model_types"]),
        type_keys=tuple(row["type_keys"]),
        source=row["source"],
    )


def max_len_rules() -> tuple[MaxLenRules, ...]:
    """Every release's rules of the data, oldest first (the most permissive of them judges a target
    whose vLLM version is unknown)."""
    found = []
    for version in sorted(load_table("vllm_capabilities.json", "versions"), key=version_tuple):
        capabilities = vllm_capabilities(version)
        if capabilities is not None and capabilities.max_len is not None:
            found.append(capabilities.max_len)
    return tuple(found)


@cache
def vllm_capabilities(version: str | None) -> VllmCapabilities | None:
    """The facts of a vLLM version (a development build resolves to the release it was read from);
    None when no generated entry covers it (older than the data, or not yet generated)."""
    if not version:
        return None
    versions = load_table("vllm_capabilities.json", "versions")
    row = versions.get(version)
    if row is None:
        # a version the data does not list: the closest listed one of the same minor release, if any
        wanted = version_tuple(version)
        same_minor = [name for name in versions if version_tuple(name)[:2] == wanted[:2]]
        if not same_minor:
            return None
        row = versions[max(same_minor, key=version_tuple)]
    if row.get("same_as"):
        row = versions[row["same_as"]]
    return _release(version, row)


def canonical_dtype(value: str | None) -> str | None:
    """``bf16`` / ``bfloat16`` → ``bfloat16``; None for an unknown or empty spelling."""
    return DTYPE_NAMES.get((value or "").strip().lower())


@cache
def first_release_with(architecture: str) -> str | None:
    """The first vLLM release of the data whose registry runs ``architecture`` natively."""
    for version in sorted(load_table("vllm_capabilities.json", "versions"), key=version_tuple):
        capabilities = vllm_capabilities(version)
        if capabilities is not None and architecture in capabilities.native_architectures:
            return capabilities.read_from
    return None


def quantization_name(name: str) -> str:
    """A quantization method as compared across spellings (``compressed_tensors`` = ``compressed-tensors``)."""
    return name.strip().lower().replace("_", "-")


@cache
def first_release_knowing_quantization(method: str) -> str | None:
    """The first vLLM release of the data that accepts a checkpoint quantized with ``method``."""
    for version in sorted(load_table("vllm_capabilities.json", "versions"), key=version_tuple):
        capabilities = vllm_capabilities(version)
        known = capabilities.known_quantization if capabilities is not None else None
        if known is not None and quantization_name(method) in {quantization_name(name) for name in known}:
            return capabilities.read_from if capabilities is not None else None
    return None


def first_release_detecting_modelopt() -> str | None:
    """The first vLLM release of the data that reads a ModelOpt checkpoint's hf_quant_config.json unasked."""
    for version in sorted(load_table("vllm_capabilities.json", "versions"), key=version_tuple):
        capabilities = vllm_capabilities(version)
        if capabilities is not None and capabilities.modelopt_checkpoint_detected:
            return capabilities.read_from
    return None


@cache
def families_with_capability(minimum: int) -> tuple[str, ...]:
    """The GPU instance families whose GPU has at least ``minimum`` compute capability (``g5``, ``p4d`` …)."""
    from lmi_config.knowledge.instances import instances

    found = {
        instance.family
        for instance in instances().values()
        if instance.accelerator == "gpu"
        and (device := gpu_device(instance.accelerator_name)) is not None
        and device.compute_capability >= minimum
    }
    return tuple(sorted(found))
