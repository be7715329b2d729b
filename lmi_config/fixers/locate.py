"""Key-level changes made into line edits of the file that holds the key.

A value is replaced in place (the key as written, its separator, quoting and any trailing comment
are kept); a key the configuration does not set is appended to the primary file. A change that
cannot be written so that the container reads it back as meant (a continued line, a value an env
file cannot carry bare, a removal from JSON) gives no fix rather than a wrong one.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from lmi_config.configfile.canonical import classify_env, env_name_for_key
from lmi_config.escaping import ValueNotCarried, env_line, properties_line
from lmi_config.fixers.edits import Change, Edit, physical_line, split_lines

if TYPE_CHECKING:
    from lmi_config.configfile.loader import SourceFile
    from lmi_config.rules.base import LintUnit


def locate(unit: LintUnit, change: Change) -> tuple[str, Edit] | None:
    """The file and line edit that make ``change``, or None when it cannot be written exactly."""
    setting = unit.config.settings.get(change.key)
    sources = {source.path: source for source in unit.sources}
    if setting is None or setting.origin.line is None:
        if change.action != "set":
            return None
        return _append(unit.target.primary, change)
    source = sources.get(setting.origin.path)
    if source is None:
        return None
    try:
        if source.kind == "properties":
            edit = _properties_edit(source, setting.origin.line, change)
        elif source.kind == "env":
            edit = _env_edit(source, setting.origin.line, setting.origin.variable, change)
        else:
            edit = _json_edit(source, setting.origin.line, setting.origin.variable, change)
    except ValueNotCarried:
        return None
    return (source.path, edit) if edit is not None else None


def as_written(unit: LintUnit, change: Change, path: str) -> Change:
    """``change`` with its keys named as the file at ``path`` names them (``TENSOR_PARALLEL_DEGREE`` in
    an env file, the key as written in serving.properties), for the advice a user reads."""
    sources = {source.path: source for source in unit.sources}
    kind = sources[path].kind if path in sources else "properties"
    setting = unit.config.settings.get(change.key)
    written = change.key
    if (
        setting is not None
        and setting.origin.path == path
        and kind != "properties"
        and setting.origin.variable
    ):
        written = setting.origin.variable
    elif kind != "properties":
        written = env_name_for_key(change.key) or change.key
    new_key = (env_name_for_key(change.new_key) or change.new_key) if kind != "properties" else change.new_key
    return change._replace(key=written, new_key=new_key if change.new_key else "")


def _append(source: SourceFile, change: Change) -> tuple[str, Edit] | None:
    line_count = len(split_lines(source.text))
    try:
        if source.kind == "properties":
            key, value = properties_line(change.key, change.value)
            return source.path, Edit(line_count, "append", f"{key}={value}")
        name = env_name_for_key(change.key)
        if source.kind == "env" and name is not None:
            name, value = env_line(name, change.value)
            return source.path, Edit(line_count, "append", f"{name}={value}")
    except ValueNotCarried:
        return None
    return None  # JSON: a key added to an object would need its neighbour's comma changed


def _properties_edit(source: SourceFile, line: int, change: Change) -> Edit | None:
    document = source.properties
    entry = next((item for item in document.entries if item.line == line), None) if document else None
    if entry is None or entry.continued:
        return None
    text = physical_line(source.text, line)
    if change.action == "remove":
        return Edit(line, "remove")
    indent = text[: len(text) - len(text.lstrip())]
    if change.action == "rename":
        key, _ = properties_line(change.new_key, "")
        if not text[len(indent) :].startswith(entry.key):
            return None
        return Edit(line, "replace", indent + key + text[len(indent) + len(entry.key) :])
    _, value = properties_line(change.key, change.value)
    if entry.separator == "":
        return Edit(line, "replace", text.rstrip(" \t\f") + "=" + value)
    if not text.endswith(entry.raw_value):
        return None
    return Edit(line, "replace", text[: len(text) - len(entry.raw_value)] + value)


def _env_edit(source: SourceFile, line: int, variable: str | None, change: Change) -> Edit | None:
    text = physical_line(source.text, line)
    if variable is None or classify_env(variable).key != change.key:
        return None  # a translated variable (SM_NUM_GPUS, an inverted flag): not rewritten by key
    match = re.match(rf"(\s*(?:export\s+)?){re.escape(variable)}(\s*=\s*)", text)
    if match is None:
        return None
    if change.action == "remove":
        return Edit(line, "remove")
    if change.action == "rename":
        name = env_name_for_key(change.new_key)
        if name is None:
            return None
        env_line(name, "")
        return Edit(line, "replace", match.group(1) + name + text[len(match.group(1)) + len(variable) :])
    head, rest = text[: match.end()], text[match.end() :]
    _, value = env_line(variable, change.value)
    if rest[:1] in ("'", '"'):
        close = rest.find(rest[0], 1)
        if close < 0:
            return None
        return Edit(line, "replace", head + rest[0] + value + rest[0] + rest[close + 1 :])
    comment = re.search(r"\s+#", rest)
    tail = rest[comment.start() :] if comment else ""
    return Edit(line, "replace", head + value + tail)


def _json_edit(source: SourceFile, line: int, variable: str | None, change: Change) -> Edit | None:
    if variable is None or change.action == "remove":
        return None
    text = physical_line(source.text, line)
    pattern = re.compile(rf'("{re.escape(variable)}"\s*:\s*)"((?:[^"\\]|\\.)*)"')
    matches = list(pattern.finditer(text))
    if len(matches) != 1:
        return None
    match = matches[0]
    if change.action == "rename":
        name = env_name_for_key(change.new_key)
        if name is None or f'"{name}"' in source.text:
            return None
        replaced = json.dumps(name) + match.group(1)[len(variable) + 2 :] + f'"{match.group(2)}"'
    else:
        replaced = match.group(1) + json.dumps(change.value, ensure_ascii=False)
    return Edit(line, "replace", text[: match.start()] + replaced + text[match.end() :])
