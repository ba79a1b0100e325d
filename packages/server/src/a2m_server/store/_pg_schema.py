"""The PostgreSQL schema and its migrations, versioned like the SQLite one so a later
release can upgrade a database in place."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ._agents import pg_agent, pg_framework
from ._audit import PG_SCHEMA as _V4
from ._pg_text import tsvector
from .base import StoreError

if TYPE_CHECKING:
    import psycopg

    _Connection = psycopg.Connection[tuple[object, ...]]
    # One step of a migration: a statement, or a function doing what SQL alone cannot.
    _Step = str | Callable[[_Connection], None]

__all__ = ["MIGRATION_LOCK", "SCHEMA_VERSION", "MissingExtensionError", "migrate"]

SCHEMA_VERSION = 6

# Every object lives in the connection's current schema (the first of its search_path),
# so one database can hold several stores side by side.
_V1 = [
    """CREATE TABLE IF NOT EXISTS meta (
        key   text PRIMARY KEY,
        value text NOT NULL
    )""",
    """CREATE TABLE records (
        rowid        bigint PRIMARY KEY,
        id           text   NOT NULL UNIQUE,
        content      text   NOT NULL,
        created_at   bigint NOT NULL,
        updated_at   bigint NOT NULL,
        role         text,
        metadata     text,
        meta         jsonb,
        grp          text,
        tier         text,
        salience     double precision NOT NULL DEFAULT 0,
        accessed_at  bigint,
        access_count bigint NOT NULL DEFAULT 0,
        owner        text,
        session      text,
        key          text,
        revision     integer NOT NULL DEFAULT 0,
        dims         integer,
        uri          text,
        media_type   text,
        expires_at   bigint,
        body         tsvector NOT NULL,
        body_length  integer  NOT NULL DEFAULT 0
    )""",
    # rowid is assigned by the writer holding the store's write lock (max + 1, as SQLite
    # does), so a batch needs no round trip to learn its rowids.
    # metadata is the verbatim JSON text (key order, -0.0, 1.0 stay as written); meta is
    # the same value as jsonb, for filters only.
    "CREATE UNIQUE INDEX records_owner_key ON records (coalesce(owner, ''), key) "
    "WHERE key IS NOT NULL",
    'CREATE INDEX records_key ON records ((key COLLATE "C")) WHERE key IS NOT NULL',
    "CREATE INDEX records_created ON records (created_at, rowid)",
    "CREATE INDEX records_tier_created ON records (tier, created_at)",
    "CREATE INDEX records_session ON records (session, created_at) WHERE session IS NOT NULL",
    "CREATE INDEX records_group ON records (grp) WHERE grp IS NOT NULL",
    "CREATE INDEX records_owner ON records (owner) WHERE owner IS NOT NULL",
    "CREATE INDEX records_expiry ON records (expires_at) WHERE expires_at IS NOT NULL",
    "CREATE INDEX records_body ON records USING gin (body)",
    # Vectors apart from records, as on SQLite: verbatim float64 for reads, and a pgvector
    # copy (NULL when float32 cannot hold it) that the search ranks.
    """CREATE TABLE record_vectors (
        rowid     bigint PRIMARY KEY REFERENCES records (rowid) ON DELETE CASCADE,
        embedding double precision[] NOT NULL,
        vec       vector
    )""",
    """CREATE TABLE write_ids (
        write_id  text PRIMARY KEY,
        record_id text NOT NULL
    )""",
    "CREATE INDEX write_ids_record ON write_ids (record_id)",
    """CREATE TABLE events (
        seq     bigint PRIMARY KEY,
        at      bigint NOT NULL,
        kind    text   NOT NULL,
        owner   text,
        tier    text,
        payload text   NOT NULL
    )""",
    # Term statistics for BM25, kept exact by triggers in the writing transaction: how
    # many records hold each lexeme, and the corpus's size in records and tokens. A
    # query reads its terms' counts in one indexed lookup, with no scan of the matches.
    """CREATE TABLE term_stats (
        lexeme text PRIMARY KEY,
        docs   bigint NOT NULL
    )""",
    """CREATE TABLE corpus_stats (
        only_row boolean PRIMARY KEY DEFAULT TRUE CHECK (only_row),
        records  bigint NOT NULL,
        tokens   bigint NOT NULL
    )""",
    "INSERT INTO corpus_stats (records, tokens) VALUES (0, 0)",
    """CREATE FUNCTION a2m_count_terms(sign integer, lexemes text[], records bigint,
                                       tokens bigint) RETURNS void LANGUAGE sql AS $$
        INSERT INTO term_stats AS s (lexeme, docs)
        SELECT lexeme, sign * count(*) FROM unnest(lexemes) AS lexeme GROUP BY lexeme
        ON CONFLICT (lexeme) DO UPDATE SET docs = s.docs + excluded.docs;
        UPDATE corpus_stats SET records = corpus_stats.records + sign * a2m_count_terms.records,
            tokens = corpus_stats.tokens + sign * a2m_count_terms.tokens;
    $$""",
    """CREATE FUNCTION a2m_terms_added() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM a2m_count_terms(1,
            (SELECT coalesce(array_agg(u.lexeme), '{}') FROM added, unnest(added.body) AS u),
            (SELECT count(*) FROM added), (SELECT coalesce(sum(body_length), 0) FROM added));
        RETURN NULL;
    END $$""",
    """CREATE FUNCTION a2m_terms_removed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM a2m_count_terms(-1,
            (SELECT coalesce(array_agg(u.lexeme), '{}') FROM removed, unnest(removed.body) AS u),
            (SELECT count(*) FROM removed), (SELECT coalesce(sum(body_length), 0) FROM removed));
        RETURN NULL;
    END $$""",
    """CREATE FUNCTION a2m_terms_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM a2m_count_terms(-1, tsvector_to_array(OLD.body), 1, OLD.body_length);
        PERFORM a2m_count_terms(1, tsvector_to_array(NEW.body), 1, NEW.body_length);
        RETURN NULL;
    END $$""",
    "CREATE TRIGGER records_terms_added AFTER INSERT ON records REFERENCING NEW TABLE AS added "
    "FOR EACH STATEMENT EXECUTE FUNCTION a2m_terms_added()",
    "CREATE TRIGGER records_terms_removed AFTER DELETE ON records REFERENCING OLD TABLE AS removed "
    "FOR EACH STATEMENT EXECUTE FUNCTION a2m_terms_removed()",
    "CREATE TRIGGER records_terms_changed AFTER UPDATE OF body ON records FOR EACH ROW "
    "WHEN (OLD.body IS DISTINCT FROM NEW.body) EXECUTE FUNCTION a2m_terms_changed()",
    # The head of the log is a row, not a sequence: it moves only when its transaction
    # commits, so no reader can ever be handed a cursor past an event not yet visible.
    "INSERT INTO meta (key, value) VALUES ('event_head', '0')",
]

# Version 2 keeps per-(owner, tier) record counts with triggers in the writing transaction,
# so describe and every capacity check read a handful of rows instead of counting the
# store (as SQLite's schema v2 does); and orders the term statistics by byte, so the typo
# correction reads the indexed terms starting with one letter as one index range.
_V2 = [
    """CREATE TABLE record_counts (
        owner_key text   NOT NULL,
        owner     text,
        tier      text   NOT NULL,
        n         bigint NOT NULL,
        PRIMARY KEY (owner_key, tier)
    )""",
    """CREATE FUNCTION a2m_records_added() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO record_counts AS c (owner_key, owner, tier, n)
        SELECT coalesce('=' || owner, ''), owner, tier, count(*) FROM added
        WHERE tier IS NOT NULL GROUP BY 1, 2, 3
        ON CONFLICT (owner_key, tier) DO UPDATE SET n = c.n + excluded.n;
        RETURN NULL;
    END $$""",
    """CREATE FUNCTION a2m_records_removed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE record_counts AS c SET n = c.n - d.n
        FROM (SELECT coalesce('=' || owner, '') AS owner_key, tier, count(*) AS n FROM removed
              WHERE tier IS NOT NULL GROUP BY 1, 2) AS d
        WHERE c.owner_key = d.owner_key AND c.tier = d.tier;
        RETURN NULL;
    END $$""",
    """CREATE FUNCTION a2m_record_moved() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF OLD.tier IS NOT NULL THEN
            UPDATE record_counts SET n = n - 1
            WHERE owner_key = coalesce('=' || OLD.owner, '') AND tier = OLD.tier;
        END IF;
        IF NEW.tier IS NOT NULL THEN
            INSERT INTO record_counts AS c (owner_key, owner, tier, n)
            VALUES (coalesce('=' || NEW.owner, ''), NEW.owner, NEW.tier, 1)
            ON CONFLICT (owner_key, tier) DO UPDATE SET n = c.n + 1;
        END IF;
        RETURN NULL;
    END $$""",
    "CREATE TRIGGER records_count_added AFTER INSERT ON records REFERENCING NEW TABLE AS added "
    "FOR EACH STATEMENT EXECUTE FUNCTION a2m_records_added()",
    "CREATE TRIGGER records_count_removed AFTER DELETE ON records "
    "REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION a2m_records_removed()",
    # Row by row, but only for rows whose tier or owner changes: the many updates that
    # change neither (access counts, salience, replacements) cost nothing here.
    "CREATE TRIGGER records_count_moved AFTER UPDATE OF tier, owner ON records FOR EACH ROW "
    "WHEN (OLD.tier IS DISTINCT FROM NEW.tier OR OLD.owner IS DISTINCT FROM NEW.owner) "
    "EXECUTE FUNCTION a2m_record_moved()",
    "INSERT INTO record_counts (owner_key, owner, tier, n) "
    "SELECT coalesce('=' || owner, ''), owner, tier, count(*) FROM records "
    "WHERE tier IS NOT NULL GROUP BY 1, 2, 3",
    # No predicate on docs: an index naming docs would make every count's update non-HOT.
    'CREATE INDEX term_stats_bytes ON term_stats ((lexeme COLLATE "C"))',
]

# Metadata's jsonb copy held each string without its NULs, so "a\u0000b" equalled "ab"
# in a filter; it now holds them as every text column does (U+E000 U+E002, U+E000 itself
# doubled as U+E000 U+E001, which the verbatim text already holds). Only rows whose text
# escapes a NUL (\u0000 after an even run of backslashes) change.
_V3 = [
    r"""UPDATE records SET meta = regexp_replace(metadata, '(?<!\\)((?:\\\\)*)\\u0000',
        '\1' || chr(57344) || chr(57346), 'g')::jsonb
    WHERE strpos(metadata, '\u0000') > 0""",
]

# Version 4 adds the append-only observation audit log (store/_audit.py).


def _place(row: str) -> str:
    """The agent_counts key columns of ``row``: owner_key, owner, agent, framework,
    tier_key, tier."""
    return (
        f"coalesce('=' || {row}.owner, ''), {row}.owner, {pg_agent(row)}, "
        f"{pg_framework(row)}, coalesce('=' || {row}.tier, ''), {row}.tier"
    )


# Version 5 keeps records per (owner, agent, framework, tier) for the memory page's
# agents index (store/_agents.py), with triggers in the writing transaction as
# record_counts are kept; every record counts, with or without a tier. Running it again
# recounts from the records.
_V5 = [
    """CREATE TABLE IF NOT EXISTS agent_counts (
        owner_key text   NOT NULL,
        owner     text,
        agent     text   NOT NULL,
        framework text   NOT NULL,
        tier_key  text   NOT NULL,
        tier      text,
        n         bigint NOT NULL,
        PRIMARY KEY (owner_key, agent, framework, tier_key)
    )""",
    f"""CREATE OR REPLACE FUNCTION a2m_agents_added() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO agent_counts AS c (owner_key, owner, agent, framework, tier_key, tier, n)
        SELECT {_place("a")}, count(*) FROM added AS a GROUP BY 1, 2, 3, 4, 5, 6
        ON CONFLICT (owner_key, agent, framework, tier_key) DO UPDATE SET n = c.n + excluded.n;
        RETURN NULL;
    END $$""",
    f"""CREATE OR REPLACE FUNCTION a2m_agents_removed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE agent_counts AS c SET n = c.n - d.n
        FROM (SELECT {_place("r")}, count(*) FROM removed AS r GROUP BY 1, 2, 3, 4, 5, 6)
            AS d (owner_key, owner, agent, framework, tier_key, tier, n)
        WHERE c.owner_key = d.owner_key AND c.agent = d.agent AND c.framework = d.framework
          AND c.tier_key = d.tier_key;
        RETURN NULL;
    END $$""",
    # One row trigger for both kinds of count (record_counts' own, of schema v2, is
    # replaced): a tier move runs one trigger function per row, not two.
    f"""CREATE OR REPLACE FUNCTION a2m_record_moved() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF OLD.tier IS DISTINCT FROM NEW.tier OR OLD.owner IS DISTINCT FROM NEW.owner THEN
            IF OLD.tier IS NOT NULL THEN
                UPDATE record_counts SET n = n - 1
                WHERE owner_key = coalesce('=' || OLD.owner, '') AND tier = OLD.tier;
            END IF;
            IF NEW.tier IS NOT NULL THEN
                INSERT INTO record_counts AS c (owner_key, owner, tier, n)
                VALUES (coalesce('=' || NEW.owner, ''), NEW.owner, NEW.tier, 1)
                ON CONFLICT (owner_key, tier) DO UPDATE SET n = c.n + 1;
            END IF;
        END IF;
        UPDATE agent_counts SET n = n - 1
        WHERE owner_key = coalesce('=' || OLD.owner, '') AND agent = {pg_agent("OLD")}
          AND framework = {pg_framework("OLD")} AND tier_key = coalesce('=' || OLD.tier, '');
        INSERT INTO agent_counts AS c (owner_key, owner, agent, framework, tier_key, tier, n)
        VALUES ({_place("NEW")}, 1)
        ON CONFLICT (owner_key, agent, framework, tier_key) DO UPDATE SET n = c.n + 1;
        RETURN NULL;
    END $$""",
    "DROP TRIGGER IF EXISTS records_agents_added ON records",
    "DROP TRIGGER IF EXISTS records_agents_removed ON records",
    "DROP TRIGGER IF EXISTS records_count_moved ON records",
    "CREATE TRIGGER records_agents_added AFTER INSERT ON records "
    "REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION a2m_agents_added()",
    "CREATE TRIGGER records_agents_removed AFTER DELETE ON records "
    "REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION a2m_agents_removed()",
    # Row by row, only for rows whose owner, tier, agent or framework changes.
    "CREATE TRIGGER records_count_moved AFTER UPDATE OF tier, owner, meta ON records "
    "FOR EACH ROW WHEN (OLD.tier IS DISTINCT FROM NEW.tier "
    "OR OLD.owner IS DISTINCT FROM NEW.owner "
    f"OR {pg_agent('OLD')} IS DISTINCT FROM {pg_agent('NEW')} "
    f"OR {pg_framework('OLD')} IS DISTINCT FROM {pg_framework('NEW')}) "
    "EXECUTE FUNCTION a2m_record_moved()",
    "DELETE FROM agent_counts",
    "INSERT INTO agent_counts (owner_key, owner, agent, framework, tier_key, tier, n) "
    f"SELECT {_place('r')}, count(*) FROM records AS r GROUP BY 1, 2, 3, 4, 5, 6",
]


def _index_long_words(conn: _Connection) -> None:
    """Index again the records holding a word past PostgreSQL's 2,046-byte lexeme limit,
    which versions before 6 left out of ``body``, so recall never found them by it; they
    now hold it as a digest (:mod:`._pg_text`). The triggers correct the term statistics.

    No character grows past 33 bytes under NFKC and case folding (U+FDFA), so such a word
    comes from a run of at least 63 characters holding no space: only the rows holding one
    are analysed, and only those gaining a digest are written."""
    with conn.cursor(name="a2m_long_words") as candidates:
        candidates.itersize = 500
        candidates.execute(r"SELECT rowid, content FROM records WHERE content ~ '\S{63,}'")
        for rowid, content in candidates:
            body, length = tsvector(str(content))
            if "'long_" in body:
                conn.execute(
                    "UPDATE records SET body = %s::tsvector, body_length = %s WHERE rowid = %s",
                    (body, length, rowid),
                )


_V6: Sequence[_Step] = [_index_long_words]

_MIGRATIONS: dict[int, Sequence[_Step]] = {1: _V1, 2: _V2, 3: _V3, 4: _V4, 5: _V5, 6: _V6}

# Serialises schema creation between processes opening a new database at once.
MIGRATION_LOCK = 0x4132_4D5F_5343_484D  # "A2M_SCHM"


class MissingExtensionError(StoreError):
    """The database lacks the pgvector extension and this role cannot create it."""


def _ensure_vector(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    import psycopg

    row = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
    if row is not None:
        return
    available = conn.execute(
        "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
    ).fetchone()
    if available is None:
        raise MissingExtensionError(
            "the PostgreSQL server has no 'vector' extension (pgvector); install pgvector "
            "on the server, then run CREATE EXTENSION vector in this database"
        )
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.errors.InsufficientPrivilege:
        raise MissingExtensionError(
            "the 'vector' extension (pgvector) is not enabled in this database and this role "
            "may not create it; run CREATE EXTENSION vector as its owner"
        ) from None


def _version(conn: psycopg.Connection[tuple[object, ...]]) -> int:
    exists = conn.execute("SELECT to_regclass('meta') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(str(row[0])) if row else 0


def migrate(conn: psycopg.Connection[tuple[object, ...]], schema: str | None = None) -> int:
    """Create ``schema`` if missing (``None``: the connection's current one), then bring
    it up to :data:`SCHEMA_VERSION`; returns the version found.

    ``conn`` is in autocommit mode; the work runs in one transaction under an advisory
    lock, re-reading the version inside it. The schema is created under that lock too:
    ``CREATE SCHEMA IF NOT EXISTS`` run by two processes at once fails in one of them."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        if schema is not None:
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        _ensure_vector(conn)
        found = _version(conn)
        if found > SCHEMA_VERSION:
            raise RuntimeError(
                f"this database has schema version {found}, newer than this server "
                f"understands ({SCHEMA_VERSION}); upgrade a2m-server"
            )
        for version in range(found + 1, SCHEMA_VERSION + 1):
            for step in _MIGRATIONS[version]:
                if isinstance(step, str):
                    conn.execute(step)
                else:
                    step(conn)
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(version),),
            )
    return found
