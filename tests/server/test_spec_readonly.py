"""§2.1 Read-only servers: remember, forget and summarize answer READ_ONLY (-32004),
consistently; describe, recall and timeline work normally over a pre-existing corpus."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from spec_support import Peer, PeerFactory, rpc_error, uid

from a2m_server import A2MServer, ServerConfig

TAG = uid("corpus")
SESSION = uid("session")
KEY = f"{uid('ro')}/fact"


@dataclasses.dataclass
class Corpus:
    peer: Peer
    ids: list[str]


def _seed(path: Path) -> list[str]:
    """Load a corpus with a writable server, as an ingestion pipeline would."""
    with A2MServer(db=str(path)) as server:
        connection = server.connect()
        result = connection.call(
            "memory/remember",
            {
                "records": [
                    {"content": "the deploy key rotates every 90 days", "metadata": {"tag": TAG}},
                    {"content": "backups run nightly at two", "metadata": {"tag": TAG}},
                    {"content": "the fact at a key", "key": KEY, "metadata": {"tag": TAG}},
                ],
                "session": SESSION,
            },
        )
        connection.close()
    ids: list[str] = result["ids"]
    return ids


@pytest.fixture(scope="module")
def corpus(
    binding: str, module_peer_factory: PeerFactory, tmp_path_factory: pytest.TempPathFactory
) -> Corpus:
    """A read-only server over a file loaded beforehand: by config in-process and over
    HTTP, by ``--read-only`` over stdio."""
    path = tmp_path_factory.mktemp("read-only") / "corpus.db"
    ids = _seed(path)
    if binding == "stdio":
        peer = module_peer_factory(binding, db=path, cli_args=("--read-only",))
    else:
        peer = module_peer_factory(binding, ServerConfig(read_only=True), db=path)
    return Corpus(peer, ids)


def _state(peer: Peer) -> list[dict[str, Any]]:
    records = peer.timeline(where={"tag": TAG})
    return [
        {k: v for k, v in r.items() if k not in ("accessed_at", "access_count")} for r in records
    ]


@pytest.mark.spec("2.1")
@pytest.mark.parametrize(
    "params",
    [
        {"records": [{"content": "a new record"}]},
        {"records": [{"content": "one"}, {"content": "two", "role": "user"}]},
        {"records": [{"content": "to an occupied key", "key": KEY}]},
        {"records": [{"content": "in a session"}], "session": "s"},
    ],
    ids=["one", "batch", "key", "session"],
)
def test_2_1_remember_is_read_only_32004(corpus: Corpus, params: dict[str, Any]) -> None:
    before = _state(corpus.peer)
    assert rpc_error(corpus.peer, "memory/remember", params).code == -32004
    assert _state(corpus.peer) == before


@pytest.mark.spec("2.1")
def test_2_1_remember_retrying_an_existing_id_is_still_read_only(corpus: Corpus) -> None:
    """Refusal is consistent (§2.1): even a write that would change nothing is refused."""
    params = {"records": [{"id": corpus.ids[0], "content": "the deploy key rotates every 90 days"}]}
    assert rpc_error(corpus.peer, "memory/remember", params).code == -32004


@pytest.mark.spec("2.1")
@pytest.mark.parametrize(
    "params",
    [
        {},
        {"ids": ["whatever"]},
        {"where": {"tag": TAG}},
        {"query": "deploy"},
        {"tier": "working"},
        {"key_prefix": KEY},
    ],
    ids=["no-selector", "ids", "where", "query", "tier", "key_prefix"],
)
def test_2_1_forget_is_read_only_32004_even_without_a_selector(
    corpus: Corpus, params: dict[str, Any]
) -> None:
    """Appendix B: forget with no selector is -32602 *unless the server is read-only*."""
    before = _state(corpus.peer)
    assert rpc_error(corpus.peer, "memory/forget", params).code == -32004
    assert _state(corpus.peer) == before


@pytest.mark.spec("4.15")
def test_4_15_summarize_on_a_read_only_server_is_32004(corpus: Corpus) -> None:
    before = _state(corpus.peer)
    for params in ({"ids": corpus.ids}, {"where": {"tag": TAG}, "key": f"{KEY}-summary"}):
        assert rpc_error(corpus.peer, "memory/summarize", params).code == -32004
    assert _state(corpus.peer) == before


@pytest.mark.spec("2.1")
def test_2_1_describe_recall_and_timeline_work_normally(corpus: Corpus) -> None:
    described = corpus.peer.describe()
    assert described["protocol"] == "a2m/0.1"
    assert {"memory/remember", "memory/forget"} <= set(described["methods"])
    timeline = corpus.peer.timeline(where={"tag": TAG})
    assert [r["id"] for r in timeline] == corpus.ids
    recalled = corpus.peer.recall(query="deploy key rotates", where={"tag": TAG})
    assert recalled[0]["id"] == corpus.ids[0]
    newest_first = corpus.peer.recall(where={"tag": TAG})
    assert {r["id"] for r in newest_first} == set(corpus.ids)


@pytest.mark.spec("2.1")
def test_2_1_other_reads_work_on_a_read_only_server(corpus: Corpus) -> None:
    record = corpus.peer.call("memory/fetch", {"key": KEY})["record"]
    assert record is not None
    assert record["id"] == corpus.ids[2]
    sessions = corpus.peer.call("memory/session/list")["sessions"]
    assert {
        k: v
        for k, v in next(s for s in sessions if s["session"] == SESSION).items()
        if k in ("session", "records")
    } == {"session": SESSION, "records": 3}
    cursor = corpus.peer.events_head()
    assert corpus.peer.call("memory/events", {"cursor": cursor})["events"] == []
