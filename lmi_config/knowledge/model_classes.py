"""Each pinned vLLM release's model registry: the module of each architecture's class and which classes
serve LoRA adapters and which embedding layers each takes a LoRA on; the LoRA option values its ``LoRAConfig`` accepts (``data/vllm_model_classes.json``,
generated from the releases' code by ``scripts/gen_vllm_checks.py`` with ``scripts/vllm_model_reader.py``);
and LMI's LoRA defaults (``data/options.json``)."""

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
    # no get_expert_mapping reaches the class: an MoE model the bitsandbytes loader refuses (0.10+)
    no_expert_mapping: frozenset[str]
    registry_source: str
    extra_vocab_sizes: tuple[int, ...] | None  # None: the release checks none
    extra_vocab_source: str | None
    # architecture -> the embedding layers (embed_tokens, lm_head) its class takes a LoRA on, and the URL
    # of the line that decides it; an architecture not listed is not judged
    lora_embedding_layers: dict[str, tuple[frozenset[str], str]] = {}
    lora_modules_how: str | None = None  # "declared" (0.4-0.7) or "linear-layers" (0.8+)
    lora_modules_source: str | None = None
    # model types vLLM reads config.json of with its own configuration classes (_CONFIG_REGISTRY)
    config_model_types: frozenset[str] = frozenset()

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
    architectures = row["architectures"] or {
        "modules": {},
        "lora": [],
        "no_lora": [],
        "no_expert_mapping": [],
        "source": "",
    }
    sizes = row.get("extra_vocab_sizes")
    lora_modules = row.get("lora_modules") or {"groups": []}
    layers = {
        name: (frozenset(group["embedding"]), group["source"])
        for group in lora_modules["groups"]
        for name in group["architectures"]
    }
    return ModelClasses(
        version=str(vllm_version),
        read_from=row["read_from"],
        modules=dict(architectures["modules"]),
        lora_architectures=frozenset(architectures["lora"]),
        no_lora_architectures=frozenset(architectures["no_lora"]),
        no_expert_mapping=frozenset(architectures["no_expert_mapping"]),
        registry_source=architectures["source"],
        extra_vocab_sizes=tuple(sizes["values"]) if sizes else None,
        extra_vocab_source=sizes["source"] if sizes else None,
        lora_embedding_layers=layers,
        lora_modules_how=lora_modules.get("how"),
        lora_modules_source=lora_modules.get("source"),
        config_model_types=frozenset((row.get("config_registry") or {}).get("model_types", ())),
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
