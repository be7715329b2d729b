"""Which ``rope_scaling`` the image's transformers and vLLM refuse (``data/rope_scaling.json``, generated
from their code by ``scripts/gen_rope_scaling.py``).

transformers validates a model's ``rope_scaling`` in its configuration class when ``AutoConfig`` reads
config.json: up to 4.42 with the class's own ``_rope_scaling_validation`` (Llama: two fields, ``type``
linear or dynamic, a float factor above 1), from 4.43 mostly with the shared ``rope_config_validation``
(each type's required keys). vLLM's ``get_rope`` refuses a type none of its branches handles.
"""

from collections.abc import Mapping
from functools import cache
from typing import Any, NamedTuple

from lmi_config.knowledge import load_data, version_tuple


class RopeCheck(NamedTuple):
    """One raise of a configuration class's own validation, as the generator classified its test."""

    check: str  # fields | type | factor | other (a test this project does not evaluate)
    message: str  # the source's skeleton: literal text, each formatted value as {source}
    source: str  # path:line and its URL at the release tag
    fields: int | None = None  # fields: the number of fields the dict must have
    key: str | None = None  # type / factor: the rope_scaling key the test reads
    types: tuple[str, ...] = ()  # type: the types of the class's list
    minimum: float | None = None  # factor: the bound
    inclusive: bool = False  # factor: whether the bound itself is accepted


class ConfigValidation(NamedTuple):
    """How one transformers release's configuration class of a model type validates rope_scaling."""

    version: str
    config_class: str
    called_at: str
    own: tuple[RopeCheck, ...] | None  # the class's own checks, in order; None: the shared function
    shared_types: Mapping[str, tuple[str, ...]]  # the shared function's types -> their required keys
    shared_type_source: Mapping[str, str]
    unknown_type_message: str | None  # the shared function raises for a type it has no validation for
    unknown_type_source: str | None  # (else it only logs it)
    missing_keys_message: str | None
    missing_keys_source: str | None


class VllmRope(NamedTuple):
    """get_rope of one vLLM release: the types its branches handle and how it reads the type."""

    version: str
    read_from: str
    types: frozenset[str]
    type_keys: tuple[str, ...]  # the first of these present names the type
    renames: Mapping[str, str]  # legacy types the config reader renames first
    message: str
    source: str


@cache
def _data() -> dict[str, Any]:
    return dict(load_data("rope_scaling.json"))


@cache
def config_validation(transformers_version: str, model_type: str) -> ConfigValidation | None:
    """How transformers ``transformers_version`` validates a ``model_type``'s rope_scaling; None when the
    version is not in the data or its configuration class does not validate it."""
    release = _data()["transformers"].get(transformers_version)
    entry = release["model_types"].get(model_type) if release else None
    if entry is None:
        return None
    shared = release["shared"] or {}
    own = (
        tuple(
            RopeCheck(
                check=row["check"],
                message=row["message"],
                source=row["source"],
                fields=row.get("count"),
                key=row.get("key"),
                types=tuple(row.get("types") or ()),
                minimum=row.get("minimum"),
                inclusive=bool(row.get("inclusive")),
            )
            for row in entry["checks"]
        )
        if entry["validation"] == "own"
        else None
    )
    missing = shared.get("missing_keys") or {}
    unknown = shared.get("unknown_type_refusal") or {}
    return ConfigValidation(
        version=transformers_version,
        config_class=entry["class"],
        called_at=entry["called_at"],
        own=own,
        shared_types={name: tuple(row["required_keys"]) for name, row in (shared.get("types") or {}).items()},
        shared_type_source={name: row["source"] for name, row in (shared.get("types") or {}).items()},
        unknown_type_message=unknown.get("message"),
        unknown_type_source=unknown.get("source"),
        missing_keys_message=missing.get("message"),
        missing_keys_source=missing.get("source"),
    )


@cache
def vllm_rope(vllm_version: str | None) -> VllmRope | None:
    """get_rope's facts for an image's vLLM version (a development build: the release it was read from)."""
    rows = _data()["vllm"]
    row = rows.get(vllm_version or "")
    if row is None:
        return None
    if row.get("same_as"):
        row = rows[row["same_as"]]
    return VllmRope(
        version=vllm_version or "",
        read_from=row["read_from"],
        types=frozenset(row["types"]),
        type_keys=tuple(row["type_keys"]),
        renames=dict(row["renames"]),
        message=row["message"],
        source=row["source"],
    )


def first_vllm_handling(rope_type: str) -> str | None:
    """The first vLLM release of the data whose get_rope handles ``rope_type`` (after its renames)."""
    for version in sorted(_data()["vllm"], key=version_tuple):
        rope = vllm_rope(version)
        if rope is not None and rope.renames.get(rope_type, rope_type) in rope.types:
            return rope.read_from
    return None
