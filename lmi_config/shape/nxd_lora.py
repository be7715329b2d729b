"""NxD Inference's LoRA serving (option.override_neuron_config ``lora_config``), judged against the modules its
model classes build: ``data/nxd_loader.json`` lists the attribute names each model's code assigns (a target
module is found only among them) and the layer classes of its own file (LoRA wraps only linear, embedding and
convolution layers)."""

from __future__ import annotations

from lmi_config.shape.nxd_config import NxdConfig
from lmi_config.shape.nxd_refusals import LORA, UNCONFIRMED, check, integer_value, refusal
from lmi_config.shape.problems import Problem

# --- LoRA serving (modules/lora_serving: lora_model.py:47, :60, :159; lora_module.py:21) -------------


def lora_problems(nxd: NxdConfig) -> list[Problem]:
    """The LoRA serving checks the lora_config fails (lora_model.py:47, :60, :159; lora_module.py:21)."""
    lora = nxd.value("lora_config")
    if not isinstance(lora, dict) or nxd.model is None:
        return []
    defaults = nxd.facts["lora_defaults"]
    targets = lora.get("target_modules", defaults["target_modules"]["value"])
    if targets is None:
        found = [
            check(LORA, nxd, "modules/lora_serving/lora_model.py", "LoraModel.inject_adapter", "not set")
        ]
        return refusal(
            LORA,
            nxd,
            found,
            "lora_config without target_modules",
            {},
            "name the modules the adapters train in lora_config's target_modules (q_proj, v_proj …)",
        )
    if not isinstance(targets, list) or not all(isinstance(item, str) for item in targets):
        return []  # a regular expression: matched against NxDI's module names at run time
    names = set(nxd.model["module_names"])
    matched = [item for item in targets if item in names or item.rsplit(".", 1)[-1] in names]
    problems: list[Problem] = []
    if not matched and not nxd.model["moe"]:
        found = [
            check(LORA, nxd, "modules/lora_serving/lora_model.py", "LoraModel.inject_adapter", "not found")
        ]
        problems += refusal(
            LORA,
            nxd,
            found,
            f"lora_config target_modules {targets}: no module of NxD Inference's {nxd.architecture} model has these "
            "names",
            {"target_modules": targets},
            "name modules the model has (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj for Llama)",
        )
        return problems
    rank = integer_value(lora.get("max_lora_rank", defaults["max_lora_rank"]["value"]))
    if matched and rank is not None and rank <= 0:
        found = [check(LORA, nxd, "modules/lora_serving/lora_module.py", "MultiLoraModule.__init__")]
        problems += refusal(
            LORA,
            nxd,
            found,
            f"lora_config max_lora_rank={rank} (the raise formats lora_config.lora_rank, which LoraServingConfig "
            "lacks, so the start-up log shows an AttributeError instead)",
            {},
            "remove max_lora_rank (LoraServingConfig's default is "
            f"{defaults['max_lora_rank']['value']}), or give the adapters' highest rank",
        )
    wrappable = set(nxd.facts["lora_layers"]["classes"])
    layers = nxd.model["layers"]
    refused = sorted(
        {
            item
            for item in matched
            if item.rsplit(".", 1)[-1] in layers and not set(layers[item.rsplit(".", 1)[-1]]) & wrappable
        }
    )
    if refused:
        name = refused[0].rsplit(".", 1)[-1]
        found = [
            check(UNCONFIRMED, nxd, "modules/lora_serving/lora_model.py", "LoraModel._create_new_module")
        ]
        problems += refusal(
            UNCONFIRMED,
            nxd,
            found,
            f"lora_config target_modules names {', '.join(refused)}: {nxd.architecture}'s code builds {name} as "
            f"{' or '.join(layers[name])}, a layer LoRA does not wrap (read from the assignments of "
            f"{nxd.model['file']}, not from the model as built)",
            {"target": f"{layers[name][0]}(...)"},
            f"keep to the linear and embedding layers in target_modules ({', '.join(sorted(wrappable))})",
            severity="warning",
        )
    return problems
