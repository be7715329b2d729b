"""vLLM's quantization configuration classes' own checks of a checkpoint's quantization_config (LMI658),
made on quantization_config as written through what each release's from_config reads (its keys and
defaults, data/vllm_quant_configs.json): each finding quotes the class's message and cites its line."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

from lmi_config.api import lint_text
from lmi_config.knowledge.models import generated_catalog_rows, hand_catalog_rows
from lmi_config.lint import LintOptions
from lmi_config.shape.conditions import KNOWN_NONE, holds
from lmi_config.shape.quant_config_checks import RULE, bindable

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "lmi_config" / "data"
FIXTURES = ROOT / "tests" / "fixtures" / "models"
VLLM = "https://github.com/vllm-project/vllm/blob/"
TEXT = "option.model_id={model}\noption.rolling_batch=vllm\noption.max_model_len=4096\n"


def _findings(directory: Path | None, lmi: str, extra: str = "", model: str = "my-org/checkpoint") -> list:
    options = LintOptions(
        backend="vllm", lmi_version=lmi, instance="ml.g5.2xlarge", model=str(directory) if directory else None
    )
    result = lint_text(TEXT.format(model=model) + extra, options=options)
    return [finding for finding in result.findings if finding.code == "LMI658"]


def _checkpoint(tmp_path: Path, base: str, quantization: dict, name: str = "checkpoint") -> Path:
    config = json.loads((FIXTURES / base / "config.json").read_text(encoding="utf-8"))
    config["quantization_config"] = quantization
    directory = tmp_path / name
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return directory


def test_a_bitsandbytes_checkpoint_stored_in_bfloat16_is_refused_from_the_release_that_checks_it() -> None:
    # vllm-project/vllm#10590: an FSDP-QLoRA checkpoint (bnb_4bit_quant_storage bfloat16); the check is
    # vllm-project/vllm#10642, first in the images at vLLM 0.7.3 (LMI 0.32)
    fixture = FIXTURES / "llama-3.1-8b-instruct-bnb-4bit-bf16-storage"
    [finding] = _findings(fixture, "0.33.0")
    assert finding.severity == "error" and finding.key == "option.model_id"
    assert "bnb_4bit_quant_storage='bfloat16'" in finding.message
    assert "'Unsupported bnb_4bit_quant_storage: bfloat16'" in finding.message
    assert VLLM + "v0.8.4/vllm/model_executor/layers/quantization/bitsandbytes.py#L" in finding.message
    assert not _findings(fixture, "0.31.0")  # vLLM 0.6.3 has no such check
    assert not _findings(FIXTURES / "llama-3.1-8b-instruct-bnb-4bit", "0.33.0")  # uint8, as vLLM takes it


def test_fp8_weight_blocks_with_a_static_activation_scheme_are_refused(tmp_path: Path) -> None:
    blocks = {"quant_method": "fp8", "activation_scheme": "static", "weight_block_size": [128, 128]}
    static = _checkpoint(tmp_path, "qwen2.5-7b", blocks, "static")
    [finding] = _findings(static, "0.34.0")
    assert finding.severity == "error"
    assert "The block-wise quantization only supports dynamic activation scheme for now, but got static" in (
        finding.message
    )
    assert "Fp8Config.__init__" in finding.message and VLLM + "v0.10.2/" in finding.message
    dynamic = _checkpoint(tmp_path, "qwen2.5-7b", {**blocks, "activation_scheme": "dynamic"}, "dynamic")
    assert not _findings(dynamic, "0.34.0")
    # a block of three dimensions: the check reads len() of the list as written
    cube = _checkpoint(
        tmp_path,
        "qwen2.5-7b",
        {**blocks, "activation_scheme": "dynamic", "weight_block_size": [1, 2, 3]},
        "cube",
    )
    [finding] = _findings(cube, "0.34.0")
    assert "must have 2 dimensions, but got 3" in finding.message


def test_an_awq_checkpoint_of_another_width_is_a_warning_where_marlin_may_take_it_and_an_error_when_named(
    tmp_path: Path,
) -> None:
    awq = _checkpoint(
        tmp_path, "qwen2.5-7b", {"quant_method": "awq", "bits": 8, "group_size": 128, "zero_point": True}
    )
    [finding] = _findings(awq, "0.33.0")
    # AWQMarlinConfig.override_quantization_method names awq: vLLM may build that class instead
    assert finding.severity == "warning" and "awq_marlin" in finding.message
    assert (
        "'Currently, only 4-bit weight quantization is supported for AWQ, but got 8 bits.'" in finding.message
    )
    [named] = _findings(awq, "0.33.0", "option.quantize=awq\n")
    assert (
        named.severity == "error"
        and named.key == "option.quantize"
        and "option.quantize=awq" in named.message
    )


GPTQ = FIXTURES / "qwen2.5-14b-instruct-gptq-int4"


def _at(lmi: str, tp: int, extra: str, directory: Path = GPTQ, instance: str = "ml.g5.48xlarge") -> list:
    options = LintOptions(backend="vllm", lmi_version=lmi, instance=instance, model=str(directory))
    text = (
        TEXT.format(model="Qwen/Qwen2.5-14B-Instruct-GPTQ") + f"option.tensor_parallel_degree={tp}\n" + extra
    )
    return [finding for finding in lint_text(text, options=options).findings if finding.code == "LMI658"]


def test_marlin_thread_tiles_a_tensor_parallel_slice_does_not_fill_are_refused_on_the_layer_it_cuts() -> None:
    # Qwen2.5-14B's intermediate_size 13824 / TP 8 = 1728 inputs per rank on the down projection: not a
    # multiple of GPTQ-Marlin's min_thread_k 128 (vLLM 0.4.2, LMI 0.28)
    [finding] = _at("0.28.0", 8, "option.quantize=gptq_marlin\n")
    assert finding.severity == "error" and finding.key == "option.tensor_parallel_degree"
    assert "at TP 8, on the MLP's down projection" in finding.message
    assert (
        "'Weight input_size_per_partition = 1728 is not divisible by min_thread_k = 128.'" in finding.message
    )
    assert VLLM + "v0.4.2/vllm/model_executor/layers/quantization/gptq_marlin.py#L" in finding.message
    # the fix proposes the nearest degree the judge lets run (it re-lints each candidate)
    assert finding.fix is not None and finding.fix.description == "set option.tensor_parallel_degree=4"
    assert not _at("0.28.0", 4, "option.quantize=gptq_marlin\n", instance="ml.g5.12xlarge")  # 3456 = 27 x 128


def test_a_kernels_dtype_is_judged_where_the_file_writes_option_dtype() -> None:
    # vLLM 0.4.2's GPTQ-Marlin takes float16 activations only
    [finding] = _at(
        "0.28.0", 4, "option.quantize=gptq_marlin\noption.dtype=bf16\n", instance="ml.g5.12xlarge"
    )
    assert (
        finding.key == "option.dtype"
        and "'The params dtype must be float16, but got bfloat16'" in finding.message
    )
    assert not _at("0.28.0", 4, "option.quantize=gptq_marlin\noption.dtype=fp16\n", instance="ml.g5.12xlarge")


@pytest.mark.parametrize("lmi", ["0.28.0", "0.29.0", "0.31.0", "0.33.0", "0.34.0"])
@pytest.mark.parametrize("base", ["llama-3.1-8b", "qwen2.5-7b", "mistral-7b-v0.1"])
def test_published_4_bit_layouts_of_common_models_pass_at_the_tp_degrees_they_run_on(
    tmp_path: Path, lmi: str, base: str
) -> None:
    # AWQ and GPTQ uploads of these models (4-bit, groups of 128) serve at TP 1, 2 and 4
    layouts = {
        "awq": {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"},
        "gptq": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True},
    }
    for method, layout in layouts.items():
        directory = _checkpoint(tmp_path, base, layout, method)
        for tp in (1, 2, 4):
            for asked in ("", f"option.quantize={method}\n"):
                text = TEXT.format(model=f"someone/{base}-{method}") + f"option.tensor_parallel_degree={tp}\n"
                options = LintOptions(
                    backend="vllm", lmi_version=lmi, instance="ml.g5.12xlarge", model=str(directory)
                )
                found = [f for f in lint_text(text + asked, options=options).findings if f.code == "LMI658"]
                assert not found, (method, tp, asked, found[0].message)


def test_a_key_the_class_reads_without_a_default_is_not_guessed(tmp_path: Path) -> None:
    # AWQConfig.from_config reads w_bit / bits with no default: absent, nothing is refused
    unknown = _checkpoint(
        tmp_path, "qwen2.5-7b", {"quant_method": "awq", "group_size": 128, "zero_point": True}
    )
    assert not _findings(unknown, "0.33.0", "option.quantize=awq\n")


def test_a_quantization_read_from_a_copys_name_is_not_judged() -> None:
    assert not _findings(None, "0.33.0", model="TheBloke/Llama-2-7B-Chat-AWQ")


@pytest.mark.parametrize("lmi", ["0.28.0", "0.31.0", "0.33.0", "0.34.0", "0.36.0"])
def test_no_catalog_model_is_refused_by_its_quantization_class(lmi: str) -> None:
    ids = [row["model_id"] for row in [*hand_catalog_rows(), *generated_catalog_rows()]]
    refused = [model for model in ids if _findings(None, lmi, model=model)]
    assert not refused, refused


def test_the_covered_checks_are_exactly_those_the_facts_bind() -> None:
    catalogue = json.loads((DATA / "vllm_checks.json").read_text(encoding="utf-8"))
    facts = json.loads((DATA / "vllm_quant_configs.json").read_text(encoding="utf-8"))["versions"]
    coverage = json.loads((DATA / "vllm_check_coverage.json").read_text(encoding="utf-8"))
    covered = {
        (entry["rule"] == RULE, identity) for entry in coverage["covered"] for identity in entry["checks"]
    }
    listed = {identity for ours, identity in covered if ours}
    elsewhere = {identity for ours, identity in covered if not ours}  # another judgement makes those
    bound = set()
    for version, row in catalogue["versions"].items():
        release, found = row["read_from"], facts[version]
        for identity, entry in catalogue["checks"].items():
            path = (entry.get("moved") or {}).get(release, entry["file"])
            if release in entry["lines"] and entry["decidable"] and bindable(entry, found, path):
                bound.add(identity)
    assert listed == bound - elsewhere
    assert len(listed) >= 75


def test_the_reader_takes_keys_defaults_fields_and_takers_from_the_code() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    from vllm_quant_reader import read_quant_configs

    source = """
