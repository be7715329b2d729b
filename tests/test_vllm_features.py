"""vLLM engine features that exclude each other (LMI654) and engine arguments whose values vLLM refuses (LMI656), judged where the image's vLLM makes the check:
each finding quotes EngineArgs' (or ParallelConfig's) message and cites the line at the release the
image runs (data/vllm_checks.json, generated from each release's code)."""

from __future__ import annotations

import pytest

from lmi_config.api import lint_text

VLLM = "https://github.com/vllm-project/vllm/blob/"
LLAMA = (
    "option.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.rolling_batch=vllm\noption.max_model_len=8192\n"
)
NGRAM = 'option.speculative_config={"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}\n'


def findings(text: str, lmi: str, instance: str = "ml.g5.2xlarge", code: str = "LMI654") -> list:
    result = lint_text(text, backend="vllm", lmi_version=lmi, instance=instance)
    return [finding for finding in result.findings if finding.code == code]


def test_async_scheduling_with_speculative_decoding_is_refused_where_vllm_refuses_it() -> None:
    # vllm/engine/arg_utils.py EngineArgs.create_engine_config at v0.10.2 (LMI 0.34)
    [finding] = findings(LLAMA + "option.async_scheduling=true\n" + NGRAM, "0.34.0")
    assert finding.severity == "error" and finding.line == 4 and finding.key == "option.async_scheduling"
    assert "'Currently, speculative decoding is not supported with async scheduling.'" in finding.message
    assert VLLM + "v0.10.2/vllm/engine/arg_utils.py#L" in finding.message
    # either alone starts
    assert not findings(LLAMA + "option.async_scheduling=true\n", "0.34.0")
    assert not findings(LLAMA + NGRAM, "0.34.0")


def test_async_scheduling_on_the_uni_process_executor_is_refused() -> None:
    text = LLAMA + "option.async_scheduling=true\noption.distributed_executor_backend=uni\n"
    [finding] = findings(text, "0.34.0")
    assert "'Async scheduling is not supported with uni-process backend.'" in finding.message
    assert "set it to mp" in finding.message
    assert not findings(
        LLAMA + "option.async_scheduling=true\noption.distributed_executor_backend=mp\n", "0.34.0"
    )


def test_multi_step_scheduling_with_speculative_decoding_is_refused_on_vllm_0_8() -> None:
    text = LLAMA + "option.num_scheduler_steps=8\n" + NGRAM
    [finding] = findings(text, "0.33.0")  # vLLM 0.8.4
    assert finding.line == 4 and finding.key == "option.num_scheduler_steps"
    assert (
        "'Speculative decoding is not supported with multi-step (--num-scheduler-steps > 1)'"
        in finding.message
    )
    assert VLLM + "v0.8.4/vllm/engine/arg_utils.py#L" in finding.message
    assert not findings(LLAMA + "option.num_scheduler_steps=1\n" + NGRAM, "0.33.0")
    # vLLM 0.10.2 has no multi-step scheduling (LMI drops the argument, LMI103 says so): nothing to refuse
    assert not findings(text, "0.34.0")


@pytest.mark.parametrize(
    ("lmi", "line"),
    [
        ("0.34.0", "v0.10.2/vllm/engine/arg_utils.py#L"),  # EngineArgs.create_engine_config's assertion
        ("0.36.0-lmi27.0.0-cu130", "v0.23.0/vllm/config/parallel.py#L"),  # ParallelConfig's own check
    ],
)
def test_a_decode_context_parallel_size_that_does_not_divide_tp_is_refused(lmi: str, line: str) -> None:
    text = LLAMA + "option.tensor_parallel_degree=4\noption.decode_context_parallel_size=3\n"
    [finding] = findings(text, lmi, instance="ml.g5.12xlarge")
    assert "'tp_size=4 must be divisible bydcp_size=3.'" in finding.message and VLLM + line in finding.message
    assert "a divisor of TP 4 (1, 2, 4)" in finding.message
    ok = LLAMA + "option.tensor_parallel_degree=4\noption.decode_context_parallel_size=2\n"
    assert not findings(ok, lmi, instance="ml.g5.12xlarge")


@pytest.mark.parametrize("lmi", ["0.32.0", "0.34.0"])  # vLLM 0.7.3 and 0.10.2
def test_a_negative_cpu_offload_is_refused_before_vllm_refuses_it(lmi: str) -> None:
    key = "option.cpu_offload_gb"
    # vLLM: 'CPU offload space must be non-negative, but got -1' (arg_utils.py to 0.7.3, CacheConfig from 0.8)
    result = lint_text(LLAMA + f"{key}=-1\n", backend="vllm", lmi_version=lmi, instance="ml.g5.2xlarge")
    [finding] = [finding for finding in result.findings if finding.code == "LMI102"]
    assert finding.severity == "error" and finding.line == 4 and "below the minimum 0" in finding.message
    clean = lint_text(LLAMA + f"{key}=4\n", backend="vllm", lmi_version=lmi, instance="ml.g5.2xlarge")
    assert not [finding for finding in clean.findings if finding.code == "LMI102"]


