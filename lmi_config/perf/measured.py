"""Measured rows (the format of ``shared/reference/perf_measurements.json``) as the performance model
sees them: the configuration and workload a row describes, or why it cannot be predicted, and each
metric as its source defines it next to the prediction of that same figure.

Used by ``scripts/fit_perf.py`` and ``benchmarks/perf_accuracy.py``; a row it cannot read is
skipped with the reason, never guessed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from lmi_config.configfile.text import shorten
from lmi_config.knowledge.instances import Instance, instance_with_accelerator, resolve_instance, with_lnc
from lmi_config.knowledge.models import quantized_copy_base
from lmi_config.modelarch import ModelArch, from_catalog
from lmi_config.perf.devices import UnsupportedConfiguration, engine_family
from lmi_config.perf.types import Configuration, Prediction, Workload

BACKEND_BY_FAMILY = {
    "neuron-tnx": "transformers-neuronx",
    "neuron-nxd": "nxdi",
    "gpu-vllm": "vllm",
    "gpu-trtllm": "tensorrt-llm",
}
# flags that say a row measures something else than plain serving of its configuration
SKIPPED_FLAGS = {
    "superseded_by_later_docs_version": "superseded by a later measurement of the same configuration",
    "p99_only": "the source gives p99 figures only (the model predicts the median)",
    "input_output_lengths_unknown": "input and output lengths are not stated",
}
# 16-bit dtypes as sources spell them (fp8 is read as fp8 weights on 16-bit activations)
KNOWN_DTYPES = {"fp16": "fp16", "float16": "fp16", "bf16": "bf16", "bfloat16": "bf16"}
# weight quantization as sources write it -> the sizing tables' method (first match wins); 4-bit
# integer layouts (AWQ, GPTQ, W4A16) are GPU-only: no Neuron engine loads them
QUANTIZATION_WORDS = (
    ("nvfp4", "modelopt_fp4", True),
    ("fp8", "fp8", False),
    ("awq", "awq", True),
    ("gptq", "gptq", True),
    ("w4a16", "gptq", True),
    ("int4", "gptq", True),
    ("w8a8", "int8", False),
    ("int8", "int8", False),
)
# how sources write "not set" (for dtype: the engine's default, the checkpoint's dtype)
NO_VALUE = ("", "auto", "none", "null", "no", "false", "n/a", "-", "default")
# flags under which one figure is defined differently from its column
DROPPED_METRICS = {
    "summary_csv_throughput_is_per_request_p50": "throughput",
    "llmperf_unpatched_tpot_may_include_ttft": "tpot",
}


class Metric(NamedTuple):
    """One measured figure of a row and the model's prediction of the same figure."""

    name: str  # ttft | tpot | throughput
    measured: float
    predicted: float
    definition: str


class ReadRow(NamedTuple):
    """A row the model can predict: its configuration, workload and how each metric is defined."""

    configuration: Configuration
    workload: Workload
    metrics: tuple[tuple[str, str, Callable[[Prediction], float], float], ...]


def value(row: Mapping[str, Any], key: str) -> Any:
    """A column of a row; a missing column is null."""
    return row.get(key)


def read_row(row: Mapping[str, Any]) -> ReadRow | str:
    """The configuration, workload and metrics of a measured row, or why it is skipped."""
    try:
        return _read(row)
    except (TypeError, ValueError, OverflowError) as error:
        # a value of the wrong kind somewhere in the row: skipped, never guessed
        return f"unreadable row ({str(error)[:200]})"


def _read(row: Mapping[str, Any]) -> ReadRow | str:
    reason = _skip_reason(row)
    if reason:
        return reason
    found = _model(value(row, "model"))
    if isinstance(found, str):
        return found
    arch, named_quantization = found
    instance = _instance(row)
    if isinstance(instance, str):
        return instance
    family = _family(row, instance)
    if family is None:
        backend = str(value(row, "backend"))[:80]
        return f"no parameters for engine family: backend {backend!r} is not one the model knows on {instance.accelerator}"
    configuration = _configuration(row, arch, instance, family, named_quantization)
    if isinstance(configuration, str):
        return configuration
    workload = _workload(row)
    metrics = _metrics(row, workload)
    if not metrics:
        return "no TTFT, TPOT or throughput figure"
    return ReadRow(configuration, workload, metrics)


