"""Image selection: every backend render writes x every instance family the checks know, at the
backend's default release in us-east-1, plus regions, explicit tags and --image.

The expectations are written out here (from the LMI feature matrix, the SageMaker SDK's image
tables and Neuron's NxD Inference notes), not recomputed from the image table.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmi_config.deploy.image_choice import ImageChoice, choose_image
from lmi_config.errors import SpecError
from lmi_config.knowledge import default_release
from lmi_config.knowledge.images import clear_cache
from lmi_config.knowledge.instances import instances

RENDERED_BACKENDS = ("vllm", "lmi-dist", "tensorrt-llm", "huggingface", "transformers-neuronx", "nxdi")
ECR = "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:"
DEFAULT_TAGS = {
    "vllm": "0.36.0-lmi27.0.0-cu130",
    "huggingface": "0.36.0-lmi27.0.0-cu130",
    "lmi-dist": "0.32.0-lmi14.0.0-cu126",
    "tensorrt-llm": "0.33.0-tensorrtllm0.21.0-cu128",
    "transformers-neuronx": "0.30.0-neuronx-sdk2.20.1",
}
# the "AWS machine supported" row of the LMI feature matrix (instance-series prefixes)
DOCUMENTED = {
    "vllm": ("g4", "g5", "g6", "p4d", "p5"),
    "huggingface": ("g4", "g5", "g6", "p4d", "p5"),
    "lmi-dist": ("g5", "g6", "p4d", "p5"),
    "tensorrt-llm": ("g5", "g6", "p4d", "p5"),
    "transformers-neuronx": ("inf2", "trn1"),
}
NEURON_BACKENDS = ("transformers-neuronx", "nxdi")


def _families() -> dict[str, object]:
    """One instance per family (the smallest listed)."""
    chosen: dict[str, object] = {}
    for instance in instances().values():
        chosen.setdefault(instance.family, instance)
    return chosen


FAMILIES = _families()


@pytest.fixture(autouse=True)
def packaged_table_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No user override file: the package's table."""
    monkeypatch.setenv("LMI_CONFIG_IMAGES_FILE", str(tmp_path / "no-override.json"))
    clear_cache()
    yield
    clear_cache()


def expected(backend: str, family: str, accelerator: str) -> tuple[str, str]:
    """('image', tag) or ('refused', a phrase of the reason)."""
    if accelerator == "cpu":
        return "refused", "has no GPU and no Neuron device"
    if accelerator == "gpu" and backend in NEURON_BACKENDS:
        return "refused", f"backend {backend} runs on Inferentia2 / Trainium (Neuron) instances"
    if accelerator == "neuron" and backend in ("lmi-dist", "tensorrt-llm", "huggingface"):
        return "refused", f"backend {backend} runs on GPU instances"
    if accelerator == "neuron" and family == "inf1":
        return "refused", "Inferentia1 runs the older Neuron SDK"
    if accelerator == "neuron" and family.startswith("trn2") and backend != "nxdi":
        return "refused", "transformers-neuronx does not support Trn2"
    if backend == "nxdi":
        return "refused", "djl-neuronx 0.34.0 (LMI v16) (unpublished) was never published"
    if accelerator == "neuron" and backend == "vllm":
        # vLLM on Neuron ships only in djl-neuronx 0.28-0.30; vLLM's default release is a GPU image
        return "refused", "LMI 0.36.0 (LMI v27) has no Inferentia2 / Trainium (Neuron) image that ships vllm"
    return "image", DEFAULT_TAGS[backend]


