"""The fit rules against every known-good and known-bad row of the reference (the whole file).

Known-good rows (configurations that ran) must get no error from the parallelism and memory
rules; known-bad rows caused by memory or TP must get the slug that names their failure.
A few known-bad rows cannot be judged from the data they give (unknown TP, a compiler limit,
training instead of inference, an old SDK's DMA-ring growth): they are listed in
``NOT_CHECKABLE`` with the reason, and the test checks that list is exactly the rows the
reasons name, so a change in the data or the model shows up here.
"""

from __future__ import annotations

import re

import pytest
from conftest import load_shared_json

from lmi_config.api import lint_text
from lmi_config.configfile.properties import dump_properties
from lmi_config.lint import LintOptions

TRUTH = load_shared_json("reference", "ground_truth.json")
FIT_CODES = {f"LMI3{number:02d}" for number in range(1, 13)}

# Hub-cache entries the reference itself calls weaker evidence; this one cannot fit by arithmetic
# (30.5B parameters in bf16 = 61 GB on 2 NeuronCores of 16 GiB), like the Qwen2.5-72B entry the
# reference moved to known_bad.
ARITHMETICALLY_IMPOSSIBLE = {("Qwen/Qwen3-30B-A3B-Instruct-2507", "inf2.8xlarge", 2)}

NOT_CHECKABLE = {
    "transformers-neuronx#49": "SDK 2.14 DMA rings grew to 6.5 GB: judged on LMI 0.24.0's SDK 2.14 image in tests/test_dma_rings.py (LMI313); on the 0.30.0 image these rows are linted with, the fixed DMA rings stand",
    "transformers-neuronx#45": "a compiler instruction limit, not memory or TP",
    "transformers-neuronx#10": "TP unknown (demo default)",
    "huggingface-inferentia2-samples#12": "TP, batch and sequence unknown",
    "aws-neuron-sdk#884": "training, not inference",
    "facebook-opt-30b-sampling": "runtime status=1003, not memory or TP",
}

EXPECTED_SLUG = {
    "memory": "memory-exceeds-budget",
    "memory (device)": "memory-exceeds-budget",
    "memory (estimated)": "memory-exceeds-budget",
    "memory (arithmetic; suspect config entry)": "memory-exceeds-budget",
    "likely memory (load failure)": "memory-exceeds-budget",
    "tp_divisibility + memory": "memory-exceeds-budget",
    "tp_divisibility": "tp-heads-divisibility",
    "unsupported_tp_on_platform": "tp-unsupported-degree",
    "tp_exceeds_cores": "tp-exceeds-devices",
    "host memory (process Killed during HLO generation/compile)": "host-memory-insufficient",
}


def _backend(text: str) -> tuple[str, dict[str, str]]:
    lowered = text.lower()
    extra = {}
    if "chunked prefill" in lowered:
        extra["option.enable_chunked_prefill"] = "true"
    if "nxd" in lowered:
        return "nxdi", extra
    return "transformers-neuronx", extra


def _dtype(text: str | None) -> dict[str, str]:
    lowered = (text or "").lower()
    options = {}
    if "weights int8" in lowered:
        options["option.quantize"] = "static_int8"
    if "fp16 model" in lowered or lowered in ("f16", "fp16", "f16/bf16"):
        options["option.dtype"] = "fp16"
    elif "f32" in lowered or "fp32" in lowered:
        options["option.dtype"] = "fp32"
    else:
        options["option.dtype"] = "bf16"
    return options


def _instances(text: str) -> list[str]:
    text = text.replace("(CI)", "").strip()
    if text.startswith("any with >=32"):
        return ["trn1.32xlarge"]
    found = re.findall(r"(?:inf2|trn1n?|trn2)\.\d*x?large", text)
    if "2 cores" in text:
        found = ["inf2.8xlarge"]
    return found


def _properties(
    row: dict, backend: str, extra: dict[str, str], tp: int, batch: int, sequence: int | None
) -> str:
    model = row["model_id"].split(" ")[0]
    options = {
        "option.model_id": model,
        "option.tensor_parallel_degree": str(tp),
        "option.max_rolling_batch_size": str(batch),
    }
    if sequence:
        options["option.n_positions"] = str(sequence)
    options.update(_dtype(row.get("dtype")))
    options.update(extra)
    if backend == "nxdi":
        options.update(
            {
                "option.rolling_batch": "vllm",
                "option.model_loader": "nxdi",
                "option.entryPoint": "djl_python.transformers_neuronx",
            }
        )
        options.pop("option.quantize", None)
    else:
        options["option.entryPoint"] = "djl_python.transformers_neuronx"
    return dump_properties(sorted(options.items()))


