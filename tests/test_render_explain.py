"""render ≡ explain: what render says ``auto`` became is exactly what explain reads back from the
rendered file — for every sample and for generated specs, in properties, env and JSON form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, run_cli
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from lmi_config.api import lint_text
from lmi_config.errors import PlanningError, SpecError
from lmi_config.explain import explain_unit
from lmi_config.knowledge import backends, releases, version_tuple
from lmi_config.knowledge.container import sequence_keys
from lmi_config.knowledge.instances import instances
from lmi_config.lint import LintOptions
from lmi_config.render import Rendered, render_spec
from lmi_config.spec import load_spec, validate_spec

SPECS = sorted((ROOT / "samples" / "specs").glob("*.yaml"))
FORMATS = ("properties", "env", "json")


def explained(rendered: Rendered) -> dict:
    """explain's resolved shape for the rendered text, read as a user would read the file.

    properties and env files carry render's ``# lmi-config:`` pragma; Environment JSON has no
    comments, so the target is given as explain's flags.
    """
    return explained_document(rendered)["resolved"]


def explained_document(rendered: Rendered) -> dict:
    """explain's whole document for the rendered text (see :func:`explained`)."""
    if rendered.format == "json":
        target = rendered.target
        options = LintOptions(
            backend=target["backend"],
            lmi_version=target["lmi_version"],
            instance=target["instance"],
            model=target["model"],
        )
    else:
        options = LintOptions()
    result = lint_text(rendered.text, rendered.format, options, name="rendered")
    return explain_unit(result.units[0], result.findings)


def predicted_line(figures: dict) -> str:
    """explain's predicted figures in the words of render's auto comment (each with its interval)."""
    from lmi_config.plan.performance import describe_shown

    return f"predicted {describe_shown(figures)}"


def agree_on_performance(rendered: Rendered) -> None:
    """The figures render's auto comment predicts are the ones explain predicts for the file (both
    under plan's default workload)."""
    note = next((note for note in rendered.notes if note.startswith("auto:")), None)
    if (
        note is None
        or "for 1024 input + 256 output tokens" not in note
        or "in flight at the instance" in note
    ):
        # no auto, or a workload the spec set, or latency's one request at a time (explain predicts for
        # plan's default workload)
        return
    performance = explained_document(rendered)["performance"]
    assert performance is not None, rendered.text
    if "no performance prediction" in note:
        assert performance["predicted"] is None and performance["not_predicted"] in note, (note, performance)
        return
    assert performance["predicted"] is not None, rendered.text
    assert predicted_line(performance["predicted"]) in note, (note, performance)


def agree(rendered: Rendered) -> None:
    """auto's values, and the whole shape render judged, are what explain reads back."""
    resolved = explained(rendered)
    for dimension, value in rendered.auto.items():
        assert resolved[dimension] == value, (dimension, rendered.auto, resolved, rendered.text)
    shape = rendered.assessment.shape
    for dimension in ("tensor_parallel_degree", "batch_size", "sequence_length", "copies"):
        judged = getattr(shape, dimension)
        assert resolved[dimension] == (judged.value if judged else None), (dimension, resolved, rendered.text)


@pytest.mark.parametrize("output_format", FORMATS)
@pytest.mark.parametrize("path", SPECS, ids=[path.stem for path in SPECS])
def test_every_sample_reads_back_as_render_resolved_it(path: Path, output_format: str) -> None:
    rendered = render_spec(load_spec(path), name=f"samples/specs/{path.name}", output_format=output_format)
    agree(rendered)
    agree_on_performance(rendered)


def test_every_sample_with_auto_predicts_what_explain_predicts() -> None:
    checked = 0
    for path in SPECS:
        rendered = render_spec(load_spec(path), name=f"samples/specs/{path.name}")
        if any(note.startswith("auto:") and "predicted TTFT" in note for note in rendered.notes):
            agree_on_performance(rendered)
            checked += 1
    assert checked >= 5