SUPPORTED = [4, 8]
class DemoConfig(QuantizationConfig):
    KINDS = ("a", "b")
    def __init__(self, weight_bits: int, group_size: int, kind: str = "a") -> None:
        self.weight_bits = weight_bits
        self.group_size = group_size
        if group_size == -1:
            group_size = 128
        if self.weight_bits not in SUPPORTED:
            raise ValueError("no")
    @classmethod
    def get_name(cls):
        return "demo"
    @classmethod
    def from_config(cls, config):
        weight_bits = cls.get_from_keys(config, ["w_bit", "bits"])
        group_size = cls.get_from_keys_or(config, ["group_size"], default=-1)
        return cls(weight_bits, group_size)
class OtherConfig(QuantizationConfig):
    @classmethod
    def override_quantization_method(cls, hf_quant_cfg, user_quant):
        return "other" if hf_quant_cfg.get("quant_method") == "demo" else None
    @classmethod
    def get_name(cls):
        return "other"
"""
    read = read_quant_configs({"vllm/model_executor/layers/quantization/demo.py": source})
    demo = read["classes"]["DemoConfig"]
    assert demo["method"] == "demo"
    assert demo["arguments"]["weight_bits"] == {"keys": ["w_bit", "bits"]}
    assert demo["arguments"]["group_size"] == {"keys": ["group_size"], "default": -1}
    assert demo["arguments"]["kind"] == {"value": "a"}  # __init__'s default: from_config does not pass it
    # the parameter group_size is reassigned in __init__: which value a check (or self.group_size) sees depends
    # on the path taken, so neither is read
    assert demo["fields"] == {"weight_bits": "weight_bits"}
    assert demo["class_constants"] == {"KINDS": ["a", "b"]} and read["constants"] == {"SUPPORTED": [4, 8]}
    assert read["takes_over"]["OtherConfig"] == {
        "method": "other",
        "names": ["demo", "other", "quant_method"],
    }
    check = {"function": "DemoConfig.__init__", "file": "vllm/model_executor/layers/quantization/demo.py"}
    assert bindable({**check, "conditions": ["self.weight_bits not in SUPPORTED"]}, read)
    assert not bindable({**check, "conditions": ["group_size % 2 != 0"]}, read)  # reassigned: not bound
    assert not bindable({**check, "conditions": []}, read)


def test_the_reader_takes_the_kv_cache_method_a_class_gives_attention_layers_through_its_bases() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    from vllm_quant_reader import read_quant_configs

    source = """