def choose(backend: str, instance: object, region: str = "us-east-1", **extra: str) -> ImageChoice:
    release, _ = default_release(backend)
    return choose_image(
        backend=backend,
        instance=instance,
        region=region,
        djl_version=release.djl,
        lmi_version=release.lmi,
        release_label=release.label(),
        **extra,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("backend", RENDERED_BACKENDS)
def test_every_backend_on_every_instance_family(backend: str, family: str) -> None:
    instance = FAMILIES[family]
    kind, what = expected(backend, family, instance.accelerator)  # type: ignore[attr-defined]
    if kind == "refused":
        with pytest.raises(SpecError, match=re.escape(what)):
            choose(backend, instance)
        return
    choice = choose(backend, instance)
    assert choice.uri == ECR + what
    undocumented = not family.startswith(DOCUMENTED[backend])
    assert any("nobody documented it" in warning for warning in choice.warnings) == undocumented


def test_the_matrix_covers_gpu_neuron_and_cpu_families() -> None:
    accelerators = {instance.accelerator for instance in FAMILIES.values()}  # type: ignore[attr-defined]
    assert accelerators == {"gpu", "neuron", "cpu"}
    assert {"inf1", "inf2", "trn1", "trn2", "g5", "g6e", "p5", "g7e", "m5"} <= set(FAMILIES)


def test_an_image_the_sdk_does_not_list_in_a_region_is_refused() -> None:
    inf2 = instances()["inf2.xlarge"]
    with pytest.raises(SpecError, match=r"0.29.0-neuronx-sdk2.19.1 is not published in ap-northeast-2"):
        choose_image(
            backend="transformers-neuronx",
            instance=inf2,
            region="ap-northeast-2",
            djl_version="0.29.0",
            lmi_version="11",
            release_label="0.29.0",
        )
    with pytest.raises(SpecError, match="no LMI image registry is known for region 'xx-west-9'"):
        choose("transformers-neuronx", inf2, region="xx-west-9")


def test_the_last_neuron_image_has_assumed_regions_and_says_so() -> None:
    choice = choose("transformers-neuronx", instances()["inf2.xlarge"], region="eu-west-1")
    assert choice.uri == "763104351884.dkr.ecr.eu-west-1.amazonaws.com/djl-inference:0.30.0-neuronx-sdk2.20.1"
    assert any("does not list 0.30.0-neuronx-sdk2.20.1" in warning for warning in choice.warnings)


def test_china_regions_use_their_own_account_and_domain() -> None:
    choice = choose("vllm", instances()["g5.xlarge"], region="cn-north-1")
    assert (
        choice.uri == "727897471807.dkr.ecr.cn-north-1.amazonaws.com.cn/djl-inference:0.36.0-lmi27.0.0-cu130"
    )


def test_a_tag_named_as_the_version_is_used_exactly() -> None:
    choice = choose(
        "transformers-neuronx", instances()["inf2.8xlarge"], requested_tag="0.27.0-neuronx-sdk2.18.1"
    )
    assert choice.tag == "0.27.0-neuronx-sdk2.18.1"
    assert choice.warnings == ()


@pytest.mark.parametrize(
    ("backend", "instance", "uri", "refusal"),
    [
        (
            "vllm",
            "inf2.xlarge",
            ECR + "0.36.0-lmi27.0.0-cu130",
            "is a djl-lmi (GPU) image and inf2.xlarge is a",
        ),
        (
            "transformers-neuronx",
            "inf2.xlarge",
            ECR + "0.33.0-tensorrtllm0.21.0-cu128",
            "is a djl-tensorrtllm (GPU) image and inf2.xlarge",
        ),
        ("vllm", "g5.2xlarge", ECR + "0.30.0-neuronx-sdk2.20.1", "is a djl-neuronx (Inferentia2 / Trainium"),
        (
            "vllm",
            "g5.2xlarge",
            ECR + "0.33.0-tensorrtllm0.21.0-cu128",
            "ships tensorrt-llm, not backend vllm",
        ),
    ],
)
def test_an_explicit_image_for_another_accelerator_or_backend_is_refused(
    backend: str, instance: str, uri: str, refusal: str
) -> None:
    with pytest.raises(SpecError, match=re.escape(refusal)):
        choose(backend, instances()[instance], image_uri=uri)


def test_an_unknown_image_is_used_with_a_warning() -> None:
    uri = "111122223333.dkr.ecr.us-east-1.amazonaws.com/my-lmi:custom-build"
    choice = choose("vllm", instances()["g5.2xlarge"], image_uri=uri)
    assert choice.uri == uri
    assert any("cannot check" in warning for warning in choice.warnings)
