"""§3.7 embeddings: stored verbatim, the first vector fixes the width, a different width is
EMBEDDING_MISMATCH with nothing written, describe reports dimensions and metric, vectors
only when asked, nearest first under the configured metric, blended with lexical rank."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from spec_support import Peer, PeerFactory, rpc_error, timeline_ids, uid

from a2m_server import ServerConfig

WIDTH = 4


@pytest.fixture(scope="module")
def vectors(binding: str, module_peer_factory: PeerFactory) -> Peer:
    """A store of this module's own whose vectors are ``WIDTH`` wide."""
    peer = module_peer_factory(binding)
    peer.remember({"content": "fixes the width", "embedding": [1.0] * WIDTH})
    return peer


def _unit(i: int, width: int = WIDTH) -> list[float]:
    return [1.0 if j == i else 0.0 for j in range(width)]


@pytest.mark.spec("3.7")
def test_3_7_vectors_are_stored_verbatim(vectors: Peer) -> None:
    """§3.7: MUST store what it is given verbatim: every double comes back bit for bit."""
    key = f"{uid('vec')}/k"
    given = [0.1234567890123456789, 1 / 3, -2.5e-300, 123456789.98765432]
    vectors.remember({"content": "precise", "key": key, "embedding": given})
    expected = json.loads(json.dumps(given))  # the doubles the wire carries
    fetched = vectors.call("memory/fetch", {"key": key, "embeddings": True})["record"]
    (from_timeline,) = vectors.timeline(key_prefix=key, embeddings=True)
    (from_recall,) = vectors.recall(key_prefix=key, embeddings=True)
    for record in (fetched, from_timeline, from_recall):
        assert record["embedding"] == expected
        assert [float(x).hex() for x in record["embedding"]] == [x.hex() for x in expected]


@pytest.mark.spec("3.7")
def test_3_7_integers_in_a_vector_are_accepted_and_kept(vectors: Peer) -> None:
    key = f"{uid('vec')}/ints"
    vectors.remember({"content": "integers", "key": key, "embedding": [1, 0, -3, 7]})
    record = vectors.call("memory/fetch", {"key": key, "embeddings": True})["record"]
    assert record["embedding"] == [1, 0, -3, 7]


@pytest.mark.spec("3.7")
def test_3_7_vectors_are_returned_only_when_asked(vectors: Peer) -> None:
    key = f"{uid('vec')}/k"
    vectors.remember({"content": "hidden vector", "key": key, "embedding": _unit(1)})
    fetched = vectors.call("memory/fetch", {"key": key})["record"]
    (from_timeline,) = vectors.timeline(key_prefix=key)
    (from_recall,) = vectors.recall(key_prefix=key, embedding=_unit(1))
    (explicit_false,) = vectors.timeline(key_prefix=key, embeddings=False)
    for record in (fetched, from_timeline, from_recall, explicit_false):
        assert "embedding" not in record
    (asked,) = vectors.recall(key_prefix=key, embedding=_unit(1), embeddings=True)
    assert asked["embedding"] == _unit(1)


@pytest.mark.spec("3.7")
def test_3_7_a_replacement_keeps_the_new_vector_verbatim(vectors: Peer) -> None:
    key = f"{uid('vec')}/k"
    vectors.remember({"content": "v0", "key": key, "embedding": _unit(0)})
    vectors.remember({"content": "v1", "key": key, "embedding": [0.5, 0.25, 0.125, 0.0625]})
    record = vectors.call("memory/fetch", {"key": key, "embeddings": True})["record"]
    assert record["embedding"] == [0.5, 0.25, 0.125, 0.0625]


