"""A2MStore on servers that differ in what they declare: a small ``max_recall_limit``
(listings must page to stay complete), servers with and without the ``timeline`` cursor
and ``where`` operators, one declaring no ``max_recall_limit``, one taking 2 records a
call, ones lacking an optional capability. Every answer must match InMemoryStore's; where
one call cannot carry it (no cursor, a small limit) the store says so
(``a2m.IncompleteListing``); a server without ``keys`` is refused with one typed error."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore
from store_kit import WordHashEmbeddings, drop_empty_namespaces, view

from a2m import (
    A2MClient,
    AsyncA2MClient,
    CapabilityNotSupported,
    IncompleteListing,
    InvalidParams,
)
from a2m_langchain.langgraph import A2MStore, AsyncA2MStore
from a2m_server.config import LimitsConfig, ServerConfig
from a2m_server.server import A2MServer
from a2m_testing.servers import MethodLog
from a2m_testing.shapes import EVERY_CAPABILITY, SERVER_SHAPES, SMALL_RECALL_NO_CURSOR, lacking

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = pytest.mark.usefixtures("store_backend")

SERVERS = {
    "cursor+operators": {},
    "plain 0.1": {"timeline_cursor": False, "where_operators": False},
}


def _config(name: str, **limits: int) -> ServerConfig:
    options: dict[str, Any] = dict(SERVERS[name])
    if limits:
        options["limits"] = LimitsConfig(**limits)
    return ServerConfig(**options)


TRICKY: list[dict[str, Any]] = [
    {"n": 5, "tag": "red", "flag": True},
    {"n": "5", "tag": "red", "flag": 1},
    {"n": 1, "tag": "blue", "flag": False},
    {"n": True, "tag": "blue", "flag": 0},
    {"n": 2.5, "tag": None},
    {"n": [5], "tag": ["red"]},
    {"tag": {"x": "red"}},
    {"n": 0},
]
FILTERS: list[dict[str, Any]] = [
    {"tag": "red"},
    {"n": 1},
    {"n": 5},
    {"n": 0},
    {"flag": True},
    {"flag": 1},
    {"n": {"$gt": 3}},
    {"n": {"$gte": 1}},
    {"n": {"$lt": 2}},
    {"n": {"$ne": 5}},
    {"n": {"$eq": 2.5}},
    {"tag": {"$ne": "red"}},
    {"tag": None},
    {"tag": ["red"]},
    {"tag": {"x": "red"}},
    {"n": {"$gt": 0, "$lt": 10}, "tag": "red"},
]


@pytest.mark.parametrize("server_kind", list(SERVERS))
def test_filters_mean_what_they_mean_in_langgraph(server_kind: str) -> None:
    with A2MServer(_config(server_kind)) as server, A2MClient.in_process(server) as client:
        ours, theirs = A2MStore(client), InMemoryStore()
        for store in (ours, theirs):
            for i, value in enumerate(TRICKY):
                store.put(("t",), f"k{i}", value)
        for filter in FILTERS:
            try:
                want = view(theirs.search(("t",), filter=filter, limit=50))
            except (TypeError, ValueError):  # InMemoryStore fails on float("x") or float([5])
                want = None
            got = view(ours.search(("t",), filter=filter, limit=50))
            if want is not None:
                assert got == want, filter


NUMBER_LIKE: list[Any] = [
    5, "5", " 7 ", "1e1", "-2.5", "inf", "nan", True, False, 0, 1, 1.0, 2.5, -3,
    2**53 + 1, 2**54 - 1, -(2**53) - 1, 10**30,
]  # fmt: skip
"""Every value here converts with ``float()``, so InMemoryStore orders them all."""
BOUNDS: list[Any] = [0, 1, 0.5, -3, True, False, "4", 2**53, 2**53 + 1, 2**54, -(2**53), 1e300]


@pytest.mark.parametrize("server_kind", list(SERVERS))
def test_ordering_filters_convert_to_numbers_as_langgraph_does(server_kind: str) -> None:
    with A2MServer(_config(server_kind)) as server, A2MClient.in_process(server) as client:
        ours, theirs = A2MStore(client), InMemoryStore()
        for store in (ours, theirs):
            for i, value in enumerate(NUMBER_LIKE):
                store.put(("t",), f"k{i}", {"n": value, "m": value, "tag": "red" if i % 2 else "x"})
        filters: list[dict[str, Any]] = [
            {"n": {op: bound}} for op in ("$gt", "$gte", "$lt", "$lte") for bound in BOUNDS
        ]
        filters += [
            {"n": {"$gt": 0, "$lte": 5}, "tag": "red"},
            {"n": {"$gte": False, "$lt": 2**54}, "m": {"$gt": -1}},
            {"n": {"$gt": 0}, "m": {"$lt": 6}, "tag": {"$ne": "x"}},
            {"n": {"$ne": 1}},
            {"n": {"$eq": True}},
            {"n": 0},
            {"n": False},
            {"n": 1.0},
            {"n": {"$ne": False}},
            {"n": None},
            {"missing": None},
            {"missing": {"$ne": None}},
        ]
        for filter in filters:
            want = view(theirs.search(("t",), filter=filter, limit=50))
            assert view(ours.search(("t",), filter=filter, limit=50)) == want, filter
            assert view(ours.search(("t",), filter=filter, limit=2, offset=1)) == want[1:3]


def test_an_ordering_filter_sends_back_only_its_candidates() -> None:
    """Numbers out of range stay on the server; strings cross (``"7"`` may pass)."""
    with A2MServer() as server:
        sent: list[int] = []

        class Counting:
            def connect(self, **options: Any) -> Any:
                connection = server.connect(**options)

                class Counted:
                    def handle(self, message: str) -> str | None:
                        answer = connection.handle(message)
                        result = json.loads(answer or "{}").get("result", {})
                        sent.append(len(result.get("records", [])))
                        return answer

                    def close(self) -> None:
                        connection.close()

                return Counted()

        with A2MClient.in_process(Counting()) as client:  # type: ignore[arg-type]
            store = A2MStore(client)
            store.batch([PutOp(("t",), f"k{i}", {"n": i}) for i in range(200)])
            store.put(("t",), "text", {"n": "x"})
            store.put(("t",), "number", {"n": "1000"})
            sent.clear()
            hits = store.search(("t",), filter={"n": {"$gte": 190}}, limit=50)
            assert [h.key for h in hits] == [*(f"k{i}" for i in range(190, 200)), "number"]
            assert sent == [12], "the ten in range and the two strings, in one call"


@pytest.mark.parametrize("server_kind", ["cursor+operators"])
def test_listings_stay_complete_past_the_recall_limit(server_kind: str) -> None:
    config = _config(server_kind, max_recall_limit=40)
    with A2MServer(config) as server, A2MClient.in_process(server) as client:
        ours, theirs = A2MStore(client), InMemoryStore()
        for store in (ours, theirs):
            for i in range(130):
                store.put(("big", f"part-{i % 7}"), f"k{i:03}", {"i": i, "even": i % 2 == 0})
        for limit, offset in [(10, 0), (25, 60), (100, 30), (5, 125)]:
            for prefix in [("big", "part-3"), ("big",)]:
                got = ours.search(prefix, limit=limit, offset=offset)
                want = theirs.search(prefix, limit=limit, offset=offset)
                if prefix == ("big",):
                    assert len(got) == len(want)
                else:
                    assert view(got) == view(want)
        everything = ours.search(("big",), limit=1000)
        assert sorted(i.value["i"] for i in everything) == list(range(130))
        evens = ours.search(("big",), filter={"even": True}, limit=1000)
        assert len(evens) == 65
        drop_empty_namespaces(theirs)
        assert ours.list_namespaces() == theirs.list_namespaces()
        assert ours.list_namespaces(limit=3, offset=2) == theirs.list_namespaces(limit=3, offset=2)


def test_the_saver_lists_every_checkpoint_past_the_recall_limit() -> None:
    from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_metadata

    from a2m_langchain.langgraph import A2MSaver

    config = _config("cursor+operators", max_recall_limit=20)
    with A2MServer(config) as server, A2MClient.in_process(server) as client:
        saver = A2MSaver(client)
        parent = None
        for step in range(55):
            at: dict[str, Any] = {"configurable": {"thread_id": "long", "checkpoint_ns": ""}}
            if parent:
                at["configurable"]["checkpoint_id"] = parent
            stored = saver.put(at, generate_checkpoint(), generate_metadata(step=step), {})  # type: ignore[arg-type]
            parent = stored["configurable"]["checkpoint_id"]
        thread: Any = {"configurable": {"thread_id": "long"}}
        steps = [t.metadata["step"] for t in saver.list(thread, filter={"source": "loop"})]
        assert steps == list(range(54, -1, -1))
        assert saver.get_tuple(thread).metadata["step"] == 54  # type: ignore[union-attr]


SHAPES = {**SERVER_SHAPES, **lacking("embeddings", "events", "scopes", "sessions", "tiers")}
"""Conformant server shapes on which every answer must equal InMemoryStore's."""


