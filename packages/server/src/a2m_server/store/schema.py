"""The SQLite schema and its migrations, versioned so later releases can upgrade a file."""

from __future__ import annotations

import sqlite3

from ._agents import sqlite_agent, sqlite_framework
from ._audit import SQLITE_SCHEMA as _V4

__all__ = ["SCHEMA_VERSION", "migrate"]

SCHEMA_VERSION = 5

_V1 = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE records (
    rowid        INTEGER PRIMARY KEY,
    id           TEXT    NOT NULL UNIQUE,
    content      TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    role         TEXT,
    metadata     TEXT,
    grp          TEXT,
    tier         TEXT,
    salience     REAL    NOT NULL DEFAULT 0,
    accessed_at  INTEGER,
    access_count INTEGER NOT NULL DEFAULT 0,
    owner        TEXT,
    session      TEXT,
    key          TEXT,
    revision     INTEGER NOT NULL DEFAULT 0,
    dims         INTEGER,
    uri          TEXT,
    media_type   TEXT,
    expires_at   INTEGER
);
CREATE UNIQUE INDEX records_owner_key ON records (coalesce(owner, ''), key) WHERE key IS NOT NULL;
CREATE INDEX records_key ON records (key) WHERE key IS NOT NULL;
CREATE INDEX records_created ON records (created_at);
CREATE INDEX records_tier_created ON records (tier, created_at);
CREATE INDEX records_session ON records (session, created_at) WHERE session IS NOT NULL;
CREATE INDEX records_group ON records (grp) WHERE grp IS NOT NULL;
CREATE INDEX records_owner ON records (owner) WHERE owner IS NOT NULL;
CREATE INDEX records_expiry ON records (expires_at) WHERE expires_at IS NOT NULL;

-- Vectors live apart from records: a 3 KB blob in the row would push every later
-- column onto overflow pages that each read has to walk.
CREATE TABLE record_vectors (
    rowid     INTEGER PRIMARY KEY,
    embedding BLOB NOT NULL
);

CREATE VIRTUAL TABLE records_fts USING fts5 (body, tokenize = 'unicode61 remove_diacritics 2');

