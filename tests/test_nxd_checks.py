"""The catalogue of NxD Inference's start-up checks (data/nxd_checks.json) and its coverage by the judge.

Every check the NxDI release a djl-neuronx image pins makes at start-up is classified decidable or not;
every decidable one is either covered by a judgement (data/nxd_check_coverage.json ``covered``, a rule that
exists) or listed as uncovered with a reason. A newly pinned release brings new identities, and this test
fails until each is covered or listed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from lmi_config.rules import load_rules
from lmi_config.rules.base import find_rule

sys.path.insert(0, str(ROOT / "scripts"))

import gen_nxd_checks as generator  # noqa: E402
from check_reader_common import coverage_of, read_checks  # noqa: E402

DATA = ROOT / "lmi_config" / "data"
MIRROR = generator.DEFAULT_REPO


@cache
def _load(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _text(entry: dict[str, Any]) -> str:
    return entry["message"] + " || " + " && ".join(entry["conditions"])


def _at(path: str, line: int, version: str = "0.1.1") -> tuple[str, dict[str, Any]]:
    """The identity and entry of the check at ``path:line`` (below neuronx_distributed_inference/)."""
    for identity, entry in _load("nxd_checks.json")["checks"].items():
        if entry["file"] == f"neuronx_distributed_inference/{path}" and entry["lines"].get(version) == line:
            return identity, entry
    raise AssertionError(f"no check at {path}:{line} in NxDI {version}")


def test_every_decidable_check_is_covered_or_listed_with_a_reason() -> None:
    catalogue, coverage = _load("nxd_checks.json"), _load("nxd_check_coverage.json")
    covered = {identity for judgement in coverage["covered"] for identity in judgement["checks"]}
    uncovered = {identity for group in coverage["uncovered"] for identity in group["checks"]}
    decidable = {identity for identity, entry in catalogue["checks"].items() if entry["decidable"]}
    unlisted = sorted(decidable - covered - uncovered)
    assert not unlisted, (
        f"{len(unlisted)} decidable NxD Inference start-up checks have no covering judgement and are not listed "
        f"as uncovered (data/nxd_check_coverage.json): {unlisted[:10]}"
    )
    assert not covered & uncovered, sorted(covered & uncovered)[:10]
    listed = covered | uncovered
    assert listed <= set(catalogue["checks"]), sorted(listed - set(catalogue["checks"]))[:10]
    # an undecidable check is never "covered" nor "uncovered": it is out of the count, with its reason
    assert not listed - decidable, sorted(listed - decidable)[:10]
    load_rules()
    for judgement in coverage["covered"]:  # a covering judgement is a rule, found by its pattern
        assert find_rule(judgement["rule"]) is not None, judgement["rule"]
        assert (ROOT / judgement["test"].split("::")[0]).is_file(), judgement["test"]
        pattern = re.compile(judgement["matches"]["text"])
        for identity in judgement["checks"]:
            entry = catalogue["checks"][identity]
            assert entry["area"] in judgement["matches"]["areas"] and pattern.search(_text(entry)), identity


def test_reviewed_classifications_are_the_catalogues() -> None:
    catalogue = _load("nxd_checks.json")
    for identity, reviewed in _load("nxd_check_review.json")["classifications"].items():
        entry = catalogue["checks"][identity]
        assert entry["why"] == "review" and entry["decidable"] == reviewed["decidable"], identity
        assert entry["reason"] == reviewed["reason"] and entry["counted_as"] == reviewed["counted_as"], (
            identity
        )
        assert reviewed["counted_as"] in catalogue["reasons"], identity
        # a reviewed class agrees with itself: decidable checks count as configuration, the rest never do
        assert (reviewed["counted_as"] == "configuration") == reviewed["decidable"], identity


def test_every_pinned_nxdi_version_is_read_at_its_tag_and_counted() -> None:
    catalogue = _load("nxd_checks.json")
    pinned = {
        image["pins"]["neuronx-distributed-inference"]
        for image in _load("image_pins.json")["images"]
        if image["image"] == "djl-neuronx" and image["pins"].get("neuronx-distributed-inference")
    }
    assert pinned and set(catalogue["versions"]) == pinned
    for version, row in catalogue["versions"].items():
        assert row["tag"] == f"v{version}" and re.fullmatch(r"[0-9a-f]{40}", row["commit"]), version
        assert f"__version__ = {version!r}" in row["matched_by"], version
        assert row["source"].endswith("/src/neuronx_distributed_inference/_version.py#L3"), version
        present = [entry for entry in catalogue["checks"].values() if version in entry["lines"]]
        assert row["checks"] == len(present), version
        assert row["decidable"] == sum(1 for entry in present if entry["decidable"]), version


def test_the_djl_neuronx_images_pin_nxdi_0_1_1_matched_to_the_neuron_sdk_2_21_1_release() -> None:
    """image_pins.json: djl-neuronx 0.32.0-0.34.0 pin neuronx-distributed-inference 0.1.1 (SDK 2.21.1); the tag
    v0.1.1 is the merge of aws-neuron/release_2.21.1 (6eef2a6)."""
    row = _load("nxd_checks.json")["versions"]["0.1.1"]
    assert (row["images"]["first"], row["images"]["last"], row["images"]["neuron_sdk"]) == (
        "0.32.0-dlc",
        "0.34.0-dlc",
        "2.21.1",
    )
    assert row["commit"].startswith("6eef2a68d39d") and "release_2.21.1" in row["matched_by"]


def test_each_entry_cites_its_line_at_the_newest_version_that_has_it() -> None:
    for identity, entry in _load("nxd_checks.json")["checks"].items():
        newest = max(entry["lines"], key=lambda v: tuple(int(p) for p in v.split(".")))
        path = (entry.get("moved") or {}).get(newest, entry["file"])
        assert entry["source"] == (
            f"https://github.com/aws-neuron/neuronx-distributed-inference/blob/v{newest}/src/{path}"
            f"#L{entry['lines'][newest]}"
        ), identity
        assert identity.startswith(entry["file"] + "::" + entry["function"] + "::"), identity


def test_the_configuration_checks_behind_neuronconfig_are_decidable() -> None:
    """models/config.py at v0.1.1: the bucket and quantization checks of NeuronConfig.__init__ read only the
    settings (override_neuron_config), as does Mllama's cross-attention split over TP."""
    expected = {
        ("models/config.py", 117): r"^Context bucket \{self\.context_encoding_buckets\[-1\]\} should be <=",
        ("models/config.py", 122): r"^Token generation bucket .* should be <=",
        ("models/config.py", 130): r"^quantized_checkpoints_path is required$",
        ("models/llama/modeling_llama.py", 790): r"^mlp_kernel_fuse_residual_add should be off when sequence",
        ("modules/flashdecode/utils.py", 20): r"^expect num attention heads is multiples of tp degree",
        ("modules/attention/gqa.py", 435): r"^QKV kernel only supported when fused_qkv is TRUE$",
    }
    for (path, line), pattern in expected.items():
        identity, entry = _at(path, line)
        assert entry["decidable"] and re.search(pattern, entry["message"]), identity
    _, cross_attention = _at("models/mllama/modeling_mllama.py", 415)
    assert cross_attention["conditions"] == ["not self.n_heads % self.model_parallel_size == 0"]
    assert (
        cross_attention["decidable"] and cross_attention["function"] == "NeuronLlamaCrossAttention.__init__"
    )


