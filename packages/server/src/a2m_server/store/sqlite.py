"""The embedded store: one SQLite file (or ``:memory:``), FTS5 for lexical ranking, and an
in-memory index over the verbatim vectors.

One writer connection serialises every write transaction; readers get a connection per
thread and, in WAL mode, never block the writer or each other."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import sqlite3
import struct
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from a2m_server.text import index_text

from . import _fts
from ._access import AccessBuffer
from ._agents import AgentCount, sqlite_agent, sqlite_framework, tally
from ._audit import SqliteAuditReading
from ._checkpoint import BACKSTOP_PAGES, Checkpointer
from ._json_text import dump_json
from ._sqlite_where import tag_clause, text_in, where_clause
from ._where import Conditions
from .base import (
    RECORD_COLUMNS,
    EventRow,
    NewRecord,
    RecordFilter,
    Scope,
    SessionStats,
    Store,
    StoredRecord,
    StoreReader,
    StoreWriter,
)
from .schema import migrate
from .vectors import VectorIndex, exact_similarities

__all__ = ["SQLiteStore"]

log = logging.getLogger("a2m_server.store")

_PREFIXED_COLUMNS = ", ".join(f"r.{c.strip()}" for c in RECORD_COLUMNS.split(","))
_PREFIXED_COLUMNS_WITH_VECTOR = _PREFIXED_COLUMNS + ", v.embedding"
_VECTOR_JOIN = " LEFT JOIN record_vectors AS v ON v.rowid = r.rowid"
# A vector search whose filter admits at most this many records ranks exactly those; one
# admitting more over-fetches from the whole index, growing the fetch up to the ceiling.
_PREFILTER_ROWS = 2048
_OVERFETCH_CEILING = 4096


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _pack(vector: Sequence[float]) -> bytes:
    # float64 keeps every JSON number exactly as it arrived (§3.7: verbatim). struct packs
    # a list of floats about twice as fast as numpy converts one.
    return _packer(len(vector)).pack(*vector)


@functools.lru_cache(maxsize=16)
def _packer(dimensions: int) -> struct.Struct:
    return struct.Struct(f"<{dimensions}d")


def _unpack(blob: bytes) -> list[float]:
    return np.frombuffer(blob, dtype="<f8").tolist()  # type: ignore[no-any-return]


def _row_to_record(row: Sequence[Any], *, with_vector: bool) -> StoredRecord:
    blob = row[19] if with_vector else None
    return StoredRecord.from_row(row, None if blob is None else _unpack(blob))


def _build_filter(where: RecordFilter, now: int) -> Conditions:
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
        branches = [_build_filter(branch, now) for branch in where.any_of]
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


# Each reader connection's page cache (SQLite's default is 2 MiB).
_READER_CACHE_KIB = 8192
# Access counts are buffered, because every write makes readers re-read their pages;
# they reach the file with the next write, or after this long or this many.
# Deletions after which the full-text index is rewritten without their words.
_PURGE_AFTER_DELETIONS = 5000


class _Reader(SqliteAuditReading, StoreReader):
    def __init__(self, store: SQLiteStore, conn: sqlite3.Connection) -> None:
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
        return f"{_PREFIXED_COLUMNS} FROM records AS r"

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
        record = _row_to_record(rows[0], with_vector=embeddings)
        self._store._overlay_access([record])
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
        sql = _build_filter(where, self._now)
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
        records = [_row_to_record(row, with_vector=embeddings) for row in rows]
        self._store._overlay_access(records)
        return records

    def select_ids(
        self, where: RecordFilter, *, order: str = "created_asc", limit: int | None = None
    ) -> list[tuple[str, str | None, str | None]]:
        sql = _build_filter(where, self._now)
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
        records = [_row_to_record(row, with_vector=True) for row in rows]
        self._store._overlay_access(records)
        return records

    def count(self, where: RecordFilter) -> int:
        if where.tier is not None and _only_tier_and_scope(where):
            return self._kept_counts(where).get(where.tier, 0)
        sql = _build_filter(where, self._now)
        row = self._conn.execute(
            f"SELECT count(*) FROM records AS r WHERE {sql.text()}", sql.params
        ).fetchone()
        return int(row[0])

    def count_by_tier(self, where: RecordFilter) -> dict[str, int]:
        if _only_tier_and_scope(where):
            return self._kept_counts(where)
        sql = _build_filter(where, self._now)
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

    def count_by_session(self, where: RecordFilter) -> dict[str | None, int]:
        sql = _build_filter(where, self._now)
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
    ) -> list[tuple[str, float]]:
        if not terms or (limit is not None and limit <= 0):
            return []
        sql = _build_filter(where, self._now)
        selective = where != RecordFilter()
        if match_all:
            return _fts.bm25(
                self._conn,
                _fts.match_expression(terms, match_all=True),
                sql.text(),
                sql.params,
                limit,
                selective=selective,
            )
        return _fts.ranked_search(
            self._conn,
            self._store._terms,
            terms,
            sql.text(),
            sql.params,
            limit,
            selective=selective,
        )

    def nearest(
        self, where: RecordFilter, vector: Sequence[float], limit: int
    ) -> list[tuple[str, float]]:
        index = self._store._vector_index()
        if index is None or limit <= 0:
            return []
        sql = _build_filter(where.with_(with_embedding=True), self._now)
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
            scores = [exact_similarities(metric, vector, [_unpack(b)])[0] for b in blobs]
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
        sql = _build_filter(where, self._now)
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


_EVENT_CHUNK = 64
"""The most events one INSERT carries (5 parameters each, far below SQLite's limit)."""


@functools.lru_cache(maxsize=8)
def _events_insert(rows: int) -> str:
    return "INSERT INTO events (at, kind, owner, tier, payload) VALUES " + ", ".join(
        ["(?, ?, ?, ?, ?)"] * rows
    )


class _Writer(_Reader, StoreWriter):
    def __init__(self, store: SQLiteStore, conn: sqlite3.Connection) -> None:
        super().__init__(store, conn)
        self.vector_adds: dict[int, list[float]] = {}
        self.vector_removes: set[int] = set()
        self.vectors_cleared = False
        self.width_changed = False
        self.events_appended = 0
        self.records_written = 0
        self.records_deleted = 0

    def insert(self, records: Sequence[NewRecord]) -> list[int]:
        if not records:
            return []
        # One writer holds the write lock, so the rowids SQLite would pick (the largest
        # plus one) can be chosen here, and a batch goes in with one executemany per table.
        row = self._conn.execute("SELECT coalesce(max(rowid), 0) FROM records").fetchone()
        rowids = list(range(int(row[0]) + 1, int(row[0]) + 1 + len(records)))
        self._conn.executemany(
            "INSERT INTO records (rowid, id, content, created_at, updated_at, role, metadata, "
            "grp, tier, salience, owner, session, key, revision, dims, uri, media_type, "
            "expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)",
            [
                (
                    rowid,
                    rec.id,
                    rec.content,
                    rec.created_at,
                    rec.created_at,
                    rec.role,
                    # the writer's dump, without a call, when it made one (it usually has)
                    rec.metadata_json if rec.metadata_json is not None else rec.metadata_text(),
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
                )
                for rowid, rec in zip(rowids, records, strict=True)
            ],
        )
        self._conn.executemany(
            "INSERT INTO records_fts (rowid, body) VALUES (?, ?)",
            [(rowid, index_text(rec.content)) for rowid, rec in zip(rowids, records, strict=True)],
        )
        with_vectors = [
            (rowid, rec.embedding)
            for rowid, rec in zip(rowids, records, strict=True)
            if rec.embedding is not None
        ]
        if with_vectors:
            self._conn.executemany(
                "INSERT INTO record_vectors (rowid, embedding) VALUES (?, ?)",
                [(rowid, _pack(vector)) for rowid, vector in with_vectors],
            )
            # The index copies each vector when the transaction has committed; nothing
            # changes a written record's list before then.
            self.vector_adds.update(with_vectors)
        self._count_added(records)
        self.records_written += len(records)
        return rowids

    def _count_added(self, records: Sequence[NewRecord | StoredRecord]) -> None:
        """Add inserted records to ``record_counts``: one upsert per owner and tier, not
        one per record (schema v3; deletes and moves are counted by triggers); and to
        ``agent_counts`` the same way (schema v5)."""
        added: dict[tuple[str | None, str], int] = {}
        for rec in records:
            if rec.tier is not None:
                place = (rec.owner, rec.tier)
                added[place] = added.get(place, 0) + 1
        if added:
            self._conn.executemany(
                "INSERT INTO record_counts (owner_key, owner, tier, n) "
                "VALUES (coalesce('=' || ?1, ''), ?1, ?2, ?3) "
                "ON CONFLICT (owner_key, tier) DO UPDATE SET n = n + excluded.n",
                [(owner, tier, n) for (owner, tier), n in added.items()],
            )
        by_agent = tally(records)
        if by_agent:
            self._conn.executemany(
                "INSERT INTO agent_counts (owner_key, owner, agent, framework, tier_key, tier, n) "
                "VALUES (coalesce('=' || ?1, ''), ?1, ?2, ?3, coalesce('=' || ?4, ''), ?4, ?5) "
                "ON CONFLICT (owner_key, agent, framework, tier_key) "
                "DO UPDATE SET n = n + excluded.n",
                [(*place, n) for place, n in by_agent.items()],
            )

    def restore(self, records: Sequence[StoredRecord]) -> int:
        restored: list[StoredRecord] = []
        for rec in records:
            cursor = self._conn.execute(
                "INSERT OR IGNORE INTO records (id, content, created_at, updated_at, role, "
                "metadata, grp, tier, salience, accessed_at, access_count, owner, session, key, "
                "revision, dims, uri, media_type, expires_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    rec.id,
                    rec.content,
                    rec.created_at,
                    rec.updated_at,
                    rec.role,
                    None if rec.metadata is None else dump_json(rec.metadata),
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
                ),
            )
            if not cursor.rowcount:
                continue
            rowid = int(cursor.lastrowid or 0)
            self._conn.execute(
                "INSERT INTO records_fts (rowid, body) VALUES (?, ?)",
                (rowid, index_text(rec.content)),
            )
            if rec.embedding is not None:
                self._conn.execute(
                    "INSERT INTO record_vectors (rowid, embedding) VALUES (?, ?)",
                    (rowid, _pack(rec.embedding)),
                )
                self.vector_adds[rowid] = list(rec.embedding)
            restored.append(rec)
        self._count_added(restored)
        self.records_written += len(restored)
        return len(restored)

    def replace(self, record_id: str, new: NewRecord) -> StoredRecord:
        row = self._conn.execute("SELECT rowid FROM records WHERE id = ?", (record_id,)).fetchone()
        if row is None:
            raise KeyError(record_id)
        rowid = int(row[0])
        self._conn.execute(
            "UPDATE records SET content = ?, updated_at = ?, role = ?, metadata = ?, grp = ?, "
            "tier = ?, salience = ?, session = ?, revision = revision + 1, dims = ?, "
            "uri = ?, media_type = ?, expires_at = ? WHERE rowid = ?",
            (
                new.content,
                new.created_at,
                new.role,
                new.metadata_text(),
                new.group,
                new.tier,
                new.salience,
                new.session,
                None if new.embedding is None else len(new.embedding),
                new.uri,
                new.media_type,
                new.expires_at,
                rowid,
            ),
        )
        self._conn.execute(
            "UPDATE records_fts SET body = ? WHERE rowid = ?", (index_text(new.content), rowid)
        )
        self.records_written += 1
        self._conn.execute("DELETE FROM record_vectors WHERE rowid = ?", (rowid,))
        if new.embedding is not None:
            self._conn.execute(
                "INSERT INTO record_vectors (rowid, embedding) VALUES (?, ?)",
                (rowid, _pack(new.embedding)),
            )
            self.vector_adds[rowid] = list(new.embedding)
            self.vector_removes.discard(rowid)
        else:
            self.vector_adds.pop(rowid, None)
            self.vector_removes.add(rowid)
        result = self.select(RecordFilter(ids=[record_id]))
        return result[0]

    def resolve_write_id(self, write_id: str) -> str | None:
        row = self._conn.execute(
            "SELECT id FROM records WHERE id = ? UNION ALL "
            "SELECT record_id FROM write_ids WHERE write_id = ? LIMIT 1",
            (write_id, write_id),
        ).fetchone()
        return None if row is None else str(row[0])

    def resolve_write_ids(self, write_ids: Sequence[str]) -> dict[str, str]:
        if not write_ids:
            return {}
        noted, params = text_in("write_id", write_ids)
        found: dict[str, str] = dict(
            self._conn.execute(
                f"SELECT write_id, record_id FROM write_ids WHERE {noted}", params
            ).fetchall()
        )
        # A record's own id wins over a noted one, as in resolve_write_id.
        own, params = text_in("id", write_ids)
        for (record_id,) in self._conn.execute(f"SELECT id FROM records WHERE {own}", params):
            found[record_id] = record_id
        return found

    def get_by_keys(self, keys: Sequence[tuple[str | None, str]]) -> list[StoredRecord | None]:
        if not keys:
            return []
        rows = self._conn.execute(
            f"SELECT {_PREFIXED_COLUMNS}, j.key FROM json_each(?) AS j "
            "JOIN records AS r ON coalesce(r.owner, '') = j.value ->> 0 "
            "AND r.key = j.value ->> 1 "
            "WHERE r.key IS NOT NULL AND (r.expires_at IS NULL OR r.expires_at > ?)",
            (dump_json([[owner or "", key] for owner, key in keys]), self._now),
        ).fetchall()
        found: dict[int, StoredRecord] = {}
        for row in rows:
            found[int(row[-1])] = _row_to_record(row, with_vector=False)
        self._store._overlay_access(list(found.values()))
        return [found.get(index) for index in range(len(keys))]

    def remember_write_id(self, write_id: str, record_id: str) -> None:
        self._conn.execute(
            "INSERT OR REPLACE INTO write_ids (write_id, record_id) VALUES (?, ?)",
            (write_id, record_id),
        )

    def set_tier(self, ids: Sequence[str], tier: str) -> int:
        if not ids:
            return 0
        chosen, params = text_in("id", ids)
        cursor = self._conn.execute(
            f"UPDATE records SET tier = ? WHERE {chosen} AND tier IS NOT ?", (tier, *params, tier)
        )
        return cursor.rowcount

    def add_salience(self, ids: Sequence[str], amount: float) -> int:
        if not ids:
            return 0
        chosen, params = text_in("id", ids)
        cursor = self._conn.execute(
            f"UPDATE records SET salience = salience + ? WHERE {chosen}", (amount, *params)
        )
        return cursor.rowcount

    def touch(self, ids: Sequence[str], at: int) -> None:
        self.add_accesses(dict.fromkeys(ids, (1, at)))

    def add_accesses(self, accesses: Mapping[str, tuple[int, int]]) -> None:
        """Apply buffered access counts: id → (how many accesses, when the last was)."""
        if accesses:
            self._conn.executemany(
                "UPDATE records SET access_count = access_count + ?, "
                "accessed_at = max(coalesce(accessed_at, 0), ?) WHERE id = ?",
                [(count, at, record_id) for record_id, (count, at) in accesses.items()],
            )

    def delete(self, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        chosen, params = text_in("id", ids)
        rows = self._conn.execute(f"SELECT rowid FROM records WHERE {chosen}", params).fetchall()
        if not rows:
            return 0
        rowids = dump_json([row[0] for row in rows])
        self._conn.execute(
            "DELETE FROM records_fts WHERE rowid IN (SELECT value FROM json_each(?))", (rowids,)
        )
        self._conn.execute(
            "DELETE FROM record_vectors WHERE rowid IN (SELECT value FROM json_each(?))",
            (rowids,),
        )
        noted, params = text_in("record_id", ids)
        self._conn.execute(f"DELETE FROM write_ids WHERE {noted}", params)
        cursor = self._conn.execute(
            "DELETE FROM records WHERE rowid IN (SELECT value FROM json_each(?))", (rowids,)
        )
        self.records_deleted += cursor.rowcount
        for (rowid,) in rows:
            self.vector_adds.pop(rowid, None)
            self.vector_removes.add(rowid)
        return cursor.rowcount

    def expire(self, now: int) -> list[StoredRecord]:
        rows = self._conn.execute(
            f"SELECT {_PREFIXED_COLUMNS} FROM records AS r "
            "WHERE r.expires_at IS NOT NULL AND r.expires_at <= ?",
            (now,),
        ).fetchall()
        if not rows:
            return []
        expired = [_row_to_record(row, with_vector=False) for row in rows]
        self.delete([record.id for record in expired])
        return expired

    def set_dimensions(self, dimensions: int) -> None:
        # A new width (the store's vectors all gone): the vector index is rebuilt.
        self.width_changed = self.dimensions() not in (None, dimensions)
        self._conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('dimensions', ?)",
            (str(dimensions),),
        )

    def set_meta_value(self, key: str, value: str) -> None:
        self._conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def add_vectors(self, items: Sequence[tuple[int, Sequence[float]]]) -> int:
        if not items:
            return 0
        width = self.dimensions()
        if width is None or any(len(vector) != width for _, vector in items):
            raise ValueError(f"add_vectors needs vectors of the store's width ({width})")
        by_rowid = dict(items)
        marks = ",".join("?" * len(by_rowid))
        rows = self._conn.execute(
            f"SELECT rowid FROM records WHERE rowid IN ({marks}) AND dims IS NULL",
            list(by_rowid),
        ).fetchall()
        fresh = [int(row[0]) for row in rows]
        if not fresh:
            return 0
        self._conn.executemany(
            "UPDATE records SET dims = ? WHERE rowid = ?", [(width, rowid) for rowid in fresh]
        )
        self._conn.executemany(
            "INSERT OR REPLACE INTO record_vectors (rowid, embedding) VALUES (?, ?)",
            [(rowid, _pack(by_rowid[rowid])) for rowid in fresh],
        )
        for rowid in fresh:
            self.vector_adds[rowid] = list(by_rowid[rowid])
            self.vector_removes.discard(rowid)
        return len(fresh)

    def clear_vectors(self) -> int:
        cursor = self._conn.execute("DELETE FROM record_vectors")
        self._conn.execute("UPDATE records SET dims = NULL WHERE dims IS NOT NULL")
        self._conn.execute("DELETE FROM meta WHERE key = 'dimensions'")
        self.vector_adds.clear()
        self.vector_removes.clear()
        self.vectors_cleared = True
        return cursor.rowcount

    def append_events(
        self,
        events: Sequence[tuple[str, int, Mapping[str, Any], str | None, str | None]],
    ) -> None:
        rows = [
            (at, kind, owner, tier, dump_json(payload if type(payload) is dict else dict(payload)))
            for kind, at, payload, owner, tier in events
        ]
        # A few multi-row statements, not one statement per event: the log's AUTOINCREMENT
        # writes sqlite_sequence once per statement, which was most of an event's cost.
        # Chunks of a power of two keep the statement texts (and the cache) to a handful.
        start = 0
        while start < len(rows):
            size = min(_EVENT_CHUNK, 1 << ((len(rows) - start).bit_length() - 1))
            chunk = rows[start : start + size]
            self._conn.execute(_events_insert(size), [value for row in chunk for value in row])
            start += size
        self.events_appended += len(events)

    def append_event(
        self, kind: str, at: int, payload: Mapping[str, Any], owner: str | None, tier: str | None
    ) -> int:
        cursor = self._conn.execute(
            "INSERT INTO events (at, kind, owner, tier, payload) VALUES (?, ?, ?, ?, ?)",
            (at, kind, owner, tier, dump_json(dict(payload))),
        )
        self.events_appended += 1
        return int(cursor.lastrowid or 0)


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
        self._closed = False
        if not self._memory:
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
            conn.execute("PRAGMA journal_mode = WAL")
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

    def _overlay_access(self, records: Sequence[StoredRecord]) -> None:
        self._access.overlay(records)

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

    def _vector_index(self) -> VectorIndex | None:
        self._check_foreign_writes()
        with self._index_lock:
            if not self._index_loaded:
                self._index = self._load_index()
                self._index_loaded = True
            return self._index

    def _load_index(self) -> VectorIndex | None:
        conn = self._reader_connection()
        lock = self._write_lock if self._memory else _NO_LOCK
        with lock:
            row = conn.execute("SELECT value FROM meta WHERE key = 'dimensions'").fetchone()
            if row is None:
                return None
            index = VectorIndex(self.metric, int(row[0]))
            cursor = conn.execute("SELECT rowid, embedding FROM record_vectors")
            while True:
                batch = cursor.fetchmany(4096)
                if not batch:
                    break
                index.add_many((rowid, _unpack(blob)) for rowid, blob in batch)
        log.debug("vector index loaded: %d vectors", len(index))
        return index

    def _apply_vector_changes(self, writer: _Writer) -> None:
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
                yield _Reader(self, conn)
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
            writer = _Writer(self, self._writer)
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

    def _prune_events(self, writer: _Writer) -> None:
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
        if self._checkpointer is not None:
            self._checkpointer.close()
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
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
