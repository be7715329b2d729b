"""The container's Neuron smart defaults (``NeuronSmartDefaultUtils``, DJL 0.30+): TP and
max_rolling_batch_size chosen from the model size and the NeuronCores."""

from __future__ import annotations

import math

from lmi_config.knowledge.memory import container_default
from lmi_config.modelarch import ModelArch


def _power_of_two_floor(value: float) -> int:
    return 0 if value < 1 else 2 ** int(math.floor(math.log2(value)))


def smart_defaults(
    arch: ModelArch,
    cores: int,
    *,
    tensor_parallel_degree: int | None,
    batch: int | None,
    quantized: bool,
    n_positions: int,
) -> tuple[int, int]:
    """Return (tp, max_rolling_batch_size) as the container chooses them.

    Uses this tool's parameter count instead of the container's llama-like formula (which
    over-counts 70B by ~2%); matches the container's own unit-test vectors.
    """
    core_gb = container_default("smart_defaults_core_gb")
    batch_cap = container_default("smart_defaults_batch_cap")
    bytes_per_parameter = 1 if quantized else 2
    model_gb = arch.total_params * bytes_per_parameter / 1e9
    sequence_gb = n_positions * arch.hidden_size * arch.num_layers * bytes_per_parameter * 0.95 / 2**30

    def model_at(tp: int) -> float:
        return model_gb * (1 + (2 * tp - 2) / 100)

    def batch_at(tp: int) -> int:
        if sequence_gb <= 0:
            return 0
        return _power_of_two_floor(min(batch_cap, (core_gb * tp - model_at(tp)) / sequence_gb))

    candidates = {1, 2, 4, 8} | ({cores} if cores > 8 else set())
    if cores == 32:
        candidates.discard(4)
    minimum = math.ceil(1.1 * model_gb / core_gb)
    usable = sorted(tp for tp in candidates if minimum <= tp <= cores) or [cores]
    if tensor_parallel_degree is None and batch is None:
        tp = max(usable, key=lambda t: (batch_at(t) * (cores // t), -t))
    elif tensor_parallel_degree is None:
        fitting = [t for t in usable if batch_at(t) >= (batch or 0)]
        tp = fitting[0] if fitting else usable[-1]
    else:
        tp = tensor_parallel_degree
    return tp, batch if batch is not None else max(batch_at(tp), 1)
