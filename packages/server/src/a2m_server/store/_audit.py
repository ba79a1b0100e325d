"""The observation audit log (``docs/observations.md`` §5) in both stores: an append-only
table, ``observation_audit``, whose triggers refuse any update or delete; and the two small
record edits observations need beyond the record interface (a new key after a content
edit, an exact weight).

Each store's reader and writer mix in the class for its SQL dialect."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._json_text import dump_json, load_json

__all__ = ["AuditQuery", "AuditRow", "PgAuditReading", "PgAuditWriting", "SqliteAuditReading"]

_COLUMNS = "seq, at, actor, action, observation_id, org, project, agent, before, after"


@dataclass
class AuditRow:
    """One entry of the log; ``seq`` is assigned on append (0 until then)."""

    seq: int
    at: int
    actor: str
    action: str
    observation_id: str
    org: str | None
    project: str | None
    agent: str | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> AuditRow:
        return cls(
            seq=int(row[0]),
            at=int(row[1]),
            actor=row[2],
            action=row[3],
            observation_id=row[4],
            org=row[5],
            project=row[6],
            agent=row[7],
            before=load_json(row[8]) if row[8] is not None else None,
            after=load_json(row[9]) if row[9] is not None else None,
        )

    def values(self) -> tuple[Any, ...]:
        return (
            self.at,
            self.actor,
            self.action,
            self.observation_id,
            self.org,
            self.project,
            self.agent,
            None if self.before is None else dump_json(self.before),
            None if self.after is None else dump_json(self.after),
        )


@dataclass(frozen=True)
class AuditQuery:
    """Which entries to read, newest first; every unset condition matches everything."""

    org: str | None = None
    project: str | None = None
    agent: str | None = None
    any_agent: bool = True
    """False: only entries whose agent equals ``agent`` (``None`` included)."""
    observation_id: str | None = None
    since: int | None = None
    until: int | None = None
    before_seq: int | None = None
    """Only entries older than this position (the page cursor)."""
    limit: int = 100


def _conditions(query: AuditQuery, mark: str) -> tuple[str, list[Any]]:
    parts: list[str] = []
    params: list[Any] = []
    for column, value in (
        ("org", query.org),
        ("project", query.project),
        ("observation_id", query.observation_id),
    ):
        if value is not None:
            parts.append(f"{column} = {mark}")
            params.append(value)
    if not query.any_agent:
        if query.agent is None:
            parts.append("agent IS NULL")
        else:
            parts.append(f"agent = {mark}")
            params.append(query.agent)
    if query.since is not None:
        parts.append(f"at >= {mark}")
        params.append(query.since)
    if query.until is not None:
        parts.append(f"at <= {mark}")
        params.append(query.until)
    if query.before_seq is not None:
        parts.append(f"seq < {mark}")
        params.append(query.before_seq)
    return (" AND ".join(parts) or "TRUE"), params


class SqliteAuditReading:
    """The log's reads and writes, and the record edits, for SQLite (``?`` parameters)."""

    _conn: sqlite3.Connection

    def audit(self, query: AuditQuery) -> list[AuditRow]:
        """Entries matching ``query``, newest first."""
        where, params = _conditions(query, "?")
        rows = self._conn.execute(
            f"SELECT {_COLUMNS} FROM observation_audit WHERE {where} ORDER BY seq DESC LIMIT ?",
            (*params, query.limit),
        ).fetchall()
        return [AuditRow.from_row(row) for row in rows]

    def scan_audit(self, after: int, limit: int) -> list[AuditRow]:
        """Up to ``limit`` entries past position ``after``, oldest first (export)."""
        rows = self._conn.execute(
            f"SELECT {_COLUMNS} FROM observation_audit WHERE seq > ? ORDER BY seq LIMIT ?",
            (after, limit),
        ).fetchall()
        return [AuditRow.from_row(row) for row in rows]

    def append_audit(self, entries: Sequence[AuditRow]) -> None:
        """Append entries in order; each gets the next position."""
        self._conn.executemany(
            "INSERT INTO observation_audit (at, actor, action, observation_id, org, project, "
            "agent, before, after) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [entry.values() for entry in entries],
        )

    def rekey(self, record_id: str, key: str) -> None:
        """Give a record a new key (an observation whose content was edited)."""
        self._conn.execute("UPDATE records SET key = ? WHERE id = ?", (key, record_id))

    def set_salience(self, record_id: str, salience: float) -> None:
        """Set a record's salience exactly (an observation's weight)."""
        self._conn.execute("UPDATE records SET salience = ? WHERE id = ?", (salience, record_id))


