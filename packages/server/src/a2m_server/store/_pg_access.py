"""Reads and writes of one PostgreSQL transaction: the SQL behind :class:`StoreReader`
and :class:`StoreWriter` for :class:`~a2m_server.store.postgres.PostgresStore`."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from ._audit import PgAuditReading, PgAuditWriting
from ._pg_adapt import Float4Vector, Float8Array
from ._pg_counts import agent_counts, kept_counts
from ._pg_counts import answers as counts_answer
from ._pg_filter import Sql, add_scope, build_filter, dump_json, jsonb_text
from ._pg_lexical import lexical_search
from ._pg_text import tsvector
from .base import (
    RECORD_COLUMNS,
    AgentCount,
    EventRow,
    LexicalHit,
    NewRecord,
    RecordFilter,
    Scope,
    SessionStats,
    StoredRecord,
    StoreReader,
    StoreWriter,
)
from .vectors import to_similarity

if TYPE_CHECKING:
    import psycopg


__all__ = ["PgReader", "PgWriter", "StoreState", "query_vector"]

_R_COLUMNS = ", ".join(f"r.{c.strip()}" for c in RECORD_COLUMNS.split(","))
_WITH_VECTOR = f"{_R_COLUMNS}, v.embedding FROM records AS r " + (
    "LEFT JOIN record_vectors AS v ON v.rowid = r.rowid"
)
_WITHOUT_VECTOR = f"{_R_COLUMNS} FROM records AS r"

_DISTANCE = {"cosine": "<=>", "dot": "<#>", "l2": "<->"}
_HNSW_EF_SEARCH = 200
"""The narrowest HNSW beam (``hnsw.ef_search``) searched."""
_HNSW_MAX_BEAM = 1000
"""pgvector's widest beam."""
_BEAM_MARGIN = 1.5
"""A filtered search's beam holds this many times the candidates it must find."""
_PREFILTER_ROWS = 2048
"""A filter admitting at most this many rows ranks them exactly (SQLite's bound)."""
_NO_FILTER = RecordFilter()
_KEPT_ROWS = 1000
"""A lexical search returning at most this many rows brings their columns along."""
_PGVECTOR_MAX_DIMENSIONS = 16_000


class StoreState(Protocol):
    """What a transaction needs of the store that opened it (``PostgresStore``), named
    here so this module does not import the store module that imports it."""

    @property
    def metric(self) -> str: ...

    @property
    def vector_index(self) -> str: ...

    @property
    def store_id(self) -> str: ...

    @property
    def posting_budget(self) -> int | None: ...

    def overlay_access(self, records: Sequence[StoredRecord]) -> None: ...

    def fix_vector_width(self, conn: psycopg.Connection[Any], dimensions: int) -> None: ...


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def query_vector(vector: Sequence[float]) -> Float4Vector | None:
    """``vector`` as a pgvector parameter, or None when float32 cannot hold it (it then
    ranks as nothing, as on SQLite)."""
    with np.errstate(over="ignore", invalid="ignore"):
        narrow = np.asarray(vector, dtype=np.float32)
    if not np.all(np.isfinite(narrow)):
        return None
    return Float4Vector(narrow)


def row_to_record(row: Sequence[Any], *, with_vector: bool) -> StoredRecord:
    vector = row[19] if with_vector else None
    return StoredRecord.from_row(row, None if vector is None else [float(x) for x in vector])


def _meta_jsonb(metadata: Mapping[str, Any] | None) -> str | None:
    return None if metadata is None else jsonb_text(metadata)


