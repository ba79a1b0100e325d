"""§3.7: ``dimensions`` is null until a vector fixes it, and again once no record carries
a vector: a store whose vectors are all gone (forgotten, reset) takes a new width, on
SQLite and PostgreSQL alike; while any vector remains, another width stays refused."""

from __future__ import annotations

import pytest
from spec_support import PeerFactory, rpc_error, timeline_ids


def _dimensions(peer: object) -> object:
    return peer.describe()["embeddings"]["dimensions"]  # type: ignore[attr-defined]


@pytest.mark.spec("3.7")
def test_3_7_a_store_without_vectors_takes_a_new_width(make_peer: PeerFactory) -> None:
    peer = make_peer("in-process")
    first, second = peer.remember(
        {"content": "three wide", "embedding": [1.0, 0.0, 0.0]},
        {"content": "also three", "embedding": [0.0, 1.0, 0.0]},
    )
    peer.remember({"content": "no vector at all"})
    assert _dimensions(peer) == 3
    peer.call("memory/forget", {"ids": [first]})
    error = rpc_error(
        peer, "memory/remember", {"records": [{"content": "x", "embedding": [1.0] * 5}]}
    )
    assert error.data == {"expected": 3, "got": 5, "index": 0}  # one vector is left
    peer.call("memory/forget", {"ids": [second]})
    assert _dimensions(peer) is None  # a record without a vector fixes nothing
    # a query vector of any width finds nothing to compare with, and is no error
    assert [r["content"] for r in peer.recall(embedding=[1.0] * 5, query="vector")] == [
        "no vector at all"
    ]
    (wide,) = peer.remember({"content": "five wide", "embedding": [0.0, 0.0, 0.0, 0.0, 1.0]})
    assert _dimensions(peer) == 5
    nearest = peer.recall(embedding=[0.0, 0.0, 0.0, 0.0, 1.0], limit=1)
    assert [r["id"] for r in nearest] == [wide]
    assert wide in timeline_ids(peer)
    error = rpc_error(
        peer, "memory/remember", {"records": [{"content": "x", "embedding": [1.0] * 3}]}
    )
    assert error.data == {"expected": 5, "got": 3, "index": 0}
