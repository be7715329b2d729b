"""The judge's verdict on relations between settings that vLLM's configuration classes and model classes
refuse at start-up: the scheduler's token budget against its sequences, prefix caching against a
sliding window or an FP8 KV cache, the KV cache dtype, the swap space against the host's memory,
expert counts against tensor and expert parallelism, and engine features that exclude each other.

Each judgement fires only where the image's vLLM makes the check (``data/vllm_checks.json``), reads
what it compares against from the check's own condition where the code states it there (the KV cache
dtypes, the swap-space share), quotes vLLM's message and cites the line. Each problem's ``check`` is
the slug of the rule that reports it (``rules/vllm_settings.py``).
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from lmi_config.knowledge.engine_checks import EngineCheck, covered_checks
from lmi_config.shape.conditions import holds
from lmi_config.shape.frontend import flag, integer, reaches_vllm
from lmi_config.shape.problems import TP_KEY, Problem

if TYPE_CHECKING:
    from lmi_config.configfile.canonical import CanonicalConfig
    from lmi_config.shape.dimensions import Target
    from lmi_config.shape.types import ContainerShape

TOKENS_BELOW_SEQS = "batched-tokens-below-max-seqs"
PREFIX_CACHING = "prefix-caching-unsupported"
KV_CACHE_DTYPE = "kv-cache-dtype-unknown"
SWAP_SPACE = "swap-space-too-large"
EXPERTS = "experts-parallelism-refused"
FEATURES = "vllm-features-refused"
ARGUMENTS = "engine-argument-refused"
FREE_AT_START = "memory-utilization-above-free"
KV_CACHE_QUANTIZED = "kv-cache-dtype-refused-for-checkpoint"
SPECULATIVE_KEYS = ("option.speculative_config", "option.speculative_model")
# every option speculative_checks.py reads starts so (a test holds the two lists together)
SPECULATIVE_PREFIXES = ("option.speculative_", "option.num_speculative_")
TOKEN_KEYS = ("option.max_rolling_batch_prefill_tokens", "option.max_num_batched_tokens")
SEQ_KEYS = ("option.max_rolling_batch_size", "option.max_num_seqs")
GIB = 1 << 30


def judge_vllm_settings(config: CanonicalConfig, target: Target, shape: ContainerShape) -> list[Problem]:
    """The setting relations the image's vLLM refuses for this configuration."""
    if target.backend != "vllm" or not target.release.vllm:
        return []
    vllm = target.release.vllm
    return [
        *_tokens_below_seqs(config, shape, vllm),
        *_prefix_caching(config, target, shape, vllm),
        *_kv_cache_dtype(config, vllm),
        *_kv_cache_with_quantization(config, target, vllm),
        *_swap_space(config, target, shape, vllm),
        *_free_at_start(config, target, shape, vllm),
        *_experts(config, target, shape, vllm),
        *_features(config, target, shape, vllm),
        *_arguments(config, target, shape, vllm),
        *_speculative(config, target, shape),
    ]


def _speculative(config: CanonicalConfig, target: Target, shape: ContainerShape) -> list[Problem]:
    """speculative decoding's own checks (``shape/speculative_checks.py``), read only where asked for."""
    if not any(key.startswith(SPECULATIVE_PREFIXES) for key, _ in config.items()):
        return []
    from lmi_config.shape.speculative_checks import judge_speculative_checks

    return judge_speculative_checks(config, target, shape)


def _cite(check: EngineCheck, values: dict[str, object]) -> str:
    return f"'{check.message_with(values)}' ({check.cited})"


# --- the scheduler -------------------------------------------------------------------------------------


def _tokens_below_seqs(config: CanonicalConfig, shape: ContainerShape, vllm: str) -> list[Problem]:
    tokens, key = integer(config, *TOKEN_KEYS)
    batch = shape.batch_size.value if shape.batch_size else None
    if tokens is None or batch is None or tokens >= batch:
        return []
    checks = covered_checks(TOKENS_BELOW_SEQS, vllm)
    if not checks:
        return []
    said = _cite(checks[0], {"max_num_batched_tokens": tokens, "max_num_seqs": batch})
    source = shape.batch_size.source if shape.batch_size else ""
    message = (
        f"{key}={tokens} is below the {batch} sequences a step may hold (max_num_seqs: {source}): vLLM {vllm} "
        f"stops the start-up with {said} — raise {key} to at least {batch}, or lower option.max_rolling_batch_size"
    )
    return [Problem(TOKENS_BELOW_SEQS, "error", message, key)]


