"""Read-only access to a djl-serving clone through git plumbing, and its release branches."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

BRANCH_PATTERN = re.compile(r"^(?P<djl>\d+\.\d+\.\d+)-(?:lmi(?P<lmi>\d+)-)?dlc$")


class Git:
    """Read-only access to one repository (bare or not) through git plumbing."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._blobs: dict[str, str] = {}
        self._reader: subprocess.Popen[bytes] | None = None

    def run(self, *args: str) -> str:
        """Output of ``git <args>``."""
        return subprocess.run(
            ["git", "-C", str(self.path), *args], check=True, capture_output=True, text=True
        ).stdout

    def branches(self) -> dict[str, str]:
        """Branch name -> commit, from refs/heads (a mirror) or refs/remotes/origin (a clone)."""
        found: dict[str, str] = {}
        for prefix in ("refs/remotes/origin/", "refs/heads/"):
            for line in self.run("for-each-ref", "--format=%(refname) %(objectname)", prefix).splitlines():
                ref, commit = line.split()
                found[ref.removeprefix(prefix)] = commit
        return found

    def tree(self, commit: str, path: str) -> dict[str, str]:
        """Path -> blob id of every file under ``path`` at ``commit``."""
        result = {}
        for line in self.run("ls-tree", "-r", commit, "--", path).splitlines():
            meta, name = line.split("\t", 1)
            kind, blob = meta.split()[1:3]
            if kind == "blob":
                result[name] = blob
        return result

    def blob(self, blob_id: str) -> str:
        """Text of one blob (cached: most files are identical on many branches)."""
        if blob_id not in self._blobs:
            if self._reader is None:
                self._reader = subprocess.Popen(
                    ["git", "-C", str(self.path), "cat-file", "--batch"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                )
            assert self._reader.stdin is not None and self._reader.stdout is not None
            self._reader.stdin.write(blob_id.encode() + b"\n")
            self._reader.stdin.flush()
            size = int(self._reader.stdout.readline().split()[2])
            data = self._reader.stdout.read(size + 1)[:-1]
            self._blobs[blob_id] = data.decode("utf-8", errors="replace")
        return self._blobs[blob_id]

    def close(self) -> None:
        """Stop the cat-file process."""
        if self._reader is not None:
            assert self._reader.stdin is not None
            self._reader.stdin.close()
            self._reader.wait()


def version_tuple(text: str) -> tuple[int, ...]:
    """``"0.33.0"`` -> ``(0, 33, 0)``."""
    return tuple(int(part) for part in text.split("."))


def select_releases(git: Git, releases_json: dict, min_version: str) -> list[dict[str, Any]]:
    """Release branches at or after ``min_version`` in release order, ``master`` last."""
    known = [(row["djl"], row.get("lmi")) for row in releases_json["releases"]]
    ordered: list[tuple[tuple[int, ...], dict[str, Any]]] = []
    for branch, commit in git.branches().items():
        match = BRANCH_PATTERN.match(branch)
        row: dict[str, Any]
        if branch == "master":
            row = {"branch": branch, "commit": commit, "djl": _gradle_version(git, commit), "lmi": None}
            ordered.append(((9999,), {**row, "in_releases_json": False}))
            continue
        if not match or version_tuple(match["djl"]) < version_tuple(min_version):
            continue
        djl, lmi = match["djl"], match["lmi"]
        if lmi is None:  # 0.NN.M-dlc: the LMI number of that DJL version (or of 0.NN.0)
            same = [k[1] for k in known if k[0] == djl] or [
                k[1] for k in known if k[0].rsplit(".", 1)[0] == djl.rsplit(".", 1)[0]
            ]
            lmi = same[0] if same else None
        row = {
            "branch": branch,
            "commit": commit,
            "djl": djl,
            "lmi": lmi,
            "in_releases_json": (djl, lmi) in known,
        }
        ordered.append(((*version_tuple(djl), int(match["lmi"] or 0)), row))
    return [row for _order, row in sorted(ordered, key=lambda item: item[0])]


def _gradle_version(git: Git, commit: str) -> str | None:
    blob = git.tree(commit, "gradle/libs.versions.toml").get("gradle/libs.versions.toml")
    found = re.search(r'^serving\s*=\s*"([^"]+)"', git.blob(blob), re.M) if blob else None
    return found.group(1) if found else None
