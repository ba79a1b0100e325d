"""Writes of one PostgreSQL transaction: the SQL behind :class:`StoreWriter` for
:class:`~a2m_server.store.postgres.PostgresStore`, buffered into a few multi-row
statements. It reads as the reader does, inside the same transaction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ._audit import PgAuditWriting
from ._pg_adapt import Float8Array
from ._pg_filter import dump_json, jsonb_text
from ._pg_text import tsvector
from .base import (
    NewRecord,
    RecordFilter,
    StoredRecord,
    StoreWriter,
)

if TYPE_CHECKING:
    import psycopg
from ._pg_read import R_COLUMNS, PgReader, StoreState, row_to_record

__all__ = ["PgWriter"]

_PGVECTOR_MAX_DIMENSIONS = 16_000
"""The widest vector pgvector's ``vector`` type holds."""


def _meta_jsonb(metadata: Mapping[str, Any] | None) -> str | None:
    return None if metadata is None else jsonb_text(metadata)


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

    def set_group_expiry(self, owner: str | None, group: str, expires_at: int | None) -> None:
        self._exec(
            "UPDATE records SET expires_at = %s WHERE coalesce(owner, '') = %s AND grp = %s "
            "AND expires_at IS DISTINCT FROM %s",
            (expires_at, owner or "", group, expires_at),
        )

    def expire(self, now: int) -> list[StoredRecord]:
        self._read_state()
        if self.records_written == 0 and (self._next_expiry is None or self._next_expiry > now):
            # Nothing is due (and this transaction has written nothing that could be):
            # skip the DELETE, whose statement triggers would run even for no rows.
            return []
        rows = self._rows(
            f"DELETE FROM records AS r WHERE r.expires_at IS NOT NULL AND r.expires_at <= %s "
            f"RETURNING {R_COLUMNS}",
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
