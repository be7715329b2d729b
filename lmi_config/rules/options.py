"""Options against the catalogue: unknown keys, bad values, versions, backends, deprecations.

The container ignores unknown ``option.*`` keys without a word (djl-serving.md §5: pydantic
``extra='ignore'``; vLLM drops non-EngineArgs names), so these rules are the only place a
typo or a key for another backend or version becomes visible.
"""

from __future__ import annotations

from collections.abc import Iterator

from lmi_config.configfile.canonical import Setting
from lmi_config.configfile.text import shorten
from lmi_config.knowledge import Release, backends, entry_points, version_tuple
from lmi_config.knowledge.container_options import handler_at
from lmi_config.knowledge.options import (
    SERVER_GROUP,
    VARIABLE_NAME,
    all_engine_arg_names,
    beyond_the_code,
    catalogue,
    check_value,
    engine_arg_version_range,
    engine_args_for,
    is_placeholder,
    known_keys_set,
    passes_engine_args,
    value_synonyms,
)
from lmi_config.rules.base import Example, Finding, LintUnit, rule
from lmi_config.rules.container import container_verdicts, refused_by_vllm, view_of, where_checked
from lmi_config.rules.value_suggestions import MAX_COMPARED_CHARACTERS, applicable_specs, closest_allowed

_CATALOGUE_SOURCE = (
    "lmi_config/data/options.json (djl-serving.md §5-§6; each entry names its own source) — "
    "https://github.com/deepjavalibrary/djl-serving/tree/d21927c4a692335fba62a87cc430a5fc00c5f790/engines/python/setup/djl_python/properties_manager "
    "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/serving/docs/lmi/deployment_guide/configurations.md"
)
_LENIENT_BACKENDS = ("custom", "djl-engine")


def _occurrences(unit: LintUnit) -> Iterator[Setting]:
    """Every value a user wrote (file and env) of a key the catalogue or vLLM's engine arguments
    know, in reading order: the only keys the value, version and backend rules judge (unknown
    keys are LMI101's; skipping them keeps a file of a million unknown keys cheap)."""
    known = catalogue()
    for key, settings in unit.config.candidates.items():
        # every release's EngineArgs names only for a key the catalogue lacks (each release is decoded when read)
        if key in known or (key.startswith("option.") and key[len("option.") :] in all_engine_arg_names()):
            yield from settings


def _is_env_style(setting: Setting) -> bool:
    """A variable's name written in serving.properties: env-style-key (LMI006) reports it. A dotted
    upper-case key (``OPTION.TENSOR_PARALLEL_DEGREE``) is no variable name and stays this rule's."""
    return setting.origin.kind == "properties" and bool(VARIABLE_NAME.fullmatch(setting.key))


def _display(setting: Setting) -> str:
    return setting.origin.variable or setting.key


@rule(
    code="LMI101",
    slug="unknown-option",
    severity="warning",
    summary="A key no LMI backend reads: usually a typo. The container ignores it silently.",
    why=(
        "The properties classes ignore unknown keys (pydantic extra='ignore') and vLLM drops names "
        "that are not EngineArgs fields, so a misspelled option simply has no effect. Keys are "
        "case-sensitive (java.util.Properties): OPTION.TENSOR_PARALLEL_DEGREE is not option.tensor_parallel_degree."
    ),
    bad=Example("option.model_id=gpt2\noption.max_rolling_batch_szie=32\n"),
    good=Example("option.model_id=gpt2\noption.max_rolling_batch_size=32\n"),
    source=(
        "djl-serving.md §5 (extra='ignore'), §5.3 (vLLM pass-through filter) and §10.4 — "
        "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/engines/python/setup/djl_python/properties_manager/properties.py "
        "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/engines/python/setup/djl_python/properties_manager/vllm_rb_properties.py"
    ),
)
def unknown_option(unit: LintUnit) -> Iterator[Finding]:
    backend = unit.context.backend
    lenient = backend.id in _LENIENT_BACKENDS
    for key, settings in unit.config.candidates.items():
        if key in catalogue():
            continue
        if key.startswith("option.") and key[len("option.") :] in all_engine_arg_names():
            continue  # a vLLM engine argument: LMI103 / LMI104 decide
        for setting in _last_in_each_file(settings):  # duplicates are LMI002's
            if _is_env_style(setting):
                continue
            variable = setting.origin.variable or ""
            if variable.startswith("ARGS_") and "option." + key in known_keys_set():
                continue  # an option's name set as a Java argument: ignored-env-var (LMI203) says so
            from lmi_config.rules.suggestions import spelling_advice  # only for an unknown key

            advice = spelling_advice(key, setting.origin.variable)  # an env file's names a variable
            where = "" if setting.origin.kind == "properties" else f" ({_display(setting)})"
            message = (
                f"{key}{where} is not an option any LMI backend reads; the container ignores it — {advice}"
            )
            if not key.startswith("option.") and "option." + key in known_keys_set():
                # ModelInfo hands only option.* keys to the Python handler; the rest are model arguments
                message = (
                    f"{key}{where} without the option. prefix is a model argument of the Java front end, which "
                    f"the Python handler never sees — write option.{key}"
                )
            if lenient:
                message = f"{key}{where} is not an LMI option; fine if your own handler reads it — otherwise {advice}"
            yield unit.finding("LMI101", message, setting=setting, severity="info" if lenient else None)