def _answers(store: Any) -> dict[str, Any]:
    """What each store method answers on one small scenario."""
    for i in range(7):
        store.put(("users", f"u{i % 2}"), f"k{i}", {"i": i, "even": i % 2 == 0, "text": f"tea {i}"})
    store.batch([PutOp(("bulk",), f"b{i}", {"i": i}) for i in range(5)])
    store.delete(("users", "u0"), "k0")
    if isinstance(store, InMemoryStore):
        drop_empty_namespaces(store)
    return {
        "search": view(store.search(("users",))),
        "search 2 from 3": view(store.search(("users",), limit=2, offset=3)),
        "filtered": view(store.search(("users",), filter={"even": True}, limit=20)),
        "bulk": view(store.search(("bulk",), limit=20)),
        "namespaces": store.list_namespaces(),
        "get": view([store.get(("users", "u1"), "k1"), store.get(("users", "u0"), "k0")]),
    }


def _on(config: ServerConfig) -> tuple[dict[str, Any], int]:
    with A2MServer(config) as server, A2MClient.in_process(server) as client:
        answers = _answers(A2MStore(client))
        return answers, len(A2MStore(client).search(("users",), query="tea", limit=10))


@pytest.fixture(scope="module")
def on_the_default_server() -> tuple[dict[str, Any], int]:
    answers, found = _on(ServerConfig())
    oracle = _answers(InMemoryStore())
    for name, answer in oracle.items():  # InMemoryStore orders namespaces its own way
        if name == "search 2 from 3":  # so a page across namespaces holds other items
            assert len(answers[name]) == len(answer)
        else:
            assert sorted(map(repr, answers[name])) == sorted(map(repr, answer)), name
    return answers, found


