"""The NeuronConfig NxD Inference validates, as an LMI configuration builds it (djl-neuronx 0.32-0.34).

The route, each step read from code:

1. djl-serving (``option.rolling_batch=vllm``, ``option.model_loader=nxdi``): ``build_vllm_rb_properties``
   passes ``option.n_positions`` to vLLM as ``max_model_len`` (neuron_utils/utils.py:89 at 0.32.0-dlc);
   ``VllmRbProperties`` passes ``option.tensor_parallel_degree`` as ``tensor_parallel_size``,
   ``option.max_rolling_batch_size`` as ``max_num_seqs`` (vllm_rb_properties.py:203, :205), every other
   key vLLM's EngineArgs has (``option.speculative_model``, ``option.num_speculative_tokens``) as is
   (:243-248), and ``option.override_neuron_config`` parsed with ``ast.literal_eval`` (:147-158) onto the
   engine arguments (:236-240). ``option.quantize`` is dropped on this path (TNX_ONLY_PROPERTIES,
   neuron_utils/utils.py:37).
2. vllm-neuronx's loader (``data/nxd_loader.json`` ``loader``): the NeuronConfig arguments it derives from
   vLLM's configuration (``_get_default_neuron_config``; with a draft model
   ``_get_default_neuron_speculation_config``), updated key by key with override_neuron_config.
3. NxD Inference's ``NeuronConfig.__init__``: its own default for every argument not given
   (``data/nxd_loader.json`` ``versions``).

Each value keeps where it came from, so a finding says whether the user wrote it or a default set it.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from lmi_config.shape.frontend import integer

if TYPE_CHECKING:
    from lmi_config.configfile.canonical import CanonicalConfig
    from lmi_config.shape.dimensions import Target
    from lmi_config.shape.types import ContainerShape

OVERRIDE_KEY = "option.override_neuron_config"
DRAFT_KEY = "option.speculative_model"
SPECULATIVE_TOKENS_KEY = "option.num_speculative_tokens"
DJL_ROUTE = (
    "https://github.com/deepjavalibrary/djl-serving/blob/0.32.0-dlc/engines/python/setup/djl_python/"
    "properties_manager/vllm_rb_properties.py#L147"
)


class Unknown:
    """A value the judge cannot know (an expression of vLLM's configuration it does not model)."""

    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN = Unknown()


class OnDevice:
    """vllm-neuronx's on-device sampling configuration (an object NxD Inference finds truthy)."""

    def __repr__(self) -> str:
        return "OnDeviceSamplingConfig(...)"


ON_DEVICE = OnDevice()


class NxdSetting(NamedTuple):
    """One NeuronConfig argument: its value and who set it."""

    value: Any
    origin: str  # override | loader | default
    source: str  # the option, or the line of the loader or of NeuronConfig that set it


class NxdConfig(NamedTuple):
    """What the judge knows of the NxD Inference model the configuration builds."""

    version: str
    architecture: str | None  # the config.json architecture vllm-neuronx serves, when known
    model: Mapping[str, Any] | None  # data/nxd_loader.json's row of that architecture
    facts: Mapping[str, Any]  # data/nxd_loader.json's row of the version
    settings: dict[str, NxdSetting]
    override: dict[str, Any]
    speculation: bool  # a draft model: vllm-neuronx's speculation loader
    tp: int | None

    def value(self, name: str) -> Any:
        """The argument's value (UNKNOWN when not known)."""
        setting = self.settings.get(name)
        return setting.value if setting is not None else UNKNOWN

    def said(self, name: str) -> str:
        """``name=value`` and who set it, for a message."""
        setting = self.settings.get(name)
        if setting is None:
            return f"{name} (not known)"
        value = setting.value
        shown = (
            repr(value)
            if isinstance(value, str | bool | int | float | list | dict) or value is None
            else str(value)
        )
        if setting.origin == "override":
            return f"{name}={shown} ({OVERRIDE_KEY})"
        who = (
            "vllm-neuronx's default"
            if setting.origin == "loader"
            else f"NeuronConfig's default in NxD Inference {self.version}"
        )
        return f"{name}={shown} ({who}, {setting.source})"

    def written(self, name: str) -> bool:
        setting = self.settings.get(name)
        return setting is not None and setting.origin == "override"


def parsed_override(config: CanonicalConfig) -> dict[str, Any] | None:
    """option.override_neuron_config as djl-serving parses it (``ast.literal_eval``, a dict), {} when
    absent; None when djl-serving refuses it (another rule reports that)."""
    text = (config.get(OVERRIDE_KEY) or "").strip()
    if not text:
        return {}
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None
    return value if isinstance(value, dict) and all(isinstance(key, str) for key in value) else None


def nxdi_installed(target: Target) -> str | None:
    """The NxD Inference version the image installs, where the data reads it."""
    from lmi_config.knowledge.engine_support import engine_version
    from lmi_config.knowledge.nxd_loader import nxdi_version

    found = engine_version(target.release.djl, "nxdi")
    return found[0] if found and nxdi_version(found[0]) is not None else None


def _max_model_len(config: CanonicalConfig, target: Target, shape: ContainerShape) -> int | None:
    """What LMI passes vLLM as max_model_len: option.n_positions, else the container's default — the
    shape's sequence length unless it was read from override_neuron_config's seq_len."""
    from lmi_config.configfile.canonical import CanonicalConfig
    from lmi_config.shape.dimensions import resolve_sequence_length

    sequence = shape.sequence_length
    if sequence is None:
        return None
    if sequence.key != OVERRIDE_KEY:
        return sequence.value
    without = CanonicalConfig(
        settings={key: value for key, value in config.settings.items() if key != OVERRIDE_KEY}
    )
    resolved = resolve_sequence_length(without, target)
    return resolved.value if resolved is not None else None


def _dtype_name(shape: ContainerShape) -> Any:
    """The torch_dtype vllm-neuronx passes (TORCH_DTYPE_TO_NEURON_AMP of vLLM's dtype): always a name NxDI
    takes; the judge keeps vLLM's dtype as LMI maps option.dtype (DTYPE_MAPPER)."""
    names = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
    dtype = shape.dtype.value if shape.dtype is not None else None
    return names.get(dtype or "", dtype or UNKNOWN)


def _loader_values(
    config: CanonicalConfig, target: Target, shape: ContainerShape, batch: int | None
) -> dict[str, Any]:
    """The values of the loader's expressions over vLLM's configuration (what the djl-serving route gives)."""
    tokens, _ = integer(config, SPECULATIVE_TOKENS_KEY)
    max_model_len = _max_model_len(config, target, shape)
    tp = shape.tensor_parallel
    return {
        "parallel_config.tensor_parallel_size": tp if tp is not None else UNKNOWN,
        "batch_size": batch if batch is not None else UNKNOWN,
        "scheduler_config.max_num_seqs": batch if batch is not None else UNKNOWN,
        "batch_size > 1": batch > 1 if batch is not None else UNKNOWN,
        "scheduler_config.max_model_len": max_model_len if max_model_len is not None else UNKNOWN,
        "speculation_config.num_speculative_tokens": tokens if tokens is not None else UNKNOWN,
        "on_device_sampling_config": ON_DEVICE,
        "dict(top_k=1, do_sample=False)": ON_DEVICE,
        "TORCH_DTYPE_TO_NEURON_AMP[model_config.dtype]": _dtype_name(shape),
    }


def _evaluate(expression: str, settings: Mapping[str, NxdSetting]) -> Any:
    """A default of NeuronConfig written as an expression of its other fields (``[self.seq_len]``,
    ``self.seq_len - self.max_context_length``), else UNKNOWN."""
    try:
        tree = ast.parse(expression, mode="eval").body
    except SyntaxError:
        return UNKNOWN

    def value(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Attribute) and getattr(node.value, "id", None) == "self":
            found = next((s.value for name, s in settings.items() if name == node.attr), UNKNOWN)
            return found
        if isinstance(node, ast.List):
            return [value(item) for item in node.elts]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub | ast.Add):
            left, right = value(node.left), value(node.right)
            if isinstance(left, int) and isinstance(right, int):
                return left - right if isinstance(node.op, ast.Sub) else left + right
        return UNKNOWN

    result = value(tree)
    if isinstance(result, list) and any(item is UNKNOWN for item in result):
        return UNKNOWN
    return result