class BaseFp8(QuantizationConfig):
    def get_quant_method(self, layer, prefix):
        if isinstance(layer, LinearBase):
            return Fp8LinearMethod(self)
        elif isinstance(layer, (Attention, MLAAttention)):
            return Fp8KVCacheMethod(self)
        return None
class ChildConfig(BaseFp8):
    def __init__(self, bits: int) -> None:
        self.bits = bits
    @classmethod
    def from_config(cls, config):
        return cls(cls.get_from_keys(config, ["bits"]))
class WeightOnlyConfig(QuantizationConfig):
    def __init__(self, bits: int) -> None:
        self.bits = bits
    @classmethod
    def from_config(cls, config):
        return cls(cls.get_from_keys(config, ["bits"]))
    def get_quant_method(self, layer, prefix):
        if isinstance(layer, LinearBase):
            return WeightOnlyMethod(self)
        return None
"""
    read = read_quant_configs({"vllm/model_executor/layers/quantization/demo.py": source})
    assert read["classes"]["ChildConfig"]["attention_method"] == "Fp8KVCacheMethod"  # inherited
    assert read["classes"]["WeightOnlyConfig"]["attention_method"] is None


def test_the_evaluator_reads_known_none_lists_lengths_and_integer_arithmetic() -> None:
    known: dict[str, object] = {
        "blocks": [128, 128],
        "none": KNOWN_NONE,
        "size": 192,
        "kinds": ["a"],
        "section": {"x": 1},
    }

    def resolve(node: ast.expr) -> object:
        return known.get(getattr(node, "id", ""))

    assert (
        holds("none is None", resolve)
        and not holds("none is not None", resolve)
        and holds("not none", resolve)
    )
    assert (
        holds("len(blocks) == 2", resolve) and holds("size % blocks[0] != 0", resolve) is False
    )  # an index: unknown
    assert holds("size % 128 != 0", resolve) and not holds("size % 64 != 0", resolve)
    assert holds("'a' in kinds", resolve) and holds("'b' not in kinds", resolve)
    assert holds("'x' in section", resolve) and holds("len(section) == 1", resolve)
    assert not holds("unknown in kinds", resolve) and not holds("size % 0 == 0", resolve)
