"""The sequence length against what the model can hold: its max_position_embeddings, stretched by
RoPE scaling as vLLM's ``_get_and_verify_max_len`` stretches it in each release (the rules are read from
its code: ``knowledge/capabilities.py`` ``MaxLenRules``): a ``yarn`` length is
``original_max_position_embeddings`` times the factor, ``llama3`` / ``longrope`` / ``su`` are not
multiplied, and from 0.8.4 a Gemma 3 scaling is left alone.

Without a vLLM version (another backend, or Neuron) the most permissive release's rule judges, so a
refusal here is one every release makes; ``shape/startup_checks.py`` adds the refusals of the image's own
release where its rule is stricter."""

from __future__ import annotations

from lmi_config.knowledge.capabilities import MaxLenRules, max_len_rules, vllm_capabilities
from lmi_config.modelarch import ModelArch
from lmi_config.shape.problems import Problem
from lmi_config.shape.types import Resolved


def _stretched(arch: ModelArch, limit: int, rules: MaxLenRules) -> int | None:
    """The length ``rules`` derives from max_position_embeddings ``limit`` and the model's rope_scaling; None
    where the release cannot read the scaling's type (it stops with a KeyError: not a length)."""
    scaling = arch.rope_scaling or {}
    factor = arch.rope_scaling_factor
    if scaling and not any(key in scaling for key in rules.type_keys):
        return None
    kind = next((scaling[key] for key in rules.type_keys if key in scaling), None)
    if factor is None or any(name in arch.model_type for name in rules.not_scaled_model_types):
        return limit
    if kind in rules.not_scaled_types:
        return limit
    original = scaling.get("original_max_position_embeddings")
    if kind in rules.original_positions_types and isinstance(original, int) and original > 0:
        return int(original * factor)
    return int(limit * factor)


def model_sequence_limit(arch: ModelArch, vllm_version: str | None = None) -> int | None:
    """The longest sequence the model holds as vLLM ``vllm_version`` derives it (unknown version: the most
    permissive release's), or None when its config does not say or that release cannot read its scaling."""
    limit = arch.max_position_embeddings
    if not limit:
        return None
    capabilities = vllm_capabilities(vllm_version) if vllm_version else None
    rules = (capabilities.max_len,) if capabilities is not None and capabilities.max_len else max_len_rules()
    if not rules:
        return limit
    derived = [length for rule in rules if (length := _stretched(arch, limit, rule)) is not None]
    return max(derived) if derived else None


def judge_sequence_length(
    sequence: Resolved[int] | None, arch: ModelArch | None, accelerator: str
) -> list[Problem]:
    """A written sequence length past the model's limit: vLLM refuses it at start-up (error); on
    Neuron the model compiles and known-good deployments run past it (a warning)."""
    if sequence is None or sequence.key is None or arch is None:
        return []
    limit = model_sequence_limit(arch)
    if limit is None or sequence.value <= limit:
        return []
    gpu = accelerator == "gpu"
    return [
        Problem(
            "sequence-exceeds-model-max",
            "error" if gpu else "warning",
            f"{sequence.key}={sequence.value} is longer than {arch.model_id}'s max_position_embeddings {limit}; "
            + ("vLLM refuses it" if gpu else "positions past the trained length give wrong output"),
            key=sequence.key,
        )
    ]