def _last_in_each_file(settings: list[Setting]) -> Iterator[Setting]:
    """The last of a key's settings in each file: the one that counts there."""
    if len(settings) == 1:
        yield settings[0]
        return
    last: dict[str, Setting] = {}
    for setting in settings:
        last[setting.origin.path] = setting
    yield from last.values()


def _entry_point_problem(unit: LintUnit, setting: Setting) -> Finding | None:
    import difflib

    module = setting.value.strip()
    if not module.startswith("djl_python."):
        return None  # model.py, a URL or the user's own module
    known = entry_points().get(module)
    release = unit.context.release
    if known is None or known.get("never_existed"):
        names = sorted(name for name, row in entry_points().items() if not row.get("never_existed"))
        close = (
            difflib.get_close_matches(module, names, n=1, cutoff=0.75)
            if len(module) <= MAX_COMPARED_CHARACTERS
            else []
        )
        renamed = known.get("renamed_to") if known else None
        if close and not renamed:
            renamed = entry_points()[close[0]].get("renamed_to")
        hint = renamed or (close[0] if close else None)
        advice = f"use {hint}" if hint else "use one of " + ", ".join(names)
        return unit.finding(
            "LMI102",
            f"option.entryPoint={shorten(module)} is not a handler module in any LMI image; {advice}",
            setting=setting,
        )
    in_code = handler_at(module, release)  # the release branches' own code, where it was read
    if in_code is not None and in_code[0]:
        return None
    if in_code is not None or not release.in_range(known.get("since"), known.get("until")):
        span = in_code[1] if in_code is not None else _span(known.get("since"), known.get("until"))
        advice = (
            f"use {known['renamed_to']}"
            if known.get("renamed_to")
            else "pick an image of that range or another handler"
        )
        return unit.finding(
            "LMI103",
            f"option.entryPoint={module} exists in LMI {span}, not in the target {release.label()} "
            f"({'assumed: ' if unit.context.release_assumed else ''}{unit.context.release_reason}); "
            f"the container fails to start — {advice}",
            setting=setting,
            # certain only for a version the user named; an assumed one may simply be wrong
            severity="warning" if unit.context.release_assumed else "error",
        )
    return None


def _span(since: str | None, until: str | None) -> str:
    if since and until:
        return f"{since} to {until}"
    if since:
        return f"{since} and later"
    return f"up to {until}" if until else "every version"


