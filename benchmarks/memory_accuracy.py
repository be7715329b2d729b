"""Print the memory model's estimates next to every published figure, with the error.

Run: python benchmarks/memory_accuracy.py

Totals (weights + KV cache of the whole model, no per-core overheads) are compared with the
figures the Neuron docs quote; the per-core figures with the one full measurement
(optimum-neuron memory_capacity_analysis.md: Llama-3.1-8B, TP 8, batch 32, 4096 tokens).
Targets: totals within ±10 %, measured per-core figures within ±15 %.
"""

from __future__ import annotations

from lmi_config.knowledge.instances import resolve_instance
from lmi_config.modelarch import from_catalog
from lmi_config.sizing import GIB, MIB, UNSHARDED_EMBEDDINGS, Shape, estimate_memory

GB = 1e9


def total_bytes(
    model: str, batch: int, sequence: int, dtype: str, backend: str = "transformers-neuronx"
) -> int:
    """Weights + KV cache of the whole model at TP 1 (the quantity the docs quote)."""
    arch = from_catalog(model)
    assert arch is not None, model
    memory = estimate_memory(
        arch, resolve_instance("trn1.32xlarge"), backend, Shape(1, batch, sequence, dtype, dtype)
    )
    items = {item.name: item.bytes for item in memory.ranks[0].items}
    return items["weights"] + items["KV cache"]


def main() -> None:
    rows = []
    published = [
        ("opt-13b, bs1, fp16 (tnx dev guide)", "facebook/opt-13b", 1, 2048, "fp16", 29 * GB, "GB"),
        ("opt-30b, bs1, fp16 (tnx dev guide)", "facebook/opt-30b", 1, 2048, "fp16", 66 * GB, "GB"),
        (
            "Llama-3.1-8B, bs1, bf16 (NxDI guide)",
            "meta-llama/Llama-3.1-8B-Instruct",
            1,
            4096,
            "bf16",
            16 * GB,
            "GB",
        ),
        (
            "Llama-3.1-70B, bs1, bf16 (NxDI guide)",
            "meta-llama/Llama-3.1-70B-Instruct",
            1,
            4096,
            "bf16",
            148 * GB,
            "GB",
        ),
        (
            "OPT-66B, bs16, 2048, bf16: total (LLM guide)",
            "facebook/opt-66b",
            16,
            2048,
            "bf16",
            (121.5 + 72) * GIB,
            "GiB",
        ),
    ]
    for label, model, batch, sequence, dtype, figure, unit in published:
        estimate = total_bytes(model, batch, sequence, dtype)
        scale = GB if unit == "GB" else GIB
        rows.append((label, figure / scale, estimate / scale, unit, 0.10))
    arch = from_catalog("facebook/opt-66b")
    assert arch is not None
    memory = estimate_memory(
        arch, resolve_instance("inf2.48xlarge"), "transformers-neuronx", Shape(1, 16, 2048, "bf16", "bf16")
    )
    items = {item.name: item.bytes for item in memory.ranks[0].items}
    rows.append(("OPT-66B weights (LLM guide: 121.5 GiB)", 121.5, items["weights"] / GIB, "GiB", 0.10))
    rows.append(("OPT-66B KV cache (LLM guide: 72 GiB)", 72.0, items["KV cache"] / GIB, "GiB", 0.10))

    llama = from_catalog("meta-llama/Llama-3.1-8B-Instruct")
    assert llama is not None
    measured = estimate_memory(
        llama,
        resolve_instance("inf2.48xlarge"),
        "nxdi",
        Shape(8, 32, 4096, "bf16", "bf16", chunked_prefill=True),
    )
    rank0, others = measured.ranks[0], measured.ranks[1]
    rows.append(
        (
            "Llama-3.1-8B TP8 bs32 4096: rank 0 (measured 8,029 MB)",
            8029.0,
            rank0.total_bytes / MIB,
            "MiB",
            0.15,
        )
    )
    rows.append(
        (
            "Llama-3.1-8B TP8 bs32 4096: ranks 1-7 (measured 5,600 MB)",
            5600.0,
            others.total_bytes / MIB,
            "MiB",
            0.15,
        )
    )
    for name, figure in (("weights", (3767, 1948)), ("KV cache", (2048, 2048))):
        names = (name, UNSHARDED_EMBEDDINGS) if name == "weights" else (name,)
        estimate0 = sum(item.bytes for item in rank0.items if item.name in names) / MIB
        estimate1 = next(item.bytes for item in others.items if item.name == name) / MIB
        rows.append((f"  {name}, rank 0 (measured {figure[0]} MB)", float(figure[0]), estimate0, "MiB", 0.15))
        rows.append(
            (f"  {name}, ranks 1-7 (measured {figure[1]} MB)", float(figure[1]), estimate1, "MiB", 0.15)
        )

    print(f"{'figure':<62} {'published':>10} {'estimate':>10} {'unit':>5} {'error':>8}  target")
    failures = 0
    for label, figure, estimate, unit, target in rows:
        error = (estimate - figure) / figure
        ok = abs(error) <= target
        failures += not ok
        print(
            f"{label:<62} {figure:>10.1f} {estimate:>10.1f} {unit:>5} {error:>+8.1%}  ±{target:.0%} {'ok' if ok else 'MISS'}"
        )
    print(f"\n{len(rows) - failures} of {len(rows)} within target")


if __name__ == "__main__":
    main()