def nxd_config(config: CanonicalConfig, target: Target, shape: ContainerShape) -> NxdConfig | None:
    """The NeuronConfig arguments NxD Inference receives, each with its origin; None when the
    configuration does not load the model with NxD Inference, or when djl-serving refuses its
    override_neuron_config before NxD Inference runs."""
    from lmi_config.knowledge.nxd_loader import loader, nxdi_version
    from lmi_config.shape.engines import neuron_loader

    if target.accelerator != "neuron" or target.optimum_neuron_export is not None:
        return None
    if neuron_loader(config, target) != "nxdi" or shape.batching.rolling_batch.value != "vllm":
        return None
    version = nxdi_installed(target)
    override = parsed_override(config)
    if version is None or override is None:
        return None
    facts = nxdi_version(version)
    assert facts is not None
    route = loader()
    speculation = bool((config.get(DRAFT_KEY) or "").strip())
    defaults = route["speculation_defaults" if speculation else "defaults"]
    batch = shape.batch_size.value if shape.batch_size is not None else None
    values = _loader_values(config, target, shape, batch)
    settings: dict[str, NxdSetting] = {}
    for name, argument in defaults.items():
        if "expression" in argument and argument["expression"] is not None:
            value = values.get(argument["expression"], UNKNOWN)
        else:
            value = argument.get("value")
        where = f"neuronx_distributed.py:{argument['line']} {argument['source']}"
        settings[name] = NxdSetting(value, "loader", where)
    for name, value in override.items():
        settings[name] = NxdSetting(value, "override", OVERRIDE_KEY)
    pending = {name: entry for name, entry in facts["neuron_config"].items() if name not in settings}
    # defaults that name another field are resolved after it (seq_len before max_context_length)
    for attempt in range(3):
        for name, entry in list(pending.items()):
            where = f"models/config.py:{entry['line']} {entry['source']}"
            if entry.get("same_as"):
                attribute = entry["same_as"]
                source_name = next(
                    (key for key, row in facts["neuron_config"].items() if row.get("attribute") == attribute),
                    attribute,
                )
                if source_name in settings:
                    settings[name] = NxdSetting(settings[source_name].value, "default", where)
                    del pending[name]
            elif entry.get("expression"):
                value = _evaluate(entry["expression"], _by_attribute(settings, facts))
                if value is not UNKNOWN or attempt == 2:
                    settings[name] = NxdSetting(value, "default", where)
                    del pending[name]
            else:
                settings[name] = NxdSetting(entry.get("value"), "default", where)
                del pending[name]
    architecture = next((name for name in target.architectures if name in route["architectures"]), None)
    model = facts["models"].get(architecture) if architecture else None
    tp = settings["tp_degree"].value if "tp_degree" in settings else None
    return NxdConfig(
        version,
        architecture,
        model,
        facts,
        settings,
        override,
        speculation,
        tp if isinstance(tp, int) and not isinstance(tp, bool) else None,
    )


