"""How the files are written: syntax, duplicates, blanks, comments, separators, encodings.

The server reads ``serving.properties`` with ``java.util.Properties`` and the AOT partition
tool with its own line splitter (djl-serving.md §7); these rules flag text the two read
differently from what the author meant.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from lmi_config.configfile.canonical import classify_env, env_name_for_key
from lmi_config.configfile.text import shorten
from lmi_config.knowledge.options import VARIABLE_NAME
from lmi_config.rules.base import Example, Finding, LintUnit, rule

_FORMAT_SOURCE = (
    "djl-serving.md §7 (java.util.Properties.load semantics; serving/docker/partition/utils.py::load_properties) — "
    "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/wlm/src/main/java/ai/djl/serving/wlm/ModelInfo.java "
    "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/serving/docker/partition/utils.py "
    "https://docs.oracle.com/javase/8/docs/api/java/util/Properties.html#load-java.io.Reader-"
)


@rule(
    code="LMI001",
    slug="parse-error",
    severity="error",
    summary="A line the container cannot read as a setting.",
    why=(
        "Properties.load refuses a malformed \\uXXXX escape and the whole file fails to load; "
        "an env line that is not KEY=VALUE or a JSON document that is not an object of strings "
        "is dropped or rejected by the tool that passes it on."
    ),
    bad=Example("option.model_id=\\u00zz\n"),
    good=Example("option.model_id=meta-llama/Llama-3.1-8B-Instruct\n"),
    source=_FORMAT_SOURCE,
)
def parse_error(unit: LintUnit) -> Iterator[Finding]:
    for source in unit.sources:
        if source.properties is not None:
            for error in source.properties.errors:
                yield unit.finding(
                    "LMI001",
                    f"{error}: Properties.load fails on this line; write the character as \\u followed by 4 hex digits",
                    path=source.path,
                    line=error.line,
                )
        if source.env is not None:
            for env_error in source.env.errors:
                advice = (
                    "" if env_error.severity != "error" or source.kind == "json" else "; write NAME=value"
                )
                yield unit.finding(
                    "LMI001",
                    f"{env_error.message}{advice}",
                    path=source.path,
                    line=env_error.line,
                    severity=env_error.severity,
                )
    for message, line in unit.pragmas.problems:
        yield unit.finding("LMI001", message, line=line or None, severity="warning")


@rule(
    code="LMI002",
    slug="duplicate-key",
    severity="warning",
    summary="The same key is set twice in one file; only the last value counts.",
    why="Properties.load and shells keep the last value silently, so an edit to the first one has no effect.",
    bad=Example("option.tensor_parallel_degree=2\noption.model_id=gpt2\noption.tensor_parallel_degree=4\n"),
    good=Example("option.model_id=gpt2\noption.tensor_parallel_degree=4\n"),
    source=_FORMAT_SOURCE,
)
def duplicate_key(unit: LintUnit) -> Iterator[Finding]:
    for source in unit.sources:
        last_line = {key: line for key, _, line in source.assignments()}
        document = source.properties or source.env
        if document is None or len(last_line) == len(document.entries):
            continue  # no key twice: the common case
        seen: dict[str, int | None] = {}
        for key, _, line in source.assignments():
            if key in seen:
                yield unit.finding(
                    "LMI002",
                    f"{key} is also set on line {seen[key]}; the value on line {last_line[key]} wins — remove the other",
                    path=source.path,
                    line=line,
                    key=key,
                )
            else:
                seen[key] = line


def _blank_name(text: str) -> str:
    count = len(text) - len(text.rstrip(" \t\f"))
    return f"{count} trailing blank{'s' if count > 1 else ''}"


@rule(
    code="LMI003",
    slug="trailing-whitespace",
    severity="warning",
    summary="A value ends with blanks that the container keeps.",
    why=(
        "java.util.Properties keeps trailing whitespace in values: `vllm ` is not `vllm`, and "
        "`true ` is not a boolean, so the option fails validation or is silently misread."
    ),
    bad=Example("option.model_id=gpt2\noption.rolling_batch=vllm \n"),
    good=Example("option.model_id=gpt2\noption.rolling_batch=vllm\n"),
    source=_FORMAT_SOURCE,
)
def trailing_whitespace(unit: LintUnit) -> Iterator[Finding]:
    for source in unit.sources:
        if source.properties is None:
            continue
        for entry in source.properties.entries:
            if entry.value and entry.value[-1] in " \t\f":
                yield unit.finding(
                    "LMI003",
                    f"value of {entry.key} ends with {_blank_name(entry.value)} that the container keeps "
                    f"({shorten(entry.value)!r}); delete them",
                    path=source.path,
                    line=entry.line,
                    key=entry.key,
                )


INLINE_COMMENT = re.compile(r"\s#(?!#)(?=\s|$|[A-Za-z])")


@rule(
    code="LMI004",
    slug="inline-comment",
    severity="warning",
    summary="`key=value # comment`: the comment becomes part of the value.",
    why="serving.properties has only whole-line comments; ` # …` after a value is kept in the value.",
    bad=Example("option.model_id=gpt2\noption.max_rolling_batch_size=32 # fits inf2\n"),
    good=Example("option.model_id=gpt2\n# fits inf2\noption.max_rolling_batch_size=32\n"),
    source=_FORMAT_SOURCE,
)
def inline_comment(unit: LintUnit) -> Iterator[Finding]:
    for source in unit.sources:
        if source.properties is not None and "#" in source.text:
            for entry in source.properties.entries:
                match = INLINE_COMMENT.search(entry.value)
                if match and not entry.value.lstrip().startswith(("{", "[")):
                    kept = entry.value[: match.start()].rstrip()
                    yield unit.finding(
                        "LMI004",
                        f"the container reads {entry.key} as {shorten(entry.value)!r}, comment included; "
                        f"move the comment to its own line above (value {shorten(kept)!r})",
                        path=source.path,
                        line=entry.line,
                        key=entry.key,
                    )


@rule(
    code="LMI005",
    slug="separator-style",
    severity="warning",
    summary="`key: value` or `key value`, which the AOT partition tool cannot read.",
    why=(
        "The server accepts `=`, `:` and whitespace separators, but djl-serving's partition tool "
        "(used for ahead-of-time Neuron compilation) splits each line on the first `=` only, and "
        "does not join continued lines."
    ),
    bad=Example("option.model_id: gpt2\n"),
    good=Example("option.model_id=gpt2\n"),
    source=_FORMAT_SOURCE,
)
def separator_style(unit: LintUnit) -> Iterator[Finding]:
    for source in unit.sources:
        if source.properties is None:
            continue
        for entry in source.properties.entries:
            if entry.separator in (":", " "):
                shown = "':'" if entry.separator == ":" else "whitespace"
                yield unit.finding(
                    "LMI005",
                    f"{entry.key} uses {shown} as separator; write {entry.key}={entry.value.strip()} "
                    "so the partition tool reads it too",
                    path=source.path,
                    line=entry.line,
                    key=entry.key,
                )
            elif entry.continued:
                yield unit.finding(
                    "LMI005",
                    f"{entry.key} continues over lines {entry.line}-{entry.end_line} with a backslash; "
                    "the partition tool reads only the first line — put the value on one line",
                    path=source.path,
                    line=entry.line,
                    key=entry.key,
                )


@rule(
    code="LMI006",
    slug="env-style-key",
    severity="warning",
    summary="An environment variable written into serving.properties, or an option key in an env file.",
    why=(
        "serving.properties cannot set process environment variables (`VLLM_USE_V1=0` there is an "
        "unknown model key), and the container maps only OPTION_* names from the environment, so "
        "`option.dtype=bf16` in an env file is never read."
    ),
    bad=Example("option.model_id=gpt2\nOPTION_DTYPE=bf16\n"),
    good=Example("option.model_id=gpt2\noption.dtype=bf16\n"),
    source=(
        "djl-serving.md §2 (env mapping) and sagemaker-and-user-pain.md §4 #28 (djl-serving#2784) — "
        "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/wlm/src/main/java/ai/djl/serving/wlm/ModelInfo.java "
        "https://github.com/deepjavalibrary/djl-serving/issues/2784"
    ),
)
def env_style_key(unit: LintUnit) -> Iterator[Finding]:
    for source in unit.sources:
        if source.properties is not None:
            last = {entry.key: entry for entry in source.properties.entries}  # duplicates are LMI002's
            for entry in last.values():
                if not VARIABLE_NAME.fullmatch(entry.key):
                    continue
                from lmi_config.rules.suggestions import same_but_case  # only for a key written as a variable

                mapping = classify_env(entry.key)
                same = same_but_case(entry.key)
                if mapping.kind == "config" and mapping.key:
                    advice = f"write {mapping.key}={entry.value.strip()}"
                elif same is not None:
                    advice = f"the container's keys are case-sensitive: write {same}={entry.value.strip()}"
                else:
                    advice = f"set it as an environment variable, or use option.env={entry.key}={entry.value.strip()}"
                yield unit.finding(
                    "LMI006",
                    f"{entry.key} looks like an environment variable; in serving.properties it is an unknown "
                    f"model key — {advice}",
                    path=source.path,
                    line=entry.line,
                    key=entry.key,
                )
        if source.env is not None:
            for env_entry in source.env.entries:
                if classify_env(env_entry.name).kind == "option-style":
                    name = env_name_for_key(env_entry.name) or "SERVING_" + env_entry.name.upper()
                    yield unit.finding(
                        "LMI006",
                        f"{env_entry.name} is a serving.properties key; the container does not read it from the "
                        f"environment — use {name}",
                        path=source.path,
                        line=env_entry.line,
                        key=env_entry.name,
                    )


@rule(
    code="LMI007",
    slug="non-ascii-text",
    severity="warning",
    summary="Non-ASCII characters in serving.properties, which the container reads as ISO-8859-1.",
    why=(
        "Properties.load(InputStream) decodes bytes as ISO-8859-1, so a UTF-8 `é` arrives as `Ã©`; "
        "anything outside ASCII must be written as \\uXXXX."
    ),
    bad=Example("option.model_id=gpt2\noption.chat_template=r\u00e9sum\u00e9\n"),
    good=Example("option.model_id=gpt2\noption.chat_template=r\\u00e9sum\\u00e9\n"),
    source=_FORMAT_SOURCE,
)
def non_ascii_text(unit: LintUnit) -> Iterator[Finding]:
    for source in unit.sources:
        if source.properties is None or source.text.isascii():
            continue
        for entry in source.properties.entries:
            raw = entry.raw_value + entry.key
            if not raw.isascii():
                try:
                    meant = raw.encode("latin-1").decode("utf-8")
                    detail = f" (the file holds UTF-8 {meant!r}, read as {raw!r})"
                except UnicodeError:
                    detail = ""
                yield unit.finding(
                    "LMI007",
                    f"{entry.key} contains non-ASCII characters{detail}; write them as \\uXXXX escapes",
                    path=source.path,
                    line=entry.line,
                    key=entry.key,
                )


# $VAR or ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:=default} … as a shell would expand them
_SHELL_EXPANSION = re.compile(
    r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?P<rest>[^}]*)\}|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)


@rule(
    code="LMI008",
    slug="shell-expansion",
    severity="warning",
    summary="`$VAR` or `${VAR:-default}` in an env file: nothing expands it; the container reads the text.",
    why=(
        "`docker run --env-file` uses every value as written (no interpolation), SageMaker passes its "
        "Environment map as is, and the container reads OPTION_* values literally; so "
        "OPTION_TENSOR_PARALLEL_DEGREE=$TP reaches the container as the four characters `$TP` and fails "
        "validation, or silently becomes a string where a number was meant."
    ),
    bad=Example("HF_MODEL_ID=gpt2\nOPTION_GPU_MEMORY_UTILIZATION=${GPU_UTIL:-0.9}\n", kind="env"),
    good=Example("HF_MODEL_ID=gpt2\nOPTION_GPU_MEMORY_UTILIZATION=0.9\n", kind="env"),
    source=(
        "docker/cli pkg/kvfile (env files: values used as-is, no interpolation or substitution); SageMaker "
        "ContainerDefinition.Environment; djl-serving reads OPTION_* values from System.getenv as they are — "
        "https://github.com/docker/cli/blob/3d41bbacb04b2fcfd4b4504323a46cc8da5b7681/pkg/kvfile/kvfile.go "
        "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ContainerDefinition.html "
        "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/wlm/src/main/java/ai/djl/serving/wlm/ModelInfo.java"
    ),
)
def shell_expansion(unit: LintUnit) -> Iterator[Finding]:
    for source in unit.sources:
        if source.env is None or "$" not in source.text:
            continue
        for entry in source.env.entries:
            match = _SHELL_EXPANSION.search(entry.value)
            if match is None:
                continue
            default = match.group("rest") or ""
            fallback = re.match(r":?[-=](.*)", default)
            advice = (
                f"write the value itself (the default here: {fallback.group(1)!r})"
                if fallback and fallback.group(1)
                else "write the value itself, or set it when the file is generated"
            )
            yield unit.finding(
                "LMI008",
                f"{entry.name}={shorten(entry.value)!r}: {match.group()} is not expanded — neither docker --env-file, "
                f"SageMaker nor the container expand variables, so the container reads the text; {advice}",
                path=source.path,
                line=entry.line,
                key=entry.name,
            )
