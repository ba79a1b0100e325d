"""Words past PostgreSQL's 2,046-byte lexeme limit in a store of schema version 5, which
left them out of the full-text index: opening the store indexes those records again
(as digests of the words), so recall finds them by the word, as it finds records written
since, and the term statistics stay exact."""

from __future__ import annotations

from typing import Any

import psycopg

from a2m_server import A2MServer
from a2m_server.store._pg_schema import SCHEMA_VERSION
from a2m_server.store._pg_text import tsvector
from a2m_server.text import index_terms
from store_backends import PostgresServer

LONG = "q" * 2100
WIDE = "ж" * 1100  # 2,200 bytes in UTF-8, analysed as itself
CONTENTS = {
    "long": f"prefix {LONG} middle",
    "wide": f"{WIDE} suffix",
    "url": "see https://example.org/" + "a" * 80 + " for more",  # a long run, short words
    "plain": "unrelated words",
}


def _version_5_body(content: str) -> tuple[str, int]:
    """The index of ``content`` as schema version 5 wrote it: without its long words."""
    kept = (w for w in content.split() if all(len(t.encode()) <= 2046 for t in index_terms(w)))
    return tsvector(" ".join(kept))


def _statistics(conn: psycopg.Connection[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT lexeme, docs FROM term_stats WHERE docs <> 0 "
        "UNION ALL SELECT 'corpus', records * 1000000 + tokens FROM corpus_stats ORDER BY 1"
    ).fetchall()


def test_a_version_5_store_indexes_its_long_words_again(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.fresh_url()
    with A2MServer(db=url) as server, server.connect() as peer:
        records = [{"content": content, "key": key} for key, content in CONTENTS.items()]
        peer.call("memory/remember", {"records": records})
    with postgres_server.sql(url) as conn:
        current = {
            key: conn.execute(
                "SELECT body::text, body_length FROM records WHERE key = %s", (key,)
            ).fetchone()
            for key in CONTENTS
        }
        expected_statistics = _statistics(conn)
        with conn.transaction():
            for key in ("long", "wide"):
                conn.execute(
                    "UPDATE records SET body = %s::tsvector, body_length = %s WHERE key = %s",
                    (*_version_5_body(CONTENTS[key]), key),
                )
            conn.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
        assert _statistics(conn) != expected_statistics  # the triggers counted the old bodies
        missing = conn.execute(
            "SELECT count(*) FROM records WHERE body::text LIKE '%long_%'"
        ).fetchone()
        assert missing == (0,)

    with A2MServer(db=url) as server, server.connect() as peer:
        for word, key in ((LONG, "long"), (WIDE, "wide")):
            found = peer.call("memory/recall", {"query": word, "limit": 5})["records"]
            assert [r["key"] for r in found] == [key]
        with postgres_server.sql(url) as conn:
            version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            assert version == (str(SCHEMA_VERSION),)
            for key in CONTENTS:  # as written since the fix, and nothing else rewritten
                row = conn.execute(
                    "SELECT body::text, body_length FROM records WHERE key = %s", (key,)
                ).fetchone()
                assert row == current[key]
            assert _statistics(conn) == expected_statistics
        assert peer.call("memory/forget", {"query": LONG})["forgotten"] == 1
        left = {r["key"] for r in peer.call("memory/timeline", {})["records"]}
        assert left == {"wide", "url", "plain"}