def _skip_reason(row: Mapping[str, Any]) -> str | None:
    if value(row, "speculative_decoding"):
        return "speculative decoding (the model predicts plain decoding)"
    if value(row, "prefix_caching") is True:
        return "prefix caching (the model predicts a full prefill)"
    for flag in value(row, "quality_flags") or []:
        if flag in SKIPPED_FLAGS:
            return SKIPPED_FLAGS[flag]
    family = value(row, "engine_family")
    if family is not None and family not in BACKEND_BY_FAMILY:
        return f"no parameters for engine family {str(family)[:80]!r}"
    if family is None and not isinstance(value(row, "backend"), str):
        return "neither engine_family nor backend is stated"
    for key in ("input_tokens", "output_tokens"):
        if not _count(value(row, key)):
            return f"{key} is not stated as a positive whole number"
    if not _count(value(row, "tp")) and (
        value(row, "tp") is not None
        or not any(_count(value(row, key)) for key in ("neuron_cores_used", "accelerator_count_used"))
    ):
        return "tp is not stated as a positive whole number (nor the cores or accelerators used)"
    for key in ("pp", "batch_size", "concurrency", "dp_or_copies", "max_seq_len", "output_tokens_measured"):
        if value(row, key) is not None and not _count(value(row, key)):
            return f"{key} is not a positive whole number"
    rate = value(row, "request_rate")
    if rate is not None and not _rate(rate):
        return "request_rate is not a positive number of requests per second"
    if rate is not None and value(row, "concurrency") is not None:
        return "both concurrency and request_rate are stated (a run has one or the other)"
    if not _static(row) and value(row, "concurrency") is None and rate is None:
        # under continuous batching the batch size bounds the engine, it does not say how loaded it was
        return (
            "the concurrency (or request rate) of a continuous-batching measurement is not stated "
            "(the workload would be guessed)"
        )
    if rate is not None and value(row, "batch_size") is None:
        return "batch_size is not stated: under a request rate the engine's sequence slots bound the load"
    return None


def _static(row: Mapping[str, Any]) -> bool:
    """The Neuron performance pages measure a static batch: every sequence of the batch runs at once."""
    return bool(value(row, "source_group") == "neuron-perf-page")


def _count(number: Any) -> bool:
    """A positive whole number of at most 10^7 (tokens, degrees and batches beyond are not real)."""
    return (
        isinstance(number, int | float)
        and not isinstance(number, bool)
        and math.isfinite(number)
        and 1 <= number <= 10**7
        and float(number).is_integer()
    )


def _model(model: Any) -> tuple[ModelArch, str | None] | str:
    """The architecture a row's model id names, and the quantization its name states, if any.

    An id that is a quantized copy of a catalog model (``nvidia/...-FP8``, ``...-AWQ``) has the base
    model's layers and heads: read as the base when the catalog lacks the copy or cannot size it; a
    copy the catalog holds is read as itself, in the method its checkpoint is stored in. The row's own
    quantization wins over the name's and the checkpoint's."""
    if not isinstance(model, str) or len(model) > 200:
        return f"model {str(model)[:80]!r} is not in the offline catalog"
    arch = from_catalog(model)
    named = None
    base = quantized_copy_base(model) if arch is None or arch.memory_not_estimated else None
    if base is not None:
        # Meta's Llama 2 repositories end in -hf; their quantized copies drop it
        based = from_catalog(base[0]) or from_catalog(base[0] + "-hf")
        if based is not None and not based.memory_not_estimated:
            arch = based
            named = base[1].lstrip("-")  # read by QUANTIZATION_WORDS like a row's own quantization
    if arch is None:
        return f"model {model[:80]!r} is not in the offline catalog"
    if arch.memory_not_estimated:
        # its parameter count is not the formula's (a layout it does not cover): no prediction to compare
        return f"model {arch.model_id!r}: {arch.memory_not_estimated}"
    # a checkpoint stored quantized runs in its stored method where the row does not say
    return arch, named or arch.stored_quantization


def _family(row: Mapping[str, Any], instance: Instance) -> str | None:
    """The row's engine family, else the one its backend runs as on its hardware."""
    stated = value(row, "engine_family")
    if stated is not None:
        return str(stated)
    try:
        return engine_family(str(value(row, "backend")), instance)
    except UnsupportedConfiguration:
        return None


def _instance(row: Mapping[str, Any]) -> Instance | str:
    name = value(row, "instance") or value(row, "hardware")
    if not isinstance(name, str) or len(name) > 100:
        return f"unknown instance {str(name)[:80]!r}"
    try:
        instance = resolve_instance(str(name))
    except ValueError:
        by_accelerator = _instance_by_accelerator(row)
        if by_accelerator is None:
            return f"unknown instance {str(name)[:80]!r}"
        instance = by_accelerator
    lnc = value(row, "lnc")
    if lnc and instance.lnc and int(lnc) != instance.lnc:
        try:
            instance = with_lnc(instance, int(lnc))
        except ValueError as error:
            return str(error)
    return instance


