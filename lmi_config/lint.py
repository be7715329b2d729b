"""The linter core: merge a target's files, resolve its context, run every rule, filter.

It knows no rule by name: rules register themselves in :mod:`lmi_config.rules`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from lmi_config.configfile.canonical import CanonicalConfig, Origin, Setting, classify_env
from lmi_config.configfile.loader import InputError, LintTarget, parse_source
from lmi_config.configfile.text import collector_paused
from lmi_config.context import Context, read_pragmas, resolve_context
from lmi_config.knowledge import version_tuple
from lmi_config.knowledge.environment import runtime_settings, tgi_translations
from lmi_config.report.kept import Kept
from lmi_config.rules import load_rules
from lmi_config.rules.base import REGISTRY, Finding, LintUnit, find_rule
from lmi_config.settings import ProjectSettings
from lmi_config.shape.values import read_count


@dataclass
class LintOptions:
    """What the caller chose: target overrides and rule selection."""

    backend: str | None = None
    lmi_version: str | None = None
    instance: str | None = None
    model: str | None = None
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    hub: bool = False  # allow Hugging Face Hub look-ups for models outside the catalog
    lnc: int | None = None  # Trainium2 logical NeuronCore setting (default: NEURON_LOGICAL_NC_CONFIG or 2)
    settings: ProjectSettings | None = None  # project settings: per-path defaults and exclusions
    exclude: list[str] = field(default_factory=list)  # --exclude patterns, added to the settings'
    force_exclude: bool = False  # apply the exclusions to paths named explicitly too
    max_findings: int = 0  # keep at most this many findings of one rule per file (0: all); text output
    judge_fixes: bool = True  # attach judged fixes to findings (off while judging one: no recursion)

    def excluded(self, path: str) -> bool:
        """Whether a path met in a directory walk is excluded by the project settings or ``--exclude``."""
        settings = self.settings or ProjectSettings()
        return settings.excluded(path, tuple(self.exclude))

    def force_excluded(self, path: str) -> bool:
        """Whether a path named explicitly is excluded, it or a directory above it (``--force-exclude``)."""
        settings = self.settings or ProjectSettings()
        return self.force_exclude and settings.excluded_with_parents(path, tuple(self.exclude))

    def for_path(self, path: str) -> LintOptions:
        """These options with the project's per-path defaults filled in where no flag was given."""
        defaults = self.settings.defaults_for(path) if self.settings is not None else {}
        if not defaults:
            return self
        return replace(
            self,
            backend=self.backend or defaults.get("backend"),
            lmi_version=self.lmi_version or defaults.get("lmi-version"),
            instance=self.instance or defaults.get("instance"),
            model=self.model or defaults.get("model"),
            select=self.select or list(defaults.get("select", [])),
            ignore=self.ignore + list(defaults.get("ignore", [])),
        )


def build_config(target: LintTarget) -> CanonicalConfig:
    """Merge the target's files into one canonical configuration (no translations yet)."""
    config = CanonicalConfig()
    for source in target.sources:
        if source.properties is not None:
            config.offer_file_entries(
                source.path, ((entry.key, entry.value, entry.line) for entry in source.properties.entries)
            )
        if source.env is not None:
            for env_entry in source.env.entries:
                mapping = classify_env(env_entry.name)
                if mapping.kind == "process":  # VLLM_USE_V1, NEURON_*: the engine's processes inherit them
                    config.process_environment[env_entry.name] = env_entry.value
                    continue
                if mapping.kind != "config" or mapping.key is None or mapping.role is None:
                    continue
                if env_entry.value == "" and env_entry.name.startswith("OPTION_"):
                    continue  # the container skips empty OPTION_* values
                origin = Origin(source.path, env_entry.line, source.kind, env_entry.name)
                role = "generated" if env_entry.name == "HF_MODEL_ID" else mapping.role
                config.offer(Setting(mapping.key, env_entry.value, origin, role))
                for extra_key in mapping.also:
                    config.offer(Setting(extra_key, env_entry.value, origin, role))
    return config