@rule(
    code="LMI102",
    slug="invalid-value",
    severity="error",
    summary="A value the backend refuses: wrong type, not an allowed value, or out of range.",
    why=(
        "Values arrive as strings and are parsed by pydantic or Java (djl-serving.md §5): "
        "`option.dtype=half` fails vLLM's validator, `tensor_parallel_degree=abc` fails int parsing, "
        "and a boolean written `True ` (trailing blank) is not true. The endpoint then fails after "
        "the download, not before."
    ),
    bad=Example("option.model_id=gpt2\noption.rolling_batch=vllm\noption.dtype=half\n"),
    good=Example("option.model_id=gpt2\noption.rolling_batch=vllm\noption.dtype=fp16\n"),
    source=_CATALOGUE_SOURCE,
)
def invalid_value(unit: LintUnit) -> Iterator[Finding]:
    reported: set[str | None] = set()
    for finding in _catalogue_verdicts(unit):
        reported.add(finding.key)
        yield finding
    for problem in unit.problems("invalid-value"):
        if problem.key not in reported:  # the judge's own refusals: a value it cannot size from
            yield unit.report("LMI102", problem)


def _catalogue_verdicts(unit: LintUnit) -> Iterator[Finding]:
    backend = unit.context.backend
    yield from _refused_by_the_container(unit)
    yield from refused_by_vllm(unit)
    view = view_of(unit)
    refused = {id(setting) for setting, verdict in container_verdicts(unit) if verdict.kind == "error"}
    for setting in _occurrences(unit):
        if id(setting) in refused:
            continue  # reported with the container's own message
        if setting.key == "option.entryPoint":
            problem = _entry_point_problem(unit, setting)
            if problem is not None and problem.code == "LMI102":
                yield problem
            continue
        specs = catalogue().get(setting.key)
        if not specs or is_placeholder(setting.value):
            continue
        applicable = [
            spec for spec in applicable_specs(specs, backend) if spec.available_in(unit.context.release)
        ]
        if backend.id in _LENIENT_BACKENDS:
            # your own handler reads a backend's key however it wants: only the server's keys are judged
            applicable = [
                spec for spec in applicable if spec.kind == SERVER_GROUP or "common" in spec.backends
            ]
        if not applicable:
            continue
        spec = applicable[0]
        if view is not None and setting.key in view.checks and not (spec.hand_written and spec.allowed):
            # the container's own classes judge type and values (above); the catalogue adds what
            # their code does not say: blanks kept around a value, ranges (a hand-written list of
            # values still applies: code the generator does not read decides it, a handler's dispatch)
            reason = beyond_the_code(spec, setting.value)
        else:
            reason = check_value(spec, setting.value)
        if reason is None:
            continue
        advice = ""
        if spec.allowed:
            close, every_version = closest_allowed(setting.value.strip(), specs, backend)
            if close and close[0] in spec.allowed:
                advice = f" — use {close[0]}"
            elif close:
                from lmi_config.rules.suggestions import release_spans

                spans = release_spans(every_version[close[0]])
                advice = f" — {close[0]} exists only in LMI {spans}"
            elif ", ".join(spec.allowed) not in reason:  # the reason may list them already: once is enough
                advice = f" — allowed: {', '.join(spec.allowed)}"
        elif setting.value != setting.value.strip():
            advice = f" — write {shorten(setting.value.strip())!r}"
        if " #" in setting.value and setting.origin.kind == "properties":
            advice += " (the text after # is part of the value: serving.properties has no inline comments)"
        yield unit.finding(
            "LMI102",
            f"{_display(setting)}={shorten(setting.value)!r} {reason} for {backend.id}{advice}",
            setting=setting,
        )


def _refused_by_the_container(unit: LintUnit) -> Iterator[Finding]:
    """Values a generated properties class of the path refuses, with the class's own message."""
    for setting, verdict in container_verdicts(unit):
        if verdict.kind != "error":
            continue
        check = verdict.check
        advice = ""
        if check.accepted:
            close = _close_value(setting.value.strip(), list(check.accepted))
            advice = f" — use {close}" if close else f" — accepted: {', '.join(check.accepted)}"
        if " #" in setting.value and setting.origin.kind == "properties":
            advice += " (the text after # is part of the value: serving.properties has no inline comments)"
        yield unit.finding(
            "LMI102",
            f"{_display(setting)}={shorten(setting.value)!r} is refused: {where_checked(unit, verdict)} raises "
            f"{shorten(verdict.message, 300)!r}{advice}",
            setting=setting,
        )


