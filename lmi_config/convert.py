"""``convert``: the effective configuration of a file in another of the three forms.

The container's precedence decides what is converted (file over ``OPTION_*``, ``SAGEMAKER_*`` over
both); nothing is dropped silently: every line the readers could not read, every variable the
container would not read from that file and every value the target form cannot carry is reported
with its file and line. A value the target format's readers would read differently (see
:mod:`lmi_config.escaping`) stops the conversion: nothing is written (exit code 2).

Credentials (:mod:`lmi_config.secrets`): converted into a file named with ``-o``, a credential is
written as it is in the input, because it is the user's own data and a converted file that lost it
would not work (a note says the file holds one, value not shown). On standard output it is left
out and reported (exit code 1): a terminal, a CI log or a pipe is where a credential leaks, and a
masked value would be a wrong value, not a safe one. ``render`` refuses credentials in a spec
instead (:mod:`lmi_config.render`): a spec and its output are meant to be committed.
"""

from __future__ import annotations

from typing import Any

from lmi_config.configfile.canonical import classify_env

_SECRET_LOST = (
    "not copied: it holds a credential ({shown}) and credentials are never written to standard "
    "output; convert with -o FILE to keep it in a file, or pass it at deploy time"
)


def ordered(items: dict[str, str]) -> list[tuple[str, str]]:
    """Model-level keys first (engine, batch_size …), then option.* keys, each sorted: deterministic."""
    return sorted(
        items.items(), key=lambda pair: (pair[0].startswith("option."), pair[0] != "engine", pair[0])
    )


def convert_unit(
    unit: Any, to: str, *, keep_credentials: bool = False
) -> tuple[list[tuple[str, str]], dict[str, str], list[str]]:
    """What a lint unit becomes in format ``to``: (items, extra env, everything not carried over).

    ``keep_credentials``: the output is a file the user named, so credentials are copied.
    """
    from lmi_config.secrets import redact

    lost = unread_lines(unit)
    effective, process_env = effective_settings(unit)
    lost.extend(uncarried_variables(unit, {key for key, _ in effective}))
    items, extra_env, not_copied = convert_items(effective, process_env, to, keep_credentials)
    return items, extra_env, [redact(message, unit.secret_values) for message in lost + not_copied]


def credentials_kept(items: list[tuple[str, str]], extra_env: dict[str, str]) -> list[str]:
    """The keys and variables of a conversion that hold a credential (for the note beside a file)."""
    from lmi_config.secrets import looks_like_secret

    return [key for key, value in [*items, *extra_env.items()] if looks_like_secret(value, key)]


def convert_items(
    effective: list[tuple[str, str]],
    process_env: list[tuple[str, str]],
    to: str,
    keep_credentials: bool = False,
) -> tuple[list[tuple[str, str]], dict[str, str], list[str]]:
    """Prepare a converted configuration: (items, extra env, what cannot be carried over)."""
    from lmi_config.secrets import looks_like_secret

    lost: list[str] = []
    extra: dict[str, str] = {}
    kept = []
    for key, value in effective:
        if not keep_credentials and looks_like_secret(value, key):
            lost.append(_secret_lost(key, value))
        else:
            kept.append((key, value))
    for name, value in process_env:
        secret = looks_like_secret(value, name) or classify_env(name).kind == "secret"
        if secret and not keep_credentials:
            lost.append(_secret_lost(name, value))
        elif to == "properties":
            lost.append(f"{name} is a process environment variable; serving.properties cannot set it")
        else:
            extra[name] = value
    return kept, extra, lost


def _secret_lost(key: str, value: str) -> str:
    """Why a credential is not on standard output; a URL is shown with only its credential masked."""
    from lmi_config.secrets import MASK, mask_value

    masked = mask_value(value, key)
    shown = f"shown masked: {masked}" if masked != MASK and MASK in masked else "value not shown"
    return f"{key} {_SECRET_LOST.format(shown=shown)}"


def effective_settings(unit: Any) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(canonical key/values the container uses, process env variables) of a lint unit."""
    items = [
        (key, setting.value)
        for key, setting in unit.config.settings.items()
        if setting.role != "global" or key in ("minWorkers", "maxWorkers", "job_queue_size", "batch_size")
    ]
    process: list[tuple[str, str]] = []
    for source in unit.sources:
        if source.env is None:
            continue
        for entry in source.env.entries:
            kind = classify_env(entry.name).kind
            if kind in ("process", "secret", "unknown"):
                process.append((entry.name, entry.value))
    return ordered(dict(items)), process


def unread_lines(unit: Any) -> list[str]:
    """Every line of the unit's files that the readers could not take as a setting."""
    lost: list[str] = []
    for source in unit.sources:
        if source.properties is not None:
            lost.extend(
                f"{source.path}:{error.line}: {error}; the line was not converted"
                for error in source.properties.errors
            )
        if source.env is not None:
            lost.extend(
                f"{source.path}{f':{error.line}' if error.line else ''}: {error.message}; not converted"
                for error in source.env.errors
                if error.severity == "error"
            )
    return lost


def uncarried_variables(unit: Any, converted_keys: set[str]) -> list[str]:
    """Variables of the unit's env files that the container does not read as configuration here."""
    translated = {name for name, _, _ in unit.applied_translations}
    lost: list[str] = []
    for source in unit.sources:
        for entry in source.env.entries if source.env is not None else []:
            reason = _why_not_carried(entry, converted_keys, translated, unit)
            if reason:
                lost.append(f"{source.path}{f':{entry.line}' if entry.line else ''}: {entry.name} {reason}")
    return lost


def _why_not_carried(entry: Any, converted_keys: set[str], translated: set[str], unit: Any) -> str | None:
    mapping = classify_env(entry.name)
    if mapping.kind in ("process", "secret", "unknown") or entry.name in translated:
        return None
    if mapping.kind == "config":
        if entry.value == "" and entry.name.startswith("OPTION_"):
            return "is empty and the container skips empty OPTION_* variables; not converted"
        if mapping.key in converted_keys or mapping.key not in unit.config.settings:
            return None  # converted, or overridden by a stronger source (precedence)
        return f"sets the server-wide default {mapping.key}, which convert does not carry; not converted"
    if mapping.kind == "tgi":
        return f"is a TGI variable that the {unit.context.backend.id} image does not translate; not converted"
    if mapping.kind == "option-style":
        return "is a serving.properties key, which the container does not read from the environment; not converted"
    return "is read by another server, not by the LMI container; not converted"


def refused_value(unit: Any, error: Any) -> str:
    """The message for a value the target format cannot carry (an ``escaping.ValueNotCarried``):
    where the value was read, what is wrong, what to do; nothing is written."""
    from lmi_config.configfile.canonical import env_name_for_key

    place = unit.primary_path
    for key, setting in unit.config.settings.items():
        if error.key in (key, env_name_for_key(key)):
            place = setting.origin.describe()
            break
    else:
        for source in unit.sources:
            for entry in source.env.entries if source.env is not None else []:
                if entry.name == error.key:
                    place = f"{source.path}{f':{entry.line}' if entry.line else ''}"
    return f"{place}: {error}; nothing was written"
