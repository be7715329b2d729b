"""The values that name the model and what it is, and pre-compiled Neuron artifacts against the
configuration that serves them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from lmi_config.configfile.text import shorten
from lmi_config.knowledge.image_support import numbers, pipeline_tasks
from lmi_config.knowledge.options import is_placeholder
from lmi_config.rules.base import Example, Finding, LintUnit, rule
from lmi_config.rules.images import image_pins

_BLANK_SEPARATOR = re.compile(r"\S\s+[-/]|[-/]\s+\S")
_ARCHIVE = re.compile(r"\.(tar\.gz|tgz|tar|zip|gz)$", re.IGNORECASE)
_HUB_URL = re.compile(r"^https?://(?:www\.)?huggingface\.co/(?P<id>[^/\s]+/[^/\s?#]+)")
_NEURON_DTYPES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "float32": "fp32",
    "bf16": "bf16",
    "fp16": "fp16",
    "fp32": "fp32",
}


@rule(
    code="LMI209",
    slug="malformed-model-id",
    severity="error",
    summary="option.model_id that is neither a Hub id, an s3:// prefix nor a path the container can use.",
    why=(
        "The container passes option.model_id (or HF_MODEL_ID) as written: blanks around '-' or '/' (a copy "
        "from a rendered page) name a repository that does not exist; an s3:// URL of a model.tar.gz is one "
        "object, while the container downloads every file under a prefix (it never unpacks an archive); a "
        "huggingface.co URL is not a repository id."
    ),
    bad=Example("option.model_id=s3://my-bucket/llama/model.tar.gz\noption.rolling_batch=vllm\n"),
    good=Example("option.model_id=s3://my-bucket/llama/\noption.rolling_batch=vllm\n"),
    source=(
        "djl-serving ModelInfo.downloadS3 (s5cmd sync of the prefix) and ModelStore (HF_MODEL_ID as a Hub id) — "
        "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/wlm/src/main/java/ai/djl/serving/wlm/ModelInfo.java "
        "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/serving/src/main/java/ai/djl/serving/util/ModelStore.java"
    ),
)
def malformed_model_id(unit: LintUnit) -> Iterator[Finding]:
    for setting in unit.config.candidates.get("option.model_id", []):
        value = setting.value.strip()
        if not value or is_placeholder(value) or " #" in setting.value:
            continue  # a template, or a comment after the value (inline-comment says so)
        name = setting.origin.variable or setting.key
        hub = _HUB_URL.match(value)
        if _BLANK_SEPARATOR.search(value):
            fixed = re.sub(r"\s*([-/])\s*", r"\1", value)
            problem = f"has blanks around '-' or '/' that the container keeps — write {shorten(fixed)}"
        elif value.lower().startswith("s3://") and _ARCHIVE.search(value):
            prefix = value.rsplit("/", 1)[0] + "/"
            problem = (
                f"names one archive, but the container downloads every file under an S3 prefix and never unpacks "
                f"it — unpack it to a prefix such as {shorten(prefix)} (config.json and the weights at its top)"
            )
        elif hub:
            problem = f"is a web address, not a repository id — write {hub['id']}"
        else:
            continue
        yield unit.finding("LMI209", f"{name}={shorten(value)!r} {problem}", setting=setting)


@rule(
    code="LMI210",
    slug="unknown-task",
    severity="warning",
    summary="option.task that transformers' pipeline() does not know (or written with blanks).",
    why=(
        "The HF Accelerate handler builds a transformers pipeline for option.task, and pipeline() refuses a task "
        "it does not know ('Unknown task'); other handlers map the task names they know and quietly treat any "
        "other one as their default (vLLM: auto), so an embedding model misspelled as a task generates text."
    ),
    bad=Example(
        "option.model_id=gpt2\noption.entryPoint=djl_python.huggingface\noption.rolling_batch=disable\n"
        "option.task=text-generations\n",
        args={"backend": "huggingface"},
    ),
    good=Example(
        "option.model_id=gpt2\noption.entryPoint=djl_python.huggingface\noption.rolling_batch=disable\n"
        "option.task=text-generation\n",
        args={"backend": "huggingface"},
    ),
    source=(
        "lmi_config/data/transformers_model_types.json (pipeline_tasks: SUPPORTED_TASKS and TASK_ALIASES of each pinned "
        "transformers) — https://github.com/huggingface/transformers/blob/v4.57.1/src/transformers/pipelines/__init__.py "
        "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/engines/python/setup/djl_python/huggingface.py"
    ),
)
def unknown_task(unit: LintUnit) -> Iterator[Finding]:
    known = pipeline_tasks()
    pipeline_backend = unit.context.backend.id == "huggingface"
    for setting in unit.config.candidates.get("option.task", []):
        value = setting.value
        if is_placeholder(value) or " #" in value:
            continue
        squeezed = re.sub(r"\s+", "", value)
        if value.strip() in known or value.strip().startswith("translation_"):
            continue
        name = setting.origin.variable or setting.key
        if squeezed in known:
            message = f"{name}={value!r} has blanks the container keeps — write {squeezed}"
        elif pipeline_backend:
            import difflib  # only for a suggestion (cold start: benchmarks/lint_speed.py)

            close = difflib.get_close_matches(squeezed.lower(), sorted(known), n=1, cutoff=0.6)
            advice = f"did you mean {close[0]}?" if close else "see transformers' pipeline() tasks"
            message = f"{name}={shorten(value)!r} is not a task transformers' pipeline() knows ('Unknown task') — {advice}"
        else:
            continue  # other handlers keep their own task names
        yield unit.finding("LMI210", message, setting=setting)


def _neuron_section(unit: LintUnit) -> dict[str, Any] | None:
    model = unit.context.model
    section = model.loading.get("neuron") if model is not None else None
    return section if isinstance(section, dict) else None


@rule(
    code="LMI211",
    slug="neuron-artifact-mismatch",
    severity="warning",
    summary="Pre-compiled Neuron artifacts compiled for another batch, sequence length, core count or dtype.",
    why=(
        "A model exported by optimum-neuron carries the shape it was compiled for in the neuron section of its "
        "config.json (batch_size, sequence_length, num_cores, auto_cast_type). The Neuron runtime runs that "
        "shape: serving settings that differ are not what runs — or the container compiles again for an hour."
    ),
    bad=Example(
        "option.model_id=./compiled\noption.entryPoint=djl_python.transformers_neuronx\noption.tensor_parallel_degree=8\n",
        args={
            "backend": "transformers-neuronx",
            "lmi_version": "0.30.0",
            "model": "tests/fixtures/container/compiled-llama",
        },
    ),
    good=Example(
        "option.model_id=./compiled\noption.entryPoint=djl_python.transformers_neuronx\noption.tensor_parallel_degree=2\n",
        args={
            "backend": "transformers-neuronx",
            "lmi_version": "0.30.0",
            "model": "tests/fixtures/container/compiled-llama",
        },
    ),
    source=(
        "optimum-neuron writes the neuron section when it exports a decoder (modeling_decoder.py) — "
        "https://github.com/huggingface/optimum-neuron/blob/v0.0.20/optimum/neuron/modeling_decoder.py"
    ),
)
def neuron_artifact_mismatch(unit: LintUnit) -> Iterator[Finding]:
    section = _neuron_section(unit)
    if section is None or unit.context.backend.accelerator != "neuron" or unit.assessment is None:
        return
    shape = unit.assessment.shape
    compared = (
        ("batch size", ("batch_size",), shape.batch_size),
        ("sequence length", ("sequence_length",), shape.sequence_length),
        (
            "cores (tensor parallel degree)",
            ("num_cores", "tp_degree", "tensor_parallel_size"),
            shape.tensor_parallel_degree,
        ),
        ("dtype", ("auto_cast_type", "torch_dtype"), shape.dtype),
    )
    for label, names, resolved in compared:
        compiled = next((section[name] for name in names if section.get(name) is not None), None)
        if compiled is None or resolved is None or resolved.key is None:
            continue  # only what the configuration sets itself
        served: Any = resolved.value
        if label == "dtype":
            compiled, served = (
                _NEURON_DTYPES.get(str(compiled), compiled),
                _NEURON_DTYPES.get(str(served), served),
            )
        if str(compiled) == str(served):
            continue
        yield unit.finding(
            "LMI211",
            f"{resolved.key}={served} but the pre-compiled model was compiled for {label} {compiled} (neuron section "
            f"of its config.json): set {resolved.key}={compiled}, or export the model again for this shape",
            setting=unit.config.settings.get(resolved.key),
        )


@rule(
    code="LMI212",
    slug="neuron-compiler-too-new",
    severity="error",
    summary="Pre-compiled Neuron artifacts from a newer neuronx-cc than the image has.",
    why=(
        "optimum-neuron refuses artifacts compiled with a newer compiler than the one installed ('Pretrained model "
        "is compiled with neuronx-cc(…) newer than current compiler'); the image pins its neuronx-cc."
    ),
    bad=Example(
        "option.model_id=./compiled\noption.entryPoint=djl_python.transformers_neuronx\noption.tensor_parallel_degree=2\n",
        args={
            "backend": "transformers-neuronx",
            "lmi_version": "0.27.0",
            "model": "tests/fixtures/container/compiled-llama",
        },
    ),
    good=Example(
        "option.model_id=./compiled\noption.entryPoint=djl_python.transformers_neuronx\noption.tensor_parallel_degree=2\n",
        args={
            "backend": "transformers-neuronx",
            "lmi_version": "0.30.0",
            "model": "tests/fixtures/container/compiled-llama",
        },
    ),
    source=(
        "optimum-neuron check_compiler_compatibility; image_pins.json (neuronx-cc per image) — "
        "https://github.com/huggingface/optimum-neuron/blob/v0.0.20/optimum/neuron/utils/version_utils.py "
        "https://github.com/deepjavalibrary/djl-serving/blob/049a929bed562c1073e8c38ed87d85476c34383f/serving/docker/pytorch-inf2.Dockerfile"
    ),
)
def neuron_compiler_too_new(unit: LintUnit) -> Iterator[Finding]:
    section = _neuron_section(unit)
    compiled = section.get("compiler_version") if section else None
    pins = image_pins(unit)
    installed = pins.pins.get("neuronx-cc") if pins else None
    if not isinstance(compiled, str) or not installed or pins is None:
        return
    if numbers(compiled) > numbers(installed):
        yield unit.finding(
            "LMI212",
            f"{unit.context.model.model_id} was compiled with neuronx-cc {shorten(compiled, 40)}; the {pins.image} image "
            f"of LMI {unit.context.release.label()} has {installed}, and optimum-neuron refuses artifacts from a newer "
            "compiler — use an image with that compiler or export again with this one",
            setting=unit.config.settings.get("option.model_id"),
        )


@rule(
    code="LMI213",
    slug="neuron-cc-flags-with-precompiled",
    severity="warning",
    summary="NEURON_CC_FLAGS set beside pre-compiled Neuron artifacts.",
    why=(
        "The compiler flags are part of the key of the Neuron compilation cache: flags other than the ones the "
        "artifacts were compiled with miss the cache, and the container compiles the model again at start-up "
        "(an hour for a large model) instead of loading what was compiled."
    ),
    bad=Example(
        "HF_MODEL_ID=/opt/ml/model\nOPTION_COMPILED_GRAPH_PATH=s3://my-bucket/neuron-cache/\nNEURON_CC_FLAGS=-O3\n",
        kind="env",
        args={"backend": "transformers-neuronx", "lmi_version": "0.30.0"},
    ),
    good=Example(
        "HF_MODEL_ID=/opt/ml/model\nOPTION_COMPILED_GRAPH_PATH=s3://my-bucket/neuron-cache/\n",
        kind="env",
        args={"backend": "transformers-neuronx", "lmi_version": "0.30.0"},
    ),
    source=(
        "AWS Neuron SDK: the persistent cache keys compiled graphs by the HLO and the compiler flags — "
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-features/neuron-caching.html"
    ),
)
def neuron_cc_flags_with_precompiled(unit: LintUnit) -> Iterator[Finding]:
    from lmi_config.knowledge.container import precompiled_keys

    precompiled = _neuron_section(unit) is not None or any(unit.config.get(key) for key in precompiled_keys())
    if not precompiled or unit.context.backend.accelerator != "neuron":
        return
    for source in unit.sources:
        for entry in source.env.entries if source.env else []:
            if entry.name == "NEURON_CC_FLAGS" and entry.value.strip():
                yield unit.finding(
                    "LMI213",
                    f"NEURON_CC_FLAGS={shorten(entry.value.strip())!r} beside pre-compiled artifacts: other flags "
                    "than the ones they were compiled with miss the compilation cache and the model is compiled "
                    "again at start-up — drop it, or compile the artifacts with the same flags",
                    path=source.path,
                    line=entry.line,
                    key=entry.name,
                )
