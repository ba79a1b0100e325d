"""The REST listing's additions to the draft: ``where`` (a JSON object, operators
included, as ``memory/timeline`` takes it) on ``GET`` and bulk ``DELETE …/entries``, and
keyset paging by ``cursor`` with ``next_cursor`` in the page."""

from __future__ import annotations

import json
from typing import Any

from rest_support import Rest, assert_error, uid


def _seed(rest: Rest, ns: str, count: int = 12) -> None:
    for n in range(count):
        meta = {"score": n, "team": "red" if n % 2 else "blue", "deep": {"level": n % 3}}
        rest.write(ns, f"k{n:02d}", "semantic", f"note {n}", meta=meta)


def _keys(response: Any) -> list[str]:
    assert response.status_code == 200, response.text
    return [entry["key"] for entry in response.json()["entries"]]


def test_where_with_operators_filters_the_listing(rest: Rest) -> None:
    ns = f"app/{uid('where')}"
    _seed(rest, ns)
    for where, expected in (
        ({"score": {"$gte": 9}}, ["k09", "k10", "k11"]),
        ({"team": "red", "score": {"$lt": 4}}, ["k01", "k03"]),
        ({"metadata.deep.level": 0, "score": {"$nin": [0, 6]}}, ["k03", "k09"]),
        ({"score": {"$in": [2, 5, 99]}}, ["k02", "k05"]),
        ({"absent": {"$gt": 0}}, []),
    ):
        response = rest.list(ns, where=json.dumps(where))
        assert _keys(response) == expected, where
        assert response.json()["total"] == len(expected)


def test_a_bad_where_names_the_field(rest: Rest) -> None:
    ns = f"app/{uid('where')}"
    _seed(rest, ns, 2)
    for raw, field in (
        (json.dumps({"score": {"$regex": "1"}}), "where.score"),
        (json.dumps({"score": {"$in": []}}), "where.score"),
        (json.dumps({"score": {"$gt": {"a": 1}}}), "where.score"),
        ("not json", "where"),
        (json.dumps([1, 2]), "where"),
    ):
        for method in ("GET", "DELETE"):
            response = rest.request(method, f"{ns}/entries", params={"where": raw})
            body = assert_error(response, 400, response.json()["code"])
            assert field in body["message"] or (body.get("data") or {}).get("field") == field
    assert _keys(rest.list(ns)) == ["k00", "k01"], "a refused delete deletes nothing"


def test_a_bulk_delete_with_where_deletes_just_the_matches(rest: Rest) -> None:
    ns = f"app/{uid('where')}"
    _seed(rest, ns)
    response = rest.request("DELETE", f"{ns}/entries", params={"where": '{"score": {"$gte": 8}}'})
    assert response.status_code == 204, response.text
    assert response.headers["x-deleted-count"] == "4"
    assert _keys(rest.list(ns)) == [f"k{n:02d}" for n in range(8)]


def test_cursor_pages_the_listing_to_its_end(rest: Rest) -> None:
    ns = f"app/{uid('cursor')}"
    _seed(rest, ns)
    collected: list[str] = []
    cursor: str | None = ""
    pages = 0
    while cursor is not None:
        response = rest.list(ns, limit=5, cursor=cursor)
        collected += _keys(response)
        page = response.json()
        assert page["total"] == 12
        assert page["next_offset"] is None
        cursor = page["next_cursor"]
        pages += 1
    assert collected == [f"k{n:02d}" for n in range(12)]
    assert pages == 3
    filtered = rest.list(ns, limit=2, cursor="", where='{"team": "blue"}').json()
    assert [e["key"] for e in filtered["entries"]] == ["k00", "k02"]
    other = rest.list(ns, limit=2, cursor=filtered["next_cursor"])  # another listing's cursor
    body = assert_error(other, 400, other.json()["code"])
    assert "cursor" in body["message"]