@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_method_answers_as_on_the_default_server(
    shape: str, on_the_default_server: tuple[dict[str, Any], int]
) -> None:
    got, found = _on(ServerConfig(**SHAPES[shape]))
    want, all_found = on_the_default_server
    for name, answer in want.items():
        assert got[name] == answer, name
    # A ranked search asks for no more than one call returns: at most 3 there, else all 6.
    assert all_found == 6
    assert found == (3 if "max_recall_limit 3" in shape else 6)


def test_without_a_cursor_a_small_limit_warns_rather_than_cuts_short() -> None:
    config = ServerConfig(**SMALL_RECALL_NO_CURSOR)
    with A2MServer(config) as server, A2MClient.in_process(server) as client:
        store = A2MStore(client)
        for i in range(5):
            store.put(("users",), f"k{i}", {"i": i})
        with pytest.warns(IncompleteListing, match="max_recall_limit"):
            found = store.search(("users",), limit=10)
        assert [item.key for item in found] == ["k2", "k3", "k4"]
        with pytest.warns(IncompleteListing):
            assert store.list_namespaces() == [("users",)]


def test_a_server_without_keys_is_refused_at_the_first_call() -> None:
    with A2MServer(ServerConfig(capabilities=EVERY_CAPABILITY - {"keys"})) as server:
        log = MethodLog(server)
        with A2MClient.in_process(log) as client:
            store = A2MStore(client)
            with pytest.raises(CapabilityNotSupported, match="'keys'"):
                store.put(("users",), "k", {"i": 1})
            with pytest.raises(CapabilityNotSupported, match="'keys'"):
                store.search(("users",))
        assert log.count("memory/remember") == log.count("memory/timeline") == 0


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_batch_of_puts_refused_after_earlier_calls_took_part_writes_nothing(
    flavour: str,
) -> None:
    """Two records a call, and a fifth put larger than the server stores: the first two
    calls were taken, the third refused. The item the first call replaced is back as it
    was, vector included, and the items they added are gone, as PostgresStore's one
    transaction would leave them; without the long put, the batch is stored whole."""
    index = {"dims": 64, "embed": WordHashEmbeddings(), "fields": ["text"]}
    config = ServerConfig(limits=LimitsConfig(max_records_per_call=2, max_metadata_bytes=400))
    space = ("team", "notes")
    puts = [PutOp(space, f"k{n}", {"text": f"new tea note {n}"}) for n in range(4)]
    too_long = PutOp(space, "long", {"text": "tea " * 200})
    with A2MServer(config) as server, A2MClient.in_process(server) as client:
        store = A2MStore(client, index=index)
        store.put(space, "k0", {"text": "old coffee note"})
        before = client.timeline(embeddings=True).records
        with pytest.raises(InvalidParams, match="max_metadata_bytes"):
            _batch(server, flavour, store, [*puts, too_long], index)
        after = client.timeline(embeddings=True).records
        assert [r.model_dump(exclude={"updated_at", "revision"}) for r in after] == [
            r.model_dump(exclude={"updated_at", "revision"}) for r in before
        ]
        assert store.get(space, "k0").value == {"text": "old coffee note"}
        store.batch(puts)
        assert [item.key for item in store.search(space, limit=10)] == [f"k{n}" for n in range(4)]


def _batch(server: A2MServer, flavour: str, store: A2MStore, ops: list[Any], index: Any) -> None:
    """``ops`` through ``store``, or through an async store on its own client."""
    if flavour == "sync":
        store.batch(ops)
        return

    async def run() -> None:
        async with AsyncA2MClient.in_process(server) as client:
            await AsyncA2MStore(client, index=index).abatch(ops)

    asyncio.run(run())
