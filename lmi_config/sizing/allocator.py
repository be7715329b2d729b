"""How much device memory PyTorch's caching allocator holds after vLLM's profile forward pass.

vLLM releases up to 0.6.3 measure the profile run with ``torch.cuda.mem_get_info`` (device
memory), not with the allocator's statistics, and call ``torch.cuda.empty_cache()`` only
before the run. What they count is therefore every segment the allocator reserved during the
run, which is more than the largest set of tensors alive at once: the first decoder layer
allocates each intermediate (normalised input, QKV, attention output, projections, MLP) while
no freed block of its size exists yet, so each gets its own segment; later layers reuse them.

This module replays one decoder layer's allocations and frees (as vLLM's Llama-style
``DecoderLayer.forward`` makes them: fused residual-add norms in place from the second layer
on) through a best-fit allocator with block splitting, the policy of PyTorch's
``CUDACachingAllocator``, and returns the bytes reserved. The rounding constants are data
(``vllm_memory.json`` ``allocator``).
"""

from typing import NamedTuple


class Rounding(NamedTuple):
    """PyTorch's size classes for large allocations (bytes)."""

    small_request: int  # at or below: the small pool (ignored here, negligible)
    large_threshold: int  # below: carved from a shared mid-size segment
    mid_segment: int  # the size of that shared segment
    granularity: int  # large requests are rounded up to a multiple of this


def _round(size: int, rounding: Rounding) -> int:
    step = rounding.granularity
    return -(-size // step) * step


class _Pool:
    """Segments and their free blocks, best fit with splitting and coalescing."""

    def __init__(self, rounding: Rounding) -> None:
        self.rounding = rounding
        self.reserved = 0
        self.free: list[tuple[int, int, int]] = []  # (size, segment, offset)
        self.live: dict[str, tuple[int, int, int]] = {}
        self.segments = 0

    def alloc(self, name: str, size: int) -> None:
        if size <= self.rounding.small_request:
            return
        size = _round(size, self.rounding)
        fitting = [block for block in self.free if block[0] >= size]
        if fitting:
            block = min(fitting)
            self.free.remove(block)
            block_size, segment, offset = block
            if block_size - size > self.rounding.small_request:
                self.free.append((block_size - size, segment, offset + size))
            else:
                size = block_size
            self.live[name] = (size, segment, offset)
            return
        segment_size = size if size >= self.rounding.large_threshold else self.rounding.mid_segment
        self.segments += 1
        self.reserved += segment_size
        if segment_size > size:
            self.free.append((segment_size - size, self.segments, size))
        self.live[name] = (size, self.segments, 0)

    def release(self, name: str) -> None:
        block = self.live.pop(name, None)
        if block is None:
            return
        size, segment, offset = block
        # coalesce with free neighbours in the same segment
        for neighbour in list(self.free):
            other_size, other_segment, other_offset = neighbour
            if other_segment != segment:
                continue
            if other_offset + other_size == offset or offset + size == other_offset:
                self.free.remove(neighbour)
                offset = min(offset, other_offset)
                size += other_size
        self.free.append((size, segment, offset))


class LayerSizes(NamedTuple):
    """Bytes of each intermediate of one decoder layer on one GPU for the profile's tokens."""

    hidden: int  # hidden states / residual / projection outputs (replicated across TP)
    qkv: int  # the fused QKV projection output
    attention: int  # the attention output before o_proj
    mlp_up: int  # gate_up (gated MLP) or fc1 output
    mlp_act: int  # the activation's output


def reserved_bytes(
    sizes: LayerSizes, rounding: Rounding, layers: int = 3, *, attention_copy: bool = False
) -> int:
    """Bytes the allocator holds after ``layers`` decoder layers (steady after the second).

    ``attention_copy``: the attention backend allocates its output and copies the kernel's own
    output into it (vLLM 0.4-0.6 backends), so two attention-sized tensors are alive for a moment.
    """
    pool = _Pool(rounding)
    pool.alloc("residual", sizes.hidden)  # the embedding output, the residual stream from here on
    previous = "residual"
    for layer in range(layers):
        if layer == 0:  # first layer: the norm writes a new tensor, the residual is the embedding
            pool.alloc("normed", sizes.hidden)
            previous = "normed"
        pool.alloc("qkv", sizes.qkv)
        pool.alloc("attention", sizes.attention)
        if attention_copy:
            pool.alloc("kernel_output", sizes.attention)
            pool.release("kernel_output")
        pool.alloc("o_proj", sizes.hidden)
        pool.release("qkv")
        pool.release("attention")
        pool.release(previous)
        pool.alloc("mlp_up", sizes.mlp_up)
        pool.alloc("mlp_act", sizes.mlp_act)
        pool.alloc(f"down{layer}", sizes.hidden)
        pool.release("mlp_up")
        pool.release("mlp_act")
        pool.release("o_proj")
        previous = f"down{layer}"
    return pool.reserved
