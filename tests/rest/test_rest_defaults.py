"""The defaults and bounds docs/rest-binding.md states for the draft's routes: a listing
pages 50 entries unless told, `offset` runs 0 to 2**31 - 1, a query returns 5 unless told,
`limit` and `top_k` are bounded by the server's `max_recall_limit` too, `recursive` takes
`1` and `0` as well as `true` and `false`, and a query counts as an access, as a recall
does."""

from __future__ import annotations

from typing import Any

import pytest
from rest_support import Rest, assert_error, eventually, rpc, uid, unchanged

from a2m_server import A2MServer
from a2m_server.config import LimitsConfig, ServerConfig
from a2m_testing.servers import serve_http


def _records(ns: str, n: int, **fields: Any) -> list[dict[str, Any]]:
    return [
        {
            "content": f"entry {i}",
            "key": f"{ns}/k{i:03d}",
            "metadata": {"namespace": ns},
            **fields,
        }
        for i in range(n)
    ]


def test_a_listing_pages_50_entries_unless_told(rest: Rest, url: str) -> None:
    ns = uid("paged")
    rpc(url, "memory/remember", {"records": _records(ns, 55)})
    page = rest.list(ns).json()
    assert len(page["entries"]) == 50
    assert (page["total"], page["next_offset"]) == (55, 50)
    assert [e["key"] for e in page["entries"]] == [f"k{i:03d}" for i in range(50)]  # oldest first
    rest_of_it = rest.list(ns, offset=50).json()
    assert [e["key"] for e in rest_of_it["entries"]] == [f"k{i:03d}" for i in range(50, 55)]
    assert rest_of_it["next_offset"] is None


def test_offset_runs_up_to_2_31_minus_1(rest: Rest, server: A2MServer, url: str) -> None:
    ns = uid("offset")
    rpc(url, "memory/remember", {"records": _records(ns, 2)})
    last = rest.list(ns, offset=2**31 - 1)
    assert last.status_code == 200, last.text
    assert last.json()["entries"] == []
    assert last.json()["total"] == 2
    with unchanged(server):
        assert_error(rest.list(ns, offset=2**31), 400, "INVALID_BODY")


def test_a_query_returns_5_unless_told(rest: Rest, url: str) -> None:
    ns = uid("topk")
    records = _records(ns, 8)
    for i, record in enumerate(records):
        record["embedding"] = [1.0, i / 10]
    rpc(url, "memory/remember", {"records": records})
    response = rest.query(ns, {"embedding": [1.0, 0.0]})
    assert response.status_code == 200, response.text
    assert len(response.json()) == 5
    assert len(rest.query(ns, {"embedding": [1.0, 0.0], "top_k": 8}).json()) == 8


def test_recursive_takes_1_and_0(rest: Rest, server: A2MServer, url: str) -> None:
    ns = uid("deep")
    rpc(url, "memory/remember", {"records": _records(ns, 1) + _records(f"{ns}/child", 2)})

    def keys(**params: Any) -> list[str]:
        response = rest.list(ns, **params)
        assert response.status_code == 200, response.text
        return sorted(f"{e['namespace']}:{e['key']}" for e in response.json()["entries"])

    exact = [f"{ns}:k000"]
    nested = sorted([*exact, f"{ns}/child:k000", f"{ns}/child:k001"])
    assert keys(recursive="0") == keys(recursive="false") == keys() == exact
    assert keys(recursive="1") == keys(recursive="true") == nested

    with unchanged(server):
        assert_error(rest.list(ns, recursive="2"), 400, "INVALID_BODY")
    deleted = rest.request("DELETE", f"{ns}/entries", params={"recursive": "1"})
    assert deleted.status_code == 204, deleted.text
    assert deleted.headers["X-Deleted-Count"] == "3"


def test_a_query_counts_as_an_access(rest: Rest, url: str) -> None:
    ns = uid("access")
    record = {**_records(ns, 1)[0], "embedding": [0.0, 1.0]}
    rpc(url, "memory/remember", {"records": [record]})

    def accesses() -> int:
        fetched = rpc(url, "memory/fetch", {"key": record["key"]})["record"]
        count: int = fetched["access_count"]
        return count

    assert accesses() == 0
    found = rest.query(ns, {"embedding": [0.0, 1.0]}).json()
    assert [hit["entry"]["key"] for hit in found] == ["k000"]
    assert eventually(lambda: accesses() or None) == 1
    found = rest.query(ns, {"query": "entry"}).json()
    assert [hit["entry"]["key"] for hit in found] == ["k000"]
    assert eventually(lambda: accesses() if accesses() >= 2 else None) == 2


def test_limit_and_top_k_are_bounded_by_the_servers_recall_limit(store_backend: str) -> None:
    config = ServerConfig(limits=LimitsConfig(max_recall_limit=3))
    with A2MServer(config) as small, serve_http(small) as small_url:
        rest = Rest(small_url)
        try:
            ns = uid("bounded")
            rpc(small_url, "memory/remember", {"records": _records(ns, 2)})
            assert rest.list(ns, limit=3).status_code == 200
            assert rest.query(ns, {"query": "entry", "top_k": 3}).status_code == 200
            with unchanged(small):
                assert_error(rest.list(ns, limit=4), 422, "QUOTA_EXCEEDED")
                assert_error(rest.query(ns, {"query": "entry", "top_k": 4}), 422, "QUOTA_EXCEEDED")
        finally:
            rest.close()


@pytest.mark.parametrize("metric", ["dot", "l2"])
def test_with_dot_or_l2_a_query_scores_the_stores_similarity(
    store_backend: str, metric: str
) -> None:
    """docs/rest-binding.md: with ``dot`` or ``l2`` the score of a query by embedding is the
    store's similarity, in [0, 1], the one ``rank: "similarity"`` gives over JSON-RPC."""
    with A2MServer(ServerConfig(metric=metric)) as server, serve_http(server) as url:
        rest = Rest(url)
        try:
            ns = uid(metric)
            vectors = {"near": [1.0, 0.1], "side": [0.2, 1.0], "away": [-1.0, -0.3]}
            for key, vector in vectors.items():
                rest.write(ns, key, "semantic", key, embedding=vector)
            found = rest.query(ns, {"embedding": [1.0, 0.0], "top_k": 10}).json()
            assert [hit["entry"]["key"] for hit in found] == ["near", "side", "away"]
            assert all(0.0 <= hit["score"] <= 1.0 for hit in found), found
            ranked = rpc(
                url,
                "memory/recall",
                {"embedding": [1.0, 0.0], "rank": "similarity", "key_prefix": f"{ns}/"},
            )["records"]
            by_key = {record["key"].rsplit("/", 1)[1]: record["score"] for record in ranked}
            for hit in found:
                assert hit["score"] == pytest.approx(by_key[hit["entry"]["key"]], abs=1e-6)
        finally:
            rest.close()