def test_weights_files_runtime_state_and_requests_are_not_decidable() -> None:
    cases = {
        ("modules/checkpoint.py", 52): "files",  # "Can not find model.safetensors or pytorch_model.bin"
        ("modules/attention/utils.py", 28): "weights",  # "Cannot find {prefix}weight in the state_dict"
        ("models/dbrx/modeling_dbrx.py", 151): "runtime",  # needs an initialised model-parallel group
        ("modules/generation/sampling.py", 65): "request",  # a request's top_p
        ("modules/flashdecode/utils.py", 37): "tensors",  # traced position ids' rank
    }
    for (path, line), reason in cases.items():
        identity, entry = _at(path, line)
        assert not entry["decidable"] and entry["why"] == reason, identity


def test_traced_module_forwards_are_read_and_the_request_path_is_not() -> None:
    """NxDI compiles by tracing its modules' forward (decoder layers, attention): their checks run at start-up.
    The application's forward (NeuronBaseForCausalLM, ModelWrapper) and Hugging Face generation run per
    request: model_base.py:1429 (_infer_attention_mask) and model_wrapper.py:401 are not in the catalogue."""
    functions = {entry["function"] for entry in _load("nxd_checks.json")["checks"].values()}
    assert {"NeuronLlamaDecoderLayer.forward", "GroupQueryAttention_QKV.forward"} <= functions
    assert not {"NeuronBaseForCausalLM._infer_attention_mask", "ModelWrapper.forward"} & functions
    assert not any(function.startswith("HuggingFaceGenerationAdapter.") for function in functions)


