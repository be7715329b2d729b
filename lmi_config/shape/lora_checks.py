"""The judge's verdict on vLLM's LoRA start-up checks (``option.enable_lora=true``), as each image's vLLM
makes them: the adapters LMI loads at start-up, the LoRA settings ``LoRAConfig`` verifies, and whether
the model class serves LoRA at all.

Adapters: djl-serving's ``ModelInfo`` registers every directory under ``adapters/`` beside the model's
serving.properties when LoRA is on, and vLLM reads each one's ``adapter_config.json`` (PEFT's ``r``,
``bias``, ``use_dora``, ``modules_to_save``, the required fields). They are read here with bounded
reads (``modelarch.local_adapters``), from the directory of the serving.properties the configuration
comes from; an adapter elsewhere (an S3 prefix, a registration at run time) is not seen.

Each judgement fires only where the image's vLLM makes the check (``data/vllm_checks.json``), quotes
its message and cites its line; each problem's ``check`` is the slug of the rule that reports it
(``rules/lora.py``).
"""

from __future__ import annotations

import ast
import operator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lmi_config.knowledge.engine_checks import EngineCheck, covered_checks
from lmi_config.shape.frontend import flag, integer
from lmi_config.shape.problems import Problem

if TYPE_CHECKING:
    from lmi_config.configfile.canonical import CanonicalConfig
    from lmi_config.modelarch import LoraAdapter
    from lmi_config.shape.dimensions import Target
    from lmi_config.shape.types import ContainerShape

RANK = "lora-rank-above-max"
ADAPTER = "lora-adapter-unsupported"
SETTINGS = "lora-settings-refused"
MODEL = "lora-model-unsupported"
RANK_KEY = "option.max_lora_rank"
ENABLE_KEY = "option.enable_lora"
# PEFTHelper's fields without a default (vLLM 0.7+): an adapter_config.json without them is refused
REQUIRED_FIELDS = ("r", "lora_alpha", "target_modules")
# the LoRA kernel's token limit (vLLM 0.4-0.5 verify_with_scheduler_config)
KERNEL_TOKENS = 65528


def judge_lora(config: CanonicalConfig, target: Target, shape: ContainerShape) -> list[Problem]:
    """The LoRA start-up checks of the image's vLLM this configuration fails."""
    if target.backend != "vllm" or not target.release.vllm or not flag(config, ENABLE_KEY):
        return []
    from lmi_config.shape.lora_modules import judge_adapter_modules  # only with LoRA on

    vllm = target.release.vllm
    adapters = configured_adapters(config, target)
    features = _adapter_features(config, adapters, vllm)
    return [
        *_model_support(target, vllm),
        *_ranks(config, adapters, vllm),
        *features,
        *([] if features else judge_adapter_modules(target, adapters, vllm)),
        *_settings(config, target, shape, vllm),
    ]


def configured_adapters(config: CanonicalConfig, target: Target) -> tuple[LoraAdapter, ...]:
    """The adapters of the model directory: beside the serving.properties the configuration comes from,
    and in the local model directory the model was read from (where its config.json sits, as in
    /opt/ml/model); none for an env file or text alone, whose model directory is not known."""
    from lmi_config.modelarch import local_adapters

    directories: list[Path] = []
    origin = next((s.origin for s in config.settings.values() if s.origin.kind == "properties"), None)
    if origin is not None and origin.path:
        directories.append(Path(origin.path).parent)
    source = target.arch.source if target.arch is not None else ""
    if source.endswith("config.json"):
        directories.append(Path(source).parent)
    found: dict[str, LoraAdapter] = {}
    for directory in directories:
        try:
            usable = directory.is_dir()
        except (OSError, ValueError):
            usable = False
        for adapter in local_adapters(directory) if usable else ():
            found.setdefault(adapter.name, adapter)
    return tuple(found.values())


