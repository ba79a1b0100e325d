"""The server-side embedder (issue 31) on both stores: selection and describe, one
embedder call per write batch, caller vectors kept verbatim, text recall ranked hybrid,
the store tied to its model, back-fill of an existing store (interrupted, then resumed),
and an embedder failing on a write."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import embed_support
import pytest

from a2m_server import A2MServer, ServerConfig
from a2m_server.embedders import load_embedder, service
from a2m_server.errors import ProtocolError
from a2m_types import ErrorCode

TOPICS = "embed_support:topics"


def config(embedder: str | None = TOPICS, **options: Any) -> ServerConfig:
    return ServerConfig(embedder=embedder, **options)


def wait_until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


def missing(server: A2MServer) -> int:
    with server.store.reading() as reader:
        return len(reader.missing_vectors(0, 1_000_000))


@pytest.fixture(autouse=True)
def _fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service, "_RETRY_S", 0.05)


@pytest.fixture
def server() -> Iterator[A2MServer]:
    with A2MServer(config()) as running:
        yield running


# --- selection and describe ---------------------------------------------------------------


def test_no_embedder_by_default_and_describe_says_so() -> None:
    with A2MServer() as plain:
        described = plain.connect().call("memory/describe")["embeddings"]
        assert plain.protocol.embedding is None
    assert described["model"] is None
    assert described["dimensions"] is None


def test_describe_declares_the_embedders_model_and_width_before_any_vector() -> None:
    with A2MServer(config("wordllama")) as server:
        described = server.connect().call("memory/describe")["embeddings"]
    assert described["model"] == "wordllama/l2_supercat-256"
    assert described["dimensions"] == 256


def test_an_unknown_embedder_is_refused_naming_what_is_offered() -> None:
    with pytest.raises(
        ValueError, match=r"unknown embedder 'nope': offered are endpoint, wordllama"
    ):
        A2MServer(config("nope"))


def test_an_entry_point_selects_an_embedder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dist = tmp_path / "team_embedders-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: team-embedders\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[a2m_server.embedders]\nteam-topics = embed_support:wide_topics\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    embedder = load_embedder("team-topics")
    assert (embedder.model, embedder.dimensions) == ("topics-12", 12)
    with A2MServer(config("team-topics")) as server:
        assert server.connect().call("memory/describe")["embeddings"]["model"] == "topics-12"


def test_the_cli_selects_the_embedder() -> None:
    messages = b"".join(
        json.dumps({"jsonrpc": "2.0", "id": i, "method": m, "params": p}).encode() + b"\n"
        for i, (m, p) in enumerate(
            [
                ("memory/remember", {"records": [{"content": "a kitten sleeps on the sofa"}]}),
                ("memory/recall", {"query": "cat", "embeddings": True}),
                ("memory/describe", {}),
            ]
        )
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "a2m_server",
            "stdio",
            "--db",
            ":memory:",
            "--embedder",
            "wordllama",
        ],
        input=messages,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    _, recalled, described = [json.loads(line) for line in done.stdout.splitlines()]
    assert described["result"]["embeddings"]["model"] == "wordllama/l2_supercat-256"
    (record,) = recalled["result"]["records"]
    assert len(record["embedding"]) == 256
    refused = subprocess.run(
        [sys.executable, "-m", "a2m_server", "stdio", "--db", ":memory:", "--embedder", "nope"],
        capture_output=True,
        timeout=60,
    )
    assert refused.returncode == 2
    assert b"unknown embedder 'nope'" in refused.stderr


# --- writes and recall --------------------------------------------------------------------


def test_a_batch_is_embedded_in_one_call_and_caller_vectors_stay_verbatim(
    server: A2MServer,
) -> None:
    peer = server.connect()
    embedder = embed_support.latest()
    own = [0.1, -0.2, 0.3, 0.0, 1e-7, 0.5, -0.25, 0.125]
    records = [
        {"content": "rain all week"},
        {"content": "pasta with garlic", "embedding": own},
        {"content": "the invoice is due"},
        {"content": "flight at nine"},
    ]
    before = len(embedder.calls)
    ids = peer.call("memory/remember", {"records": records})["ids"]
    assert embedder.calls[before:] == [["rain all week", "the invoice is due", "flight at nine"]]
    fetched = peer.call("memory/recall", {"limit": 10, "embeddings": True})["records"]
    by_id = {r["id"]: r["embedding"] for r in fetched}
    assert by_id[ids[1]] == own
    for index in (0, 2, 3):
        assert by_id[ids[index]] == pytest.approx(embed_support.vector(records[index]["content"]))


def test_a_caller_vector_of_another_width_is_refused_naming_the_model(server: A2MServer) -> None:
    peer = server.connect()
    # On an empty store too: the model's width is the store's.
    with pytest.raises(ProtocolError) as caught:
        peer.call("memory/remember", {"records": [{"content": "x", "embedding": [1.0, 0.0]}]})
    assert caught.value.code == ErrorCode.EMBEDDING_MISMATCH
    assert "topics-8" in str(caught.value)
    assert caught.value.data["model"] == "topics-8"
    peer.call("memory/remember", {"records": [{"content": "rain"}]})
    with pytest.raises(ProtocolError, match="topics-8") as recalled:
        peer.call("memory/recall", {"query": "x", "embedding": [1.0, 0.0, 0.0]})
    assert recalled.value.code == ErrorCode.EMBEDDING_MISMATCH
    assert [r["content"] for r in peer.call("memory/recall", {"limit": 5})["records"]] == ["rain"]


def test_a_text_recall_is_embedded_and_ranked_hybrid(server: A2MServer) -> None:
    peer = server.connect()
    contents = [
        "rain tomorrow, then more rain",  # the word and the topic
        "storm warning for the coast",  # the topic only: no lexical match
        "garlic pasta recipe",
        "the bank statement arrived",
    ]
    ids = peer.call("memory/remember", {"records": [{"content": c} for c in contents]})["ids"]
    found = peer.call("memory/recall", {"query": "rain", "limit": 4})["records"]
    order = [r["id"] for r in found]
    assert order[:2] == ids[:2]
    scores = [r["score"] for r in found]
    assert scores == sorted(scores, reverse=True)
    assert all(0 <= s <= 1 for s in scores)
    with A2MServer() as plain:  # the same records, lexical only
        plain_peer = plain.connect()
        plain_peer.call("memory/remember", {"records": [{"content": c} for c in contents]})
        lexical = plain_peer.call("memory/recall", {"query": "rain", "limit": 4})["records"]
    assert [r["content"] for r in lexical] == [contents[0]]
    nearest = peer.call("memory/recall", {"query": "forecast", "rank": "similarity", "limit": 2})
    assert {r["id"] for r in nearest["records"]} == set(ids[:2])


def test_a_failing_embedder_fails_the_write_naming_it_and_writes_nothing(
    server: A2MServer,
) -> None:
    peer = server.connect()
    embed_support.latest().fail = "connection refused"
    with pytest.raises(ProtocolError) as caught:
        peer.call("memory/remember", {"records": [{"content": "a"}, {"content": "b"}]})
    assert caught.value.code == ErrorCode.INTERNAL_ERROR
    assert "embedder 'topics'" in str(caught.value)
    assert "nothing was written" in str(caught.value)
    assert caught.value.data["embedder"] == "topics"
    assert peer.call("memory/recall", {"limit": 10})["records"] == []
    # A query the embedder cannot embed is still answered, lexically.
    embed_support.latest().fail = None
    peer.call("memory/remember", {"records": [{"content": "rain again"}]})
    embed_support.latest().fail = "timed out"
    found = peer.call("memory/recall", {"query": "rain"})["records"]
    assert [r["content"] for r in found] == ["rain again"]


def test_lexical_failures_store_the_record_and_back_fill_it_later() -> None:
    with A2MServer(config(embed_failures="lexical")) as server:
        peer = server.connect()
        embedder = embed_support.latest()
        embedder.fail = "down"
        (record_id,) = peer.call("memory/remember", {"records": [{"content": "storm at sea"}]})[
            "ids"
        ]
        assert peer.call("memory/recall", {"query": "storm"})["records"][0]["id"] == record_id
        embedder.fail = None
        wait_until(lambda: missing(server) == 0)
        stored = peer.call("memory/recall", {"query": "storm", "embeddings": True})["records"][0]
    assert stored["embedding"] == pytest.approx(embed_support.vector("storm at sea"))


# --- the store's model, back-fill ---------------------------------------------------------


def test_the_store_keeps_its_model_and_refuses_another_unless_re_embedding(
    tmp_path: Path,
) -> None:
    db = tmp_path / "tied.db"
    with A2MServer(config(), db=db) as server:
        server.connect().call("memory/remember", {"records": [{"content": "rain"}]})
        with server.store.reading() as reader:
            assert reader.meta_value(service.MODEL_KEY) == "topics-8"
    with pytest.raises(ValueError, match=r"made by model 'topics-8'.*'topics-12'.*--re-embed"):
        A2MServer(config("embed_support:wide_topics"), db=db)
    with A2MServer(db=db) as plain:  # no embedder: the vectors stay
        assert plain.connect().call("memory/describe")["embeddings"]["dimensions"] == 8
    with A2MServer(config("embed_support:wide_topics", re_embed=True), db=db) as server:
        wait_until(lambda: missing(server) == 0)
        peer = server.connect()
        described = peer.call("memory/describe")["embeddings"]
        (record,) = peer.call("memory/recall", {"query": "rain", "embeddings": True})["records"]
    assert (described["model"], described["dimensions"]) == ("topics-12", 12)
    assert len(record["embedding"]) == 12


def test_back_fill_of_an_existing_store_is_interrupted_and_resumed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(service, "BACKFILL_BATCH", 25)
    db = tmp_path / "old.db"
    words = ["rain", "pasta", "invoice", "flight"]
    with A2MServer(db=db) as plain:
        plain.connect().call(
            "memory/remember",
            {"records": [{"content": f"note {i} about {words[i % 4]}"} for i in range(120)]},
        )
    caplog.set_level(logging.INFO, logger="a2m_server.embed")
    monkeypatch.setattr(embed_support, "TopicEmbedder", _FailingAfterTwo)
    with A2MServer(config(), db=db) as server:
        embedder = embed_support.latest()
        wait_until(lambda: len(embedder.calls) >= 4)  # two batches done, then failing
        assert missing(server) == 70
        # Meanwhile recall is whole: lexical for the records without vectors.
        peer = server.connect()
        found = peer.call("memory/recall", {"query": "note 119", "limit": 3})["records"]
        assert found[0]["content"] == "note 119 about flight"
        # (the query cannot be embedded now: it ranks lexically)
        rain = peer.call("memory/recall", {"query": "rain", "limit": 200})["records"]
        assert len(rain) == 30
    assert any("back-fill: 50 records embedded" in m for m in caplog.messages)
    assert any("back-fill paused" in m for m in caplog.messages)
    monkeypatch.undo()
    monkeypatch.setattr(service, "BACKFILL_BATCH", 25)
    monkeypatch.setattr(service, "_RETRY_S", 0.05)
    with A2MServer(config(), db=db) as server:
        embedder = embed_support.latest()
        wait_until(lambda: missing(server) == 0)
        assert [len(batch) for batch in embedder.calls] == [25, 25, 20]  # only what was left
        found = server.connect().call("memory/recall", {"query": "storm", "limit": 30})
    assert len(found["records"]) == 30  # every "rain" note, by its vector alone
    assert all("rain" in r["content"] for r in found["records"])
    assert any("back-fill done: 70 records embedded" in m for m in caplog.messages)


class _FailingAfterTwo(embed_support.TopicEmbedder):
    def __init__(self, model: str = "topics-8", dims: int = 8) -> None:
        super().__init__(model, dims)
        self.fail_after = 2


# --- the other ways in --------------------------------------------------------------------


def test_rest_entries_and_summaries_are_embedded_and_a_text_query_ranks_by_meaning(
    server: A2MServer,
) -> None:
    sys.path.insert(0, str(Path(__file__).parents[1] / "rest"))
    from rest_support import Rest

    from a2m_testing.servers import serve_http

    with serve_http(server) as url:
        rest = Rest(url)
        try:
            stored = rest.write("team", "weather", "semantic", "storm over the hills")
            rest.write("team", "food", "semantic", "garlic pasta tonight")
            assert stored["embedding"] == pytest.approx(
                embed_support.vector("storm over the hills")
            )
            response = rest.query("team", {"query": "rain", "top_k": 2})
        finally:
            rest.close()
    assert response.status_code == 200, response.text
    assert [r["entry"]["key"] for r in response.json()] == ["weather", "food"]
    peer = server.connect()
    (summary,) = peer.call("memory/summarize", {"query": "storm"})["records"]
    (record,) = peer.call(
        "memory/timeline", {"where": {"id": [summary["id"]]}, "embeddings": True}
    )["records"]
    assert record["embedding"] == pytest.approx(embed_support.vector(record["content"]))


def test_a_read_only_server_embeds_queries_and_checks_the_model(tmp_path: Path) -> None:
    db = tmp_path / "ro.db"
    with A2MServer(config(), db=db) as server:
        server.connect().call("memory/remember", {"records": [{"content": "rain at noon"}]})
    with A2MServer(config(read_only=True), db=db) as server:
        found = server.connect().call("memory/recall", {"query": "storm"})["records"]
        assert [r["content"] for r in found] == ["rain at noon"]
    with pytest.raises(ValueError, match="read-only server cannot re-embed"):
        A2MServer(config("embed_support:wide_topics", read_only=True), db=db)


@pytest.mark.sqlite_only("runs the CLI on a store file")
def test_export_and_import_ignore_the_configured_embedder(tmp_path: Path) -> None:
    db = tmp_path / "moved.db"
    with A2MServer(config(), db=db) as server:
        server.connect().call("memory/remember", {"records": [{"content": "rain"}]})
    settings = tmp_path / "a2m.toml"
    settings.write_text('embedder = "embed_support:wide_topics"\n', encoding="utf-8")
    command = [sys.executable, "-m", "a2m_server"]
    exported = subprocess.run(
        [*command, "export", "--db", str(db), "--config", str(settings)],
        capture_output=True,
        timeout=60,
    )
    assert exported.returncode == 0, exported.stderr
    dump = tmp_path / "dump.jsonl"
    dump.write_bytes(exported.stdout)
    imported = subprocess.run(
        [
            *command,
            "import",
            str(dump),
            "--db",
            str(tmp_path / "new.db"),
            "--config",
            str(settings),
        ],
        capture_output=True,
        timeout=60,
    )
    assert imported.returncode == 0, imported.stderr