@pytest.mark.spec("3.7")
@pytest.mark.parametrize("width", [WIDTH - 1, WIDTH + 1, 1])
def test_3_7_a_different_width_is_32008_and_nothing_is_written(vectors: Peer, width: int) -> None:
    tag = uid("tag")
    batch = [
        {"content": "fine", "embedding": _unit(0), "metadata": {"tag": tag}},
        {"content": "no vector", "metadata": {"tag": tag}},
        {"content": "wrong width", "embedding": [0.5] * width, "metadata": {"tag": tag}},
    ]
    failure = rpc_error(vectors, "memory/remember", {"records": batch})
    assert failure.code == -32008
    assert timeline_ids(vectors, tag=tag) == []
    assert vectors.describe()["embeddings"]["dimensions"] == WIDTH


@pytest.mark.spec("3.7")
def test_3_7_a_query_vector_of_a_different_width_is_32008(vectors: Peer) -> None:
    failure = rpc_error(vectors, "memory/recall", {"embedding": [0.1] * (WIDTH + 2)})
    assert failure.code == -32008


@pytest.mark.spec("3.7")
@pytest.mark.parametrize("embedding", [[], ["a", "b", "c", "d"], [[1.0]], "1,2"])
def test_3_7_a_vector_that_is_not_numbers_is_32602(vectors: Peer, embedding: Any) -> None:
    failure = rpc_error(
        vectors, "memory/remember", {"records": [{"content": "x", "embedding": embedding}]}
    )
    assert failure.code == -32602


@pytest.mark.spec("3.7")
def test_3_7_vector_query_ranks_nearest_first(vectors: Peer) -> None:
    tag = uid("tag")
    query = [0.9, 0.3, 0.1, 0.0]
    stored = [
        [0.0, 0.0, 0.0, 1.0],
        [1.0, 0.0, 0.0, 0.0],
        [0.9, 0.3, 0.1, 0.0],
        [0.0, 1.0, 0.0, 0.0],
        [0.6, 0.6, 0.0, 0.0],
    ]
    ids = vectors.remember(
        *(
            {"content": f"vector {i}", "embedding": v, "metadata": {"tag": tag}}
            for i, v in enumerate(stored)
        )
    )
    expected = sorted(range(len(stored)), key=lambda i: -_cosine(query, stored[i]))
    result = vectors.recall(embedding=query, where={"tag": tag}, limit=10)
    assert [r["id"] for r in result] == [ids[i] for i in expected]
    scores = [r["score"] for r in result]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in scores)


def test_recall_by_similarity_orders_by_the_vector_alone_with_exact_scores(vectors: Peer) -> None:
    """``rank: "similarity"`` (describe ``recall.rank``): the metric alone orders, and
    each score is that similarity computed from the verbatim vectors, (cos + 1) / 2."""
    assert vectors.describe()["recall"]["rank"] == ["blend", "similarity"]
    tag = uid("tag")
    query = [0.9, 0.3, 0.1, 0.0]
    stored = [[0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0], [0.123456789, 0.3, 0.1, 0.7]]
    stored += [[0.6, 0.6, 0.0, 0.0], [0.9, 0.3, 0.1, 1e-9]]
    ids = vectors.remember(
        *(
            {"content": f"vector {i}", "embedding": v, "metadata": {"tag": tag}, "salience": i}
            for i, v in enumerate(stored)
        )
    )
    expected = sorted(range(len(stored)), key=lambda i: -_cosine(query, stored[i]))
    result = vectors.recall(embedding=query, where={"tag": tag}, rank="similarity", limit=4)
    assert [r["id"] for r in result] == [ids[i] for i in expected[:4]]
    for record, i in zip(result, expected, strict=False):
        assert math.isclose(record["score"], (_cosine(query, stored[i]) + 1) / 2, abs_tol=1e-12)
        assert "embedding" not in record
    with_vectors = vectors.recall(
        embedding=query, where={"tag": tag}, rank="similarity", limit=1, embeddings=True
    )
    assert with_vectors[0]["embedding"] == stored[expected[0]]