class PgReader(PgAuditReading, StoreReader):
    _keeps_found = True
    """Whether a vector search keeps the rows it found for the next get(); a writer's
    rows may change in between."""

    def __init__(self, store: StoreState, conn: psycopg.Connection[Any]) -> None:
        self._store = store
        self._conn = conn
        self._now = _now_ms()
        self._dimensions_read: tuple[int | None] | None = None
        # Records the searches found, for the get() that follows them.
        self._found: dict[str, StoredRecord] = {}

    @property
    def store_id(self) -> str:
        return self._store.store_id

    def _before_statement(self) -> None:
        """A hook run before every statement (the writer flushes buffered rows)."""

    def _rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self._before_statement()
        return self._conn.execute(query, params).fetchall()

    def _exec(self, query: str, params: Sequence[Any] = ()) -> None:
        self._before_statement()
        self._conn.execute(query, params)

    def get(self, ids: Sequence[str], *, embeddings: bool = False) -> list[StoredRecord]:
        if not ids:
            return []
        if not self._found or embeddings:
            return self.select(RecordFilter(ids=ids), embeddings=embeddings)
        # A recall asks for the records its vector search just ranked: those rows came
        # with the ranking, read in this same snapshot, so only the rest are queried.
        # Each is handed out once (the access overlay then applies once).
        wanted = list(dict.fromkeys(ids))
        held = [self._found.pop(i) for i in wanted if i in self._found]
        self._store.overlay_access(held)
        served = {r.id for r in held}
        rest = [i for i in wanted if i not in served]
        records = held + (self.select(RecordFilter(ids=rest)) if rest else [])
        records.sort(key=lambda r: (r.created_at, r.rowid))
        return records

    def get_by_key(
        self, owner: str | None, key: str, *, embeddings: bool = False
    ) -> StoredRecord | None:
        rows = self._rows(
            f"SELECT {_WITH_VECTOR if embeddings else _WITHOUT_VECTOR} "
            "WHERE coalesce(r.owner, '') = %s AND r.key = %s "
            "AND (r.expires_at IS NULL OR r.expires_at > %s)",
            (owner or "", key, self._now),
        )
        if not rows:
            return None
        record = row_to_record(rows[0], with_vector=embeddings)
        self._store.overlay_access([record])
        return record

    def select(
        self,
        where: RecordFilter,
        *,
        order: str = "created_asc",
        limit: int | None = None,
        offset: int = 0,
        embeddings: bool = False,
    ) -> list[StoredRecord]:
        sql = build_filter(where, self._now)
        direction = "DESC" if order == "created_desc" else "ASC"
        query = (
            f"SELECT {_WITH_VECTOR if embeddings else _WITHOUT_VECTOR} WHERE {sql.text()} "
            f"ORDER BY r.created_at {direction}, r.rowid {direction}"
        )
        params = list(sql.params)
        if limit is not None:
            query += " LIMIT %s"
            params.append(limit)
        if offset:
            query += " OFFSET %s"
            params.append(offset)
        records = [row_to_record(row, with_vector=embeddings) for row in self._rows(query, params)]
        self._store.overlay_access(records)
        return records

    def scan(self, after: int, limit: int) -> list[StoredRecord]:
        rows = self._rows(
            f"SELECT {_WITH_VECTOR} WHERE r.rowid > %s AND "
            "(r.expires_at IS NULL OR r.expires_at > %s) ORDER BY r.rowid LIMIT %s",
            (after, self._now, limit),
        )
        records = [row_to_record(row, with_vector=True) for row in rows]
        self._store.overlay_access(records)
        return records

    def count(self, where: RecordFilter) -> int:
        if where.tier is not None and counts_answer(where):
            return kept_counts(self._rows, where, self._now).get(where.tier, 0)
        sql = build_filter(where, self._now)
        return int(
            self._rows(f"SELECT count(*) FROM records AS r WHERE {sql.text()}", sql.params)[0][0]
        )

    def count_by_tier(self, where: RecordFilter) -> dict[str, int]:
        if counts_answer(where):
            return kept_counts(self._rows, where, self._now)
        sql = build_filter(where, self._now)
        rows = self._rows(
            f"SELECT r.tier, count(*) FROM records AS r WHERE {sql.text()} GROUP BY r.tier",
            sql.params,
        )
        return {tier: int(count) for tier, count in rows if tier is not None}

    def count_by_agent(self, scope: Scope | None) -> list[AgentCount]:
        return agent_counts(self._rows, scope, self._now)

    def count_by_session(self, where: RecordFilter) -> dict[str | None, int]:
        sql = build_filter(where, self._now)
        rows = self._walked(
            f"SELECT r.session, count(*) FROM records AS r WHERE {sql.text()} GROUP BY r.session",
            sql.params,
        )
        return {session: int(count) for session, count in rows}

    def select_ids(
        self, where: RecordFilter, *, order: str = "created_asc", limit: int | None = None
    ) -> list[tuple[str, str | None, str | None]]:
        sql = build_filter(where, self._now)
        direction = "DESC" if order == "created_desc" else "ASC"
        query = (
            f"SELECT r.id, r.owner, r.grp FROM records AS r WHERE {sql.text()} "
            f"ORDER BY r.created_at {direction}, r.rowid {direction}"
        )
        params = list(sql.params)
        if limit is not None:
            query += " LIMIT %s"
            params.append(limit)
        return [(str(i), owner, group) for i, owner, group in self._walked(query, params)]

    def _walked(self, query: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """The rows of ``query``, planned without bitmap scans. These are the capacity
        checks: they read one small tier (working memory) of a large table, and every
        record that left it left an index entry behind until vacuum reclaims it. An
        index scan marks such entries dead the first time it meets them and skips them
        after; a bitmap scan visits every one in the table again on each call."""
        self._before_statement()
        # Pipelined with the query, so no round trip of their own; SET LOCAL would
        # also end with the transaction, but later statements may want bitmap scans.
        self._conn.execute(
            "SELECT set_config('a2m.enable_bitmapscan', current_setting('enable_bitmapscan'), true)"
        )
        self._conn.execute("SET LOCAL enable_bitmapscan = off")
        rows = self._conn.execute(query, params).fetchall()
        self._conn.execute(
            "SELECT set_config('enable_bitmapscan', current_setting('a2m.enable_bitmapscan'), true)"
        )
        return rows

    # --- lexical ---------------------------------------------------------------------------

    def lexical(
        self,
        where: RecordFilter,
        terms: Sequence[str],
        limit: int | None,
        *,
        match_all: bool = False,
    ) -> list[LexicalHit]:
        limited = limit is not None and limit <= _KEPT_ROWS
        found = lexical_search(
            self._rows,
            build_filter(where, self._now),
            terms,
            limit,
            match_all=match_all,
            posting_budget=self._store.posting_budget,
            columns=_R_COLUMNS if limited and self._keeps_found else "r.id",
        )
        if not (limited and self._keeps_found):
            return [LexicalHit(row[0], row[1], row[2]) for row in found]
        self._keep(found)
        return [LexicalHit(row[1], row[-2], row[-1]) for row in found]

    # --- vectors ---------------------------------------------------------------------------

    def nearest(
        self, where: RecordFilter, vector: Sequence[float], limit: int
    ) -> list[tuple[str, float]]:
        if limit <= 0 or self.dimensions() is None:
            return []
        literal = query_vector(vector)
        if literal is None:
            return []
        metric = self._store.metric
        sql = build_filter(where.with_(with_embedding=True), self._now)
        distance = f"(v.vec {_DISTANCE[metric]} %b::vector)"
        beam = self._hnsw_beam(where, sql, limit) if self._store.vector_index == "hnsw" else None
        if beam is not None:
            # One statement for both settings; they last until the transaction ends.
            self._exec(
                "SELECT set_config('hnsw.ef_search', %s, true), "
                "set_config('hnsw.iterative_scan', 'strict_order', true)",
                (str(beam),),
            )
            measure = distance
            # By distance alone, as the graph yields rows: a second sort key would have
            # it yield one row past the limit, a whole further pass when that is the beam.
            order = distance
        else:
            # A zero vector has no cosine: pgvector says NaN, SQLite's index 0.5 (raw 0).
            # "+ 0" keeps the planner off any HNSW index: exact means every vector.
            if metric == "cosine":
                measure = f"coalesce(nullif({distance}, 'NaN'::float8), 1)"
            else:
                measure = f"({distance} + 0)"
            order = f"{measure}, r.rowid"
        rows = self._rows(
            f"SELECT {_R_COLUMNS}, {measure} AS d FROM record_vectors AS v "
            "JOIN records AS r ON r.rowid = v.rowid "
            f"WHERE v.vec IS NOT NULL AND {sql.text()} ORDER BY {order} LIMIT %s",
            [literal, *sql.params, literal, limit],
        )
        if not rows:
            return []
        if self._keeps_found:
            self._keep(rows)
        distances = np.array([float(row[-1]) for row in rows], dtype=np.float64)
        if metric == "cosine":
            raw = 1.0 - distances
        elif metric == "dot":
            raw = -distances
        else:
            raw = -(distances**2)
        similarity = to_similarity(metric, raw)
        return [
            (row[1], float(score))
            for row, score in zip(rows, similarity.tolist(), strict=True)
            if math.isfinite(score)
        ]

    def _keep(self, rows: Sequence[Sequence[Any]]) -> None:
        """Keep the records of ``rows`` (record columns first) for the next get()."""
        for row in rows:
            self._found[row[1]] = row_to_record(row, with_vector=False)

    def _hnsw_beam(self, where: RecordFilter, sql: Sql, limit: int) -> int | None:
        """HNSW's beam width (``hnsw.ef_search``) for ``limit`` nearest under ``where``, or
        None when ranking the rows it admits exactly is cheaper and loses nothing.

        The beam is wide enough that the first pass over the graph finds ``limit`` rows
        the filter admits: a filter admitting one row in eight needs eight times the
        candidates. What an iterative scan finds past that first pass is found less
        reliably: scoped to one owner of eight at a million 384-d vectors, recall@10 was
        0.945 iterating from a beam of 200, and 0.984 in one pass of the widened beam.
        A filter admitting few rows (a session, a key prefix, a small owner) ranks just
        those, exactly, as on SQLite."""
        beam = max(limit, _HNSW_EF_SEARCH)
        where = where.with_(with_embedding=False)
        if where == _NO_FILTER:
            return min(beam, _HNSW_MAX_BEAM)
        if counts_answer(where):
            # The kept counts give the scope's share of the store in one indexed read.
            scoped = Sql()
            if where.tier is not None:
                scoped.add("r.tier = %s", where.tier)
            if where.scope is not None:
                add_scope(scoped, where.scope, owner_column="r.owner", tier_column="r.tier")
            ((admitted, total),) = self._rows(
                f"SELECT coalesce(sum(r.n) FILTER (WHERE {scoped.text()}), 0), "
                "coalesce(sum(r.n), 0) FROM record_counts AS r",
                scoped.params,
            )
            admitted, total = int(admitted), int(total)
        else:
            ((admitted,),) = self._rows(
                f"SELECT count(*) FROM (SELECT 1 FROM records AS r WHERE {sql.text()} "
                "LIMIT %s) AS admitted",
                [*sql.params, _PREFILTER_ROWS + 1],
            )
            admitted, total = int(admitted), 0
        if admitted <= _PREFILTER_ROWS:
            return None
        if total > admitted:
            beam = max(beam, math.ceil(limit * _BEAM_MARGIN * total / admitted))
        return min(beam, _HNSW_MAX_BEAM)

    # --- sessions and events ---------------------------------------------------------------

    def sessions(self, where: RecordFilter) -> list[SessionStats]:
        sql = build_filter(where, self._now)
        rows = self._rows(
            "SELECT r.session, r.tier, count(*), min(r.created_at), max(r.updated_at) "
            f"FROM records AS r WHERE r.session IS NOT NULL AND {sql.text()} "
            "GROUP BY r.session, r.tier ORDER BY min(r.created_at), r.session",
            sql.params,
        )
        stats: dict[str, SessionStats] = {}
        for session, tier, count, opened, touched in rows:
            entry = stats.get(session)
            if entry is None:
                entry = stats[session] = SessionStats(session, 0, {}, opened, touched)
            entry.records += int(count)
            if tier is not None:
                entry.tiers[tier] = entry.tiers.get(tier, 0) + int(count)
            entry.opened_at = min(entry.opened_at or opened, opened)
            entry.touched_at = max(entry.touched_at or touched, touched)
        return sorted(stats.values(), key=lambda s: (s.opened_at or 0, s.session))

    def events_after(
        self, seq: int, *, limit: int, kinds: Sequence[str] | None, scope: Scope | None
    ) -> list[EventRow]:
        sql = Sql()
        sql.add("e.seq > %s", seq)
        if kinds is not None:
            sql.add("e.kind = ANY(%s::text[])", list(kinds))
        if scope is not None:
            add_scope(sql, scope, owner_column="e.owner", tier_column="e.tier")
        rows = self._rows(
            "SELECT e.seq, e.at, e.kind, e.payload, e.owner, e.tier FROM events AS e "
            f"WHERE {sql.text()} ORDER BY e.seq LIMIT %s",
            [*sql.params, limit],
        )
        return [
            EventRow(int(seq), int(at), kind, json.loads(payload), owner, tier)
            for seq, at, kind, payload, owner, tier in rows
        ]

    def event_bounds(self) -> tuple[int, int]:
        ((head_text,),) = self._rows("SELECT value FROM meta WHERE key = 'event_head'")
        head = int(head_text)
        ((oldest,),) = self._rows("SELECT min(seq) FROM events")
        return (int(oldest) if oldest is not None else head + 1), head

    def dimensions(self) -> int | None:
        # Read once: the snapshot cannot see it change (a writer keeps its own).
        if self._dimensions_read is None:
            rows = self._rows("SELECT value FROM meta WHERE key = 'dimensions'")
            self._dimensions_read = (int(rows[0][0]) if rows else None,)
        return self._dimensions_read[0]

    def meta_value(self, key: str) -> str | None:
        rows = self._rows("SELECT value FROM meta WHERE key = %s", (key,))
        return None if not rows else str(rows[0][0])

    def missing_vectors(self, after: int, limit: int) -> list[tuple[int, str]]:
        rows = self._rows(
            "SELECT rowid, content FROM records WHERE rowid > %s AND dims IS NULL "
            "ORDER BY rowid LIMIT %s",
            (after, limit),
        )
        return [(int(rowid), str(content)) for rowid, content in rows]


class PgWriter(PgAuditWriting, PgReader, StoreWriter):
    """Writes of one transaction. The store's write lock is held, so the next rowid and
    event position are known here; new records and events are buffered and written as
    one multi-row statement each before the next statement of any kind (so every read
    sees them) and before commit. A batch costs a handful of round trips."""

    _keeps_found = False

    def __init__(self, store: StoreState, conn: psycopg.Connection[Any]) -> None:
        super().__init__(store, conn)
        self.events_appended = 0
        self.records_written = 0
        self._new_records: list[tuple[int, NewRecord]] = []
        self._new_events: list[tuple[int, int, str, str | None, str | None, str]] = []
        self._event_head = 0
        self._last_rowid = 0
        self._dimensions: int | None = None
        self._next_expiry: int | None = None
        # The starting state is asked for now and read when first needed: its answer
        # comes back in the round trip of the first statement whose result is awaited
        # (the expiry purge every transaction begins with), not in one of its own.
        self._state: psycopg.Cursor[Any] | None = conn.cursor()
        self._state.execute(
            "SELECT (SELECT value::bigint FROM meta WHERE key = 'event_head'), "
            "(SELECT coalesce(max(rowid), 0) FROM records), "
            "(SELECT value::int FROM meta WHERE key = 'dimensions'), "
            "(SELECT min(expires_at) FROM records WHERE expires_at IS NOT NULL)"
        )

    def _read_state(self) -> None:
        """Take in the event head, last rowid, vector width and earliest expiry this
        transaction starts from (once)."""
        cursor, self._state = self._state, None
        if cursor is None:
            return
        row = cursor.fetchone()
        cursor.close()
        assert row is not None
        head, last_rowid, dims, next_expiry = row
        self._event_head = int(head)
        self._last_rowid = int(last_rowid)
        self._dimensions = None if dims is None else int(dims)
        self._next_expiry = None if next_expiry is None else int(next_expiry)

    @property
    def event_head(self) -> int:
        """The position of the last event appended (or of the last committed before)."""
        self._read_state()
        return self._event_head

    def _before_statement(self) -> None:
        if self._new_records or self._new_events:
            self.flush()

    def flush(self) -> None:
        """Write the buffered records and events."""
        records, self._new_records = self._new_records, []
        events, self._new_events = self._new_events, []
        if records:
            self._insert_now(records)
        if events:
            self._conn.execute(
                "INSERT INTO events (seq, at, kind, owner, tier, payload) SELECT * FROM "
                "unnest(%s::bigint[], %s::bigint[], %s::text[], %s::text[], %s::text[], "
                "%s::text[])",
                [list(column) for column in zip(*events, strict=True)],
            )

    def dimensions(self) -> int | None:
        self._read_state()
        return self._dimensions

    def event_bounds(self) -> tuple[int, int]:
        ((oldest,),) = self._rows("SELECT min(seq) FROM events")
        head = self.event_head
        return (int(oldest) if oldest is not None else head + 1), head

    def insert(self, records: Sequence[NewRecord]) -> list[int]:
        self._read_state()
        first = self._last_rowid + 1
        self._last_rowid += len(records)
        rowids = list(range(first, first + len(records)))
        self._new_records.extend(zip(rowids, records, strict=True))
        self.records_written += len(records)
        return rowids

    def _insert_now(self, records: Sequence[tuple[int, NewRecord]]) -> None:
        # Rows built in one pass, then turned into the 19 columns at C speed.
        rows = [
            (
                rowid,
                rec.id,
                rec.content,
                rec.created_at,
                rec.role,
                rec.metadata_text(),
                _meta_jsonb(rec.metadata),
                rec.group,
                rec.tier,
                rec.salience,
                rec.owner,
                rec.session,
                rec.key,
                None if rec.embedding is None else len(rec.embedding),
                rec.uri,
                rec.media_type,
                rec.expires_at,
                *tsvector(rec.content),
            )
            for rowid, rec in records
        ]
        columns: list[list[Any]] = (
            [list(column) for column in zip(*rows, strict=True)]
            if rows
            else [[] for _ in range(19)]
        )
        self._conn.execute(
            "INSERT INTO records (rowid, id, content, created_at, updated_at, role, metadata, "
            "meta, grp, tier, salience, owner, session, key, dims, uri, media_type, expires_at, "
            "body, body_length) SELECT r, i, c, ca, ca, ro, md, m::jsonb, g, t, s, o, se, k, d, "
            "u, mt, e, b::tsvector, bl FROM unnest(%s::bigint[], %s::text[], %s::text[], "
            "%s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
            "%s::float8[], %s::text[], %s::text[], %s::text[], %s::int[], %s::text[], "
            "%s::text[], %s::bigint[], %s::text[], %s::int[]) AS x (r, i, c, ca, ro, md, m, g, "
            "t, s, o, se, k, d, u, mt, e, b, bl)",
            columns,
        )
        self._insert_vectors([(rowid, rec.embedding) for rowid, rec in records])

    def _put_vectors(self, items: Sequence[tuple[int, Sequence[float] | None]]) -> None:
        self._before_statement()
        self._insert_vectors(items)

    def _insert_vectors(self, items: Sequence[tuple[int, Sequence[float] | None]]) -> None:
        by_width: dict[int, list[tuple[int, Sequence[float]]]] = {}
        for rowid, vector in items:
            if vector is not None:
                by_width.setdefault(len(vector), []).append((rowid, vector))
        for width, present in by_width.items():
            # One flat float8[] (dumped by psycopg's C code), sliced per record in SQL;
            # ok marks the vectors float32 can hold, which alone get a pgvector copy.
            flat = np.asarray([vector for _, vector in present], dtype=np.float64)
            with np.errstate(over="ignore", invalid="ignore"):
                ok: npt.NDArray[np.bool_] = np.asarray(
                    np.isfinite(flat.astype(np.float32)).all(axis=1)
                )
            if width > _PGVECTOR_MAX_DIMENSIONS:
                ok = np.zeros(len(present), dtype=bool)  # kept verbatim, never ranked
            self._conn.execute(
                "INSERT INTO record_vectors (rowid, embedding, vec) "
                "SELECT x.r, f.a[(x.i - 1) * %s + 1 : x.i * %s], CASE WHEN x.ok THEN "
                "f.a[(x.i - 1) * %s + 1 : x.i * %s]::vector END "
                "FROM unnest(%s::bigint[], %s::bool[]) WITH ORDINALITY AS x (r, ok, i), "
                "(SELECT %b::float8[] AS a) AS f",
                (
                    width,
                    width,
                    width,
                    width,
                    [rowid for rowid, _ in present],
                    [bool(x) for x in ok],
                    Float8Array(flat),
                ),
            )

    def restore(self, records: Sequence[StoredRecord]) -> int:
        """Insert whole records as exported (ids, revisions, access counts and all),
        skipping ids already present; returns how many were added."""
        self._read_state()
        added = 0
        for rec in records:
            body, length = tsvector(rec.content)
            rows = self._rows(
                "INSERT INTO records (rowid, id, content, created_at, updated_at, role, metadata, "
                "meta, grp, tier, salience, accessed_at, access_count, owner, session, key, "
                "revision, dims, uri, media_type, expires_at, body, body_length) VALUES (%s, %s, "
                "%s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
                "%s, %s::tsvector, %s) ON CONFLICT (id) DO NOTHING RETURNING rowid",
                (
                    self._last_rowid + 1,
                    rec.id,
                    rec.content,
                    rec.created_at,
                    rec.updated_at,
                    rec.role,
                    None if rec.metadata is None else dump_json(rec.metadata),
                    _meta_jsonb(rec.metadata),
                    rec.group,
                    rec.tier,
                    rec.salience,
                    rec.accessed_at,
                    rec.access_count,
                    rec.owner,
                    rec.session,
                    rec.key,
                    rec.revision,
                    None if rec.embedding is None else len(rec.embedding),
                    rec.uri,
                    rec.media_type,
                    rec.expires_at,
                    body,
                    length,
                ),
            )
            if rows:
                self._last_rowid += 1
                self._put_vectors([(int(rows[0][0]), rec.embedding)])
                added += 1
        self.records_written += added
        return added

    def replace(self, record_id: str, new: NewRecord) -> StoredRecord:
        body, length = tsvector(new.content)
        rows = self._rows(
            "UPDATE records SET content = %s, updated_at = %s, role = %s, metadata = %s, "
            "meta = %s::jsonb, grp = %s, tier = %s, salience = %s, session = %s, "
            "revision = revision + 1, dims = %s, uri = %s, media_type = %s, expires_at = %s, "
            "body = %s::tsvector, body_length = %s WHERE id = %s RETURNING rowid",
            (
                new.content,
                new.created_at,
                new.role,
                new.metadata_text(),
                _meta_jsonb(new.metadata),
                new.group,
                new.tier,
                new.salience,
                new.session,
                None if new.embedding is None else len(new.embedding),
                new.uri,
                new.media_type,
                new.expires_at,
                body,
                length,
                record_id,
            ),
        )
        if not rows:
            raise KeyError(record_id)
        rowid = int(rows[0][0])
        self._exec("DELETE FROM record_vectors WHERE rowid = %s", (rowid,))
        self._put_vectors([(rowid, new.embedding)])
        self.records_written += 1
        return self.select(RecordFilter(ids=[record_id]))[0]

    def resolve_write_id(self, write_id: str) -> str | None:
        rows = self._rows(
            "SELECT id FROM records WHERE id = %s UNION ALL "
            "SELECT record_id FROM write_ids WHERE write_id = %s LIMIT 1",
            (write_id, write_id),
        )
        return None if not rows else str(rows[0][0])

    def remember_write_id(self, write_id: str, record_id: str) -> None:
        self._exec(
            "INSERT INTO write_ids (write_id, record_id) VALUES (%s, %s) "
            "ON CONFLICT (write_id) DO UPDATE SET record_id = excluded.record_id",
            (write_id, record_id),
        )

    def set_tier(self, ids: Sequence[str], tier: str) -> int:
        if not ids:
            return 0
        # RETURNING, not rowcount: a pipelined statement's count is known only once read.
        return len(
            self._rows(
                "UPDATE records SET tier = %s WHERE id = ANY(%s::text[]) "
                "AND tier IS DISTINCT FROM %s RETURNING 1",
                (tier, list(ids), tier),
            )
        )

    def add_salience(self, ids: Sequence[str], amount: float) -> int:
        if not ids:
            return 0
        return len(
            self._rows(
                "UPDATE records SET salience = salience + %s WHERE id = ANY(%s::text[]) RETURNING 1",
                (amount, list(ids)),
            )
        )

    def touch(self, ids: Sequence[str], at: int) -> None:
        self.add_accesses(dict.fromkeys(ids, (1, at)))

    def add_accesses(self, accesses: Mapping[str, tuple[int, int]]) -> None:
        """Apply buffered access counts: id → (how many accesses, when the last was)."""
        if not accesses:
            return
        ids = sorted(accesses)
        self._exec(
            "UPDATE records AS r SET access_count = r.access_count + a.n, "
            "accessed_at = greatest(coalesce(r.accessed_at, 0), a.at) "
            "FROM unnest(%s::text[], %s::bigint[], %s::bigint[]) AS a (id, n, at) "
            "WHERE r.id = a.id",
            (ids, [accesses[i][0] for i in ids], [accesses[i][1] for i in ids]),
        )

    def delete(self, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        self._exec("DELETE FROM write_ids WHERE record_id = ANY(%s::text[])", (list(ids),))
        return len(
            self._rows("DELETE FROM records WHERE id = ANY(%s::text[]) RETURNING 1", (list(ids),))
        )

    def expire(self, now: int) -> list[StoredRecord]:
        self._read_state()
        if self.records_written == 0 and (self._next_expiry is None or self._next_expiry > now):
            # Nothing is due (and this transaction has written nothing that could be):
            # skip the DELETE, whose statement triggers would run even for no rows.
            return []
        rows = self._rows(
            f"DELETE FROM records AS r WHERE r.expires_at IS NOT NULL AND r.expires_at <= %s "
            f"RETURNING {_R_COLUMNS}",
            (now,),
        )
        if not rows:
            return []
        expired = sorted(
            (row_to_record(row, with_vector=False) for row in rows), key=lambda r: r.rowid
        )
        self._exec(
            "DELETE FROM write_ids WHERE record_id = ANY(%s::text[])", ([r.id for r in expired],)
        )
        return expired

    def set_dimensions(self, dimensions: int) -> None:
        self._read_state()
        self._exec(
            "INSERT INTO meta (key, value) VALUES ('dimensions', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(dimensions),),
        )
        self._dimensions = dimensions
        self._store.fix_vector_width(self._conn, dimensions)

    def set_meta_value(self, key: str, value: str) -> None:
        self._exec(
            "INSERT INTO meta (key, value) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def add_vectors(self, items: Sequence[tuple[int, Sequence[float]]]) -> int:
        if not items:
            return 0
        width = self.dimensions()
        if width is None or any(len(vector) != width for _, vector in items):
            raise ValueError(f"add_vectors needs vectors of the store's width ({width})")
        by_rowid = dict(items)
        rows = self._rows(
            "UPDATE records SET dims = %s WHERE rowid = ANY(%s::bigint[]) AND dims IS NULL "
            "RETURNING rowid",
            (width, list(by_rowid)),
        )
        fresh = sorted(int(row[0]) for row in rows)
        self._insert_vectors([(rowid, by_rowid[rowid]) for rowid in fresh])
        return len(fresh)

    def clear_vectors(self) -> int:
        self._read_state()
        rows = self._rows("DELETE FROM record_vectors RETURNING rowid")
        self._exec("UPDATE records SET dims = NULL WHERE dims IS NOT NULL")
        self._exec("DELETE FROM meta WHERE key = 'dimensions'")
        # The next width retypes the column (and rebuilds an HNSW index over it).
        self._exec("DROP INDEX IF EXISTS record_vectors_hnsw")
        self._exec("ALTER TABLE record_vectors ALTER COLUMN vec TYPE vector")
        self._dimensions = None
        return len(rows)

    def append_event(
        self, kind: str, at: int, payload: Mapping[str, Any], owner: str | None, tier: str | None
    ) -> int:
        self._read_state()
        self._event_head += 1
        self._new_events.append((self._event_head, at, kind, owner, tier, dump_json(dict(payload))))
        self.events_appended += 1
        return self._event_head
