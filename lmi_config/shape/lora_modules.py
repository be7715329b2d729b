"""The modules an adapter puts a LoRA on, against those the image's vLLM serves for the model class.

vLLM's LoRA loader compares every module an adapter's weights name with the model's LoRA modules and
stops the load on any other ("While loading …, expected target modules in … but received …"). Which
modules those are differs by release: the class's ``supported_lora_modules`` list (0.4-0.7), else every
linear layer plus the names of the class's ``embedding_modules`` (0.8+). Every layer that is linear in
vLLM's classes is a LoRA module in all of them; the input and output embeddings (``embed_tokens``,
``lm_head``) are not linear layers, so an adapter trained on them (PEFT ``target_modules``) loads only
where the class names them — Llama's does, Qwen2's and Qwen3's did not until vLLM 0.23
(``data/vllm_model_classes.json`` ``lora_modules``, read by ``scripts/vllm_model_reader.py``).

Only those two names are judged: another target module that vLLM's class lacks may be absent from the
checkpoint too (PEFT skips a target it does not find), which only the adapter's weights tell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lmi_config.knowledge.engine_checks import EngineCheck, covered_checks
from lmi_config.shape.problems import Problem

if TYPE_CHECKING:
    from lmi_config.modelarch import LoraAdapter
    from lmi_config.shape.dimensions import Target

ADAPTER = "lora-adapter-unsupported"
ENABLE_KEY = "option.enable_lora"
EMBEDDING_LAYERS = ("embed_tokens", "lm_head")
_UNEXPECTED = "While loading {lora_dir}, expected target modules in"


def judge_adapter_modules(target: Target, adapters: tuple[LoraAdapter, ...], vllm: str) -> list[Problem]:
    """An adapter with a LoRA on embed_tokens or lm_head where the model class serves none there."""
    from lmi_config.knowledge.model_classes import model_classes

    facts = model_classes(vllm)
    if facts is None or not adapters:
        return []
    known = next(
        (
            (name, facts.lora_embedding_layers[name])
            for name in target.architectures
            if name in facts.lora_embedding_layers
        ),
        None,
    )
    check = _loader_check(vllm)
    if known is None or check is None:
        return []
    architecture, (served, decided_at) = known
    problems = []
    for adapter in adapters:
        refused = sorted(set(embedding_targets(adapter)) - served)
        if not refused:
            continue
        said = check.message_with(
            {
                "lora_dir": adapter.config_path.rsplit("/", 1)[0],
                "expected_lora_modules": "…",
                "unexpected_modules": refused,
                "[]": refused,  # the catalogue's skeleton of some releases keeps that list as {[]}
            }
        )
        where = (
            "the names of its embedding_modules"
            if facts.lora_modules_how == "linear-layers"
            else "its supported_lora_modules"
        )
        message = (
            f"adapter {adapter.name} ({adapter.config_path}) puts a LoRA on {', '.join(refused)} (target_modules), "
            f"which vLLM {vllm}'s {architecture} does not serve ({where}: {decided_at}): loading it stops with "
            f"'{said}' ({check.cited}) — retrain the adapter without {', '.join(refused)}, or use a vLLM release "
            "whose model class takes LoRA on them"
        )
        problem = Problem(ADAPTER, "error", message, ENABLE_KEY)
        if target.inferred_from:
            problem = Problem(
                ADAPTER,
                "warning",
                message
                + f" (architecture inferred from {target.inferred_from}: check with --model or --hub)",
                ENABLE_KEY,
            )
        problems.append(problem)
    return problems[:1]


def embedding_targets(adapter: LoraAdapter) -> list[str]:
    """The embedding layers among an adapter's PEFT ``target_modules`` (a list of names, each matched
    on its last part as PEFT does); none for a regular-expression string, which is not judged."""
    modules = (adapter.config or {}).get("target_modules")
    if not isinstance(modules, list):
        return []
    names = {str(module).rsplit(".", 1)[-1] for module in modules if isinstance(module, str)}
    return [name for name in EMBEDDING_LAYERS if name in names]


def _loader_check(vllm: str) -> EngineCheck | None:
    """The loader's unexpected-module check of the release, on the safetensors path where it has one."""
    checks = [check for check in covered_checks(ADAPTER, vllm) if check.message.startswith(_UNEXPECTED)]
    for check in checks:
        if not any("not os.path.isfile(lora_tensor_path)" in condition for condition in check.conditions):
            return check
    return checks[0] if checks else None
