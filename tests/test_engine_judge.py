"""What loads the model is judged, for what the command plans: ``plan`` (the LMI image) never ranks what
the lint of its own rendered file refuses for the model type, and ``search`` / ``plan --cache-config``
(an optimum-neuron export) judge the exporter's registry instead of the image's loaders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli

from lmi_config.api import lint_text, plan_specs, render
from lmi_config.errors import PlanningError
from lmi_config.knowledge import load_data, releases, resolve_backend
from lmi_config.plan import PlanRequest, plan_model
from lmi_config.spec import parse_spec_text

# the model type unknown to the image's transformers or handler, to the loader; a model's own code untrusted
MODEL_TYPE_CODES = {"LMI206", "LMI611", "LMI207", "LMI614"}
PLANNING_WARNINGS = {"LMI614"}
INSTANCE = "ml.trn1.32xlarge"  # 32 NeuronCores: every catalog model has a TP whose memory fits
CATALOG = sorted(model["model_id"] for model in load_data("models.json")["models"])


def _releases(backend: str) -> list[str]:
    """The djl-neuronx releases that render the backend (NxD Inference from the release that installs it)."""
    feature = resolve_backend(backend).feature
    found = [release.djl for release in releases() if feature in release.features.get("djl-neuronx", ())]
    if backend == "nxdi":
        nxdi = load_data("engine_registries.json")["neuron_releases"]
        found = [version for version in found if "nxdi" in nxdi[version]["engine_versions"]]
    return found


COMBINATIONS = [
    (backend, version) for backend in ("transformers-neuronx", "nxdi") for version in _releases(backend)
]


def _lint_codes(text: str, model: str, backend: str, version: str) -> dict[str, str]:
    """Error-level codes of ``lint`` on a serving.properties for the plan's target, and the warnings a planner
    does not propose either (LMI614: a rope_scaling the engine ignores)."""
    result = lint_text(text, instance=INSTANCE, model=model, backend=backend, lmi_version=version)
    return {
        finding.code: finding.message
        for finding in result.findings
        if finding.severity == "error" or finding.code in PLANNING_WARNINGS
    }


@pytest.mark.parametrize(("backend", "version"), COMBINATIONS)
def test_plan_never_ranks_what_the_lint_of_its_rendered_file_refuses_for_the_model_type(
    backend: str, version: str
) -> None:
    """Every catalog model: a ranked plan renders a file lint accepts (no error at all; at 0.22.1 the
    handler module is transformers-neuronx.py, render wrote the 0.23 name before); a plan
    refused for the model type names the refusal lint gives the same configuration."""
    ranked = refused = 0
    for model in CATALOG:
        request = PlanRequest(model=model, instances=(INSTANCE,), backend=backend, lmi_version=version, top=1)
        try:
            result = plan_model(request)
        except PlanningError as error:
            if "can be planned" not in str(error):
                continue  # nothing fits for memory or length: no file to lint
            refused += 1
            every = plan_model(PlanRequest(**{**request.__dict__, "include_infeasible": True}))
            items = dict(every.candidates[0].items)
            text = "".join(f"{key}={value}\n" for key, value in items.items())
            codes = _lint_codes(text, model, backend, version)
            assert codes.keys() & MODEL_TYPE_CODES, (model, backend, version, codes)
            assert any(message in str(error) for message in codes.values()), (str(error), codes)
            continue
        ranked += 1
        name, spec_text = plan_specs(result, 1)[0]
        rendered = render(parse_spec_text(spec_text, name))
        codes = _lint_codes(rendered.text, model, backend, version)
        assert not codes, (model, backend, version, codes)  # the file plan wrote runs: no error at all
    assert ranked and refused  # each combination has models the image loads and models it does not


def test_plan_for_the_image_refuses_a_model_type_nxd_inference_does_not_load() -> None:
    """The issue's example: NxD Inference 0.1.1 (the LMI 0.34 image's, pytorch-inf2.Dockerfile ARG
    neuronx_distributed_inference_version=0.1.1) has no mistral in MODEL_TYPES; plan ranked it before."""
    arguments = (
        "--backend",
        "nxdi",
        "--model",
        "mistralai/Mistral-7B-v0.1",
        "--instance",
        "ml.inf2.24xlarge",
    )
    result = run_cli("plan", *arguments)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "NxD Inference 0.1.1 loads only dbrx, llama, mixtral, mllama" in result.stderr
    listed = run_cli("plan", *arguments, "--all", "--format", "json")
    candidates = json.loads(listed.stdout)["candidates"]
    assert candidates and all(
        "model-type-unknown-to-neuron-engine" in candidate["blocked_by"] for candidate in candidates
    )


def test_a_cache_config_plan_judges_the_exporter_not_the_image(tmp_path: Path) -> None:
    """Qwen3 (qwen3): the LMI Neuron image's transformers 4.45.2 cannot read it, optimum-neuron registers it
    for text-generation from 0.2.1 (optimum/neuron/models/inference/auto_models.py)."""
    arguments = ("plan", "--model", "Qwen/Qwen3-8B", "--instance", "ml.inf2.24xlarge")
    refused = run_cli(*arguments)
    assert refused.returncode == 1 and "does not know that model type" in refused.stderr
    cache = tmp_path / "qwen3.json"
    written = run_cli(*arguments, "--cache-config", str(cache))
    assert written.returncode == 0, written.stderr
    assert json.loads(cache.read_text())["Qwen/Qwen3-8B"]


def _search(tmp_path: Path, model: str, installed: str | None = None) -> tuple[int, str, Path]:
    """``search --dry-run`` whose ``--python`` has optimum-neuron ``installed`` (its distribution metadata
    only: the search reads the version, it does not import the package), or none."""
    work, site = tmp_path / "data", tmp_path / "site"
    if installed is not None:
        metadata = site / f"optimum_neuron-{installed}.dist-info"
        metadata.mkdir(parents=True)
        (metadata / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: optimum-neuron\nVersion: {installed}\n"
        )
    command = [sys.executable, "-m", "lmi_config", "search", "--model", model, "--instance", "inf2.24xlarge"]
    command += ["--dry-run", "--work-dir", str(work), "--python", sys.executable]
    environment = {**os.environ, "PYTHONPATH": str(site)}
    result = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=120)
    assert "Traceback" not in result.stderr
    return result.returncode, result.stdout + result.stderr, work


def test_search_runs_a_model_optimum_neuron_exports_although_the_image_loaders_do_not(tmp_path: Path) -> None:
    """qwen2: no loader of the LMI 0.34 Neuron image loads it (the handler's tables, NxD Inference 0.1.1:
    lint refuses it), optimum-neuron exports it from 0.0.27 (decoder_configs.py @register_in_tasks_manager)."""
    model = "Qwen/Qwen2.5-7B-Instruct"
    codes = _lint_codes(
        f"option.model_id={model}\noption.tensor_parallel_degree=8\n", model, "nxdi", "0.34.0"
    )
    assert "LMI611" in codes
    code, output, _ = _search(tmp_path, model)
    assert code == 0 and "candidates in the seed's order" in output


def test_search_refuses_a_model_no_optimum_neuron_release_exports(tmp_path: Path) -> None:
    """gemma2: no optimum-neuron release from 0.0.16 to main (0.4.6.dev4) registers it for text-generation;
    every trial's export would stop the same way, so the search stops before any (exit 2, nothing written)."""
    code, output, work = _search(tmp_path, "google/gemma-2-9b")
    assert code == 2 and "is a gemma2 model" in output
    newest = "gemma3_text, granite, llama, llama4_text, mixtral, phi3, qwen2, qwen3, qwen3_moe, smollm3"
    assert f"the newest, 0.4.6.dev4, exports {newest}" in output
    assert not work.exists()