def max_lora_rank(config: CanonicalConfig) -> tuple[int | None, str]:
    """option.max_lora_rank as written, else the default LMI passes, and where it comes from."""
    from lmi_config.knowledge.model_classes import lmi_default

    written, key = integer(config, RANK_KEY)
    if written is not None:
        return written, f"{RANK_KEY}={written}"
    default = lmi_default(RANK_KEY)
    return default, f"{RANK_KEY} unset: LMI passes {default}"


def _key(config: CanonicalConfig, preferred: str) -> str:
    return preferred if config.has(preferred) else ENABLE_KEY


# --- the model class ---------------------------------------------------------------------------------


def _model_support(target: Target, vllm: str) -> list[Problem]:
    from lmi_config.knowledge.model_classes import model_classes

    facts = model_classes(vllm)
    refused = [
        name for name in target.architectures if facts is not None and name in facts.no_lora_architectures
    ]
    if facts is None or not refused or any(name in facts.lora_architectures for name in target.architectures):
        return []
    checks = covered_checks(MODEL, vllm)
    if not checks:
        return []
    check = checks[0]
    message = (
        f"{target.model_id} is a {refused[0]}, whose model class in vLLM {vllm} does not support LoRA "
        f"({facts.registry_source}): with {ENABLE_KEY}=true the start-up stops with "
        f"'{check.message_with({'model_class.__name__': refused[0]})}' ({check.cited}) — serve it without "
        "LoRA (merge the adapter into the weights), or a model whose class supports LoRA"
    )
    if target.inferred_from:  # the architecture of another size of the family: not this checkpoint's fact
        inferred = f" (architecture inferred from {target.inferred_from}: check with --model or --hub)"
        return [Problem(MODEL, "warning", message + inferred, ENABLE_KEY)]
    return [Problem(MODEL, "error", message, ENABLE_KEY)]


# --- the adapters' adapter_config.json ---------------------------------------------------------------------


def _ranks(config: CanonicalConfig, adapters: tuple[LoraAdapter, ...], vllm: str) -> list[Problem]:
    limit, said_limit = max_lora_rank(config)
    over = [
        adapter
        for adapter in adapters
        if adapter.rank is not None and limit is not None and adapter.rank > limit
    ]
    if not over:
        return []
    checks = covered_checks(RANK, vllm)
    if not checks:
        return []
    check = checks[0]
    top = max(over, key=lambda adapter: adapter.rank or 0)
    values = {"rank": top.rank, "r": top.rank, "max_lora_rank": limit}
    said = check.message_with(values)
    for part in check.parts:  # PEFTHelper.validate_legal joins the parts it finds
        if "max_lora_rank" in part["condition"]:
            said = EngineCheck.fill(part["message"], values)
    names = ", ".join(f"{adapter.name} (r={adapter.rank})" for adapter in over)
    allowed = _allowed_ranks(vllm, top.rank or 0)
    advice = (
        f"set {RANK_KEY}={allowed}" if allowed else f"retrain the adapters with a rank of at most {limit}"
    )
    message = (
        f"adapter{'s' if len(over) > 1 else ''} {names} under adapters/ ha{'ve' if len(over) > 1 else 's'} a rank "
        f"above max_lora_rank {limit} ({said_limit}): vLLM {vllm} stops loading with '{said}' ({check.cited}) — "
        f"{advice}"
    )
    return [Problem(RANK, "error", message, _key(config, RANK_KEY))]


def _allowed_ranks(vllm: str, rank: int) -> int | None:
    """The smallest max_lora_rank the release accepts that holds ``rank`` (``data/vllm_limits.json``)."""
    from lmi_config.knowledge.options import vllm_limits_for

    limits = vllm_limits_for(vllm)
    ranks = sorted(int(value) for value in (limits or {}).get("max_lora_rank", ()))
    return next((value for value in ranks if value >= rank), None) if ranks else rank


