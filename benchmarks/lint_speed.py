"""How fast `lmi-config lint` is from a cold start, and what it imports on the way.

Prints, for one interpreter (``--python``, default: the one running this script):

* the median wall time of fresh ``python -m lmi_config lint FILE`` processes on one sample
  file, next to ``python -c pass`` (the floor no CLI can beat) and yamllint on a small YAML file
  when it is installed beside the interpreter, the three taken in turn in the same run;
* whether transformers, boto3, sagemaker, jinja2 or pydantic were imported on that path
  (from ``python -X importtime``);
* the median wall time of one ``lint`` run over 1,000 files generated in a temporary
  directory from the real corpus (``../shared/corpus/files``; read there, never copied
  into the repository);

and a table against the budgets (one file <= 150 ms, 1,000 files <= 1.5 s, one file <= 1.2 x
yamllint). Beside the ratio of the two medians it prints the median of the rounds' own ratios
(each round runs lint and yamllint one after the other, so a busy moment slows both): on a
shared machine the two can differ by a tenth, and the rounds' ratio is the steadier one.

``--instructions`` also counts the instructions each command executes under valgrind
(callgrind), when valgrind is installed: a figure that does not move with the machine's load,
for comparing two versions of the code (it leaves out page faults and I/O, which wall time has).

Only the standard library is used. Each timed run is preceded by one untimed run so that
bytecode caches and lmi-config's parsed-data cache (docs/lint.md#cache) exist: "cold" here means a
fresh process, not a fresh disk.

    python benchmarks/lint_speed.py
    python benchmarks/lint_speed.py --python /tmp/venv/bin/python --runs 9
    python benchmarks/lint_speed.py --instructions
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = Path(os.environ.get("LMI_CONFIG_SHARED", REPOSITORY.parent / "shared")) / "corpus" / "files"
HEAVY_PACKAGES = ("transformers", "boto3", "sagemaker", "jinja2", "pydantic")
ONE_FILE_BUDGET_SECONDS = 0.150
THOUSAND_FILES_BUDGET_SECONDS = 1.5
YAMLLINT_RATIO = 1.2  # one file within 1.2 x yamllint on a YAML file, same run (issue 34)
LINT_EXIT_CODES = (0, 1)  # 2 would mean the input was refused: the timing would be meaningless


def cli_command(python: str) -> list[str]:
    """The installed console script next to the interpreter (what users run), else ``python -m``.

    Commands run from a neutral directory: from the repository, ``python -m`` would import the
    source tree instead of the installed package.
    """
    script = Path(python).parent / "lmi-config"
    return [str(script)] if script.exists() else [python, "-m", "lmi_config"]


def time_command(command: list[str], runs: int, *, expect: tuple[int, ...] = (0,)) -> list[float]:
    """Wall-clock seconds of ``runs`` fresh processes (after one untimed warm-up run)."""
    return time_interleaved({"command": (command, expect)}, runs)["command"]


def time_interleaved(
    commands: dict[str, tuple[list[str], tuple[int, ...]]], runs: int
) -> dict[str, list[float]]:
    """Wall-clock seconds of ``runs`` fresh processes of each command, taken in turn (A, B, C, A, B, C …)
    after one untimed warm-up run of each, so that a machine that slows down or speeds up during the
    run moves every command's figures alike and their ratio stays fair."""
    neutral = tempfile.gettempdir()  # not the repository: see cli_command
    for command, _ in commands.values():
        subprocess.run(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, cwd=neutral
        )
    timings: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(runs):
        for label, (command, expect) in commands.items():
            started = time.perf_counter()
            completed = subprocess.run(
                command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False, cwd=neutral
            )
            timings[label].append(time.perf_counter() - started)
            if completed.returncode not in expect:
                lines = completed.stderr.decode("utf-8", "replace").strip().splitlines()
                message = lines[-1] if lines else "(no stderr)"
                raise SystemExit(f"{' '.join(command)} exited {completed.returncode}: {message}")
    return timings


