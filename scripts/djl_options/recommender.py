"""LmiConfigRecommender.java read with regular expressions: per method, what it reads, writes and assigns."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

RECOMMENDER = "wlm/src/main/java/ai/djl/serving/wlm/LmiConfigRecommender.java"


JAVA_METHOD = re.compile(
    r"(?:(?:public|private|protected|static|final)\s+)+[\w<>\[\],.? ]+?\s+(\w+)\s*\([^)]*\)\s*(?:throws [\w., ]+)?\{"
)


def mask_java(text: str) -> str:
    """Comments and the inside of string literals blanked out, offsets kept."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'', re.S)

    def blank(match: re.Match[str]) -> str:
        token = match.group()
        if token[0] in "\"'":
            return token[0] + " " * (len(token) - 2) + token[-1]
        return re.sub(r"[^\n]", " ", token)

    return pattern.sub(blank, text)


def matching(masked: str, start: int, opening: str, closing: str) -> int:
    """Index just past the bracket that closes the one at ``start``."""
    depth = 0
    for index in range(start, len(masked)):
        depth += {opening: 1, closing: -1}.get(masked[index], 0)
        if depth == 0:
            return index + 1
    raise ValueError(f"unbalanced {opening} at {start}")


def java_blocks(
    text: str, masked: str, start: int, end: int, conditions: list[str]
) -> Iterator[tuple[int, int, list[str]]]:
    """(start, end, conditions) of every if / else-if / else block in [start, end), nested ones too."""
    position = start
    for found in re.finditer(r"\bif\s*\(", masked[start:end]):
        at = start + found.start()
        if at < position:
            continue
        chain: list[str] = []
        cursor = at
        while True:
            parenthesis = masked.index("(", cursor)
            close = matching(masked, parenthesis, "(", ")")
            condition = " ".join(text[parenthesis + 1 : close - 1].split())
            block_start, block_end = _java_body(masked, close)
            yield from _with_nested(
                text, masked, block_start, block_end, [*conditions, *[f"!({c})" for c in chain], condition]
            )
            chain.append(condition)
            following = re.match(r"\s*else\s+if\s*\(|\s*else\s*", masked[block_end:])
            if not following or not following.group().strip():
                break
            if "if" in following.group():
                cursor = block_end + following.group().index("if")
                continue
            else_start, else_end = _java_body(masked, block_end + following.end())
            yield from _with_nested(
                text, masked, else_start, else_end, [*conditions, *[f"!({c})" for c in chain]]
            )
            block_end = else_end
            break
        position = block_end


def _java_body(masked: str, after: int) -> tuple[int, int]:
    brace = re.match(r"\s*\{", masked[after:])
    if brace:
        opening = after + brace.end() - 1
        return opening, matching(masked, opening, "{", "}")
    return after, masked.index(";", after) + 1


def _with_nested(
    text: str, masked: str, start: int, end: int, conditions: list[str]
) -> Iterator[tuple[int, int, list[str]]]:
    yield start, end, conditions
    yield from java_blocks(text, masked, start + 1, end - 1, conditions)


JAVA_PATTERNS = {
    "writes": re.compile(r'\.setProperty\(\s*"([^"]+)"\s*,\s*(.+?)\)\s*;', re.S),
    "reads": re.compile(r'\.(getProperty|containsKey)\(\s*"([^"]+)"\s*(?:,\s*([^()]+?))?\)'),
    "environment": re.compile(r'(?:getenv|getEnvOrSystemProperty)\(\s*"([^"]+)"\s*(?:,\s*"([^"]*)")?'),
    "assignments": re.compile(
        r'(?<![=!<>])\b([a-z]\w*)\s*=\s*("[^"]*"|-?\d+|true|false|[^;?]+\?\s*"[^"]*"\s*:\s*"[^"]*")\s*;'
    ),
}


def java_value(text: str) -> Any:
    """A Java literal as JSON (strings unquoted, integers as numbers), else the expression text."""
    text = " ".join(text.split())
    if re.fullmatch(r'"[^"]*"', text):
        return text[1:-1]
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return {"true": True, "false": False}.get(text, {"expression": text})


