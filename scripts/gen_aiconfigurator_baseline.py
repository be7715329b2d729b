#!/usr/bin/env python3
"""Generate benchmarks/aiconfigurator_baseline.json: what NVIDIA's AIConfigurator itself predicts for
the measured GPU rows this project is checked against, so that ``benchmarks/perf_baseline.py`` can
print its error beside lmi-config's on the same rows.

The rows are those of ``shared/reference/perf_measurements.json`` and ``benchmarks/
aiconfigurator_perf.json`` that come from aiconfigurator's own ``systems/silicon_sample.csv``: each
cites the file's row id, and the estimate is asked exactly as that row states its configuration
(``aiconfigurator cli estimate`` in ``agg`` mode: system, backend, ISL, OSL, ``batch_size``, TP, PP,
attention DP, MoE TP/EP, GEMM and MoE quantization; everything else at aiconfigurator's defaults).
Two choices are ours and recorded per row:
- the performance database: the row's engine version where the wheel carries it, else the newest one
  not newer than it, else the oldest one the wheel has (the wheel's databases start after most of the
  measured releases: vLLM 0.14 for rows measured on 0.12);
- the model's config.json: aiconfigurator resolves a model id it does not bundle by downloading it;
  offline, a measured checkpoint it does not bundle is asked as the bundled one of the same architecture
  (STAND_INS), its quantization given by the row's quantization modes.
A row aiconfigurator refuses (out of memory, a layout it does not support) is kept with its message.

aiconfigurator is not a dependency of lmi-config (it pulls pandas, scipy, matplotlib, bokeh): the
script installs it into its own virtual environment under the cache directory and runs the estimates
there. Its 0.10.0 wheel pins numpy 1.26 but lets pip pick a pyarrow that needs numpy 2, so the
environment pins ``pyarrow<19`` (the last releases built for both).

Run: python scripts/gen_aiconfigurator_baseline.py [--version 0.10.0] [--cache DIR]
(deterministic: the estimate is a lookup in the wheel's measured tables; about ten minutes on 2 cores)
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CACHE = Path.home() / ".cache" / "lmi-config" / "aiconfigurator"
OUTPUT = REPO_ROOT / "benchmarks" / "aiconfigurator_baseline.json"
MEASUREMENTS = (
    REPO_ROOT.parent / "shared" / "reference" / "perf_measurements.json",
    REPO_ROOT / "benchmarks" / "aiconfigurator_perf.json",
)
VERSION = "0.10.0"
PINS = ("pyarrow<19",)
# measured checkpoints aiconfigurator does not bundle -> the bundled config.json of the same architecture
STAND_INS = {
    "meta-llama/Llama-3.1-8B-Instruct": "meta-llama/Meta-Llama-3.1-8B",
    "nvidia/Llama-3.1-8B-Instruct-FP8": "meta-llama/Meta-Llama-3.1-8B",
    "meta-llama/Llama-3.1-70B": "meta-llama/Meta-Llama-3.1-70B",
    "nvidia/Qwen3-32B-NVFP4": "Qwen/Qwen3-32B",
    "nvidia/DeepSeek-R1-NVFP4": "deepseek-ai/DeepSeek-R1",
}


def silicon_ids(paths: tuple[Path, ...]) -> list[tuple[str, str]]:
    """(our row id, silicon_sample row id) of every row citing aiconfigurator's silicon file."""
    # imported here: the part run inside aiconfigurator's environment uses the standard library only
    from gen_aiconfigurator_perf_rows import cited_silicon_id

    found = []
    for path in paths:
        document = json.loads(path.read_text(encoding="utf-8"))
        for row in document["rows"] if isinstance(document, dict) else document:
            if (cited := cited_silicon_id(row)) is not None:
                found.append((str(row["id"]), cited))
    return found


def environment(version: str, cache: Path) -> Path:
    """The python of a virtual environment holding aiconfigurator==version (made once)."""
    home = cache / f"venv-{version}"
    python = home / "bin" / "python"
    if not python.exists():
        print(f"installing aiconfigurator=={version} into {home}", file=sys.stderr)
        venv.EnvBuilder(with_pip=True).create(home)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"aiconfigurator=={version}", *PINS], check=True
        )
    return python


