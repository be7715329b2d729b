"""The judge's verdict on vLLM's own checks of a speculative-decoding configuration.

vLLM validates speculative decoding before anything loads: ``SpeculativeConfig.maybe_create_spec_config``
up to 0.7.3 (the flat engine arguments ``speculative_model``, ``num_speculative_tokens``,
``speculative_draft_tensor_parallel_size`` …, LMI fields in 0.30-0.31 and passed through from 0.32),
``SpeculativeConfig`` itself from 0.8 (``option.speculative_config``, a JSON object LMI 0.33 and later pass
through). Each judgement here covers checks of ``data/vllm_checks.json`` (``data/vllm_check_coverage.json``
names them): it fires only where the image's vLLM makes the check, reads the methods and model types a check
exempts from the check's own condition, quotes vLLM's message and cites the line. A value the container
does not pass to vLLM at the target release (an engine argument before 0.32) is not read.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, NamedTuple

from lmi_config.knowledge.engine_checks import EngineCheck, covered_checks
from lmi_config.shape.frontend import reaches_vllm
from lmi_config.shape.problems import Problem

if TYPE_CHECKING:
    from lmi_config.configfile.canonical import CanonicalConfig
    from lmi_config.modelarch import ModelArch
    from lmi_config.shape.dimensions import Target
    from lmi_config.shape.types import ContainerShape

SPECULATIVE = "speculative-decoding-refused"
CONFIG_KEY = "option.speculative_config"
FLAT_KEYS = {  # the flat engine arguments of vLLM 0.4-0.7 and the speculative_config key each became
    "option.speculative_model": "model",
    "option.num_speculative_tokens": "num_speculative_tokens",
    "option.speculative_draft_tensor_parallel_size": "draft_tensor_parallel_size",
    "option.speculative_disable_by_batch_size": "disable_by_batch_size",
}
_QUOTED = re.compile(r"'([^']+)'")
# the methods that load a draft or head and so need one named; any other method given (ngram, suffix, an
# MTP alias such as deepseek_mtp that vLLM renames to mtp before the check) gets no verdict from a
# token count without a model
NEEDS_A_MODEL = frozenset({"draft_model", "eagle", "eagle3", "medusa", "mlp_speculator"})


class Speculation(NamedTuple):
    """What the configuration asks of speculative decoding, in speculative_config's terms."""

    values: dict[str, Any]  # model, method, num_speculative_tokens, … as written
    keys: dict[str, str]  # the option each value came from
    flat: bool  # the engine arguments of vLLM 0.4-0.7, not option.speculative_config


def judge_speculative_checks(config: CanonicalConfig, target: Target, shape: ContainerShape) -> list[Problem]:
    """The speculative-decoding checks of the image's vLLM this configuration fails."""
    if target.backend != "vllm" or not target.release.vllm:
        return []
    speculation = read_speculation(config, target)
    if speculation is None:
        return []
    vllm = target.release.vllm
    problems: list[Problem] = []
    draft_refused = False  # EngineArgs and SpeculativeConfig both refuse a draft model: the first stops it
    for check in covered_checks(SPECULATIVE, vllm):
        refuses_drafts = check.message.startswith(_DRAFT_UNSUPPORTED)
        if refuses_drafts and draft_refused:
            continue
        problem = _judge(check, speculation, config, target, shape, vllm)
        if problem is not None:
            problems.append(problem)
            draft_refused = draft_refused or refuses_drafts
    return problems


def read_speculation(config: CanonicalConfig, target: Target) -> Speculation | None:
    """The speculative settings the container passes to the image's vLLM (None: none)."""
    values: dict[str, Any] = {}
    keys: dict[str, str] = {}
    text = (config.get(CONFIG_KEY) or "").strip()
    if text and reaches_vllm(CONFIG_KEY, target):
        try:
            document = json.loads(text)
        except ValueError:
            return None  # not JSON: the option rules report it, vLLM's argument parser refuses it
        if not isinstance(document, dict):
            return None
        values.update(document)
        keys.update(dict.fromkeys(document, CONFIG_KEY))
        return Speculation(values, keys, flat=False)
    for key, name in FLAT_KEYS.items():
        raw = (config.get(key) or "").strip()
        if raw and reaches_vllm(key, target):
            values[name] = _number(raw) if name != "model" else raw
            keys[name] = key
    return Speculation(values, keys, flat=True) if values else None


