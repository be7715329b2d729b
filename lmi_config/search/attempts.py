"""``attempts.json`` in a search's results location: every job started for each shard, and how
each ended — the search's own record of its attempts, so that ``--max-attempts`` holds across
coordinators (a restarted one reads it) whatever SageMaker still lists.

Only the coordinator that holds the lease writes it, and each write replaces only the version it
read (S3 ``If-Match``; created with ``If-None-Match: *``), so two writers never lose an attempt.
"""

from __future__ import annotations

from typing import Any

from lmi_config.errors import InputError
from lmi_config.search.results_store import ConflictError
from lmi_config.search.shard_objects import now
from lmi_config.strict_json import dump_json, parse_json

ATTEMPTS_KEY = "attempts.json"


class AttemptLog:
    """The attempts of every shard of one search: shard name -> [{job, started, status, failure_reason}]."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.shards: dict[str, list[dict[str, Any]]] = {}
        self.version: str | None = None

    def load(self) -> AttemptLog:
        """Read the record (none yet: no attempt); :class:`InputError` naming a damaged one."""
        found = self.store.read(ATTEMPTS_KEY)
        if found is None:
            self.shards, self.version = {}, None
            return self
        document = parse_json(found[0], self.store.describe(ATTEMPTS_KEY))
        shards = document.get("shards") if isinstance(document, dict) else None
        if not isinstance(shards, dict) or not all(isinstance(rows, list) for rows in shards.values()):
            raise InputError(
                f"{self.store.describe(ATTEMPTS_KEY)}: not a record of a search's attempts (no shards "
                "table); move it away to count attempts from the jobs SageMaker lists"
            )
        self.shards = {name: [row for row in rows if isinstance(row, dict)] for name, rows in shards.items()}
        self.version = found[1]
        return self

    def count(self, shard: str) -> int:
        """How many jobs were started for ``shard``."""
        return len(self.shards.get(shard, []))

    def last(self, shard: str) -> dict[str, Any] | None:
        """The last attempt recorded for ``shard`` (None: none)."""
        rows = self.shards.get(shard, [])
        return rows[-1] if rows else None

    def last_failure(self, shard: str) -> str:
        """How the last attempt of ``shard`` ended, as a user reads it."""
        rows = self.shards.get(shard, [])
        if not rows:
            return "no attempt recorded"
        last = rows[-1]
        reason = str(last.get("failure_reason") or "").strip()
        return f"{last.get('job')} {last.get('status', 'started')}" + (f": {reason}" if reason else "")

    def started(self, shard: str, job: str) -> None:
        """Record that job ``job`` was started for ``shard``."""
        self._update(lambda shards: shards.setdefault(shard, []).append({"job": job, "started": now()}))

    def ended(self, shard: str, job: str, status: str, failure_reason: str) -> None:
        """Record how job ``job`` of ``shard`` ended (once; an attempt recorded by nobody is added)."""

        def change(shards: dict[str, list[dict[str, Any]]]) -> None:
            rows = shards.setdefault(shard, [])
            row = next((row for row in rows if row.get("job") == job), None)
            if row is None:
                row = {"job": job}
                rows.append(row)
            row.update(status=status, failure_reason=failure_reason)

        rows = self.shards.get(shard, [])
        known = next((row for row in rows if row.get("job") == job), None)
        if (
            known is not None
            and known.get("status") == status
            and known.get("failure_reason") == failure_reason
        ):
            return  # journaled at an earlier poll: nothing to write
        self._update(change)

    def _update(self, change: Any) -> None:
        """Apply ``change`` to the latest record and write it conditionally (re-read on a conflict)."""
        for _ in range(5):
            change(self.shards)
            document = dump_json({"format": 1, "shards": self.shards}, indent=1).encode()
            try:
                self.version = self.store.write(
                    ATTEMPTS_KEY, document, if_match=self.version, if_absent=self.version is None
                )
                return
            except ConflictError:
                self.load()  # another writer: apply the change to what it wrote
        raise InputError(
            f"{self.store.describe(ATTEMPTS_KEY)}: changed by another coordinator at every try; stop the other one"
        )
