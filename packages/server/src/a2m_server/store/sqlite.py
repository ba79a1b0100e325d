"""The embedded store: one SQLite file (or ``:memory:``), FTS5 for lexical ranking, and an
in-memory index over the verbatim vectors.

One writer connection serialises every write transaction; readers get a connection per
thread and, in WAL mode, never block the writer or each other."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from . import _fts
from ._access import AccessBuffer
from ._checkpoint import BACKSTOP_PAGES, Checkpointer
from ._sqlite_read import Reader, unpack_vector
from ._sqlite_write import Writer
from .base import (
    Store,
    StoredRecord,
    StoreReader,
    StoreWriter,
)
from .schema import migrate
from .vectors import VectorIndex

__all__ = ["SQLiteStore"]

log = logging.getLogger("a2m_server.store")


# Each reader connection's page cache (SQLite's default is 2 MiB).
_READER_CACHE_KIB = 8192
# Deletions after which the full-text index is rewritten without their words.
_PURGE_AFTER_DELETIONS = 5000


def _enter_wal(conn: sqlite3.Connection, patience_s: float) -> None:
    """Put the file in WAL mode, waiting out other processes opening it at the same moment.

    Switching a new file to WAL needs it alone for an instant, and SQLite answers "database
    is locked" at once rather than through the busy handler when another connection holds
    a lock; so two servers started together on one new file would fail at random."""
    deadline = time.monotonic() + patience_s
    pause = 0.001
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


class SQLiteStore(Store):
    """Records, vectors and the event log in one SQLite database.

    ``path`` is a file (created if missing) or ``":memory:"`` for a private, throw-away
    store. ``metric`` is how vectors are compared; ``event_retention`` how many events
    the log keeps; ``posting_budget`` how many postings lexical ranking walks exactly
    before it ranks only the rarest terms or the newest matches (``None``: every match,
    exact BM25; see :mod:`a2m_server.store._fts`)."""

    def __init__(
        self,
        path: str | Path = ":memory:",
        *,
        metric: str = "cosine",
        event_retention: int = 10_000,
        busy_timeout_ms: int = 10_000,
        posting_budget: int | None = _fts.POSTING_BUDGET,
    ) -> None:
        self.path = str(path)
        self.metric = metric
        self.event_retention = event_retention
        self._busy_timeout_ms = busy_timeout_ms
        self._memory = self.path == ":memory:" or self.path.startswith("file::memory:")
        self._write_lock = threading.RLock()
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._loader: sqlite3.Connection | None = None
        self._listeners: list[Callable[[], None]] = []
        self._listen_lock = threading.Lock()
        self._listener: threading.Thread | None = None
        self._stop_listening = threading.Event()
        self._closed = False
        if not self._memory and not self.path.startswith("file:"):
            # A file: URI is SQLite's to open as it says; read as a path it would make
            # a folder named "file:" here.
            Path(self.path).expanduser().resolve().parent.mkdir(parents=True, exist_ok=True)
        self._writer = self._connect()
        self._checkpointer: Checkpointer | None = None
        if not self._memory and not self.path.startswith("file:"):
            # Checkpoints run beside the writes (see _checkpoint); inline only as a backstop.
            self._writer.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_PAGES}")
            self._checkpointer = Checkpointer(self.path, busy_timeout_ms)
        migrate(self._writer)
        _fts.ensure_index(self._writer)
        self._store_id = self._ensure_store_id()
        self._index: VectorIndex | None = None
        self._index_loaded = False
        self._index_lock = threading.Lock()
        self._data_version = self._read_data_version()
        # Term statistics, cached per index state: never stale across a write.
        self._terms = _fts.TermStats(posting_budget)
        self._deletions = 0
        self._access = AccessBuffer()

    # --- connections -------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path,
            isolation_level=None,
            check_same_thread=False,
            timeout=self._busy_timeout_ms / 1000,
            uri=self.path.startswith("file:"),
        )
        conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
        if not self._memory:
            _enter_wal(conn, self._busy_timeout_ms / 1000)
            conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        # Forgotten means gone: freed pages are zeroed, not left holding the content.
        conn.execute("PRAGMA secure_delete = ON")
        return conn

    def _reader_connection(self) -> sqlite3.Connection:
        if self._memory:
            return self._writer
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            conn.execute("PRAGMA query_only = ON")
            # 8 MiB of pages rather than SQLite's 2: a store of some ten thousand records
            # stays whole in each reader's cache, and recall reads it page by page.
            conn.execute(f"PRAGMA cache_size = -{_READER_CACHE_KIB}")
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def _ensure_store_id(self) -> str:
        row = self._writer.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        if row:
            return str(row[0])
        store_id = uuid.uuid4().hex
        self._writer.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES ('store_id', ?)", (store_id,)
        )
        row = self._writer.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        return str(row[0])

    def _read_data_version(self) -> int:
        return int(self._writer.execute("PRAGMA data_version").fetchone()[0])

    @property
    def store_id(self) -> str:
        return self._store_id

    # --- term statistics ---------------------------------------------------------------

    def _note_deletions(self, count: int) -> None:
        """Purge deleted records' words from the full-text index now and then.

        FTS5 only marks a deleted row; its words stay in index segments until those are
        merged. Rewriting the index (with secure_delete zeroing the freed pages) is what
        makes forgotten text really gone; it runs every so many deletions and on close."""
        self._deletions += count
        if self._deletions >= _PURGE_AFTER_DELETIONS:
            self._purge_deleted_text()

    def _purge_deleted_text(self) -> None:
        with self._write_lock:
            self._writer.execute("INSERT INTO records_fts (records_fts) VALUES ('optimize')")
            self._deletions = 0

    # --- access counts -----------------------------------------------------------------

    def record_access(self, ids: Sequence[str], at: int) -> None:
        """Count one access of each record; buffered, and flushed with the next write."""
        if ids and self._access.add(ids, at):
            with self.writing():
                pass  # writing() applies what is pending

    def flush_access(self) -> None:
        if self._access:
            with self.writing():
                pass  # writing() applies what is pending

    def overlay_access(self, records: Sequence[StoredRecord]) -> None:
        """Show recalls buffered but not yet written in ``records``' access counts."""
        self._access.overlay(records)

    @property
    def term_stats(self) -> _fts.TermStats:
        """Term statistics for lexical ranking, cached per index state."""
        return self._terms

    # --- vector index ------------------------------------------------------------------

    def _check_foreign_writes(self) -> None:
        """Drop the vector index when another process committed to the file."""
        if self._memory:
            return
        with self._write_lock:
            self._note_data_version(self._read_data_version())

    def _note_data_version(self, version: int) -> None:
        """Drop the vector index if ``version`` (the writer
        connection's ``PRAGMA data_version``, read under the write lock) says another
        connection committed since it was last read."""
        if version != self._data_version:
            self._data_version = version
            with self._index_lock:
                self._index = None
                self._index_loaded = False

    def loaded_vector_index(self) -> VectorIndex | None:
        """The in-memory vector index, loaded on first use (``None``: no vector yet)."""
        self._check_foreign_writes()
        with self._index_lock:
            if not self._index_loaded:
                self._index = self._load_index()
                self._index_loaded = True
            return self._index

    def _load_index(self) -> VectorIndex | None:
        """The vector index as the file holds it now, read in one snapshot of its own. The
        calling thread's reader may be inside a read that began before another process
        committed (its snapshot older than the ``data_version`` just noted): an index
        built there would miss that process's vectors and still be taken as current."""
        if self._memory:
            with self._write_lock:
                return self._read_index(self._writer)
        conn = self._index_loader()
        conn.execute("BEGIN")
        try:
            return self._read_index(conn)
        finally:
            conn.execute("COMMIT")

    def _index_loader(self) -> sqlite3.Connection:
        """The connection loading the vector index (under the index lock), never inside
        another read."""
        if self._loader is None:
            conn = self._connect()
            conn.execute("PRAGMA query_only = ON")
            with self._readers_lock:
                self._readers.append(conn)
            self._loader = conn
        return self._loader

    def _read_index(self, conn: sqlite3.Connection) -> VectorIndex | None:
        row = conn.execute("SELECT value FROM meta WHERE key = 'dimensions'").fetchone()
        if row is None:
            return None
        index = VectorIndex(self.metric, int(row[0]))
        cursor = conn.execute("SELECT rowid, embedding FROM record_vectors")
        while True:
            batch = cursor.fetchmany(4096)
            if not batch:
                break
            index.add_many((rowid, unpack_vector(blob)) for rowid, blob in batch)
        log.debug("vector index loaded: %d vectors", len(index))
        return index

    def listen(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when a commit to the file may have logged events: another
        process sharing it has no way to tell this one, so a thread watches the file's
        ``PRAGMA data_version`` (four times a second) and calls back when it moves."""
        if self._memory:
            return  # one process only
        with self._listen_lock:
            if callback not in self._listeners:
                self._listeners.append(callback)
            if self._listener is None and not self._closed:
                self._listener = threading.Thread(
                    target=self._listen_loop, name="a2m-listen-sqlite", daemon=True
                )
                self._listener.start()

    def _listen_loop(self) -> None:
        conn = self._connect()
        try:
            conn.execute("PRAGMA query_only = ON")
            seen = conn.execute("PRAGMA data_version").fetchone()[0]
            while not self._stop_listening.wait(_LISTEN_INTERVAL_S):
                try:
                    version = conn.execute("PRAGMA data_version").fetchone()[0]
                except sqlite3.Error as exc:
                    log.warning("event listener could not read the file (%s)", exc)
                    continue
                if version == seen:
                    continue
                seen = version
                for callback in list(self._listeners):
                    try:
                        callback()
                    except Exception:
                        log.exception("an event listener failed")
        finally:
            conn.close()

    def _apply_vector_changes(self, writer: Writer) -> None:
        with self._index_lock:
            if writer.vectors_cleared or writer.width_changed:
                # built again from the database (at the new width) on first use
                self._index, self._index_loaded = None, False
                return
            if not self._index_loaded:
                return  # built from the database on first use
            if self._index is None:
                if not writer.vector_adds:
                    return
                dims = len(next(iter(writer.vector_adds.values())))
                self._index = VectorIndex(self.metric, dims)
            self._index.remove_many(writer.vector_removes)
            self._index.add_many(writer.vector_adds.items())

    # --- transactions ------------------------------------------------------------------

    @contextmanager
    def reading(self) -> Iterator[StoreReader]:
        self._ensure_open()
        conn = self._reader_connection()
        lock = self._write_lock if self._memory else _NO_LOCK
        with lock:
            conn.execute("BEGIN")
            try:
                yield Reader(self, conn)
            finally:
                conn.execute("COMMIT")

    @contextmanager
    def writing(self) -> Iterator[StoreWriter]:
        self._ensure_open()
        with self._write_lock:
            self._writer.execute("BEGIN IMMEDIATE")
            if not self._memory:
                # Read once, inside the transaction: with the write lock held no other
                # connection can commit until ours does, and a connection's own commits
                # leave its data_version as it is, so this value still holds after COMMIT.
                # (Read before BEGIN, a commit landing in between would go unnoticed.)
                self._note_data_version(self._read_data_version())
            writer = Writer(self, self._writer)
            accesses = self._access.take()
            try:
                writer.add_accesses(accesses)
                yield writer
                if writer.events_appended:
                    self._prune_events(writer)
                self._writer.execute("COMMIT")
            except BaseException:
                self._writer.execute("ROLLBACK")
                self._access.restore(accesses)
                raise
            self._apply_vector_changes(writer)
            self._note_deletions(writer.records_deleted)
            if self._checkpointer is not None:
                self._checkpointer.wake()

    def _prune_events(self, writer: Writer) -> None:
        oldest, head = writer.event_bounds()
        if head - oldest + 1 > self.event_retention:
            self._writer.execute(
                "DELETE FROM events WHERE seq <= ?", (head - self.event_retention,)
            )

    def _ensure_open(self) -> None:
        if self._closed:
            raise RuntimeError("this store is closed")

    def close(self) -> None:
        if self._closed:
            return
        if self._access:
            with self.writing():
                pass  # flush buffered access counts
        if self._deletions:
            self._purge_deleted_text()
        self._closed = True
        self._stop_listening.set()
        listener = self._listener
        if listener is not None:
            listener.join(5)
        if self._checkpointer is not None:
            self._checkpointer.close()
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
            self._loader = None
        with self._write_lock:
            if not self._memory:
                with contextlib.suppress(sqlite3.Error):  # best effort on shutdown
                    self._writer.execute("PRAGMA optimize")
            self._writer.close()


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NO_LOCK = _NoLock()

_LISTEN_INTERVAL_S = 0.25
"""How often the event listener looks for another process's commits."""
