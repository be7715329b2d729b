"""Find and read configuration files: what to lint, and in which pairs.

A directory is searched for ``serving.properties``, ``*.properties``, ``.env`` and ``*.env``
(and ``*.json`` only when named explicitly). ``serving.properties`` and the env files beside
it form one unit, the pair the container would see.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lmi_config.configfile.envfile import EnvDocument, parse_env_json, parse_env_text
from lmi_config.configfile.properties import (
    PropertiesDocument,
    decode_properties_bytes,
    parse_properties,
)
from lmi_config.errors import InputError as InputError

MAX_FILE_BYTES = 4 * 1024 * 1024
_SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache"}


@dataclass
class SourceFile:
    """One file (or stdin) read as text and parsed."""

    path: str  # as shown to the user
    kind: str  # properties | env | json
    text: str
    raw: bytes
    directory: Path | None  # where model artifacts would sit, None for stdin
    properties: PropertiesDocument | None = None
    env: EnvDocument | None = None

    def assignments(self) -> list[tuple[str, str, int | None]]:
        """Every ``(key or variable name, value, line)`` as written, in file order."""
        if self.properties is not None:
            return [(entry.key, entry.value, entry.line) for entry in self.properties.entries]
        if self.env is not None:
            return [(entry.name, entry.value, entry.line) for entry in self.env.entries]
        return []

    @property
    def comments(self) -> list[tuple[str, int]]:
        if self.properties is not None:
            return [(comment.text, comment.line) for comment in self.properties.comments]
        if self.env is not None:
            return self.env.comments
        return []


@dataclass
class LintTarget:
    """The files the container would read together."""

    sources: list[SourceFile] = field(default_factory=list)

    @property
    def primary(self) -> SourceFile:
        return self.sources[0]


def detect_kind(name: str, text: str) -> str:
    """Decide how to read a file from its name, else from its first meaningful line."""
    lower = name.lower()
    if lower.endswith(".properties"):
        return "properties"
    if lower.endswith(".json"):
        return "json"
    if lower == ".env" or lower.endswith(".env") or lower.startswith(".env."):
        return "env"
    stripped = text.lstrip()
    if stripped.startswith("{"):
        return "json"
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        if re.match(r"(export\s+)?[A-Z][A-Z0-9_]*\s*=", line):
            return "env"
        return "properties"
    return "properties"


def parse_source(path: str, raw: bytes, directory: Path | None, kind: str | None = None) -> SourceFile:
    """Parse bytes into a :class:`SourceFile`; refuses binary data with :class:`InputError`."""
    if b"\x00" in raw[:8192]:
        raise InputError(
            f"{path}: binary file (contains NUL bytes); give a serving.properties, env or JSON file"
        )
    if kind is None:
        kind = detect_kind(os.path.basename(path), raw[:4096].decode("latin-1"))
    if kind == "properties":
        text = decode_properties_bytes(raw)
        return SourceFile(path, kind, text, raw, directory, properties=parse_properties(text))
    text = raw.decode("utf-8", errors="replace")
    document = parse_env_json(text) if kind == "json" else parse_env_text(text)
    return SourceFile(path, kind, text, raw, directory, env=document)


def read_file(path: Path, display: str | None = None, kind: str | None = None) -> SourceFile:
    """Read and parse one file; every failure becomes an :class:`InputError` with the path."""
    shown = display or str(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise InputError(
                f"{shown}: file is {size} bytes; a configuration is at most {MAX_FILE_BYTES} bytes"
            )
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{shown}: no such file or directory") from None
    except IsADirectoryError:
        raise InputError(f"{shown}: is a directory") from None
    except PermissionError:
        raise InputError(f"{shown}: permission denied (cannot read the file)") from None
    except OSError as error:
        raise InputError(f"{shown}: cannot read: {error.strerror or error}") from None
    return parse_source(shown, raw, path.parent, kind)


def _is_config_name(name: str) -> bool:
    lower = name.lower()
    return lower.endswith(".properties") or lower == ".env" or lower.endswith(".env")


def _walk(root: Path, excluded: Callable[[str], bool]) -> list[Path]:
    found: list[Path] = []
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = sorted(
            d for d in subdirectories if d not in _SKIP_DIRS and not excluded(os.path.join(directory, d))
        )
        found.extend(
            Path(directory) / name
            for name in sorted(files)
            if _is_config_name(name) and not excluded(os.path.join(directory, name))
        )
    return found


def _never(_: str) -> bool:
    return False


def collect_targets(
    paths: list[str],
    env_files: list[str] | None = None,
    excluded: Callable[[str], bool] | None = None,
    *,
    named_excluded: Callable[[str], bool] | None = None,
) -> list[LintTarget]:
    """Turn command-line paths into lint targets (``-`` is stdin, read by the caller).

    Files named explicitly are linted alone (plus any ``env_files``); in a directory,
    ``serving.properties`` is paired with the env files beside it. Paths for which
    ``excluded`` is true (project settings, ``--exclude``) are skipped in directories, and when
    named explicitly only where ``named_excluded`` says so (ruff's ``--force-exclude``; pre-commit
    passes file names). A directory whose files are all excluded is not an error.
    """
    excluded = excluded or _never
    targets: list[LintTarget] = []
    extra = [read_file(Path(item), item) for item in env_files or []]
    for item in paths:
        path = Path(item)
        if named_excluded is not None and named_excluded(item):
            continue
        if path.is_dir():
            files = _walk(path, excluded)
            if not files and not _walk(path, _never):
                raise InputError(
                    f"{item}: no serving.properties, *.properties, .env or *.env file in this directory"
                )
            targets.extend(_pair_directory_files(files))
        elif path.exists() or item != "-":
            targets.append(LintTarget([read_file(path, item)]))
    for target in targets:
        target.sources.extend(extra)
    return targets


def _pair_directory_files(files: list[Path]) -> list[LintTarget]:
    by_directory: dict[Path, list[Path]] = {}
    for file in files:
        by_directory.setdefault(file.parent, []).append(file)
    targets = []
    for directory in sorted(by_directory):
        members = by_directory[directory]
        main = [f for f in members if f.name == "serving.properties"]
        envs = [f for f in members if f.name.lower().endswith(".env")]
        rest = [f for f in members if f not in main and f not in envs]
        if main:
            targets.append(LintTarget([read_file(main[0])] + [read_file(f) for f in envs]))
        else:
            rest.extend(envs)
        targets.extend(LintTarget([read_file(f)]) for f in sorted(rest))
    return targets