def test_recall_by_similarity_orders_by_the_vector_alone(vectors: Peer) -> None:
    tag = uid("tag")
    ids = vectors.remember(
        {"content": "alpha words", "embedding": _unit(0), "metadata": {"tag": tag}},
        {"content": "beta", "embedding": _unit(1), "metadata": {"tag": tag}},
    )
    by_vector = {"embedding": _unit(1), "where": {"tag": tag}, "rank": "similarity"}
    # The query would put "alpha words" first in a blend; by similarity it takes no part.
    assert [r["id"] for r in vectors.recall(query="alpha words", **by_vector)] == ids[::-1]
    assert vectors.recall(query="alpha", where={"tag": tag}, rank="similarity") == []
    assert rpc_error(vectors, "memory/recall", {"rank": "nearest"}).code == -32602


@pytest.mark.spec("5.3")
def test_5_3_ranking_blends_vector_and_lexical_relevance(vectors: Peer) -> None:
    """A record matching both the words and the vector outranks one matching either."""
    tag = uid("tag")
    near = [0.0, 0.0, 1.0, 0.0]
    lexical_only, vector_only, both, neither = vectors.remember(
        {"content": "the quokka photographs well", "embedding": _unit(0), "metadata": {"tag": tag}},
        {"content": "an unrelated sentence", "embedding": near, "metadata": {"tag": tag}},
        {"content": "a quokka on the island", "embedding": near, "metadata": {"tag": tag}},
        {"content": "nothing in common", "embedding": _unit(3), "metadata": {"tag": tag}},
    )
    result = vectors.recall(query="quokka", embedding=near, where={"tag": tag}, limit=10)
    ranked = [r["id"] for r in result]
    scores = {r["id"]: r["score"] for r in result}
    assert ranked[0] == both
    assert {lexical_only, vector_only} <= set(ranked)
    assert scores[both] > scores[lexical_only]
    assert scores[both] > scores[vector_only]
    if neither in scores:
        assert scores[neither] < min(scores[lexical_only], scores[vector_only])


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def _similarity(metric: str, a: list[float], b: list[float]) -> float:
    if metric == "cosine":
        return _cosine(a, b)
    if metric == "dot":
        return sum(x * y for x, y in zip(a, b, strict=True))
    return -math.dist(a, b)


@pytest.mark.spec("3.7")
@pytest.mark.parametrize("metric", ["cosine", "dot", "l2"])
def test_3_7_metric_is_configurable_reported_and_used(
    binding: str, make_peer: PeerFactory, metric: str
) -> None:
    """§3.7: describe reports ``dimensions`` (null until the first vector fixes it) and the
    ``metric`` in use, listed in ``metrics``; ranking follows that metric. The three
    vectors are ordered differently by cosine, dot and l2."""
    peer = make_peer(binding, ServerConfig(metric=metric))  # type: ignore[arg-type]
    before = peer.describe()["embeddings"]
    assert before["dimensions"] is None
    assert before["metric"] == metric
    assert metric in before["metrics"]
    # A record without a vector does not fix the width.
    peer.remember({"content": "no vector yet"})
    assert peer.describe()["embeddings"]["dimensions"] is None
    stored = {"a": [1.0, 0.0], "b": [10.0, 1.0], "c": [2.0, 2.0]}
    query = [1.0, 0.1]
    ids = dict(
        zip(
            stored,
            peer.remember(*({"content": f"vector {n}", "embedding": v} for n, v in stored.items())),
            strict=True,
        )
    )
    assert peer.describe()["embeddings"]["dimensions"] == 2
    expected = sorted(stored, key=lambda n: -_similarity(metric, query, stored[n]))
    result = peer.recall(embedding=query, limit=10)
    assert [r["id"] for r in result] == [ids[n] for n in expected]
    # The width is now fixed for every later write.
    assert (
        rpc_error(
            peer, "memory/remember", {"records": [{"content": "x", "embedding": [1.0] * 3}]}
        ).code
        == -32008
    )
