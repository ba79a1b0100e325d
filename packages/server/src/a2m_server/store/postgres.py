"""The PostgreSQL + pgvector store: one database (or one schema of it) shared by any
number of server processes, which then act as one logical server.

Every write transaction takes one advisory lock, so writers are serialised across
processes exactly as SQLite's one writer serialises them within a file: key
replacement, tier capacity and consolidation see every committed write, and the event
log's head moves only at commit, so a cursor never runs ahead of an event still to
become visible. Reads run in REPEATABLE READ snapshots and never wait for writers.
Committed events are announced with NOTIFY, so subscribers hear writes made through
any process."""

from __future__ import annotations

import logging
import select
import threading
import uuid
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from ._access import AccessBuffer
from ._pg_adapt import configure
from ._pg_read import PgReader
from ._pg_schema import MIGRATION_LOCK, MissingExtensionError, migrate
from ._pg_write import PgWriter
from .base import Store, StoredRecord, StoreError, StoreReader, StoreWriter

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["MissingExtensionError", "PostgresStore", "VectorIndexKind"]

log = logging.getLogger("a2m_server.store")

VectorIndexKind = Literal["exact", "hnsw"]

# Buffered access counts reach the database with the next write, or after this long or
# this many (as on SQLite).
# HNSW indexes vectors of up to this many dimensions (pgvector's limit).
_HNSW_MAX_DIMENSIONS = 2000
_OPCLASS = {"cosine": "vector_cosine_ops", "dot": "vector_ip_ops", "l2": "vector_l2_ops"}


def _check_quiet_or_ask(conn: psycopg.Connection[Any]) -> None:
    """The pool's check before it lends ``conn``: a connection whose socket is quiet is
    taken as it is, without a round trip (a third of a short call's time); one the server
    closed, or that holds bytes nobody asked for, gets psycopg's round-trip check, which
    raises when it is broken, and the pool lends another."""
    from psycopg_pool import ConnectionPool

    if conn.closed or _readable_now(conn.fileno()):
        ConnectionPool.check_connection(conn)


def _readable_now(fd: int) -> bool:
    if fd < 0:
        return True
    poll = getattr(select, "poll", None)
    if poll is not None:
        poller = poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)


