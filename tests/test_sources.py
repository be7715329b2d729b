"""Every fact and every rule names a public reference a user can open.

Each `source` in lmi_config/data/*.json (any dict that has one, at any depth) and each
registered rule's `source` must contain at least one well-formed https URL on a known public
host; GitHub file links must be pinned to a commit, tag or release branch. A `doc` value must be
exactly one such URL. The few numbers that are lmi-config's own estimates with no public
measurement carry an explicit marker instead, and only the entries listed below may.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from lmi_config.rules import load_rules

DATA_DIR = Path(__file__).resolve().parent.parent / "lmi_config" / "data"

# Written by scripts/gen_vllm_engine_args.py, never by hand: its sources name the PyPI archive
# each field list was read from (PyPI vllm==X vllm-X.tar.gz: path), not a URL.
GENERATED_FILES = {"vllm_engine_args.json"}

KNOWN_HOSTS = {
    "github.com",
    "gist.github.com",
    "gitcode.com",
    "huggingface.co",
    "pypi.org",
    "files.pythonhosted.org",  # PyPI's file host: a wheel's PEP 658 metadata
    "docs.aws.amazon.com",
    "awsdocs-neuron.readthedocs-hosted.com",
    "docs.vllm.ai",
    "docs.djl.ai",
    "docs.oracle.com",
    "docs.nvidia.com",
    "developer.nvidia.com",  # NVIDIA's table of compute capability per GPU
    "www.nvidia.com",  # NVIDIA's datasheets (perf_devices.json)
    "aws.amazon.com",  # EC2 instance-type pages (perf_devices.json)
    "glennklockwood.com",  # per-GPU dense / sparse FLOPS tables of NVIDIA's HGX parts (perf_devices.json)
}

ESTIMATE_MARKER = "lmi-config estimate; no public measurement"
# Our own estimates that rest on no public measurement: (file, JSON path) -> why it is one.
ESTIMATES = {
    ("memory.json", "$.host.base_gib.source"): "host RAM used before the model loads",
    ("memory.json", "$.loading.download_seconds_per_gib.source"): "download speed from S3 or the Hub",
}

# A GitHub branch name that moves: a link to it can stop showing what was cited.
MOVING_REFS = {"master", "main", "HEAD"}
URL_RE = re.compile(r"[A-Za-z][\w+.-]*://\S+")
BARE_HOST_RE = re.compile(r"(?<![/\w.])(?:" + "|".join(re.escape(h) for h in KNOWN_HOSTS) + r")/")
TRAILING = ".,;:)]'\""


def _data_files() -> list[Path]:
    return sorted(p for p in DATA_DIR.glob("*.json") if p.name not in GENERATED_FILES)


def _walk(node: Any, path: str) -> Iterator[tuple[str, str, Any]]:
    """(JSON path, key, value) for every `source` and `doc` string, depth first."""
    if isinstance(node, dict):
        for key, value in node.items():
            child = f"{path}.{key}"
            if key in ("source", "doc") and isinstance(value, str):
                yield child, key, value
            else:
                yield from _walk(value, child)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, f"{path}[{index}]")


def _entries() -> list[tuple[str, str, str, str]]:
    rows = []
    for data_file in _data_files():
        data = json.loads(data_file.read_text(encoding="utf-8"))
        for json_path, key, value in _walk(data, "$"):
            rows.append((data_file.name, json_path, key, value))
    return rows


def urls_in(text: str) -> list[str]:
    """The URLs in a source string, without the punctuation that follows them in prose."""
    return [match.rstrip(TRAILING) for match in URL_RE.findall(text)]


def url_problem(url: str) -> str | None:
    """Why url is not a public reference a user can open, or None when it is one."""
    parts = urlsplit(url)
    if parts.scheme != "https":
        return f"{url!r} is not https"
    if parts.hostname not in KNOWN_HOSTS:
        return f"{url!r}: unknown host {parts.hostname!r} (add it to KNOWN_HOSTS if it is public)"
    if parts.hostname == "github.com":
        segments = parts.path.strip("/").split("/")
        if len(segments) < 4:
            return f"{url!r} names no file, issue or pull request"
        kind = segments[2]
        if kind in ("blob", "tree") and (segments[3] in MOVING_REFS or len(segments) < 5):
            return f"{url!r} is not pinned to a commit, tag or release branch"
        if kind in ("issues", "pull") and not segments[3].isdigit():
            return f"{url!r} has no issue number"
    return None


def source_problems(text: str) -> list[str]:
    """Every reason a source string fails, empty when it names at least one good URL."""
    urls = urls_in(text)
    problems = [problem for url in urls if (problem := url_problem(url))]
    if not urls:
        problems.append("has no https:// URL")
    bare = BARE_HOST_RE.search(URL_RE.sub("", text))
    if bare:
        problems.append(f"names {bare.group(0)!r} without https://")
    return problems


ENTRIES = _entries()


def test_every_data_file_is_walked() -> None:
    assert {name for name, *_ in ENTRIES} == {p.name for p in _data_files()}
    assert len(ENTRIES) > 1000


@pytest.mark.parametrize("data_file", [p.name for p in _data_files()])
def test_every_source_names_a_public_url(data_file: str) -> None:
    failures = []
    for name, json_path, key, value in ENTRIES:
        if name != data_file or key != "source":
            continue
        problems = source_problems(value)
        if (name, json_path) in ESTIMATES:
            if ESTIMATE_MARKER not in value:
                failures.append(f"{name} {json_path}: listed as an estimate but lacks {ESTIMATE_MARKER!r}")
            problems = [p for p in problems if p != "has no https:// URL"]
        elif ESTIMATE_MARKER in value:
            problems.append(f"carries {ESTIMATE_MARKER!r} but is not in ESTIMATES")
        failures += [f"{name} {json_path}: {problem}: {value[:120]!r}" for problem in problems]
    assert not failures, "\n".join(failures)


def test_every_doc_link_is_one_pinned_public_url() -> None:
    failures = []
    for name, json_path, key, value in ENTRIES:
        if key != "doc":
            continue
        problem = url_problem(value) if urls_in(value) == [value] else f"{value!r} is not a single URL"
        if problem:
            failures.append(f"{name} {json_path}: {problem}")
    assert not failures, "\n".join(failures)


def test_estimate_allow_list_names_existing_entries() -> None:
    present = {(name, json_path) for name, json_path, key, _ in ENTRIES if key == "source"}
    assert set(ESTIMATES) <= present


@pytest.mark.parametrize("rule", load_rules(), ids=lambda rule: rule.code)
def test_every_rule_source_names_a_public_url(rule: Any) -> None:
    problems = source_problems(rule.source)
    assert not problems, f"rule {rule.code} ({rule.slug}) source: " + "; ".join(problems)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("djl-serving.md §5.3", "has no https:// URL"),
        ("see http://github.com/o/r/issues/1", "is not https"),
        ("https://example.com/page", "unknown host"),
        ("https://github.com/o/r/blob/master/a.py", "not pinned"),
        ("github.com/o/r/issues/7 (error text)", "without https://"),
        ("https://github.com/o/r/issues/", "names no file"),
    ],
)
def test_checker_rejects_what_a_user_cannot_open(text: str, expected: str) -> None:
    assert any(expected in problem for problem in source_problems(text))


def test_checker_accepts_pinned_links_and_strips_prose_punctuation() -> None:
    text = (
        "djl-serving.md §5.3 (https://github.com/o/r/blob/0.30.0-dlc/a/b.py); https://github.com/o/r/pull/12."
    )
    assert urls_in(text) == [
        "https://github.com/o/r/blob/0.30.0-dlc/a/b.py",
        "https://github.com/o/r/pull/12",
    ]
    assert source_problems(text) == []
