"""Recall finds what a person means (issue 16): the analyser's per-script rules, typo
correction, the exact-ranking switch, hybrid fusion, and a store file of release 0.1.0
migrating with its index rebuilt."""

# ruff: noqa: RUF001  (Cyrillic and CJK text is what these tests are about)

from __future__ import annotations

import hashlib
import logging
import math
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from a2m_server import A2MServer, Connection
from a2m_server.store import SQLiteStore
from a2m_server.store.schema import SCHEMA_VERSION
from a2m_server.text import ANALYZER, index_terms, query_terms

# --- the analyser -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stored", "asked"),
    [
        ("The deploy key rotates every 90 days", "when do we rotate it?"),
        ("Maya bought four GPUs", "gpus"),
        ("timestamps are in UTC", "timestamp"),
        ("Café crème à la gare", "cafe creme"),
        ("ÉCOLE", "école"),
        ("Сервер перезагружается каждую ночь", "перезагружается ли сервер"),
        ("серверы базы данных", "сервер"),
        ("ёлка", "елка"),
        ("東京タワーは夜になると赤く光ります", "東京タワー"),
        ("北京的数据库每天备份", "数据库什么时候备份"),
    ],
)
def test_a_question_shares_terms_with_the_text_it_asks_about(stored: str, asked: str) -> None:
    assert set(query_terms(asked)) & set(index_terms(stored))


def test_stop_words_leave_the_query_unless_nothing_else_is_left() -> None:
    assert query_terms("when does the deploy key rotate next?") == [
        "deploy",
        "key",
        "rotat",
        "next",
    ]
    assert query_terms("the who") == ["the", "who"]
    assert query_terms("the deploy key", keep_stop_words=True) == ["the", "deploy", "key"]


def test_cjk_is_indexed_as_characters_and_bigrams_and_asked_as_bigrams() -> None:
    assert index_terms("数据库") == ["数", "据", "库", "数据", "据库"]
    assert query_terms("数据库") == ["数据", "据库"]
    assert query_terms("库") == ["库"]


# --- recall -------------------------------------------------------------------------------


