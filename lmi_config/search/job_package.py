"""The lmi-config a SageMaker search job installs: the coordinator's own code, as a source archive.

A job runs the same ``search`` code as the coordinator, so it must get the same lmi-config — not
whatever an index offers under that version (the package need not be published at all). The
coordinator packs the ``lmi_config`` package it runs from (data and templates included) with a
generated ``pyproject.toml`` that declares the installed distribution's own requirements plus boto3,
uploads it under the search's S3 prefix (named by its content digest, so an unchanged package is
uploaded once and two versions never collide), and gives it to the job as an input channel that
SageMaker copies to ``/opt/ml/input/data/code/`` before the entry point runs ``pip install`` on it.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from lmi_config import __version__
from lmi_config.errors import InputError

CHANNEL = "code"
CHANNEL_DIRECTORY = f"/opt/ml/input/data/{CHANNEL}"
DISTRIBUTION = "lmi-config"
_SKIPPED = ("__pycache__",)


@dataclass(frozen=True)
class JobPackage:
    """The archive a job installs, and its name (``lmi-config-0.1.0-<digest>.tar.gz``)."""

    name: str
    data: bytes

    @property
    def job_path(self) -> str:
        """Where the job finds it: the channel's directory."""
        return f"{CHANNEL_DIRECTORY}/{self.name}"


def _requirements() -> list[str]:
    """The installed distribution's own requirements (no extras) and boto3 (the ``aws`` extra)."""
    from importlib import metadata

    try:
        declared = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        raise InputError(
            "search --on sagemaker packs the installed lmi-config for its jobs, and this one is not installed "
            "as a distribution: install it with pip (pip install -e . in a checkout)"
        ) from None
    base = [line for line in declared if "extra ==" not in line]
    aws = [line.split(";")[0].strip() for line in declared if 'extra == "aws"' in line]
    return sorted(set(base + aws))


def _pyproject(requirements: list[str]) -> str:
    quoted = ", ".join(f'"{line}"' for line in requirements)
    return (
        '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{DISTRIBUTION}"\nversion = "{__version__}"\nrequires-python = ">=3.11"\n'
        f"dependencies = [{quoted}]\n\n"
        '[project.scripts]\nlmi-config = "lmi_config.cli:main"\n\n'
        '[tool.setuptools.packages.find]\ninclude = ["lmi_config*"]\n\n'
        '[tool.setuptools.package-data]\nlmi_config = ["data/*.json", "templates/*.j2"]\n'
    )


def _files(package: Path) -> list[tuple[str, bytes]]:
    """Every file of the package (symbolic links read through), in a fixed order."""
    found = []
    for directory, subdirectories, names in os.walk(package, followlinks=True):  # templates/ is a link
        subdirectories[:] = sorted(name for name in subdirectories if name not in _SKIPPED)
        for name in sorted(names):
            path = Path(directory) / name
            if path.suffix != ".pyc" and path.is_file():
                found.append((path.relative_to(package.parent).as_posix(), path.read_bytes()))
    return sorted(found)


def _archive(members: list[tuple[str, bytes]]) -> bytes:
    """A gzip tar of ``members`` that depends only on their names and bytes (no times, owners)."""
    buffer = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as archive,
    ):
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@cache
def job_package() -> JobPackage:
    """The coordinator's lmi-config as a source archive a job can ``pip install``."""
    import lmi_config

    root = f"{DISTRIBUTION}-{__version__}"
    package = Path(lmi_config.__file__).resolve().parent
    members = [(f"{root}/pyproject.toml", _pyproject(_requirements()).encode())]
    members += [(f"{root}/{name}", data) for name, data in _files(package)]
    data = _archive(members)
    digest = hashlib.sha256(data).hexdigest()[:12]
    return JobPackage(f"{root}-{digest}.tar.gz", data)
