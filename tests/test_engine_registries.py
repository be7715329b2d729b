"""What each djl-neuronx engine path loads, each fact pinned to the upstream line it is generated from,
LMI611 through lint, and the image's transformers judged for plan on GPU."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import ROOT, run_cli

from lmi_config.knowledge import load_data
from lmi_config.knowledge.engine_support import engine_version, first_release_loading, neuron_registry

sys.path.insert(0, str(ROOT / "scripts"))

import gen_engine_registries as generator  # noqa: E402  (the generator under test)

GPT_OSS = str(ROOT / "tests" / "fixtures" / "models" / "gpt-oss-20b")
MISTRAL_ON_VLLM_NEURON = (
    "option.model_id=mistralai/Mistral-7B-v0.1\noption.rolling_batch=vllm\noption.model_loader=vllm\n"
    "option.tensor_parallel_degree=4\noption.n_positions=4096\noption.max_rolling_batch_size=4\n"
)


def lint(tmp_path: Path, text: str, *arguments: str) -> tuple[int, list[dict]]:
    """Exit code and findings of ``lmi-config lint --format json`` on one serving.properties."""
    path = tmp_path / "serving.properties"
    path.write_text(text, encoding="utf-8")
    result = run_cli("lint", str(path), "--format", "json", *arguments)
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, json.loads(result.stdout)["findings"]


def test_the_vllm_loader_on_neuron_is_djl_servings_llama_only_table() -> None:
    """djl-serving 0.30.0-dlc engines/python/setup/djl_python/transformers_neuronx.py:
    VLLM_CONTINUOUS_BATCHING_MODELS = {"llama"} (vllm_not_supported raises for any other model type)."""
    registry = neuron_registry("0.30.0", "vllm")
    assert registry is not None and registry.model_types == {"llama"}
    assert "/engines/python/setup/djl_python/transformers_neuronx.py#L" in registry.source
    assert neuron_registry("0.27.0", "vllm") is None  # no vLLM loader before LMI 0.28


def test_nxd_inference_loads_the_model_types_of_its_release() -> None:
    """aws-neuron/neuronx-distributed-inference v0.1.1 src/neuronx_distributed_inference/utils/constants.py
    MODEL_TYPES (llama, mllama, mixtral, dbrx); the djl-neuronx 0.32.0-dlc pytorch-inf2.Dockerfile installs
    neuronx_distributed_inference_version=0.1.1."""
    assert engine_version("0.32.0", "nxdi") is not None
    assert engine_version("0.32.0", "nxdi")[0] == "0.1.1"  # type: ignore[index]
    registry = neuron_registry("0.32.0", "nxdi")
    assert registry is not None and registry.model_types == {"llama", "mllama", "mixtral", "dbrx"}
    assert (
        "neuronx-distributed-inference/blob/v0.1.1/src/neuronx_distributed_inference/utils/constants.py#L"
        in (registry.source)
    )
    assert neuron_registry("0.30.0", "nxdi") is None  # the image installs no NxD Inference before 0.32


def test_the_oldest_neuron_images_get_their_engine_versions_and_tables_from_the_dockerfile() -> None:
    """djl-serving 0.22.1-dlc transformers-neuronx.py SUPPORTED_MODEL_TYPES = {"opt", "gpt2", "gptj"} and
    0.26.0-dlc serving/docker/pytorch-inf2.Dockerfile ARG transformers_neuronx_version=0.9.474 — versions
    images.json does not list for those images."""
    assert neuron_registry("0.22.1", "tnx").model_types == {"opt", "gpt2", "gptj"}  # type: ignore[union-attr]
    assert engine_version("0.26.0", "transformers-neuronx")[0] == "0.9.474"  # type: ignore[index]
    assert engine_version("0.26.0", "optimum-neuron")[0] == "0.0.16"  # type: ignore[index]
    assert first_release_loading("tnx", "mistral") == "0.26.0"
    assert first_release_loading("vllm", "mistral") is None


def test_every_generated_fact_points_at_a_pinned_upstream_line() -> None:
    data = load_data("engine_registries.json")
    sources = [
        gate["source"]
        for release in data["neuron_releases"].values()
        for gate in [*release["loaders"].values(), *release["engine_versions"].values()]
    ] + [row["source"] for table in ("nxdi", "optimum_neuron") for row in data[table].values()]
    assert sources and all("https://github.com/" in source and "#L" in source for source in sources)
    # a branch moves; a commit does not: djl-serving facts cite the commit the branch pointed at
    djl = [source for source in sources if "deepjavalibrary/djl-serving/blob/" in source]
    assert all(len(source.split("/blob/")[1].split("/")[0]) == 40 for source in djl)


def test_the_generator_reads_literal_tables_and_the_vllm_wheel_version() -> None:
    text = 'A = {"opt": 1, "llama": 2}\nclass C:\n    B = {"x", "y"}\nD = compute()\n'
    assert generator.assignments(text) == {"A": (["llama", "opt"], 1), "B": (["x", "y"], 3)}
    line = (
        'ARG vllm_wheel="https://publish.djl.ai/neuron_vllm/vllm_neuronx-0.6.2%2Bneuron216-py3-none-any.whl"'
    )
    match = generator._VLLM_WHEEL.search(line)
    assert match is not None and match.group(1).replace("%2B", "+") == "0.6.2+neuron216"


def test_a_mistral_on_the_vllm_neuron_loader_is_an_error_naming_the_loader(tmp_path: Path) -> None:
    arguments = (
        "--backend",
        "transformers-neuronx",
        "--lmi-version",
        "0.30.0",
        "--instance",
        "ml.inf2.24xlarge",
    )
    code, findings = lint(tmp_path, MISTRAL_ON_VLLM_NEURON, *arguments)
    refused = [finding for finding in findings if finding["code"] == "LMI611"]
    assert code == 1 and len(refused) == 1 and refused[0]["severity"] == "error"
    assert "0.30.0 handler's vllm loader loads only llama" in refused[0]["message"]
    assert "option.model_loader=tnx" in refused[0]["message"]  # the loader of this image that does load it
    assert refused[0]["line"] == 3  # option.model_loader
    llama = MISTRAL_ON_VLLM_NEURON.replace("mistralai/Mistral-7B-v0.1", "meta-llama/Llama-3.1-8B-Instruct")
    code, findings = lint(tmp_path, llama, *arguments)
    assert code == 0 and "LMI611" not in {finding["code"] for finding in findings}


def test_nxdi_refuses_a_model_type_its_release_does_not_implement(tmp_path: Path) -> None:
    text = MISTRAL_ON_VLLM_NEURON.replace("model_loader=vllm", "model_loader=nxdi")
    code, findings = lint(tmp_path, text, "--lmi-version", "0.32.0", "--instance", "ml.inf2.24xlarge")
    refused = [finding for finding in findings if finding["code"] == "LMI611"]
    assert (
        code == 1
        and refused
        and "NxD Inference 0.1.1 loads only dbrx, llama, mixtral, mllama" in (refused[0]["message"])
    )
    mixtral = text.replace("mistralai/Mistral-7B-v0.1", "mistralai/Mixtral-8x7B-v0.1")
    _, findings = lint(tmp_path, mixtral, "--lmi-version", "0.32.0", "--instance", "ml.trn1.32xlarge")
    assert "LMI611" not in {finding["code"] for finding in findings}


def test_gpt_oss_is_refused_on_every_engine_path_of_an_older_image(tmp_path: Path) -> None:
    """The issue's example (openai/gpt-oss-20b on 0.32.0-lmi14.0.0-cu126). vLLM registers GptOssForCausalLM
    from v0.10.1 (vllm/model_executor/models/registry.py), transformers knows gpt_oss from 4.55: LMI 0.33
    pins transformers 4.51.3 (LMI206), and in 0.32 the vLLM venv's transformers is not pinned, so only the
    Transformers fallback could run it (LMI607, a warning: the data cannot show the venv's version).
    On Neuron every loader path is refused before the loader is reached: the djl-neuronx image's
    transformers 4.45.2 does not know gpt_oss (LMI206, before any loader)."""
    text = "option.model_id=openai/gpt-oss-20b\noption.rolling_batch=vllm\noption.max_model_len=4096\n"
    gpu = ("--instance", "ml.g6e.12xlarge", "--model", GPT_OSS, "--backend", "vllm")
    severities = {}
    for version in ("0.32.0", "0.33.0", "0.34.0"):
        _, findings = lint(tmp_path, text, "--lmi-version", version, *gpu)
        severities[version] = {
            f["code"]: f["severity"] for f in findings if f["code"] in ("LMI206", "LMI606", "LMI607")
        }
    assert severities == {"0.32.0": {"LMI607": "warning"}, "0.33.0": {"LMI206": "error"}, "0.34.0": {}}
    for loader in ("nxdi", "vllm"):
        neuron = text + f"option.model_loader={loader}\noption.tensor_parallel_degree=32\n"
        code, findings = lint(
            tmp_path, neuron, "--lmi-version", "0.32.0", "--instance", "ml.trn1.32xlarge", "--model", GPT_OSS
        )
        refusals = {f["code"]: f["severity"] for f in findings if f["code"] in ("LMI206", "LMI611")}
        assert code == 1 and refusals == {"LMI206": "error"}, findings


def test_plan_never_ranks_vllm_on_an_image_whose_transformers_cannot_read_the_model() -> None:
    """The image's transformers is judged (LMI206 through shape/engines.py): djl-serving 0.31.0-dlc
    serving/docker/lmi.Dockerfile pins transformers 4.45.2, which has no gpt_oss (first in 4.55), so vLLM
    0.6.3 never sees the model; LMI 0.34 (transformers 4.55.2, vLLM 0.10.2) runs it."""
    arguments = ("--model", GPT_OSS, "--backend", "vllm", "--instance", "ml.g6e.12xlarge", "--format", "json")
    refused = run_cli("plan", *arguments, "--lmi-version", "0.31.0", "--all")
    candidates = json.loads(refused.stdout)["candidates"]
    assert candidates and all(
        not c["feasible"] and "model-type-unsupported" in c["blocked_by"] for c in candidates
    )
    # LMI 0.34 reads it; its mxfp4 checkpoint (attention kept in bf16) has no memory figure, so nothing
    # ranks, but nothing is refused for the model type either
    accepted = run_cli("plan", *arguments, "--lmi-version", "0.34.0", "--all")
    candidates = json.loads(accepted.stdout)["candidates"]
    assert candidates and not any("model-type-unsupported" in c["blocked_by"] for c in candidates)
    unranked = run_cli("plan", *arguments, "--lmi-version", "0.34.0")
    assert unranked.returncode == 1 and "memory is not estimated" in unranked.stderr


def test_optimum_neuron_registers_text_generation_per_release_with_both_decorators() -> None:
    """optimum-neuron v0.1.0 optimum/exporters/neuron/model_configs/decoder_configs.py registers mistral
    (@register_in_tasks_manager("mistral", "text-generation")); from v0.2.0 the exporter asks its own
    registry (optimum/neuron/models/inference/auto_models.py @register_neuron_model_for_inference), which has
    no mistral; main (0.4.6.dev4 at a pinned commit) adds gemma3_text."""
    from lmi_config.knowledge.engine_support import optimum_export_registry, optimum_versions_exporting

    assert "mistral" in optimum_export_registry("0.1.0").model_types  # type: ignore[union-attr]
    newer = optimum_export_registry("0.2.0")
    assert newer is not None and newer.model_types == {"granite", "llama", "mixtral", "phi3", "qwen2"}
    assert "optimum-neuron/blob/v0.2.0/optimum/neuron/models/inference/auto_models.py#L" in newer.source
    assert optimum_versions_exporting("mistral")[-1] == "0.1.0"
    assert optimum_versions_exporting("gemma3_text") == ["0.4.6.dev4"]
    line = '@register_neuron_model_for_inference("qwen3_moe", "text-generation")'
    match = generator._REGISTER.search(line)
    assert match is not None and match.group(1) == "qwen3_moe"
