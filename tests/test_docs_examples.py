"""Every example in README.md and docs/*.md runs as written, offline; the README stays short and
every relative link in them resolves.

What counts as an example, and how it runs (docs/README.md, "About the examples", says the same):

- a ``bash`` / ``sh`` / ``shell`` block: each line is a command (``\\`` continues a line, ``#``
  starts a comment); a ``console`` block: the lines after ``$ `` are commands and the lines below
  one are output it must print (in order; ``…`` stands for any text);
- ``lmi-config ARGS`` runs in this process through the real command group (click's runner),
  ``cat FILE | lmi-config …`` and ``lmi-config … < FILE`` in a subprocess fed that file;
  ``> FILE`` writes the output there; ``export NAME=VALUE`` sets a variable for the rest of the
  page; ``mkdir`` and ``cp`` run as themselves; anything else fails the test (rewrite the example
  or mark it not run), and so does a ``deploy`` or ``search --on sagemaker`` without ``--dry-run``;
- a command must exit 0, or the code its comment names (``# … exit 1``), never with a traceback;
  a rule code its comment names (``# … LMI301``) must be in its output;
- a ``python`` block is executed, each page's blocks in one namespace, in order;
- a ``yaml`` / ``toml`` / ``json`` block must parse;
- ``<!-- file: PATH -->`` just above a block writes the block to PATH first (later commands use it);
- ``<!-- not run: REASON -->`` just above a block leaves it out: each such block is reported as a
  skipped test with its reason, so none is left out silently.

Each page runs in its own copy of ``samples/``, ``templates/`` and ``pyproject.toml`` (the
checkout's root as the examples see it; an example may write files),
with no network (sockets refuse to connect), no AWS credentials but fake ones, and no user
configuration (``HOME`` is the sandbox).
"""

from __future__ import annotations

import inspect
import json
import linecache
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import ROOT

from lmi_config.cli import main

