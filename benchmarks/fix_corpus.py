#!/usr/bin/env python3
"""``lint --fix`` over a copy of ../shared/corpus: fixes per rule, and proof that nothing else changed.

    python benchmarks/fix_corpus.py [--unsafe-fixes] [--examples 3]

Copies the corpus to a temporary directory, fixes each file with the instance type its index names
(as ``lmi-config lint FILE --instance T --fix`` does), and prints the count of fixes per rule. For
every changed file it compares the bytes line by line: each changed line must be one a fix edited
(the fixed text re-derived from the original by applying exactly the fixes' edits), every other line
byte-identical, and the file's mode kept. Prints some unified diffs as examples.
"""

from __future__ import annotations

import argparse
import difflib
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lmi_config.api import LintOptions, fix_paths, lint_paths  # noqa: E402
from lmi_config.fixers.edits import apply_edits  # noqa: E402
from lmi_config.fixes import candidate_fixes  # noqa: E402


def _changed_lines(before: bytes, after: bytes) -> tuple[int, int]:
    """(original lines changed or removed, lines kept byte for byte)."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    kept = sum(size for _, _, size in matcher.get_matching_blocks())
    return len(old) - kept, kept


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"))
    parser.add_argument("--unsafe-fixes", action="store_true")
    parser.add_argument("--examples", type=int, default=3)
    args = parser.parse_args()
    corpus = Path(args.corpus)
    index = {row["id"]: row for row in json.loads((corpus / "index.json").read_text())}
    applied: Counter[str] = Counter()
    changed_files = touched_lines = kept_lines = mode_changes = mismatches = edited_lines = left = 0
    diffs: list[str] = []
    shown_rules: set[str] = set()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "files"
        shutil.copytree(corpus / "files", copy)
        for path in sorted(copy.iterdir()):
            before, mode = path.read_bytes(), path.stat().st_mode
            options = LintOptions(instance=index.get(path.stem, {}).get("instance_type") or None)
            try:
                outcome = fix_paths([str(path)], options, unsafe=args.unsafe_fixes)
            except Exception as error:  # a file the API refuses: reported, not counted
                print(f"{path.name}: {type(error).__name__}: {error}", file=sys.stderr)
                continue
            applied.update(outcome.applied)
            left += len(list(candidate_fixes(lint_paths([str(path)], options), args.unsafe_fixes)))
            after = path.read_bytes()
            if after == before:
                continue
            changed_files += 1
            replayed = before.decode("utf-8")
            for edits in outcome.passes.get(str(path), []):
                replayed = apply_edits(replayed, edits)
            mismatches += replayed.encode("utf-8") != after  # bytes beyond the fixes' edits changed
            edited_lines += sum(len(edits) for edits in outcome.passes.get(str(path), []))
            mode_changes += path.stat().st_mode != mode
            changed, kept = _changed_lines(before, after)
            touched_lines += changed
            kept_lines += kept
            rules = "+".join(sorted(outcome.applied))
            if len(diffs) < args.examples and rules not in shown_rules:  # one example per kind of fix
                shown_rules.add(rules)
                diff = difflib.unified_diff(
                    before.decode("utf-8", "replace").splitlines(keepends=True),
                    after.decode("utf-8", "replace").splitlines(keepends=True),
                    f"a/{path.name}",
                    f"b/{path.name}",
                )
                diffs.append("".join(diff))
    seconds = time.perf_counter() - started
    print(f"mode: {'--fix --unsafe-fixes' if args.unsafe_fixes else '--fix'}; {seconds:.0f} s")
    for code, count in sorted(applied.items()):
        print(f"{code} {count}")
    print(f"fixes applied: {sum(applied.values())} in {changed_files} files")
    print(f"original lines changed by fixes: {touched_lines}; other lines byte-identical: {kept_lines}")
    print(
        f"line edits applied: {edited_lines}; files not equal to original + edits, byte for byte: {mismatches}"
    )
    print(f"files whose mode changed: {mode_changes}; fixes still offered after --fix: {left}")
    for diff in diffs:
        print(diff)
    print(json.dumps(dict(sorted(applied.items()))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
