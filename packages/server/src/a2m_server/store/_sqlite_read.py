"""Reading the embedded store: a record filter as SQL, rows as records, and the reader
every read transaction of :class:`~a2m_server.store.sqlite.SQLiteStore` gets (records,
counts, lexical and vector ranking, sessions, the event log)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from . import _fts
from ._agents import AgentCount, sqlite_agent, sqlite_framework
from ._audit import SqliteAuditReading
from ._json_text import dump_json
from ._sqlite_where import tag_clause, text_in, where_clause
from ._where import Conditions
from .base import (
    RECORD_COLUMNS,
    EventRow,
    LexicalHit,
    RecordFilter,
    Scope,
    SessionStats,
    StoredRecord,
    StoreReader,
)
from .vectors import VectorIndex, exact_similarities

__all__ = [
    "PREFIXED_COLUMNS",
    "Reader",
    "StoreState",
    "build_filter",
    "row_to_record",
    "unpack_vector",
]

PREFIXED_COLUMNS = ", ".join(f"r.{c.strip()}" for c in RECORD_COLUMNS.split(","))
_PREFIXED_COLUMNS_WITH_VECTOR = PREFIXED_COLUMNS + ", v.embedding"
_VECTOR_JOIN = " LEFT JOIN record_vectors AS v ON v.rowid = r.rowid"
# A vector search whose filter admits at most this many records ranks exactly those; one
# admitting more over-fetches from the whole index, growing the fetch up to the ceiling.
_PREFILTER_ROWS = 2048
_OVERFETCH_CEILING = 4096


class StoreState(Protocol):
    """What a transaction needs of the store that opened it (``SQLiteStore``), named here
    so this module does not import the store module that imports it."""

    @property
    def store_id(self) -> str: ...

    @property
    def term_stats(self) -> _fts.TermStats: ...

    def overlay_access(self, records: Sequence[StoredRecord]) -> None: ...

    def loaded_vector_index(self) -> VectorIndex | None: ...


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def unpack_vector(blob: bytes) -> list[float]:
    """A stored vector (float64, as :func:`~a2m_server.store._sqlite_write.pack_vector`
    wrote it) as the list of floats it was."""
    return np.frombuffer(blob, dtype="<f8").tolist()  # type: ignore[no-any-return]


def row_to_record(row: Sequence[Any], *, with_vector: bool) -> StoredRecord:
    blob = row[19] if with_vector else None
    return StoredRecord.from_row(row, None if blob is None else unpack_vector(blob))


def build_filter(where: RecordFilter, now: int) -> Conditions:
    sql = Conditions()
    sql.add("(r.expires_at IS NULL OR r.expires_at > ?)", now)
    if where.ids is not None:
        _add(sql, text_in("r.id", where.ids))
    if where.tier is not None:
        sql.add("r.tier = ?", where.tier)
    if where.tiers is not None:
        _add(sql, text_in("r.tier", where.tiers))
    if where.has_session:
        if where.session is None:
            sql.add("r.session IS NULL")
        else:
            sql.add("r.session = ?", where.session)
    if where.key_prefix is not None:
        prefix = where.key_prefix.rstrip("/")
        if prefix:
            # Segment-wise: "a/b" matches "a/b" and "a/b/…", never "a/bc". '0' follows '/'.
            sql.add("(r.key = ? OR (r.key >= ? AND r.key < ?))", prefix, prefix + "/", prefix + "0")
        else:
            sql.add("r.key IS NOT NULL")
    if where.scope is not None:
        _add_scope(sql, where.scope, owner_column="r.owner", tier_column="r.tier")
    if where.groups is not None:
        pairs = [[owner or "", group] for owner, group in where.groups]
        # A pair holding NUL is bound whole: ->> would end it at the NUL.
        listed = [pair for pair in pairs if "\x00" not in pair[0] + pair[1]]
        whole = [part for pair in pairs if "\x00" in pair[0] + pair[1] for part in pair]
        clause = (
            "EXISTS (SELECT 1 FROM json_each(?) AS g WHERE g.value ->> 0 = coalesce(r.owner, '')"
            " AND g.value ->> 1 = r.grp)"
        )
        clause += " OR (coalesce(r.owner, '') = ? AND r.grp = ?)" * (len(whole) // 2)
        sql.add(f"({clause})", dump_json(listed), *whole)
    if where.tags_all:
        for tag in where.tags_all:
            _add(sql, tag_clause(tag))
    if where.with_embedding:
        sql.add("r.dims IS NOT NULL")
    if where.earned_at_least is not None:
        sql.add("r.access_count + r.salience >= ?", where.earned_at_least)
    for name, expected in (where.where or {}).items():
        clause, params = where_clause(name, expected)
        sql.add(clause, *params)
    for beneath in (where.key_under, where.key_child_of):
        if beneath is not None:
            parent = beneath.rstrip("/")
            sql.add("(r.key > ? AND r.key < ?)", parent + "/", parent + "0")
    if where.key_child_of is not None:
        depth = len(where.key_child_of.rstrip("/")) + 2
        sql.add("instr(substr(r.key, ?), '/') = 0", depth)
    if where.has_uri is not None:
        sql.add("r.uri IS NOT NULL" if where.has_uri else "r.uri IS NULL")
    if where.after is not None:
        sql.add("(r.created_at, r.rowid) > (?, ?)", *where.after)
    if where.any_of is not None:
        branches = [build_filter(branch, now) for branch in where.any_of]
        clause = " OR ".join(f"({branch.text()})" for branch in branches)
        sql.add(f"({clause or '0'})", *[p for branch in branches for p in branch.params])
    return sql


_COUNTED_FILTER = RecordFilter()


def _add(sql: Conditions, clause: tuple[str, list[Any]]) -> None:
    sql.add(clause[0], *clause[1])


def _only_tier_and_scope(where: RecordFilter) -> bool:
    """Whether ``where`` conditions on nothing but one tier and an owner scope, which the
    kept counts answer."""
    return where.with_(tier=None, scope=None) == _COUNTED_FILTER


def _add_scope(sql: Conditions, scope: Scope, *, owner_column: str, tier_column: str) -> None:
    if scope.include_shared:
        clause = f"({owner_column} = ? OR {owner_column} IS NULL"
        params: list[Any] = [scope.owner]
        if scope.shared_tiers:
            shared, more = text_in(tier_column, scope.shared_tiers)
            clause += f" OR {shared}"
            params += more
        sql.add(clause + ")", *params)
    else:
        sql.add(f"{owner_column} = ?", scope.owner)


class Reader(SqliteAuditReading, StoreReader):
    def __init__(self, store: StoreState, conn: sqlite3.Connection) -> None:
        self._store = store
        self._conn = conn
        self._now = _now_ms()

    @property
    def store_id(self) -> str:
        return self._store.store_id

    def _select_sql(self, embeddings: bool) -> str:
        """The column list and FROM clause of a record read."""
        if embeddings:
            return f"{_PREFIXED_COLUMNS_WITH_VECTOR} FROM records AS r{_VECTOR_JOIN}"
        return f"{PREFIXED_COLUMNS} FROM records AS r"

    def get(self, ids: Sequence[str], *, embeddings: bool = False) -> list[StoredRecord]:
        if not ids:
            return []
        return self.select(RecordFilter(ids=ids), embeddings=embeddings)

    def get_by_key(
        self, owner: str | None, key: str, *, embeddings: bool = False
    ) -> StoredRecord | None:
        rows = self._conn.execute(
            f"SELECT {self._select_sql(embeddings)} "
            "WHERE coalesce(r.owner, '') = ? AND r.key = ? "
            "AND (r.expires_at IS NULL OR r.expires_at > ?)",
            (owner or "", key, self._now),
        ).fetchall()
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
            f"SELECT {self._select_sql(embeddings)} WHERE {sql.text()} "
            f"ORDER BY r.created_at {direction}, r.rowid {direction}"
        )
        params = list(sql.params)
        if limit is not None or offset:
            query += " LIMIT ? OFFSET ?"
            params += [-1 if limit is None else limit, offset]
        rows = self._conn.execute(query, params).fetchall()
        records = [row_to_record(row, with_vector=embeddings) for row in rows]
        self._store.overlay_access(records)
        return records

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
            query += " LIMIT ?"
            params.append(limit)
        return self._conn.execute(query, params).fetchall()

    def scan(self, after: int, limit: int) -> list[StoredRecord]:
        rows = self._conn.execute(
            f"SELECT {self._select_sql(True)} WHERE r.rowid > ? "
            "AND (r.expires_at IS NULL OR r.expires_at > ?) ORDER BY r.rowid LIMIT ?",
            (after, self._now, limit),
        ).fetchall()
        records = [row_to_record(row, with_vector=True) for row in rows]
        self._store.overlay_access(records)
        return records

    def count(self, where: RecordFilter) -> int:
        if where.tier is not None and _only_tier_and_scope(where):
            return self._kept_counts(where).get(where.tier, 0)
        sql = build_filter(where, self._now)
        row = self._conn.execute(
            f"SELECT count(*) FROM records AS r WHERE {sql.text()}", sql.params
        ).fetchone()
        return int(row[0])

    def count_by_tier(self, where: RecordFilter) -> dict[str, int]:
        if _only_tier_and_scope(where):
            return self._kept_counts(where)
        sql = build_filter(where, self._now)
        rows = self._conn.execute(
            f"SELECT r.tier, count(*) FROM records AS r WHERE {sql.text()} GROUP BY r.tier",
            sql.params,
        ).fetchall()
        return {tier: count for tier, count in rows if tier is not None}

    def _kept_counts(self, where: RecordFilter) -> dict[str, int]:
        """Records per tier from the counts the triggers keep (schema v2), less those
        expired but not yet purged: exact, in time independent of the store's size."""
        kept = Conditions()
        if where.tier is not None:
            kept.add("r.tier = ?", where.tier)
        if where.scope is not None:
            _add_scope(kept, where.scope, owner_column="r.owner", tier_column="r.tier")
        counts: dict[str, int] = {}
        for tier, n in self._conn.execute(
            f"SELECT r.tier, sum(r.n) FROM record_counts AS r WHERE {kept.text()} GROUP BY r.tier",
            kept.params,
        ):
            counts[tier] = int(n)
        expired = Conditions()
        expired.add(
            "r.expires_at IS NOT NULL AND r.expires_at <= ? AND r.tier IS NOT NULL", self._now
        )
        expired.clauses += kept.clauses
        expired.params += kept.params
        for tier, n in self._conn.execute(
            f"SELECT r.tier, count(*) FROM records AS r WHERE {expired.text()} GROUP BY r.tier",
            expired.params,
        ):
            counts[tier] = counts.get(tier, 0) - int(n)
        return {tier: n for tier, n in counts.items() if n > 0}

    def count_by_agent(self, scope: Scope | None) -> list[AgentCount]:
        kept = Conditions()
        if scope is not None:
            _add_scope(kept, scope, owner_column="c.owner", tier_column="c.tier")
        counts: dict[tuple[str, str, str | None], int] = {}
        for agent, framework, tier, n in self._conn.execute(
            "SELECT c.agent, c.framework, c.tier, sum(c.n) FROM agent_counts AS c "
            f"WHERE {kept.text()} GROUP BY c.agent, c.framework, c.tier_key",
            kept.params,
        ):
            counts[(agent, framework, tier)] = int(n)
        expired = Conditions()
        expired.add("c.expires_at IS NOT NULL AND c.expires_at <= ?", self._now)
        expired.clauses += kept.clauses
        expired.params += kept.params
        for agent, framework, tier, n in self._conn.execute(
            f"SELECT {sqlite_agent('c')}, {sqlite_framework('c')}, c.tier, count(*) "
            f"FROM records AS c WHERE {expired.text()} GROUP BY 1, 2, 3",
            expired.params,
        ):
            place = (agent, framework, tier)
            counts[place] = counts.get(place, 0) - int(n)
        return [AgentCount(*place, n) for place, n in counts.items() if n > 0]

    def count_agents_where(self, where: RecordFilter) -> list[AgentCount]:
        sql = build_filter(where, self._now)
        rows = self._conn.execute(
            f"SELECT {sqlite_agent('r')}, {sqlite_framework('r')}, r.tier, count(*) "
            f"FROM records AS r WHERE {sql.text()} GROUP BY 1, 2, 3",
            sql.params,
        ).fetchall()
        return [AgentCount(agent, framework, tier, int(n)) for agent, framework, tier, n in rows]

    def count_by_session(self, where: RecordFilter) -> dict[str | None, int]:
        sql = build_filter(where, self._now)
        rows = self._conn.execute(
            f"SELECT r.session, count(*) FROM records AS r WHERE {sql.text()} GROUP BY r.session",
            sql.params,
        ).fetchall()
        return dict(rows)

    def lexical(
        self,
        where: RecordFilter,
        terms: Sequence[str],
        limit: int | None,
        *,
        match_all: bool = False,
    ) -> list[LexicalHit]:
        if not terms or (limit is not None and limit <= 0):
            return []
        sql = build_filter(where, self._now)
        selective = where != RecordFilter()
        if match_all:
            matched = _fts.bm25(
                self._conn,
                _fts.match_expression(terms, match_all=True),
                sql.text(),
                sql.params,
                limit,
                selective=selective,
            )
            return [LexicalHit(record_id, score) for record_id, score in matched]
        ranked = _fts.ranked_search(
            self._conn,
            self._store.term_stats,
            terms,
            sql.text(),
            sql.params,
            limit,
            selective=selective,
        )
        return [LexicalHit(*hit) for hit in ranked]

    def nearest(
        self, where: RecordFilter, vector: Sequence[float], limit: int
    ) -> list[tuple[str, float]]:
        index = self._store.loaded_vector_index()
        if index is None or limit <= 0:
            return []
        sql = build_filter(where.with_(with_embedding=True), self._now)
        if where.with_(with_embedding=False) == RecordFilter():
            # No filter: only an expired record can be refused, so a small margin is enough.
            return self._nearest_overall(index, vector, limit, sql, limit + 8)
        # A filter admitting few rows (a namespace's key prefix, a session) ranks just those,
        # exactly: listing them is one indexed query, cheaper than ranking every vector and
        # checking the winners. Past _PREFILTER_ROWS the query stops, and the whole index is
        # ranked instead.
        rows = self._conn.execute(
            f"SELECT r.rowid, r.id FROM records AS r WHERE {sql.text()} LIMIT ?",
            [*sql.params, _PREFILTER_ROWS + 1],
        ).fetchall()
        if len(rows) <= _PREFILTER_ROWS:
            ids = dict(rows)
            return [(ids[rowid], score) for rowid, score in index.search_rows(vector, limit, ids)]
        return self._nearest_overall(index, vector, limit, sql, max(limit * 8, 64))

    def rescore(
        self, ids: Sequence[str], vector: Sequence[float], metric: str
    ) -> list[tuple[StoredRecord, float]]:
        # The blobs alone, stacked into one matrix: no vector becomes a list of Python
        # floats, and the records are read without them.
        if not ids:
            return []
        chosen, params = text_in("r.id", ids)
        rows = self._conn.execute(
            "SELECT r.id, v.embedding FROM records AS r JOIN record_vectors AS v "
            f"ON v.rowid = r.rowid WHERE {chosen} AND (r.expires_at IS NULL OR r.expires_at > ?)",
            (*params, self._now),
        ).fetchall()
        if not rows:
            return []
        blobs = [blob for _, blob in rows]
        if len({len(blob) for blob in blobs}) == 1:
            matrix = np.frombuffer(b"".join(blobs), dtype="<f8").reshape(len(rows), -1)
            scores = exact_similarities(metric, vector, matrix)
        else:  # vectors of several widths: each compared on its own
            scores = [exact_similarities(metric, vector, [unpack_vector(b)])[0] for b in blobs]
        by_id = {record_id: score for (record_id, _), score in zip(rows, scores, strict=True)}
        return [(r, by_id[r.id]) for r in self.get(list(by_id)) if r.id in by_id]

    def _nearest_overall(
        self, index: VectorIndex, vector: Sequence[float], limit: int, sql: Conditions, fetch: int
    ) -> list[tuple[str, float]]:
        """Over-fetch from the whole index and keep what passes the filter, fetching
        more while too few pass; an exact scan of the allowed rows when even that fails."""
        while True:
            candidates = index.search(vector, fetch)
            passed = self._filter_rowids([rowid for rowid, _ in candidates], sql)
            hits = [(passed[rowid], score) for rowid, score in candidates if rowid in passed]
            if len(hits) >= limit or len(candidates) < fetch:
                return hits[:limit]
            if fetch >= _OVERFETCH_CEILING:
                break
            fetch *= 4
        allowed = np.fromiter(
            (
                row[0]
                for row in self._conn.execute(
                    f"SELECT r.rowid FROM records AS r WHERE {sql.text()}", sql.params
                )
            ),
            dtype=np.int64,
        )
        exact = index.search(vector, limit, allowed=allowed)
        ids = self._ids_for([rowid for rowid, _ in exact])
        return [(ids[rowid], score) for rowid, score in exact if rowid in ids][:limit]

    def _filter_rowids(self, rowids: list[int], sql: Conditions) -> dict[int, str]:
        if not rowids:
            return {}
        rows = self._conn.execute(
            f"SELECT r.rowid, r.id FROM records AS r WHERE r.rowid IN "
            f"(SELECT value FROM json_each(?)) AND {sql.text()}",
            [dump_json(rowids), *sql.params],
        ).fetchall()
        return dict(rows)

    def _ids_for(self, rowids: list[int]) -> dict[int, str]:
        if not rowids:
            return {}
        rows = self._conn.execute(
            "SELECT rowid, id FROM records WHERE rowid IN (SELECT value FROM json_each(?))",
            (dump_json(rowids),),
        ).fetchall()
        return dict(rows)

    def sessions(self, where: RecordFilter) -> list[SessionStats]:
        sql = build_filter(where, self._now)
        rows = self._conn.execute(
            "SELECT r.session, r.tier, count(*), min(r.created_at), max(r.updated_at) "
            f"FROM records AS r WHERE r.session IS NOT NULL AND {sql.text()} "
            "GROUP BY r.session, r.tier ORDER BY min(r.created_at), r.session",
            sql.params,
        ).fetchall()
        stats: dict[str, SessionStats] = {}
        for session, tier, count, opened, touched in rows:
            entry = stats.get(session)
            if entry is None:
                entry = stats[session] = SessionStats(session, 0, {}, opened, touched)
            entry.records += count
            if tier is not None:
                entry.tiers[tier] = entry.tiers.get(tier, 0) + count
            entry.opened_at = min(entry.opened_at or opened, opened)
            entry.touched_at = max(entry.touched_at or touched, touched)
        return sorted(stats.values(), key=lambda s: (s.opened_at or 0, s.session))

    def events_after(
        self, seq: int, *, limit: int, kinds: Sequence[str] | None, scope: Scope | None
    ) -> list[EventRow]:
        sql = Conditions()
        sql.add("e.seq > ?", seq)
        if kinds is not None:
            sql.add("e.kind IN (SELECT value FROM json_each(?))", dump_json(list(kinds)))
        if scope is not None:
            _add_scope(sql, scope, owner_column="e.owner", tier_column="e.tier")
        rows = self._conn.execute(
            "SELECT e.seq, e.at, e.kind, e.payload, e.owner, e.tier FROM events AS e "
            f"WHERE {sql.text()} ORDER BY e.seq LIMIT ?",
            [*sql.params, limit],
        ).fetchall()
        return [
            EventRow(seq, at, kind, json.loads(payload), owner, tier)
            for seq, at, kind, payload, owner, tier in rows
        ]

    def event_bounds(self) -> tuple[int, int]:
        head_row = self._conn.execute(
            "SELECT seq FROM sqlite_sequence WHERE name = 'events'"
        ).fetchone()
        head = int(head_row[0]) if head_row else 0
        oldest_row = self._conn.execute("SELECT min(seq) FROM events").fetchone()
        oldest = int(oldest_row[0]) if oldest_row and oldest_row[0] is not None else head + 1
        return oldest, head

    def dimensions(self) -> int | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'dimensions'").fetchone()
        return int(row[0]) if row else None

    def meta_value(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def missing_vectors(self, after: int, limit: int) -> list[tuple[int, str]]:
        rows = self._conn.execute(
            "SELECT rowid, content FROM records WHERE rowid > ? AND dims IS NULL "
            "ORDER BY rowid LIMIT ?",
            (after, limit),
        ).fetchall()
        return [(int(rowid), str(content)) for rowid, content in rows]
