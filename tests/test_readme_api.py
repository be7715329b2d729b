"""The README's Python API examples run as written (from the repository root, offline)."""

from __future__ import annotations

import os
import re

from conftest import ROOT

SECTION = re.compile(r"^## Python API\n(.*?)^## ", re.S | re.M)
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def test_the_python_api_examples_run(capsys) -> None:
    section = SECTION.search((ROOT / "README.md").read_text(encoding="utf-8"))
    assert section is not None
    blocks = BLOCK.findall(section.group(1))
    assert len(blocks) >= 5
    namespace: dict[str, object] = {}
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for block in blocks:
            exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - our own documentation
    finally:
        os.chdir(cwd)
    assert "inf2" in capsys.readouterr().out  # the plan example printed its best candidate
