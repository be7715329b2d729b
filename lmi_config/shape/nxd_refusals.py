"""What every NxD Inference judgement shares: the rules' slugs, the checks of the catalogue a judgement
quotes (``data/nxd_checks.json``, by the coverage file's rule), and the problem that quotes one."""

from __future__ import annotations

from typing import Any

from lmi_config.knowledge.nxd_loader import NxdCheck, nxd_checks
from lmi_config.shape.nxd_config import OVERRIDE_KEY, NxdConfig
from lmi_config.shape.problems import Problem

BUCKETS = "nxdi-bucket-beyond-length"
QUANTIZATION = "nxdi-quantization-refused"
SPECULATION = "nxdi-speculation-refused"
KERNELS = "nxdi-kernel-refused"
SHARDING = "nxdi-attention-sharding-refused"
MODEL_SETTING = "nxdi-model-setting-refused"
LORA = "nxdi-lora-refused"
UNCONFIRMED = "nxdi-check-unconfirmed"
# where speculation comes from a draft model, the route of option.speculative_model is read from djl-serving's
# code but lmi-config's option catalogue lists it for vLLM on GPUs only (LMI104): a warning says so
DRAFT_ROUTE = (
    "; the speculation comes from option.speculative_model, which djl-serving passes to vllm-neuronx with every "
    "field of vLLM's EngineArgs (vllm_rb_properties.py:243-248 at 0.32.0-dlc; vllm-neuronx 0.6.x has "
    "speculative_model) although lmi-config's option catalogue lists it for vLLM only"
)


def speculation_rule(nxd: NxdConfig, *names: str) -> tuple[str, str, str]:
    """The rule, severity and route note of a speculation refusal: an error where the override writes one of
    the values that fail, else (the draft model's speculation) a warning that names the route."""
    if any(nxd.written(name) for name in names):
        return SPECULATION, "error", ""
    return UNCONFIRMED, "warning", DRAFT_ROUTE


SLUGS = (BUCKETS, QUANTIZATION, SPECULATION, KERNELS, SHARDING, MODEL_SETTING, LORA, UNCONFIRMED)


def check(rule: str, nxd: NxdConfig, path: str, function: str, line_hint: str = "") -> NxdCheck | None:
    """The check ``rule`` covers in ``path`` (below neuronx_distributed_inference/) and ``function`` at the
    version (the first, or the one whose message contains ``line_hint``)."""
    found = [c for c in nxd_checks(rule, nxd.version) if c.short_path == path and c.function == function]
    if line_hint:
        found = [c for c in found if line_hint in c.message or line_hint in " ".join(c.conditions)] or found
    return found[0] if found else None


def refusal(
    rule: str,
    nxd: NxdConfig,
    found: list[NxdCheck | None],
    what: str,
    values: dict[str, object],
    fix: str,
    key: str = OVERRIDE_KEY,
    severity: str = "error",
) -> list[Problem]:
    """One problem quoting the first check (and citing the others) with the values filled in."""
    checks = [item for item in found if item is not None]
    if not checks:
        return []
    cited = ", ".join(item.cited for item in checks)
    message = f"{what}: NxD Inference {nxd.version} stops the start-up with '{checks[0].said(values)}' ({cited}) — {fix}"
    return [Problem(rule, severity, message, key)]


def integer_value(value: Any) -> int | None:
    """An int that is not a bool, else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
