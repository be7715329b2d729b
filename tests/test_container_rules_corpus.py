"""The real corpus at each file's pinned release: no error on a file the container accepts there.

../shared/corpus/index.json names the image next to many files. Linted at that release, a file
has an error only where the container refuses it; each such file is listed here with the reason,
reviewed by hand against the release branch's code.
"""

from __future__ import annotations

import json

import pytest
from conftest import shared_path

from lmi_config.api import lint_paths
from lmi_config.knowledge import parse_lmi_version
from lmi_config.lint import LintOptions

# id -> (the codes of its errors, why the container refuses the file at its pinned release)
REFUSED = {
    "245": (
        {"LMI103"},
        "option.entryPoint=djl_python.lmi_vllm.vllm_async_service with the 0.32.0-lmi14 image: the module "
        "is on the release branches from 0.33.0 only",
    ),
    "419": ({"LMI102"}, "comments after values ('3  # limits …'): the container parses the whole text"),
    "422": ({"LMI102"}, "comments after values: the container parses the whole text"),
    "424": ({"LMI102"}, "comments after values: the container parses the whole text"),
    "427": ({"LMI102"}, "comments after values: the container parses the whole text"),
    "600": ({"LMI102"}, "prose where TensorRT-LLM reads integers: max(256,value you override)"),
}


def pinned_files() -> list[tuple[str, str, str]]:
    """(id, path, pinned image) of every corpus file whose image names a release lmi-config knows."""
    index = json.loads(shared_path("corpus", "index.json").read_text(encoding="utf-8"))
    files = shared_path("corpus", "files")
    found = []
    for row in index:
        container = row.get("container") or ""
        try:
            parse_lmi_version(container)
        except ValueError:
            continue
        path = next(files.glob(f"{row['id']}.*"))
        found.append((row["id"], str(path), container))
    return found


PINNED = pinned_files()


def test_many_corpus_files_are_pinned() -> None:
    assert len(PINNED) > 150


@pytest.mark.parametrize(("identifier", "path", "container"), PINNED, ids=[item[0] for item in PINNED])
def test_no_error_where_the_container_accepts_the_file(identifier: str, path: str, container: str) -> None:
    findings = lint_paths([path], LintOptions(lmi_version=container)).findings
    codes = {f.code for f in findings if f.severity == "error"}
    expected = REFUSED.get(identifier, (set(), ""))[0]
    assert codes == expected, [f.message for f in findings if f.severity == "error"]
