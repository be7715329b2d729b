"""Wall time and peak memory of `lmi-config` on hostile, very large inputs (issue 9).

Every case is a fresh process (``python -c`` running ``lmi_config`` as ``python -m`` would);
its peak resident memory is its own ``VmHWM`` from ``/proc/self/status`` (Linux). Each case runs ``--runs`` times after one untimed warm-up and the median is printed,
next to its ratio to a baseline measured in the same run: a clean 100-line serving.properties.
Inputs are generated in a temporary directory:

* 1 M lines of unknown keys (4,000,000 bytes, under the 4 MiB cap: every 3-character key,
  each set about four times), and 1 M lines setting one unknown key;
* 100 k unknown option keys (``option.unknown_key_N=1``, 2.7 MB: one did-you-mean search each);
* a 10 MB line, as a file (refused by its size) and on standard input (reading stops at the cap);
* 100 k continuation lines (one value over 100,001 physical lines);
* a 4 MB value (``option.model_id``) linted with an instance and explained;
* ``/dev/zero`` as a file, a 1,000-deep Environment JSON and a YAML "billion laughs" spec.

The budget of the issue: the 1 M-line file in <= 10 s and <= 500 MB. Only the standard
library is used.

    python benchmarks/hostile_inputs.py
    python benchmarks/hostile_inputs.py --runs 5 --python /tmp/venv/bin/python
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import string
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

MILLION_LINES_BUDGET_SECONDS = 10.0
MILLION_LINES_BUDGET_BYTES = 500 * 1000 * 1000
MEBIBYTE = 1024 * 1024


@dataclass
class Case:
    """One command to measure, with what it reads and the exit codes that mean "handled"."""

    label: str
    arguments: list[str]
    expect: tuple[int, ...]
    stdin: Path | None = None
    budget: bool = False  # the 1 M-line file of the budget


@dataclass
class Measured:
    label: str
    exit_code: int
    seconds: float
    peak_bytes: int


def generate_inputs(directory: Path, scale: int = 1) -> dict[str, Path]:
    """Write every input file (``scale``: a hundredth of each size for --quick); returns them by name."""
    files: dict[str, Path] = {}

    def write(name: str, data: str | bytes) -> None:
        path = directory / name
        path.write_bytes(data if isinstance(data, bytes) else data.encode("latin-1"))
        files[name] = path

    clean = ["option.model_id=gpt2", "option.rolling_batch=vllm", "option.dtype=fp16"]
    clean += [f"# note {index}: a comment line of an ordinary configuration" for index in range(97)]
    write("clean.properties", "\n".join(clean) + "\n")
    keys = itertools.cycle(
        "".join(key) for key in itertools.product(string.ascii_letters + string.digits, repeat=3)
    )
    write("million.properties", "".join(f"{next(keys)}\n" for _ in range(1_000_000 // scale)))
    write("million_one_key.properties", "x=1\n" * (1_000_000 // scale))
    write(
        "unknown_options.properties",
        "".join(f"option.unknown_key_{index}=1\n" for index in range(100_000 // scale)),
    )
    write("ten_megabyte_line.properties", "option.model_id=" + "a" * (10 * MEBIBYTE) + "\n")
    write(
        "continuations.properties",
        "option.model_id=gpt2\noption.x=\\\n" + "a\\\n" * (100_000 // scale) + "a\n",
    )
    write("four_megabyte_value.properties", "option.model_id=" + "a" * ((4 * MEBIBYTE - 100) // scale) + "\n")
    write("deep.json", '{"Environment": ' + "[" * 1000 + "]" * 1000 + "}")
    laughs = [
        "model: gpt2",
        "instance: ml.inf2.8xlarge",
        "options:",
        '  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
    ]
    laughs += [
        f"  {name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]"
        for previous, name in zip("abcdefgh", "bcdefghi", strict=True)
    ]
    write("laughs.yaml", "\n".join(laughs) + "\n")
    return files


def cases(files: dict[str, Path]) -> list[Case]:
    lint = ["lint", "--backend", "vllm"]
    return [
        Case("clean 100-line file (baseline)", [*lint, str(files["clean.properties"])], (0,)),
        Case("1 M lines, unknown keys", [*lint, str(files["million.properties"])], (0,), budget=True),
        Case("1 M lines, one key", [*lint, str(files["million_one_key.properties"])], (0,)),
        Case("100 k unknown option keys", [*lint, str(files["unknown_options.properties"])], (0,)),
        Case("10 MB line, file", [*lint, str(files["ten_megabyte_line.properties"])], (2,)),
        Case("10 MB line, stdin", [*lint, "-"], (2,), stdin=files["ten_megabyte_line.properties"]),
        Case("100 k continuations", [*lint, str(files["continuations.properties"])], (0, 1)),
        Case(
            "4 MB value, lint",
            [*lint, str(files["four_megabyte_value.properties"]), "--instance", "ml.g5.12xlarge"],
            (0, 1),
        ),
        Case("4 MB value, explain", ["explain", str(files["four_megabyte_value.properties"])], (0, 1)),
        Case("/dev/zero", [*lint, "/dev/zero"], (2,)),
        Case("JSON 1,000 deep", [*lint, str(files["deep.json"])], (1,)),
        Case("YAML billion laughs", ["render", str(files["laughs.yaml"])], (2,)),
    ]


# Runs the CLI and, at exit, writes the process's own peak resident memory (VmHWM, in KiB) to a
# file. getrusage/wait4 cannot give it: on Linux their ru_maxrss keeps the peak of the parent's
# memory that the child was forked from, so every case would look as large as this script.
PEAK_PROBE = """
import atexit, os, runpy, sys

