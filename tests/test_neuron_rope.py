"""LMI614: a Llama rope_scaling the image's transformers-neuronx ignores or refuses (its own LlamaConfig)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import ROOT, run_cli

from lmi_config.knowledge.engine_support import tnx_rope_support
from lmi_config.lint import LintOptions, lint_text

sys.path.insert(0, str(ROOT / "scripts"))

import gen_neuron_rope as generator  # noqa: E402

TNX = "option.model_id={model}\noption.entryPoint=djl_python.transformers_neuronx\noption.tensor_parallel_degree=2\n"


def _findings(model_id: str, lmi_version: str, extra: str = "", **options: str) -> dict[str, tuple[str, str]]:
    result = lint_text(
        TNX.format(model=model_id) + extra,
        options=LintOptions(lmi_version=lmi_version, instance="ml.inf2.8xlarge", **options),
    )
    return {finding.code: (finding.severity, finding.message) for finding in result.findings}


def test_the_generator_reads_the_types_the_llama_config_accepts() -> None:
    # release-2.20 llama/config.py: `if self.rope_scaling is not None and rope_scaling_type not in {'default', 'llama3'}`
    source = (
        "class LlamaConfig:\n    def __init__(self, config):\n        self.rope_scaling = getattr(config, 'rope_scaling', None)\n"
        "        kind = self.rope_scaling.get('rope_type')\n"
        "        if self.rope_scaling is not None and kind not in {'default', 'llama3'}:\n            raise ValueError('x')\n"
    )
    assert generator.accepted_types(source) == (["default", "llama3"], 5)
    assert generator.accepted_types("self.rope_theta = getattr(config, 'rope_theta', 10000)\n") is None


def test_transformers_neuronx_before_0_12_serves_llama3_rope_as_plain_rope() -> None:
    # LMI 0.29 installs transformers-neuronx 0.11.351: its LlamaConfig reads rope_theta only
    # (djl-serving#2354: Llama-3.1-70B on LMI 0.29 neuronx compiles and answers garbage)
    severity, message = _findings("meta-llama/Llama-3.1-8B-Instruct", "0.29.0")["LMI614"]
    assert severity == "warning" and "0.11.351" in message and "LMI 0.30.0 or later" in message
    assert "LMI614" not in _findings("meta-llama/Llama-3.1-8B-Instruct", "0.30.0")  # 0.12.313 reads llama3
    assert "LMI614" not in _findings("meta-llama/Meta-Llama-3-8B", "0.29.0")  # no rope_scaling at all
    assert tnx_rope_support("0.12.313", "llama").reads and not tnx_rope_support("0.11.351", "llama").reads


def test_a_rope_type_the_llama_config_does_not_take_is_an_error(tmp_path: Path) -> None:
    # from 0.12 the config raises "Only default and llama3 ropes scaling types are currently supported"
    config = json.loads((ROOT / "tests" / "fixtures" / "models" / "llama-3.1-8b" / "config.json").read_text())
    (tmp_path / "config.json").write_text(
        json.dumps({**config, "rope_scaling": {"type": "linear", "factor": 2.0}})
    )
    severity, message = _findings("some/linear-rope-llama", "0.30.0", model=str(tmp_path))["LMI614"]
    assert severity == "error" and "accepts only default, llama3" in message
    # NxD Inference builds its own graph: not this check
    nxdi = _findings("some/linear-rope-llama", "0.30.0", "option.model_loader=nxdi\n", model=str(tmp_path))
    assert "LMI614" not in nxdi


def test_plan_does_not_propose_a_model_the_image_would_serve_with_the_wrong_positions() -> None:
    result = run_cli(
        "plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--instance", "ml.inf2.8xlarge",
        "--lmi-version", "0.29.0", "--backend", "transformers-neuronx",
    )  # fmt: skip
    assert (
        result.returncode != 0 and "rope_scaling llama3" in result.stderr and "Traceback" not in result.stderr
    )


def test_a_rope_type_that_is_not_a_name_is_not_judged_and_never_a_traceback(tmp_path: Path) -> None:
    config = json.loads((ROOT / "tests" / "fixtures" / "models" / "llama-3.1-8b" / "config.json").read_text())
    for odd in (["llama3"], {"x": 1}, 3, "y" * 10000):
        (tmp_path / "config.json").write_text(json.dumps({**config, "rope_scaling": {"rope_type": odd}}))
        found = _findings("some/odd-rope-llama", "0.30.0", model=str(tmp_path))
        if isinstance(odd, str):
            assert len(found["LMI614"][1]) < 1000  # the type is shown shortened
        else:
            assert "LMI614" not in found