# --- the cache -----------------------------------------------------------------------------------------


def _sliding_window(target: Target, vllm: str) -> int | None:
    """The sliding window ModelConfig keeps (none where it turns an interleaved one off, 0.5-0.6)."""
    from lmi_config.knowledge.attention_backends import attention_release

    arch = target.arch
    if arch is None or arch.sliding_window is None:
        return None
    facts = attention_release(vllm)
    disabled = facts.sliding_window_disabled if facts is not None else None
    if disabled and not disabled.get("only_with_backends") and arch.model_type in disabled["model_types"]:
        return None
    return arch.sliding_window


def _prefix_caching(
    config: CanonicalConfig, target: Target, shape: ContainerShape, vllm: str
) -> list[Problem]:
    from lmi_config.shape.attention_selection import engine_environment
    from lmi_config.sizing.vllm_release import vllm_version

    if not flag(config, "option.enable_prefix_caching"):
        return []
    refused = _with_chunked_prefill(config, target, shape, vllm)
    if refused or flag(config, "option.disable_sliding_window"):
        return refused
    checks = covered_checks(PREFIX_CACHING, vllm)
    window = _sliding_window(target, vllm)
    kv = (shape.engine.kv_cache_dtype or "auto").lower()
    use_v1 = engine_environment(config).get("VLLM_USE_V1")
    v1 = vllm_version(vllm).engine == "v1" if use_v1 is None else use_v1.strip() not in ("0", "false")
    for check in checks:
        text = " ".join(check.conditions)
        if "sliding_window" in text and window is not None and not ("VLLM_USE_V1" in text and v1):
            what = f"{target.model_id} has a sliding window of {window} (config.json sliding_window)"
            fix = "option.enable_prefix_caching=false, or a vLLM release whose engine caches prefixes with it"
            return [_prefix_problem(check, what, fix, vllm)]
        if "cache_dtype" in text and kv == "fp8":
            return [_prefix_problem(check, "option.kv_cache_dtype=fp8", "option.kv_cache_dtype=auto", vllm)]
    return []


def _with_chunked_prefill(
    config: CanonicalConfig, target: Target, shape: ContainerShape, vllm: str
) -> list[Problem]:
    """vLLM 0.4-0.5: the model runner raises on the first prompt whose prefix is in the cache while chunked
    prefill is on (any two prompts sharing a block of tokens: a system prompt), so the endpoint fails
    soon after it starts (``data/vllm_runner_refusals.json``)."""
    from lmi_config.knowledge.runner_refusals import runner_refusal
    from lmi_config.shape.startup_checks import chunked_prefill_on

    refusal = runner_refusal(vllm, "chunked-prefill-with-prefix-caching")
    if refusal is None or not chunked_prefill_on(config, target, shape):
        return []
    how = (
        "option.enable_chunked_prefill=true"
        if shape.engine.enable_chunked_prefill
        else "chunked prefill, which this vLLM turns on by default for this max_model_len"
    )
    message = (
        f"option.enable_prefix_caching=true with {how}: vLLM {vllm}'s model runner ({refusal.function}) raises "
        f"'{refusal.message}' ({refusal.source}) on the first prompt whose prefix is cached, which stops the "
        "engine soon after the endpoint starts — set option.enable_chunked_prefill=false or "
        "option.enable_prefix_caching=false, or use a newer LMI image, whose vLLM makes no such refusal"
    )
    return [Problem(PREFIX_CACHING, "error", message, "option.enable_prefix_caching")]


def _prefix_problem(check: EngineCheck, what: str, fix: str, vllm: str) -> Problem:
    message = (
        f"option.enable_prefix_caching=true and {what}: vLLM {vllm} stops the start-up with {_cite(check, {})} — "
        f"set {fix}"
    )
    return Problem(PREFIX_CACHING, "error", message, "option.enable_prefix_caching")


