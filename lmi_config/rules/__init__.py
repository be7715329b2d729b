"""Lint rules, one module per concern; importing a module registers its rules."""

from __future__ import annotations

from functools import cache

from lmi_config.rules.base import REGISTRY, Rule, iter_rules

RULE_MODULES = (
    "fileformat", "options", "container", "consistency", "images", "artifacts", "parallelism", "memory", "sequence", "security",
    "hardware", "effects", "device_memory", "engines", "startup", "attention", "lora", "vllm_settings", "hub_token",
    "nxd",
)  # fmt: skip


@cache
def load_rules() -> tuple[Rule, ...]:
    """Import every rule module once and return the rules in code order."""
    import importlib

    for name in RULE_MODULES:
        importlib.import_module(f"lmi_config.rules.{name}")
    return tuple(iter_rules())


__all__ = ["REGISTRY", "Rule", "iter_rules", "load_rules"]
