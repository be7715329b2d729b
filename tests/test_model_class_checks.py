"""vLLM's model classes' own checks of config.json (LMI657), made where config.json is at hand: each
finding quotes the class's message and cites its line at the release the image runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lmi_config.api import lint_text
from lmi_config.knowledge.models import generated_catalog_rows, hand_catalog_rows
from lmi_config.lint import LintOptions
from lmi_config.shape.conditions import holds

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "models"
TEXT = "option.model_id={model}\noption.rolling_batch=vllm\noption.max_model_len=4096\noption.trust_remote_code=true\n"


def _findings(model: str, lmi: str, directory: Path | None = None) -> list:
    options = LintOptions(
        backend="vllm", lmi_version=lmi, instance="ml.g5.2xlarge", model=str(directory) if directory else None
    )
    result = lint_text(TEXT.format(model=model), options=options)
    return [finding for finding in result.findings if finding.code == "LMI657"]


def test_an_activation_the_release_does_not_implement_is_refused_by_its_model_class() -> None:
    # vllm-project/vllm#7678: ProSparse-MiniCPM's fatrelu; MiniCPM's MLP takes it from vLLM 0.6.3 (LMI 0.31)
    fixture = FIXTURES / "minicpm-fatrelu"
    [finding] = _findings("openbmb/ProSparse-MiniCPM-1B-sft", "0.30.0", fixture)
    assert finding.severity == "error" and "hidden_act='fatrelu'" in finding.message
    assert "'Unsupported activation: fatrelu. Only silu is supported for now.'" in finding.message
    assert "https://github.com/vllm-project/vllm/blob/v0.6.2/vllm/model_executor/models/minicpm.py#L" in (
        finding.message
    )
    assert not _findings("openbmb/ProSparse-MiniCPM-1B-sft", "0.31.0", fixture)


def test_a_llama_checkpoint_with_another_activation_is_refused_and_one_without_the_field_is_not(
    tmp_path: Path,
) -> None:
    config = json.loads((FIXTURES / "llama-3.1-8b" / "config.json").read_text(encoding="utf-8"))
    gelu = tmp_path / "gelu"
    gelu.mkdir()
    (gelu / "config.json").write_text(json.dumps({**config, "hidden_act": "gelu"}), encoding="utf-8")
    [finding] = _findings("someone/llama-gelu", "0.36.0", gelu)
    assert "LlamaMLP.__init__" in finding.message and "Unsupported activation: gelu." in finding.message
    # config.json without hidden_act: what the model class is passed is not known here, nothing is refused
    unknown = tmp_path / "unknown"
    unknown.mkdir()
    written = {key: value for key, value in config.items() if key != "hidden_act"}
    (unknown / "config.json").write_text(json.dumps(written), encoding="utf-8")
    assert not _findings("someone/llama-unknown", "0.36.0", unknown)


@pytest.mark.parametrize("lmi", ["0.28.0", "0.30.0", "0.33.0", "0.34.0", "0.36.0"])
def test_no_catalog_model_is_refused_by_its_own_model_class(lmi: str) -> None:
    # published configs start: a finding here is a condition read wrongly (or a genuinely new refusal to review)
    ids = [row["model_id"] for row in [*hand_catalog_rows(), *generated_catalog_rows()]]
    refused = [model for model in ids if _findings(model, lmi)]
    assert not refused, refused


def test_a_condition_is_decided_only_where_what_is_known_decides_it() -> None:
    known = {"a": 1, "b": "x"}

    def resolve(node: object) -> object:
        return known.get(getattr(node, "id", ""))

    assert holds("a == 1 or c > 2", resolve)  # the known side decides an or
    assert not holds("a == 1 and c > 2", resolve)  # an unknown side leaves an and undecided
    assert not holds("not c", resolve) and not holds("c is None", resolve)  # unknown is not None
    assert holds("b is not None and b != 'y'", resolve) and holds("b in ('x', 'z')", resolve)