def _adapter_features(config: CanonicalConfig, adapters: tuple[LoraAdapter, ...], vllm: str) -> list[Problem]:
    """What PEFTHelper refuses besides the rank: DoRA, modules_to_save, a bias, missing fields."""
    problems: list[tuple[LoraAdapter, EngineCheck, str]] = []
    checks = covered_checks(ADAPTER, vllm)
    missing_check = next(
        (check for check in checks if "Missing required configuration fields" in check.message), None
    )
    joined = next((check for check in checks if check.message.startswith("{") and check.parts), None)
    for adapter in adapters:
        fields = adapter.config
        if fields is None:
            continue
        missing = [name for name in REQUIRED_FIELDS if name not in fields]
        if missing and missing_check is not None:
            problems.append(
                (adapter, missing_check, f"Missing required configuration fields: {set(missing)}")
            )
            continue
        if joined is None:
            saved = _saved_weight(fields, checks)
            if saved is not None:
                problems.append((adapter, *saved))
            continue
        parts = [
            EngineCheck.fill(part["message"], {})
            for part in joined.parts
            if "max_lora_rank" not in part["condition"] and _part_applies(part["condition"], fields, config)
        ]
        if parts:
            problems.append((adapter, joined, " ".join(parts)))
    if not problems:
        return []
    adapter, check, said = problems[0]
    others = (
        f" (and {len(problems) - 1} more adapter{'s' if len(problems) > 2 else ''})"
        if len(problems) > 1
        else ""
    )
    message = (
        f"adapter {adapter.name} ({adapter.config_path}){others}: vLLM {vllm} refuses {_refused_part(check)} with "
        f"'{said}' ({check.cited}) — retrain or convert the adapter (plain LoRA: no DoRA, no modules_to_save, "
        "bias none), or remove it from adapters/"
    )
    return [Problem(ADAPTER, "error", message, ENABLE_KEY)]


def _refused_part(check: EngineCheck) -> str:
    if check.function == "parse_fine_tuned_lora_name":
        return "the whole modules_to_save weights PEFT saves with its LoRA weights"
    return "its adapter_config.json"


def _saved_weight(fields: Any, checks: tuple[EngineCheck, ...]) -> tuple[EngineCheck, str] | None:
    """Before PEFTHelper (vLLM 0.4-0.6): PEFT saves each module of modules_to_save whole
    (``base_model.model.lm_head.weight``) beside the LoRA weights, and the loader's
    parse_fine_tuned_lora_name refuses a weight that is neither lora_A, lora_B nor an embedding's."""
    saved = fields.get("modules_to_save")
    parse = next((check for check in checks if check.function == "parse_fine_tuned_lora_name"), None)
    if not saved or not isinstance(saved, list) or parse is None:
        return None
    name = f"base_model.model.{saved[0]}.weight"
    said = parse.message_with({"name": name}) if parse.message else f"AssertionError on {name}"
    return parse, said


def _part_applies(condition: str, fields: Any, config: CanonicalConfig) -> bool | None:
    """Whether a part's condition (``self.use_dora``, ``self.bias != 'none' and (not
    lora_config.bias_enabled)``) holds for an adapter config; unknown names make it False (not judged)."""
    values = {
        "self.modules_to_save": fields.get("modules_to_save"),
        "self.use_dora": fields.get("use_dora", False),
        "self.bias": fields.get("bias", "none"),
        "lora_config.bias_enabled": flag(config, "option.enable_lora_bias"),
    }
    try:
        return bool(_evaluate(ast.parse(condition, mode="eval").body, values))
    except ValueError:
        return False


_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne}


def _evaluate(node: ast.AST, values: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Attribute | ast.Name):
        text = ast.unparse(node)
        if text not in values:
            raise ValueError(text)
        return values[text]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not _evaluate(node.operand, values)
    if isinstance(node, ast.BoolOp):
        results = [_evaluate(value, values) for value in node.values]
        return all(results) if isinstance(node.op, ast.And) else any(results)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        return _COMPARE[type(node.ops[0])](
            _evaluate(node.left, values), _evaluate(node.comparators[0], values)
        )
    raise ValueError(ast.unparse(node))


# --- LoRAConfig and its verification against the scheduler and the cache --------------------------------------


