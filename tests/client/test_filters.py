"""``a2m.filters``: the helpers build the plain dicts the server reads, ``validate`` names the
key at fault, and ``matches`` decides as the bundled server's SQL does (the server's own
tests compare the two on every operator; these pin the documented rules)."""

from __future__ import annotations

from typing import Any

import pytest

from a2m import InvalidParams, filters

RECORD: dict[str, Any] = {
    "id": "r1",
    "content": "hello",
    "role": "user",
    "created_at": "2026-07-28T10:15:30.123Z",
    "metadata": {"score": 5, "ratio": 0.5, "name": "ada", "ok": True, "none": None,
                 "user": {"id": "u1", "age": 30}, "tags": ["a", "b"]},
}  # fmt: skip


def test_the_helpers_build_operator_objects() -> None:
    assert filters.gte(3) == {"$gte": 3}
    assert filters.all_of(filters.gte(1), filters.lt(5)) == {"$gte": 1, "$lt": 5}
    assert filters.in_(("a", "b")) == {"$in": ["a", "b"]}
    assert filters.nin(["x"]) == {"$nin": ["x"]}
    assert filters.exists() == {"$exists": True}
    assert filters.ne(None) == {"$ne": None}
    with pytest.raises(InvalidParams, match=r"\$gt given twice"):
        filters.all_of(filters.gt(1), filters.gt(2))


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ({"score": {"$gt": 4}}, True),
        ({"score": {"$gt": 5}}, False),
        ({"score": {"$gte": 5, "$lte": 5}}, True),
        ({"ratio": {"$lt": 1}}, True),
        ({"score": {"$gt": "1"}}, False),  # a string never orders a number
        ({"name": {"$gt": "a"}}, True),
        ({"name": {"$gt": 1}}, False),
        ({"ok": 1}, False),  # true is not 1
        ({"ok": True}, True),
        ({"score": 5.0}, True),  # 5 == 5.0
        ({"missing": {"$gt": -1}}, False),  # a missing key never matches $gt
        ({"missing": {"$ne": 1}}, True),
        ({"missing": {"$nin": [1]}}, True),
        ({"none": {"$exists": False}}, True),  # null counts as absent
        ({"none": None}, True),
        ({"name": {"$exists": True}}, True),
        ({"tags": "a"}, False),  # arrays never equal a scalar
        ({"metadata.user.id": "u1"}, True),
        ({"metadata.user.age": {"$in": [29, 30]}}, True),
        ({"metadata.user.id.deeper": {"$exists": False}}, True),
        ({"role": {"$in": ["user", "tool"]}}, True),
        ({"created_at": {"$gt": "2026-07-28T10:15:30Z"}}, True),  # compared as instants
        ({"created_at": {"$lt": "2026-07-28T12:16:30+02:00"}}, True),
        ({"score": [1, 5]}, True),
        ({"score": []}, False),
    ],
)
def test_matches_follows_the_documented_rules(where: dict[str, Any], expected: bool) -> None:
    filters.validate(where)
    assert filters.matches(where, RECORD) is expected


@pytest.mark.parametrize(
    ("where", "field"),
    [
        ({"score": {"$regex": "x"}}, "where.score"),
        ({"score": {"$gt": {"a": 1}}}, "where.score"),
        ({"score": {"$gt": [1]}}, "where.score"),
        ({"score": {"$gte": True}}, "where.score"),
        ({"score": {"$in": []}}, "where.score"),
        ({"score": {"$nin": [[1]]}}, "where.score"),
        ({"score": {"$exists": "yes"}}, "where.score"),
        ({"score": {"$eq": {"a": 1}}}, "where.score"),
        ({"score": {}}, "where.score"),
        ({"score": float("nan")}, "where.score"),
        ({"created_at": {"$gt": "last week"}}, "where.created_at"),
    ],
)
def test_validate_names_the_key(where: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidParams, match="nothing was sent") as caught:
        filters.validate(where)
    assert (caught.value.data or {})["field"] == field
    assert field in str(caught.value)


def test_uses_operators_tells_equality_from_the_extension() -> None:
    assert not filters.uses_operators({"role": "user", "tier": ["a", "b"]})
    assert filters.uses_operators({"score": {"$gt": 1}})
    assert filters.uses_operators({"metadata.user.id": "u1"})


@pytest.mark.parametrize("name", ["metadata.", "metadata..v", "metadata.a."])
def test_a_key_that_is_no_path_is_a_plain_metadata_key(name: str) -> None:
    filters.validate({name: 1})
    assert filters.matches({name: 1}, {"content": "x", "metadata": {name: 1}})
    assert not filters.matches({name: 1}, {"content": "x", "metadata": {"v": 1}})
