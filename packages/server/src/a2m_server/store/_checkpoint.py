"""Checkpointing a SQLite file's write-ahead log on a thread of its own.

SQLite copies the log back into the database file (and syncs both) inside whichever
commit finds the log past ``wal_autocheckpoint`` pages: with vectors that is every couple
of thousand records, and that commit's caller waits for the copy and two fsyncs. A
checkpoint changes no data and no commit waits on it to be durable (a commit is durable
in the log, as it was), so here it runs beside the writes, on its own connection, at most
every :data:`INTERVAL` seconds while commits keep coming. The writer's own automatic
checkpoint stays as a backstop, at :data:`BACKSTOP_PAGES`, should this thread fall behind.

Nothing here opens the database's files itself: SQLite coordinates the processes sharing
a file with POSIX locks on it and its ``-shm`` index, and closing *any* descriptor of
those files drops every such lock the process holds — letting another process write the
log at the same time and lose committed transactions. Only SQLite touches them."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading

__all__ = ["BACKSTOP_PAGES", "INTERVAL", "LOG_PAGES", "Checkpointer"]

log = logging.getLogger("a2m_server.store")

LOG_PAGES = 1000
"""Log pages not yet in the file past which a checkpoint runs: SQLite's own default
threshold."""
BACKSTOP_PAGES = 16 * LOG_PAGES
"""The writer's ``wal_autocheckpoint``: it checkpoints inline only past this."""
INTERVAL = 0.5
"""Seconds between two background checkpoints while commits keep coming: a passive
checkpoint with little to copy is cheap, and this bounds how often one syncs the file."""


class Checkpointer:
    """Runs ``PRAGMA wal_checkpoint(PASSIVE)`` on ``path`` after commits, at most every
    ``interval`` seconds; the thread starts on the first wake and ends in :meth:`close`."""

    def __init__(self, path: str, busy_timeout_ms: int, interval: float = INTERVAL) -> None:
        self._path = path
        self._interval = interval
        self._busy_timeout_ms = busy_timeout_ms
        self._wanted = threading.Event()
        self._stopped = threading.Event()
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
                # Let commits gather: one checkpoint copies what several wrote.
                if self._stopped.wait(self._interval):
                    return
                self._wanted.clear()
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as exc:  # the next wake tries again
                    log.debug("background checkpoint failed: %s", exc)
        finally:
            conn.close()

    def close(self) -> None:
        """End the thread (after a checkpoint in progress) and close its connection."""
        with self._lock:
            self._closed = True
            thread = self._thread
        self._stopped.set()
        self._wanted.set()
        if thread is not None:
            with contextlib.suppress(RuntimeError):
                thread.join()
