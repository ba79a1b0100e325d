"""``where`` operators and keyset paging on the bundled server (SQLite): every operator on
record fields, metadata keys and nested paths over metadata of mixed types, checked
against :func:`a2m_types.filters.matches` (the client's fallback must agree with the SQL);
bad input refused as INVALID_PARAMS naming the field, nothing written or deleted; and
both features switched off by configuration."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import pytest

from a2m_server import A2MServer, ProtocolError, ServerConfig
from a2m_server.server import Connection
from a2m_types import ErrorCode
from a2m_types.filters import matches

MIXED: list[Any] = [
    0,
    1,
    2.5,
    -3,
    10,
    "10",
    "2",
    "abc",
    "",
    True,
    False,
    None,
    [1, 2],
    {"n": 1},
    2**70,
    "2026-01-01T00:00:00Z",
]
"""Values of every JSON kind for one metadata key, so each comparison meets each kind."""

OPERANDS: dict[str, list[Any]] = {
    "$eq": [1, 10, "10", "abc", True, False, None, 2.5, 2**70],
    "$ne": [1, "abc", True, None],
    "$gt": [0, 2, 2.5, "2", "", "abc", -(2**80)],
    "$gte": [1, 10, "10", "2026"],
    "$lt": [2, "2", "b", 2**71],
    "$lte": [-3, 0, "abc"],
    "$in": [[1, "10"], [True, None], ["abc", 2.5, 99]],
    "$nin": [[1, "10"], [None], [True, False]],
    "$exists": [True, False],
}


@pytest.fixture
def peer() -> Iterator[Connection]:
    with A2MServer() as server, server.connect() as connection:
        connection.call("memory/describe", {})
        records = [
            {"content": f"value {n}", "role": "user" if n % 2 else "tool", "metadata": meta}
            for n, meta in enumerate(_metadata())
        ]
        connection.call("memory/remember", {"records": records})
        yield connection


def _metadata() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = [{"v": value, "deep": {"v": value}} for value in MIXED]
    found.append({})  # the key missing altogether
    found.append({"deep": "not an object"})  # a path through a non-object
    return found


def _all(peer: Connection) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = peer.call("memory/timeline", {})["records"]
    return records


def _ids(peer: Connection, where: dict[str, Any]) -> set[str]:
    return {r["id"] for r in peer.call("memory/timeline", {"where": where})["records"]}


def _cases() -> Iterator[tuple[str, Any]]:
    for op, operands in OPERANDS.items():
        for operand in operands:
            yield op, operand


@pytest.mark.parametrize("key", ["v", "metadata.deep.v", "metadata.v"])
def test_every_operator_runs_in_sql_as_the_client_matches(peer: Connection, key: str) -> None:
    records = _all(peer)
    assert len(records) == len(MIXED) + 2
    for op, operand in _cases():
        where = {key: {op: operand}}
        expected = {r["id"] for r in records if matches(where, r)}
        assert _ids(peer, where) == expected, f"{where}"


def test_the_semantics_by_example(peer: Connection) -> None:
    def values(where: dict[str, Any]) -> list[Any]:
        found = peer.call("memory/timeline", {"where": where})["records"]
        return [r["metadata"].get("v", "<missing>") for r in found]

    assert values({"v": {"$gt": 2}}) == [2.5, 10, 2**70], "numbers compare with numbers only"
    assert values({"v": {"$gt": "2"}}) == ["abc", "2026-01-01T00:00:00Z"], "strings by code point"
    assert values({"v": {"$lt": 1}}) == [0, -3], "booleans are not numbers"
    assert values({"v": {"$eq": 1}}) == [1]
    assert values({"v": True}) == [True]
    assert values({"v": {"$exists": False}}) == [None, "<missing>", "<missing>"]
    assert "<missing>" not in values({"v": {"$gt": -(10**30)}}), "a missing key never matches $gt"
    assert "<missing>" in values({"v": {"$ne": 1}}), "a missing key is not equal to 1"
    assert values({"v": {"$gte": 0, "$lt": 2.5}}) == [0, 1], "every operator of an object holds"
    assert values({"metadata.deep.v": {"$in": ["abc", 10]}}) == [10, "abc"]


LOGICAL: list[dict[str, Any]] = [
    {"$or": [{"v": {"$gte": 2}}, {"v": {"$gte": ""}}, {"v": {"$in": [True]}}]},
    {"$or": [{"v": 1}, {"metadata.deep.v": "abc"}], "role": "user"},
    {"$or": [{"v": {"$exists": False}}, {"role": "tool", "v": {"$lt": 1}}]},
    {"$and": [{"$or": [{"v": 1}, {"v": "abc"}]}, {"$or": [{"role": "user"}, {"v": "abc"}]}]},
    {"$and": [{"v": {"$ne": None}}, {"v": {"$nin": [0, 1]}}]},
    {"$or": [{"$and": [{"v": {"$gt": 0}}, {"v": {"$lt": 3}}]}, {"$or": [{"v": [None]}]}]},
    {"$or": [{"v": {"$gt": 10**9}}]},
]
"""``$and`` / ``$or``, alone, nested and beside other keys."""


@pytest.mark.parametrize("where", LOGICAL)
def test_and_or_run_in_sql_as_the_client_matches(peer: Connection, where: dict[str, Any]) -> None:
    records = _all(peer)
    expected = {r["id"] for r in records if matches(where, r)}
    assert _ids(peer, where) == expected, f"{where}"
    assert peer.call("memory/recall", {"where": where, "limit": 100})["records"] or not expected


def test_or_widest_and_deepest_runs() -> None:
    with A2MServer() as server, server.connect() as connection:
        connection.call("memory/remember", {"records": [{"content": "x", "metadata": {"v": 99}}]})
        wide = {"$or": [{"v": n} for n in range(100)]}
        where: dict[str, Any] = wide
        for _ in range(3):
            where = {"$or": [{"v": -1}, where, *wide["$or"][:98]]}
        assert len(connection.call("memory/timeline", {"where": where})["records"]) == 1


# Values the SQL may mistake for one another: the text of a container ("[1, 2]" beside
# [1, 2]), the numbers 0 and 1 beside false and true (SQLite reads those as 0 and 1), a
# float beside its integer, the ends of the number line and of the string order; strings
# holding U+0000 beside their prefixes (SQLite's JSON functions end a string at NUL),
# beside the text escaping it ("\\u0000"), and beside what a store holding no NUL might
# write in its place (U+0001, U+E000…).
LOOKALIKES: list[Any] = [
    0, 1, 1.0, 0.0, -0.0, 2, 2.5, -1, 2**53 + 1, 2**70, -(2**70), 1e308,
    "0", "1", "", "a", "[1,2]", "[1, 2]", "[]", "{}", '{"n":1}', "[", "{", "\u00e9",
    "\x00", "a\x00", "a\x00b", "a\x00\x00", "\x00a", "ab", "\x01", "a\x01", "a\x00\x01",
    "\ue000", "a\ue000\ue002", "a\\u0000", "a\\", "[\x00]", ["a\x00"], {"a\x00": 1},
    True, False, None, [1, 2], [], {"n": 1}, {},
]  # fmt: skip
LOOKALIKE_OPERANDS: list[Any] = [
    0, 1, 1.0, 0.0, -1, 0.5, 2, 2**53, 2**70, -(2**80), 1e308,
    "", "0", "1", "[", "[1,2]", "[1, 2]", "{}", "{", "a", "\u00e9",
    "\x00", "a\x00", "a\x00b", "a\x00\x00", "ab", "\x01", "a\x01", "\ue000", "a\ue000\ue002",
    "a\\u0000", "[\x00]",
]  # fmt: skip


def _differing(
    connection: Connection, stored: list[dict[str, Any]], wheres: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The filters whose timeline differs from what the client's ``matches`` picks out of
    ``stored``."""
    wrong = []
    for where in wheres:
        expected = {r["id"] for r in stored if matches(where, r)}
        found = connection.call("memory/timeline", {"where": where})["records"]
        if {r["id"] for r in found} != expected:
            wrong.append(where)
    return wrong


