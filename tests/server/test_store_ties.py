"""How equal scores are ordered, as docs/ranking.md and docs/adapters.md state it: a
recall sorts by score, then newest first, then by id; ``rank: "similarity"`` puts ties
newer first too. On both stores."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from a2m_server import A2MServer


@pytest.fixture
def connection(store_backend: str) -> Iterator[Any]:
    with A2MServer() as server:
        yield server.connect()


def _one_by_one(connection: Any, records: list[dict[str, Any]]) -> list[str]:
    """Written in order, each in a later millisecond than the one before."""
    ids = []
    for record in records:
        ids += connection.call("memory/remember", {"records": [record]})["ids"]
        time.sleep(0.005)
    return ids


def test_equal_scores_come_newest_first(connection: Any) -> None:
    ids = _one_by_one(connection, [{"content": "the quokka smiles"} for _ in range(4)])
    found = connection.call("memory/recall", {"query": "quokka", "limit": 10})["records"]
    scores = [record["score"] for record in found]
    # Equal text: the scores tie, or differ only by the blend's recency share, which a
    # slow machine can stretch past the 6th decimal; either way the newest comes first.
    assert scores == sorted(scores, reverse=True), found
    assert max(scores) - min(scores) < 0.001, found
    assert [record["id"] for record in found] == ids[::-1]


def test_equal_similarities_come_newest_first(connection: Any) -> None:
    records = [{"content": f"vector {n}", "embedding": [0.6, 0.8]} for n in range(3)]
    ids = _one_by_one(connection, records)
    found = connection.call(
        "memory/recall", {"embedding": [0.6, 0.8], "rank": "similarity", "limit": 10}
    )["records"]
    assert [record["score"] for record in found] == [1.0] * 3
    assert [record["id"] for record in found] == ids[::-1]
