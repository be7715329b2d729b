"""Whether a file is an LMI configuration at all, by its content: a repository's ``log4j.properties``,
a Spring ``application.properties`` or an application's ``.env`` match the names lint looks for
(and a pre-commit hook's ``files:`` pattern), but hold nothing the container reads; linting them
would report every key as unknown and fail ``--strict`` on files that are none of its business.

A file is an LMI configuration when it is named ``serving.properties`` (the one file the container
reads by name), or when it sets a key the container reads: an ``option.*`` key (or one a keystroke
away from the prefix, ``optoin.``), a top-level DJL key of the options catalogue (``engine``,
``job_queue_size`` …), or a variable the container reads as configuration (``OPTION_*``,
``SERVING_*``, ``HF_MODEL_ID``, ``TENSOR_PARALLEL_DEGREE``, the TGI names it translates). A variable
every process may have (``HF_TOKEN``, ``AWS_*``, ``PATH``) does not make a file one. A file its reader
could not make sense of counts when its text names such a key anywhere, or when it holds nothing
readable and its name says what it is (``environment.json``), so a broken configuration is still
reported, not skipped (a ``tsconfig.json`` with comments is not).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lmi_config.configfile.loader import SourceFile

ALWAYS = "serving.properties"
# what only an LMI configuration names: its keys, and the Environment of a SageMaker CreateModel document
_MENTIONS = re.compile(
    r'\boption\.[A-Za-z_]|\bOPTION_[A-Z0-9_]|\bHF_MODEL_ID\b|\bTENSOR_PARALLEL_DEGREE\b|"Environment"\s*:'
)


def holds_lmi_configuration(source: SourceFile, beside_serving_properties: bool = False) -> bool:
    """Whether ``source`` is an LMI configuration (see the module); standard input always is. An
    env file beside a ``serving.properties`` (the model directory's) also counts when it sets only
    what the container's processes read (``NEURON_CC_FLAGS``, ``VLLM_*``)."""
    import os

    if source.path in ("<stdin>", "-") or os.path.basename(source.path) == ALWAYS:
        return True
    names = [name for name, _, _ in source.assignments()]
    if source.properties is not None:
        if any(_is_container_key(name) for name in names):
            return True
        unparsed = bool(source.properties.errors)
    else:
        if any(_is_container_variable(name, beside_serving_properties) for name in names):
            return True
        unparsed = bool(source.env.errors) if source.env is not None else True
    if not unparsed:
        return False
    # a file its reader could not read at all (JSON that is not an object, nested too deep) is
    # reported when it says what it is meant to be: by a key it names, or by its name
    return _MENTIONS.search(source.text) is not None or (not names and _named_like_one(source.path))


_NAMES = ("serving", "environment", "sagemaker", "lmi", "djl")


def _named_like_one(path: str) -> bool:
    import os

    name = os.path.basename(path).lower()
    return any(word in name for word in _NAMES)


def _is_container_key(key: str) -> bool:
    from lmi_config.knowledge.options import catalogue

    prefix, dot, _ = key.partition(".")
    if dot and prefix == "option":
        return True
    if dot and len(prefix) > 3:
        from lmi_config.fixers.fileformat import is_misspelling

        if is_misspelling(prefix.lower(), "option"):
            return True
    return key in catalogue()


def _is_container_variable(name: str, process_too: bool) -> bool:
    from lmi_config.knowledge.environment import (
        named_variables,
        prefix_rules,
        process_env_pattern,
        tgi_translations,
    )

    if name in named_variables() or name in tgi_translations():
        return True
    if process_too and process_env_pattern().fullmatch(name):
        return True
    return any(name.startswith(rule["prefix"]) and len(name) > len(rule["prefix"]) for rule in prefix_rules())


MAX_NAMED = 5  # a repository of many unrelated .properties files gets one line, not one per file


def skipped_note(paths: list[str]) -> str:
    """One line for every file left out as no LMI configuration."""
    shown = ", ".join(paths[:MAX_NAMED]) + (
        f" and {len(paths) - MAX_NAMED} more" if len(paths) > MAX_NAMED else ""
    )
    return (
        f"skipped {len(paths)} file(s) that hold no LMI configuration (no option.* or DJL key, no OPTION_* "
        f"or other variable the container reads): {shown}"
    )
