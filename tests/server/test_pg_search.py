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


def test_a_version_1_schema_gets_kept_counts_on_opening_and_describe_reads_them(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.fresh_url()
    plain = url.replace("schema=", "options=-csearch_path%3D")
    with A2MServer(db=url) as server:
        peer = server.connect()
        for owner in ("alice", "bob", None):
            who = {} if owner is None else {"owner": owner}
            records = [{"content": f"{owner} {n}", "tier": ("episodic", "semantic")[n % 2]}
                       for n in range(5)]  # fmt: skip
            peer.call("memory/remember", {"records": records, **who})
    with psycopg.connect(plain, autocommit=True) as conn:  # back to schema version 1
        conn.execute("DROP TABLE record_counts")
        conn.execute("DROP INDEX term_stats_bytes")
        for trigger in ("records_count_added", "records_count_removed", "records_count_moved"):
            conn.execute(f"DROP TRIGGER {trigger} ON records")  # type: ignore[arg-type]
        for function in ("a2m_records_added", "a2m_records_removed", "a2m_record_moved"):
            conn.execute(f"DROP FUNCTION {function}")  # type: ignore[arg-type]
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    with A2MServer(db=url) as server:
        peer = server.connect()
        tiers = {t["name"]: t["count"] for t in peer.call("memory/describe")["tiers"]}
        assert (tiers["episodic"], tiers["semantic"]) == (9, 6)
        alice = peer.call("memory/describe", {"owner": "alice"})["tiers"]
        # alice's own episodic records and the shared ones: the semantic tier is shared
        assert {t["name"]: t["count"] for t in alice if t["count"]} == {
            "episodic": 6,
            "semantic": 6,
        }
        with psycopg.connect(plain, autocommit=True) as conn:
            conn.execute("UPDATE record_counts SET n = n + 100 WHERE tier = 'episodic'")
        tiers = {t["name"]: t["count"] for t in peer.call("memory/describe")["tiers"]}
        assert tiers["episodic"] == 9 + 300  # read from the kept counts, not recounted


def test_a_typo_is_corrected_to_a_term_some_record_still_holds(
    postgres_server: PostgresServer,
) -> None:
    with A2MServer(db=postgres_server.fresh_url()) as server:
        peer = server.connect()
        gone, kept = peer.call(
            "memory/remember", {"records": [{"content": "zwbrtmk"}, {"content": "zwbrtnk"}]}
        )["ids"]
        # Both are one edit from the typo; the first sorts first, so it wins while held.
        assert [r["id"] for r in peer.call("memory/recall", {"query": "zwbrtqk"})["records"]] == [
            gone
        ]
        peer.call("memory/forget", {"ids": [gone]})  # its term's count drops to zero
        hits = peer.call("memory/recall", {"query": "zwbrtqk"})["records"]
        assert [r["id"] for r in hits] == [kept]


@pytest.fixture(autouse=True)
def _postgres_only(store_backend: str) -> None:
    assert store_backend == "postgres"