-- A client-supplied id that landed on another record (a key replacement), so a retry
-- of that write is recognised instead of applied twice.
CREATE TABLE write_ids (
    write_id  TEXT PRIMARY KEY,
    record_id TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX write_ids_record ON write_ids (record_id);

CREATE TABLE events (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    at      INTEGER NOT NULL,
    kind    TEXT    NOT NULL,
    owner   TEXT,
    tier    TEXT,
    payload TEXT    NOT NULL
);
"""

# Version 2 keeps per-(owner, tier) record counts up to date with triggers, so describe
# and every capacity check read a handful of rows instead of counting the whole store.
_V2 = """
CREATE TABLE record_counts (
    owner_key TEXT    NOT NULL,
    owner     TEXT,
    tier      TEXT    NOT NULL,
    n         INTEGER NOT NULL,
    PRIMARY KEY (owner_key, tier)
) WITHOUT ROWID;

CREATE TRIGGER records_count_insert AFTER INSERT ON records WHEN NEW.tier IS NOT NULL
BEGIN
    INSERT INTO record_counts (owner_key, owner, tier, n)
    VALUES (coalesce('=' || NEW.owner, ''), NEW.owner, NEW.tier, 1)
    ON CONFLICT (owner_key, tier) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER records_count_delete AFTER DELETE ON records WHEN OLD.tier IS NOT NULL
BEGIN
    UPDATE record_counts SET n = n - 1
    WHERE owner_key = coalesce('=' || OLD.owner, '') AND tier = OLD.tier;
END;

CREATE TRIGGER records_count_update AFTER UPDATE OF tier, owner ON records
WHEN OLD.tier IS NOT NEW.tier OR OLD.owner IS NOT NEW.owner
BEGIN
    UPDATE record_counts SET n = n - 1
    WHERE OLD.tier IS NOT NULL
      AND owner_key = coalesce('=' || OLD.owner, '') AND tier = OLD.tier;
    INSERT INTO record_counts (owner_key, owner, tier, n)
    SELECT coalesce('=' || NEW.owner, ''), NEW.owner, NEW.tier, 1 WHERE NEW.tier IS NOT NULL
    ON CONFLICT (owner_key, tier) DO UPDATE SET n = n + 1;
END;

INSERT INTO record_counts (owner_key, owner, tier, n)
SELECT coalesce('=' || owner, ''), owner, tier, count(*) FROM records
WHERE tier IS NOT NULL GROUP BY owner, tier;
"""

# Version 3 counts inserted records once per statement, in the store's insert (SQLite has
# no statement-level trigger): the row trigger ran an upsert of record_counts for every
# record, the dearest part of writing a batch. Deletes and moves keep their triggers.
_V3 = """
DROP TRIGGER records_count_insert;
"""

# Version 4 adds the append-only observation audit log (store/_audit.py).

# Version 5 keeps records per (owner, agent, framework, tier) for the memory page's
# agents index (store/_agents.py): inserts are counted by the store, once per group, as
# record_counts are; deletes and changes of tier, owner or metadata by these triggers.
# Every record counts, with or without a tier. Running it again recounts from the records.
_OLD_PLACE = (
    f"owner_key = coalesce('=' || OLD.owner, '') AND agent = {sqlite_agent('OLD')} "
    f"AND framework = {sqlite_framework('OLD')} AND tier_key = coalesce('=' || OLD.tier, '')"
)
_V5 = f"""
CREATE TABLE IF NOT EXISTS agent_counts (
    owner_key TEXT    NOT NULL,
    owner     TEXT,
    agent     TEXT    NOT NULL,
    framework TEXT    NOT NULL,
    tier_key  TEXT    NOT NULL,
    tier      TEXT,
    n         INTEGER NOT NULL,
    PRIMARY KEY (owner_key, agent, framework, tier_key)
) WITHOUT ROWID;

DROP TRIGGER IF EXISTS records_agents_delete;
CREATE TRIGGER records_agents_delete AFTER DELETE ON records
BEGIN
    UPDATE agent_counts SET n = n - 1 WHERE {_OLD_PLACE};
END;

DROP TRIGGER IF EXISTS records_agents_update;
CREATE TRIGGER records_agents_update AFTER UPDATE OF tier, owner, metadata ON records
WHEN OLD.tier IS NOT NEW.tier OR OLD.owner IS NOT NEW.owner
  OR OLD.metadata IS NOT NEW.metadata
BEGIN
    UPDATE agent_counts SET n = n - 1 WHERE {_OLD_PLACE};
    INSERT INTO agent_counts (owner_key, owner, agent, framework, tier_key, tier, n)
    VALUES (coalesce('=' || NEW.owner, ''), NEW.owner, {sqlite_agent("NEW")},
            {sqlite_framework("NEW")}, coalesce('=' || NEW.tier, ''), NEW.tier, 1)
    ON CONFLICT (owner_key, agent, framework, tier_key) DO UPDATE SET n = n + 1;
END;

DELETE FROM agent_counts;
INSERT INTO agent_counts (owner_key, owner, agent, framework, tier_key, tier, n)
SELECT coalesce('=' || r.owner, ''), r.owner, {sqlite_agent("r")}, {sqlite_framework("r")},
       coalesce('=' || r.tier, ''), r.tier, count(*)
FROM records AS r GROUP BY 1, 3, 4, 5;
"""

_MIGRATIONS: dict[int, str] = {1: _V1, 2: _V2, 3: _V3, 4: _V4, 5: _V5}


def _version(conn: sqlite3.Connection) -> int:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    ).fetchone()
    if not exists:
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def _statements(script: str) -> list[str]:
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        if line.lstrip().startswith("--"):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    return statements


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the database up to :data:`SCHEMA_VERSION`; returns the version found.

    Runs under ``BEGIN IMMEDIATE`` and re-reads the version inside it, so two processes
    opening a new file at once do not both create it."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = _version(conn)
        if found > SCHEMA_VERSION:
            raise RuntimeError(
                f"this database has schema version {found}, newer than this server "
                f"understands ({SCHEMA_VERSION}); upgrade a2m-server"
            )
        for version in range(found + 1, SCHEMA_VERSION + 1):
            for statement in _statements(_MIGRATIONS[version]):
                conn.execute(statement)
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
                (str(version),),
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return found
