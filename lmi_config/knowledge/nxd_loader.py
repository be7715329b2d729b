"""NxD Inference's start-up checks and what it builds from an LMI configuration, as data.

- ``data/nxd_checks.json`` (scripts/gen_nxd_checks.py): every check of each pinned NxD Inference version,
  and ``data/nxd_check_coverage.json``: the judgement that covers each decidable one. The judge asks
  :func:`nxd_checks` for the checks a rule covers at the image's version, to quote their message and line.
- ``data/nxd_loader.json`` (scripts/gen_nxd_loader.py): the NeuronConfig arguments vllm-neuronx builds from
  vLLM's configuration, NeuronConfig's own defaults, each model class's tables, and which attributes
  transformers' configuration classes set.

Both are read only when a judgement's precondition holds (an NxD Inference configuration).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from lmi_config.knowledge import load_data

_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")
_NAME = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class NxdCheck:
    """One start-up check as one NxD Inference version has it."""

    identity: str
    version: str
    path: str  # below src/: neuronx_distributed_inference/models/config.py
    line: int
    function: str
    message: str  # the source's skeleton: literal text, each placeholder as {source text}
    url: str
    conditions: tuple[str, ...] = ()
    exception: str = ""

    @property
    def short_path(self) -> str:
        return self.path.removeprefix("neuronx_distributed_inference/")

    @property
    def cited(self) -> str:
        """``models/config.py:117`` and its URL at the version's tag."""
        return f"{self.short_path}:{self.line} {self.url}"

    def message_with(self, values: Mapping[str, object]) -> str:
        """The message as NxD Inference prints it, each placeholder filled in by its source text or the last
        of its names in ``values`` (the key "" fills any other)."""

        def fill(match: re.Match[str]) -> str:
            text = match.group(1).strip()
            if text in values:
                return str(values[text])
            key = next((name for name in reversed(_NAME.findall(text)) if name in values), None)
            if key is None and "" in values:
                key = ""  # the value of an expression (a comprehension) that names no value given
            return str(values[key]) if key is not None else match.group(0)

        return " ".join(_PLACEHOLDER.sub(fill, self.message).split())

    def said(self, values: Mapping[str, object]) -> str:
        """What the start-up log shows: the message filled in, or for an assertion without one the
        ``AssertionError`` and the asserted condition."""
        if self.message:
            return self.message_with(values)
        last = self.conditions[-1] if self.conditions else ""
        asserted = last[4:] if last.startswith("not ") else f"not ({last})"
        return f"{self.exception or 'AssertionError'} (assert {asserted})"


@cache
def _coverage() -> dict[str, tuple[str, ...]]:
    found: dict[str, list[str]] = {}
    for judgement in load_data("nxd_check_coverage.json")["covered"]:
        found.setdefault(judgement["rule"], []).extend(judgement["checks"])
    return {rule: tuple(ids) for rule, ids in found.items()}


@cache
def nxd_checks(rule: str, version: str) -> tuple[NxdCheck, ...]:
    """The checks ``rule`` covers that NxD Inference ``version`` makes, in the coverage file's order."""
    catalogue = load_data("nxd_checks.json")["checks"]
    found = []
    for identity in _coverage().get(rule, ()):
        entry = catalogue.get(identity)
        if entry is None or version not in entry["lines"]:
            continue
        line = int(entry["lines"][version])
        path = (entry.get("moved") or {}).get(version, entry["file"])
        url = (
            f"https://github.com/aws-neuron/neuronx-distributed-inference/blob/v{version}/src/{path}#L{line}"
        )
        found.append(
            NxdCheck(
                identity,
                version,
                path,
                line,
                entry["function"],
                entry["message"],
                url,
                tuple(entry["conditions"]),
                entry.get("exception") or "",
            )
        )
    return tuple(found)


def nxd_check(rule: str, version: str, path: str, function: str) -> NxdCheck | None:
    """The check ``rule`` covers in ``path`` (below neuronx_distributed_inference/) and ``function``."""
    return next(
        (
            check
            for check in nxd_checks(rule, version)
            if check.short_path == path and check.function == function
        ),
        None,
    )


def loader() -> Mapping[str, Any]:
    """vllm-neuronx's NxD Inference loader: architectures, default NeuronConfig arguments, their sources."""
    value: Mapping[str, Any] = load_data("nxd_loader.json")["loader"]
    return value


def nxdi_version(version: str) -> Mapping[str, Any] | None:
    """NxD Inference's defaults and tables at a pinned version (None: not read)."""
    value: Mapping[str, Any] | None = load_data("nxd_loader.json")["versions"].get(version)
    return value


def transformers_configs() -> Mapping[str, Any]:
    """Which NxDI-required attributes each model type's transformers configuration class sets."""
    value: Mapping[str, Any] = load_data("nxd_loader.json")["transformers"]
    return value
