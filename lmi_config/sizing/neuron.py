"""NeuronCores: weights with padded query heads and replicated KV heads, the KV cache per GQA
strategy, fixed per-core overheads and, for NxD Inference, rank 0's whole embeddings and the
context-encoding scratch."""

from __future__ import annotations

import math

from lmi_config.knowledge.instances import Instance
from lmi_config.modelarch import ModelArch
from lmi_config.sizing.model import (
    GIB,
    UNSHARDED_EMBEDDINGS,
    MemoryBreakdown,
    MemoryItem,
    RankMemory,
    Shape,
    constants,
    dtype_bytes,
    item_mib,
    kv_layout,
    weights_bytes,
)


def estimate_neuron(arch: ModelArch, instance: Instance, backend: str, shape: Shape) -> MemoryBreakdown:
    overheads = constants()["neuron"][backend]
    tp = shape.tensor_parallel_degree
    strategy, padded, kv_per_core = kv_layout(arch, tp, backend, shape.gqa_strategy)
    weights_total, embeddings = weights_bytes(arch, shape, padded, kv_per_core, neuron=True)
    weights_per_core = weights_total // tp
    batch = shape.batch_size
    cache_length = shape.sequence_length
    notes = []
    if backend == "nxdi" and arch.sliding_window and arch.sliding_window < cache_length:
        cache_length = arch.sliding_window
        notes.append(f"KV cache length is the sliding window ({arch.sliding_window})")
    kv_heads = kv_per_core
    batch_per_core: float = batch
    if strategy == "shard-over-batch":
        batch_per_core = math.ceil(batch / tp)
    if (
        shape.shard_over_sequence
        and backend == "transformers-neuronx"
        and kv_per_core >= 1
        and arch.num_key_value_heads < tp
    ):
        kv_heads = arch.num_key_value_heads / tp  # replication undone by sharding the sequence
        strategy += " + shard_over_sequence"
    kv_bytes = int(
        2
        * arch.num_layers
        * batch_per_core
        * cache_length
        * kv_heads
        * arch.head_dim
        * dtype_bytes(shape.kv_dtype)
    )
    kv_note = f"2 x {arch.num_layers} layers x batch {batch_per_core:g} x {cache_length} tokens x {kv_heads:g} KV heads x {arch.head_dim} x {dtype_bytes(shape.kv_dtype):g} B ({strategy})"
    weight_note = f"{weights_total / GIB:.2f} GiB / TP {tp}" + (
        f"; query heads padded {arch.num_attention_heads}→{padded}"
        if padded != arch.num_attention_heads
        else ""
    )

    def fixed(rank0: bool) -> list[MemoryItem]:
        items = []
        for name, label in (
            ("shared_scratchpad_mib", "shared scratchpad"),
            ("collectives_mib", "collectives"),
            ("model_code_mib", "model code (NEFFs)"),
            ("dma_rings_mib", "DMA rings"),
            ("other_mib", "other"),
        ):
            entry = overheads.get(name)
            if not entry:
                continue
            value = entry.get("rank0", entry["value"]) if rank0 else entry["value"]
            items.append(
                item_mib(
                    label,
                    value,
                    f"{value} MiB, {'rank 0 ' if rank0 and 'rank0' in entry else ''}fixed per core (data/memory.json)",
                )
            )
        return items

    def scratch(items: list[MemoryItem]) -> list[MemoryItem]:
        attention = overheads.get("attention_scratch")
        if not attention:
            return items
        heads_per_rank = padded / tp
        if shape.chunked_prefill:
            needed = (
                heads_per_rank
                * attention["chunk_tokens"]
                * shape.sequence_length
                * attention["standard_bytes_per_element"]
            )
            kind = f"chunked prefill: {heads_per_rank:g} heads x {attention['chunk_tokens']} x {shape.sequence_length} x 2 B"
        else:
            needed = heads_per_rank * shape.sequence_length**2 * attention["standard_bytes_per_element"]
            kind = f"context encoding: {heads_per_rank:g} heads x {shape.sequence_length}² x 2 B"
        result = []
        for item in items:
            if item.name == "shared scratchpad" and needed > item.bytes:
                result.append(MemoryItem("attention scratchpad", int(needed), kind))
            else:
                result.append(item)
        return result

    other_ranks = [
        MemoryItem("weights", weights_per_core, weight_note),
        MemoryItem("KV cache", kv_bytes, kv_note),
    ]
    ranks = []
    if overheads.get("rank0_unsharded_embeddings") and tp > 1:
        extra = int(embeddings * (1 - 1 / tp))
        rank0 = [
            other_ranks[0],
            MemoryItem(
                UNSHARDED_EMBEDDINGS,
                extra,
                "measured once (Llama-3.1-8B, optimum NxD, on-device sampling)",
                estimated=True,
            ),
            other_ranks[1],
        ]
        ranks.append(RankMemory("rank 0", tuple(scratch(rank0 + fixed(True)))))
        ranks.append(RankMemory(f"ranks 1-{tp - 1}", tuple(scratch(other_ranks + fixed(False)))))
    else:
        ranks.append(
            RankMemory("every core" if tp > 1 else "the core", tuple(scratch(other_ranks + fixed(False))))
        )
    budget = instance.memory_per_core_bytes
    return MemoryBreakdown(
        unit="NeuronCore",
        budget_bytes=budget,
        budget_note=f"{budget / GIB:g} GiB HBM per NeuronCore of {instance.instance_type}",
        ranks=tuple(ranks),
        kv_strategy=strategy,
        query_heads_padded=padded,
        kv_heads_per_core=kv_heads,
        weight_bytes_total=weights_total,
        notes=tuple(notes),
    )