def test_the_issue_cases_explain_the_batch_render_chose_through_the_cli(tmp_path: Path) -> None:
    # the async vLLM base writes rolling_batch=disable; explain used to read that as batch 1
    for name in ("qwen2.5-7b-vllm-g5-12xlarge", "qwen2.5-7b-vllm-latency"):
        output = tmp_path / f"{name}.serving.properties"
        result = run_cli(
            "render",
            str(ROOT / "samples" / "specs" / f"{name}.yaml"),
            "--format",
            "properties",
            "-o",
            str(output),
        )
        assert result.returncode == 0, result.stderr
        said = next(line for line in result.stderr.splitlines() if line.startswith("note: auto:"))
        batch = int(said.split("option.max_rolling_batch_size=")[1].split(" ")[0].rstrip(","))
        document = json.loads(run_cli("explain", str(output), "--format", "json").stdout)
        assert document["resolved"]["batch_size"] == batch
        assert document["resolved"]["sources"]["batch_size"] == "option.max_rolling_batch_size"


MODELS = (
    "meta-llama/Llama-3.1-8B-Instruct",
    "Qwen/Qwen2.5-7B-Instruct",
    "mistralai/Mistral-7B-Instruct-v0.2",
    "meta-llama/Llama-3.2-1B",
    "Qwen/Qwen2.5-14B-Instruct",
)
RENDERED_BACKENDS = ("vllm", "lmi-dist", "tensorrt-llm", "transformers-neuronx", "nxdi", "huggingface")


def _releases_of(backend_id: str) -> list[str]:
    backend = backends()[backend_id]
    since = version_tuple(backend.since) if backend.since else ()
    found = []
    for release in releases():
        if backend.feature and not any(backend.feature in values for values in release.features.values()):
            continue
        if since and release.djl_tuple < since:
            continue
        found.append(f"lmi{release.lmi}" if release.lmi else release.djl)
    return found


def _instances_for(accelerator: str) -> list[str]:
    return sorted(
        name
        for name, instance in instances().items()
        if instance.accelerator == accelerator and instance.num_cores and instance.platform != "inf1"
    )


@st.composite
def specs(draw: st.DrawFn) -> tuple[dict, str]:
    backend = draw(st.sampled_from(RENDERED_BACKENDS))
    accelerator = "neuron" if backends()[backend].accelerator == "neuron" else "gpu"
    release = draw(st.sampled_from(_releases_of(backend)))
    instance = draw(st.sampled_from(_instances_for(accelerator)))
    model = draw(st.sampled_from(MODELS))
    dimensions = ["tensor_parallel_degree", "batch_size"]
    if sequence_keys(backend).render_key:
        dimensions.append("sequence_length")
    chosen = draw(st.sets(st.sampled_from(dimensions), min_size=1))
    options: dict[str, object] = {}
    dynamic = backend == "huggingface" or (backend == "transformers-neuronx" and draw(st.booleans()))
    if dynamic:
        options["rolling_batch"] = "disable"
    batch_key = "batch_size" if dynamic else draw(st.sampled_from(["max_rolling_batch_size", "max_num_seqs"]))
    for dimension in dimensions:
        auto = dimension in chosen
        if dimension == "tensor_parallel_degree":
            options["tensor_parallel_degree"] = "auto" if auto else draw(st.sampled_from([1, 2, 4, 8]))
        elif dimension == "batch_size":
            options[batch_key] = "auto" if auto else draw(st.sampled_from([1, 4, 16]))
        elif auto:
            options[sequence_keys(backend).render_key.removeprefix("option.")] = "auto"  # type: ignore[union-attr]
        else:
            options[sequence_keys(backend).render_key.removeprefix("option.")] = draw(  # type: ignore[union-attr]
                st.sampled_from([1024, 2048, 4096])
            )
    spec = {
        "model": model,
        "instance": instance,
        "backend": backend,
        "lmi_version": release,
        "options": options,
        "objective": draw(st.sampled_from(["throughput", "latency"])),
    }
    return spec, draw(st.sampled_from(FORMATS))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs())
def test_generated_specs_read_back_as_render_resolved_them(case: tuple[dict, str]) -> None:
    spec, output_format = case
    try:
        rendered = render_spec(validate_spec(spec, "generated"), output_format=output_format)
    except PlanningError:
        assume(False)  # nothing fits this instance: nothing is written, nothing to compare
        return
    except SpecError as error:
        # the one refusal a generated spec may meet: an auto this backend cannot resolve
        assert "auto" in str(error), error
        assume(False)
        return
    asked = {_dimension(option) for option, value in spec["options"].items() if value == "auto"}
    assert set(rendered.auto) == asked
    agree(rendered)
    agree_on_performance(rendered)


def _dimension(option: str) -> str | None:
    from lmi_config.knowledge.container import dimension_of

    key = option if option.startswith("option.") or option == "batch_size" else f"option.{option}"
    return dimension_of(key)