README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 150
SHELL = {"bash", "sh", "shell", "console"}
PYTHON = {"python", "py"}
DATA = {"yaml": yaml.safe_load, "yml": yaml.safe_load, "toml": tomllib.loads, "json": json.loads}
ILLUSTRATIONS = {"text", "properties", "dotenv"}  # shown, not run (unless a file marker writes them)
HELPERS = {"mkdir", "cp"}  # harmless commands an example may use to set up files
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)[^`]*$")
MARKER = re.compile(r"^\s*<!--\s*(?P<kind>not run|file):\s*(?P<value>.*?)\s*-->\s*$")
EXPECTED_EXIT = re.compile(r"\bexit (?P<code>\d+)\b")
RULE_CODE = re.compile(r"\bLMI\d{3}\b")
FRESH_MACHINE = "python3 -m venv .venv && .venv/bin/pip install -q"


@dataclass(frozen=True)
class Block:
    """A fenced block of a page, with the markers just above it."""

    page: Path
    line: int  # the opening fence, 1-based
    language: str
    text: str
    not_run: str | None
    file: str | None

    @property
    def where(self) -> str:
        return f"{_shown(self.page)}:{self.line}"


def _shown(page: Path) -> str:
    return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else page.name


def page_blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        body: list[str] = []
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            body.append(lines[end][indent:] if lines[end][:indent].strip() == "" else lines[end])
            end += 1
        assert end < len(lines), f"{_shown(page)}:{index + 1}: a fence that is never closed"
        markers: dict[str, str] = {}
        above = index - 1
        while above >= 0 and (not lines[above].strip() or MARKER.match(lines[above])):
            marker = MARKER.match(lines[above])
            if marker:
                markers.setdefault(marker["kind"], marker["value"])
            above -= 1
        found.append(
            Block(
                page,
                index + 1,
                opening["info"].lower(),
                "\n".join(body) + "\n",
                markers.get("not run"),
                markers.get("file"),
            )
        )
        index = end + 1
    return found


ALL_BLOCKS = [block for page in PAGES for block in page_blocks(page)]
NOT_RUN = [block for block in ALL_BLOCKS if block.not_run is not None]


# --- running commands --------------------------------------------------------------------------


def _runner() -> CliRunner:
    # click 8.1 (the lowest version CI tests) mixes stderr into stdout unless told; 8.2 keeps both apart
    separate = {"mix_stderr": False} if "mix_stderr" in inspect.signature(CliRunner).parameters else {}
    return CliRunner(**separate)


def _commands(block: Block) -> list[tuple[int, str, list[str]]]:
    """(line, command, expected output lines) for each command of a shell block."""
    commands: list[tuple[int, str, list[str]]] = []
    pending = ""
    start = 0
    for offset, raw in enumerate(block.text.splitlines()):
        number = block.line + 1 + offset
        line = raw.rstrip()
        if block.language == "console" and not pending:
            if not line.startswith("$ "):
                if line and commands:
                    commands[-1][2].append(line)
                continue
            line = line[2:]
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        commands.append((start, pending + line, []))
        pending = ""
    assert not pending, f"{block.where}: a command continued past the end of its block"
    return commands


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str


def _in_process(argv: list[str]) -> Outcome:
    result = _runner().invoke(main, argv, catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        shown = "".join(traceback.format_exception(result.exception))
        raise AssertionError(f"lmi-config {shlex.join(argv)} raised:\n{shown}")
    return Outcome(result.exit_code, result.stdout or "", result.stderr or "")


def _with_stdin(argv: list[str], stdin: Path, environment: dict[str, str]) -> Outcome:
    completed = subprocess.run(
        [sys.executable, "-m", "lmi_config", *argv],
        input=stdin.read_bytes(),
        capture_output=True,
        timeout=120,
        env=environment,
    )
    return Outcome(
        completed.returncode,
        completed.stdout.decode("utf-8", "replace"),
        completed.stderr.decode("utf-8", "replace"),
    )


def _matches(expected: str, actual: str) -> bool:
    """``…`` in an expected output line stands for any text."""
    pattern = ".*".join(re.escape(part) for part in expected.strip().split("…"))
    return re.fullmatch(pattern, actual.strip()) is not None


def _check_output(where: str, expected: list[str], printed: str) -> None:
    lines = printed.splitlines()
    position = 0
    for line in expected:
        while position < len(lines) and not _matches(line, lines[position]):
            position += 1
        assert position < len(lines), f"{where}: the output shown is not what the command prints: {line!r}"
        position += 1


def _comment(command: str) -> str:
    """The ``# …`` part of a command line (outside quotes), where it says its exit code."""
    quote = ""
    for position, character in enumerate(command):
        if quote:
            quote = "" if character == quote else quote
        elif character in "'\"":
            quote = character
        elif character == "#" and (position == 0 or command[position - 1].isspace()):
            return command[position:]
    return ""


def run_command(
    where: str,
    command: str,
    expected_output: list[str],
    environment: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> str:
    """Run one command line of a shell example; returns which way it ran."""
    words = shlex.split(command, comments=True)
    stated = EXPECTED_EXIT.search(_comment(command))
    expected_code = int(stated["code"]) if stated else 0
    stdin: Path | None = None
    output: Path | None = None
    if words[:1] == ["cat"] and "|" in words:
        bar = words.index("|")
        assert bar == 2, f"{where}: only `cat FILE | lmi-config …` is a pipe the examples may use"
        stdin, words = Path(words[1]), words[bar + 1 :]
    for operator in ("<", ">"):
        if operator in words:
            at = words.index(operator)
            assert at == len(words) - 2, f"{where}: `{operator} FILE` must end the command"
            if operator == "<":
                stdin = Path(words[at + 1])
            else:
                output = Path(words[at + 1])
            words = words[:at] + words[at + 2 :]
    unsupported = {"|", "&&", "||", ";", "&", "<", ">", "2>", ">>"} & set(words)
    assert not unsupported, f"{where}: {sorted(unsupported)} is not run by the examples' test: {command}"
    program, argv = words[0], words[1:]
    if program == "export":
        for assignment in argv:
            name, _, value = assignment.partition("=")
            environment[name] = value
            monkeypatch.setenv(name, value)
        return "export"
    if program in HELPERS:
        completed = subprocess.run(words, capture_output=True, text=True, timeout=60)
        assert completed.returncode == 0, f"{where}: {command}\n{completed.stderr}"
        return "helper"
    assert program in ("lmi-config", ".venv/bin/lmi-config"), (
        f"{where}: `{program}` is not a command the examples' test runs: rewrite the example "
        "with lmi-config, or mark its block `<!-- not run: REASON -->`"
    )
    calls_aws = argv[:1] == ["deploy"] or (argv[:1] == ["search"] and "--on" in argv)
    assert not calls_aws or {"--dry-run", "--help", "-h"} & set(argv), (
        f"{where}: an example that would call AWS runs only with --dry-run; "
        "mark its block `<!-- not run: needs AWS -->` otherwise"
    )
    outcome = _with_stdin(argv, stdin, environment) if stdin is not None else _in_process(argv)
    shown = f"{where}: {command}\nexit {outcome.code}\n{outcome.stdout[-3000:]}\n{outcome.stderr[-3000:]}"
    assert "Traceback" not in outcome.stdout + outcome.stderr, shown
    assert outcome.code == expected_code, f"expected exit {expected_code}; " + shown
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(outcome.stdout, encoding="utf-8")
    _check_output(where, expected_output, outcome.stdout + outcome.stderr)
    for code in RULE_CODE.findall(_comment(command)):  # a comment that names a finding: it is found
        assert code in outcome.stdout + outcome.stderr, (
            f"{where}: the comment names {code}, not found; " + shown
        )
    return "subprocess" if stdin is not None else "in-process"


# --- a page's sandbox --------------------------------------------------------------------------


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A copy of what the examples read, as the working directory; no network, no real AWS, no
    user configuration. Returns the environment a subprocess gets."""
    for name in ("samples", "templates"):
        shutil.copytree(ROOT / name, tmp_path / name)
    shutil.copy(ROOT / "pyproject.toml", tmp_path)  # its [tool.lmi-config] settings, as in a checkout
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith(("AWS_", "HF_", "HUGGING_FACE", "LMI_CONFIG_")):
            monkeypatch.delenv(name)
    fake = {
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "home" / ".config"),
        "XDG_CACHE_HOME": str(tmp_path / "home" / ".cache"),
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(tmp_path / "home" / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "home" / "no-aws-credentials"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(ROOT),
    }
    for name, value in fake.items():
        monkeypatch.setenv(name, value)

    def refuse(self: socket.socket, address: object) -> None:
        raise OSError(f"the docs examples run offline; something tried to connect to {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    return dict(os.environ)


def run_page(page: Path, environment: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Run every example of one page in order; returns how many ran of each kind."""
    ran: Counter[str] = Counter()
    namespace: dict[str, object] = {"__name__": "__docs_example__"}
    for block in page_blocks(page):
        known = SHELL | PYTHON | set(DATA) | ILLUSTRATIONS
        assert block.language in known, (
            f"{block.where}: a block in {block.language or 'no language'}; name one of {sorted(known)}"
        )
        if block.not_run is not None:
            continue
        if block.file is not None:
            target = Path(block.file)
            assert not target.is_absolute() and ".." not in target.parts, f"{block.where}: {block.file}"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text, encoding="utf-8")
            ran["file"] += 1
        if block.language in DATA:
            try:
                DATA[block.language](block.text)
            except Exception as error:  # any parse error fails the example
                pytest.fail(f"{block.where}: the {block.language} example does not parse: {error}")
            ran[block.language] += 1
        elif block.language in PYTHON:
            # a traceback shows the example's own lines, numbered as in the page
            name = _shown(block.page)
            source = "\n" * block.line + block.text
            linecache.cache[name] = (len(source), None, source.splitlines(True), name)
            exec(compile(source, name, "exec"), namespace)  # noqa: S102 - our own documentation
            ran["python"] += 1
        elif block.language in SHELL:
            for line, command, expected in _commands(block):
                where = f"{_shown(block.page)}:{line}"
                way = run_command(where, command, expected, environment, monkeypatch)
                ran[f"command ({way})"] += 1
    return ran


@pytest.mark.parametrize("page", PAGES, ids=[str(page.relative_to(ROOT)) for page in PAGES])
def test_every_example_of_the_page_runs(
    page: Path, sandbox: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_page(page, sandbox, monkeypatch)


@pytest.mark.parametrize("block", NOT_RUN, ids=[block.where for block in NOT_RUN])
def test_an_example_not_run_says_why(block: Block) -> None:
    assert len(block.not_run or "") >= 10, f"{block.where}: say why the example is not run"
    pytest.skip(f"{block.where} not run: {block.not_run}")


# --- the README --------------------------------------------------------------------------------


def _the_two_commands() -> list[str]:
    first = page_blocks(README)[0]
    return [line for line in first.text.splitlines() if line.strip()]


def test_the_readme_is_at_most_150_lines() -> None:
    count = len(README.read_text(encoding="utf-8").splitlines())
    assert count <= README_MAX_LINES, f"README.md has {count} lines; move the detail to docs/"


def test_the_readme_starts_with_the_two_commands_and_the_second_is_what_ci_runs() -> None:
    text = README.read_text(encoding="utf-8")
    before = text.split("```", 1)[0]
    assert [line for line in before.splitlines() if line.strip() and not MARKER.match(line)] == [
        "# lmi-config"
    ]
    install, tests = _the_two_commands()
    assert install.startswith(FRESH_MACHINE + " . && .venv/bin/lmi-config ")
    assert tests.startswith(FRESH_MACHINE + " -e '.[test]' && ")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    marked = ci.index("# the README's test command")
    assert tests.split(" && ")[-1] == ci[marked + 1], "the README's test command is not what .ci/run runs"


def test_the_first_command_renders_a_shipped_sample_offline(sandbox: dict[str, str]) -> None:
    install, _ = _the_two_commands()
    last = install.split(" && ")[-1]
    argv = shlex.split(last)
    assert argv[0] == ".venv/bin/lmi-config" and argv[2].startswith("samples/"), last
    outcome = _in_process(argv[1:])
    assert outcome.code == 0, outcome.stdout + outcome.stderr
    assert "option.tensor_parallel_degree=2" in outcome.stdout  # auto resolved TP 2, never 1


# --- links -------------------------------------------------------------------------------------

LINK = re.compile(r"\[[^\]\n]*\]\(\s*<?(?P<target>[^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*(?P<target>\S+)", re.M)


def _prose(text: str) -> str:
    """The text outside fenced blocks and inline code, where a link is a link."""
    kept: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening["fence"]
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        elif fence is None:
            kept.append(re.sub(r"`[^`\n]*`", "", line))
    return "\n".join(kept)


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors for a page's headings."""
    anchors: set[str] = set()
    seen: Counter[str] = Counter()
    for line in _prose(page.read_text(encoding="utf-8")).splitlines():
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading[1].strip().lower()).replace(" ", "-")
            anchors.add(slug if not seen[slug] else f"{slug}-{seen[slug]}")
            seen[slug] += 1
    return anchors


