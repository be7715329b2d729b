"""How many requests a paged KV cache runs at once: the evidence behind ``plan``'s count.

Run: python benchmarks/kv_admission.py [FILE ...]   (default: ../shared/reference/perf_measurements.json
and benchmarks/aiconfigurator_perf.json)

For every measured dense GPU row (vLLM, TensorRT-LLM) the memory model gives the KV cache's tokens for
the row's configuration; the row's concurrency is compared with how many of its requests that holds
counted at their full length (input + output) and at their mean length while decoding (input + half
the output). A run whose requests did not all fit queues, and its TTFT shows it: the row counts as
queued when its measured TTFT is more than QUEUED_RATIO times what the performance model predicts
with every request running (a prediction that has no queue in it). Prints one line per row near or
past either count, then per band of concurrency / count the rows and how many queued; the last line is
one JSON object with the share of rows that queued in each band, for both counts.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lmi_config.perf import UnsupportedConfiguration, predict  # noqa: E402
from lmi_config.perf.measured import read_row  # noqa: E402
from lmi_config.sizing.gpu import estimate_gpu  # noqa: E402
from lmi_config.sizing.model import Shape  # noqa: E402

DEFAULTS = (
    ROOT.parent / "shared" / "reference" / "perf_measurements.json",
    ROOT / "benchmarks" / "aiconfigurator_perf.json",
)
QUEUED_RATIO = 3.0  # measured TTFT / unqueued prediction above which a run waited for KV blocks
BANDS = ((0.0, 0.8), (0.8, 1.0), (1.0, 1.3), (1.3, 2.0), (2.0, float("inf")))


def rows(paths: Iterable[Path]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for path in paths:
        document = json.loads(path.read_text(encoding="utf-8"))
        found += document["rows"] if isinstance(document, dict) else document
    return found


def observation(row: dict[str, Any]) -> dict[str, Any] | None:
    """The row's concurrency against both counts and whether it queued, or None when not comparable."""
    read = read_row(row)
    if isinstance(read, str):
        return None
    configuration, workload = read.configuration, read.workload
    if configuration.instance.accelerator != "gpu" or configuration.arch.num_experts:
        return None
    if configuration.batching != "continuous" or not workload.concurrency or not row.get("ttft_ms"):
        return None
    backend = "tensorrt-llm" if configuration.backend == "tensorrt-llm" else "vllm"
    version = row.get("backend_version") if backend == "vllm" else None
    full = workload.input_tokens + workload.output_tokens
    shape = Shape(
        tensor_parallel_degree=configuration.tensor_parallel_degree,
        batch_size=configuration.max_concurrent_sequences,
        sequence_length=full,
        weight_dtype=configuration.weight_dtype,
        kv_dtype=configuration.weight_dtype,
        quantize=configuration.quantization,
        pipeline_parallel_degree=configuration.pipeline_parallel_degree,
        vllm_version=version,
    )
    try:
        tokens = estimate_gpu(configuration.arch, configuration.instance, backend, shape).kv_cache_tokens
        unqueued = predict(configuration, workload).ttft_ms
    except (UnsupportedConfiguration, ValueError, KeyError):
        return None
    if not tokens or unqueued <= 0:
        return None
    mean = workload.input_tokens + (workload.output_tokens + 1) // 2
    return {
        "id": row["id"],
        "backend": backend,
        "model": row["model"],
        "hardware": row.get("hardware"),
        "concurrency": workload.concurrency,
        "full": workload.concurrency / max(tokens // full, 1),
        "mean": workload.concurrency / max(tokens // mean, 1),
        "ttft_ratio": float(row["ttft_ms"]) / unqueued,
    }


def band_counts(observations: list[dict[str, Any]], key: str) -> list[tuple[str, int, int]]:
    counts = []
    for low, high in BANDS:
        inside = [item for item in observations if low < item[key] <= high]
        queued = sum(item["ttft_ratio"] > QUEUED_RATIO for item in inside)
        counts.append((f"{low:g}-{high:g}", len(inside), queued))
    return counts


def main(argv: list[str]) -> int:
    paths = [Path(name) for name in argv] or list(DEFAULTS)
    observations = [item for row in rows(paths) if (item := observation(row)) is not None]
    print(f"{'row':<11} {'backend':<13} {'model':<34} {'conc':>5} {'/full':>6} {'/mean':>6} {'TTFT x':>7}")
    for item in sorted(observations, key=lambda item: (item["backend"], item["mean"])):
        if item["full"] > 0.8:
            print(
                f"{item['id']:<11} {item['backend']:<13} {item['model'][-34:]:<34} {item['concurrency']:>5} "
                f"{item['full']:>6.2f} {item['mean']:>6.2f} {item['ttft_ratio']:>7.2f}"
            )
    summary: dict[str, Any] = {"rows": len(observations), "queued_above_ttft_ratio": QUEUED_RATIO}
    for key, what in (("full", "input + output"), ("mean", "input + half the output")):
        print(f"concurrency / requests the KV cache holds at {what}: band, rows, of which queued")
        bands = band_counts(observations, key)
        for band, count, queued in bands:
            print(f"  {band:<10} {count:>5} {queued:>5}")
        summary[key] = {band: (round(queued / count, 3) if count else None) for band, count, queued in bands}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