def _instance_by_accelerator(row: Mapping[str, Any]) -> Instance | None:
    """The smallest instance type carrying the row's ``hardware`` (an accelerator such as ``A10G``,
    ``A100-SXM4-80GB`` or ``Inferentia2``) with the devices the row uses, when it names no instance."""
    hardware = value(row, "hardware")
    if not isinstance(hardware, str):
        return None
    devices = value(row, "accelerator_count_used")
    tp = value(row, "tp") or value(row, "neuron_cores_used") or 1
    cores = int(tp) * int(value(row, "pp") or 1) * int(value(row, "dp_or_copies") or 1)
    return instance_with_accelerator(hardware, int(devices) if _count(devices) else 1, cores)


def _tensor_parallel_degree(row: Mapping[str, Any], instance: Instance) -> int | str:
    """The row's TP, else what the cores (Neuron) or accelerators it used give: in this format both
    count TP x PP (``accelerator_count_used`` is chips on Neuron)."""
    if _count(value(row, "tp")):
        return int(value(row, "tp"))
    pp = int(value(row, "pp") or 1)
    cores: Any = value(row, "neuron_cores_used") if instance.accelerator == "neuron" else None
    if not _count(cores) and _count(value(row, "accelerator_count_used")):
        cores = int(value(row, "accelerator_count_used")) * instance.cores_per_device
    if not _count(cores) or int(cores) % pp:
        return "tp is not stated, and the cores or accelerators used do not give it"
    return int(cores) // pp


def _configuration(
    row: Mapping[str, Any], arch: ModelArch, instance: Instance, family: str, named: str | None
) -> Configuration | str:
    tp = _tensor_parallel_degree(row, instance)
    if isinstance(tp, str):
        return tp
    pp = int(value(row, "pp") or 1)
    if tp * pp > instance.num_cores:
        return f"TP {tp} x PP {pp} is more than the {instance.num_cores} {instance.core_word}s of {instance.instance_type}"
    batch = int(value(row, "batch_size") or value(row, "concurrency") or 1)
    for key in ("dtype", "quantization"):
        if value(row, key) is not None and not isinstance(value(row, key), str):
            return f"{key} is not text"
    dtype = str(value(row, "dtype") or "").strip().lower()
    if dtype in NO_VALUE:  # the engine's default: the checkpoint's dtype
        dtype = str(arch.torch_dtype or "bf16").lower()
    quantization_text = str(value(row, "quantization") or "").strip().lower()
    if quantization_text in NO_VALUE or quantization_text in KNOWN_DTYPES:
        quantization_text = ""  # written out as "none" or as the 16-bit dtype itself
    quantization_text = quantization_text or named or ""
    if dtype in ("fp8", "fp4", "nvfp4"):  # quantized weights on 16-bit activations
        quantization_text, dtype = quantization_text or ("fp8" if dtype == "fp8" else "nvfp4"), "bf16"
    quantization = None
    if quantization_text:
        gpu = instance.accelerator == "gpu"
        quantization = next(
            (
                method
                for word, method, gpu_only in QUANTIZATION_WORDS
                if word in quantization_text and (gpu or not gpu_only)
            ),
            None,
        )
        if quantization is None:
            known = "nvfp4, fp8, int8, awq, gptq, w4a16, int4" if gpu else "fp8, int8"
            return f"quantization {quantization_text[:60]!r} is not one the model knows on {instance.accelerator} ({known})"
    if dtype not in KNOWN_DTYPES:
        return f"dtype {dtype[:60]!r} is not one the model knows ({', '.join(KNOWN_DTYPES)})"
    dtype = KNOWN_DTYPES[dtype]
    return Configuration(
        arch=arch,
        instance=instance,
        backend=BACKEND_BY_FAMILY[family],
        tensor_parallel_degree=tp,
        pipeline_parallel_degree=pp,
        max_concurrent_sequences=batch,
        sequence_length=value(row, "max_seq_len"),
        weight_dtype=dtype,
        quantization=quantization,
        copies=int(value(row, "dp_or_copies") or 1),
        batching="static" if _static(row) else "continuous",
    )


def _rate(number: Any) -> bool:
    """A positive, finite number of requests per second."""
    return (
        isinstance(number, int | float)
        and not isinstance(number, bool)
        and math.isfinite(number)
        and 0 < number <= 10**7
    )


