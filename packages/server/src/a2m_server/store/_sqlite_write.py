"""Writing the embedded store: the writer a write transaction of
:class:`~a2m_server.store.sqlite.SQLiteStore` gets. It reads as the reader does, inside the
same transaction, and notes what the store must do once it commits (vector index changes,
deletions to purge from the text index)."""

from __future__ import annotations

import functools
import sqlite3
import struct
from collections.abc import Mapping, Sequence
from typing import Any

from a2m_server.text import index_text

from ._agents import tally
from ._json_text import dump_json
from ._sqlite_read import PREFIXED_COLUMNS, Reader, StoreState, row_to_record
from ._sqlite_where import text_in
from .base import (
    NewRecord,
    RecordFilter,
    StoredRecord,
    StoreWriter,
)

__all__ = ["Writer", "pack_vector"]


_EVENT_CHUNK = 64
"""The most events one INSERT carries (5 parameters each, far below SQLite's limit)."""


def pack_vector(vector: Sequence[float]) -> bytes:
    """``vector`` as the blob the store keeps."""
    # float64 keeps every JSON number exactly as it arrived (§3.7: verbatim). struct packs
    # a list of floats about twice as fast as numpy converts one.
    return _packer(len(vector)).pack(*vector)


@functools.lru_cache(maxsize=16)
def _packer(dimensions: int) -> struct.Struct:
    return struct.Struct(f"<{dimensions}d")


@functools.lru_cache(maxsize=8)
def _events_insert(rows: int) -> str:
    return "INSERT INTO events (at, kind, owner, tier, payload) VALUES " + ", ".join(
        ["(?, ?, ?, ?, ?)"] * rows
    )


class Writer(Reader, StoreWriter):
    def __init__(self, store: StoreState, conn: sqlite3.Connection) -> None:
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
                [(rowid, pack_vector(vector)) for rowid, vector in with_vectors],
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
                    (rowid, pack_vector(rec.embedding)),
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
                (rowid, pack_vector(new.embedding)),
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
            f"SELECT {PREFIXED_COLUMNS}, j.key FROM json_each(?) AS j "
            "JOIN records AS r ON coalesce(r.owner, '') = j.value ->> 0 "
            "AND r.key = j.value ->> 1 "
            "WHERE r.key IS NOT NULL AND (r.expires_at IS NULL OR r.expires_at > ?)",
            (dump_json([[owner or "", key] for owner, key in keys]), self._now),
        ).fetchall()
        found: dict[int, StoredRecord] = {}
        for row in rows:
            found[int(row[-1])] = row_to_record(row, with_vector=False)
        self._store.overlay_access(list(found.values()))
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

    def set_group_expiry(self, owner: str | None, group: str, expires_at: int | None) -> None:
        self._conn.execute(
            "UPDATE records SET expires_at = ? WHERE coalesce(owner, '') = ? AND grp = ? "
            "AND expires_at IS NOT ?",
            (expires_at, owner or "", group, expires_at),
        )

    def expire(self, now: int) -> list[StoredRecord]:
        rows = self._conn.execute(
            f"SELECT {PREFIXED_COLUMNS} FROM records AS r "
            "WHERE r.expires_at IS NOT NULL AND r.expires_at <= ?",
            (now,),
        ).fetchall()
        if not rows:
            return []
        expired = [row_to_record(row, with_vector=False) for row in rows]
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
            [(rowid, pack_vector(by_rowid[rowid])) for rowid in fresh],
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