def _lint(text: str, instance: str, backend: str):
    version = "0.34.0" if backend == "nxdi" else "0.30.0"
    return lint_text(
        text, "properties", LintOptions(instance=instance, lmi_version=version), name="serving.properties"
    )


GOOD = [row for row in TRUTH["known_good"]]


@pytest.mark.parametrize("row", GOOD, ids=[f"{i}-{row['model_id'][:40]}" for i, row in enumerate(GOOD)])
def test_known_good_rows_get_no_fit_error(row: dict) -> None:
    backend, extra = _backend(row["backend"])
    model = row["model_id"].split(" ")[0]
    for instance in _instances(row["instance_type"]):
        if (model, instance, row["tp_degree"]) in ARITHMETICALLY_IMPOSSIBLE:
            continue
        result = _lint(
            _properties(row, backend, extra, row["tp_degree"], row["batch_size"], row["sequence_length"]),
            instance,
            backend,
        )
        unit = result.units[0]
        assert unit.context.model is not None, f"{model} is not in the catalog"
        errors = [f for f in result.findings if f.severity == "error" and f.code in FIT_CODES]
        assert not errors, f"{model} on {instance}: " + "; ".join(f.message for f in errors)


def _bad_id(row: dict) -> str:
    source = row["source"]
    for key in NOT_CHECKABLE:
        if key in source:
            return key
    return ""


BAD = TRUTH["known_bad"]
CHECKABLE_BAD = [row for row in BAD if not _bad_id(row)]


@pytest.mark.parametrize(
    "row", CHECKABLE_BAD, ids=[f"{i}-{row['model_id'][:40]}" for i, row in enumerate(CHECKABLE_BAD)]
)
def test_known_bad_rows_get_their_slug(row: dict) -> None:
    expected = EXPECTED_SLUG[row["failure"]]
    backend, extra = _backend(row["backend"])
    tp_text = str(row["tp_degree"])
    tps = [int(value) for value in re.findall(r"\d+", tp_text)] or [2]
    if tp_text.startswith(">"):
        tps = [int(tp_text[1:]) + 1]
    batch = int(row["batch_size"]) if str(row.get("batch_size") or "").isdigit() else 1
    sequence = row["sequence_length"] if isinstance(row.get("sequence_length"), int) else None
    model = "meta-llama/Meta-Llama-3-8B" if row["model_id"].startswith("GQA model") else row["model_id"]
    instances = _instances(row["instance_type"]) or ["inf2.8xlarge"]
    for instance in instances:
        for tp in tps:
            text = _properties({**row, "model_id": model}, backend, extra, tp, batch, sequence)
            if sequence is None:
                text = (
                    text.replace("option.max_rolling_batch_size=1\n", "")
                    if row.get("batch_size") is None
                    else text
                )
            result = _lint(text, instance, backend)
            slugs = {f.rule for f in result.findings}
            assert expected in slugs, (
                f"{model} TP {tp} on {instance}: expected {expected}, got {sorted(slugs)}"
            )


def test_not_checkable_rows_are_exactly_the_listed_ones() -> None:
    listed = {key for key in NOT_CHECKABLE}
    found = {_bad_id(row) for row in BAD if _bad_id(row)}
    assert found == listed


def test_seed_case_mistral_on_one_chip() -> None:
    """seeds/001: Mistral-7B at TP 1 on one Inferentia2 chip fails; TP 2 fits."""
    for instance in ("inf2.xlarge", "inf2.8xlarge"):
        for tp, should_fail in ((1, True), (2, False)):
            text = (
                "option.model_id=mistralai/Mistral-7B-Instruct-v0.2\noption.entryPoint=djl_python.transformers_neuronx\n"
                f"option.tensor_parallel_degree={tp}\noption.n_positions=4096\noption.max_rolling_batch_size=1\noption.dtype=bf16\n"
            )
            result = lint_text(text, "properties", LintOptions(instance=instance))
            slugs = {f.rule for f in result.findings if f.severity == "error"}
            assert ("memory-exceeds-budget" in slugs) is should_fail, (instance, tp, slugs)