def report_peak():
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(os.environ["LMI_CONFIG_PEAK_FILE"], "w") as out:
        out.write(peak)

atexit.register(report_peak)
sys.argv = ["lmi-config", *sys.argv[1:]]
runpy.run_module("lmi_config", run_name="__main__", alter_sys=True)
"""


def measure_once(command: list[str], stdin: Path | None, cwd: Path) -> tuple[int, float, int]:
    """(exit code, wall seconds, peak resident bytes) of one fresh process."""
    peak_file = cwd / "peak.txt"
    environment = {**os.environ, "LMI_CONFIG_PEAK_FILE": str(peak_file)}
    with open(stdin or os.devnull, "rb") as source, open(os.devnull, "wb") as sink:
        started = time.perf_counter()
        completed = subprocess.run(command, stdin=source, stdout=sink, stderr=sink, cwd=cwd, env=environment)
        elapsed = time.perf_counter() - started
    return completed.returncode, elapsed, int(peak_file.read_text()) * 1024


def measure(case: Case, python: str, runs: int, cwd: Path) -> Measured:
    command = [python, "-c", PEAK_PROBE, *case.arguments]
    measure_once(command, case.stdin, cwd)  # warm-up: bytecode caches, page cache
    results = [measure_once(command, case.stdin, cwd) for _ in range(runs)]
    codes = {code for code, _, _ in results}
    if not codes <= set(case.expect):
        raise SystemExit(
            f"{case.label}: exit codes {sorted(codes)}, expected {case.expect}: {' '.join(command)}"
        )
    return Measured(
        case.label,
        results[0][0],
        statistics.median(seconds for _, seconds, _ in results),
        int(statistics.median(peak for _, _, peak in results)),
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--python", default=sys.executable, help="interpreter with lmi_config installed")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per case (>= 3; the median is shown)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="one run of each case on inputs a hundredth the size: that it runs, not its figures (the suite)",
    )
    arguments = parser.parse_args()
    if arguments.quick:
        arguments.runs = 1
    elif arguments.runs < 3:
        parser.error("use at least 3 --runs: a median of fewer says little")
    with tempfile.TemporaryDirectory(prefix="lmi-config-hostile-") as directory:
        root = Path(directory)
        files = generate_inputs(root, scale=100 if arguments.quick else 1)
        measured = [measure(case, arguments.python, arguments.runs, root) for case in cases(files)]
        budget_cases = {case.label for case in cases(files) if case.budget}
    baseline = measured[0]
    if arguments.quick:
        print("--quick: inputs a hundredth the size, one run each; these figures are not the benchmark's\n")
    print(f"median of {arguments.runs} runs per case; ratios against: {baseline.label}\n")
    print(f"{'case':<32} {'exit':>4} {'wall':>9} {'x base':>7} {'peak RSS':>10} {'x base':>7}")
    for item in measured:
        print(
            f"{item.label:<32} {item.exit_code:>4} {item.seconds:>8.2f}s {item.seconds / baseline.seconds:>7.1f}"
            f" {item.peak_bytes / MEBIBYTE:>8.0f} MiB {item.peak_bytes / baseline.peak_bytes:>7.1f}"
        )
    print()
    for item in measured:
        if item.label not in budget_cases:
            continue
        seconds_ok = item.seconds <= MILLION_LINES_BUDGET_SECONDS
        memory_ok = item.peak_bytes <= MILLION_LINES_BUDGET_BYTES
        print(
            f"budget ({item.label}): {item.seconds:.1f} s of {MILLION_LINES_BUDGET_SECONDS:.0f} s "
            f"{'OK' if seconds_ok else 'OVER'}, {item.peak_bytes / 1e6:.0f} MB of "
            f"{MILLION_LINES_BUDGET_BYTES / 1e6:.0f} MB {'OK' if memory_ok else 'OVER'}"
        )


if __name__ == "__main__":
    main()
