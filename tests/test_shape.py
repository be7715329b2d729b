"""The one judge of a configuration's shape: which keys the container reads per backend, batching
mode and release, what ``auto`` may resolve, and lint, explain and render agreeing on TP validity,
headroom and timeouts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from lmi_config.api import lint_text
from lmi_config.errors import SpecError
from lmi_config.knowledge import resolve_backend
from lmi_config.knowledge.instances import resolve_instance
from lmi_config.knowledge.memory import headroom_warning_fraction
from lmi_config.lint import LintOptions
from lmi_config.modelarch import from_catalog
from lmi_config.planner import valid_degrees
from lmi_config.render import render_spec
from lmi_config.rules import load_rules
from lmi_config.rules.base import find_rule
from lmi_config.shape import make_target
from lmi_config.spec import validate_spec


def _resolved(text: str, **options: str) -> dict:
    from lmi_config.explain import explain_unit

    result = lint_text(text, "properties", LintOptions(**options))
    return explain_unit(result.units[0], result.findings)["resolved"]


def test_transformers_neuronx_dynamic_batching_writes_the_batch_the_handler_compiles_for() -> None:
    spec = validate_spec(
        {
            "model": "mistralai/Mistral-7B-Instruct-v0.2",
            "instance": "inf2.8xlarge",
            "backend": "tnx",
            "lmi_version": "0.30.0",
            "options": {
                "rolling_batch": "disable",
                "batch_size": "auto",
                "tensor_parallel_degree": 2,
                "n_positions": 2048,
            },
        },
        "t",
    )
    rendered = render_spec(spec)
    items = dict(rendered.items)
    batch = str(rendered.auto["batch_size"])
    # the front end batches requests (batch_size); the handler compiles for option.batch_size
    assert items["batch_size"] == batch and items["option.batch_size"] == batch
    resolved = _resolved(rendered.text)
    assert resolved["batching"] == "dynamic"
    assert resolved["batch_size"] == int(batch)
    assert resolved["sources"]["batch_size"] == "option.batch_size"


def test_a_fixed_dynamic_batch_is_written_where_the_handler_reads_it_too() -> None:
    spec = validate_spec(
        {
            "model": "mistralai/Mistral-7B-Instruct-v0.2",
            "instance": "inf2.8xlarge",
            "backend": "tnx",
            "lmi_version": "0.30.0",
            "options": {"batch_size": 4, "tensor_parallel_degree": 2, "n_positions": 2048},
        },
        "t",
    )
    rendered = render_spec(spec)
    items = dict(rendered.items)
    assert (items["batch_size"], items["option.batch_size"], items["option.rolling_batch"]) == (
        "4",
        "4",
        "disable",
    )
    assert _resolved(rendered.text)["batch_size"] == 4


def test_max_num_seqs_auto_is_resolved_and_written_as_the_key_lmi_reads() -> None:
    spec = validate_spec(
        {
            "model": "Qwen/Qwen2.5-7B-Instruct",
            "instance": "g5.12xlarge",
            "backend": "vllm",
            "options": {"tensor_parallel_degree": 4, "max_num_seqs": "auto", "max_model_len": 8192},
        },
        "t",
    )
    rendered = render_spec(spec)
    items = dict(rendered.items)
    assert "option.max_num_seqs" not in items
    assert items["option.max_rolling_batch_size"] == str(rendered.auto["batch_size"])
    assert any(
        "option.max_num_seqs is written as the key the container reads" in note for note in rendered.notes
    )
    assert not rendered.errors


def test_an_auto_the_container_does_not_accept_is_refused_never_written(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "model: Qwen/Qwen2.5-7B-Instruct\ninstance: ml.g5.12xlarge\nbackend: vllm\n"
        "options:\n  max_lora_rank: auto\n"
    )
    output = tmp_path / "serving.properties"
    result = run_cli("render", str(spec), "-o", str(output))
    assert result.returncode == 2
    assert "option.max_lora_rank: auto is not a value the container accepts" in result.stderr
    assert not output.exists()
    with pytest.raises(SpecError):
        render_spec(validate_spec({"model": "gpt2", "backend": "vllm", "options": {"foo": "auto"}}, "t"))


def test_the_containers_own_auto_values_pass_through() -> None:
    spec = validate_spec(
        {
            "model": "Qwen/Qwen2.5-7B-Instruct",
            "backend": "vllm",
            "lmi_version": "0.30.0",
            "options": {"dtype": "auto"},
        },
        "t",
    )
    assert dict(render_spec(spec).items)["option.dtype"] == "auto"


ASYNC_VLLM = (
    "engine=Python\noption.entryPoint=djl_python.lmi_vllm.vllm_async_service\noption.async_mode=true\n"
    "option.rolling_batch=disable\noption.model_id=Qwen/Qwen2.5-7B-Instruct\noption.tensor_parallel_degree=4\n"
)


def test_async_vllm_batches_like_rolling_batch_with_the_recommenders_default_of_32() -> None:
    resolved = _resolved(ASYNC_VLLM, instance="g5.12xlarge", backend="vllm", lmi_version="0.35.0")
    assert resolved["batching"] == "async"
    assert resolved["batch_size"] == 32
    assert "rolling_batch=disable" in resolved["sources"]["batch_size"]


def test_rolling_vllm_defaults_to_256_and_a_dynamic_batch_disables_rolling_batch() -> None:
    rolling = _resolved(
        "option.model_id=Qwen/Qwen2.5-7B-Instruct\noption.rolling_batch=vllm\noption.tensor_parallel_degree=4\n",
        instance="g5.12xlarge",
        lmi_version="0.30.0",
    )
    assert (rolling["batching"], rolling["batch_size"]) == ("rolling", 256)
    dynamic = _resolved("option.model_id=gpt2\nbatch_size=4\n", backend="huggingface", instance="g5.2xlarge")
    assert (dynamic["batching"], dynamic["rolling_batch"], dynamic["batch_size"]) == ("dynamic", "disable", 4)


def test_vllm_reads_max_model_len_not_n_positions_and_neuron_reads_n_positions_not_max_model_len() -> None:
    gpu = _resolved(
        "option.model_id=Qwen/Qwen2.5-7B-Instruct\noption.rolling_batch=vllm\noption.n_positions=1024\n",
        instance="g5.12xlarge",
    )
    assert gpu["sequence_length"] == 32768  # the model's maximum: n_positions means nothing to vLLM
    neuron = _resolved(
        "option.model_id=Qwen/Qwen2.5-7B-Instruct\noption.entryPoint=djl_python.transformers_neuronx\n"
        "option.rolling_batch=vllm\noption.n_positions=1024\noption.max_model_len=8192\n",
        instance="inf2.24xlarge",
        lmi_version="0.30.0",
    )
    assert neuron["sequence_length"] == 1024  # the Neuron handler overwrites max_model_len with n_positions


CASES = [
    ("inf2.48xlarge", "transformers-neuronx", "meta-llama/Llama-3.1-8B-Instruct", "0.30.0"),
    ("trn1.32xlarge", "nxdi", "meta-llama/Llama-3.1-70B-Instruct", "0.34.0"),
    ("g5.48xlarge", "vllm", "Qwen/Qwen2.5-7B-Instruct", "0.30.0"),
    ("g5.48xlarge", "tensorrt-llm", "Qwen/Qwen2.5-7B-Instruct", "0.30.0"),
]


@pytest.mark.parametrize(("instance", "backend", "model", "version"), CASES)
def test_lint_and_the_planner_judge_tp_degrees_alike(
    instance: str, backend: str, model: str, version: str
) -> None:
    """A degree the planner may choose is exactly one lint raises no error and no planning-blocking warning for."""
    target = make_target(
        backend,
        resolve_backend(backend).accelerator,
        _release(version),
        resolve_instance(instance),
        from_catalog(model),
    )
    valid = set(valid_degrees(target, resolve_backend(backend).accelerator))
    load_rules()
    tp_rules = {
        find_rule(slug).code
        for slug in (
            "tp-exceeds-devices",
            "tp-unsupported-degree",
            "tp-heads-divisibility",
            "kv-heads-sharding",
        )
    }  # type: ignore[union-attr]
    for degree in range(1, resolve_instance(instance).num_cores + 1):
        result = lint_text(
            f"option.model_id={model}\noption.tensor_parallel_degree={degree}\noption.max_rolling_batch_size=1\n",
            "properties",
            LintOptions(instance=instance, backend=backend, lmi_version=version, select=sorted(tp_rules)),
        )
        blocked = any(
            finding.severity == "error"
            or (finding.rule == "tp-unsupported-degree" and finding.severity == "warning")
            or (finding.rule == "kv-heads-sharding" and result.units[0].context.backend.accelerator == "gpu")
            for finding in result.findings
        )
        assert (degree in valid) == (not blocked), (degree, [f.message for f in result.findings])


def _release(version: str):
    from lmi_config.knowledge import parse_lmi_version

    return parse_lmi_version(version)


def test_tensorrt_llm_kv_heads_that_do_not_shard_are_a_warning_that_auto_avoids() -> None:
    result = lint_text(
        "option.model_id=Qwen/Qwen2.5-7B-Instruct\noption.rolling_batch=trtllm\noption.tensor_parallel_degree=7\n",
        "properties",
        LintOptions(instance="g5.48xlarge", backend="tensorrt-llm", lmi_version="0.30.0"),
    )
    kv = [finding for finding in result.findings if finding.rule == "kv-heads-sharding"]
    assert kv and kv[0].severity == "warning"
    spec = validate_spec(
        {
            "model": "Qwen/Qwen2.5-7B-Instruct",
            "instance": "g5.48xlarge",
            "backend": "tensorrt-llm",
            "lmi_version": "0.30.0",
            "objective": "latency",
            "options": {"tensor_parallel_degree": "auto", "max_rolling_batch_size": 8},
        },
        "t",
    )
    assert render_spec(spec).auto["tensor_parallel_degree"] in (1, 2, 4)


def test_the_headroom_threshold_is_read_from_the_data_not_written_in_a_rule() -> None:
    rule = find_rule("memory-headroom-low")
    assert rule is not None and f"{headroom_warning_fraction():.0%}" not in rule.summary
    text = (
        "option.model_id=facebook/opt-13b\noption.entryPoint=djl_python.transformers_neuronx\n"
        "option.tensor_parallel_degree=2\noption.n_positions=2048\noption.max_rolling_batch_size=2\noption.dtype=fp16\n"
    )
    findings = lint_text(text, "properties", LintOptions(instance="inf2.8xlarge")).findings
    low = [finding for finding in findings if finding.rule == "memory-headroom-low"]
    assert low and f"under {headroom_warning_fraction():.0%} left" in low[0].message


def test_render_writes_the_loading_timeout_lint_recommends() -> None:
    spec = validate_spec(
        {
            "model": "meta-llama/Llama-3.1-8B-Instruct",
            "instance": "inf2.24xlarge",
            "backend": "tnx",
            "lmi_version": "0.30.0",
            "options": {"tensor_parallel_degree": 4, "max_rolling_batch_size": 4, "n_positions": 2048},
        },
        "t",
    )
    written = int(dict(render_spec(spec).items)["option.model_loading_timeout"])
    text = (
        "option.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.entryPoint=djl_python.transformers_neuronx\n"
        "option.tensor_parallel_degree=4\noption.max_rolling_batch_size=4\noption.n_positions=2048\n"
        "option.model_loading_timeout=60\n"
    )
    findings = lint_text(
        text, "properties", LintOptions(instance="inf2.24xlarge", lmi_version="0.30.0")
    ).findings
    short = [finding for finding in findings if finding.rule == "loading-timeout-too-short"]
    assert short and f"set option.model_loading_timeout={written} " in short[0].message


def test_explain_json_names_the_batching_mode_copies_and_sources(tmp_path: Path) -> None:
    path = tmp_path / "serving.properties"
    path.write_text(ASYNC_VLLM)
    document = json.loads(
        run_cli(
            "explain", str(path), "--instance", "g5.48xlarge", "--lmi-version", "0.35.0", "--format", "json"
        ).stdout
    )
    resolved = document["resolved"]
    assert (resolved["batching"], resolved["copies"], resolved["tensor_parallel_degree"]) == ("async", 2, 4)
    assert resolved["sources"]["copies"] == "8 GPUs / TP 4"


def test_djl_cluster_size_multiplies_the_devices_tp_is_judged_against(tmp_path: Path) -> None:
    (tmp_path / "serving.properties").write_text(
        "option.model_id=meta-llama/Llama-3.1-70B-Instruct\noption.rolling_batch=vllm\n"
        "option.tensor_parallel_degree=16\n"
    )
    alone = run_cli("lint", str(tmp_path), "--instance", "p4d.24xlarge", "--format", "json")
    assert "tp-exceeds-devices" in [finding["rule"] for finding in json.loads(alone.stdout)["findings"]]
    (tmp_path / "cluster.env").write_text("DJL_CLUSTER_SIZE=2\n")
    together = run_cli("lint", str(tmp_path), "--instance", "p4d.24xlarge", "--format", "json")
    assert "tp-exceeds-devices" not in [
        finding["rule"] for finding in json.loads(together.stdout)["findings"]
    ]
    document = json.loads(
        run_cli("explain", str(tmp_path), "--instance", "p4d.24xlarge", "--format", "json").stdout
    )
    assert (document["resolved"]["nodes"], document["resolved"]["copies"]) == (2, 1)
    assert document["resolved"]["sources"]["nodes"] == "DJL_CLUSTER_SIZE=2"


O3 = (
    "engine=Python\noption.entryPoint=djl_python.transformers_neuronx\n"
    "option.model_id=s3://bucket/Meta-Llama-3-8B-Instruct-split/\noption.load_split_model=True\n"
    "option.tensor_parallel_degree=8\noption.n_positions=4096\noption.rolling_batch=auto\n"
    "option.max_rolling_batch_size=4\noption.dtype=fp16\noption.model_loading_timeout=1200\n"
    "option.neuron_optimize_level={level}\n"
)


def test_a_higher_compiler_optimization_level_makes_1200_seconds_too_short() -> None:
    """A user report: 1200 s was too short for an 8B model at TP 8 with neuron_optimize_level=3
    (a split checkpoint loads faster but still compiles)."""

    def warned(level: int) -> bool:
        findings = lint_text(
            O3.format(level=level),
            "properties",
            LintOptions(instance="inf2.24xlarge", lmi_version="0.30.0", model="meta-llama/Meta-Llama-3-8B"),
        ).findings
        return any(finding.rule == "loading-timeout-too-short" for finding in findings)

    assert warned(3)
    assert not warned(1)


def test_an_integer_larger_than_the_container_parses_is_refused_not_a_crash(tmp_path: Path) -> None:
    huge = "9" * 400
    result = run_cli(
        "render",
        "--model",
        "Qwen/Qwen2.5-7B-Instruct",
        "--instance",
        "g5.12xlarge",
        "--set",
        f"max_model_len={huge}",
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "larger than the container's integers" in result.stderr