def _kv_cache_dtype(config: CanonicalConfig, vllm: str) -> list[Problem]:
    written = (config.get("option.kv_cache_dtype") or "").strip()
    if not written or written == "auto":
        return []
    for check in covered_checks(KV_CACHE_DTYPE, vllm):
        allowed = _literal_values(check.conditions)
        if allowed and written not in allowed:
            message = (
                f"option.kv_cache_dtype={written}: vLLM {vllm} stops the start-up with "
                f"{_cite(check, {'cache_dtype': written})} — use auto or one of {', '.join(allowed)}"
            )
            return [Problem(KV_CACHE_DTYPE, "error", message, "option.kv_cache_dtype")]
    return []


def _kv_cache_with_quantization(config: CanonicalConfig, target: Target, vllm: str) -> list[Problem]:
    """vLLM 0.5-0.10's attention layer refuses an fp8_e5m2 KV cache where the quantization method builds
    a KV-cache method for it (FP8, ModelOpt, compressed-tensors, Quark …: ``attention_method`` of
    data/vllm_quant_configs.json, read from each class's get_quant_method)."""
    from lmi_config.knowledge.quant_configs import quant_configs
    from lmi_config.shape.quant_config_checks import built_method

    written = (config.get("option.kv_cache_dtype") or "").strip()
    checks = covered_checks(KV_CACHE_QUANTIZED, vllm)
    facts = quant_configs(vllm)
    if not written or not checks or facts is None or not reaches_vllm("option.kv_cache_dtype", target):
        return []
    asked_key, method = built_method(config, target)
    if not method:
        return []
    # a class's get_name and the name a checkpoint writes may differ in '-' and '_' (vLLM 0.8's
    # CompressedTensorsConfig is "compressed_tensors", its checkpoints say "compressed-tensors")
    wanted = method.replace("-", "_")
    kv_methods = sorted(
        {
            str(entry["attention_method"])
            for entry in facts["classes"].values()
            if str(entry.get("method") or "").replace("-", "_") == wanted and entry.get("attention_method")
        }
    )
    for check in checks:
        refused = re.findall(r"kv_cache_dtype == '([^']+)'", " ".join(check.conditions))
        if not kv_methods or written not in refused:
            continue
        what = f"{asked_key}={method}" if asked_key else f"a checkpoint quantized with {method}"
        message = (
            f"option.kv_cache_dtype={written} with {what} (whose attention layers get a {kv_methods[0]}): "
            f"vLLM {vllm} stops the start-up with {_cite(check, {})} — use option.kv_cache_dtype=fp8 (fp8_e4m3) "
            "or auto"
        )
        return [Problem(KV_CACHE_QUANTIZED, "error", message, "option.kv_cache_dtype")]
    return []


def _literal_values(conditions: tuple[str, ...]) -> tuple[str, ...]:
    """The literal tuple a condition compares with (``not self.cache_dtype in ('fp8', 'fp8_e4m3')``)."""
    for condition in conditions:
        match = re.search(r" in (\([^()]*\)|\[[^\[\]]*\])$", condition)
        if match:
            try:
                values = ast.literal_eval(match.group(1))
            except (ValueError, SyntaxError):
                continue
            return tuple(str(value) for value in values)
    return ()


def _swap_space(config: CanonicalConfig, target: Target, shape: ContainerShape, vllm: str) -> list[Problem]:
    text = (config.get("option.swap_space") or "").strip()
    instance, tp = target.instance, shape.tensor_parallel or 1
    try:
        swap_gib = float(text) if text else None
    except ValueError:
        return []
    if swap_gib is None or instance is None or not instance.host_memory_gib:
        return []
    for check in covered_checks(SWAP_SPACE, vllm):
        share = re.search(r"> ([0-9.]+) \* total_cpu_memory", " ".join(check.conditions))
        if share is None:
            continue
        used = swap_gib * tp
        limit = float(share.group(1)) * instance.host_memory_gib
        if used <= limit:
            return []
        message = (
            f"option.swap_space={text} GiB per GPU x TP {tp} = {used:g} GiB of swap space, above "
            f"{float(share.group(1)):.0%} of the {instance.host_memory_gib:g} GiB of host memory of a "
            f"{instance.instance_type}: vLLM {vllm} stops the start-up with 'Too large swap space. ...' ({check.cited}) — "
            f"set option.swap_space to at most {int(limit // tp)}"
        )
        return [Problem(SWAP_SPACE, "error", message, "option.swap_space")]
    return []


