#!/usr/bin/env python3
"""Generate benchmarks/optimum_neuron_perf.json: measured rows from optimum-neuron's published vLLM
benchmarks, in the format of ``shared/reference/perf_measurements.json``, for
``benchmarks/perf_accuracy.py`` (a second Neuron source the performance model was never fitted on).

optimum-neuron keeps, per served configuration, ``benchmark/vllm/single-instance/<dir>/.env`` (model,
batch size, sequence length, TP) and ``vllm-results.csv`` (guidellm's report). The workload is the one
``benchmark/vllm/performance.sh`` runs: emulated prompts of 1,500 tokens (variance 150) and 250 generated
(variance 20). The ``synchronous`` line sends one request at a time (concurrency 1); each
``asynchronous@R req/sec`` line sends R requests per second (column ``request_rate``, no concurrency);
the ``throughput`` line runs at an unstated concurrency (up to the script's user count, an argument),
so it is left out, never guessed. The directory name says the instance: ``-trn2`` is a trn2.3xlarge (one
Trainium2 chip, 4 logical cores at LNC 2; the commits say so) up to TP 4 and a trn2.48xlarge above,
any other a trn1.32xlarge (the README:
"configurations that use a tensor parallel size of 32 require a trn1.32xlarge"). Data-parallel
results are left out (``vllm-results-dp4.csv`` names another model's data).

Run: python scripts/gen_optimum_neuron_perf_rows.py --repo /work/.mirror/huggingface+optimum-neuron/repo
(stdlib only, deterministic)
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import sys
from pathlib import Path

from djl_options.repository import Git  # scripts/ is on sys.path when run as a script

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
from lmi_config.io import write_atomically  # noqa: E402

OUTPUT = REPO_ROOT / "benchmarks" / "optimum_neuron_perf.json"
ROOT_DIR = "benchmark/vllm/single-instance"
SCRIPT = "benchmark/vllm/performance.sh"
GITHUB = "https://github.com/huggingface/optimum-neuron/blob/{commit}/{path}#L{line}"


def git(repository: Path, *arguments: str) -> str:
    """The output of a git command in a mirror (the scripts' one git reader, ``djl_options.repository``)."""
    return Git(repository).run(*arguments)


def workload(script: str) -> tuple[int, int, int]:
    """(prompt tokens, generated tokens, line) of the emulated data performance.sh asks guidellm for."""
    for number, line in enumerate(script.splitlines(), 1):
        found = re.search(r"prompt_tokens=(\d+).*generated_tokens=(\d+)", line)
        if found:
            return int(found.group(1)), int(found.group(2)), number
    raise SystemExit(f"{SCRIPT}: no prompt_tokens/generated_tokens in the guidellm call")


def settings(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))
    return {key.strip(): value.strip().strip("'\"") for key, value in pairs}


def rows(repository: Path) -> list[dict[str, object]]:
    commit = git(repository, "rev-parse", "HEAD").strip()
    input_tokens, output_tokens, script_line = workload(git(repository, "show", f"{commit}:{SCRIPT}"))
    paths = sorted(
        path
        for path in git(repository, "ls-tree", "-r", "--name-only", commit, ROOT_DIR).split()
        if path.endswith("/vllm-results.csv")
    )
    found = []
    for path in paths:
        directory = path.rsplit("/", 1)[0]
        env = settings(git(repository, "show", f"{commit}:{directory}/.env"))
        table = list(csv.DictReader(io.StringIO(git(repository, "show", f"{commit}:{path}"))))
        trn2 = directory.endswith("-trn2")
        tp = int(env["TENSOR_PARALLEL_SIZE"])
        # one trn2.3xlarge chip holds 4 logical cores; a larger TP runs on the 16-chip trn2.48xlarge
        instance = ("trn2.3xlarge" if tp <= 4 else "trn2.48xlarge") if trn2 else "trn1.32xlarge"
        for number, line in enumerate(table, 2):
            kind = line.get("Input type") or ""
            rate = re.fullmatch(r"asynchronous@([0-9.]+) req/sec", kind)
            if kind != "synchronous" and not rate:
                continue
            name = directory.rsplit("/", 1)[1]
            load = (
                {"concurrency": 1}
                if not rate
                else {"concurrency": None, "request_rate": float(rate.group(1))}
            )
            how = "synchronous" if not rate else f"asynchronous, {rate.group(1)} requests/s"
            found.append(
                {
                    "id": f"ON-{name}" + ("" if not rate else f"@{rate.group(1)}"),
                    "source": {
                        "url": GITHUB.format(commit=commit, path=path, line=number),
                        "file": path,
                        "commit_or_tag": commit,
                        "line_or_row": f"line {number} ({how}); configuration in {directory}/.env; "
                        f"workload in {SCRIPT} line {script_line}",
                    },
                    "source_group": "optimum-neuron-benchmark",
                    "model": env["MODEL_ID"],
                    "hardware": instance,
                    "instance": f"ml.{instance}",
                    "backend": "vllm-neuron",
                    "serving_frontend": "vLLM with optimum-neuron's Neuron platform plugin",
                    "engine_family": "neuron-nxd",
                    "tp": tp,
                    "pp": 1,
                    "batch_size": int(env["BATCH_SIZE"]),
                    **load,
                    "input_tokens": input_tokens,
                    "output_tokens": output_tokens,
                    "max_seq_len": int(env["SEQUENCE_LENGTH"]),
                    "dtype": "bf16",
                    "workload": f"guidellm {how}, emulated prompts of {input_tokens} tokens "
                    f"(variance 150), {output_tokens} generated (variance 20)",
                    "benchmark_tool": "guidellm",
                    "ttft_ms": float(line["Time-to-first-token (ms)"]),
                    "tpot_ms": float(line["Inter Token Latency (ms)"]),
                    "e2e_latency_ms": 1000 * float(line["Request Latency (s)"]),
                    "throughput_output_tokens_per_s": float(line["Output Token Throughput (t/s)"]),
                    "measured_date": line.get("Date"),
                    "latency_stat": "guidellm report mean (not stated per column)",
                    "quality_flags": [],
                }
            )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path("/work/.mirror/huggingface+optimum-neuron/repo"))
    arguments = parser.parse_args(argv)
    found = rows(arguments.repo)
    document = {
        "source": "generated by scripts/gen_optimum_neuron_perf_rows.py from huggingface/optimum-neuron "
        "benchmark/vllm/single-instance (guidellm reports: synchronous and fixed-rate lines)",
        "rows": found,
    }
    write_atomically(OUTPUT, json.dumps(document, indent=1) + "\n")
    print(f"wrote {OUTPUT.relative_to(REPO_ROOT)}: {len(found)} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