def test_search_judges_the_registry_of_the_optimum_neuron_its_python_has(tmp_path: Path) -> None:
    """mistral: registered for text-generation up to optimum-neuron 0.1.0 (exporters/neuron/model_configs/
    decoder_configs.py), not from 0.2.0 (optimum/neuron/models/inference/auto_models.py registers granite,
    llama, mixtral, phi3, qwen2 …): with 0.4.5 installed every export would fail, with 0.0.27 it runs."""
    mistral = "mistralai/Mistral-7B-Instruct-v0.2"
    code, output, work = _search(tmp_path / "new", mistral, installed="0.4.5")
    assert code == 2 and "optimum-neuron 0.4.5 registers text-generation only for granite, llama" in output
    assert "optimum-neuron 0.0.17 to 0.1.0 export it" in output and not work.exists()
    for installed in ("0.0.27", "9.9.9"):  # a version lmi-config has no registry for: any release it knows
        code, output, _ = _search(tmp_path / installed, mistral, installed=installed)
        assert code == 0 and "candidates in the seed's order" in output


def test_render_auto_names_the_refusal_of_the_model_not_a_larger_instance(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "model: mistralai/Mistral-7B-v0.1\ninstance: ml.inf2.24xlarge\nbackend: nxdi\nlmi_version: 0.34.0\n"
        "options:\n  tensor_parallel_degree: auto\n  max_rolling_batch_size: auto\n"
    )
    result = run_cli("render", str(spec))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "cannot be planned on the LMI 0.34.0 (LMI v16) image" in result.stderr
    assert "NxD Inference 0.1.1 loads only" in result.stderr and "larger instance" not in result.stderr