def _free_at_start(
    config: CanonicalConfig, target: Target, shape: ContainerShape, vllm: str
) -> list[Problem]:
    """The worker's first check of the device (V1, vLLM 0.10 on): the memory free once the CUDA context
    exists must hold gpu_memory_utilization x the memory PyTorch sees. The context is counted at its
    estimate (data/vllm_memory.json ``cuda_context_gib``), a lower bound of what is in use then: NCCL's
    buffers at TP > 1 and any other process on the GPU only add to it."""
    instance = target.instance
    checks = covered_checks(FREE_AT_START, vllm)
    if instance is None or instance.accelerator != "gpu" or not checks:
        return []
    from lmi_config.sizing.vllm_release import (
        cuda_context_bytes,
        startup_utilization_limit,
        torch_visible_bytes,
    )

    total, total_note = torch_visible_bytes(instance)
    context = cuda_context_bytes()
    utilization = shape.engine.gpu_memory_utilization
    requested = total * utilization
    # which engine runs is asked only of a request that would not fit (it re-reads the attention inputs)
    if requested <= total - context or not _runs_v1(config, target, shape, vllm):
        return []
    highest = startup_utilization_limit(instance)
    written = (config.get("option.gpu_memory_utilization") or "").strip() or f"{utilization:g} (the default)"
    check = checks[0]
    # vLLM prints the figures through its GiB formatter: fill them in as such
    skeleton = re.sub(r"\{(?:GiB|format_gib)\(([\w.]+)\)\}", r"{\1}", check.message)
    figures = {
        "device_": "cuda:0",
        "free_memory": f"{(total - context) / GIB:.2f}",
        "total_memory": f"{total / GIB:.2f}",
        "gpu_memory_utilization": f"{utilization:g}",
        "requested_memory": f"{requested / GIB:.2f}",
    }
    said = f"'{check.fill(skeleton, figures)}' ({check.cited})"
    message = (
        f"option.gpu_memory_utilization={written} asks for {requested / GIB:.2f} GiB of the {total_note}, but "
        f"about {context / GIB:.2f} GiB of it is taken by the CUDA context before vLLM {vllm} looks (an estimate; "
        f"NCCL at TP > 1 and other processes take more): the worker stops the start-up with {said} — set "
        f"option.gpu_memory_utilization to at most {highest:g}"
    )
    return [Problem(FREE_AT_START, "error", message, "option.gpu_memory_utilization")]


def _runs_v1(config: CanonicalConfig, target: Target, shape: ContainerShape, vllm: str) -> bool:
    """Whether the V1 engine (whose worker makes the check) runs: always in a release without V0; in one
    with both (0.10), where the release's oracle decides V1 for this model and environment (a model only
    V0 serves, option.env=VLLM_USE_V1=0, or what the facts leave open: not judged)."""
    from lmi_config.knowledge.attention_backends import attention_release
    from lmi_config.shape.attention_selection import attention_inputs, decided_engine

    facts = attention_release(vllm)
    if facts is None or facts.kind == "priority":
        return True  # no V0 engine to fall back to
    inputs = attention_inputs(config, target, shape, facts=facts)
    return inputs is not None and decided_engine(facts, inputs, vllm) == "v1"


# --- experts -------------------------------------------------------------------------------------------


def _experts(config: CanonicalConfig, target: Target, shape: ContainerShape, vllm: str) -> list[Problem]:
    from lmi_config.knowledge.model_classes import model_classes

    arch, tp = target.arch, shape.tensor_parallel
    if arch is None:
        return []
    # the catalogue (megabytes) is read only once a cheap precondition holds: most lints need none
    expert_parallel = flag(config, "option.enable_expert_parallel")
    if expert_parallel and not arch.num_experts:
        checks = covered_checks(EXPERTS, vllm)
        check = next((c for c in checks if "expert parallelism is enabled" in c.message), None)
        if check is not None:
            message = (
                f"option.enable_expert_parallel=true for {arch.model_id}, which has no experts: vLLM {vllm} stops "
                f"the start-up with {_cite(check, {})} — remove option.enable_expert_parallel"
            )
            return [Problem(EXPERTS, "error", message, "option.enable_expert_parallel")]
    classes = model_classes(vllm)
    module = classes.module_path(arch.architectures) if classes is not None else None
    if tp is None or not arch.num_experts or tp <= arch.num_experts or module is None or expert_parallel:
        return []
    checks = covered_checks(EXPERTS, vllm)
    check = next((c for c in checks if c.path == module and "tp_size >" in " ".join(c.conditions)), None)
    if check is None:
        return []
    said = re.sub(r"\{[^{}]*experts[^{}]*\}", str(arch.num_experts), check.message_with({"tp_size": tp}))
    message = (
        f"TP {tp} is more than the {arch.num_experts} experts of {arch.model_id}: vLLM {vllm} stops building "
        f"the model with '{said}' ({check.cited}) — use a TP degree of at most {arch.num_experts}"
    )
    return [Problem(EXPERTS, "error", message, TP_KEY)]


