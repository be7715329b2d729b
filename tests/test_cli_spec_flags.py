"""`render` and `deploy` read the spec flags the same way: deploy promises to render "exactly as
`render` does", so the same flags must give the same container configuration."""

from __future__ import annotations

import json

from conftest import run_cli

SPEC_FLAGS = (
    "--model",
    "s3://my-bucket/qwen",
    "--model-architecture",
    "Qwen/Qwen2.5-7B-Instruct",
    "--instance",
    "ml.g5.12xlarge",
    "--backend",
    "vllm",
    "--lmi-version",
    "0.34.0",
    "--set",
    "tensor_parallel_degree=auto",
    "--env",
    "TEAM=search",
    "--objective",
    "latency",
)


def test_deploy_plans_the_configuration_render_writes_for_the_same_spec_flags() -> None:
    rendered = run_cli("render", *SPEC_FLAGS, "--format", "json")
    planned = run_cli("deploy", *SPEC_FLAGS, "--dry-run", "--region", "us-east-1", "--format", "json")
    assert rendered.returncode == 0, rendered.stderr
    assert planned.returncode == 0, planned.stderr
    environment = json.loads(rendered.stdout)
    plan = json.loads(planned.stdout)
    assert plan["environment"] == environment
    # Every flag reached the configuration (the architecture is what lets auto size an s3:// model;
    # throughput would pick TP 1 on this instance, latency the largest TP that fits).
    assert environment["HF_MODEL_ID"] == "s3://my-bucket/qwen"
    assert environment["OPTION_ROLLING_BATCH"] == "vllm"
    assert environment["OPTION_TENSOR_PARALLEL_DEGREE"] == "4"
    assert environment["TEAM"] == "search"
    assert plan["instance_type"] == "ml.g5.12xlarge"
    assert plan["image"]["djl_version"] == "0.34.0"
