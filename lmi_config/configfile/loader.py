"""Find and read configuration files: what to lint, and in which pairs.

A directory is searched for ``serving.properties``, ``*.properties``, ``.env`` and ``*.env``
(and ``*.json`` only when named explicitly). ``serving.properties`` and the env files beside
it form one unit, the pair the container would see.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lmi_config.configfile.properties import (
    PropertiesDocument,
    decode_properties_bytes,
    parse_properties,
)
from lmi_config.errors import InputError as InputError
from lmi_config.io import MAX_INPUT_BYTES, read_bounded, special_file_kind

if TYPE_CHECKING:
    from lmi_config.configfile.envfile import EnvDocument

MAX_FILE_BYTES = MAX_INPUT_BYTES
_SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache"}


@dataclass(repr=False, eq=False)
class SourceFile:
    """One file (or stdin) read as text and parsed."""

    path: str  # as shown to the user
    kind: str  # properties | env | json
    text: str
    raw: bytes
    directory: Path | None  # where model artifacts would sit, None for stdin
    properties: PropertiesDocument | None = None
    env: EnvDocument | None = None

    def assignments(self) -> Iterator[tuple[str, str, int | None]]:
        """Every ``(key or variable name, value, line)`` as written, in file order."""
        if self.properties is not None:
            for entry in self.properties.entries:
                yield entry.key, entry.value, entry.line
        elif self.env is not None:
            for env_entry in self.env.entries:
                yield env_entry.name, env_entry.value, env_entry.line

    @property
    def comments(self) -> list[tuple[str, int]]:
        if self.properties is not None:
            return [(comment.text, comment.line) for comment in self.properties.comments]
        if self.env is not None:
            return self.env.comments
        return []


@dataclass(repr=False, eq=False)
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
    position = raw.find(b"\x00")
    if position != -1:
        line = raw.count(b"\n", 0, position) + 1
        raise InputError(
            f"{path}:{line}: binary file (contains a NUL byte); give a serving.properties, env or JSON file"
        )
    if kind is None:
        kind = detect_kind(os.path.basename(path), raw[:4096].decode("latin-1"))
    if kind == "properties":
        text = decode_properties_bytes(raw)
        return SourceFile(path, kind, text, raw, directory, properties=parse_properties(text))
    from lmi_config.configfile.envfile import parse_env_json, parse_env_text  # not for properties

    text = raw.decode("utf-8", errors="replace")
    document = parse_env_json(text) if kind == "json" else parse_env_text(text)
    return SourceFile(path, kind, text, raw, directory, env=document)


def read_file(path: Path, display: str | None = None, kind: str | None = None) -> SourceFile:
    """Read (bounded) and parse one file; every failure becomes an :class:`InputError` with the path."""
    shown = display or str(path)
    return parse_source(shown, read_bounded(path, shown=shown), path.parent, kind)


def _is_config_name(name: str) -> bool:
    lower = name.lower()
    return lower.endswith(".properties") or lower == ".env" or lower.endswith(".env")


@dataclass(repr=False, eq=False)
class Collection:
    """What a set of command-line paths holds: the targets, and the files that could not be used.

    ``problems`` are inputs that could not be read (the run exits 2, after reporting the rest);
    ``notes`` are files left alone on purpose (FIFOs, devices and sockets met in a directory).
    """

    targets: list[LintTarget] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # files that hold no configuration (``relevant``)


def _walk(root: Path, excluded: Callable[[str], bool], found: Collection) -> list[Path]:
    """Configuration files under ``root``; special files are noted, never opened."""
    files: list[Path] = []

    def unreadable(error: OSError) -> None:
        reason = "permission denied" if isinstance(error, PermissionError) else (error.strerror or str(error))
        found.problems.append(
            f"{error.filename}: cannot read the directory ({reason}); its files were not checked"
        )

    for directory, subdirectories, names in os.walk(root, onerror=unreadable):
        subdirectories[:] = sorted(
            d for d in subdirectories if d not in _SKIP_DIRS and not excluded(os.path.join(directory, d))
        )
        for name in subdirectories:
            if os.path.islink(os.path.join(directory, name)):  # os.walk does not follow them (loops)
                found.notes.append(
                    f"{os.path.join(directory, name)}: skipped: a symlink to a directory is not followed"
                )
        for name in sorted(names):
            path = Path(directory) / name
            if not _is_config_name(name) or excluded(str(path)):
                continue
            try:
                mode = os.stat(path).st_mode
            except OSError:
                files.append(path)  # a dangling symlink or a loop: reading it reports why
                continue
            if stat.S_ISREG(mode):
                files.append(path)
            elif not stat.S_ISDIR(mode):
                found.notes.append(
                    f"{path}: skipped: {special_file_kind(mode)}, not read in a directory walk"
                )
    return files


def _never(_: str) -> bool:
    return False


def _is_directory(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):  # a name too long for the system: reading it says so
        return False


def collect(
    paths: list[str],
    env_files: list[str] | None = None,
    excluded: Callable[[str], bool] | None = None,
    *,
    named_excluded: Callable[[str], bool] | None = None,
    relevant: Callable[[SourceFile, bool], bool] | None = None,
) -> Collection:
    """Turn command-line paths into lint targets (``-`` is stdin, read by the caller).

    Files named explicitly are linted alone (plus any ``env_files``); in a directory,
    ``serving.properties`` is paired with the env files beside it. Paths for which
    ``excluded`` is true (project settings, ``--exclude``) are skipped in directories, and when
    named explicitly only where ``named_excluded`` says so (ruff's ``--force-exclude``; pre-commit
    passes file names); a directory whose files are all excluded is not a problem. A file that
    cannot be read is a problem of the collection, not the end of it; an unreadable ``env_files``
    entry raises :class:`InputError` (it would change every target). A file found or named for
    which ``relevant(file, beside_serving_properties)`` is false (not an LMI configuration) is left
    out and listed in ``skipped``; ``env_files`` are always kept (they were given for the container).
    """
    excluded = excluded or _never
    found = Collection()
    extra = [read_file(Path(item), item) for item in env_files or []]
    for item in paths:
        path = Path(item)
        if named_excluded is not None and named_excluded(item):
            continue
        if _is_directory(path):
            problems_before = len(found.problems)
            files = _walk(path, excluded, found)
            if not files and len(found.problems) == problems_before and not _walk(path, _never, Collection()):
                found.problems.append(
                    f"{item}: no serving.properties, *.properties, .env or *.env file in this directory"
                )
            found.targets.extend(_pair_directory_files(files, found))
        elif item != "-":
            try:
                found.targets.append(LintTarget([read_file(path, item)]))
            except InputError as error:
                found.problems.append(str(error))
    if relevant is not None:
        found.targets = _relevant_only(found, relevant)
    for target in found.targets:
        target.sources.extend(extra)
    return found


def _relevant_only(found: Collection, relevant: Callable[[SourceFile, bool], bool]) -> list[LintTarget]:
    """The targets with the files ``relevant`` refuses left out (a target left without its
    first file keeps the others, each alone, as a directory's env files without their
    serving.properties are)."""
    kept: list[LintTarget] = []
    for target in found.targets:
        sources = []
        companion = os.path.basename(target.sources[0].path) == "serving.properties"
        for source in target.sources:
            if relevant(source, companion and source is not target.sources[0]):
                sources.append(source)
            else:
                found.skipped.append(source.path)
        if sources and sources[0] is target.sources[0]:
            kept.append(LintTarget(sources))
        else:
            kept.extend(LintTarget([source]) for source in sources)
    return kept


def _read_into(path: Path, found: Collection) -> SourceFile | None:
    try:
        return read_file(path)
    except InputError as error:
        found.problems.append(str(error))
        return None


def _pair_directory_files(files: list[Path], found: Collection) -> list[LintTarget]:
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
            pair = [_read_into(file, found) for file in main[:1] + envs]
            readable = [source for source in pair if source is not None]
            if pair[0] is not None:
                targets.append(LintTarget(readable))
            else:  # without their serving.properties the env files are still checked, alone
                targets.extend(LintTarget([source]) for source in readable)
        else:
            rest.extend(envs)
        for file in sorted(rest):
            source = _read_into(file, found)
            if source is not None:
                targets.append(LintTarget([source]))
    return targets
