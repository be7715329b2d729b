"""Project settings, as ruff and yamllint users expect them: ``.lmi-config.toml`` or a
``[tool.lmi-config]`` table in ``pyproject.toml``, found from the current directory upwards.

```toml
[tool.lmi-config]
select = ["LMI1", "LMI3"]          # rule codes, slugs or prefixes
ignore = ["trailing-whitespace"]
exclude = ["tests/fixtures/*"]     # fnmatch patterns, relative to the settings file

[tool.lmi-config.per-path."deploy/inf2/*"]
instance = "ml.inf2.24xlarge"
backend = "tnx"
lmi-version = "0.30.0"
model = "meta-llama/Llama-3.1-8B-Instruct"
ignore = ["LMI005"]
```

Command-line flags win over the file: ``--select`` replaces ``select``, ``--ignore`` and
``--exclude`` add to theirs, ``--instance`` / ``--backend`` … override the per-path defaults.
"""

import fnmatch
import functools
import os
from pathlib import Path
from typing import Any, NamedTuple

from lmi_config.errors import InputError

SETTINGS_FILES = (".lmi-config.toml", "pyproject.toml")
_LIST_KEYS = ("select", "ignore", "exclude")
_PATH_KEYS = ("instance", "backend", "lmi-version", "model", "ignore", "select")


class PathDefaults(NamedTuple):
    """Defaults for the files a pattern matches (relative to the settings file)."""

    pattern: str
    values: dict[str, Any]


class ProjectSettings(NamedTuple):
    """What a settings file says; empty when there is none."""

    path: Path | None = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    per_path: tuple[PathDefaults, ...] = ()

    @property
    def root(self) -> Path:
        return self.path.parent if self.path is not None else Path.cwd()

    def relative(self, path: str) -> str:
        """``path`` relative to the settings file's directory, with forward slashes."""
        root = _resolved_root(self.root)
        absolute = os.path.abspath(path)
        if absolute == root:
            return "."
        if absolute.startswith(root.rstrip(os.sep) + os.sep):
            return absolute[len(root.rstrip(os.sep)) + 1 :].replace(os.sep, "/")
        return Path(path).as_posix()

    def excluded(self, path: str, extra: tuple[str, ...] = ()) -> bool:
        """Whether a file or directory matches an ``exclude`` pattern (or one of ``extra``).

        A directory that matches is not entered; a directory named explicitly inside it is still
        linted (ruff's behaviour), unless the pattern itself reaches it (``tests/*``).
        """
        if not (self.exclude or extra):
            return False
        return self._matches(self.relative(path), extra)

    def excluded_with_parents(self, path: str, extra: tuple[str, ...] = ()) -> bool:
        """Whether a path or a directory above it is excluded (``--force-exclude`` on named files)."""
        parts = self.relative(path).split("/")
        return any(self._matches("/".join(parts[: index + 1]), extra) for index in range(len(parts)))

    def _matches(self, relative: str, extra: tuple[str, ...]) -> bool:
        return any(fnmatch.fnmatch(relative, pattern.rstrip("/")) for pattern in self.exclude + extra)

    def defaults_for(self, path: str) -> dict[str, Any]:
        """The per-path defaults that apply to a file (later patterns win)."""
        if not self.per_path:
            return {}
        relative = self.relative(path)
        merged: dict[str, Any] = {}
        for entry in self.per_path:
            if fnmatch.fnmatch(relative, entry.pattern):
                merged.update(entry.values)
        return merged


def find_settings(start: Path | None = None) -> ProjectSettings:
    """The nearest settings file from ``start`` (default: the current directory) upwards."""
    directory = (start or Path.cwd()).resolve()
    for folder in (directory, *directory.parents):
        for name in SETTINGS_FILES:
            candidate = folder / name
            if candidate.is_file():
                settings = load_settings(candidate)
                if settings is not None:
                    return settings
    return ProjectSettings()


def load_settings(path: Path) -> ProjectSettings | None:
    """Read a settings file; None for a pyproject.toml without ``[tool.lmi-config]``.

    Raises :class:`InputError` (exit code 2) for a file that is not valid TOML or has unknown keys.
    """
    import tomllib

    from lmi_config.configfile.text import shorten
    from lmi_config.io import read_bounded

    try:
        document = tomllib.loads(read_bounded(path).decode("utf-8"))
    except InputError as error:
        raise InputError(f"cannot read the settings file: {error}") from None
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: cannot read the settings file ({error})") from None
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"{path}: not valid TOML ({error})") from None
    except ValueError as error:  # tomllib's int() of a number past 4,300 digits
        raise InputError(
            f"{path}: a number too long to read ({shorten(str(error), 120)}); the settings take names and patterns"
        ) from None
    table = document.get("tool", {}).get("lmi-config") if path.name == "pyproject.toml" else document
    if table is None:
        return None
    where = f"{path} [tool.lmi-config]" if path.name == "pyproject.toml" else str(path)
    if not isinstance(table, dict):
        raise InputError(f"{where}: expected a table")
    unknown = sorted(set(table) - {*_LIST_KEYS, "per-path"})
    if unknown:
        raise InputError(
            f"{where}: unknown setting {', '.join(unknown)}; the settings are select, ignore, exclude and per-path"
        )
    lists = {key: _string_list(table.get(key, []), f"{where}: {key}") for key in _LIST_KEYS}
    per_path = []
    tables = table.get("per-path") or {}
    if not isinstance(tables, dict):
        raise InputError(f'{where}: per-path: use tables such as [tool.lmi-config.per-path."deploy/*"]')
    for pattern, values in tables.items():
        if not isinstance(values, dict) or set(values) - set(_PATH_KEYS):
            raise InputError(f"{where}: per-path {pattern!r}: use a table of {', '.join(_PATH_KEYS)}")
        per_path.append(PathDefaults(pattern, _path_values(values, f"{where}: per-path {pattern!r}")))
    return ProjectSettings(
        path, tuple(lists["select"]), tuple(lists["ignore"]), tuple(lists["exclude"]), tuple(per_path)
    )


def _path_values(values: dict[str, Any], where: str) -> dict[str, Any]:
    """Per-path defaults with the types the flags they stand for take: lists for select and ignore,
    a string for the others (TOML's ``instance = 5`` would reach the judge as a number)."""
    checked: dict[str, Any] = {}
    for key, value in values.items():
        if key in _LIST_KEYS:
            checked[key] = _string_list(value, f"{where}: {key}")
        elif isinstance(value, str):
            checked[key] = value
        else:
            raise InputError(f'{where}: {key} must be a string, e.g. {key} = "..."')
    return checked


def _string_list(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InputError(f"{where}: expected a list of strings")
    return list(value)


@functools.cache
def _resolved_root(root: Path) -> str:
    return str(root.resolve())