def recommender_facts(text: str | None) -> dict[str, dict[tuple, dict[str, Any]]]:
    """Per method of LmiConfigRecommender.java: property reads and writes, env reads, literal assignments.

    ``text`` is the file's content, None on a branch without it (an empty result then).
    """
    if text is None:
        return {"recommender": {}, "recommender_maps": {}, "recommender_defaults": {}}
    masked = mask_java(text)
    methods: dict[tuple, dict[str, Any]] = {}
    for found in JAVA_METHOD.finditer(masked):
        start, end = found.end() - 1, matching(masked, found.end() - 1, "{", "}")
        blocks = list(java_blocks(text, masked, start + 1, end - 1, []))
        record: dict[str, Any] = {
            "method": found.group(1),
            "path": RECOMMENDER,
            "line": text.count("\n", 0, found.start()) + 1,
        }
        for kind, pattern in JAVA_PATTERNS.items():
            # matched on the masked text (no hits in comments), values read from the real text
            record[kind] = [
                _java_item(kind, text, match, blocks) for match in pattern.finditer(masked, start, end)
            ]
        if any(record[kind] for kind in JAVA_PATTERNS):
            methods[(found.group(1),)] = record
    maps = {}
    for found in re.finditer(r"Map<String, String> (\w+)\s*=\s*Map\.ofEntries\((.*?)\);", text, re.S):
        entries = dict(re.findall(r'Map\.entry\("([^"]+)",\s*"([^"]+)"\)', found.group(2)))
        line = text.count("\n", 0, found.start()) + 1
        maps[(found.group(1),)] = {
            "name": found.group(1),
            "entries": entries,
            "path": RECOMMENDER,
            "line": line,
        }
    return {
        "recommender": methods,
        "recommender_maps": maps,
        "recommender_defaults": recommender_defaults(methods),
    }


ROLLING_BATCH_TEST = re.compile(
    r'^"([\w-]+)"\.equals\(rollingBatch\)(?:\s*\|\|\s*"([\w-]+)"\.equals\(rollingBatch\))*$'
)


def _rolling_batches(when: list[str]) -> list[str] | None:
    """The rolling batches a plain ``"a".equals(rollingBatch) || ...`` test selects, ``["*"]`` with no test.

    Earlier branches of an else-if chain (``!(test)``) are implied when they are plain tests too
    (the values exclude each other). Anything else is left to the raw method records: None.
    """
    if not when:
        return ["*"]
    earlier_plain = all(c.startswith("!(") and ROLLING_BATCH_TEST.match(c[2:-1]) for c in when[:-1])
    if earlier_plain and ROLLING_BATCH_TEST.match(when[-1]):
        return re.findall(r'"([\w-]+)"\.equals', when[-1])
    return None


def recommender_defaults(methods: dict[tuple, dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    """Per rolling batch: the default max_rolling_batch_size and whether mpi_mode is set, where the test is plain."""
    found: dict[tuple, dict[str, Any]] = {}
    sizes = methods.get(("setRollingBatchSize",), {"assignments": []})
    assignments = [item for item in sizes["assignments"] if item["variable"] == "rollingBatchSize"]
    # an assignment under a test we do not read (an else, a feature check) may override the default
    readable = all(_rolling_batches(item["when"]) is not None for item in assignments)
    for item in assignments:
        for rolling_batch in _rolling_batches(item["when"]) or []:
            if rolling_batch == "*" and not readable:
                continue
            key = ("option.max_rolling_batch_size", rolling_batch)
            found[key] = {
                "key": key[0],
                "rolling_batch": rolling_batch,
                "value": item["value"],
                "path": RECOMMENDER,
                "line": sizes["line"],
            }
    for method in methods.values():
        for item in method["writes"]:
            if item["key"] != "option.mpi_mode" or item["value"] != "true":
                continue
            for rolling_batch in _rolling_batches(item["when"]) or []:
                key = ("option.mpi_mode", rolling_batch)
                found[key] = {
                    "key": key[0],
                    "rolling_batch": rolling_batch,
                    "value": "true",
                    "path": RECOMMENDER,
                    "line": method["line"],
                }
    return found


def _java_item(
    kind: str, text: str, match: re.Match[str], blocks: list[tuple[int, int, list[str]]]
) -> dict[str, Any]:
    inside = [conditions for start, end, conditions in blocks if start <= match.start() < end]
    when = max(inside, key=len) if inside else []

    def group(index: int) -> str | None:
        return None if match.start(index) < 0 else text[match.start(index) : match.end(index)]

    if kind == "writes":
        return {"key": group(1), "value": java_value(group(2) or ""), "when": when}
    if kind == "reads":
        default = group(3)
        return {
            "key": group(2),
            "call": group(1),
            "default": None if default is None else java_value(default),
            "when": when,
        }
    if kind == "environment":
        return {"name": group(1), "default": group(2), "when": when}
    return {"variable": group(1), "value": java_value(group(2) or ""), "when": when}
