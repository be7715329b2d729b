"""The shape the container builds, each value with where it came from."""

from typing import Generic, NamedTuple, TypeVar

from lmi_config.shape.problems import Problem
from lmi_config.sizing.model import Shape

T = TypeVar("T")


class Resolved(NamedTuple, Generic[T]):
    """A value of the shape and its provenance."""

    value: T
    source: str  # what set it: a key, or the container default / rule that chose it
    key: str | None = None  # the canonical key that carried it, when one did


class Batching(NamedTuple):
    """How requests are batched: the effective rolling batch and the batching mode."""

    rolling_batch: Resolved[str]  # the effective option.rolling_batch
    mode: str  # rolling | async | dynamic
    async_mode: bool


class EngineSettings(NamedTuple):
    """Settings of the engine that change its memory, as the configuration gives them."""

    gqa_strategy: str | None = None
    shard_over_sequence: bool = False
    chunked_prefill: bool = False
    gpu_memory_utilization: float = 0.9
    max_num_batched_tokens: int | None = None
    enforce_eager: bool = False
    single_worker: bool = False  # LoRA or stateful sessions: one worker whatever the cores
    kv_cache_dtype: str | None = None  # vLLM: auto is the model dtype (or the checkpoint's, see below)
    kv_cache_dtype_source: str | None = None  # where a kv_cache_dtype the option does not give came from
    block_size: int | None = None  # vLLM: None is the release's default
    enable_chunked_prefill: bool | None = None  # as written; None: the release's default
    kv_cache_free_gpu_mem_fraction: float | None = None  # TensorRT-LLM
    vllm_version: str | None = None  # the vLLM bundled in the release's image


class ContainerShape(NamedTuple):
    """What the container builds: parallelism, batch, sequence length, precision, copies.

    A value is None where it cannot be known without the instance or the model.
    """

    backend: str
    batching: Batching
    tensor_parallel_degree: Resolved[int] | None
    pipeline_parallel_degree: Resolved[int]
    nodes: Resolved[int]
    batch_size: Resolved[int] | None
    sequence_length: Resolved[int] | None
    dtype: Resolved[str] | None
    quantize: Resolved[str] | None
    copies: Resolved[int] | None
    engine: EngineSettings
    unusable: tuple[Problem, ...] = ()  # values the judge cannot use: nothing is sized from them

    @property
    def tensor_parallel(self) -> int | None:
        return self.tensor_parallel_degree.value if self.tensor_parallel_degree else None

    @property
    def complete(self) -> bool:
        """Whether TP, batch, sequence length and dtype are all known (memory can be estimated)."""
        return None not in (self.tensor_parallel_degree, self.batch_size, self.sequence_length, self.dtype)

    def sizing_shape(self) -> Shape | None:
        """The memory model's input, when the shape is complete."""
        if self.unusable or not (
            self.tensor_parallel_degree and self.batch_size and self.sequence_length and self.dtype
        ):
            return None
        dtype = self.dtype.value
        return Shape(
            tensor_parallel_degree=max(self.tensor_parallel_degree.value, 1),
            batch_size=max(self.batch_size.value, 1),
            sequence_length=max(self.sequence_length.value, 1),
            weight_dtype=dtype,
            kv_dtype=dtype if dtype not in ("int8", "fp8") else "bf16",
            quantize=self.quantize.value if self.quantize else None,
            gqa_strategy=self.engine.gqa_strategy,
            shard_over_sequence=self.engine.shard_over_sequence,
            chunked_prefill=self.engine.chunked_prefill,
            gpu_memory_utilization=self.engine.gpu_memory_utilization,
            max_num_batched_tokens=self.engine.max_num_batched_tokens,
            enforce_eager=self.engine.enforce_eager,
            pipeline_parallel_degree=max(self.pipeline_parallel_degree.value, 1),
            kv_cache_dtype=self.engine.kv_cache_dtype,
            block_size=self.engine.block_size,
            vllm_version=self.engine.vllm_version,
            enable_chunked_prefill=self.engine.enable_chunked_prefill,
            kv_cache_free_gpu_mem_fraction=self.engine.kv_cache_free_gpu_mem_fraction,
        )

    def sources(self) -> dict[str, str]:
        """Where each known value came from, by name (what explain shows)."""
        values = {
            "rolling_batch": self.batching.rolling_batch,
            "tensor_parallel_degree": self.tensor_parallel_degree,
            "pipeline_parallel_degree": self.pipeline_parallel_degree,
            "nodes": self.nodes,
            "batch_size": self.batch_size,
            "sequence_length": self.sequence_length,
            "dtype": self.dtype,
            "quantize": self.quantize,
            "copies": self.copies,
        }
        found = {name: value.source for name, value in values.items() if value is not None}
        if self.engine.kv_cache_dtype_source:
            found["kv_cache_dtype"] = self.engine.kv_cache_dtype_source
        return found
