"""The image of ``search --on sagemaker``'s jobs ships the optimum-neuron the search exports with
(``--optimum-neuron``, else the one installed where the command runs), as the plan says — seen
through ``--dry-run``'s CreateTrainingJob calls, against the image table and the engine versions
each Neuron release's Dockerfile installs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from search_jobs_harness import BUCKET, REGION, Search, aws, jobs, server

from lmi_config.knowledge import version_tuple
from lmi_config.knowledge.engine_support import engine_version
from lmi_config.knowledge.images import images

__all__ = ["aws", "server"]  # fixtures

# a llama: every optimum-neuron an image ships exports it (the harness's Mistral only from 0.0.17 on),
# so these tests see the image choice, not the exporter's refusal
EVERY_IMAGE_EXPORTS = ("--model", "meta-llama/Llama-3.1-8B-Instruct")


def shipped() -> dict[str, str]:
    """Image tag -> the optimum-neuron it ships, for the published Neuron images in the region."""
    found = {}
    for image in images():
        if image.framework != "djl-neuronx" or not image.published or REGION not in image.regions:
            continue
        version = engine_version(image.djl_version, "optimum-neuron")
        optimum = version[0] if version else image.backend_versions.get("optimum-neuron")
        if image.tag and optimum:
            found[image.tag] = optimum
    return found


def planned(result: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    """(the one image every job runs, the plan's line saying why)."""
    assert result.returncode == 0, result.stderr
    requests = [
        json.loads(line.split(" ", 1)[1])
        for line in result.stdout.splitlines()
        if line.startswith("sagemaker.create_training_job ")
    ]
    (uri,) = {request["AlgorithmSpecification"]["TrainingImage"] for request in requests}
    lines = result.stdout.splitlines()
    why = lines[lines.index(f"image {uri}") + 1].strip()
    return uri, why


def optimum_of(uri: str) -> str:
    return shipped()[uri.rsplit(":", 1)[1]]


def with_installed(search: Search, version: str, root: Path) -> subprocess.CompletedProcess[str]:
    """The dry run where the command's Python has optimum-neuron ``version`` installed (its metadata)."""
    site = root / "site"
    (site / f"optimum_neuron-{version}.dist-info").mkdir(parents=True)
    (site / f"optimum_neuron-{version}.dist-info" / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: optimum-neuron\nVersion: {version}\n", encoding="utf-8"
    )
    environment = search.environment()
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), environment.get("PYTHONPATH")]))
    return subprocess.run(
        search.coordinator_command("--dry-run", *EVERY_IMAGE_EXPORTS),
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_jobs_image_ships_the_optimum_neuron_version_asked_for(
    aws: dict[str, Any], server: str, tmp_path: Path
) -> None:
    search = Search(server, tmp_path)
    for version in sorted(set(shipped().values())):
        uri, why = planned(search.coordinate("--dry-run", *EVERY_IMAGE_EXPORTS, "--optimum-neuron", version))
        assert optimum_of(uri) == version
        assert why == f"ships optimum-neuron {version}, as --optimum-neuron {version}"


def test_the_optimum_neuron_installed_here_picks_the_image_when_none_is_asked_for(
    aws: dict[str, Any], server: str, tmp_path: Path
) -> None:
    search = Search(server, tmp_path)
    oldest = min(shipped().values(), key=version_tuple)
    uri, why = planned(with_installed(search, oldest, tmp_path))
    assert optimum_of(uri) == oldest and f"the optimum-neuron installed here ({oldest})" in why
    # nothing installed, nothing asked: the newest image that ships optimum-neuron, said as such
    uri, why = planned(search.coordinate("--dry-run", *EVERY_IMAGE_EXPORTS))
    assert optimum_of(uri) == max(shipped().values(), key=version_tuple)
    assert "no optimum-neuron is installed here and --optimum-neuron was not given" in why


def test_a_version_no_image_ships_takes_the_nearest_of_the_same_minor_and_says_so(
    aws: dict[str, Any], server: str, tmp_path: Path
) -> None:
    search = Search(server, tmp_path)
    known = sorted({version_tuple(version) for version in shipped().values()})
    major, minor, _ = known[0]
    patches = {patch for (major_, minor_, patch) in known if (major_, minor_) == (major, minor)}
    missing = next(patch for patch in range(min(patches), max(patches)) if patch not in patches)  # a gap
    wanted = f"{major}.{minor}.{missing}"
    uri, why = planned(search.coordinate("--dry-run", *EVERY_IMAGE_EXPORTS, "--optimum-neuron", wanted))
    chosen = version_tuple(optimum_of(uri))
    assert chosen[:2] == (major, minor)
    assert abs(chosen[2] - missing) == min(abs(patch - missing) for patch in patches)
    assert f"the nearest to --optimum-neuron {wanted} with the same minor version" in why


def test_a_version_of_another_minor_is_refused_with_the_known_versions_and_image_as_the_way_out(
    aws: dict[str, Any], server: str, tmp_path: Path
) -> None:
    search = Search(server, tmp_path)
    result = search.coordinate("--yes", "--optimum-neuron", "9.9.0")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "no published Neuron LMI image in us-east-1 ships optimum-neuron 9.9.x" in result.stderr
    assert all(version in result.stderr for version in shipped().values()) and "--image URI" in result.stderr
    assert jobs(aws) == {} and "Contents" not in aws["s3"].list_objects_v2(Bucket=BUCKET)
    garbled = search.coordinate("--dry-run", *EVERY_IMAGE_EXPORTS, "--optimum-neuron", "latest")
    assert garbled.returncode == 2 and "give a version such as" in garbled.stderr


@pytest.mark.parametrize("asked", [(), ("--optimum-neuron", "9.9.0")])
def test_an_image_given_is_used_as_given(
    aws: dict[str, Any], server: str, tmp_path: Path, asked: tuple[str, ...]
) -> None:
    image = "123456789012.dkr.ecr.us-east-1.amazonaws.com/my-neuron:1"
    uri, why = planned(
        Search(server, tmp_path).coordinate("--dry-run", *EVERY_IMAGE_EXPORTS, "--image", image, *asked)
    )
    assert uri == image and why == "as given by --image"


def test_a_model_the_images_optimum_neuron_does_not_export_is_refused_before_any_job(
    aws: dict[str, Any], server: str, tmp_path: Path
) -> None:
    # the same refusal the local search gives (export_problems), judged against the optimum-neuron
    # of the image the jobs would run, before anything is uploaded or started
    search = Search(server, tmp_path)
    result = search.coordinate("--yes", "--model", "google/gemma-2-9b-it")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    uri_version = max(shipped().values(), key=version_tuple)
    assert f"optimum-neuron {uri_version} registers text-generation only for" in result.stderr
    assert "gemma2" in result.stderr and "nothing was started" in result.stderr
    assert jobs(aws) == {} and "Contents" not in aws["s3"].list_objects_v2(Bucket=BUCKET)


def test_a_trainium2_job_on_an_image_older_than_its_neuron_sdk_is_refused_before_any_job(
    aws: dict[str, Any], server: str, tmp_path: Path
) -> None:
    # every published Neuron LMI image installs Neuron SDK 2.20.1 or older; Trainium2 runs from 2.21.0
    # (aws-neuron-sdk v2.21.0 release notes): the job would start, pay, and fail to use the cores
    search = Search(server, tmp_path)
    result = search.coordinate("--yes", *EVERY_IMAGE_EXPORTS, "--instance", "ml.trn2.48xlarge")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert (
        "--instance ml.trn2.48xlarge" in result.stderr and "trn2 runs from Neuron SDK 2.21.0" in result.stderr
    )
    assert "--image URI" in result.stderr
    assert jobs(aws) == {} and "Contents" not in aws["s3"].list_objects_v2(Bucket=BUCKET)
    image = "123456789012.dkr.ecr.us-east-1.amazonaws.com/my-neuron:2.21"  # the user's own: not refused
    given = search.coordinate(
        "--dry-run", *EVERY_IMAGE_EXPORTS, "--instance", "ml.trn2.48xlarge", "--image", image
    )
    from lmi_config.search.sagemaker_jobs import training_instance_types

    if "ml.trn2.48xlarge" in training_instance_types():
        assert given.returncode == 0, given.stderr
    else:  # botocore before trn2 (the declared floor, 1.34.0): its service model offers no trn2 training job
        assert (
            given.returncode == 2 and "SageMaker training jobs do not offer ml.trn2.48xlarge" in given.stderr
        )