def _relative_links(page: Path) -> list[str]:
    text = _prose(page.read_text(encoding="utf-8"))
    targets = [m["target"] for m in LINK.finditer(text)] + [m["target"] for m in REFERENCE.finditer(text)]
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I)]


@pytest.mark.parametrize("page", PAGES, ids=[str(page.relative_to(ROOT)) for page in PAGES])
def test_every_relative_link_resolves_to_a_file_of_the_repository(page: Path) -> None:
    broken = []
    for target in _relative_links(page):
        path_part, _, anchor = target.partition("#")
        resolved = (page.parent / path_part).resolve() if path_part else page
        if not resolved.is_relative_to(ROOT) or not resolved.exists():
            broken.append(f"{target} (no such file in the repository)")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{target} (no heading #{anchor} in {resolved.relative_to(ROOT)})")
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"


def test_the_link_checker_sees_links_and_not_code() -> None:
    sample = "see [lint](lint.md#fixing), `[not](a-link.md)`\n```bash\n[x](nope.md)\n```\n[ref]: plan.md\n"
    text = _prose(sample)
    assert [m["target"] for m in LINK.finditer(text)] == ["lint.md#fixing"]
    assert [m["target"] for m in REFERENCE.finditer(text)] == ["plan.md"]


def test_the_block_reader_sees_markers_commands_and_expected_output(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- not run: needs an AWS account -->\n\n```bash\nlmi-config deploy x.yaml\n```\n"
        "<!-- file: spec.yaml -->\n```yaml\nmodel: m\n```\n"
        "```console\n$ lmi-config lint a \\\n    --strict   # exit 1\nfound …\n```\n",
        encoding="utf-8",
    )
    first, second, third = page_blocks(page)
    assert (first.not_run, first.file, second.file, second.not_run) == (
        "needs an AWS account",
        None,
        "spec.yaml",
        None,
    )
    ((_, command, output),) = _commands(third)
    assert shlex.split(command, comments=True) == ["lmi-config", "lint", "a", "--strict"]
    stated = EXPECTED_EXIT.search(_comment(command))
    assert stated is not None and stated["code"] == "1" and output == ["found …"]
    assert _comment("lmi-config lint 'a # b'") == "" and _comment("x # exit 2") == "# exit 2"
    assert _matches("found …", "found 3 errors") and not _matches("found …", "lost 3")


def test_a_command_the_test_cannot_run_fails_instead_of_passing_unseen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AssertionError, match="not a command the examples' test runs"):
        run_command("page.md:1", "pip install lmi-config", [], {}, monkeypatch)
    with pytest.raises(AssertionError, match="is not run by the examples' test"):
        run_command("page.md:1", "lmi-config rules && rm -rf samples", [], {}, monkeypatch)
    with pytest.raises(AssertionError, match="runs only with --dry-run"):
        run_command(
            "page.md:1", "lmi-config deploy samples/specs/x.yaml --region us-east-1", [], {}, monkeypatch
        )
    with pytest.raises(AssertionError, match="expected exit 0"):
        run_command("page.md:1", "lmi-config lint no-such-file.properties", [], {}, monkeypatch)
    with pytest.raises(AssertionError, match="the comment names LMI301, not found"):
        run_command("page.md:1", "lmi-config rules LMI101  # LMI301", [], {}, monkeypatch)
    with pytest.raises(AssertionError, match="the output shown is not what the command prints"):
        run_command("page.md:1", "lmi-config rules LMI301", ["LMI999 …"], {}, monkeypatch)
    assert run_command("page.md:1", "lmi-config lint no-such-file.properties  # exit 2", [], {}, monkeypatch)
