#!/usr/bin/env python3
"""Generate benchmarks/aiconfigurator_perf.json: the measured GPU rows of aiconfigurator's
``systems/silicon_sample.csv`` that the development data does not carry, in the format of
``shared/reference/perf_measurements.json``, for ``benchmarks/perf_accuracy.py``.

The development data (``perf_measurements.json``) holds 145 rows of that file, each citing its line at
the v0.10.0 tag; the file (5,221 lines in the aiconfigurator 0.10.0 wheel on PyPI, the same rows at the
same lines) measures many more configurations of the same models and of others. This script keeps the
rows ``lmi-config`` can be asked about: aggregated serving (``mode`` agg; disaggregated prefill/decode
pools are not a container configuration), vLLM or TensorRT-LLM (SGLang is not an LMI backend), on a
GPU an instance type in the catalog carries (H100 SXM: p5; H200 SXM: p5e; B200: p6-b200; B300: p6-b300), without attention data
parallelism (stated, or implied by MoE layers over more GPUs than the attention) -- and leaves out every row the development data already holds (matched by the row id at its
line). Columns are read as the development data reads them: ``silicon_concurrency`` in
``silicon_data_source`` is the concurrency (absent: none, and the accuracy benchmark skips the row rather
than guess it), ``batch_size`` the engine's batch size, ``precision`` the dtype (empty: the checkpoint's),
``gemm_quant_mode`` the quantization, ``silicon_ttft_ms`` / ``silicon_tpot_ms`` the figures (the file
does not say whether they are means or medians). Models the catalog does not describe are kept: the
benchmark says why it skips them.

Run: python scripts/gen_aiconfigurator_perf_rows.py [--version 0.10.0] [--cache DIR]
(the wheel comes from the cache ``~/.cache/lmi-config/aiconfigurator``, else ``pip download``; deterministic)
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

# scripts/ is on sys.path when run as a script; gen_model_catalog puts the repository there too
from gen_model_catalog import DEFAULT_CACHE, REPO_ROOT, obtain_wheel

from lmi_config.io import write_atomically

OUTPUT = REPO_ROOT / "benchmarks" / "aiconfigurator_perf.json"
DEVELOPMENT = REPO_ROOT.parent / "shared" / "reference" / "perf_measurements.json"
MEMBER = "aiconfigurator/systems/silicon_sample.csv"
VERSION = "0.10.0"
# the GPUs of the catalog's instance types this file measures, with the smallest instance carrying eight
SYSTEMS = {
    "h100_sxm": ("H100-SXM", "ml.p5.48xlarge"),
    "h200_sxm": ("H200-SXM", "ml.p5e.48xlarge"),
    "b200_sxm": ("B200-SXM", "ml.p6-b200.48xlarge"),
    "b300_sxm": ("B300-SXM", "ml.p6-b300.48xlarge"),
}
BACKENDS = {"vllm": ("vllm", "gpu-vllm"), "trtllm": ("tensorrt-llm", "gpu-trtllm")}


def cited_silicon_id(row: dict[str, Any]) -> str | None:
    """The silicon_sample row id a measured row cites ("line N (id ...)"), None for other sources."""
    found = re.search(r"\(id (\S+)\)", str((row.get("source") or {}).get("line_or_row", "")))
    return found.group(1) if row.get("source_group") == "aiconfigurator-silicon" and found else None


def development_ids(path: Path) -> set[str]:
    """The silicon_sample row ids the development data already carries (from each row's citation)."""
    document = json.loads(path.read_text(encoding="utf-8"))
    return {cited for row in document["rows"] if (cited := cited_silicon_id(row)) is not None}


def _count(text: str) -> int | None:
    return int(text) if text.strip() else None


def _concurrency(line: dict[str, str]) -> int | None:
    """The row's ``silicon_concurrency`` (in ``silicon_data_source``), None where it is not stated."""
    found = re.search(r"silicon_concurrency=(\d+)", line["silicon_data_source"])
    return int(found.group(1)) if found else None


def _data_parallel_attention(line: dict[str, str]) -> bool:
    """Attention replicated over data-parallel ranks: stated (``attention_dp_size`` > 1), or implied by
    MoE layers spread over more GPUs (``moe_tp_size`` x ``moe_ep_size``) than the attention's TP x PP --
    the file has vLLM rows of a 235B MoE at TP 1 with its experts over 2 or 4 GPUs -- or by a
    concurrency of exactly the batch size times the GPUs (one batch per rank: TensorRT-LLM rows of
    DeepSeek and gpt-oss at TP 4 or 8 with 4 or 8 times their batch in flight). Not a configuration of
    the container's TP and PP."""
    gpus = (_count(line["tp_size"]) or 1) * (_count(line["pp_size"]) or 1)
    experts = (_count(line["moe_tp_size"]) or 1) * (_count(line["moe_ep_size"]) or 1)
    concurrency = _concurrency(line)
    per_rank = (
        concurrency is not None and gpus > 1 and concurrency == (_count(line["batch_size"]) or 0) * gpus
    )
    return (_count(line["attention_dp_size"]) or 1) > 1 or experts > gpus or per_rank


def rows(wheel: Path, version: str, known: set[str]) -> list[dict[str, Any]]:
    raw = zipfile.ZipFile(wheel).read(MEMBER)
    digest = hashlib.sha256(raw).hexdigest()
    lines = raw.decode("utf-8").splitlines()
    found = []
    for number, line in enumerate(csv.DictReader(io.StringIO("\n".join(lines))), 2):
        if line["id"] in known or line["mode"] != "agg" or line["backend"] not in BACKENDS:
            continue
        if line["system"] not in SYSTEMS or _data_parallel_attention(line):
            continue
        hardware, instance = SYSTEMS[line["system"]]
        backend, family = BACKENDS[line["backend"]]
        tp, pp = _count(line["tp_size"]) or 1, _count(line["pp_size"]) or 1
        found.append(
            {
                "id": f"AIC-L{number}",
                "source": {
                    "url": f"https://pypi.org/project/aiconfigurator/{version}/#files",
                    "file": f"{MEMBER} in {wheel.name} (sha256 {digest})",
                    "commit_or_tag": f"aiconfigurator {version} wheel",
                    "line_or_row": f"line {number} (id {line['id']})",
                },
                "source_group": "aiconfigurator-silicon",
                "model": line["model_path"],
                "hardware": hardware,
                "instance": instance,
                "accelerator_count_used": tp * pp,
                "backend": backend,
                "backend_version": line["backend_version"] or None,
                "engine_family": family,
                "tp": tp,
                "pp": pp,
                "batch_size": _count(line["batch_size"]),
                "concurrency": _concurrency(line),
                "input_tokens": int(line["isl"]),
                "output_tokens": int(line["osl"]),
                "dtype": line["precision"] or None,
                "quantization": f"gemm_quant_mode={line['gemm_quant_mode']}"
                if line["gemm_quant_mode"]
                else None,
                "workload": f"aggregated serving, ISL {line['isl']} / OSL {line['osl']}",
                "ttft_ms": float(line["silicon_ttft_ms"]),
                "tpot_ms": float(line["silicon_tpot_ms"]),
                "latency_stat": "unstated (one aggregate value per benchmark run; mean vs median not documented)",
                "quality_flags": ["statistic_unstated", "gpu_platform_not_stated"],
                "raw": lines[number - 1],
            }
        )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default=VERSION)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--development", type=Path, default=DEVELOPMENT)
    arguments = parser.parse_args(argv)
    wheel = obtain_wheel(arguments.version, arguments.cache)
    found = rows(wheel, arguments.version, development_ids(arguments.development))
    document = {
        "source": f"generated by scripts/gen_aiconfigurator_perf_rows.py from {MEMBER} in the aiconfigurator "
        f"{arguments.version} wheel (Apache-2.0): the aggregated vLLM and TensorRT-LLM rows "
        "on H100/H200/B200/B300 that shared/reference/perf_measurements.json does not carry",
        "rows": found,
    }
    write_atomically(OUTPUT, json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {OUTPUT.relative_to(REPO_ROOT)}: {len(found)} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
