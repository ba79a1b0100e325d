"""Reads of one PostgreSQL transaction: the SQL behind :class:`StoreReader` for
:class:`~a2m_server.store.postgres.PostgresStore` (records, counts, lexical and vector
ranking, sessions, the event log)."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ._agents import pg_agent, pg_framework
from ._audit import PgAuditReading
from ._pg_adapt import Float4Vector
from ._pg_counts import agent_counts, kept_counts
from ._pg_counts import answers as counts_answer
from ._pg_filter import Sql, add_scope, build_filter
from ._pg_lexical import lexical_search
from .base import (
    RECORD_COLUMNS,
    AgentCount,
    EventRow,
    LexicalHit,
    RecordFilter,
    Scope,
    SessionStats,
    StoredRecord,
    StoreReader,
)
from .vectors import to_similarity

if TYPE_CHECKING:
    import psycopg


R_COLUMNS = ", ".join(f"r.{c.strip()}" for c in RECORD_COLUMNS.split(","))
_WITH_VECTOR = f"{R_COLUMNS}, v.embedding FROM records AS r " + (
    "LEFT JOIN record_vectors AS v ON v.rowid = r.rowid"
)
_WITHOUT_VECTOR = f"{R_COLUMNS} FROM records AS r"

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

    def count_agents_where(self, where: RecordFilter) -> list[AgentCount]:
        sql = build_filter(where, self._now)
        rows = self._walked(
            f"SELECT {pg_agent('r')}, {pg_framework('r')}, r.tier, count(*) "
            f"FROM records AS r WHERE {sql.text()} GROUP BY 1, 2, 3",
            sql.params,
        )
        return [AgentCount(agent, framework, tier, int(n)) for agent, framework, tier, n in rows]

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
            columns=R_COLUMNS if limited and self._keeps_found else "r.id",
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
            f"SELECT {R_COLUMNS}, {measure} AS d FROM record_vectors AS v "
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
