"""The public Python API: what the CLI calls, usable from other tools (and ``plan`` / ``deploy``).

Every function returns a result object and raises only documented errors:
:class:`InputError` (unusable input files), :class:`SpecError` (an unusable spec),
:class:`PlanningError` (nothing fits), :class:`TemplateProblem` (a template that cannot be rendered).
Nothing here prints or writes files; :func:`lmi_config.io.write_output` does that.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lmi_config.configfile.loader import LintTarget, collect, parse_source
from lmi_config.errors import InputError, OutputError, PlanningError, SpecError, TemplateProblem
from lmi_config.lint import LintOptions, LintResult, lint_targets, lint_text

if TYPE_CHECKING:
    from lmi_config.render import Rendered
    from lmi_config.spec import Spec

__all__ = [
    "ConvertResult",
    "ExplainResult",
    "InputError",
    "LintOptions",
    "LintResult",
    "OutputError",
    "PlanningError",
    "Rendered",
    "SpecError",
    "TemplateProblem",
    "convert_path",
    "explain_paths",
    "lint_options",
    "lint_paths",
    "lint_targets",
    "lint_text",
    "render",
]


def lint_options(
    *,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    exclude: list[str] | None = None,
    settings_file: str | None = None,
    isolated: bool = False,
    **target: Any,
) -> LintOptions:
    """Options for a run: the flags (``target`` holds backend, lmi_version, instance, model, hub,
    lnc) over the project settings found from the current directory (or ``settings_file``;
    none with ``isolated``). ``select`` replaces the settings' list; ``ignore`` and ``exclude``
    add to theirs. Raises :class:`InputError` for a bad settings file or an unknown rule name.
    """
    from lmi_config.lint import normalize_rule_names
    from lmi_config.rules import load_rules
    from lmi_config.settings import ProjectSettings, find_settings, load_settings

    if isolated:
        settings = ProjectSettings()
    elif settings_file:
        settings = load_settings(Path(settings_file)) or ProjectSettings(Path(settings_file))
    else:
        settings = find_settings()
    options = LintOptions(
        select=list(select or ()) or list(settings.select),
        ignore=list(settings.ignore) + list(ignore or ()),
        settings=settings,
        exclude=list(exclude or ()),
        **target,
    )
    load_rules()
    try:
        normalize_rule_names(options.select + options.ignore)
    except ValueError as error:
        raise InputError(str(error)) from None
    for entry in settings.per_path:
        try:
            normalize_rule_names(list(entry.values.get("select", [])) + list(entry.values.get("ignore", [])))
        except ValueError as error:
            raise InputError(f"{settings.path}: per-path {entry.pattern!r}: {error}") from None
    return options


def lint_paths(
    paths: list[str],
    options: LintOptions | None = None,
    *,
    env_files: list[str] | None = None,
    stdin_bytes: bytes | None = None,
    stdin_kind: str | None = None,
    exclude: bool = True,
) -> LintResult:
    """Lint files and directories (``-`` reads ``stdin_bytes``).

    A file that cannot be read (missing, binary, too large, a dangling symlink) does not stop the
    run: it is listed in ``result.problems`` and the other files are linted. Raises
    :class:`InputError` for bad options. With ``exclude``, paths the project settings or
    ``options.exclude`` exclude are skipped.
    """
    options = options or LintOptions()
    excluded = options.excluded if exclude else None
    found = collect([path for path in paths if path != "-"], env_files, excluded)
    targets = found.targets
    if "-" in paths:
        raw = stdin_bytes if stdin_bytes is not None else b""
        try:
            targets.insert(paths.index("-"), LintTarget([parse_source("<stdin>", raw, None, stdin_kind)]))
        except InputError as error:
            found.problems.append(str(error))
    result = lint_targets(targets, options)
    result.problems.extend(found.problems)
    result.notes.extend(found.notes)
    return result


def _usable(result: LintResult) -> LintResult:
    """The result of a command that needs every input: the first unreadable one is an error."""
    if result.problems:
        raise InputError("\n".join(result.problems))
    return result


@dataclass
class ExplainResult:
    """One document per configuration unit (what the JSON output prints) and the lint run behind it."""

    documents: list[dict[str, Any]] = field(default_factory=list)
    lint: LintResult = field(default_factory=LintResult)

    @property
    def errors(self) -> int:
        return self.lint.errors


def explain_paths(
    paths: list[str],
    options: LintOptions | None = None,
    *,
    env_files: list[str] | None = None,
    stdin_bytes: bytes | None = None,
) -> ExplainResult:
    """How the container reads each configuration: effective values, shape, memory, verdict."""
    from lmi_config.explain import explain_unit

    result = _usable(lint_paths(paths, options, env_files=env_files, stdin_bytes=stdin_bytes, exclude=False))
    documents = [explain_unit(unit, result.findings_of(unit)) for unit in result.units]
    return ExplainResult(documents, result)


def render(
    spec: Spec,
    *,
    name: str = "spec",
    output_format: str | None = None,
    template_dir: Path | None = None,
    hub: bool = False,
) -> Rendered:
    """Resolve ``auto``, render and lint a spec; nothing is written."""
    from lmi_config.render import render_spec

    return render_spec(spec, name=name, output_format=output_format, template_dir=template_dir, hub=hub)


@dataclass
class ConvertResult:
    """The converted text and what could not be carried over (each a sentence)."""

    text: str
    format: str
    lost: list[str] = field(default_factory=list)


def convert_path(
    path: str, to: str, *, env_files: list[str] | None = None, stdin_bytes: bytes | None = None
) -> ConvertResult:
    """The effective configuration of ``path`` (after precedence) in another form."""
    from lmi_config import __version__
    from lmi_config.convert import convert_unit
    from lmi_config.formats import format_output

    result = _usable(lint_paths([path], LintOptions(), env_files=env_files, stdin_bytes=stdin_bytes))
    items, extra_env, lost = convert_unit(result.units[0], to)
    text, problems = format_output(
        items, to, header=[f"converted by lmi-config {__version__} from {path}"], extra_env=extra_env
    )
    return ConvertResult(text, to, lost + problems)
