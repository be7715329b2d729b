"""The sequence length against what the model can hold: its max_position_embeddings, stretched by
RoPE scaling where the scaling type extends the context (vLLM's ``_get_and_verify_max_len``)."""

from __future__ import annotations

from lmi_config.modelarch import ModelArch
from lmi_config.shape.problems import Problem
from lmi_config.shape.types import Resolved

# scaling types whose factor is already folded into max_position_embeddings (vLLM does not multiply)
_FACTOR_ALREADY_APPLIED = ("llama3", "longrope", "yarn")


def model_sequence_limit(arch: ModelArch) -> int | None:
    """The longest sequence the model holds, or None when its config does not say."""
    limit = arch.max_position_embeddings
    if not limit:
        return None
    factor = arch.rope_scaling_factor
    scaling = arch.rope_scaling or {}
    if factor is not None and scaling.get("rope_type", scaling.get("type")) not in _FACTOR_ALREADY_APPLIED:
        limit = int(limit * factor)
    return limit


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