def _close_value(value: str, accepted: list[str]) -> str | None:
    """The accepted spelling a value most likely means (``float16`` → ``fp16``)."""
    import difflib

    synonym = value_synonyms().get(value.lower())
    if synonym in accepted:
        return synonym
    same = [item for item in accepted if item.lower() == value.lower()]
    if same:
        return same[0]
    if len(value) > MAX_COMPARED_CHARACTERS:
        return None
    close = difflib.get_close_matches(value, accepted, n=1, cutoff=0.6)
    return close[0] if close else None


@rule(
    code="LMI103",
    slug="option-version",
    severity="warning",
    summary="An option (or handler, or backend) that the target LMI version does not have.",
    why=(
        "Options come and go between LMI releases (djl-serving.md §6 lists the first version of each); "
        "one the image does not know is ignored, and a handler or backend that is not in the image "
        "fails at start-up."
    ),
    bad=Example(
        "option.model_id=gpt2\noption.rolling_batch=vllm\noption.enable_prefix_caching=true\n",
        args={"lmi_version": "0.28.0"},
    ),
    good=Example(
        "option.model_id=gpt2\noption.rolling_batch=vllm\noption.enable_prefix_caching=true\n",
        args={"lmi_version": "0.30.0"},
    ),
    source=_CATALOGUE_SOURCE
    + (
        "; lmi_config/data/releases.json — "
        "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/serving/docs/lmi/release_notes.md"
    ),
)
def option_version(unit: LintUnit) -> Iterator[Finding]:
    backend = unit.context.backend
    release = unit.context.release
    assumed = f"({unit.context.release_reason})"
    yield from _backend_availability(unit)
    for setting in _occurrences(unit):
        key = setting.key
        if key == "option.entryPoint":
            problem = _entry_point_problem(unit, setting)
            if problem is not None and problem.code == "LMI103":
                yield problem
            continue
        specs = catalogue().get(key)
        if specs:
            applicable = applicable_specs(specs, backend)
            if applicable and not any(spec.available_in(release) for spec in applicable):
                spans = "; ".join(sorted({spec.range_text() for spec in applicable}))
                yield unit.finding(
                    "LMI103",
                    f"{_display(setting)} is read by {backend.id} in LMI {spans}, not by the target "
                    f"{release.label()} {assumed}; the container ignores it",
                    setting=setting,
                )
            continue
        if not key.startswith("option.") or not passes_engine_args(backend, release):
            continue
        name = key[len("option.") :]
        version_range = engine_arg_version_range(name)
        if version_range is None or name in engine_args_for(release.vllm):
            continue
        yield unit.finding(
            "LMI103",
            f"{_display(setting)} is a vLLM engine argument in vLLM {version_range[0]} to {version_range[1]}, "
            f"but the target {release.label()} {assumed} ships vLLM {release.vllm or 'of unknown version'}, "
            "which does not have it; LMI drops it",
            setting=setting,
        )


def _backend_availability(unit: LintUnit) -> Iterator[Finding]:
    backend = unit.context.backend
    release = unit.context.release
    feature = backend.feature
    if feature is None:
        return
    shipped = any(feature in features for features in release.features.values())
    too_early = backend.since and release.djl_tuple < version_tuple(backend.since)
    framework = unit.context.image_framework
    if shipped and not too_early and framework and feature not in release.features.get(framework, [feature]):
        homes = sorted(name for name, features in release.features.items() if feature in features)
        yield unit.finding(
            "LMI103",
            f"backend {backend.id} ({'assumed: ' if unit.context.backend_assumed else ''}{unit.context.backend_reason}) "
            f"is not in the {framework} image named ({unit.context.release_reason}); in LMI {release.label()} it "
            f"ships in {', '.join(homes)}"
            + (
                "; set the backend the image runs (--backend or a pragma)"
                if unit.context.backend_assumed
                else ""
            ),
            line=None,
            # an assumed backend is lint's guess, not the file's: the image decides what runs
            severity="warning" if unit.context.backend_assumed else "error",
        )
        return
    if shipped and not too_early:
        return
    having = [
        item.label()
        for item in _releases_with(feature)
        if not backend.since or item.djl_tuple >= version_tuple(backend.since)
    ]
    span = f"{having[0]} to {having[-1]}" if having else "no known release"
    yield unit.finding(
        "LMI103",
        f"backend {backend.id} ({unit.context.backend_reason}) is not in any image of LMI {release.label()} "
        f"({unit.context.release_reason}); it ships in LMI {span}",
        line=None,
    )