def imported_modules(python: str, sample: Path) -> list[str]:
    """Every module the lint path imports, from ``-X importtime`` (written to stderr)."""
    completed = subprocess.run(
        [python, "-X", "importtime", "-m", "lmi_config", "lint", str(sample)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    modules = []
    for line in completed.stderr.decode("utf-8", "replace").splitlines():
        if not line.startswith("import time:") or line.count("|") < 2:
            continue
        name = line.rsplit("|", 1)[1].strip()
        if name and name != "imported package":
            modules.append(name)
    return modules


def instructions(command: list[str]) -> int | None:
    """Instructions ``command`` executes, counted by valgrind's callgrind (None without valgrind).
    The command ran before (time_interleaved's warm-up), so bytecode and data caches exist."""
    if shutil.which("valgrind") is None:
        return None
    completed = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
        cwd=tempfile.gettempdir(),
        text=True,
    )
    for line in completed.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1].strip())
    return None


YAML_SAMPLE = "model: gpt2\ninstance: ml.g5.2xlarge\noptions:\n  max_model_len: 4096\n  dtype: fp16\n"


def yamllint_command(python: str, sample: Path) -> list[str] | None:
    """yamllint on a small YAML file (the linter people compare start-up with); None when it is not
    installed beside ``python`` (it is no dependency)."""
    script = Path(python).parent / "yamllint"
    if not script.exists():
        return None
    sample.write_text("---\n" + YAML_SAMPLE, encoding="utf-8")
    return [str(script), str(sample)]


def corpus_files(corpus: Path) -> list[Path]:
    files = sorted(path for path in corpus.iterdir() if path.suffix in (".properties", ".env"))
    if not files:
        raise SystemExit(f"{corpus}: no .properties or .env files; pass --corpus")
    return files


def generate_tree(corpus: list[Path], root: Path, count: int) -> int:
    """Write ``count`` configuration files under ``root``, cycling through the corpus.

    Most files are flat (``0042-017.properties``); every fifth properties file becomes a
    model directory (``model-0042/serving.properties``) with the next env file beside it,
    so the directory pairing is exercised too. Each copy gets a comment line with its
    number, so no two files are identical.
    """
    written = 0
    index = 0
    while written < count:
        source = corpus[index % len(corpus)]
        text = source.read_text(encoding="latin-1")
        header = f"# generated copy {index} of {source.name}\n"
        if source.suffix == ".properties" and index % 5 == 0 and written + 2 <= count:
            directory = root / f"model-{index:04d}"
            directory.mkdir()
            (directory / "serving.properties").write_text(header + text, encoding="latin-1")
            partner = next(path for path in corpus[index % len(corpus) :] + corpus if path.suffix == ".env")
            (directory / "sagemaker.env").write_text(
                header + partner.read_text(encoding="latin-1"), encoding="latin-1"
            )
            written += 2
        else:
            (root / f"{index:04d}-{source.name}").write_text(header + text, encoding="latin-1")
            written += 1
        index += 1
    return written


def checked_file_count(python: str, root: Path) -> int:
    completed = subprocess.run(
        [*cli_command(python), "lint", str(root), "--format", "json"],
        capture_output=True,
        check=False,
    )
    if completed.returncode not in LINT_EXIT_CODES:
        raise SystemExit(
            f"lint of the generated tree exited {completed.returncode}: {completed.stderr.decode()[-300:]}"
        )
    return int(json.loads(completed.stdout)["summary"]["files"])