def test_engine_arguments_are_judged_by_the_checks_own_condition() -> None:
    # SchedulerConfig.verify_max_model_len at vLLM 0.11.1 (LMI 0.35): partial prefills need chunked prefill
    text = LLAMA + "option.max_num_partial_prefills=2\noption.enable_chunked_prefill=false\n"
    [finding] = findings(text, "0.35.0", code="LMI656")
    assert "'Chunked prefill must be enabled to set max_num_partial_prefills > 1.'" in finding.message
    assert (
        finding.key == "option.max_num_partial_prefills"
        and VLLM + "v0.11.1/vllm/config/scheduler.py#L" in (finding.message)
    )
    assert not findings(
        LLAMA + "option.max_num_partial_prefills=2\n", "0.35.0", code="LMI656"
    )  # chunked prefill left on
    # a threshold above the sequence length, with the values filled in from the file
    text = LLAMA + "option.max_num_partial_prefills=2\noption.long_prefill_token_threshold=9000\n"
    [finding] = findings(text, "0.35.0", code="LMI656")
    assert (
        "'long_prefill_token_threshold (9000) cannot be greater than the max_model_len (8192).'"
        in finding.message
    )
    # an `or` decided by the value the file writes, the other side left to vLLM's default
    [finding] = findings(
        LLAMA + "option.max_long_partial_prefills=0\n", "0.34.0", code="LMI656"
    )  # vLLM 0.10.2
    assert "max_long_partial_prefills (0) must be greater than or equal to 1" in finding.message
    # look-ahead slots below zero, as far back as LMI passes the argument (0.32, vLLM 0.7.3) ...
    [finding] = findings(LLAMA + "option.num_lookahead_slots=-1\n", "0.32.0", code="LMI656")
    assert "'num_lookahead_slots (-1) must be greater than or equal to 0.'" in finding.message
    # ... and not before: LMI 0.31 drops the argument, vLLM never sees it
    assert not findings(LLAMA + "option.num_lookahead_slots=-1\n", "0.31.0", code="LMI656")
    # a tokenizer mode outside the release's own list (ModelConfig._verify_tokenizer_mode, vLLM 0.8.4)
    [finding] = findings(LLAMA + "option.tokenizer_mode=fast\n", "0.33.0", code="LMI656")
    assert (
        "Unknown tokenizer mode: fast. Must be either 'auto', 'slow', 'mistral' or 'custom'."
        in finding.message
    )
    assert finding.key == "option.tokenizer_mode"
    assert not findings(LLAMA + "option.tokenizer_mode=mistral\n", "0.33.0", code="LMI656")


def test_what_the_container_does_not_pass_to_vllm_decides_nothing() -> None:
    # LMI 0.31 reads speculative_model but not num_scheduler_steps, whose check its vLLM 0.6.3 makes
    text = LLAMA + "option.num_scheduler_steps=8\noption.speculative_model=meta-llama/Llama-3.2-1B-Instruct\n"
    assert not findings(text + "option.num_speculative_tokens=4\n", "0.31.0")


def test_configuration_class_checks_are_decided_by_the_engine_arguments_written() -> None:
    # ParallelConfig._validate_parallel_config at vLLM 0.11.1 (LMI 0.35): EPLB needs expert parallelism
    text = LLAMA + "option.enable_eplb=true\noption.enable_expert_parallel=false\n"
    [finding] = findings(text, "0.35.0", code="LMI656")
    assert "'enable_expert_parallel must be True to use EPLB.'" in finding.message
    assert (
        finding.key == "option.enable_eplb" and VLLM + "v0.11.1/vllm/config/parallel.py#L" in finding.message
    )
    # expert parallelism left to its default: what the default is is not known here, so nothing is refused
    assert not findings(LLAMA + "option.enable_eplb=true\n", "0.35.0", code="LMI656")
    # a string compared with the release's own choices (CacheConfig._verify_prefix_caching, vLLM 0.8.4)
    text = LLAMA + "option.enable_prefix_caching=true\noption.prefix_caching_hash_algo=md5\n"
    [finding] = findings(text, "0.33.0", code="LMI656")
    assert (
        "Unknown prefix caching hash algorithm: md5. Must be either 'builtin' or 'sha256'." in finding.message
    )
    ok = LLAMA + "option.enable_prefix_caching=true\noption.prefix_caching_hash_algo=sha256\n"
    assert not findings(ok, "0.33.0", code="LMI656")
    # EngineArgs.create_engine_config at vLLM 0.23.0 (LMI 0.36 v27): several nodes need the mp backend
    text = LLAMA + "option.nnodes=2\noption.data_parallel_backend=ray\n"
    [finding] = findings(text, "0.36.0", code="LMI656")
    assert "'nnodes > 1 is only supported with data_parallel_backend=mp'" in finding.message
    assert not findings(LLAMA + "option.nnodes=2\noption.data_parallel_backend=mp\n", "0.36.0", code="LMI656")
    # a check whose unknown side could decide it is not made: tracing details without the endpoint's value
    assert not findings(LLAMA + "option.collect_detailed_traces=all\n", "0.35.0", code="LMI656")