def _releases_with(feature: str) -> list[Release]:
    from lmi_config.knowledge import releases

    return [item for item in releases() if any(feature in values for values in item.features.values())]


@rule(
    code="LMI104",
    slug="backend-mismatch",
    severity="warning",
    summary="An option of another backend: the selected backend ignores it.",
    why=(
        "Each handler builds its own properties class (djl-serving.md §5): `option.n_positions` means "
        "nothing to vLLM on GPU, `option.gpu_memory_utilization` nothing to transformers-neuronx. "
        "Usually it means the configuration was written for another container."
    ),
    bad=Example(
        "option.model_id=gpt2\noption.rolling_batch=vllm\noption.neuron_optimize_level=2\n",
        args={"backend": "vllm"},
    ),
    good=Example(
        "option.model_id=gpt2\noption.rolling_batch=vllm\noption.gpu_memory_utilization=0.9\n",
        args={"backend": "vllm"},
    ),
    source=_CATALOGUE_SOURCE,
)
def backend_mismatch(unit: LintUnit) -> Iterator[Finding]:
    backend = unit.context.backend
    if backend.id in _LENIENT_BACKENDS:
        return
    release = unit.context.release
    for setting in _occurrences(unit):
        key = setting.key
        specs = catalogue().get(key)
        if specs:
            if applicable_specs(specs, backend):
                continue
            name = key[len("option.") :]
            if passes_engine_args(backend, release) and name in engine_args_for(release.vllm):
                continue  # also a vLLM engine argument: passed through
            owners = sorted({group for spec in specs for group in spec.backends})
            yield unit.finding(
                "LMI104",
                f"{_display(setting)} is read by {', '.join(owners)}, not by {backend.id} "
                f"({'assumed: ' if unit.context.backend_assumed else ''}{unit.context.backend_reason}); "
                "remove it or set the backend it belongs to (--backend or a `# lmi-config: backend=` pragma)",
                setting=setting,
                severity="info" if unit.context.backend_assumed else None,
            )
            continue
        if key.startswith("option.") and engine_arg_version_range(key[len("option.") :]):
            if backend.engine_args == "vllm":
                if not release.in_range(backend.engine_args_since, None):
                    yield unit.finding(
                        "LMI104",
                        f"{_display(setting)} is a vLLM engine argument, but LMI passes arbitrary engine arguments to "
                        f"vLLM only from {backend.engine_args_since}; the target {release.label()} ignores it",
                        setting=setting,
                    )
                continue
            owners = [item.id for item in backends().values() if item.engine_args == "vllm"]
            yield unit.finding(
                "LMI104",
                f"{_display(setting)} is a vLLM engine argument, read only by {', '.join(owners)}, not by "
                f"{backend.id} ({unit.context.backend_reason})",
                setting=setting,
            )


@rule(
    code="LMI105",
    slug="deprecated-option",
    severity="warning",
    summary="An option that still works but is deprecated in favour of another.",
    why="Deprecated options log a warning and disappear in a later release (djl-serving.md §5).",
    bad=Example(
        "option.model_id=gpt2\noption.rolling_batch=disable\noption.enable_streaming=true\n",
        args={"backend": "huggingface"},
    ),
    good=Example("option.model_id=gpt2\noption.rolling_batch=disable\n", args={"backend": "huggingface"}),
    source=_CATALOGUE_SOURCE,
)
def deprecated_option(unit: LintUnit) -> Iterator[Finding]:
    backend = unit.context.backend
    for setting in _occurrences(unit):
        specs = catalogue().get(setting.key)
        if not specs:
            continue
        applicable = [
            spec for spec in applicable_specs(specs, backend) if spec.available_in(unit.context.release)
        ]
        if applicable and applicable[0].deprecated:
            yield unit.finding(
                "LMI105",
                f"{_display(setting)} is deprecated: {applicable[0].deprecated}",
                setting=setting,
            )
