"""The public Python API: what the CLI calls, usable from other tools (and ``plan`` / ``deploy``).

Every function returns a result object and raises only the errors of :mod:`lmi_config.errors`,
all :class:`LmiConfigError`, each named in the function's docstring: :class:`InputError`
(unusable input files; :class:`InvalidArgument`, one of its kind, for an argument the function
does not take — a wrong type, an unknown name, NaN, a number out of range — naming it and what is
allowed), :class:`SpecError` (an unusable spec), :class:`PlanningError` (nothing fits),
:class:`TemplateProblem` (a template that cannot be rendered), :class:`OutputError` (a file that
cannot be written), :class:`DeployError` (AWS refused a call or the endpoint failed). Any other
exception escaping a function here is a bug.
Nothing here prints, and only the functions named ``write_*``, ``fix_paths``, the searches and
deploys write files; :func:`lmi_config.io.write_output` writes the CLI's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lmi_config import api_requests as requests
from lmi_config import arguments as check
from lmi_config.configfile.loader import LintTarget, collect, parse_source
from lmi_config.errors import (
    DeployError,
    InputError,
    InvalidArgument,
    LmiConfigError,
    OutputError,
    PlanningError,
    SpecError,
    TemplateProblem,
)
from lmi_config.lint import LintOptions, LintResult
from lmi_config.lint import lint_targets as _lint_targets

if TYPE_CHECKING:
    from lmi_config.api_results import ConvertResult, DeletionResult, DeployResult, ExplainResult
    from lmi_config.deploy import DeployPlan, DeployRequest
    from lmi_config.deploy.deletion import DeletionPlan
    from lmi_config.fixes import FixResult
    from lmi_config.plan import PlanRequest, PlanResult
    from lmi_config.render import Rendered
    from lmi_config.search import SearchOptions, SearchResult
    from lmi_config.search.coordinator import CoordinatorResult
    from lmi_config.search.sagemaker_jobs import JobPlan, RemoteRequest
    from lmi_config.search.shard_merge import MergeReport
    from lmi_config.spec import Spec

__all__ = [
    "ConvertResult",
    "DeployError",
    "DeletionResult",
    "DeployResult",
    "ExplainResult",
    "InputError",
    "InvalidArgument",
    "LintOptions",
    "LintResult",
    "LmiConfigError",
    "OutputError",
    "PlanningError",
    "Rendered",
    "SpecError",
    "TemplateProblem",
    "convert_path",
    "delete_endpoint",
    "deploy",
    "deploy_spec",
    "explain_paths",
    "images",
    "lint_options",
    "lint_paths",
    "lint_targets",
    "lint_text",
    "plan",
    "plan_cache_config",
    "write_plan_cache_config",
    "plan_specs",
    "refresh_images",
    "render",
    "merge_search_results",
    "plan_search_jobs",
    "run_search_jobs",
    "search",
    "search_shard",
    "stop_search_jobs",
    "search_job_package_upload",
]

_RESULTS = ("ConvertResult", "DeletionResult", "DeployResult", "ExplainResult")


def __getattr__(name: str) -> Any:
    """The result types of explain, convert and deploy, built when first named (``lmi_config.api_results``)."""
    if name in _RESULTS:
        from lmi_config import api_results

        return getattr(api_results, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_RESULTS})


def lint_options(
    *,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    exclude: list[str] | None = None,
    settings_file: str | None = None,
    isolated: bool = False,
    force_exclude: bool = False,
    **target: Any,
) -> LintOptions:
    """Options for a run: the flags (``target`` holds backend, lmi_version, instance, model, hub,
    lnc) over the project settings found from the current directory (or ``settings_file``;
    none with ``isolated``). ``select`` replaces the settings' list; ``ignore`` and ``exclude``
    add to theirs. Raises :class:`InputError` for a bad settings file or an unknown rule name,
    :class:`InvalidArgument` for an argument of the wrong type or an unknown ``target`` field.
    """
    from lmi_config.lint import normalize_rule_names
    from lmi_config.rules import load_rules
    from lmi_config.settings import ProjectSettings, find_settings, load_settings

    for name, value in (("select", select), ("ignore", ignore), ("exclude", exclude)):
        check.optional_texts(name, value, empty=False)
    check.optional_text("settings_file", settings_file, empty=False)
    check.flag("isolated", isolated)
    check.flag("force_exclude", force_exclude)
    check.known_fields("lint_options", target, _TARGET_FIELDS)
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
        force_exclude=force_exclude,
        **target,
    )
    requests.lint_options("lint_options", options)
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


# the target options of a lint run (lint_options' **target, the flags of lmi-config lint)
_TARGET_FIELDS = ("backend", "lmi_version", "instance", "model", "hub", "lnc")
_KINDS = ("properties", "env", "json")  # what a configuration file is read as


def lint_text(
    text: str,
    kind: str = "properties",
    options: LintOptions | None = None,
    *,
    name: str = "<text>",
    directory: Path | None = None,
    env: str | None = None,
    instance: str | None = None,
    model: str | None = None,
    backend: str | None = None,
    lmi_version: str | None = None,
    hub: bool | None = None,
    lnc: int | None = None,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
) -> LintResult:
    """Lint configuration text held in memory, with the target options of ``lmi-config lint``.

    ``kind`` is properties, env or json; ``env`` is the text of an env file the container sees
    together with it (``--env``); ``instance``, ``model``, ``backend``, ``lmi_version`` (a version,
    ``v12`` or an image tag), ``hub`` and ``lnc`` are the CLI's flags and win over ``options``.
    Findings carry their judged fix (``finding.fix``). Raises :class:`InputError` for bad options
    or text that cannot be read as ``kind``, :class:`InvalidArgument` for an argument of the wrong
    type or value.
    """
    check.text("text", text, nul=True)
    check.choice("kind", kind, _KINDS)
    requests.optional_lint_options("options", options)
    check.text("name", name, empty=False, nul=True)
    check.optional_path("directory", directory)
    if env is not None:
        check.text("env", env, nul=True)
    for argument, value in (
        ("instance", instance),
        ("model", model),
        ("backend", backend),
        ("lmi_version", lmi_version),
    ):
        check.optional_text(argument, value, empty=False)
    check.optional_flag("hub", hub)
    check.optional_count("lnc", lnc, minimum=1, maximum=2)
    check.optional_texts("select", select, empty=False)
    check.optional_texts("ignore", ignore, empty=False)
    given: dict[str, Any] = {
        "instance": instance,
        "model": model,
        "backend": backend,
        "lmi_version": lmi_version,
        "hub": hub,
        "lnc": lnc,
        "select": list(select) if select is not None else None,
        "ignore": list(ignore) if ignore is not None else None,
    }
    options = replace(
        options or LintOptions(), **{key: value for key, value in given.items() if value is not None}
    )
    load_rules_checked(options)
    sources = [parse_source(name, text.encode("utf-8", errors="surrogatepass"), directory, kind)]
    if env is not None:
        sources.append(
            parse_source(f"{name} (env)", env.encode("utf-8", errors="surrogatepass"), directory, "env")
        )
    return lint_targets([LintTarget(sources)], options)


def load_rules_checked(options: LintOptions) -> None:
    """Load the rules and refuse unknown rule names in ``options`` with :class:`InputError`
    (:class:`InvalidArgument` for options that are not a :class:`LintOptions` of usable fields)."""
    from lmi_config.lint import normalize_rule_names
    from lmi_config.rules import load_rules

    requests.lint_options("options", options)
    load_rules()
    try:
        normalize_rule_names(options.select + options.ignore)
    except ValueError as error:
        raise InputError(str(error)) from None


def lint_targets(targets: list[LintTarget], options: LintOptions | None = None) -> LintResult:
    """Lint configuration units already read (each a :class:`LintTarget` of its sources); raises
    :class:`InputError` for unknown rule names in ``options``, :class:`InvalidArgument` for
    arguments of the wrong type."""
    if isinstance(targets, str | bytes) or not isinstance(targets, list | tuple):
        raise InvalidArgument(
            f"targets: {check.shown(targets)} is not allowed; expected a list of LintTarget"
        )
    for position, target in enumerate(targets):
        check.instance_of(f"targets[{position}]", target, LintTarget, "a LintTarget")
    if options is not None:
        load_rules_checked(options)
    return _lint_targets(list(targets), options)


def lint_paths(
    paths: list[str],
    options: LintOptions | None = None,
    *,
    env_files: list[str] | None = None,
    stdin_bytes: bytes | None = None,
    stdin_kind: str | None = None,
    exclude: bool = True,
    lmi_only: bool = True,
) -> LintResult:
    """Lint files and directories (``-`` reads ``stdin_bytes``).

    A file that cannot be read (missing, binary, too large, a dangling symlink) does not stop the
    run: it is listed in ``result.problems`` and the other files are linted. Raises
    :class:`InputError` for bad options, :class:`InvalidArgument` for an argument of the wrong type
    or value. With ``exclude``, paths the project settings or ``options.exclude`` exclude are skipped;
    with ``lmi_only``, files that hold no LMI configuration (:mod:`lmi_config.relevance`) are left
    out, with one note naming them.
    """
    check.texts("paths", paths, empty=False)
    requests.optional_lint_options("options", options)
    check.optional_texts("env_files", env_files, empty=False)
    check.optional_bytes("stdin_bytes", stdin_bytes)
    check.optional_choice("stdin_kind", stdin_kind, _KINDS)
    check.flag("exclude", exclude)
    check.flag("lmi_only", lmi_only)
    options = options or LintOptions()
    excluded = options.excluded if exclude else None
    from lmi_config.relevance import holds_lmi_configuration, skipped_note

    found = collect(
        [path for path in paths if path != "-"],
        env_files,
        excluded,
        named_excluded=options.force_excluded if exclude else None,
        relevant=holds_lmi_configuration if lmi_only else None,
    )
    if found.skipped:
        found.notes.append(skipped_note(found.skipped))
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


def fix_paths(
    paths: list[str],
    options: LintOptions | None = None,
    *,
    env_files: list[str] | None = None,
    unsafe: bool = False,
    write: bool = True,
) -> FixResult:
    """Apply the judged fixes to files (``write``) or only compute them (a diff); see :mod:`lmi_config.fixes`.

    The files are written by :func:`lmi_config.io.write_files`: links are followed to their target,
    a read-only file is refused, and a file changed since it was read is left as it is. Raises
    :class:`OutputError` (a :class:`lmi_config.io.BatchWriteError` naming the files changed and not
    changed) when a file cannot be written, :class:`InputError` for bad options.
    """
    from lmi_config.fixes import fix_to_fixed_point
    from lmi_config.io import PendingWrite, write_files

    check.texts("paths", paths, empty=False)
    requests.optional_lint_options("options", options)
    check.optional_texts("env_files", env_files, empty=False)
    check.flag("unsafe", unsafe)
    check.flag("write", write)
    if "-" in paths and write:
        raise InvalidArgument("paths: fixes cannot be written to standard input ('-'); name the file")
    # every finding is judged and fixed: the text output's cap of findings per rule is for reading
    options = replace(options or LintOptions(), max_findings=0)
    result = lint_paths([path for path in paths if path != "-"], options, env_files=env_files)
    outcome = fix_to_fixed_point(result, options, unsafe)
    if write and outcome.changed:
        outcome.written = write_files(
            [PendingWrite(path, outcome.read[path], text) for path, (_, text) in outcome.changed.items()]
        )
    return outcome


def write_rule_pages(output_dir: str, rules: tuple[Any, ...] | None = None) -> int:
    """One Markdown page per rule and an index (README.md) in ``output_dir``; returns the files written.
    :class:`OutputError` when ``output_dir`` is not a directory or a page cannot be written;
    :class:`InvalidArgument` for an argument of the wrong type."""
    import os

    from lmi_config.io import write_output
    from lmi_config.report.rule_pages import page_name, rule_page, rules_index
    from lmi_config.rules import load_rules
    from lmi_config.rules.base import Rule

    check.path("output_dir", output_dir)
    if rules is not None and (
        not isinstance(rules, tuple | list) or not all(isinstance(item, Rule) for item in rules)
    ):
        raise InvalidArgument(
            f"rules: {check.shown(rules)} is not allowed; expected a tuple of rules or None"
        )
    if not os.path.isdir(output_dir):
        raise OutputError(f"--output-dir {output_dir}: not a directory; create it first")
    rules = tuple(rules) if rules is not None else load_rules()
    for item in rules:
        write_output(os.path.join(output_dir, page_name(item)), rule_page(item))
    write_output(os.path.join(output_dir, "README.md"), rules_index(rules))
    return len(rules) + 1


def write_baseline(result: LintResult, path: str) -> int:
    """Record every finding of ``result`` in a baseline file (written atomically); returns how many.
    :class:`OutputError` when the file cannot be written; :class:`InvalidArgument` for an argument
    of the wrong type."""
    from lmi_config.baseline import baseline_document
    from lmi_config.io import write_output

    check.instance_of("result", result, LintResult, "expected the LintResult of lint_paths")
    check.text("path", path, empty=False)
    write_output(path, baseline_document(result.findings, Path(path)))
    return len(result.findings)


def apply_baseline(result: LintResult, path: str) -> int:
    """Keep only the findings the baseline file does not hold; returns how many it held.
    :class:`InputError` naming the file for one that is not a baseline; :class:`InvalidArgument`
    for an argument of the wrong type."""
    from lmi_config.baseline import load_baseline, new_findings

    check.instance_of("result", result, LintResult, "expected the LintResult of lint_paths")
    check.text("path", path, empty=False)
    result.findings, held = new_findings(result.findings, load_baseline(path), path)
    return held


def _usable(result: LintResult) -> LintResult:
    """The result of a command that needs every input: the first unreadable one is an error."""
    if result.problems:
        raise InputError("\n".join(result.problems))
    return result


def explain_paths(
    paths: list[str],
    options: LintOptions | None = None,
    *,
    env_files: list[str] | None = None,
    stdin_bytes: bytes | None = None,
    workload: dict[str, Any] | None = None,
) -> ExplainResult:
    """How the container reads each configuration: effective values, shape, memory, verdict, and the
    predicted performance under ``workload`` (``input_tokens``, ``output_tokens``, ``concurrency`` or
    ``request_rate``; plan's defaults for what is not given). Raises :class:`InputError` for a file
    that cannot be read or a workload no prediction means anything for (:class:`InvalidArgument`:
    NaN, a negative or huge count, an unknown field, an argument of the wrong type)."""
    from lmi_config.explain import explain_unit
    from lmi_config.plan.workload import PlanWorkload

    if workload is not None:
        check.instance_of(
            "workload", workload, dict, "a dict of input_tokens, output_tokens, concurrency, request_rate"
        )
        check.known_fields("workload", workload, _EXPLAIN_WORKLOAD)
    chosen = PlanWorkload(**(workload or {}))
    result = _usable(lint_paths(paths, options, env_files=env_files, stdin_bytes=stdin_bytes, exclude=False))
    documents = [explain_unit(unit, result.findings_of(unit), chosen) for unit in result.units]
    from lmi_config.api_results import ExplainResult

    return ExplainResult(documents, result)


_EXPLAIN_WORKLOAD = ("input_tokens", "output_tokens", "concurrency", "request_rate")


def render(
    spec: Spec,
    *,
    name: str = "spec",
    output_format: str | None = None,
    template_dir: Path | None = None,
    hub: bool = False,
) -> Rendered:
    """Resolve ``auto``, render and lint a spec; nothing is written. Raises :class:`SpecError` for
    an unusable spec, :class:`PlanningError` when no ``auto`` value fits, :class:`TemplateProblem`
    for a template that cannot be rendered, :class:`InputError` for a workload no prediction means
    anything for, :class:`InvalidArgument` for an argument of the wrong type or value."""
    from lmi_config.formats import FORMATS
    from lmi_config.render import render_spec
    from lmi_config.spec import Spec

    check.instance_of("spec", spec, Spec, "a Spec (lmi_config.spec.load_spec or build_spec)")
    check.text("name", name, empty=False, nul=True)
    check.optional_choice("output_format", output_format, FORMATS)
    check.optional_path("template_dir", template_dir)
    check.flag("hub", hub)
    return render_spec(spec, name=name, output_format=output_format, template_dir=template_dir, hub=hub)


def convert_path(
    path: str,
    to: str,
    *,
    env_files: list[str] | None = None,
    stdin_bytes: bytes | None = None,
    keep_credentials: bool = False,
) -> ConvertResult:
    """The effective configuration of ``path`` (after precedence) in another form (``to``:
    properties, env or json).

    Credentials are copied only with ``keep_credentials`` (the output is a file the user named);
    raises :class:`InputError` for a file that cannot be read or a value the target format cannot
    carry (lmi_config.escaping), :class:`TemplateProblem` for a template that cannot be rendered,
    :class:`InvalidArgument` for an unknown format or an argument of the wrong type.
    """
    from lmi_config import __version__
    from lmi_config.convert import convert_unit, credentials_kept, refused_value
    from lmi_config.escaping import ValueNotCarried
    from lmi_config.formats import FORMATS, format_output

    check.text("path", path, empty=False)
    check.choice("to", to, FORMATS)
    check.flag("keep_credentials", keep_credentials)
    # the file named is converted whatever it holds: no file is left out as no LMI configuration
    result = _usable(
        lint_paths([path], LintOptions(), env_files=env_files, stdin_bytes=stdin_bytes, lmi_only=False)
    )
    if not result.units:
        raise InputError(
            f"{path}: no configuration file to convert; name a serving.properties, env or JSON file"
        )
    unit = result.units[0]
    items, extra_env, lost = convert_unit(unit, to, keep_credentials=keep_credentials)
    try:
        text, problems = format_output(
            items, to, header=[f"converted by lmi-config {__version__} from {path}"], extra_env=extra_env
        )
    except ValueNotCarried as error:
        raise InputError(refused_value(unit, error)) from None
    from lmi_config.api_results import ConvertResult

    return ConvertResult(text, to, lost + problems, credentials_kept(items, extra_env))


def deploy(
    spec: Spec,
    request: DeployRequest,
    *,
    name: str = "spec",
    hub: bool = False,
    dry_run: bool = False,
    show: Callable[[DeployPlan], None] | None = None,
    confirm: Callable[[DeployPlan], bool] | None = None,
    progress: Callable[[str, bool], None] | None = None,
) -> DeployResult:
    """Render, plan and (unless ``dry_run``) create the endpoint.

    The spec's ``deploy`` section carries the production options (VPC, network isolation, KMS keys,
    data capture, async, scaling, inference components, blue/green updates); :func:`deploy_spec`
    takes them as arguments. With ``request.update`` the plan's ``preview`` says what stays, what
    is replaced and what the shift costs (read with describe calls, also in a dry run).

    ``show`` receives the plan before anything is called; ``confirm`` may decline it;
    ``progress`` receives (message, transient) while the calls run. A dry run, a refused
    configuration or a declined plan calls no AWS API. Raises :class:`SpecError` for a refusal
    before any call (limits, image, sizing), :class:`PlanningError` when nothing fits,
    :class:`InvalidArgument` for an argument of the wrong type or value (before any call), and
    :class:`DeployError` when AWS refuses to start (existing name, bucket, credentials); a
    failure after resources were created is in ``outcome`` (they have been removed).
    """
    from lmi_config.deploy import build_plan, execute, resolve_region
    from lmi_config.deploy.sdk import discover_role
    from lmi_config.spec import Spec

    check.instance_of("spec", spec, Spec, "a Spec (lmi_config.spec.load_spec or build_spec)")
    requests.deploy_request(request)
    check.text("name", name, empty=False, nul=True)
    check.flag("hub", hub)
    check.flag("dry_run", dry_run)
    for argument, value in (("show", show), ("confirm", confirm), ("progress", progress)):
        check.optional_callback(argument, value)
    if not dry_run and request.role is None:
        request = replace(request, role=discover_role(resolve_region(request.region)))
    plan = build_plan(spec, request, name=name, hub=hub)
    if request.update and not plan.blocking:
        from lmi_config.deploy.aws import Clients
        from lmi_config.deploy.update import preview_update

        # reads only (describe calls): what stays, what is replaced, what the shift costs
        clients = Clients(plan.region, request.endpoint_url, attempts=2)
        plan.preview = preview_update(plan, clients, spec.deploy.update if spec.deploy else None)
    if show is not None:
        show(plan)
    from lmi_config.api_results import DeployResult

    result = DeployResult(plan)
    if dry_run or plan.blocking:
        return result
    if confirm is not None and not confirm(plan):
        result.declined = True
        return result
    result.outcome = execute(
        plan,
        progress or (lambda message, transient: None),
        endpoint_url=request.endpoint_url,
        wait=request.wait,
        keep_on_failure=request.keep_on_failure,
    )
    return result


def deploy_spec(
    spec: Spec | str | Path,
    request: DeployRequest | None = None,
    *,
    settings: dict[str, Any] | None = None,
    hub: bool = False,
    dry_run: bool = False,
    show: Callable[[DeployPlan], None] | None = None,
    confirm: Callable[[DeployPlan], bool] | None = None,
    progress: Callable[[str, bool], None] | None = None,
) -> DeployResult:
    """:func:`deploy` for a spec file (or a :class:`Spec`), with the production options as arguments.

    ``settings`` maps keys of the spec's ``deploy`` section to values, over the spec's own
    (``{"network.subnets": ["subnet-1", "subnet-2"], "network.isolation": True, "async.output":
    "s3://b/out/", "update.traffic": "canary"}``; the keys are ``lmi-config schema``'s). Raises what
    :func:`deploy` raises; :class:`SpecError` names the key of a bad setting, :class:`InvalidArgument`
    an argument of the wrong type.
    """
    from lmi_config.deploy import DeployRequest
    from lmi_config.spec import Spec, load_spec, with_deploy_settings

    if isinstance(spec, str | Path):
        check.text("spec", str(spec), empty=False, nul=True)
        name = str(spec)
        loaded = load_spec(Path(spec))
    else:
        check.instance_of("spec", spec, Spec, "a Spec, or the path of a spec file")
        name, loaded = "spec", spec
    if settings is not None:
        if not isinstance(settings, dict) or not all(isinstance(key, str) for key in settings):
            raise InvalidArgument(
                f"settings: {type(settings).__name__} is not allowed; expected a dict of deploy keys to values"
            )
        loaded = with_deploy_settings(
            loaded, dict(settings), {key: f"settings[{key!r}]" for key in settings}, name
        )
    return deploy(
        loaded,
        request or DeployRequest(),
        name=name,
        hub=hub,
        dry_run=dry_run,
        show=show,
        confirm=confirm,
        progress=progress,
    )


def delete_endpoint(
    endpoint_name: str,
    *,
    region: str | None = None,
    endpoint_url: str | None = None,
    purge_s3: bool = False,
    dry_run: bool = False,
    show: Callable[[DeletionPlan], None] | None = None,
    confirm: Callable[[DeletionPlan], bool] | None = None,
    progress: Callable[[str, bool], None] | None = None,
) -> DeletionResult:
    """Remove an endpoint with its config, models and scaling target (``purge_s3``: the objects
    under its models' own S3 prefixes) — only what lmi-config created and nothing else uses; the
    rest is kept and named in the plan. Models and configs an interrupted run made for
    ``endpoint_name`` (tagged ``lmi-config:endpoint``) are found without the endpoint.

    ``show`` receives the plan before anything is removed; ``confirm`` may decline it. Raises
    :class:`SpecError` for a name SageMaker cannot have, :class:`InvalidArgument` for an argument
    of the wrong type (before any call), :class:`DeployError` when nothing by that name exists or
    AWS cannot say what uses what.
    """
    from lmi_config.deploy import resolve_region
    from lmi_config.deploy.aws import Clients
    from lmi_config.deploy.cleanup import carry_out
    from lmi_config.deploy.deletion import check_name, plan_deletion

    check.text("endpoint_name", endpoint_name)
    check.optional_text("region", region, empty=False)
    check.optional_text("endpoint_url", endpoint_url, empty=False)
    check.flag("purge_s3", purge_s3)
    check.flag("dry_run", dry_run)
    for argument, value in (("show", show), ("confirm", confirm), ("progress", progress)):
        check.optional_callback(argument, value)
    check_name(endpoint_name)
    clients = Clients(resolve_region(region), endpoint_url)
    from lmi_config.api_results import DeletionResult

    result = DeletionResult(plan_deletion(clients, endpoint_name, purge_s3=purge_s3))
    if show is not None:
        show(result.plan)
    if dry_run or not result.plan.remove:
        return result
    if confirm is not None and not confirm(result.plan):
        result.declined = True
        return result
    result.removal = carry_out(clients, result.plan, progress or (lambda message, transient: None))
    return result


def images(*, framework: str | None = None, region: str | None = None) -> list[dict[str, Any]]:
    """The image table as rows (with the URI in ``region`` when it is published there). Raises
    :class:`InputError` for an unknown framework or a region with no LMI registry
    (:class:`InvalidArgument` for one that is not a string)."""
    from lmi_config.knowledge.images import frameworks, registries, repository
    from lmi_config.knowledge.images import images as all_images

    check.optional_text("framework", framework)
    check.optional_text("region", region)
    known = frameworks()
    if framework is not None and framework not in known:
        raise InputError(f"unknown image framework {framework!r}; known: {', '.join(known)}")
    if region is not None and region not in registries():
        raise InputError(f"no LMI image registry is known for region {region!r}")
    rows = []
    for image in all_images():
        if framework is not None and image.framework != framework:
            continue
        available = region is not None and image.tag is not None and region in image.regions
        host = registries()[region].host() if region is not None and available else None
        rows.append(
            {
                "framework": image.framework,
                "accelerator": known[image.framework].accelerator,
                "tag": image.tag,
                "djl_version": image.djl_version,
                "lmi_version": image.lmi_version,
                "backends": list(image.backends),
                "backend_versions": image.backend_versions,
                "published": image.published,
                "sagemaker_sdk_listed": image.sagemaker_sdk_listed,
                "regions": len(image.regions),
                "regions_assumed": image.regions_assumed,
                "regions_from": image.regions_from,
                "uri": f"{host}/{repository()}:{image.tag}" if host else None,
                "note": image.note,
            }
        )
    return rows


def refresh_images(output: str | None = None) -> tuple[Path, dict[str, Any]]:
    """Refresh the image tags and regions from the installed SageMaker SDK into a local override.
    Raises :class:`DeployError` when the SDK is missing or unusable, :class:`OutputError` when the
    override cannot be written, :class:`InvalidArgument` for an ``output`` that is not a path."""
    from lmi_config.deploy.sdk import refresh_images as refresh

    check.optional_text("output", output, empty=False)
    return refresh(output)


def plan(request: PlanRequest | None = None, **fields: Any) -> PlanResult:
    """Rank the (instance, TP, batch, sequence length) configurations of a model, each judged by the
    one judge; ``fields`` are those of :class:`lmi_config.plan.PlanRequest` when no request is
    given, and the workload's (``input_tokens``, ``output_tokens``, ``concurrency`` or ``request_rate``, ``max_ttft_ms``,
    ``max_tpot_ms``, ``max_model_len``; defaults printed with the plan). Raises :class:`InputError`
    for a bad request (:class:`InvalidArgument`: an unknown field, objective or price kind, NaN, a
    number out of range, a value of the wrong type), :class:`PlanningError` when nothing fits."""
    from dataclasses import fields as fields_of

    from lmi_config.plan import PlanRequest, PlanWorkload, plan_model

    if request is None:
        if "workload" in fields:
            check.instance_of("workload", fields["workload"], PlanWorkload, "a PlanWorkload")
        names = tuple(field.name for field in fields_of(PlanWorkload))
        request_names = tuple(field.name for field in fields_of(PlanRequest))
        check.known_fields("plan", fields, request_names + names)
        if "model" not in fields:
            raise InvalidArgument("plan: give a request or the model to plan (model=...)")
        given = {name: fields.pop(name, None) for name in names}
        chosen = fields.pop("workload", None)
        workload = {name: value for name, value in given.items() if value is not None}
        if chosen is not None and workload:
            raise InvalidArgument("plan: give a workload or its fields, not both")
        request = PlanRequest(**fields, workload=chosen or PlanWorkload(**workload))
    else:
        check.instance_of("request", request, PlanRequest, "a PlanRequest (lmi_config.plan)")
        if fields:
            raise InvalidArgument("plan: give a request or its fields, not both")
    return plan_model(request)


def plan_specs(result: PlanResult, limit: int) -> list[tuple[str, str]]:
    """Render specs (file name, YAML text) for the top ``limit`` feasible candidates of a plan.
    Raises :class:`InvalidArgument` for a result that is not a plan's or a negative ``limit``."""
    from lmi_config.report.plan import spec_documents

    _check_plan_result(result)
    check.count("limit", limit, minimum=0)
    return spec_documents(result, limit=limit)


def _check_plan_result(result: Any) -> None:
    from lmi_config.plan import PlanResult

    check.instance_of("result", result, PlanResult, "the PlanResult plan() returned")


def plan_cache_config(
    result: PlanResult, path: str, cache_format: str = "current"
) -> tuple[str, int, list[str]]:
    """The text of ``path`` with the plan's feasible Neuron configurations merged in (optimum-neuron's
    inference-cache-config format, ``current`` or ``legacy``, each entry marked ``predicted``):
    nothing it had is lost, nothing is duplicated, other models are untouched. Returns (text,
    entries added, notes) without writing; ``-`` merges into nothing. To write the file use
    :func:`write_plan_cache_config`, which merges under the file's lock. Raises
    :class:`InputError` for an unreadable or malformed existing file, :class:`InvalidArgument` for
    an unknown format or an argument of the wrong type.
    """
    import os

    from lmi_config.io import read_bounded
    from lmi_config.search import cache_config

    _check_cache_config_arguments(result, path, cache_format)
    existing = None
    if path != "-":
        try:
            existing = read_bounded(path)
        except InputError:
            if os.path.exists(path):
                raise  # only a missing file (or a symlink to one) reads as empty
    config = cache_config.parse(existing, path) if existing is not None else {}
    entries, notes = _plan_entries(result, cache_format)
    merged, added = cache_config.merge(config, result.model, entries)
    return cache_config.dump(merged), added, notes


def _check_cache_config_arguments(result: Any, path: Any, cache_format: Any) -> None:
    from lmi_config.search import cache_config

    _check_plan_result(result)
    check.text("path", path, empty=False)
    check.choice("cache_format", cache_format, cache_config.FORMATS)


def write_plan_cache_config(
    result: PlanResult, path: str, cache_format: str = "current"
) -> tuple[int, list[str]]:
    """Merge the plan's feasible Neuron configurations (marked ``predicted``) into the cache-config
    file ``path`` under its lock (read, merge, atomic write; runs writing one file at once lose
    nothing). Returns (entries added, notes). Raises :class:`InputError` for an unreadable or
    malformed file, :class:`OutputError` when it cannot be written, :class:`InvalidArgument` for
    an unknown format or an argument of the wrong type."""
    from lmi_config.search import cache_config

    _check_cache_config_arguments(result, path, cache_format)
    entries, notes = _plan_entries(result, cache_format)
    return cache_config.merge_into_file(path, result.model, entries), notes


def _plan_entries(result: PlanResult, cache_format: str) -> tuple[list[dict[str, Any]], list[str]]:
    from lmi_config.report.plan import cache_config_entries
    from lmi_config.search import cache_config

    entries, notes = cache_config_entries(result, cache_format)
    return cache_config.with_provenance(entries, cache_config.PREDICTED), notes


def search(
    options: SearchOptions | None = None, *, report: Callable[[str], None] | None = None, **fields: Any
) -> SearchResult:
    """Run the optimal-export-configuration workflow (each export and load in its own process),
    saving the results and the journal beside them after every trial; ``fields`` are those of
    :class:`lmi_config.search.SearchOptions` when no options are given, ``report`` receives the
    progress lines. Unlike the rest of this API it starts processes and writes files: that is what
    a search is. Raises :class:`InputError` for a bad request, an unusable results file or a full
    disk (:class:`InvalidArgument`: an unknown field or strategy, a value of the wrong type or range)."""
    from dataclasses import fields as fields_of

    from lmi_config.search import SearchOptions, run_search

    check.optional_callback("report", report)
    if options is None:
        check.known_fields("search", fields, tuple(field.name for field in fields_of(SearchOptions)))
        if "model" not in fields:
            raise InvalidArgument("search: give options or the model to search (model=...)")
        options = SearchOptions(**fields)
    elif fields:
        raise InvalidArgument("search: give options or their fields, not both")
    requests.search_options("options", options)
    return run_search(options, report)


def search_shard(
    options: SearchOptions,
    shard: str,
    results: str,
    *,
    region: str | None = None,
    endpoint_url: str | None = None,
    report: Callable[[str], None] | None = None,
) -> SearchResult:
    """Run shard ``shard`` (``K/N``) of a search whose shards share the results location ``results``
    (``s3://bucket/prefix`` or a directory): the local search on the shard's TP sizes, its results
    and journal published as the shard's own object after every trial. Raises :class:`InputError`
    for a bad shard, a location holding another search, or another run of the same shard
    (:class:`InvalidArgument` for an argument of the wrong type or value), :class:`DeployError`
    when S3 refuses a call."""
    from lmi_config.search.shard_run import run_shard
    from lmi_config.search.shards import parse_shard

    requests.search_options("options", options)
    check.text("shard", shard)
    check.text("results", results, empty=False)
    check.optional_text("region", region, empty=False)
    check.optional_text("endpoint_url", endpoint_url, empty=False)
    check.optional_callback("report", report)
    return run_shard(
        options, parse_shard(shard), results, region=region, endpoint_url=endpoint_url, report=report
    )


def merge_search_results(
    results: str,
    output: str | None = None,
    model: str | None = None,
    *,
    region: str | None = None,
    endpoint_url: str | None = None,
) -> MergeReport:
    """Merge every shard of the search in ``results`` into the cache-config file ``output`` and the
    journal beside it (locked, atomic, idempotent: merging again adds nothing). Damaged shard
    objects and shards of another search are listed in the report's ``refused``, not merged.
    Raises :class:`InputError` for a location holding no search or an unusable output file
    (:class:`InvalidArgument` for an argument of the wrong type), :class:`OutputError` when the
    output cannot be written, :class:`DeployError` when S3 refuses a call."""
    from lmi_config.search.results_store import open_store
    from lmi_config.search.shard_merge import merge_results

    check.text("results", results, empty=False)
    for argument, value in (
        ("output", output),
        ("model", model),
        ("region", region),
        ("endpoint_url", endpoint_url),
    ):
        check.optional_text(argument, value, empty=False)
    return merge_results(open_store(results, region=region, endpoint_url=endpoint_url), output, model)


def plan_search_jobs(request: RemoteRequest) -> JobPlan:
    """The SageMaker training jobs of ``search --on sagemaker`` (one per shard), with their
    instance-hours, cost bound and exact CreateTrainingJob requests; calls no AWS API. Raises
    :class:`InputError` for a missing option or an instance type training jobs do not offer
    (:class:`InvalidArgument` for a request field of the wrong type or value)."""
    from lmi_config.search.sagemaker_jobs import plan_jobs

    requests.remote_request("request", request)
    return plan_jobs(request)


def _check_job_plan(plan: Any) -> None:
    from lmi_config.search.sagemaker_jobs import JobPlan

    check.instance_of("plan", plan, JobPlan, "the JobPlan plan_search_jobs() returned")


def search_job_package_upload(plan: JobPlan) -> dict[str, object]:
    """The PutObject call that uploads the lmi-config the plan's jobs install, its body shown by size and
    SHA-256 (what ``--dry-run`` prints); calls no AWS API. Raises :class:`InputError` when the
    package cannot be built, :class:`InvalidArgument` for a plan that is not plan_search_jobs()'s."""
    import hashlib

    from lmi_config.search.job_package import job_package
    from lmi_config.search.sagemaker_jobs import package_uri, split_s3

    _check_job_plan(plan)
    bucket, key = split_s3(package_uri(plan), "--s3-prefix")
    package = job_package()
    return {
        "Bucket": bucket,
        "Key": key,
        "Body": f"<lmi-config {len(package.data)} bytes, sha256 {hashlib.sha256(package.data).hexdigest()}>",
    }


def run_search_jobs(
    plan: JobPlan,
    *,
    output: str | None = None,
    retry_failed: bool = False,
    max_attempts: int = 2,
    wait: bool = True,
    poll_seconds: float = 60.0,
    confirm: Callable[[list[str]], bool],
    report: Callable[[str], None] | None = None,
) -> CoordinatorResult:
    """Start the jobs of ``plan`` not started yet (only when ``confirm`` agrees; with ``retry_failed``
    a new job for each failed shard that has had fewer than ``max_attempts``), watch them and merge
    their shards into ``output`` and its journal; a coordinator stopped and run again resumes.
    Raises :class:`InputError` when another coordinator watches the search or when every failed
    shard to retry has had ``max_attempts`` jobs (:class:`InvalidArgument` for an argument of the
    wrong type or value, before any call), :class:`OutputError` when ``output`` cannot be written,
    :class:`DeployError` when AWS refuses a call."""
    from lmi_config.deploy.aws import Clients
    from lmi_config.search.coordinator import Coordinator

    _check_job_plan(plan)
    check.optional_text("output", output, empty=False)
    check.flag("retry_failed", retry_failed)
    check.count("max_attempts", max_attempts)
    check.flag("wait", wait)
    check.positive_number("poll_seconds", poll_seconds, unit="seconds")
    if not callable(confirm):
        raise InvalidArgument(f"confirm: {check.shown(confirm)} is not allowed; expected a function")
    check.optional_callback("report", report)
    coordinator = Coordinator(
        plan, Clients(plan.region, plan.request.endpoint_url), output, report or (lambda _: None)
    )
    return coordinator.run(
        retry_failed=retry_failed,
        max_attempts=max_attempts,
        wait=wait,
        poll_seconds=poll_seconds,
        confirm=confirm,
    )


def stop_search_jobs(plan: JobPlan) -> list[str]:
    """Stop every running job of the search ``plan`` names; returns the jobs stopped. Raises
    :class:`InvalidArgument` for a plan that is not plan_search_jobs()'s, :class:`DeployError` when
    AWS refuses a call."""
    from lmi_config.deploy.aws import Clients
    from lmi_config.search.coordinator import Coordinator

    _check_job_plan(plan)
    return Coordinator(plan, Clients(plan.region, plan.request.endpoint_url), None, lambda _: None).stop()