class PgAuditReading:
    """:class:`SqliteAuditReading` for PostgreSQL (``%s`` parameters, pipelined writer)."""

    def _rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError  # pragma: no cover - provided by the store's reader

    def _exec(self, query: str, params: Sequence[Any] = ()) -> None:
        raise NotImplementedError  # pragma: no cover - provided by the store's reader

    def audit(self, query: AuditQuery) -> list[AuditRow]:
        """Entries matching ``query``, newest first."""
        where, params = _conditions(query, "%s")
        rows = self._rows(
            f"SELECT {_COLUMNS} FROM observation_audit WHERE {where} ORDER BY seq DESC LIMIT %s",
            (*params, query.limit),
        )
        return [AuditRow.from_row(row) for row in rows]

    def scan_audit(self, after: int, limit: int) -> list[AuditRow]:
        """Up to ``limit`` entries past position ``after``, oldest first (export)."""
        rows = self._rows(
            f"SELECT {_COLUMNS} FROM observation_audit WHERE seq > %s ORDER BY seq LIMIT %s",
            (after, limit),
        )
        return [AuditRow.from_row(row) for row in rows]


class PgAuditWriting(PgAuditReading):
    """The writes of :class:`PgAuditReading`; positions come from an identity column."""

    def append_audit(self, entries: Sequence[AuditRow]) -> None:
        """Append entries in order; each gets the next position."""
        for entry in entries:
            self._exec(
                "INSERT INTO observation_audit (at, actor, action, observation_id, org, "
                "project, agent, before, after) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                entry.values(),
            )

    def rekey(self, record_id: str, key: str) -> None:
        """Give a record a new key (an observation whose content was edited)."""
        self._exec("UPDATE records SET key = %s WHERE id = %s", (key, record_id))

    def set_salience(self, record_id: str, salience: float) -> None:
        """Set a record's salience exactly (an observation's weight)."""
        self._exec("UPDATE records SET salience = %s WHERE id = %s", (salience, record_id))


SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS observation_audit (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    at             INTEGER NOT NULL,
    actor          TEXT    NOT NULL,
    action         TEXT    NOT NULL,
    observation_id TEXT    NOT NULL,
    org            TEXT,
    project        TEXT,
    agent          TEXT,
    before         TEXT,
    after          TEXT
);
CREATE INDEX IF NOT EXISTS observation_audit_observation ON observation_audit (observation_id, seq);
CREATE INDEX IF NOT EXISTS observation_audit_agent ON observation_audit (project, agent, seq);
CREATE INDEX IF NOT EXISTS observation_audit_at ON observation_audit (at);
CREATE TRIGGER IF NOT EXISTS observation_audit_no_update BEFORE UPDATE ON observation_audit
BEGIN
    SELECT RAISE(ABORT, 'observation_audit is append-only');
END;
CREATE TRIGGER IF NOT EXISTS observation_audit_no_delete BEFORE DELETE ON observation_audit
BEGIN
    SELECT RAISE(ABORT, 'observation_audit is append-only');
END;
"""
"""Schema version 4 of the SQLite store; idempotent, so a file whose recorded version was
rolled back by hand still opens."""

PG_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS observation_audit (
        seq            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        at             bigint NOT NULL,
        actor          text   NOT NULL,
        action         text   NOT NULL,
        observation_id text   NOT NULL,
        org            text,
        project        text,
        agent          text,
        before         text,
        after          text
    )""",
    "CREATE INDEX IF NOT EXISTS observation_audit_observation ON observation_audit (observation_id, seq)",
    "CREATE INDEX IF NOT EXISTS observation_audit_agent ON observation_audit (project, agent, seq)",
    "CREATE INDEX IF NOT EXISTS observation_audit_at ON observation_audit (at)",
    """CREATE OR REPLACE FUNCTION a2m_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'observation_audit is append-only';
    END $$""",
    "DROP TRIGGER IF EXISTS observation_audit_append_only ON observation_audit",
    "CREATE TRIGGER observation_audit_append_only BEFORE UPDATE OR DELETE ON observation_audit "
    "FOR EACH ROW EXECUTE FUNCTION a2m_audit_append_only()",
]
"""Schema version 4 of the PostgreSQL store; idempotent like the SQLite one."""
