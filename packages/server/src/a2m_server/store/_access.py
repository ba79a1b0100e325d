"""Access counts between writes: a recall counts one access of each record it returns,
and a store applies the counts with its next write rather than writing on every read.

Both stores buffer the same way; only how they apply a batch differs."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from .base import StoredRecord

__all__ = ["AccessBuffer"]

FLUSH_SECONDS = 2.0
"""Counts older than this are applied by the next access that finds them."""
FLUSH_RECORDS = 1000
"""So many records pending are applied at once."""


class AccessBuffer:
    """Pending ``(count, last access)`` per record id, safe across threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[int, int]] = {}
        self._since: float | None = None

    def __bool__(self) -> bool:
        return bool(self._pending)

    def add(self, ids: Sequence[str], at: int) -> bool:
        """Count one access of each of ``ids`` at ``at``; whether the counts are due."""
        with self._lock:
            pending = self._pending
            for record_id in ids:
                count, _ = pending.get(record_id, (0, 0))
                pending[record_id] = (count + 1, at)
            if self._since is None:
                self._since = time.monotonic()
            return len(pending) >= FLUSH_RECORDS or time.monotonic() - self._since >= FLUSH_SECONDS

    def take(self) -> dict[str, tuple[int, int]]:
        """Everything pending, which the caller now applies."""
        with self._lock:
            pending, self._pending = self._pending, {}
            self._since = None
        return pending

    def restore(self, pending: dict[str, tuple[int, int]]) -> None:
        """Put back what :meth:`take` gave, when applying it failed."""
        if not pending:
            return
        with self._lock:
            for record_id, (count, at) in pending.items():
                current, last = self._pending.get(record_id, (0, 0))
                self._pending[record_id] = (current + count, max(at, last))
            if self._since is None:
                self._since = time.monotonic()

    def overlay(self, records: Sequence[StoredRecord]) -> None:
        """Show ``records`` with the accesses not yet applied, as if they were."""
        if not self._pending:
            return
        with self._lock:
            for record in records:
                pending = self._pending.get(record.id)
                if pending is not None:
                    record.access_count += pending[0]
                    record.accessed_at = max(record.accessed_at or 0, pending[1])