def apply_tgi_translations(
    target: LintTarget, config: CanonicalConfig, context: Context
) -> list[tuple[str, str, Setting]]:
    """Apply the GPU images' TGI → LMI variable translation (djl-serving.md §1.1).

    The Neuron image does not run it; rule ``ignored-env-var`` reports those variables.
    """
    if context.accelerator == "neuron":
        return []
    translations = tgi_translations()
    present = {entry.name for source in target.sources if source.env for entry in source.env.entries}
    applied = []
    for source in target.sources:
        if source.env is None:
            continue
        for entry in source.env.entries:
            row = translations.get(entry.name)
            if row is None or row["target"] in present:
                continue
            if context.release.djl_tuple < version_tuple(row["since"]):
                continue
            target_name = row["target"]
            if row.get("target_trtllm") and context.backend.id == "tensorrt-llm":
                target_name = row["target_trtllm"]
            value = entry.value
            if row.get("invert_bool"):
                value = "false" if value.strip().lower() == "true" else "true"
            mapping = classify_env(target_name)
            if mapping.key is None or mapping.role is None:
                continue
            origin = Origin(source.path, entry.line, source.kind, entry.name)
            setting = Setting(mapping.key, value, origin, mapping.role)
            config.offer(setting)
            applied.append((entry.name, target_name, setting))
    return applied


def _runtime_setting(target: LintTarget, effect: str) -> int | None:
    """A runtime variable of the env files that changes the instance (``lnc``: NEURON_LOGICAL_NC_CONFIG,
    ``nodes``: DJL_CLUSTER_SIZE), when it is a number."""
    for row in runtime_settings():
        if row["effect"] != effect:
            continue
        for source in target.sources:
            for entry in source.env.entries if source.env else []:
                value = read_count(entry.value).value if entry.name == row["name"] else None
                if value is not None:
                    return int(value)
    return None


def build_unit(target: LintTarget, options: LintOptions) -> LintUnit:
    """Everything the rules need for one target. ``ValueError`` for bad overrides."""
    config = build_config(target)
    comments = [item for source in target.sources for item in source.comments]
    pragmas = read_pragmas(comments)
    instance = None
    instance_reason = None
    instance_name = options.instance or (pragmas.values.get("instance") or (None, 0))[0]
    if instance_name:
        from lmi_config.knowledge.instances import resolve_instance

        instance = resolve_instance(instance_name)
        instance_reason = "--instance" if options.instance else "pragma"
        lnc = options.lnc or _runtime_setting(target, "lnc")
        if lnc is not None and (options.lnc or instance.lnc is not None):
            from lmi_config.knowledge.instances import with_lnc

            instance = with_lnc(instance, lnc)
            instance_reason += f", LNC={lnc}"
    context = resolve_context(
        config,
        target.sources,
        pragmas,
        backend=options.backend,
        lmi_version=options.lmi_version,
        instance_accelerator=instance.accelerator if instance else None,
    )
    context.instance = instance
    context.instance_reason = instance_reason
    unit = LintUnit(target, config, context, pragmas)
    unit.applied_translations = apply_tgi_translations(target, config, context)
    _attach_model(unit, options)
    _assess(unit)
    return unit


def _attach_model(unit: LintUnit, options: LintOptions) -> None:
    """Resolve the model (``--model``, pragma, else option.model_id) and, with an instance, the fit."""
    from lmi_config.knowledge.models import model_identity
    from lmi_config.modelarch import ModelResolutionError, ModelUnavailable, resolve_model

    pragma = unit.pragmas.values.get("model")
    name = (
        options.model or (pragma[0] if pragma else None) or (unit.config.get("option.model_id") or "").strip()
    )
    if not name:
        return
    explicit = bool(options.model or pragma)
    directory = unit.target.primary.directory
    try:
        arch = resolve_model(name, base_directory=directory, allow_hub=options.hub)
    except ModelResolutionError as error:
        # every other check still runs; the note says what was skipped (a --model given
        # explicitly is skipped the same way, so an offline run still reports the file) —
        # unless the flag names no model or a broken one: that is a usage error
        if options.model and not isinstance(error, ModelUnavailable):
            raise ValueError(str(error)) from None
        identity = model_identity(name) if isinstance(error, ModelUnavailable) else None
        unit.context.model_identity = identity
        if explicit or unit.context.instance is not None:
            known = (
                f"; its architecture ({identity.architecture}"
                + (f", model type {identity.model_type}" if identity.model_type else "")
                + ", from the checkpoints vLLM's tests name"
                + (f": that of {identity.sibling}, the same family" if identity.sibling else "")
                + ") is checked"
                if identity is not None
                else ""
            )
            unit.notes.append(
                f"model checks skipped: {error}"
                + known
                + (
                    ""
                    if explicit or "--model" in str(error)
                    else "; pass --model with a catalog id or a local directory"
                )
            )
        return
    unit.context.model = arch
    unit.context.model_reason = "--model" if options.model else ("pragma" if pragma else "option.model_id")
    if not arch.max_position_embeddings or not arch.config_verbatim:
        # a config.json without a context, or dimensions from elsewhere (a table, a re-upload's name)
        unknown = [
            what
            for what, known in (
                ("context length", arch.max_position_embeddings),
                ("dtype", arch.config_verbatim),
            )
            if not known
        ]
        verb, pronoun = ("is", "it") if len(unknown) == 1 else ("are", "them")
        unit.notes.append(
            f"{arch.model_id}: its {' and '.join(unknown)} {verb} not known here "
            f"({arch.dimensions_from or 'its source states none'}): the checks that need {pronoun} assume a "
            f"value; pass --model DIR (or --hub) to check {pronoun}"
        )