# --- engine features that exclude each other ---------------------------------------------------------


def _features(config: CanonicalConfig, target: Target, shape: ContainerShape, vllm: str) -> list[Problem]:
    """EngineArgs.create_engine_config's refusals of features together: multi-step scheduling or async
    scheduling with speculative decoding, async scheduling on the uni-process executor, and a decode
    context-parallel size that does not divide TP. Each fires only where the release makes the check,
    read from the option as LMI passes it through (0.32 and later) and as written: a default never
    triggers one."""
    steps, _ = integer(config, "option.num_scheduler_steps")
    speculative = next((key for key in SPECULATIVE_KEYS if (config.get(key) or "").strip()), None)
    asynchronous = flag(config, "option.async_scheduling")
    executor = (config.get("option.distributed_executor_backend") or "").strip()
    dcp, _ = integer(config, "option.decode_context_parallel_size")
    tp = shape.tensor_parallel or 1
    if not ((steps or 0) > 1 and speculative) and not asynchronous and not dcp:
        return []  # the cheap precondition: most lints read no catalogue here
    # what the container does not pass to this vLLM (an engine argument before LMI 0.32) it never checks
    steps = steps if reaches_vllm("option.num_scheduler_steps", target) else None
    speculative = speculative if speculative and reaches_vllm(speculative, target) else None
    asynchronous = asynchronous and reaches_vllm("option.async_scheduling", target)
    executor = executor if reaches_vllm("option.distributed_executor_backend", target) else ""
    dcp = dcp if reaches_vllm("option.decode_context_parallel_size", target) else None
    problems: list[Problem] = []
    for check in covered_checks(FEATURES, vllm):
        condition = " ".join(check.conditions)
        if "num_scheduler_steps" in condition and "speculative_config" in condition:
            if (steps or 0) > 1 and speculative:
                problems.append(
                    _feature_problem(
                        check, f"option.num_scheduler_steps={steps} with {speculative}", vllm,
                        f"remove {speculative} or set option.num_scheduler_steps=1", "option.num_scheduler_steps",
                    )
                )  # fmt: skip
        elif "async_scheduling" in condition and "speculative_config" in condition:
            if asynchronous and speculative:
                problems.append(
                    _feature_problem(
                        check, f"option.async_scheduling=true with {speculative}", vllm,
                        f"remove option.async_scheduling or {speculative}", "option.async_scheduling",
                    )
                )  # fmt: skip
        elif "async_scheduling" in condition and "distributed_executor_backend" in condition:
            if asynchronous and executor == "uni":
                problems.append(
                    _feature_problem(
                        check, "option.async_scheduling=true with option.distributed_executor_backend=uni", vllm,
                        "remove option.distributed_executor_backend (or set it to mp)", "option.async_scheduling",
                    )
                )  # fmt: skip
        elif "decode_context_parallel_size" in condition and dcp and tp % dcp:
            values: dict[str, object] = {"tensor_parallel_size": tp, "decode_context_parallel_size": dcp}
            divisors = ", ".join(str(size) for size in range(1, tp + 1) if tp % size == 0)
            problems.append(
                _feature_problem(
                    check, f"option.decode_context_parallel_size={dcp} with TP {tp}", vllm,
                    f"set option.decode_context_parallel_size to a divisor of TP {tp} ({divisors})",
                    "option.decode_context_parallel_size", values,
                )
            )  # fmt: skip
    return problems


