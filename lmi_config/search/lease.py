"""The lease of ``search --on sagemaker``: ``coordinator.json`` in the results location says which
coordinator watches the search. It is created only when absent and renewed only when unchanged
(S3 conditional writes); a lease not renewed for a while (its coordinator was killed) can be
taken over. No lock service of ours: the store's own conditional writes settle it.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from typing import Any

from lmi_config.errors import InputError
from lmi_config.search.results_store import ConflictError, S3Store
from lmi_config.strict_json import dump_json, parse_json

LEASE_KEY = "coordinator.json"


class Lease:
    """``coordinator.json``: who watches the search, renewed at every poll."""

    def __init__(self, store: S3Store, lapse_seconds: float) -> None:
        self.store, self.lapse_seconds = store, lapse_seconds
        self.owner = secrets.token_hex(8)
        self.version: str | None = None

    def _document(self) -> bytes:
        body = {"owner": self.owner, "host": socket.gethostname(), "pid": os.getpid(), "renewed": time.time()}
        return dump_json(body, indent=None).encode()

    def acquire(self) -> None:
        """Take the lease, or :class:`InputError` naming the coordinator that holds it."""
        try:
            self.version = self.store.write(LEASE_KEY, self._document(), if_absent=True)
            return
        except ConflictError:
            pass
        found = self.store.read(LEASE_KEY)
        holder: dict[str, Any] = {}
        if found is not None:
            try:
                parsed = parse_json(found[0], LEASE_KEY)
                holder = parsed if isinstance(parsed, dict) else {}
            except InputError:
                holder = {}  # a damaged lease protects nothing: take it over
        renewed = holder.get("renewed")
        age = time.time() - renewed if isinstance(renewed, (int, float)) else float("inf")
        if age < self.lapse_seconds:
            raise InputError(
                f"{self.store.describe(LEASE_KEY)}: another coordinator (host {holder.get('host')}, pid "
                f"{holder.get('pid')}) watches this search, renewed {age:.0f} s ago; stop it first (Ctrl-C), "
                f"or wait {self.lapse_seconds:.0f} s after its last renewal if it was killed"
            )
        try:
            self.version = self.store.write(
                LEASE_KEY, self._document(), if_match=found[1] if found else None, if_absent=found is None
            )
        except ConflictError:
            raise InputError(
                f"{self.store.describe(LEASE_KEY)}: another coordinator took this search over just now"
            ) from None

    def renew(self) -> None:
        """Renew the lease; :class:`InputError` when another coordinator took it over."""
        try:
            self.version = self.store.write(LEASE_KEY, self._document(), if_match=self.version)
        except ConflictError:
            raise InputError(
                f"{self.store.describe(LEASE_KEY)}: another coordinator took this search over; this one stops"
            ) from None

    def release(self) -> None:
        """Give the lease up if it is still ours."""
        found = self.store.read(LEASE_KEY)
        # by owner, not by version: a Ctrl-C can land after a renewal was written and before its
        # new version was kept
        if found is not None and _owner(found[0]) == self.owner:
            self.store.delete(LEASE_KEY)


def _owner(data: bytes) -> str | None:
    try:
        document = parse_json(data, LEASE_KEY)
    except InputError:
        return None
    return str(document.get("owner")) if isinstance(document, dict) else None