def test_plan_refuses_a_release_whose_images_do_not_ship_the_backend() -> None:
    """NxD Inference is installed from the 0.32.0 djl-neuronx image (pytorch-inf2.Dockerfile ARG
    neuronx_distributed_inference_version); at 0.30 its option.model_loader=nxdi is refused by the handler
    (LMI102), so plan ranked configurations render would not write."""
    arguments = ("--model", "meta-llama/Llama-3.1-8B-Instruct", "--top", "2")
    refused = run_cli(
        "plan", *arguments, "--backend", "nxdi", "--instance", "ml.inf2.24xlarge", "--lmi-version", "0.30.0"
    )
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "no image of LMI 0.30.0 (LMI v12) ships backend nxdi" in refused.stderr
    assert "LMI 0.32.0 (LMI v14) to 0.34.0 (LMI v16)" in refused.stderr
    mixed = run_cli("plan", *arguments, "--family", "inf2,g5", "--lmi-version", "0.36.0", "--format", "json")
    document = json.loads(mixed.stdout)
    assert mixed.returncode == 0 and {c["instance"].split(".")[0] for c in document["candidates"]} == {"g5"}
    assert any(
        "ships backend transformers-neuronx" in note and "left out" in note for note in document["notes"]
    )


def _gpu_releases(backend: str, newest: int = 3) -> list[str]:
    """The newest releases whose images ship the GPU backend."""
    feature = resolve_backend(backend).feature
    found = [
        release.djl
        for release in releases()
        if any(feature in shipped for shipped in release.features.values())
    ]
    return found[-newest:]


GPU_COMBINATIONS = [
    (backend, version, instance)
    for backend in ("vllm", "lmi-dist", "trtllm")
    for version in _gpu_releases(backend)
    for instance in ("ml.g4dn.12xlarge", "ml.g5.12xlarge")  # a T4 (7.5: no bf16) and an A10G (8.6)
]


@pytest.mark.parametrize(("backend", "version", "instance"), GPU_COMBINATIONS)
def test_every_file_plan_writes_for_a_gpu_image_lints_without_error(
    backend: str, version: str, instance: str
) -> None:
    """Advice that fails when followed, on GPU: the top plan of every catalog model, rendered, has no
    error in lint — before, a model that ships its own code for a type the image's transformers does
    not know (internlm2 on LMI 0.35) was planned without option.trust_remote_code and lint refused it."""
    ranked = 0
    for model in CATALOG:
        request = PlanRequest(model=model, instances=(instance,), backend=backend, lmi_version=version, top=1)
        try:
            result = plan_model(request)
        except PlanningError:
            continue
        ranked += 1
        name, spec_text = plan_specs(result, 1)[0]
        rendered = render(parse_spec_text(spec_text, name))
        errors = lint_text(
            rendered.text, instance=instance, model=model, backend=backend, lmi_version=version
        )
        assert not [f.message for f in errors.findings if f.severity == "error"], (model, rendered.text)
    assert ranked


def test_a_model_with_its_own_code_is_planned_only_when_the_user_trusts_it() -> None:
    """internlm2: transformers 4.57.1 (LMI 0.35's vLLM image) has no class for it; the repository's
    code runs only with option.trust_remote_code=true, which the planner never sets on its own."""
    arguments = ("plan", "--model", "internlm/internlm2_5-7b-chat", "--instance", "ml.g5.12xlarge")
    refused = run_cli(*arguments, "--lmi-version", "0.35.0")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "ships its own code" in refused.stderr and "--set option.trust_remote_code=true" in refused.stderr
    trusted = run_cli(*arguments, "--lmi-version", "0.35.0", "--set", "option.trust_remote_code=true")
    assert trusted.returncode == 0, trusted.stderr
    assert "g5.12xlarge" in trusted.stdout