def _by_attribute(settings: Mapping[str, NxdSetting], facts: Mapping[str, Any]) -> dict[str, NxdSetting]:
    """The settings by NeuronConfig attribute name (``async`` is stored as ``async_mode``)."""
    found = dict(settings)
    for name, entry in facts["neuron_config"].items():
        if name in settings and entry.get("attribute"):
            found[entry["attribute"]] = settings[name]
    return found


def truthy(value: Any) -> bool:
    """How Python's ``if`` reads a NeuronConfig value (an unknown value is not judged truthy)."""
    if value is UNKNOWN:
        return False
    return bool(value)


# --- the model's config.json, where it was read from a file -----------------------------------------


def raw_model_config(target: Target) -> Mapping[str, Any] | None:
    """The model's config.json as written (NxD Inference reads every key of it through AutoConfig): from
    the local directory the model was read from, or the Hub cache entry lmi-config wrote; None for a
    catalog entry, whose config.json is not at hand."""
    arch = target.arch
    if arch is None:
        return None
    source = arch.source
    if source.endswith("config.json"):
        return _read(source, False)
    marker = "(cached in "
    if marker in source and source.endswith(")"):
        return _read(source[source.index(marker) + len(marker) : -1], True)
    return None


def _read(path: str, cached: bool) -> Mapping[str, Any] | None:
    try:
        stamp = os.stat(path).st_mtime_ns
    except (OSError, ValueError):
        return None
    return _read_at(path, cached, stamp)


@lru_cache(maxsize=32)
def _read_at(path: str, cached: bool, stamp: int) -> Mapping[str, Any] | None:
    from lmi_config.modelarch import read_json_file
    from lmi_config.modelfields import ModelResolutionError

    try:
        value = read_json_file(Path(path), "config.json")
    except ModelResolutionError:
        return None
    if cached:
        value = value.get("config") if isinstance(value, dict) else None
    return value if isinstance(value, dict) else None


# --- the edits a finding's advice names -----------------------------------------------------------

_REMOVE = re.compile(r"\bremove ([a-z_]+)\b")
_SET = re.compile(r"\bset ([a-z_]+) to ([A-Za-z0-9_.]+)")


def override_candidates(config: CanonicalConfig, advice: str) -> list[str | None]:
    """The option.override_neuron_config values the advice of a finding names, one per edit (``remove
    name``, ``set name to value``), written as a Python literal (djl-serving reads it with
    ``ast.literal_eval``); None where the edit leaves nothing to override (remove the option)."""
    override = parsed_override(config)
    if not override:
        return []
    found: list[str | None] = []
    for name in _REMOVE.findall(advice):
        if name in override:
            edited = {key: value for key, value in override.items() if key != name}
            found.append(repr(edited) if edited else None)
    for name, text in _SET.findall(advice):
        value: Any = {"True": True, "False": False}.get(text, int(text) if text.isdigit() else text)
        if override.get(name, UNKNOWN) != value:
            found.append(repr({**override, name: value}))
    return list(dict.fromkeys(found))
