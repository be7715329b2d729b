"""Reading a file of measured rows (the perf_measurements.json format: ``{"rows": [...]}`` or a bare
list): the edge where the fit script and the accuracy benchmark meet user input. Every failure is a
``ValueError`` naming the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lmi_config.configfile.text import MAX_JSON_DEPTH, json_nesting_depth, shorten
from lmi_config.io import InputError, read_bounded

MAX_FILE_BYTES = 64 * 1024 * 1024  # a measurements file is data, larger than a config (0.9 MB today)


def read_measurements(path: Path) -> list[Any]:
    """The rows of one file; ValueError naming the file when it is not in the format."""
    return parse_measurements(read_measurement_bytes(path), path)


def read_measurement_bytes(path: Path) -> bytes:
    """The bytes of a measurements file, through the bounded reader."""
    try:
        return read_bounded(path, limit_bytes=MAX_FILE_BYTES)
    except InputError as error:
        raise ValueError(f"cannot read the measurements: {error}") from None


def parse_measurements(raw: bytes, path: Path) -> list[Any]:
    """The rows in the bytes of a measurements file (``path`` names it in errors)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{path}: cannot read the measurements (not UTF-8 text at byte {error.start})"
        ) from None
    depth = json_nesting_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise ValueError(
            f"{path}: the measurements are nested {depth} levels deep (at most {MAX_JSON_DEPTH})"
        )
    try:
        document = json.loads(text)
    except ValueError as error:  # JSONDecodeError, or an integer of more than 4300 digits
        raise ValueError(f"{path}: cannot read the measurements ({shorten(str(error), 200)})") from None
    rows = document.get("rows") if isinstance(document, dict) else document
    if not isinstance(rows, list):
        raise ValueError(f"{path}: expected a JSON list of rows or an object with a 'rows' list")
    return rows
