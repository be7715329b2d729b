#!/usr/bin/env python3
"""Generate the ``on_demand_prices`` part of lmi_config/data/instances.json: an on-demand price per
instance-hour for every instance type of the catalog, each with its source URL, region and date.

Sources, read at pinned commits (public GitHub repositories; ``--*-git-dir`` reads a local clone
or mirror, otherwise raw.githubusercontent.com is fetched):

- SageMaker (``ml.*``) and EC2 prices: FMBench's fallback price table
  (aws-samples/foundation-model-benchmarking-tool, fmbench/configs/pricing_fallback.yml), which
  AWS's own benchmarking tool uses when the AWS Price List API cannot be called. It names no
  region; its EC2 figures match us-east-1's list prices of its date.
- EC2 prices: tsaol/aws-gpu's accelerated-instance tables, generated from instances.vantage.sh
  (which reads the AWS Price List API), per region — us-east-1 first, then us-east-2, us-west-2.
  Newer than FMBench's, so they win for EC2. Its latest table lost trn2.48xlarge's price (the
  instance moved to capacity blocks); the earlier commit that still had it is read for that one.

``sagemaker`` holds only SageMaker's own prices; where none was found, plan uses the EC2 price and
says so (SageMaker's hosting prices run above EC2's for the same hardware). An instance type with
no price in any source is listed under ``not_found`` with the reason.

Stdlib only, deterministic.

    python scripts/gen_prices.py --vantage-git-dir /path/to/tsaol+aws-gpu/repo \\
        --fmbench-git-dir /path/to/foundation-model-benchmarking-tool/repo
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
INSTANCES = REPO_ROOT / "lmi_config/data/instances.json"

FMBENCH = ("aws-samples/foundation-model-benchmarking-tool", "77ece06a5a190ea7c3dc637145b4993db3307635")
FMBENCH_PATH = "fmbench/configs/pricing_fallback.yml"
FMBENCH_DATE = "2025-01-26"
VANTAGE = ("tsaol/aws-gpu", "77fcd9fe1d0652fd07b830e5ed030d61da87923e")
VANTAGE_PATH = "data/all_gpu_instances.js"
VANTAGE_DATE = "2026-01-21"
# the last commit whose table still had a price for these (the newest lists none)
VANTAGE_EARLIER = {
    "trn2.48xlarge": ("2f6d954c26d61aa7dc8de29f50e62d8a648d5332", "data/trn2_instances.js", "2025-11-30")
}
REGIONS = ("us-east-1", "us-east-2", "us-west-2")
PRICE_LINE = re.compile(r"^\s+(ml\.)?([a-z0-9-]+\.[a-z0-9]+):\s*([0-9.]+)\s*$")


def blob_url(repository: str, commit: str, path: str) -> str:
    """The public page of a file at a commit (what each price cites)."""
    return f"https://github.com/{repository}/blob/{commit}/{path}"


def read(repository: str, commit: str, path: str, git_dir: Path | None) -> str:
    """A file at a commit: from a local git directory when given, else from GitHub."""
    if git_dir is not None:
        return subprocess.run(
            ["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    url = f"https://raw.githubusercontent.com/{repository}/{commit}/{path}"
    with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 (a fixed https URL)
        return response.read().decode("utf-8")


def fmbench_prices(text: str) -> tuple[dict[str, float], dict[str, float]]:
    """(SageMaker, EC2) prices of FMBench's ``instance_based`` table: ``ml.`` keys are SageMaker's."""
    sagemaker: dict[str, float] = {}
    ec2: dict[str, float] = {}
    inside = False
    for line in text.splitlines():
        if line.strip().startswith("instance_based:"):
            inside = True
            continue
        if inside and line.strip().startswith("token_based:"):
            break
        match = PRICE_LINE.match(line) if inside else None
        if match:
            (sagemaker if match.group(1) else ec2)[match.group(2)] = float(match.group(3))
    return sagemaker, ec2


def vantage_rows(text: str) -> list[dict[str, Any]]:
    """The JSON array inside a generated ``.js`` table."""
    start, end = text.index("["), text.rindex("]")
    return list(json.loads(text[start : end + 1]))


def regional_price(row: dict[str, Any]) -> tuple[float, str] | None:
    """The on-demand price of the first region of ``REGIONS`` that lists one."""
    for region in REGIONS:
        price = (row.get("pricing") or {}).get(region, {}).get("onDemand")
        if price:
            return float(price), region
    return None


def entry(price: float, region: str, date: str, source: str) -> dict[str, Any]:
    return {"usd_per_hour": price, "region": region, "date": date, "source": source}


def generate(vantage_git: Path | None, fmbench_git: Path | None) -> dict[str, Any]:
    """The ``on_demand_prices`` document for every catalog instance type."""
    catalog = [row["instance_type"] for row in json.loads(INSTANCES.read_text(encoding="utf-8"))["instances"]]
    fmbench_source = blob_url(*FMBENCH, FMBENCH_PATH)
    sagemaker_table, ec2_table = fmbench_prices(read(*FMBENCH, FMBENCH_PATH, fmbench_git))
    vantage_source = blob_url(*VANTAGE, VANTAGE_PATH)
    vantage = {row["name"]: row for row in vantage_rows(read(*VANTAGE, VANTAGE_PATH, vantage_git))}
    for name, (commit, path, _) in VANTAGE_EARLIER.items():
        for row in vantage_rows(read(VANTAGE[0], commit, path, vantage_git)):
            if row["name"] == name:
                vantage[name] = {**row, "_earlier": (commit, path)}
    sagemaker: dict[str, Any] = {}
    ec2: dict[str, Any] = {}
    not_found: dict[str, str] = {}
    for name in catalog:
        if name in sagemaker_table:
            sagemaker[name] = entry(
                sagemaker_table[name], "not named (FMBench)", FMBENCH_DATE, fmbench_source
            )
        regional = regional_price(vantage[name]) if name in vantage else None
        if regional is not None:
            earlier = vantage[name].get("_earlier")
            source = blob_url(VANTAGE[0], *earlier) if earlier else vantage_source
            date = VANTAGE_EARLIER[name][2] if earlier else VANTAGE_DATE
            ec2[name] = entry(regional[0], regional[1], date, source)
        elif name in ec2_table:
            ec2[name] = entry(ec2_table[name], "us-east-1 (FMBench, not named)", FMBENCH_DATE, fmbench_source)
        if name not in sagemaker and name not in ec2:
            not_found[name] = "in neither source (no public on-demand price found for it)"
    return {
        "unit": "USD per instance-hour, on demand",
        "date": VANTAGE_DATE,
        "generated_by": "scripts/gen_prices.py",
        "note": (
            "Generated from two public tables at pinned commits, each price with its region, date and source. "
            "sagemaker: SageMaker hosting prices from FMBench's fallback table (2025-01-26; no region named, "
            "older than the EC2 table; g6e, p4de, p5e, p5en, trn1.2xlarge, trn2, g7e and p6 are missing). ec2: EC2 "
            "on-demand prices from instances.vantage.sh via tsaol/aws-gpu (us-east-1 where listed, else "
            "us-east-2, us-west-2; 2026-01-21), FMBench's EC2 prices for the types it lacks. Where SageMaker's "
            "price is missing, plan ranks on the EC2 price and says so — SageMaker's run higher for the same "
            "hardware. Prices change: run the script again before relying on a cost ranking."
        ),
        "source": f"{fmbench_source} and {vantage_source}",
        "sagemaker": sagemaker,
        "ec2": ec2,
        "not_found": not_found,
    }


def replace_prices(text: str, prices: dict[str, Any]) -> str:
    """The file with only its last member, ``on_demand_prices``, rewritten (the rest keeps its layout)."""
    marker = '\n "on_demand_prices": '
    head = text[: text.index(marker)]
    body = json.dumps(prices, indent=1, ensure_ascii=False).replace("\n", "\n ")
    return f"{head}{marker}{body}\n}}\n"


def main(argv: list[str] | None = None) -> int:
    """Command line: where the sources are read from, and where to write."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vantage-git-dir", type=Path, default=None)
    parser.add_argument("--fmbench-git-dir", type=Path, default=None)
    parser.add_argument("--output", type=Path, default=INSTANCES)
    arguments = parser.parse_args(argv)
    prices = generate(arguments.vantage_git_dir, arguments.fmbench_git_dir)
    text = arguments.output.read_text(encoding="utf-8")
    arguments.output.write_text(replace_prices(text, prices), encoding="utf-8")
    counts = f"{len(prices['sagemaker'])} SageMaker, {len(prices['ec2'])} EC2 prices"
    print(f"wrote {arguments.output}: {counts}; not found: {', '.join(prices['not_found']) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
