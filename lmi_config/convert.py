"""``convert``: the effective configuration of a file in another of the three forms.

The container's precedence decides what is converted (file over ``OPTION_*``, ``SAGEMAKER_*`` over
both); credentials are never copied; what the target form cannot carry is reported, not dropped.
"""

from __future__ import annotations

from typing import Any

from lmi_config.configfile.canonical import classify_env


def ordered(items: dict[str, str]) -> list[tuple[str, str]]:
    """Model-level keys first (engine, batch_size …), then option.* keys, each sorted: deterministic."""
    return sorted(
        items.items(), key=lambda pair: (pair[0].startswith("option."), pair[0] != "engine", pair[0])
    )


def convert_items(
    effective: list[tuple[str, str]], process_env: list[tuple[str, str]], to: str
) -> tuple[list[tuple[str, str]], dict[str, str], list[str]]:
    """Prepare a converted configuration: (items, extra env, what cannot be carried over)."""
    from lmi_config.secrets import looks_like_secret, secret_variable_names

    lost: list[str] = []
    extra: dict[str, str] = {}
    kept = []
    for key, value in effective:
        if key.upper() in secret_variable_names() or looks_like_secret(value, key):
            lost.append(
                f"{key} not copied: credentials are never written by lmi-config; pass it at deploy time"
            )
        else:
            kept.append((key, value))
    effective = kept
    for name, value in process_env:
        if name in secret_variable_names():
            lost.append(
                f"{name} not copied: credentials are never written by lmi-config; pass it at deploy time"
            )
        elif to == "properties":
            lost.append(f"{name} is a process environment variable; serving.properties cannot set it")
        else:
            extra[name] = value
    return effective, extra, lost


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