def test_lookalike_values_compare_in_sql_as_the_client_matches() -> None:
    with A2MServer() as server, server.connect() as connection:
        metadata = [{"v": v, "deep": {"v": v}} for v in LOOKALIKES] + [{}, {"v": {"w": 1}}]
        records = [{"content": f"value {n}", "metadata": m} for n, m in enumerate(metadata)]
        connection.call("memory/remember", {"records": records})
        stored = connection.call("memory/timeline", {})["records"]
        wheres: list[dict[str, Any]] = []
        for key, operand in itertools.product(["v", "metadata.deep.v"], LOOKALIKE_OPERANDS):
            wheres += [{key: {op: operand}} for op in ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")]
            wheres.append({key: {"$in": [operand, 2.5]}})
            wheres.append({key: {"$nin": [operand, "a"]}})
            wheres.append({key: [operand, "a\x00b", "\x00"]})
        wheres += [
            {"v": {"$gt": 0, "$lt": 1}},
            {"v": {"$gte": 0, "$lte": 1}},
            {"$or": [{"v": {"$gte": 0.5}}, {"v": {"$gte": ""}}, {"v": {"$in": [True]}}]},
            {"$and": [{"v": {"$gt": -1}}, {"v": {"$lte": "[1, 2]"}}]},
            {"v": {"$gt": "a", "$lt": "a\x00b"}},
            {"$or": [{"v": "a\x00"}, {"metadata.deep.v": {"$gte": "a\x00\x00"}}]},
        ]
        wrong = _differing(connection, stored, wheres)
        assert not wrong, f"{len(wrong)} of {len(wheres)} filters differ, such as {wrong[:5]}"


BIG_NUMBERS: list[Any] = [
    10**20, 10**20 + 1, 10**20 - 1, -(10**20), -(10**20) - 1, 2**63, 2**63 - 1, -(2**63),
    -(2**63) - 1, 2**64 + 1, 1e20, -1e20, 9.3e18, 2**53 + 1, 10**400, -(10**400), 1.5, 0,
    "100000000000000000000",
]  # fmt: skip
"""Numbers past 64 bits (which SQLite reads as the nearest REAL), their neighbours, doubles
that large, and numbers past every double."""


def test_numbers_past_64_bits_compare_exactly() -> None:
    """``10**20`` equals ``10**20`` and not ``10**20 + 1``, though both read as one REAL;
    a comparison decides between them by their digits, and ``forget`` deletes just the
    matches."""
    with A2MServer() as server, server.connect() as connection:
        records = [{"content": "n", "metadata": {"n": n}} for n in BIG_NUMBERS]
        connection.call("memory/remember", {"records": records})
        stored = connection.call("memory/timeline", {})["records"]
        operands = [10**20, 10**20 + 1, -(10**20), -(10**20) - 1, 2**63, -(2**63) - 1,
                    2**64, 2**64 + 1, 1e20, 1e19, 9.3e18, 10**400, -(10**400)]  # fmt: skip
        ops = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
        wheres: list[dict[str, Any]] = [{"n": {op: o}} for o in operands for op in ops]
        wheres += [{"n": {"$in": [o, 1.5]}} for o in operands]
        wheres += [{"n": {"$nin": [o]}} for o in operands]
        wrong = _differing(connection, stored, wheres)
        assert not wrong, f"{len(wrong)} of {len(wheres)} filters differ, such as {wrong[:5]}"
        # 10**20 and the double 1e20, which is exactly it
        assert connection.call("memory/forget", {"where": {"n": 10**20}})["forgotten"] == 2
        left = [r["metadata"]["n"] for r in connection.call("memory/timeline", {})["records"]]
        assert 10**20 not in left
        assert {10**20 + 1, 10**20 - 1} <= set(left)


def test_record_fields_equal_only_values_of_their_kind() -> None:
    """A number never equals a text field (role ``"1"``), a string never a number field
    (salience ``"0"``), a boolean neither; ``revision`` exists only on records with a key,
    as on the wire."""
    with A2MServer() as server, server.connect() as connection:
        connection.call(
            "memory/remember",
            {"records": [
                {"content": "a", "role": "1", "key": "k/1"},
                {"content": "b", "role": "true"},
                {"content": "c", "role": "0"},
            ]},
        )  # fmt: skip
        stored = connection.call("memory/timeline", {})["records"]
        wheres: list[dict[str, Any]] = [
            {"role": 1}, {"role": True}, {"role": [1, 0]}, {"role": {"$in": [1]}},
            {"role": {"$ne": 1}}, {"role": {"$nin": [True]}}, {"role": "1"},
            {"salience": "0"}, {"salience": ["0", "x"]}, {"salience": False},
            {"salience": True}, {"salience": {"$ne": False}}, {"salience": 0},
            {"access_count": {"$in": [False]}}, {"access_count": "0"},
            {"revision": 0}, {"revision": False}, {"revision": None},
            {"revision": {"$exists": True}}, {"revision": {"$exists": False}},
            {"revision": {"$lte": 0}}, {"revision": {"$ne": 0}},
        ]  # fmt: skip
        wrong = _differing(connection, stored, wheres)
        assert not wrong, f"{len(wrong)} of {len(wheres)} filters differ, such as {wrong[:5]}"
        assert len(_ids(connection, {"revision": {"$exists": True}})) == 1
        assert connection.call("memory/forget", {"where": {"role": 1}})["forgotten"] == 0


def test_salience_compares_as_the_double_it_is() -> None:
    """``0.1 + 0.2`` (what two reinforcements make) is ``0.30000000000000004``, not
    ``0.3``; an integer no double holds falls between its two neighbours."""
    with A2MServer() as server, server.connect() as connection:
        first = connection.call(
            "memory/remember", {"records": [{"content": "a"}, {"content": "b"}]}
        )["ids"][0]
        for amount in (0.1, 0.2):
            connection.call("memory/reinforce", {"ids": [first], "amount": amount})
        stored = connection.call("memory/timeline", {})["records"]
        assert {r["salience"] for r in stored} == {0.1 + 0.2, 0.0}
        operands = [0.1 + 0.2, 0.3, 0, 2**53 + 1, -(2**53) - 1, 10**400, -(10**400)]
        ops = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
        wheres: list[dict[str, Any]] = [{"salience": {op: o}} for o in operands for op in ops]
        wheres.append({"salience": {"$in": [0.3, 0.1 + 0.2]}})
        wrong = _differing(connection, stored, wheres)
        assert not wrong, f"{len(wrong)} of {len(wheres)} filters differ, such as {wrong[:5]}"
        assert _ids(connection, {"salience": 0.1 + 0.2}) == {first}


def test_a_path_names_keys_and_never_steps_into_an_array() -> None:
    """``metadata.tags.0`` is ``metadata["tags"]["0"]``: a list at ``tags`` has no such
    key, whatever index the segment might read as; forget deletes just the matches."""
    with A2MServer() as server, server.connect() as connection:
        metadata: list[dict[str, Any]] = [
            {"tags": ["red", "blue"]}, {"tags": {"0": "red", "-1": "blue"}},
            {"tags": [["red"]]}, {"tags": {"0": {"0": "red"}}}, {},
        ]  # fmt: skip
        records = [{"content": f"r{n}", "metadata": m} for n, m in enumerate(metadata)]
        connection.call("memory/remember", {"records": records})
        stored = connection.call("memory/timeline", {})["records"]
        wheres: list[dict[str, Any]] = []
        for path in ("metadata.tags.0", "metadata.tags.-1", "metadata.tags.1",
                     "metadata.tags.+0", "metadata.tags. 0", "metadata.tags.0.0"):  # fmt: skip
            wheres += [
                {path: "red"}, {path: "blue"}, {path: {"$ne": "red"}},
                {path: {"$exists": True}}, {path: {"$exists": False}},
                {path: {"$gte": "a"}}, {path: {"$lt": "z"}}, {path: None},
                {path: ["red", "blue"]},
            ]  # fmt: skip
        wrong = _differing(connection, stored, wheres)
        assert not wrong, f"{len(wrong)} of {len(wheres)} filters differ, such as {wrong[:5]}"
        assert (
            connection.call("memory/forget", {"where": {"metadata.tags.0": "red"}})["forgotten"]
            == 1
        )


NUL_NAMES = ["k", "k\x00", "k\x00x", "kx", "k\x01", "k\ue000\ue002"]
"""Metadata keys that a store ending names at NUL, or holding none, might confuse."""


def test_keys_and_fields_holding_nul_compare_exactly() -> None:
    with A2MServer() as server, server.connect() as connection:
        records = [
            {
                "content": name + "!",
                "role": name,
                "metadata": {name: n, "deep": {name: n}, "same": {name: "v"}},
            }
            for n, name in enumerate(NUL_NAMES)
        ]
        records.append({"content": "no role", "metadata": {"k": None}})
        connection.call("memory/remember", {"records": records})
        stored = connection.call("memory/timeline", {})["records"]
        wheres: list[dict[str, Any]] = []
        for n, name in enumerate(NUL_NAMES):
            wheres += [{name: n}, {f"metadata.deep.{name}": n}, {name: {"$exists": True}}]
            wheres += [{f"metadata.same.{name}": "v"}, {f"metadata.same.{name}": {"$gte": "v"}}]
            wheres += [{"role": name}, {"role": [name, "\x00"]}, {"content": [name + "!"]}]
            wheres += [{"content": {op: name + "!"}} for op in ("$gt", "$gte", "$lt", "$lte")]
            wheres += [{"role": {"$nin": [name, "k\x00"]}}, {"role": {"$ne": name}}]
            wheres += [{"role": {op: name}} for op in ("$gt", "$gte", "$lt", "$lte")]
        wrong = _differing(connection, stored, wheres)
        assert not wrong, f"{len(wrong)} of {len(wheres)} filters differ, such as {wrong[:5]}"


def test_ids_holding_nul_touch_only_their_own_records() -> None:
    with A2MServer() as server, server.connect() as connection:
        ids = ["a", "a\x00", "a\x00b", "b"]
        records = [{"id": i, "content": f"c{n}"} for n, i in enumerate(ids)]
        connection.call("memory/remember", {"records": records})
        for chosen in (["a\x00b"], ["a\x00", "b"], ["a\x00b", "a\x00", "zz"]):
            found = connection.call("memory/timeline", {"where": {"id": chosen}})["records"]
            assert sorted(r["id"] for r in found) == sorted(set(chosen) & set(ids))
        assert connection.call("memory/forget", {"ids": ["a\x00b", "zz\x00"]})["forgotten"] == 1
        left = connection.call("memory/timeline", {})["records"]
        assert sorted(r["id"] for r in left) == ["a", "a\x00", "b"]


def test_a_key_named_or_with_plain_values_is_a_metadata_key() -> None:
    with A2MServer() as server, server.connect() as connection:
        meta = {"$or": "x", "$and": 2}
        connection.call("memory/remember", {"records": [{"content": "x", "metadata": meta}]})
        for where in ({"$or": "x"}, {"$or": ["x", "y"]}, {"$and": {"$gte": 2}}):
            assert connection.call("memory/timeline", {"where": where})["records"], where


def test_record_fields_and_timestamps_take_operators(peer: Connection) -> None:
    time.sleep(0.01)  # a later millisecond than the fixture's batch
    peer.call("memory/remember", {"records": [{"content": "later", "session": "s1"}]})
    records = _all(peer)
    middle = records[-1]["created_at"]
    for where in (
        {"role": {"$ne": "user"}},
        {"role": {"$in": ["tool"]}},
        {"created_at": {"$gte": middle}},
        {"created_at": {"$lt": middle}},
        {"salience": {"$gte": 0}},
        {"access_count": {"$lt": 1}},
        {"session": {"$exists": False}},
        {"content": {"$gt": "value 5"}},
    ):
        expected = {r["id"] for r in records if matches(where, r)}
        assert _ids(peer, where) == expected, f"{where}"
        assert expected, f"{where} selects something here"


@pytest.mark.parametrize(
    ("where", "field"),
    [
        ({"v": {"$regex": "^a"}}, "where.v"),
        ({"v": {"$gt": {"n": 1}}}, "where.v"),
        ({"v": {"$gt": True}}, "where.v"),
        ({"v": {"$lt": None}}, "where.v"),
        ({"v": {"$in": []}}, "where.v"),
        ({"v": {"$nin": "abc"}}, "where.v"),
        ({"v": {"$in": [{"a": 1}]}}, "where.v"),
        ({"v": {"$exists": "yes"}}, "where.v"),
        ({"v": {}}, "where.v"),
        ({"created_at": {"$gt": "yesterday"}}, "where.created_at"),
        ({"v": {"$eq": [1]}}, "where.v"),
        ({"$or": [{}]}, "where.$or[0]"),
        ({"$or": [{"v": 1}, 2]}, "where.$or[1]"),
        ({"$and": [{"v": {"$gt": None}}]}, "where.$and[0].v"),
        ({"$or": [{"v": n} for n in range(101)]}, "where.$or"),
        (
            {"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"v": 1}]}]}]}]}]},
            "where.$or[0].$or[0].$or[0].$or[0].$or",
        ),
        ({"v": {"$or": [{"v": 1}]}}, "where.v"),
    ],
)
def test_a_filter_that_cannot_be_meant_is_invalid_params(
    peer: Connection, where: dict[str, Any], field: str
) -> None:
    before = len(_all(peer))
    for method in ("memory/timeline", "memory/recall", "memory/forget"):
        with pytest.raises(ProtocolError) as caught:
            peer.call(method, {"where": where})
        assert caught.value.code == ErrorCode.INVALID_PARAMS
        assert (caught.value.data or {}).get("field") == field, caught.value.message
        assert field in caught.value.message
    assert len(_all(peer)) == before, "nothing was deleted"


def test_forget_takes_operators_and_deletes_just_the_matches(peer: Connection) -> None:
    where = {"v": {"$gte": 1, "$lte": 10}}
    doomed = _ids(peer, where)
    assert len(doomed) == 3  # 1, 2.5 and 10
    assert peer.call("memory/forget", {"where": where})["forgotten"] == 3
    assert not _ids(peer, where)
    assert len(_all(peer)) == len(MIXED) + 2 - 3


def _page_all(peer: Connection, size: int, **params: Any) -> tuple[list[str], int]:
    ids: list[str] = []
    cursor: str | None = ""
    calls = 0
    while cursor is not None:
        result = peer.call("memory/timeline", {**params, "limit": size, "cursor": cursor})
        ids += [r["id"] for r in result["records"]]
        cursor = result["next_cursor"]
        calls += 1
    return ids, calls


def test_cursor_pages_oldest_first_to_the_end(peer: Connection) -> None:
    every = [r["id"] for r in _all(peer)]
    for size in (1, 5, 17, 18, 1000):
        ids, calls = _page_all(peer, size)
        assert ids == every, f"pages of {size}"
        assert calls == max(1, -(-len(every) // size)), "the last page says it is the last"
    ids, _ = _page_all(peer, 4, where={"v": {"$exists": True}})
    assert ids == [r["id"] for r in _all(peer) if matches({"v": {"$exists": True}}, r)]


def test_a_cursor_is_bound_to_its_store_and_its_listing(peer: Connection) -> None:
    first = peer.call("memory/timeline", {"limit": 2, "cursor": ""})["next_cursor"]
    assert isinstance(first, str)
    with A2MServer() as other, other.connect() as stranger:
        stranger.call("memory/remember", {"records": [{"content": "x"}, {"content": "y"}]})
        foreign = stranger.call("memory/timeline", {"limit": 1, "cursor": ""})["next_cursor"]
    flipped = first[:-1] + ("A" if first[-1] != "A" else "B")
    for cursor, params in itertools.chain(
        [(foreign, {}), (flipped, {}), ("garbage", {}), ("p1.e30.AAAA", {})],
        [(first, {"where": {"role": "user"}}), (first, {"key_prefix": "a"})],
    ):
        with pytest.raises(ProtocolError) as caught:
            peer.call("memory/timeline", {"limit": 2, "cursor": cursor, **params})
        assert caught.value.code == ErrorCode.INVALID_PARAMS
        assert (caught.value.data or {}).get("field") == "cursor"


def test_describe_declares_both_and_a_plain_server_neither() -> None:
    with A2MServer() as server, server.connect() as connection:
        described = connection.call("memory/describe", {})
        assert described["timeline"] == {"cursor": True}
        assert described["where"]["operators"] == [
            "$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$and", "$or"
        ]  # fmt: skip
    plain = ServerConfig(timeline_cursor=False, where_operators=False)
    with A2MServer(plain) as server, server.connect() as connection:
        described = connection.call("memory/describe", {})
        assert "timeline" not in described
        assert "where" not in described


def test_a_plain_server_ignores_a_cursor_and_refuses_operators() -> None:
    plain = ServerConfig(timeline_cursor=False, where_operators=False)
    with A2MServer(plain) as server, server.connect() as connection:
        connection.call("memory/remember", {"records": [{"content": f"c{n}"} for n in range(5)]})
        result = connection.call("memory/timeline", {"limit": 2, "cursor": ""})
        assert [r["content"] for r in result["records"]] == ["c3", "c4"], "the newest two (§4.4)"
        assert "next_cursor" not in result
        for where in ({"n": {"$gt": 1}}, {"metadata.a.b": 1}, {"$or": [{"n": 1}]}):
            with pytest.raises(ProtocolError) as caught:
                connection.call("memory/timeline", {"where": where})
            assert caught.value.code == ErrorCode.INVALID_PARAMS
        assert connection.call("memory/timeline", {"where": {"role": None}})["records"]


@pytest.mark.parametrize("name", ["metadata.", "metadata..v", "metadata.a."])
def test_a_key_that_is_no_path_matches_the_metadata_key_of_that_name(name: str) -> None:
    with A2MServer() as server, server.connect() as connection:
        connection.call("memory/describe", {})
        connection.call(
            "memory/remember",
            {"records": [{"content": "named", "metadata": {name: 1}}, {"content": "other"}]},
        )
        found = connection.call("memory/timeline", {"where": {name: 1}})["records"]
        assert [record["content"] for record in found] == ["named"]
