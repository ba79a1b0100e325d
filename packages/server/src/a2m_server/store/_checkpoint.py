"""Checkpointing a SQLite file's write-ahead log on a thread of its own.

SQLite copies the log back into the database file (and syncs both) inside whichever
commit finds the log past ``wal_autocheckpoint`` pages: with vectors that is every couple
of thousand records, and that commit's caller waits for the copy and two fsyncs. A
checkpoint changes no data and no commit waits on it to be durable (a commit is durable
in the log, as it was), so here it runs beside the writes, on its own connection, as
soon as the log passes :data:`LOG_PAGES`. The writer's own automatic checkpoint stays as
a backstop, at :data:`BACKSTOP_PAGES`, should this thread fall behind."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import struct
import threading

__all__ = ["BACKSTOP_PAGES", "LOG_PAGES", "Checkpointer"]

log = logging.getLogger("a2m_server.store")

LOG_PAGES = 1000
"""Log pages not yet in the file past which a checkpoint runs: SQLite's own default
threshold."""
BACKSTOP_PAGES = 16 * LOG_PAGES
"""The writer's ``wal_autocheckpoint``: it checkpoints inline only past this."""


class Checkpointer:
    """Runs ``PRAGMA wal_checkpoint(PASSIVE)`` on ``path`` when :meth:`wake` finds the log
    past :data:`LOG_PAGES`; the thread starts on the first wake and ends in :meth:`close`."""

    def __init__(self, path: str, busy_timeout_ms: int) -> None:
        self._path = path
        self._index = path + "-shm"
        self._threshold = LOG_PAGES
        self._busy_timeout_ms = busy_timeout_ms
        self._wanted = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def wake(self) -> None:
        """Called after each commit: cheap, the size check happens on the thread."""
        if self._thread is None:
            with self._lock:
                if self._closed:
                    return
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run, name="a2m-sqlite-checkpoint", daemon=True
                    )
                    self._thread.start()
        self._wanted.set()

    def _run(self) -> None:
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
            while True:
                self._wanted.wait()
                self._wanted.clear()
                if self._closed:
                    return
                if self._pending_frames() < self._threshold:
                    continue
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as exc:  # the next wake tries again
                    log.debug("background checkpoint failed: %s", exc)
        finally:
            conn.close()

    def _pending_frames(self) -> int:
        """Log frames not yet copied into the file, from the WAL index's header (its
        documented layout, native byte order: ``mxFrame`` at byte 16, the checkpoint's
        ``nBackfill`` at byte 96). The log file's size would not do: SQLite reuses the
        file from its start after a checkpoint, so it never shrinks."""
        try:
            with open(self._index, "rb") as index:
                header = index.read(100)
        except OSError:
            return 0
        if len(header) < 100:
            return 0
        last_frame: int = struct.unpack_from("=I", header, 16)[0]
        backfilled: int = struct.unpack_from("=I", header, 96)[0]
        return max(last_frame - backfilled, 0)

    def close(self) -> None:
        """End the thread (after a checkpoint in progress) and close its connection."""
        with self._lock:
            self._closed = True
            thread = self._thread
        self._wanted.set()
        if thread is not None:
            with contextlib.suppress(RuntimeError):
                thread.join()
