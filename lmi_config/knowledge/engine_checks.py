"""The start-up checks vLLM makes, read from each pinned release's code (``data/vllm_checks.json``,
``scripts/gen_vllm_checks.py``), and which judgement covers each (``data/vllm_check_coverage.json``).

The judge asks :func:`covered_checks` for the checks a rule covers at the image's vLLM version: a
judgement fires only where that version's code makes the check, and quotes the engine's own message
(:meth:`EngineCheck.message_with`) and its file and line. The catalogue is read only when a
judgement's cheap precondition holds, so a lint run that needs none never loads it.
"""

import re
from collections.abc import Mapping
from functools import cache
from typing import Any, NamedTuple

from lmi_config.knowledge import load_data

GITHUB = "https://github.com/vllm-project/vllm/blob/v{version}/{path}#L{line}"
_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")


class EngineCheck(NamedTuple):
    """One start-up check as one vLLM release has it."""

    identity: str
    release: str  # the PyPI release whose sources were read for the image's version
    path: str
    line: int
    function: str
    conditions: tuple[str, ...]
    message: str  # the source's skeleton: literal text, each placeholder as {source text}
    # a message joined from parts the code appends (PEFTHelper.validate_legal): each part's condition
    # and message at this release
    parts: tuple[Mapping[str, str], ...] = ()

    @property
    def url(self) -> str:
        """The line on GitHub at the release's tag."""
        return GITHUB.format(version=self.release, path=self.path, line=self.line)

    @property
    def cited(self) -> str:
        """``path:line`` and its URL."""
        return f"{self.path}:{self.line} {self.url}"

    def message_with(self, values: Mapping[str, object]) -> str:
        """The message as vLLM prints it, each placeholder whose last name is in ``values`` filled in
        (``{self.max_model_len}`` by ``values["max_model_len"]``); others stay as written."""

        return self.fill(self.message, values)

    @staticmethod
    def fill(message: str, values: Mapping[str, object]) -> str:
        """``message`` (a skeleton) with each placeholder whose last name is in ``values`` filled in."""

        def fill(match: re.Match[str]) -> str:
            name = re.split(r"[.\s]", match.group(1).strip())[-1]
            return str(values[name]) if name in values else match.group(0)

        return " ".join(_PLACEHOLDER.sub(fill, message).split())


@cache
def _catalogue() -> dict[str, Any]:
    return dict(load_data("vllm_checks.json"))


@cache
def _covered_by() -> dict[str, tuple[str, ...]]:
    """Rule slug -> the check identities the coverage file says it covers."""
    found: dict[str, list[str]] = {}
    for judgement in load_data("vllm_check_coverage.json")["covered"]:
        found.setdefault(judgement["rule"], []).extend(judgement["checks"])
    return {rule: tuple(ids) for rule, ids in found.items()}


def release_read_for(vllm_version: str | None) -> str | None:
    """The PyPI release whose code stands for an image's vLLM version (None: not in the catalogue)."""
    if not vllm_version:
        return None
    row = _catalogue()["versions"].get(vllm_version)
    return str(row["read_from"]) if row else None


@cache
def covered_checks(rule: str, vllm_version: str | None) -> tuple[EngineCheck, ...]:
    """The checks ``rule`` covers that the image's vLLM version makes, in identity order; empty when
    the version is not in the catalogue or its code has none of them."""
    release = release_read_for(vllm_version)
    if release is None:
        return ()
    checks = _catalogue()["checks"]
    found = []
    for identity in _covered_by().get(rule, ()):
        entry = checks.get(identity)
        if entry is None or release not in entry["lines"]:
            continue
        found.append(
            EngineCheck(
                identity=identity,
                release=release,
                path=entry.get("moved", {}).get(release, entry["file"]),
                line=int(entry["lines"][release]),
                function=entry["function"],
                conditions=tuple(entry["conditions"]),
                message=entry["message"],
                parts=tuple((entry.get("parts") or {}).get(release, ())),
            )
        )
    return tuple(found)


def forces_chunked_prefill(vllm_version: str | None) -> bool:
    """Whether the version's V1 defaults turn chunked prefill on whatever the configuration says
    (vLLM 0.8-0.10: "V1 always uses chunked prefills"), as read from its EngineArgs."""
    row = _catalogue()["versions"].get(vllm_version or "")
    return bool(row and row.get("forces_chunked_prefill"))
