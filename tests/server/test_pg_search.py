"""PostgreSQL's term statistics for BM25 stay exact through inserts, key replacements,
forgets and expiry (issue 15: lexical ranking as on SQLite, whose FTS5 counts exactly)."""

from __future__ import annotations

import time

import psycopg
import pytest

from a2m_server import A2MServer
from a2m_server.text import index_terms
from store_backends import PostgresServer


def _counts(url: str) -> tuple[dict[str, int], dict[str, int], tuple[int, int], tuple[int, int]]:
    plain = url.replace("schema=", "options=-csearch_path%3D")
    with psycopg.connect(plain) as conn:
        kept = dict(conn.execute("SELECT lexeme, docs FROM term_stats WHERE docs > 0").fetchall())
        actual = dict(
            conn.execute(
                "SELECT lexeme, count(*) FROM records, unnest(tsvector_to_array(body)) AS lexeme "
                "GROUP BY lexeme"
            ).fetchall()
        )
        corpus = conn.execute("SELECT records, tokens FROM corpus_stats").fetchone()
        recount = conn.execute(
            "SELECT count(*), coalesce(sum(body_length), 0) FROM records"
        ).fetchone()
    assert corpus is not None
    assert recount is not None
    return kept, actual, (int(corpus[0]), int(corpus[1])), (int(recount[0]), int(recount[1]))


def test_term_statistics_follow_every_kind_of_write(postgres_server: PostgresServer) -> None:
    url = postgres_server.fresh_url()
    with A2MServer(db=url) as server:
        peer = server.connect()
        (doomed, *_) = peer.call(
            "memory/remember",
            {
                "records": [
                    {"content": "apples and pears, apples again"},
                    {"content": "Zürich café", "key": "place"},
                    {"content": "東京タワー"},
                    {"content": "brief", "metadata": {"ttl_s": 1}},
                ]
            },
        )["ids"]
        peer.call("memory/remember", {"records": [{"content": "Genève now", "key": "place"}]})
        peer.call("memory/forget", {"ids": [doomed]})
        time.sleep(1.1)
        peer.call("memory/remember", {"records": [{"content": "after expiry"}]})  # purges
        kept, actual, corpus, recount = _counts(url)
        assert kept == actual
        assert corpus == recount
        (zurich,) = index_terms("Zürich")
        (geneve,) = index_terms("Genève")
        assert zurich not in kept
        assert kept[geneve] == 1
        hits = peer.call("memory/recall", {"query": "geneve"})["records"]
        assert [r["content"] for r in hits] == ["Genève now"]


@pytest.fixture(autouse=True)
def _postgres_only(store_backend: str) -> None:
    assert store_backend == "postgres"