# ---- below runs inside aiconfigurator's environment (standard library and aiconfigurator only) ----


def _number(text: str) -> int | None:
    return int(text) if text.strip() else None


def _database(base: Path, system: str, backend: str, measured: str) -> str:
    """The wheel's performance database closest to the measured engine version (see the docstring)."""
    from packaging.version import InvalidVersion, Version

    have = sorted(os.listdir(base / system / backend), key=Version)
    try:
        wanted = Version(measured)
    except InvalidVersion:
        return have[0]
    older = [name for name in have if Version(name) <= wanted]
    return older[-1] if older else have[0]


def _bundled(package: Path, model: str) -> str:
    name = model.replace("/", "--") + "_config.json"
    return model if (package / "model_configs" / name).exists() else STAND_INS.get(model, model)


def estimate(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """aiconfigurator's agg estimate for each (row id, silicon id)."""
    import contextlib
    import io
    import logging

    import aiconfigurator
    from aiconfigurator.cli.api import cli_estimate

    logging.disable(logging.CRITICAL)
    package = Path(aiconfigurator.__file__).parent
    with (package / "systems" / "silicon_sample.csv").open(encoding="utf-8") as handle:
        silicon = {line["id"]: line for line in csv.DictReader(handle)}
    results = []
    for number, (row_id, silicon_id) in enumerate(pairs, 1):
        line = silicon[silicon_id]
        database = _database(
            package / "systems" / "data", line["system"], line["backend"], line["backend_version"]
        )
        asked = {
            "model_path": _bundled(package, line["model_path"]),
            "system_name": line["system"],
            "mode": "agg",
            "backend_name": line["backend"],
            "backend_version": database,
            "isl": int(line["isl"]),
            "osl": int(line["osl"]),
            "batch_size": _number(line["batch_size"]),
            "tp_size": _number(line["tp_size"]) or 1,
            "pp_size": _number(line["pp_size"]) or 1,
            "attention_dp_size": _number(line["attention_dp_size"]) or 1,
            "moe_tp_size": _number(line["moe_tp_size"]),
            "moe_ep_size": _number(line["moe_ep_size"]),
            "gemm_quant_mode": line["gemm_quant_mode"] or None,
            "moe_quant_mode": line["moe_quant_mode"] or None,
        }
        entry: dict[str, Any] = {
            "id": row_id,
            "silicon_id": silicon_id,
            "model_config": asked["model_path"],
            "perf_database": f"{line['backend']} {database}",
        }
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                result = cli_estimate(**asked)
            entry.update(ttft_ms=round(float(result.ttft), 4), tpot_ms=round(float(result.tpot), 4))
        except Exception as error:  # aiconfigurator's refusal, kept as its message
            entry["skipped"] = " ".join(str(error).split())[:300]
        results.append(entry)
        if number % 100 == 0:
            print(f"{number}/{len(pairs)} rows estimated", file=sys.stderr, flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default=VERSION)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.inside:
        # rows in on standard input, estimates out on standard output
        json.dump(estimate([tuple(pair) for pair in json.load(sys.stdin)]), sys.stdout)
        return 0
    sys.path.insert(0, str(REPO_ROOT))
    from lmi_config.io import write_atomically

    pairs = silicon_ids(MEASUREMENTS)
    python = environment(arguments.version, arguments.cache)
    completed = subprocess.run(
        [str(python), __file__, "--inside"],
        input=json.dumps(pairs),
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    estimates = json.loads(completed.stdout)
    document = {
        "source": f"generated by scripts/gen_aiconfigurator_baseline.py: aiconfigurator {arguments.version}'s "
        "`cli estimate` (agg mode, its SILICON database) for every measured row taken from its "
        "systems/silicon_sample.csv -- https://pypi.org/project/aiconfigurator/"
        f"{arguments.version}/",
        "estimator": f"aiconfigurator {arguments.version}",
        "rows": estimates,
    }
    write_atomically(OUTPUT, json.dumps(document, indent=1) + "\n")
    done = sum("ttft_ms" in entry for entry in estimates)
    print(f"wrote {OUTPUT.relative_to(REPO_ROOT)}: {done} of {len(estimates)} rows estimated")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
