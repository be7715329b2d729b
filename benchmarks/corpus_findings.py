#!/usr/bin/env python3
"""Count findings per rule over ../shared/corpus, each file linted with the instance type its index names.

    python benchmarks/corpus_findings.py [--select CODES] [--examples N]

Prints one line per rule (code, slug, count of files) and, with --examples, that many findings per rule;
the last line is one JSON object {code: count}. Used to review what a rule change does to real files.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lmi_config.api import LintOptions, lint_paths  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"))
    parser.add_argument("--select", default=None)
    parser.add_argument("--examples", type=int, default=0)
    parser.add_argument(
        "--with-versions",
        action="store_true",
        help="lint each file at the image tag its index names, where one is",
    )
    args = parser.parse_args()
    corpus = Path(args.corpus)
    index = {row["id"]: row for row in json.loads((corpus / "index.json").read_text())}
    counts: Counter[str] = Counter()
    examples: dict[str, list[str]] = defaultdict(list)
    for path in sorted((corpus / "files").iterdir()):
        row = index.get(path.stem, {})
        instance = row.get("instance_type") or None
        tag = re.search(r"\d+\.\d+\.\d+-[\w.-]+", row.get("container") or "") if args.with_versions else None
        try:
            options = LintOptions(
                instance=instance,
                lmi_version=tag.group(0) if tag else None,
                select=args.select.split(",") if args.select else [],
            )
            result = lint_paths([str(path)], options)
        except Exception as error:  # a file the API refuses: reported, not counted
            print(f"{path.name}: {type(error).__name__}: {error}", file=sys.stderr)
            continue
        seen = set()
        for finding in result.findings:
            if finding.code in seen:
                continue
            seen.add(finding.code)
            counts[finding.code] += 1
            if len(examples[finding.code]) < args.examples:
                examples[finding.code].append(f"{path.name} ({instance}): {finding.message}")
    for code, count in sorted(counts.items()):
        print(f"{code} {count}")
        for line in examples.get(code, []):
            print(f"    {line}")
    print(json.dumps(dict(sorted(counts.items()))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