def _number(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _judge(
    check: EngineCheck,
    speculation: Speculation,
    config: CanonicalConfig,
    target: Target,
    shape: ContainerShape,
    vllm: str,
) -> Problem | None:
    values, keys = speculation.values, speculation.keys
    model, method = values.get("model"), values.get("method")
    tokens = _integer(values.get("num_speculative_tokens"))
    message = check.message
    if message.startswith("Speculative decoding and chunked prefill are currently mutually exclusive"):
        if shape.engine.enable_chunked_prefill is True and (model is not None or tokens is not None):
            return _problem(check, "speculative decoding with option.enable_chunked_prefill=true", vllm,
                            "set option.enable_chunked_prefill=false (or leave it unset)",
                            "option.enable_chunked_prefill", {"enable_chunked_prefill": True})  # fmt: skip
        return None
    if message.startswith("Chunked prefill and EAGLE are not compatible"):
        if shape.engine.enable_chunked_prefill is True and model == "eagle":
            return _problem(check, "an EAGLE draft with option.enable_chunked_prefill=true", vllm,
                            "set option.enable_chunked_prefill=false", "option.enable_chunked_prefill")  # fmt: skip
        return None
    if message.startswith("num_speculative_tokens was provided"):
        if model is not None or tokens is None or not _exempt_ok(check, method, target):
            return None
        key = keys["num_speculative_tokens"]
        return _problem(check, f"num_speculative_tokens={tokens} without a draft model", vllm,
                        "name the draft model (or a method that needs none, such as ngram), or remove "
                        "num_speculative_tokens", key)  # fmt: skip
    if message.startswith("Expected num_speculative_tokens to be greater than zero"):
        if tokens is None or tokens > 0 or (model is None and method is None):
            return None
        return _problem(check, f"num_speculative_tokens={tokens}", vllm, "set num_speculative_tokens to 1 or more",
                        keys["num_speculative_tokens"], {"num_speculative_tokens": tokens})  # fmt: skip
    if message.startswith("speculative_draft_tensor_parallel_size="):
        draft = _integer(values.get("draft_tensor_parallel_size"))
        tp = shape.tensor_parallel or 1
        allowed = (1, tp) if "target_parallel_config" in " ".join(check.conditions) else (1,)
        if draft is None or draft in allowed or (model is None and method is None):
            return None
        choices = " or ".join(str(size) for size in sorted(set(allowed)))
        return _problem(check, f"a draft tensor-parallel size of {draft} with TP {tp}", vllm,
                        f"set the draft's tensor-parallel size to {choices}", keys["draft_tensor_parallel_size"],
                        {"tensor_parallel_size": tp})  # fmt: skip
    if message.startswith("Expect the batch size threshold of disabling speculative decoding"):
        threshold = values.get("disable_by_batch_size")
        if not isinstance(threshold, int | float) or threshold >= 2 or (model is None and method is None):
            return None
        name = "speculative_disable_by_batch_size" if speculation.flat else "self.disable_by_batch_size"
        return _problem(check, f"disable_by_batch_size={threshold}", vllm,
                        "set it to 2 or more, or remove it", keys["disable_by_batch_size"],
                        {name.rsplit(".", 1)[-1]: threshold})  # fmt: skip
    if message.startswith("'tensor_parallel_size' is not a valid argument in the speculative_config"):
        if "tensor_parallel_size" not in values or speculation.flat:
            return None
        return _problem(check, "option.speculative_config with tensor_parallel_size", vllm,
                        "rename it draft_tensor_parallel_size", CONFIG_KEY)  # fmt: skip
    if message.startswith("Target and draft model should have the same vocabulary size"):
        return _vocabulary(check, speculation, target, vllm)
    if message.startswith(_DRAFT_UNSUPPORTED):
        if _plain_draft(speculation, target) is None:
            return None
        return _problem(check, f"a draft model for speculative decoding ({model})", vllm,
                        "use a method this vLLM runs (an EAGLE head, ngram, medusa or mtp), or an image with "
                        "vLLM 0.15 or later (LMI 0.36 v20)", speculation.keys.get("model", CONFIG_KEY))  # fmt: skip
    if "prompt_lookup_max" in message and "prompt_lookup_min" in message:
        low, high = _integer(values.get("prompt_lookup_min")), _integer(values.get("prompt_lookup_max"))
        ngram = method in ("ngram", "[ngram]", "ngram_gpu") or model in ("ngram", "[ngram]")
        if low is None or high is None or low <= high or not ngram:
            return None
        return _problem(check, f"prompt_lookup_min={low} above prompt_lookup_max={high}", vllm,
                        "set prompt_lookup_min to at most prompt_lookup_max", keys["prompt_lookup_min"],
                        {"prompt_lookup_min": low, "prompt_lookup_max": high})  # fmt: skip
    return None


# the draft names from which vLLM infers a method other than a plain draft model, and the model types of
# heads that are not draft models (SpeculativeConfig.__post_init__'s detection, the same in the checks'
# own conditions of 0.10-0.14 — https://github.com/vllm-project/vllm/blob/v0.23.0/vllm/config/speculative.py#L700);
# a name or type outside them is judged only as a catalog model, so a head this misses gets no verdict
_HEAD_NAMES = ("eagle-", "eagle3", "dflash")
_HEAD_TYPES = frozenset({"medusa", "mlp_speculator"})
# vLLM 0.10-0.14 refuse a plain draft model (SpeculativeConfig, and EngineArgs from 0.11)
_DRAFT_UNSUPPORTED = (
    "Speculative decoding with draft model is not supported yet",
    "Draft model speculative decoding is not supported yet",
)


def _plain_draft(speculation: Speculation, target: Target) -> ModelArch | None:
    """The draft model vLLM runs as a plain ``draft_model`` (the method it infers for a model id that names
    no EAGLE head and whose config.json is not a head's): only a catalog model, whose type is known."""
    from lmi_config.modelarch import from_catalog

    draft_id, method = speculation.values.get("model"), speculation.values.get("method")
    if not isinstance(draft_id, str) or target.arch is None or method not in (None, "draft_model"):
        return None
    if "/" not in draft_id and "." in draft_id or any(name in draft_id.lower() for name in _HEAD_NAMES):
        return None  # a custom proposer class path, or a head vLLM recognises by its name
    draft = from_catalog(draft_id)
    if draft is None or draft.model_type in _HEAD_TYPES or (draft.model_type or "").endswith("_mtp"):
        return None
    return draft


def _vocabulary(check: EngineCheck, speculation: Speculation, target: Target, vllm: str) -> Problem | None:
    """A draft model whose vocabulary is not the target's, both sizes from the catalog."""
    draft = _plain_draft(speculation, target)
    if draft is None or target.arch is None or not draft.vocab_size or not target.arch.vocab_size:
        return None
    if draft.vocab_size == target.arch.vocab_size:
        return None
    draft_id = speculation.values["model"]
    said = check.message
    for placeholder, size in (("target", target.arch.vocab_size), ("draft", draft.vocab_size)):
        said = said.replace(f"{{self.{placeholder}_model_config.get_vocab_size()}}", str(size))
    message = (
        f"the draft model {draft_id} ({draft.vocab_size} tokens) for {target.arch.model_id} "
        f"({target.arch.vocab_size} tokens): vLLM {vllm} stops the start-up with '{said}' ({check.cited}) — "
        "use a draft of the target's family that shares its tokenizer and vocabulary size"
    )
    return Problem(SPECULATIVE, "error", message, speculation.keys.get("model", CONFIG_KEY))


def _exempt_ok(check: EngineCheck, method: Any, target: Target) -> bool:
    """Whether the check applies: the methods and model types its condition exempts (``not self.method
    in ('ngram', '[ngram]')``, ``model_type == 'deepseek_v3'``), read from the condition itself."""
    exempt_methods: set[str] = set()
    exempt_types: set[str] = set()
    for condition in check.conditions:
        if "method" in condition and condition.startswith("not "):
            exempt_methods.update(_QUOTED.findall(condition))
        if "model_type" in condition:
            exempt_types.update(_QUOTED.findall(condition))
    if method is not None and (method in exempt_methods or method not in NEEDS_A_MODEL):
        return False
    # an exempt architecture, or one not known: no verdict
    return not (exempt_types and (target.model_type is None or target.model_type in exempt_types))


def _problem(
    check: EngineCheck, what: str, vllm: str, fix: str, key: str, values: dict[str, object] | None = None
) -> Problem:
    said = check.message_with(values or {})
    message = f"{what}: vLLM {vllm} stops the start-up with '{said}' ({check.cited}) — {fix}"
    return Problem(SPECULATIVE, "error", message, key)
