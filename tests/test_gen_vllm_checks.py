"""scripts/vllm_check_reader.py and gen_vllm_checks.py on small sources: what a start-up check is, what its
entry records, and which identity it keeps when the code around it changes."""

from __future__ import annotations

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))

import gen_vllm_checks as generator  # noqa: E402
from vllm_check_reader import read_checks  # noqa: E402

SCHEDULER = """
class SchedulerConfig:
    def _verify_args(self) -> None:
        if (self.max_num_batched_tokens < self.max_model_len
                and not self.chunked_prefill_enabled):
            raise ValueError(
                f"max_num_batched_tokens ({self.max_num_batched_tokens}) is "
                f"smaller than max_model_len ({self.max_model_len}). ")
        if self.max_num_seqs > 1024:
            msg = f"max_num_seqs {self.max_num_seqs} is too large"
            raise ValueError(f"{msg}; lower it")

    def forward(self, x):
        raise RuntimeError("a per-step check")

    def get_name(self):
        raise NotImplementedError
"""


def checks_of(path: str, text: str):
    return read_checks({path: text})[0]


def test_a_raise_records_its_line_function_conditions_message_and_inputs() -> None:
    tokens, seqs = checks_of("vllm/config.py", SCHEDULER)
    assert (tokens.line, tokens.function, tokens.kind, tokens.exception) == (
        6,  # the raise statement's line
        "SchedulerConfig._verify_args",
        "raise",
        "ValueError",
    )
    assert tokens.conditions == [
        "self.max_num_batched_tokens < self.max_model_len and (not self.chunked_prefill_enabled)"
    ]
    assert tokens.message == (
        "max_num_batched_tokens ({self.max_num_batched_tokens}) is smaller than max_model_len ({self.max_model_len}). "
    )
    assert tokens.inputs == ["chunked_prefill_enabled", "max_model_len", "max_num_batched_tokens"]
    assert seqs.message == "max_num_seqs {self.max_num_seqs} is too large; lower it"  # f"{msg}" resolved


def test_per_step_functions_and_abstract_methods_are_not_start_up_checks() -> None:
    checks, abstract = read_checks({"vllm/config.py": SCHEDULER})
    assert [check.function for check in checks] == ["SchedulerConfig._verify_args"] * 2 and abstract == 1


def test_a_guard_added_above_a_check_keeps_its_identity_and_joins_its_conditions() -> None:
    guarded = SCHEDULER.replace(
        "    def _verify_args(self) -> None:\n",
        "    def _verify_args(self) -> None:\n        if self.runner_type == 'pooling':\n            return\n",
    )
    before, after = (
        checks_of("vllm/config.py", SCHEDULER)[0],
        checks_of("vllm/config/scheduler.py", guarded)[0],
    )
    assert before.identity == after.identity  # vllm/config.py and vllm/config/*.py are one file family
    assert after.conditions[0] == "not self.runner_type == 'pooling'" and after.line == before.line + 2


def test_only_constructors_of_model_classes_and_asserts_state_their_failing_condition() -> None:
    model = """
class LlamaAttention:
    def __init__(self, config, tp_size):
        self.total_num_heads = config.num_attention_heads
        assert self.total_num_heads % tp_size == 0

    def load_weights(self, weights):
        assert False, "not read: the models area is constructors only"
"""
    [check] = checks_of("vllm/model_executor/models/llama.py", model)
    assert check.kind == "assert" and check.conditions == ["not self.total_num_heads % tp_size == 0"]
    assert check.area == "models" and check.inputs == ["total_num_heads", "tp_size"]


def test_the_first_pass_classifies_weights_packages_invariants_and_configuration() -> None:
    source = """
def default_weight_loader(param, loaded_weight):
    if param.size() != loaded_weight.size():
        raise ValueError("Attempted to load weight")

class BitsAndBytesConfig:
    def __init__(self):
        try:
            import bitsandbytes
        except ImportError as err:
            raise ImportError("Please install bitsandbytes>=0.45.3") from err
        assert self.quant_config is not None
        if self.group_size not in (32, 64, 128):
            raise ValueError("unsupported group size")
"""
    checks = read_checks({"vllm/model_executor/layers/quantization/bitsandbytes.py": source})[0]
    assert [generator.classify(check).name for check in checks] == [
        "weights",
        "packages",
        "invariant",
        "configuration",
    ]
    assert [generator.classify(check).decidable for check in checks] == [False, False, False, True]
