"""Each pinned vLLM release's model registry: the module of each architecture's class and which classes
serve LoRA adapters; the LoRA option values its ``LoRAConfig`` accepts (``data/vllm_model_classes.json``,
generated from the releases' code by ``scripts/gen_vllm_checks.py`` with ``scripts/vllm_model_reader.py``);
and LMI's LoRA defaults (``data/options.json``)."""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from lmi_config.knowledge import load_data


class ModelClasses(NamedTuple):
    """One pinned vLLM version's registry facts."""

    version: str
    read_from: str
    modules: dict[str, str]  # architecture -> module of vllm/model_executor/models
    lora_architectures: frozenset[str]  # the model class supports LoRA
    no_lora_architectures: frozenset[str]  # the model class does not: the start-up stops with LoRA on
    registry_source: str
    extra_vocab_sizes: tuple[int, ...] | None  # None: the release checks none
    extra_vocab_source: str | None

    def module_path(self, architectures: tuple[str, ...]) -> str | None:
        """``vllm/model_executor/models/<module>.py`` of the first architecture the registry knows."""
        module = next((self.modules[name] for name in architectures if name in self.modules), None)
        return f"vllm/model_executor/models/{module}.py" if module else None


@cache
def model_classes(vllm_version: str | None) -> ModelClasses | None:
    """The registry facts of an image's vLLM version; None for one the data does not list."""
    row = load_data("vllm_model_classes.json")["versions"].get(vllm_version or "")
    if row is None:
        return None
    architectures = row["architectures"] or {"modules": {}, "lora": [], "no_lora": [], "source": ""}
    sizes = row.get("extra_vocab_sizes")
    return ModelClasses(
        version=str(vllm_version),
        read_from=row["read_from"],
        modules=dict(architectures["modules"]),
        lora_architectures=frozenset(architectures["lora"]),
        no_lora_architectures=frozenset(architectures["no_lora"]),
        registry_source=architectures["source"],
        extra_vocab_sizes=tuple(sizes["values"]) if sizes else None,
        extra_vocab_source=sizes["source"] if sizes else None,
    )


def lmi_default(key: str, backend: str = "vllm") -> int | None:
    """The default LMI's handler passes for a numeric LoRA option (``option.max_lora_rank`` 16,
    ``option.max_loras`` 4), as the options catalogue records it; None where it passes none."""
    from lmi_config.knowledge.options import catalogue

    for spec in catalogue().get(key, ()):
        applies = backend in spec.backends or "common" in spec.backends
        if applies and spec.default is not None and spec.default.strip().lstrip("-").isdigit():
            return int(spec.default)
    return None