APPLICATION = """
class NeuronBaseForCausalLM:
    def __init__(self, config):
        if config.neuron_config.speculation_length > 0 and config.neuron_config.async_mode:
            raise ValueError("no speculation with async")

    def forward(self, input_ids):
        def helper(x):
            assert x is not None, "a nested per-request check"
        raise RuntimeError("a per-request check")


class NeuronLlamaDecoderLayer:
    def forward(self, hidden_states):
        if self.mlp_kernel_enabled and self.sequence_parallel_enabled:
            assert not self.fuse, "traced at compile"


class HuggingFaceGenerationAdapter:
    def __init__(self, model):
        raise ValueError("generation only")
"""


def test_the_reader_counts_traced_forwards_and_leaves_out_the_request_path() -> None:
    area = generator.AREAS[1]  # application
    path = area.patterns[1]  # models/model_base.py
    checks, _ = read_checks({path: APPLICATION}, generator.AREAS, generator.SCOPE)
    assert [(check.function, check.message) for check in checks] == [
        ("NeuronBaseForCausalLM.__init__", "no speculation with async"),
        ("NeuronLlamaDecoderLayer.forward", "traced at compile"),
    ]
    assert checks[1].conditions == ["self.mlp_kernel_enabled and self.sequence_parallel_enabled", "self.fuse"]


def test_the_generator_prints_the_coverage_it_computes_from_the_files() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_nxd_checks.py"), "--coverage"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    catalogue = _load("nxd_checks.json")
    for version, row in coverage_of(catalogue, _load("nxd_check_coverage.json")).items():
        decidable, covered = len(row["decidable"]), len(row["covered"])
        printed = re.search(
            rf"nxdi {re.escape(version)}\s+(\d+) checks, +(\d+) decidable, +(\d+) not; covered +(\d+) / (\d+)",
            run.stdout,
        )
        assert printed, run.stdout
        assert [int(value) for value in printed.groups()] == [
            row["total"],
            decidable,
            row["total"] - decidable,
            covered,
            decidable,
        ]
        assert row["total"] == catalogue["versions"][version]["checks"]


@pytest.mark.skipif(
    not Path(MIRROR).is_dir(), reason="no git mirror of aws-neuron/neuronx-distributed-inference"
)
def test_the_catalogue_is_what_the_generator_reads_from_the_mirror() -> None:
    from djl_options.repository import Git

    git = Git(Path(MIRROR))
    try:
        document, _ = generator.build(git)
    finally:
        git.close()
    assert generator.catalogue_text(document) == (DATA / "nxd_checks.json").read_text(encoding="utf-8")
