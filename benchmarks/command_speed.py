"""Cold wall time of the commands that do more than parse, and how a local config.json is read.

Run: python benchmarks/command_speed.py [--runs 7]

Prints, as the median of fresh subprocess runs (and as a ratio to `python -c pass` measured in
the same run): lint with fit checks of a catalog model (budget 200 ms), render of a shipped
sample (budget 250 ms), explain with the memory table. Then, in one process, the time to resolve
a local config.json with lmi-config's own reader versus transformers' AutoConfig (when
transformers is installed), which is why the reader does not use transformers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cli_command(python: str) -> list[str]:
    """The installed console script next to the interpreter (what users run), else ``python -m``.

    Commands run from a neutral directory: from the repository, ``python -m`` would import the
    source tree instead of the installed package.
    """
    script = Path(python).parent / "lmi-config"
    return [str(script)] if script.exists() else [python, "-m", "lmi_config"]


def wall_ms(command: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, capture_output=True, check=False, cwd=tempfile.gettempdir())
        times.append((time.perf_counter() - start) * 1000)
    return times


def main() -> None:
    # a cold start in use reads cached bytecode; with PYTHONDONTWRITEBYTECODE inherited, the warm-up run
    # writes none, and every timed process compiles each module it imports again (about 70 ms more here)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--python", default=sys.executable)
    arguments = parser.parse_args()
    python = arguments.python
    runs = arguments.runs

    baseline = statistics.median(wall_ms([python, "-c", "pass"], runs))
    sample = str(ROOT / "samples/lint/mistral-7b-inf2-one-core/serving.properties")
    rows = [
        (
            "lint + fit checks (catalog model)",
            [*cli_command(python), "lint", sample, "--instance", "ml.inf2.8xlarge"],
            200,
        ),
        (
            "render a sample (auto TP + batch)",
            [*cli_command(python), "render", str(ROOT / "samples/specs/mistral-7b-inf2-8xlarge.yaml")],
            250,
        ),
        (
            "explain with the memory table",
            [*cli_command(python), "explain", sample, "--instance", "ml.inf2.8xlarge"],
            None,
        ),
        (
            "lint, local config.json model",
            [
                python,
                "-m",
                "lmi_config",
                "lint",
                sample,
                "--instance",
                "ml.inf2.8xlarge",
                "--model",
                str(ROOT / "tests/fixtures/models/mistral-7b-v0.1"),
            ],
            200,
        ),
    ]
    print(f"python -c pass: median {baseline:.0f} ms of {runs} runs\n")
    print(f"{'command (cold, fresh process)':<40} {'median':>8} {'x pass':>7} {'budget':>7}  verdict")
    for label, command, budget in rows:
        times = wall_ms(command, runs)
        median = statistics.median(times)
        verdict = "" if budget is None else ("within budget" if median <= budget else "OVER")
        budget_text = "-" if budget is None else f"{budget} ms"
        print(f"{label:<40} {median:>6.0f}ms {median / baseline:>6.1f}x {budget_text:>7}  {verdict}")

    print(
        "\nresolving tests/fixtures/models/mistral-7b-v0.1/config.json in one process (median of later calls; first call incl. imports):"
    )
    own = "from pathlib import Path\nfrom lmi_config.modelarch import from_directory\nfrom_directory(Path('tests/fixtures/models/mistral-7b-v0.1'))"
    theirs = "from transformers import AutoConfig\nAutoConfig.from_pretrained('tests/fixtures/models/mistral-7b-v0.1')"
    for label, code in (("lmi-config reader (json + normalizer)", own), ("transformers AutoConfig", theirs)):
        script = (
            "import time, statistics\n"
            "times = []\n"
            f"for _ in range({runs}):\n"
            "    start = time.perf_counter()\n"
            + "".join(f"    {line}\n" for line in code.splitlines())
            + "    times.append((time.perf_counter() - start) * 1000)\n"
            "print(f'{times[0]:.1f} {statistics.median(times[1:]):.2f}')\n"
        )
        completed = subprocess.run([python, "-c", script], capture_output=True, text=True, cwd=ROOT)
        if completed.returncode != 0:
            print(
                f"  {label:<40} not available ({completed.stderr.strip().splitlines()[-1] if completed.stderr.strip() else 'error'})"
            )
            continue
        first, later = completed.stdout.split()
        print(f"  {label:<40} first call {float(first):7.1f} ms, later calls {float(later):6.2f} ms")


if __name__ == "__main__":
    main()