def milliseconds(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def timing_line(label: str, timings: list[float]) -> str:
    """``label  median N ms of K runs  (min …, max …)``."""
    return (
        f"{label:<24} median {milliseconds(statistics.median(timings)):>8} of {len(timings)} runs"
        f"  (min {milliseconds(min(timings))}, max {milliseconds(max(timings))})"
    )


def main() -> None:
    # a cold start in use reads cached bytecode; with PYTHONDONTWRITEBYTECODE inherited, the warm-up run
    # writes none, and every timed process compiles each module it imports again (about 70 ms more here)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="interpreter that has lmi_config installed (default: %(default)s)",
    )
    parser.add_argument(
        "--corpus",
        type=Path,
        default=DEFAULT_CORPUS,
        help="directory of real configurations (default: %(default)s)",
    )
    parser.add_argument(
        "--sample", type=Path, help="the one file to time (default: the first corpus .properties file)"
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=21,
        help="timed runs for one file, yamllint and `python -c pass` (>= 9, as the budget asks)",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count instructions executed, under valgrind (slow: about 3 s a command)",
    )
    parser.add_argument("--tree-runs", type=int, default=3, help="timed runs over the 1,000 files (>= 3)")
    parser.add_argument("--files", type=int, default=1000, help="files in the generated tree")
    arguments = parser.parse_args()
    if arguments.runs < 9 or arguments.tree_runs < 3:
        parser.error("use at least 9 --runs and 3 --tree-runs: a median of fewer says little")

    python = arguments.python
    corpus = corpus_files(arguments.corpus)
    sample = arguments.sample or next(path for path in corpus if path.suffix == ".properties")
    version = subprocess.run(
        [python, "-c", "import sys; print(sys.version.split()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()

    # python -c pass, lint and yamllint in turn, the same number of fresh processes each (time_interleaved)
    with tempfile.TemporaryDirectory(prefix="lmi-config-yamllint-") as directory:
        commands = {
            "pass": ([python, "-c", "pass"], (0,)),
            "lint": ([*cli_command(python), "lint", str(sample)], LINT_EXIT_CODES),
        }
        yamllint_line = yamllint_command(python, Path(directory) / "sample.yaml")
        if yamllint_line is not None:
            commands["yamllint"] = (yamllint_line, (0, 1))
        timed = time_interleaved(commands, arguments.runs)
        counted = (
            {label: instructions(command) for label, (command, _) in commands.items()}
            if arguments.instructions
            else {}
        )
    baseline, one_file = timed["pass"], timed["lint"]
    yamllint = timed.get("yamllint")
    modules = imported_modules(python, sample)
    top_level = {name.split(".")[0] for name in modules}

    with tempfile.TemporaryDirectory(prefix="lmi-config-bench-") as directory:
        root = Path(directory)
        generated = generate_tree(corpus, root, arguments.files)
        checked = checked_file_count(python, root)
        tree = time_command(
            [*cli_command(python), "lint", str(root)], arguments.tree_runs, expect=LINT_EXIT_CODES
        )
        shutil.rmtree(root, ignore_errors=True)

    one_median = statistics.median(one_file)
    baseline_median = statistics.median(baseline)
    tree_median = statistics.median(tree)

    print(f"interpreter   {python} (Python {version})")
    print(f"sample file   {sample}")
    print(f"tree          {generated} files generated from {len(corpus)} corpus files")
    print(f"              (lint reported {checked} files checked)")
    print()
    print(timing_line("python -c pass", baseline))
    print(timing_line("lint one file (cold)", one_file))
    ratio = one_median / baseline_median
    print(f"{'':<24} = {ratio:.1f} x python -c pass, {milliseconds(one_median - baseline_median)} above it")
    print(timing_line(f"lint {checked} files", tree))
    if yamllint is None:
        print(f"{'yamllint one file':<24} not installed beside {python} (pip install yamllint to compare)")
    else:
        print(timing_line("yamllint one file (cold)", yamllint))
        print(
            f"{'':<24} lmi-config / yamllint = {one_median / statistics.median(yamllint):.2f} (target <= 1.2)"
        )
        paired = statistics.median(lint / other for lint, other in zip(one_file, yamllint, strict=True))
        print(f"{'':<24} median of the rounds' own ratios = {paired:.2f}")
    if counted:
        print()
        for label, count in counted.items():
            shown = f"{count / 1e6:,.1f} M" if count is not None else "not counted (no valgrind)"
            print(f"{'instructions, ' + label:<24} {shown}")
        if counted.get("lint") and counted.get("yamllint"):
            print(f"{'':<24} lmi-config / yamllint = {counted['lint'] / counted['yamllint']:.2f}")
    print()
    print(f"modules imported on the lint path: {len(modules)}")
    for package in HEAVY_PACKAGES:
        print(f"  {package:<13} {'IMPORTED' if package in top_level else 'not imported'}")
    print()
    rows = [
        ("one file, cold", one_median, ONE_FILE_BUDGET_SECONDS),
        (f"{checked} files, one run", tree_median, THOUSAND_FILES_BUDGET_SECONDS),
    ]
    if yamllint is not None:
        rows.append(("one file vs yamllint", one_median, YAMLLINT_RATIO * statistics.median(yamllint)))
    print(f"{'measure':<22} {'median':>9} {'budget':>9}  verdict")
    for label, value, budget in rows:
        verdict = "within budget" if value <= budget else f"OVER by {milliseconds(value - budget)}"
        print(f"{label:<22} {milliseconds(value):>9} {milliseconds(budget):>9}  {verdict}")
    heavy = [package for package in HEAVY_PACKAGES if package in top_level]
    verdict = "OK" if not heavy else "VIOLATES design principle 5"
    print(f"{'heavy imports':<22} {', '.join(heavy) or 'none':>9} {'none':>9}  {verdict}")


if __name__ == "__main__":
    main()