def _assess(unit: LintUnit) -> None:
    """Ask the one judge for the shape and its verdict, with whatever is known of the target."""
    from lmi_config.shape import assess, make_target

    context = unit.context
    target = make_target(
        context.backend.id,
        context.backend.accelerator,
        context.release,
        context.instance,
        context.model,
        nodes=_runtime_setting(unit.target, "nodes"),
        identity=context.model_identity,
    )
    unit.assessment = assess(unit.config, target, backend_accelerator=context.backend.accelerator)
    unsized = unit.assessment.memory_not_estimated
    if context.model and unsized and context.instance:
        unit.notes.append(f"memory not estimated for {context.model.model_id}: {unsized}")
    if (
        unit.assessment.memory is None
        and context.backend.id == "custom"
        and context.instance
        and context.model
    ):
        # the handler decides how it loads (4-bit, offloading, its own engine): no backend's model applies
        unit.notes.append(
            "memory not estimated: custom handler (your own entryPoint decides how the model loads)"
        )


def _matches(finding: Finding, names: set[str]) -> bool:
    return (
        finding.code in names
        or finding.rule in names
        or any(finding.code.startswith(name) for name in names if name.startswith("LMI") and len(name) < 6)
    )


def normalize_rule_names(names: list[str]) -> set[str]:
    """Accept codes, slugs and code prefixes (``LMI3``); ``ValueError`` for unknown names."""
    result = set()
    for raw in names:
        for name in raw.split(","):
            name = name.strip()
            if not name:
                continue
            found = find_rule(name)
            prefix = name.upper()
            if found:
                result.add(found.code)
            elif prefix.startswith("LMI") and prefix[3:].isdigit() and len(prefix) < 6:
                if not any(code.startswith(prefix) for code in REGISTRY):
                    raise ValueError(
                        f"no rule code starts with {name!r}; run `lmi-config rules` for the list"
                    )
                result.add(prefix)
            else:
                raise ValueError(f"unknown rule {name!r}; run `lmi-config rules` for the list")
    return result


def lint_unit(
    unit: LintUnit, options: LintOptions, hidden: Counter[tuple[str, str, str, str]] | None = None
) -> list[Finding]:
    """Run every rule on a unit and apply pragmas, --select and --ignore.

    With ``options.max_findings``, findings beyond that many of one rule in one file are counted
    in ``hidden`` by (path, code, slug, severity) instead of returned.
    """
    rules = load_rules()
    select = normalize_rule_names(options.select)
    ignore = normalize_rule_names(options.ignore)
    disabled: set[str] = set()
    for name, line in unit.pragmas.disabled.items():
        try:
            disabled |= normalize_rule_names([name])
        except ValueError as error:
            unit.pragmas.problems.append((f"pragma disable={name}: {error}", line))
    kept = Kept(options.max_findings)
    for registered in rules:
        for finding in registered.check(unit):
            if select and not _matches(finding, select):
                continue
            if ignore and _matches(finding, ignore):
                continue
            if disabled and _matches(finding, disabled):
                continue
            kept.add(finding)
    return kept.findings(hidden)