def _rpc(peer: Connection, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return peer.call(method, params)


def _chatter(count: int) -> list[dict[str, Any]]:
    words = ["when", "does", "the", "next", "key", "team", "deploy", "is", "it", "we", "do"]
    return [
        {"content": " ".join(words[(i * 7 + j) % len(words)] for j in range(8)) + f" note {i}"}
        for i in range(count)
    ]


@pytest.fixture
def peer(tmp_path: Path) -> Any:
    with A2MServer(db=tmp_path / "quality.db") as server:
        yield server.connect()


def test_a_question_in_other_words_finds_the_fact_among_chatter(peer: Connection) -> None:
    facts = peer.call(
        "memory/remember",
        {
            "records": [
                {"content": "The production deploy key rotates every 90 days"},
                {"content": "Maya is allergic to peanuts"},
                {"content": "Сервер базы данных перезагружается каждую ночь"},
                {"content": "東京のオフィスは月曜日に休みです"},
                *_chatter(400),
            ]
        },
    )["ids"]
    asked = {
        "when does the deploy key rotate next?": facts[0],
        "what allergies does Maya have?": facts[1],
        "когда перезагружают сервер?": facts[2],
        "東京のオフィスはいつ休み？": facts[3],
        "how often is the deploy key rotatde?": facts[0],  # a typo
    }
    for question, fact in asked.items():
        found = peer.call("memory/recall", {"query": question, "limit": 3})["records"]
        assert found, question
        assert found[0]["id"] == fact, question
        scores = [r["score"] for r in found]
        assert scores == sorted(scores, reverse=True)
        assert all(0 <= s <= 1 for s in scores)


def test_forget_by_query_still_needs_every_word_stop_words_included(peer: Connection) -> None:
    ids = peer.call(
        "memory/remember",
        {"records": [{"content": "the blue door"}, {"content": "a blue door"}]},
    )["ids"]
    assert peer.call("memory/forget", {"query": "the blue door"})["forgotten"] == 1
    left = peer.call("memory/recall", {"query": "blue door"})["records"]
    assert [r["id"] for r in left] == [ids[1]]


def test_the_exact_ranking_is_one_setting_away(tmp_path: Path) -> None:
    """With ``posting_budget=None`` every match is ranked by exact BM25, so an old record
    whose words are all common still wins over newer, weaker matches."""
    records = [{"content": "alpha beta gamma alpha beta gamma"}] + [
        {"content": f"alpha beta gamma and filler words, number {i}"} for i in range(60)
    ]
    for budget, expect_first in ((8, False), (None, True)):
        store = SQLiteStore(tmp_path / f"budget-{budget}.db", posting_budget=budget)
        with A2MServer(store=store) as server:
            peer = server.connect()
            first = peer.call("memory/remember", {"records": records})["ids"][0]
            found = peer.call("memory/recall", {"query": "alpha beta gamma", "limit": 1})
            assert (found["records"][0]["id"] == first) is expect_first
        store.close()


def test_ranking_the_matches_before_the_filter_answers_as_filtering_first(
    tmp_path: Path,
) -> None:
    """The best matches are ranked by the index alone and only then checked against the
    filter; whether few or most of them pass, the answer is the one the filter-first join
    gives, ties (equal BM25, oldest first) included."""
    from a2m_server.store import _fts

    records = [
        {"content": " ".join(["apple"] * (1 + i % 4) + ["pear"] * (i % 3)), "key": f"k/{i % 5}/{i}"}
        for i in range(240)
    ]
    path = tmp_path / "filter.db"
    with A2MServer(db=path) as server:
        server.connect().call("memory/remember", {"records": records})
    conn = sqlite3.connect(path)
    try:
        for where_sql, params in (
            ("1", []),
            ("r.key LIKE ?", ["k/0/%"]),
            ("r.key LIKE ?", ["k/4/1%"]),
            ("r.key = ?", ["k/3/8"]),
            ("r.key = ?", ["nowhere"]),
        ):
            for match in ('"apple"', '"pear"', '"apple" OR "pear"'):
                for count in (1, 10, 37, 300):
                    for selective in (True, False):
                        best = _fts._best(
                            conn, match, where_sql, params, count, selective=selective
                        )
                        assert best == _fts._joined(conn, match, where_sql, params, count)
    finally:
        conn.close()


def test_exact_ranking_is_a_configuration_key_and_a_flag(tmp_path: Path) -> None:
    from a2m_server.cli import _config, _parser
    from a2m_server.config import ServerConfig, config_from_mapping

    assert config_from_mapping({"exact_ranking": True}).exact_ranking
    with A2MServer(ServerConfig(exact_ranking=True), db=tmp_path / "exact.db") as server:
        assert isinstance(server.store, SQLiteStore)
        assert server.store._terms.posting_budget is None
    with A2MServer(db=tmp_path / "budget.db") as server:
        assert isinstance(server.store, SQLiteStore)
        assert server.store._terms.posting_budget is not None
    assert _config(_parser().parse_args(["serve", "--exact-ranking"])).exact_ranking
    assert not _config(_parser().parse_args(["serve"])).exact_ranking


# --- hybrid fusion ------------------------------------------------------------------------

TOPICS = {"weather": 0, "cooking": 1, "finance": 2, "travel": 3}


def embed(text: str) -> list[float]:
    """A deterministic embedder whose neighbours are known: one axis per topic word, as
    long as the text names it often, plus a small hashed component so no two texts are
    equal."""
    vector = [0.0] * 8
    for topic, axis in TOPICS.items():
        vector[axis] = float(text.count(topic))
    digest = hashlib.sha256(text.encode()).digest()
    for i in range(4, 8):
        vector[i] = digest[i] / 2550.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def test_hybrid_recall_fuses_lexical_and_vector_ranks(peer: Connection) -> None:
    contents = [
        "weather forecast: rain, then more rain, weather warnings",  # both, and most
        "umbrella sales rise when the rain starts",  # lexical only: says rain, no topic
        "weather report for the coast",  # vector only: the topic, not the word
        "cooking pasta with garlic",
        "finance quarterly review",
        "travel plans for spring",
    ]
    ids = peer.call(
        "memory/remember",
        {"records": [{"content": c, "embedding": embed(c)} for c in contents]},
    )["ids"]
    query = "rain"
    vector = embed("weather")
    fused = peer.call("memory/recall", {"query": query, "embedding": vector, "limit": 6})["records"]
    order = [r["id"] for r in fused]
    assert order[0] == ids[0]
    # Either signal alone still brings its own best match into the fused list.
    assert {ids[1], ids[2]} <= set(order[:3])
    lexical = peer.call("memory/recall", {"query": query, "limit": 6})["records"]
    assert ids[2] not in [r["id"] for r in lexical]
    by_vector = peer.call("memory/recall", {"embedding": vector, "limit": 2})["records"]
    assert ids[1] not in [r["id"] for r in by_vector]
    scores = [r["score"] for r in fused]
    assert scores == sorted(scores, reverse=True)
    assert all(0 <= s <= 1 for s in scores)


# --- migration ----------------------------------------------------------------------------

V1_FILE = Path(__file__).parent / "data" / "store-v1.db"


def test_a_store_file_of_release_0_1_0_opens_migrated_with_nothing_lost(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "old.db"
    shutil.copy(V1_FILE, db)
    before = _snapshot(db)
    assert before["schema_version"] == "1"
    with caplog.at_level(logging.INFO, logger="a2m_server.store"):
        server = A2MServer(db=db)
    assert any("rebuilding the full-text index" in m for m in caplog.messages)
    assert any("7 of 7 records" in m for m in caplog.messages)
    with server:
        peer = server.connect()
        found = peer.call("memory/recall", {"query": "when does the deploy key rotate?"})
        assert found["records"][0]["key"] == "ops/deploy-key"
        cyrillic = peer.call("memory/recall", {"query": "перезагрузка сервера", "owner": "bob"})
        assert "перезагружается" in cyrillic["records"][0]["content"]
        assert peer.call("memory/recall", {"query": "gpu"})["records"][0]["content"].startswith(
            "We bought four new GPUs"
        )
        vectors = peer.call("memory/recall", {"embedding": [0.3, 0.2, 0.1], "limit": 1})
        assert "timestamps" in vectors["records"][0]["content"]
        assert peer.call("memory/recall", {"query": "forget me"})["records"] == []
    after = _snapshot(db)
    assert after["schema_version"] == str(SCHEMA_VERSION)
    assert after["analyzer"] == ANALYZER
    for table in ("records", "record_vectors", "events", "write_ids"):
        assert after[table] == before[table], table
    # A second opening finds the index current and rebuilds nothing.
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="a2m_server.store"):
        A2MServer(db=db).close()
    assert not any("rebuilding" in m for m in caplog.messages)


def _snapshot(db: Path) -> dict[str, Any]:
    conn = sqlite3.connect(db)
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        out: dict[str, Any] = {
            "schema_version": meta.get("schema_version"),
            "analyzer": meta.get("analyzer"),
        }
        # Everything but the access counts, which the recalls above rightly moved.
        out["records"] = conn.execute(
            "SELECT rowid, id, content, created_at, updated_at, role, metadata, grp, tier, "
            "salience, owner, session, key, revision, dims, uri, media_type, expires_at "
            "FROM records ORDER BY rowid"
        ).fetchall()
        for table in ("record_vectors", "events", "write_ids"):
            out[table] = conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
    finally:
        conn.close()
    return out


@pytest.mark.parametrize(
    ("query", "left"),
    [
        ("the cat", ["cat"]),  # English
        ("le chat", ["chat"]),  # French
        ("el gato", ["gato"]),  # Spanish
        ("der Hund", ["hund"]),  # German
        ("o gato", ["gato"]),  # Portuguese
        ("и кошка", ["кошк"]),  # Russian
    ],
)
def test_stop_words_of_each_listed_language_leave_the_query(query: str, left: list[str]) -> None:
    """docs/ranking.md: queries drop the stop words of English, French, Spanish, German,
    Portuguese and Russian."""
    assert query_terms(query) == left
