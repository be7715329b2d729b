"""Shared test helpers: paths to the shared reference data and a CLI runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("LMI_CONFIG_SHARED", ROOT.parent / "shared"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def shared_path(*parts: str) -> Path:
    """A file under ../shared; the suite needs it (CI checks out shared/ beside the repo)."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.fail(f"{path} is missing: the tests read the shared reference data from ../shared")
    return path


def load_shared_json(*parts: str) -> object:
    return json.loads(shared_path(*parts).read_text(encoding="utf-8"))


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: str, stdin: bytes | None = None, cwd: Path | None = None) -> CliResult:
    """Run the real console entry point in a fresh interpreter."""
    completed = subprocess.run(
        [sys.executable, "-m", "lmi_config", *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        cwd=cwd,
        timeout=120,
    )
    return CliResult(
        completed.returncode,
        completed.stdout.decode("utf-8", "replace"),
        completed.stderr.decode("utf-8", "replace"),
    )


def sarif_file(run: dict[str, object], artifact_location: dict[str, str]) -> Path:
    """The file a SARIF ``artifactLocation`` names, as a code-scanning tool finds it: its URI
    resolved against its ``uriBaseId`` in the run's ``originalUriBaseIds`` (RFC 3986), then
    percent-decoded (to bytes: a name need not be UTF-8); a URI with a query or a fragment names
    no file and fails here."""
    from urllib.parse import unquote_to_bytes, urljoin, urlsplit

    uri = artifact_location["uri"]
    if "uriBaseId" in artifact_location:
        bases = run["originalUriBaseIds"]
        assert isinstance(bases, dict)
        uri = urljoin(bases[artifact_location["uriBaseId"]]["uri"], uri)
    parts = urlsplit(uri)
    assert parts.scheme == "file" and not parts.query and not parts.fragment, uri
    return Path(os.fsdecode(unquote_to_bytes(parts.path)))


@contextmanager
def moto_server(*patches: tuple[object, str, object]) -> Iterator[str]:
    """moto's real HTTP server on 127.0.0.1 (a free port), with ``(target, name, replacement)``
    stand-ins for what moto lacks applied while it runs; yields its URL."""
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer

    patch = pytest.MonkeyPatch()
    for target, name, replacement in patches:
        patch.setattr(target, name, replacement, raising=False)
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        moto.stop()
        patch.undo()