# the locals of vLLM's checking functions that hold the engine argument of their name:
# ModelConfig._verify_tokenizer_mode reads self.tokenizer_mode into one, SchedulerConfig.verify_max_model_len
# is passed the model's max_model_len
_BOUND_LOCALS = frozenset({"tokenizer_mode", "max_model_len"})


def _written_arguments(config: CanonicalConfig, target: Target, vllm: str) -> dict[str, object]:
    """The engine arguments the file writes (``option.<name>`` for a field of this vLLM's EngineArgs that
    the container passes to it), each read as its annotation says: a bool from ``true`` / ``false``, a
    number where the text is one, else the text."""
    from lmi_config.knowledge.options import engine_args_for

    values: dict[str, object] = {}
    for name, field in engine_args_for(vllm).items():
        key = f"option.{name}"
        text = (config.get(key) or "").strip()
        if not text or not reaches_vllm(key, target):
            continue
        annotation = str(field.get("annotation") or "")
        if re.fullmatch(r"(?:Optional\[)?bool\]?(?: \| None)?", annotation):
            if text.lower() in ("true", "false"):
                values[name] = text.lower() == "true"
            continue  # another text is refused by the argument's own type, not by these checks
        values[name] = _number_or_text(text, float_allowed="float" in annotation)
    return values


def _number_or_text(text: str, *, float_allowed: bool) -> object:
    for parse in (int, float) if float_allowed else (int,):
        try:
            return parse(text)
        except ValueError:
            continue
    return text


def _arguments(config: CanonicalConfig, target: Target, shape: ContainerShape, vllm: str) -> list[Problem]:
    """vLLM's checks of engine arguments' values, each decided by evaluating the check's own condition
    on what the file writes (``_holds``): a setting left to its default is unknown here and decides a
    check only where the rest of the condition decides it without it, and one the container does not
    pass to this vLLM is not read."""
    values = _written_arguments(config, target, vllm)
    if not values:
        return []
    written = set(values)
    if shape.engine.enable_chunked_prefill is not None:
        values["enable_chunked_prefill"] = shape.engine.enable_chunked_prefill
    if shape.sequence_length is not None:
        values["max_model_len"] = shape.sequence_length.value
    problems = []
    for check in covered_checks(ARGUMENTS, vllm):
        if not all(_holds(condition, values) for condition in check.conditions):
            continue
        read = re.findall(r"[A-Za-z_]\w*", " ".join(check.conditions))
        names = [name for name in dict.fromkeys(read) if name in written]  # in the order the check reads them
        if not names:
            continue  # decided by what the container derives alone: another rule says it
        shown = ", ".join(f"option.{name}={_shown(values[name])}" for name in names)
        fix = "set it as vLLM's message asks, or remove it (vLLM's default passes its checks)"
        if len(names) > 1:
            fix = "set them as vLLM's message asks, or remove them (vLLM's defaults pass its checks)"
        said = _cite(check, {name: values[name] for name in names} | _context(values))
        message = f"{shown}: vLLM {vllm} stops the start-up with {said} — {fix}"
        problems.append(Problem(ARGUMENTS, "error", message, f"option.{names[0]}"))
    return problems


def _shown(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _context(values: dict[str, object]) -> dict[str, object]:
    return {name: values[name] for name in ("max_model_len",) if name in values}


def _holds(condition: str, values: dict[str, object]) -> bool:
    """Whether a check's condition (Python, over ``self.<field>`` and local names) is true of ``values``
    (``shape/conditions.py``). Only ``self.<field>`` is read from ``values``: a bare name is a local of
    vLLM's function, which may hold something other than the engine argument of that name, except the
    locals known to hold one (``_BOUND_LOCALS``)."""

    def resolve(node: ast.expr) -> object:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            return values.get(node.attr)
        if isinstance(node, ast.Name) and node.id in _BOUND_LOCALS:
            return values.get(node.id)
        return None

    return holds(condition, resolve)


def _feature_problem(
    check: EngineCheck, what: str, vllm: str, fix: str, key: str, values: dict[str, object] | None = None
) -> Problem:
    message = f"{what}: vLLM {vllm} stops the start-up with {_cite(check, values or {})} — {fix}"
    return Problem(FEATURES, "error", message, key)