@dataclass(repr=False, eq=False)
class LintResult:
    """Findings of one run plus what was assumed about each target."""

    findings: list[Finding] = field(default_factory=list)
    units: list[LintUnit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files: int = 0
    problems: list[str] = field(default_factory=list)  # inputs that could not be read (exit code 2)
    # findings not kept (LintOptions.max_findings), counted by (path, code, slug, severity)
    hidden: Counter[tuple[str, str, str, str]] = field(default_factory=Counter)
    # findings that may have a fix the judge did not get to (its re-lints per file are bounded)
    unjudged: int = 0
    unjudged_oversized: int = 0  # of those, the ones in files too large to be judged at all

    @property
    def errors(self) -> int:
        return self._count("error")

    @property
    def warnings(self) -> int:
        return self._count("warning")

    def _count(self, severity: str) -> int:
        kept = sum(1 for finding in self.findings if finding.severity == severity)
        return kept + sum(count for (_, _, _, level), count in self.hidden.items() if level == severity)

    def findings_of(self, unit: LintUnit) -> list[Finding]:
        """The findings in the files of one unit."""
        paths = {source.path for source in unit.sources}
        return [finding for finding in self.findings if finding.path in paths]


def _assumption_notes(assumed: dict[str, list[str]]) -> list[str]:
    """One note per assumption (backend, release) however many files share it: a directory of fifty
    files gets one line, naming a few of them."""
    notes = []
    for described, paths in assumed.items():
        if len(paths) == 1:
            where = paths[0]
        else:
            named = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
            where = f"{len(paths)} files ({named})"
        notes.append(f"{where}: {described}")
    return notes


NO_INSTANCE = (
    "no instance type given (--instance, a `# lmi-config: instance=` pragma or the project settings; an "
    "Environment JSON has no comment to carry one): memory fit, TP against the devices and loading time "
    "were not checked"
)


def _relinter(unit: LintUnit, options: LintOptions) -> Callable[[dict[str, str]], list[Finding]]:
    """Lints the unit again with some files' texts replaced: every rule, no fix judged (the judge's view)."""
    quiet = replace(options, select=[], ignore=[], max_findings=0, judge_fixes=False)

    def relint(texts: dict[str, str]) -> list[Finding]:
        sources = [
            parse_source(
                source.path,
                texts[source.path].encode("utf-8", "surrogatepass"),
                source.directory,
                source.kind,
            )
            if source.path in texts
            else source
            for source in unit.sources
        ]
        return lint_unit(build_unit(LintTarget(sources), quiet), quiet)

    return relint


def lint_targets(targets: list[LintTarget], options: LintOptions | None = None) -> LintResult:
    """Lint prepared targets. :class:`InputError` for a bad --backend/--lmi-version/--instance."""
    options = options or LintOptions()
    result = LintResult()
    assumed: dict[str, list[str]] = {}  # what was assumed -> the files it was assumed for
    for target in targets:
        unit_options = options.for_path(target.primary.path)
        try:
            unit = build_unit(target, unit_options)
        except ValueError as error:
            raise InputError(f"{target.primary.path}: {error}") from None
        result.units.append(unit)
        with collector_paused():  # findings hold no cycles; see collector_paused
            findings = lint_unit(unit, unit_options, result.hidden)
            if unit_options.judge_fixes and findings:
                from lmi_config.fixers.judge import attach_fixes  # a file with findings only

                judged = attach_fixes(unit, findings, _relinter(unit, unit_options))
                findings = judged.findings
                result.unjudged += judged.unjudged
                result.unjudged_oversized += judged.unjudged if judged.oversized else 0
            result.findings.extend(findings)
        result.files += len(target.sources)
        if unit.context.backend_assumed or unit.context.release_assumed:
            described = (
                f"{unit.context.describe()}; set --backend / --lmi-version (or a `# lmi-config:` pragma) "
                "to be explicit"
            )
            assumed.setdefault(described, []).append(unit.primary_path)
        if unit.context.instance is None:
            assumed.setdefault(NO_INSTANCE, []).append(unit.primary_path)
        result.notes.extend(f"{unit.primary_path}: {text}" for text in unit.notes)
    result.notes.extend(_assumption_notes(assumed))
    return result


def lint_text(
    text: str,
    kind: str = "properties",
    options: LintOptions | None = None,
    *,
    name: str = "<text>",
    directory: Path | None = None,
) -> LintResult:
    """Lint configuration text held in memory (render lints what it wrote this way)."""
    raw = text.encode("utf-8", errors="surrogatepass")
    target = LintTarget([parse_source(name, raw, directory, kind)])
    return lint_targets([target], options)
