"""The value a mistyped or renamed value most likely meant: the search invalid-value names in its
advice and the fix that writes it uses, so that both name the same value."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lmi_config.knowledge import Backend, entry_points
from lmi_config.knowledge.options import OptionSpec, catalogue, value_synonyms

if TYPE_CHECKING:
    from lmi_config.configfile.canonical import Setting
    from lmi_config.rules.base import LintUnit

MAX_COMPARED_CHARACTERS = 200  # a longer value is compared with nothing (difflib is quadratic)


def applicable_specs(specs: tuple[OptionSpec, ...] | list[OptionSpec], backend: Backend) -> list[OptionSpec]:
    """The specs of an option that apply to the backend, the backend's own entry first."""
    applicable = [spec for spec in specs if spec.applies_to(backend)]
    # the backend's own entry first, then common ones
    return sorted(applicable, key=lambda spec: 0 if backend.id in spec.backends else 1)


def closest_allowed(
    stripped: str, specs: tuple[OptionSpec, ...] | list[OptionSpec], backend: Backend
) -> tuple[list[str], dict[str, list[OptionSpec]]]:
    """The allowed value (of any release) a written value most likely meant — a synonym, the same
    letters in another case, else the closest spelling — and, per allowed value, the specs allowing it."""
    import difflib

    every_version: dict[str, list[OptionSpec]] = {}
    for other in applicable_specs(specs, backend):
        for item in other.allowed or ():
            every_version.setdefault(item, []).append(other)
    synonym = value_synonyms().get(stripped.lower())
    close = [synonym] if synonym in every_version else []
    close = close or [item for item in every_version if item.lower() == stripped.lower()]
    if not close and len(stripped) <= MAX_COMPARED_CHARACTERS:
        close = difflib.get_close_matches(stripped, list(every_version), n=1, cutoff=0.6)
    return close, every_version


def allowed_replacement(unit: LintUnit, setting: Setting) -> str | None:
    """The value invalid-value advises for ``setting`` ("use fp16") when this release allows it, else
    None: the same search the rule makes, for the fix that writes it."""
    if setting.key == "option.entryPoint":
        return entry_point_replacement(unit, setting)
    specs = catalogue().get(setting.key)
    applicable = [
        spec
        for spec in applicable_specs(specs or [], unit.context.backend)
        if spec.available_in(unit.context.release)
    ]
    if not specs or not applicable or not applicable[0].allowed:
        return None
    close, _ = closest_allowed(setting.value.strip(), specs, unit.context.backend)
    return close[0] if close and close[0] in applicable[0].allowed else None


def entry_point_replacement(unit: LintUnit, setting: Setting) -> str | None:
    """The handler module an ``option.entryPoint`` was renamed to (or, misspelt, most likely meant)."""
    import difflib

    module = setting.value.strip()
    known = entry_points().get(module)
    if known is not None and known.get("renamed_to"):
        return str(known["renamed_to"])
    if known is not None and not known.get("never_existed"):
        return None
    names = sorted(name for name, row in entry_points().items() if not row.get("never_existed"))
    close = (
        difflib.get_close_matches(module, names, n=1, cutoff=0.75)
        if len(module) <= MAX_COMPARED_CHARACTERS
        else []
    )
    if not close:
        return None
    return str(entry_points()[close[0]].get("renamed_to") or close[0])