def redact(url: str) -> str:
    """``url`` without its password (``user:…@`` or a ``password=`` parameter), for
    messages."""
    parts = urlsplit(url)
    query = "&".join(
        f"{pair.split('=', 1)[0]}=***" if pair.lower().startswith("password=") else pair
        for pair in parts.query.split("&")
    )
    netloc = parts.netloc
    if parts.password:
        netloc = netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def _conninfo(url: str, statement_timeout_ms: int) -> tuple[str, str | None]:
    """libpq's URL with the ``schema`` parameter turned into a search_path, and that
    schema; a statement timeout is set for every session."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((value for name, value in query if name == "schema"), None)
    rest = [(name, value) for name, value in query if name != "schema"]
    options = [f"-c statement_timeout={int(statement_timeout_ms)}"]
    if schema is not None:
        if not schema.replace("_", "").isalnum():
            raise ValueError(f"schema must be letters, digits and underscores: {schema!r}")
        options.append(f"-c search_path={schema},public")
    extra = " ".join(options)
    merged = [(name, f"{extra} {value}" if name == "options" else value) for name, value in rest]
    if not any(name == "options" for name, _ in rest):
        merged.append(("options", extra))
    if not any(name == "connect_timeout" for name, _ in rest):
        merged.append(("connect_timeout", "10"))
    return urlunsplit(parts._replace(query=urlencode(merged, quote_via=quote))), schema


class PostgresStore(Store):
    """Records, vectors and the event log in PostgreSQL with pgvector.

    ``url`` is a libpq URL (``postgresql://user:pass@host:5432/db``); an extra
    ``schema=NAME`` parameter keeps this store in a schema of its own (created if
    missing). ``vector_index`` is ``"exact"`` (a full scan: no recall loss) or
    ``"hnsw"`` (an approximate index, for millions of vectors)."""

    def __init__(
        self,
        url: str,
        *,
        metric: str = "cosine",
        event_retention: int = 10_000,
        vector_index: VectorIndexKind = "exact",
        pool_size: int = 8,
        statement_timeout_ms: int = 30_000,
        pool_timeout_s: float = 10.0,
        posting_budget: int | None = 2000,
    ) -> None:
        import psycopg
        from psycopg_pool import ConnectionPool

        if vector_index not in ("exact", "hnsw"):
            raise ValueError(f"vector_index must be exact or hnsw, not {vector_index!r}")
        self.url = url
        self.metric = metric
        self.event_retention = event_retention
        self.vector_index: VectorIndexKind = vector_index
        self.posting_budget = posting_budget
        self._pool_timeout_s = pool_timeout_s
        try:
            self._conninfo, schema = _conninfo(url, statement_timeout_ms)
            first = psycopg.connect(self._conninfo, autocommit=True)
            configure(first)
        except psycopg.ProgrammingError as exc:
            raise StoreError(
                f"not a usable PostgreSQL URL {redact(url)}: {_one_line(exc)}"
            ) from None
        except psycopg.OperationalError as exc:
            raise StoreError(
                f"cannot connect to PostgreSQL at {redact(url)}: {_one_line(exc)}"
            ) from None
        try:
            migrate(first, schema)
            self._store_id = self._ensure_store_id(first)
            (current,) = first.execute("SELECT current_schema()").fetchone() or ("public",)
            self._schema = str(current)
            self._ensure_vector_index(first)
        except psycopg.Error as exc:
            first.close()
            raise StoreError(
                f"cannot prepare the store at {redact(url)}: {_one_line(exc)}"
            ) from None
        except BaseException:
            first.close()
            raise
        first.close()
        self._lock_key = zlib.crc32(f"a2m:{self._schema}".encode())
        self._channel = f"a2m_{self._store_id}"
        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            self._conninfo,
            min_size=1,
            max_size=max(pool_size, 1),
            kwargs={"autocommit": True},
            configure=configure,
            check=_check_quiet_or_ask,
            timeout=pool_timeout_s,
            num_workers=1,
            open=False,
            name=f"a2m-{self._schema}",
        )
        self._pool.open(wait=False)
        log.debug(
            "PostgreSQL store open: schema %s, vector index %s, pool of up to %d",
            self._schema,
            vector_index,
            pool_size,
        )
        self._closed = False
        self._access = AccessBuffer()
        self._listen_lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []
        self._listener: threading.Thread | None = None
        self._stop_listening = threading.Event()

    # --- setup ---------------------------------------------------------------------------

    @staticmethod
    def _ensure_store_id(conn: psycopg.Connection[Any]) -> str:
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('store_id', %s) ON CONFLICT (key) DO NOTHING",
            (uuid.uuid4().hex,),
        )
        row = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        assert row is not None
        return str(row[0])

    def _ensure_vector_index(self, conn: psycopg.Connection[Any]) -> None:
        row = conn.execute("SELECT value FROM meta WHERE key = 'dimensions'").fetchone()
        if row is not None and self.vector_index == "hnsw":
            with conn.transaction():
                # One process builds the index; the others then find it there.
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                self._create_hnsw(conn, int(row[0]))

    def fix_vector_width(self, conn: psycopg.Connection[Any], dimensions: int) -> None:
        """Type the vector column once the first vector fixes the width, and index it."""
        if dimensions > 16_000:
            return  # beyond pgvector's type; such vectors are kept but not searchable
        conn.execute(f"ALTER TABLE record_vectors ALTER COLUMN vec TYPE vector({int(dimensions)})")
        if self.vector_index == "hnsw":
            self._create_hnsw(conn, dimensions)

    def _create_hnsw(self, conn: psycopg.Connection[Any], dimensions: int) -> None:
        if dimensions > _HNSW_MAX_DIMENSIONS:
            log.warning(
                "vectors of %d dimensions are beyond HNSW's %d: searching them exactly",
                dimensions,
                _HNSW_MAX_DIMENSIONS,
            )
            return
        # The graph builds far faster when it fits in memory (about 2 GB for a million
        # 384-d vectors): at least 1 GB, or the server's setting when it is larger. Over
        # a large store it takes minutes, which no statement timeout meant for calls
        # should cut short.
        conn.execute(
            "SELECT set_config('maintenance_work_mem', greatest(pg_size_bytes("
            "current_setting('maintenance_work_mem')), 1024 * 1024 * 1024) / 1024 || 'kB', true)"
        )
        conn.execute("SET LOCAL statement_timeout = 0")
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS record_vectors_hnsw ON record_vectors "
            f"USING hnsw (vec {_OPCLASS[self.metric]}) WITH (m = 16, ef_construction = 128)"
        )

    @property
    def store_id(self) -> str:
        return self._store_id

    # --- connections and transactions ------------------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        import psycopg
        from psycopg_pool import PoolTimeout

        if self._closed:
            raise RuntimeError("this store is closed")
        try:
            with self._pool.connection(timeout=self._pool_timeout_s) as conn:
                yield conn
        except PoolTimeout:
            raise StoreError(
                f"no PostgreSQL connection could be had within {self._pool_timeout_s:g} s"
            ) from None
        except psycopg.errors.QueryCanceled as exc:
            raise StoreError(f"the database cancelled a statement: {_one_line(exc)}") from None
        except psycopg.Error as exc:
            raise StoreError(f"the database failed: {_one_line(exc)}") from None

    @contextmanager
    def reading(self) -> Iterator[StoreReader]:
        with self._connection() as conn:
            try:
                # Pipelined: BEGIN travels with the first query, COMMIT with the last sync.
                with conn.pipeline():
                    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    yield PgReader(self, conn)
                    conn.execute("COMMIT")
            except BaseException:
                # Outside the pipeline: an aborted one would refuse the ROLLBACK.
                _finish(conn, "ROLLBACK")
                raise

    @contextmanager
    def writing(self) -> Iterator[StoreWriter]:
        with self._connection() as conn:
            accesses = self._access.take()
            try:
                with conn.pipeline():
                    conn.execute("BEGIN")
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
                    writer = PgWriter(self, conn)
                    writer.add_accesses(accesses)
                    yield writer
                    writer.flush()
                    if writer.events_appended:
                        conn.execute(
                            "UPDATE meta SET value = %s WHERE key = 'event_head'",
                            (str(writer.event_head),),
                        )
                        # Bounded below by the oldest event kept: every event deleted
                        # before lies under it, so the scan starts at the live range and
                        # never wades through the deleted ones vacuum has yet to reclaim.
                        conn.execute(
                            "DELETE FROM events WHERE seq <= %s "
                            "AND seq >= (SELECT min(seq) FROM events)",
                            (writer.event_head - self.event_retention,),
                        )
                        conn.execute("SELECT pg_notify(%s, '')", (self._channel,))
                    # Pipelined too: the commit travels with the last statements, and a
                    # failure among them aborts the pipeline, so nothing commits.
                    conn.execute("COMMIT")
            except BaseException:
                _finish(conn, "ROLLBACK")
                self._access.restore(accesses)
                raise

    # --- access counts -------------------------------------------------------------------

    def record_access(self, ids: Sequence[str], at: int) -> None:
        """Count one access of each record; buffered, and flushed with the next write."""
        if ids and self._access.add(ids, at):
            self.flush_access()

    def flush_access(self) -> None:
        if self._access:
            with self.writing():
                pass  # writing() applies what is pending

    def overlay_access(self, records: Sequence[StoredRecord]) -> None:
        self._access.overlay(records)

    # --- notifications -------------------------------------------------------------------

    def listen(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` whenever any process commits events to this store."""
        with self._listen_lock:
            if callback not in self._listeners:
                self._listeners.append(callback)
            if self._listener is None and not self._closed:
                self._listener = threading.Thread(
                    target=self._listen_loop, name=f"a2m-listen-{self._schema}", daemon=True
                )
                self._listener.start()

    def _listen_loop(self) -> None:
        import psycopg

        while not self._stop_listening.is_set():
            try:
                with psycopg.connect(self._conninfo, autocommit=True) as conn:
                    configure(conn)
                    conn.execute(f'LISTEN "{self._channel}"')
                    self._announce()  # whatever committed while not listening
                    while not self._stop_listening.is_set():
                        heard = False
                        for _ in conn.notifies(timeout=0.25):
                            heard = True
                        if heard:
                            self._announce()
            except psycopg.Error as exc:
                log.warning("event listener lost its connection (%s); reconnecting", exc)
                self._stop_listening.wait(0.5)

    def _announce(self) -> None:
        for callback in list(self._listeners):
            try:
                callback()
            except Exception:
                log.exception("an event listener failed")

    # --- shutdown ------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        with suppress(StoreError):
            self.flush_access()
        self._closed = True
        self._stop_listening.set()
        listener = self._listener
        if listener is not None:
            listener.join(5)
        self._pool.close()


def _finish(conn: psycopg.Connection[Any], statement: str) -> None:
    """End a transaction; a connection already broken is left to the pool to discard."""
    import psycopg

    with suppress(psycopg.Error):
        conn.execute(statement)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
