"""Plans without AWS: timeouts and volumes from the judge's assessment, names, and the waiting loop."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from lmi_config.deploy import DeployRequest, SizingOverrides, build_plan
from lmi_config.deploy.build import default_endpoint_name, stamped
from lmi_config.deploy.progress import wait_for_endpoint
from lmi_config.errors import SpecError
from lmi_config.knowledge.images import clear_cache
from lmi_config.spec import build_spec

ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"
SPECS = ROOT / "samples" / "specs"


@pytest.fixture(autouse=True)
def packaged_table_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setenv("LMI_CONFIG_IMAGES_FILE", str(tmp_path / "no-override.json"))
    clear_cache()
    yield
    clear_cache()


def plan_for(spec_name: str, *settings: str, **request: Any) -> Any:
    spec, name = build_spec(str(SPECS / spec_name), settings=settings)
    return build_plan(spec, DeployRequest(region="us-east-1", role=ROLE, **request), name=name)


def variant(plan: Any) -> dict[str, Any]:
    call = next(call for call in plan.calls if call.operation == "create_endpoint_config")
    return dict(call.parameters["ProductionVariants"][0])


def test_the_health_check_is_the_judges_loading_timeout_and_never_shorter_than_the_configured_one() -> None:
    plan = plan_for("mistral-7b-inf2-8xlarge.yaml", "model_loading_timeout=2400")
    loading = plan.rendered.assessment.loading
    assert loading.compiles and loading.timeout_seconds == 2400
    seconds = variant(plan)["ContainerStartupHealthCheckTimeoutInSeconds"]
    assert seconds == max(2400, loading.recommended_seconds)


def test_a_long_neuron_compile_is_capped_at_sagemakers_limit_with_a_warning() -> None:
    plan = plan_for("llama-3.1-70b-inf2-48xlarge.yaml")
    assert plan.rendered.assessment.loading.needed_seconds > 3600
    assert variant(plan)["ContainerStartupHealthCheckTimeoutInSeconds"] == 3600
    assert any("compile ahead of time" in warning for warning in plan.warnings)


def test_a_loading_timeout_beyond_the_health_check_limit_is_refused() -> None:
    with pytest.raises(
        SpecError, match=r"option.model_loading_timeout=5000 is longer than SageMaker's longest"
    ):
        plan_for("mistral-7b-inf2-8xlarge.yaml", "model_loading_timeout=5000")


def test_a_health_check_shorter_than_the_loading_timeout_is_refused() -> None:
    overrides = SizingOverrides(health_check_timeout_seconds=600)
    with pytest.raises(
        SpecError, match="--health-check-timeout 600 is shorter than option.model_loading_timeout"
    ):
        plan_for("mistral-7b-inf2-8xlarge.yaml", sizing=overrides)


@pytest.mark.parametrize(
    ("instance", "expected"),
    [
        ("ml.trn1.32xlarge", None),  # trn1 refuses VolumeSizeInGB (sagemaker-python-sdk PR #4828)
        ("ml.inf2.24xlarge", 30),  # 15 GiB of bf16 weights x 2 for the compiled artifacts
    ],
)
def test_the_volume_is_set_only_where_the_family_accepts_it(instance: str, expected: int | None) -> None:
    spec, name = build_spec(str(SPECS / "llama-3.1-8b-inf2-24xlarge.yaml"), overrides={"instance": instance})
    plan = build_plan(spec, DeployRequest(region="us-east-1", role=ROLE), name=name)
    assert variant(plan).get("VolumeSizeInGB") == expected


def test_a_family_whose_volume_rule_is_unknown_gets_no_volume_and_says_why() -> None:
    spec, name = build_spec(
        str(SPECS / "qwen2.5-7b-vllm-g5-12xlarge.yaml"), overrides={"instance": "ml.g7e.2xlarge"}
    )
    plan = build_plan(spec, DeployRequest(region="us-east-1", role=ROLE), name=name)
    assert "VolumeSizeInGB" not in variant(plan)
    assert any("whether ml.g7e accepts it is not known" in reason for reason in plan.sizing.reasons)


def test_names_fit_sagemakers_pattern_even_for_long_model_ids() -> None:
    base = default_endpoint_name("org/" + "Very_Long.Model-Name" * 6, "ml.inf2.48xlarge")
    name = stamped(base, 0.0)
    pattern = r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}"
    assert re.fullmatch(pattern, base) and re.fullmatch(pattern, name)
    assert name.endswith("-19700101-000000-000") and len(name) <= 63
    # two runs in one second get two names (a --update right after a --no-wait deploy)
    assert stamped(base, 1.25) != stamped(base, 1.5) and stamped(base, 1.25).endswith("-19700101-000001-250")


class Endpoint:
    """describe_endpoint answers from a script of states."""

    def __init__(self, states: list[dict[str, Any]]) -> None:
        self.states = states
        self.calls = 0

    def describe_endpoint(self, EndpointName: str) -> dict[str, Any]:  # noqa: N803 - boto3's name
        state = self.states[min(self.calls, len(self.states) - 1)]
        self.calls += 1
        return state


def wait(states: list[dict[str, Any]], timeout: float = 100.0) -> tuple[Any, list[str]]:
    messages: list[str] = []
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    result = wait_for_endpoint(
        Endpoint(states),
        "e",
        expected_config="new",
        health_check_seconds=1800,
        timeout_seconds=timeout,
        poll_seconds=30,
        progress=lambda message, transient: messages.append(message),
        sleep=sleep,
        clock=lambda: now[0],
    )
    return result, messages


def test_waiting_shows_status_time_and_step_until_in_service() -> None:
    creating = {"EndpointStatus": "Creating", "EndpointConfigName": "new"}
    result, messages = wait(
        [creating, creating, {"EndpointStatus": "InService", "EndpointConfigName": "new"}]
    )
    assert result.status == "InService" and result.elapsed_seconds == 60
    assert messages[1].startswith("  [0:30] e: Creating — provisioning the instance")
    assert "health check allows 1800 s" in messages[0]


def test_waiting_reports_a_failure_an_update_rolled_back_and_a_timeout() -> None:
    failed, _ = wait(
        [{"EndpointStatus": "Failed", "FailureReason": "ping failed", "EndpointConfigName": "new"}]
    )
    assert (failed.status, failed.failure_reason) == ("Failed", "ping failed")
    rolled, _ = wait(
        [{"EndpointStatus": "InService", "EndpointConfigName": "old", "FailureReason": "bad image"}]
    )
    assert rolled.status == "Failed" and rolled.failure_reason == "update rolled back: bad image"
    stuck, _ = wait([{"EndpointStatus": "Creating", "EndpointConfigName": "new"}], timeout=100)
    assert stuck.status == "Timeout" and stuck.elapsed_seconds == 100