def _settings(config: CanonicalConfig, target: Target, shape: ContainerShape, vllm: str) -> list[Problem]:
    from lmi_config.knowledge.model_classes import lmi_default, model_classes

    checks = covered_checks(SETTINGS, vllm)
    if not checks:
        return []
    loras = integer(config, "option.max_loras")[0]
    loras = loras if loras is not None else lmi_default("option.max_loras")
    cpu_loras = integer(config, "option.max_cpu_loras")[0]
    extra, _ = integer(config, "option.lora_extra_vocab_size")
    facts = model_classes(vllm)
    found: list[tuple[EngineCheck, str, dict[str, object]]] = []

    def refused(pattern: str, key: str, values: dict[str, object]) -> None:
        for check in checks:
            if pattern in check.message:
                found.append((check, key, values))
                return

    if loras is not None and loras < 1:
        refused("must be >= 1", "option.max_loras", {"max_loras": loras})
    if cpu_loras is not None and loras is not None and cpu_loras < loras:
        refused("max_cpu_loras (", "option.max_cpu_loras", {"max_cpu_loras": cpu_loras, "max_loras": loras})
    if (
        extra is not None
        and facts is not None
        and facts.extra_vocab_sizes
        and extra not in facts.extra_vocab_sizes
    ):
        refused("lora_extra_vocab_size (", "option.lora_extra_vocab_size", {"lora_extra_vocab_size": extra})
    found.extend(_scheduler(config, target, shape, checks))
    return [
        Problem(
            SETTINGS,
            "error",
            f"{key} with {ENABLE_KEY}=true: vLLM {vllm}'s LoRAConfig stops the start-up with "
            f"'{check.message_with(values)}' ({check.cited})",
            key if config.has(key) else ENABLE_KEY,
        )
        for check, key, values in found
    ]


def _scheduler(
    config: CanonicalConfig, target: Target, shape: ContainerShape, checks: tuple[EngineCheck, ...]
) -> list[tuple[EngineCheck, str, dict[str, object]]]:
    """LoRA with chunked prefill (0.5-0.6), with more than the LoRA kernel's tokens per step (0.4-0.5),
    with CPU offload (0.7; V0 of 0.8-0.10)."""
    from lmi_config.shape.attention_selection import engine_environment
    from lmi_config.shape.startup_checks import chunked_prefill_on
    from lmi_config.sizing.vllm_release import vllm_version

    found: list[tuple[EngineCheck, str, dict[str, object]]] = []
    by_text = {check.message: check for check in checks}
    chunked = next(
        (c for text, c in by_text.items() if text.startswith("LoRA is not supported with chunked")), None
    )
    if chunked is not None and chunked_prefill_on(config, target, shape):
        found.append((chunked, "option.enable_chunked_prefill", {}))
    kernel = next((c for text, c in by_text.items() if "must be <= 65528" in text), None)
    tokens = shape.engine.max_num_batched_tokens
    profile = vllm_version(target.release.vllm)
    if tokens is None and shape.sequence_length is not None and not chunked_prefill_on(config, target, shape):
        tokens = max(shape.sequence_length.value, profile.unchunked_floor_tokens)  # V0: the longest sequence
    if kernel is not None and tokens is not None and tokens > KERNEL_TOKENS:
        key = (
            "option.max_rolling_batch_prefill_tokens"
            if shape.engine.max_num_batched_tokens
            else "option.max_model_len"
        )
        found.append((kernel, key, {"max_num_batched_tokens": tokens}))
    offload = _number(config.get("option.cpu_offload_gb"))
    if offload:
        use_v1 = engine_environment(config).get("VLLM_USE_V1")
        v0 = profile.engine == "v0" if use_v1 is None else use_v1.strip() in ("0", "false")
        for text, check in by_text.items():
            if "CPU offload" in text and ("V0 LoRA" not in text or v0):
                found.append((check, "option.cpu_offload_gb", {}))
                break
    return found


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None
