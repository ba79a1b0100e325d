"""``POST /{namespace}/query``: by the caller's embedding (cosine similarity, the draft's
score), by text (ranked as ``memory/recall`` ranks), or both; with ``type``, ``tag``,
``top_k``, ``min_score`` and ``recursive``; and its bad input."""

from __future__ import annotations

import math
from typing import Any

import pytest
from rest_support import Rest, assert_error, uid, unchanged

from a2m_server import A2MServer


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


@pytest.fixture
def ns(rest: Rest) -> str:
    ns = uid("q")
    rest.write(
        ns, "north", "semantic", "cold wind", embedding=[0.0, 1.0, 0.0], meta={"tags": ["geo"]}
    )
    rest.write(
        ns, "east", "semantic", "sunrise", embedding=[1.0, 0.0, 0.0], meta={"tags": ["geo", "sun"]}
    )
    rest.write(ns, "north-east", "procedural", "walk diagonally", embedding=[0.7, 0.7, 0.0])
    rest.write(ns, "south", "semantic", "warm wind", embedding=[0.0, -1.0, 0.0])
    rest.write(ns, "plain", "semantic", "a note about wind without a vector")
    rest.write(f"{ns}/child", "up", "semantic", "sky", embedding=[0.0, 0.9, 0.1])
    return ns


def _query(rest: Rest, ns: str, **body: Any) -> list[dict[str, Any]]:
    response = rest.query(ns, body)
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()
    return results


def _keys(results: list[dict[str, Any]]) -> list[str]:
    return [r["entry"]["key"] for r in results]


def test_embedding_query_ranks_by_cosine_similarity(rest: Rest, ns: str) -> None:
    results = _query(rest, ns, embedding=[0.1, 1.0, 0.0], top_k=10)
    assert _keys(results) == ["north", "north-east", "east", "south"]
    for result in results:
        expected = _cosine([0.1, 1.0, 0.0], result["entry"]["embedding"])
        assert result["score"] == pytest.approx(expected, abs=1e-5)
    assert results[-1]["score"] < 0  # opposite vectors are negatively similar
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)


def test_only_entries_with_an_embedding_take_part(rest: Rest, ns: str) -> None:
    assert "plain" not in _keys(_query(rest, ns, embedding=[0.0, 0.0, 1.0], top_k=100))


def test_top_k_min_score_type_and_tag(rest: Rest, ns: str) -> None:
    assert _keys(_query(rest, ns, embedding=[0.0, 1.0, 0.0])) == [
        "north",
        "north-east",
        "east",
        "south",
    ]
    assert _keys(_query(rest, ns, embedding=[0.0, 1.0, 0.0], top_k=2)) == ["north", "north-east"]
    assert _keys(_query(rest, ns, embedding=[0.0, 1.0, 0.0], min_score=0.5)) == [
        "north",
        "north-east",
    ]
    assert _keys(_query(rest, ns, embedding=[1.0, 1.0, 0.0], type="procedural")) == ["north-east"]
    assert _keys(_query(rest, ns, embedding=[0.0, 1.0, 0.0], tag=["geo"])) == ["north", "east"]
    assert _keys(_query(rest, ns, embedding=[0.0, 1.0, 0.0], tag=["geo", "sun"])) == ["east"]


def test_a_tag_holding_nul_matches_only_itself(rest: Rest) -> None:
    ns = uid("qnul")
    tags = {"plain": ["a"], "nul": ["a\x00b"], "trail": ["a\x00"], "mixed": ["x", "a\x00b"]}
    for key, tagged in tags.items():
        rest.write(ns, key, "semantic", "wind", embedding=[0.0, 1.0, 0.0], meta={"tags": tagged})
    for tag in ("a", "a\x00b", "a\x00", "\x00", "ab"):
        found = _keys(_query(rest, ns, embedding=[0.0, 1.0, 0.0], tag=[tag]))
        assert sorted(found) == sorted(k for k, t in tags.items() if tag in t), repr(tag)
    found = _keys(_query(rest, ns, embedding=[0.0, 1.0, 0.0], tag=["a\x00b", "x"]))
    assert found == ["mixed"]


def test_recursive_includes_child_namespaces(rest: Rest, ns: str) -> None:
    exact = _query(rest, ns, embedding=[0.0, 1.0, 0.1], top_k=1)
    assert _keys(exact) == ["north"]
    nested = _query(rest, ns, embedding=[0.0, 1.0, 0.1], top_k=1, recursive=True)
    assert [(r["entry"]["namespace"], r["entry"]["key"]) for r in nested] == [(f"{ns}/child", "up")]


def test_text_query_ranks_as_recall_does(rest: Rest, ns: str, url: str) -> None:
    results = _query(rest, ns, query="wind", top_k=10)
    assert set(_keys(results)) == {"north", "south", "plain"}
    assert all(0 <= r["score"] <= 1 for r in results)
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)


def test_text_and_embedding_together(rest: Rest, ns: str) -> None:
    results = _query(rest, ns, query="wind", embedding=[0.0, -1.0, 0.0], top_k=10)
    assert _keys(results)[0] == "south"
    assert "plain" in _keys(results)  # found by its words alone


def test_text_without_words_lists_the_newest(rest: Rest, ns: str) -> None:
    assert _keys(_query(rest, ns, query="!!!", top_k=2)) == ["plain", "south"]


def test_query_on_an_empty_namespace_is_empty(rest: Rest) -> None:
    assert _query(rest, uid("empty"), embedding=[1.0, 0.0, 0.0]) == []
    assert _query(rest, uid("empty"), query="anything") == []


BAD_QUERIES: list[tuple[str, Any, int, str]] = [
    ("neither", {}, 400, "INVALID_BODY"),
    ("null embedding only", {"embedding": None}, 400, "INVALID_BODY"),
    ("empty text", {"query": ""}, 400, "INVALID_BODY"),
    ("top_k 0", {"query": "q", "top_k": 0}, 400, "INVALID_BODY"),
    ("top_k 101", {"query": "q", "top_k": 101}, 400, "INVALID_BODY"),
    ("top_k text", {"query": "q", "top_k": "5"}, 400, "INVALID_BODY"),
    ("min_score text", {"query": "q", "min_score": "high"}, 400, "INVALID_BODY"),
    ("min_score above 1", {"query": "q", "min_score": 1.5}, 400, "INVALID_BODY"),
    ("min_score below 0", {"query": "q", "min_score": -0.1}, 400, "INVALID_BODY"),
    ("tag not a list", {"query": "q", "tag": "geo"}, 400, "INVALID_BODY"),
    ("recursive text", {"query": "q", "recursive": "yes"}, 400, "INVALID_BODY"),
    ("unknown type", {"query": "q", "type": "scratch"}, 422, "INVALID_TYPE"),
    ("wrong width", {"embedding": [1.0, 0.0]}, 422, "DIMENSION_MISMATCH"),
    ("not an object", [1.0, 0.0, 0.0], 400, "INVALID_BODY"),
]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [pytest.param(body, status, code, id=name) for name, body, status, code in BAD_QUERIES],
)
def test_bad_queries_are_refused(
    rest: Rest, server: A2MServer, ns: str, body: Any, status: int, code: str
) -> None:
    with unchanged(server):
        assert_error(rest.query(ns, body), status, code)