def _workload(row: Mapping[str, Any]) -> Workload:
    measured = value(row, "output_tokens_measured")
    output = int(round(measured)) if measured else int(value(row, "output_tokens"))
    rate = value(row, "request_rate")
    if rate is not None:
        # requests/s arriving at the whole system: the model spreads them over its copies
        return Workload(int(value(row, "input_tokens")), output, None, float(rate))
    # users of the whole system (a static batch: every copy's batch), spread over its copies
    copies = int(value(row, "dp_or_copies") or 1)
    concurrency = value(row, "concurrency")
    if concurrency is None and value(row, "batch_size"):
        concurrency = int(value(row, "batch_size")) * copies
    return Workload(int(value(row, "input_tokens")), output, int(concurrency) if concurrency else None)


def _metrics(
    row: Mapping[str, Any], workload: Workload
) -> tuple[tuple[str, str, Callable[[Prediction], float], float], ...]:
    dropped = {DROPPED_METRICS[flag] for flag in value(row, "quality_flags") or [] if flag in DROPPED_METRICS}
    both = workload.input_tokens + workload.output_tokens
    candidates: list[tuple[str, str, Callable[[Prediction], float], Any]] = [
        ("ttft", "time to first token, ms", lambda p: p.ttft_ms, value(row, "ttft_ms")),
        ("tpot", "time per output token, ms", lambda p: p.tpot_ms, value(row, "tpot_ms")),
        (
            "tpot",
            "request latency per input + output token, ms (Neuron SDK 2.14-2.17 tables)",
            lambda p: p.end_to_end_ms / both,
            value(row, "latency_per_token_ms"),
        ),
        (
            "throughput",
            "output tokens/s of the whole system",
            lambda p: p.output_tokens_per_second,
            value(row, "throughput_output_tokens_per_s"),
        ),
        (
            "throughput",
            "input + output tokens/s of the whole system (Neuron SDK 2.14-2.17 tables)",
            lambda p: p.output_tokens_per_second * both / workload.output_tokens,
            value(row, "throughput_total_tokens_per_s"),
        ),
    ]
    return tuple(
        (name, definition, figure, float(measured))
        for name, definition, figure, measured in candidates
        if isinstance(measured, int | float)
        and not isinstance(measured, bool)
        and measured > 0
        and name not in dropped
    )


def compare(read: ReadRow, prediction: Prediction) -> list[Metric]:
    """Each measured figure of a row next to the prediction of the same figure."""
    return [
        Metric(name, measured, figure(prediction), definition)
        for name, definition, figure, measured in read.metrics
    ]


SUPERSEDED_REASON = (
    "superseded: the same model on the same hardware was measured again with a newer Neuron SDK "
    "(the model predicts current software)"
)


def _version(text: Any) -> tuple[int, ...]:
    return tuple(int(part) for part in str(text or "0").split(".") if part.isdigit())


def superseded_by_newer_software(row: Mapping[str, Any], rows: Sequence[Any]) -> str | None:
    """The id of a newer measurement when the same model on the same hardware and engine was
    measured again with a newer Neuron SDK, else None: the model describes current software, so
    the older figures are reported but neither fitted nor scored."""
    mine = _version(value(row, "neuron_sdk_version"))
    if not mine:
        return None
    for other in rows:
        if (
            isinstance(other, Mapping)
            and other.get("model") == value(row, "model")
            and other.get("hardware") == value(row, "hardware")
            and other.get("engine_family") == value(row, "engine_family")
            and _version(other.get("neuron_sdk_version")) > mine
        ):
            return str(other.get("id"))[:40]
    return None


def source_of(row: Mapping[str, Any]) -> str:
    """The measurement campaign a row belongs to, what validation leaves out whole: who measured
    (``source_group``), on what hardware, with which software (the engine's version, else the Neuron
    SDK's major.minor, else the date measured, else the docs release that published it). A row's own
    ``source_id`` wins. Two tables of one campaign (a latency and a throughput table) are one source."""
    explicit = value(row, "source_id")
    if isinstance(explicit, str) and explicit.strip():
        return shorten(explicit.strip(), 120)
    sdk = ".".join(str(value(row, "neuron_sdk_version") or "").split(".")[:2])
    software = (
        value(row, "backend_version")
        or sdk
        or str(value(row, "measured_date") or "")[:10]
        or value(row, "docs_release_tag")
        or "software unstated"
    )
    parts = (value(row, "source_group") or "unnamed source", value(row, "hardware"), software)
    return shorten(" ".join(str(part) for part in parts), 120)


def harness_of(row: Mapping[str, Any]) -> str:
    """The harness a row was measured with (its ``harness`` column, else its ``source_group``: the
    tool or the publisher's benchmark), whose own effects the fit names apart from the engine's."""
    stated = value(row, "harness") or value(row, "source_group") or "unnamed harness"
    return shorten(str(stated), 80)
