"""Rendering a spec for deploy, and what comes with the rendered configuration: the files
uploaded beside ``serving.properties`` and the image that serves it.

The configuration reaches the container as its ``Environment`` when SageMaker's limits allow (the
default) or as ``serving.properties`` (plus ``model.py`` / ``requirements.txt``) uploaded
uncompressed to an S3 prefix; render renders it with the full lint, exactly as ``lmi-config
render`` does.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from lmi_config.deploy.image_choice import ImageChoice, choose_image
from lmi_config.deploy.plan import DeployRequest, PlannedFile
from lmi_config.errors import InputError, SpecError
from lmi_config.io import read_bounded
from lmi_config.knowledge import parse_lmi_version, resolve_backend
from lmi_config.knowledge.images import images
from lmi_config.knowledge.instances import resolve_instance
from lmi_config.spec import Spec

if TYPE_CHECKING:
    from lmi_config.render import Rendered

PROPERTIES_FILE = "serving.properties"
_S3_URI = re.compile(r"^s3://(?P<bucket>[a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:/(?P<prefix>.*))?$")


def _render(spec: Spec, name: str, output_format: str, hub: bool) -> Rendered:
    from lmi_config.render import render_spec

    if output_format == "properties":
        # environment variables go into the container's Environment, never into serving.properties
        spec = spec.model_copy(update={"env": {}})
    return render_spec(spec, name=name, output_format=output_format, hub=hub)


def render_for_delivery(spec: Spec, name: str, request: DeployRequest, hub: bool) -> tuple[Rendered, str]:
    """Render as the container Environment when it fits, else as serving.properties for S3."""
    if request.delivery not in ("auto", "environment", "s3"):
        raise SpecError(f"--delivery {request.delivery!r}: choose auto, environment or s3")
    if request.files or request.delivery == "s3":
        if not request.s3_prefix:
            why = "--file needs" if request.files else "--delivery s3 needs"
            raise SpecError(f"{why} --s3-prefix s3://BUCKET/PREFIX (where serving.properties is uploaded)")
        return _render(spec, name, "properties", hub), "s3"
    rendered = _render(spec, name, "json", hub)
    problems = list(rendered.problems)
    if not problems:
        return rendered, "environment"
    if request.delivery == "environment" or not request.s3_prefix:
        raise SpecError(
            f"{name}: the configuration cannot be the container's Environment: {'; '.join(problems)}; give "
            "--s3-prefix s3://BUCKET/PREFIX to upload it as serving.properties instead"
        )
    return _render(spec, name, "properties", hub), "s3"


def _read_upload(path: str) -> bytes:
    """A file to upload beside serving.properties: through the one bounded reader (a FIFO with no
    writer, /dev/zero, a huge file or a directory is refused at once), and text, as the container
    reads model.py and requirements.txt."""
    data = read_bounded(path, shown=f"--file {path}")
    if b"\0" in data:
        offset = data.index(b"\0")
        raise InputError(
            f"--file {path}: is a binary file (a NUL byte at offset {offset}); --file uploads "
            "text files read by the container (model.py, requirements.txt); put weights in the model's "
            "own S3 location"
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(
            f"--file {path}: is not UTF-8 text (byte {error.start}); --file uploads text files "
            "(model.py, requirements.txt)"
        ) from None
    return data


def planned_files(paths: tuple[str, ...], rendered_text: str, bucket_prefix: str) -> list[PlannedFile]:
    planned = [PlannedFile(PROPERTIES_FILE, bucket_prefix + PROPERTIES_FILE, rendered_text.encode("utf-8"))]
    for path in paths:
        data = _read_upload(path)
        file = Path(path)
        if file.name == PROPERTIES_FILE or any(item.name == file.name for item in planned):
            raise SpecError(f"--file {path}: {file.name} is already uploaded; give each file once")
        planned.append(PlannedFile(file.name, bucket_prefix + file.name, data))
    return planned


def split_s3(uri: str) -> tuple[str, str]:
    match = _S3_URI.match(uri.strip())
    if match is None:
        raise SpecError(
            f"--s3-prefix {uri!r}: write s3://BUCKET/PREFIX (a bucket name of 3-63 lower-case characters)"
        )
    prefix = (match.group("prefix") or "").strip("/")
    return match.group("bucket"), f"{prefix}/" if prefix else ""


def _requested_tag(spec: Spec) -> str | None:
    """The spec's lmi_version when it is an image tag the table knows (then exactly that image)."""
    text = (spec.lmi_version or "").strip().rsplit(":", 1)[-1]
    return text if any(image.tag == text for image in images()) else None


def image_for(spec: Spec, rendered: Rendered, region: str, image_uri: str | None) -> ImageChoice:
    """The image for a rendered configuration (its backend, instance and release) in the region."""
    target = dict(rendered.target)
    backend = resolve_backend(target["backend"])
    release = parse_lmi_version(target["lmi_version"])
    return choose_image(
        backend=backend.id,
        instance=resolve_instance(target["instance"]),
        region=region,
        djl_version=release.djl,
        lmi_version=release.lmi,
        release_label=release.label(),
        requested_tag=_requested_tag(spec),
        image_uri=image_uri,
    )
