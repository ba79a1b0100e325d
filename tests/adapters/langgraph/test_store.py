"""A2MStore beside LangGraph's own InMemoryStore on the same operations, over in-process,
JSON-RPC HTTP and REST; and what only a shared store can do: read what other frameworks
wrote, expire items, and answer a batch in a bounded number of calls."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore
from store_kit import (
    BlendOnlyServer,
    CountingServer,
    WordHashEmbeddings,
    drop_empty_namespaces,
    same_ranking,
    view,
)

from a2m import A2MClient, AsyncA2MClient
from a2m.adapter import A2MAdapter
from a2m_langchain.langgraph import A2MStore, AsyncA2MStore, ValueRefused
from a2m_server.server import A2MServer

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = pytest.mark.usefixtures("store_backend")

NAMESPACES = [
    ("docs",),
    ("docs", "user-1"),
    ("docs", "User 2"),
    ("docs", "a/b"),
    ("docs", "entries"),
    ("docs", "日本"),
    ("other",),
]
VALUES: list[dict[str, Any]] = [
    {"text": "python tutorial for beginners", "n": 1, "tag": "red", "nested": {"x": 1}},
    {"text": "typescript guide", "n": 2.5, "tag": "blue", "nested": {"x": 2, "y": [1]}},
    {"text": "rust ownership and borrowing", "n": 10, "tag": "red", "lst": [1, "a"]},
    {"text": "python async patterns", "n": -3, "tag": None, "deep": {"a": {"b": [{}]}}},
]


def _both(client: A2MClient, **options: Any) -> tuple[A2MStore, InMemoryStore]:
    return A2MStore(client, **options), InMemoryStore(**options)


def _fill(*stores: Any) -> None:
    for store in stores:
        for i, namespace in enumerate(NAMESPACES):
            for j, value in enumerate(VALUES):
                # Padding words make every text's vector distinct, so no two hits tie.
                padded = {**value, "text": " ".join([value["text"], *["pad"] * i])}
                store.put(namespace, f"k{j}" if i % 2 else f"key/{j}.é", padded)


def test_gets_puts_deletes_match_inmemory(client: A2MClient) -> None:
    ours, theirs = _both(client)
    _fill(ours, theirs)
    ours.delete(("docs", "a/b"), "key/1.é")
    theirs.delete(("docs", "a/b"), "key/1.é")
    ours.put(("docs",), "key/0.é", {"text": "replaced", "n": 0})
    theirs.put(("docs",), "key/0.é", {"text": "replaced", "n": 0})
    addresses = [(ns, k) for ns in NAMESPACES for k in ("k0", "k1", "key/0.é", "key/1.é", "no")]
    assert view(ours.get(ns, k) for ns, k in addresses) == view(
        theirs.get(ns, k) for ns, k in addresses
    )
    batch = [GetOp(ns, k) for ns, k in addresses]
    assert view(ours.batch(batch)) == view(theirs.batch(batch))  # type: ignore[arg-type]


FILTERS: list[dict[str, Any]] = [
    {"tag": "red"},
    {"tag": None},
    {"n": {"$gt": 1}},
    {"n": {"$gte": 2.5}},
    {"n": {"$lt": 2.5}},
    {"n": {"$lte": 1}},
    {"n": {"$ne": 1}},
    {"n": {"$eq": 10}},
    {"n": {"$gt": 0, "$lt": 5}, "tag": {"$ne": "blue"}},
    {"nested": {"x": 2}},
    {"lst": [1, "a"]},
    {"missing": {"$ne": 1}},
]


@pytest.mark.parametrize("filter", FILTERS)
def test_filtered_searches_match_inmemory(client: A2MClient, filter: dict[str, Any]) -> None:
    ours, theirs = _both(client)
    _fill(ours, theirs)
    for namespace in NAMESPACES:
        for limit, offset in [(10, 0), (2, 1), (1, 3), (100, 0)]:
            got = ours.search(namespace, filter=filter, limit=limit, offset=offset)
            want = theirs.search(namespace, filter=filter, limit=limit, offset=offset)
            if namespace == ("docs",):
                continue  # several namespaces: the order is each store's own (compared below)
            assert view(got) == view(want), (namespace, limit, offset)
    everything = ours.search(("docs",), filter=filter, limit=1000)
    assert sorted(map(repr, view(everything))) == sorted(
        map(repr, view(theirs.search(("docs",), filter=filter, limit=1000)))
    )


def test_paging_is_exact_and_complete(client: A2MClient) -> None:
    store = A2MStore(client)
    for i in range(120):
        store.put(("many", f"n{i % 3}"), f"k{i:03}", {"i": i})
    seen = []
    for offset in range(0, 130, 7):
        seen += store.search(("many",), limit=7, offset=offset)
    assert sorted(item.value["i"] for item in seen) == list(range(120))
    assert [i.value["i"] for i in store.search(("many", "n1"), limit=5, offset=2)] == [
        7,
        10,
        13,
        16,
        19,
    ]


def test_list_namespaces_matches_inmemory(client: A2MClient) -> None:
    ours, theirs = _both(client)
    _fill(ours, theirs)
    ours.put(("x", "docs", "deep", "er"), "k", {"a": 1})
    theirs.put(("x", "docs", "deep", "er"), "k", {"a": 1})
    ours.delete(("other",), "k0")
    theirs.delete(("other",), "k0")
    drop_empty_namespaces(theirs)
    cases: list[dict[str, Any]] = [
        {},
        {"prefix": ("docs",)},
        {"prefix": ("docs", "*")},
        {"suffix": ("entries",)},
        {"suffix": ("*",), "max_depth": 1},
        {"prefix": ("*", "docs")},
        {"max_depth": 2},
        {"limit": 2, "offset": 1},
        {"prefix": ("docs",), "suffix": ("a/b",)},
        {"prefix": ("nothing",)},
    ]
    for case in cases:
        assert ours.list_namespaces(**case) == theirs.list_namespaces(**case), case


def test_semantic_search_matches_inmemory(client: A2MClient) -> None:
    index = {"dims": 64, "embed": WordHashEmbeddings(), "fields": ["text"]}
    ours, theirs = _both(client, index=index)
    _fill(ours, theirs)
    for query in ["python", "guide to typescript", "borrowing rust ownership", "zebra"]:
        for namespace in [("docs",), ("docs", "user-1"), ()]:
            for limit, offset in [(3, 0), (2, 2), (50, 0)]:
                got = ours.search(namespace, query=query, limit=limit, offset=offset)
                want = theirs.search(namespace, query=query, limit=limit, offset=offset)
                if offset == 0:
                    assert same_ranking(got, want), (query, namespace, limit)
                else:
                    assert [round(i.score, 6) for i in got] == [round(i.score, 6) for i in want]
    ours.put(("docs",), "quiet", {"text": "python python"}, index=False)
    hits = ours.search(("docs",), query="python python", limit=100)
    assert "quiet" not in [i.key for i in hits]  # not indexed: found by key, not meaning
    assert ours.get(("docs",), "quiet") is not None
    ours.put(("docs",), "by-field", {"text": "zzz", "title": "python"}, index=["title"])
    assert ours.search(("docs",), query="python", limit=1)[0].key == "by-field"


def test_lexical_search_without_an_index(client: A2MClient) -> None:
    store = A2MStore(client)
    _fill(store)
    hits = store.search(("docs", "user-1"), query="ownership borrowing")
    assert hits[0].value["text"].startswith("rust ownership and borrowing")
    assert hits[0].score is not None


def test_values_round_trip_exactly(client: A2MClient) -> None:
    store = A2MStore(client)
    value = {
        "z": 1,
        "a": 1.0,
        "big": 2**53 + 1,
        "neg": -0.5,
        "s": 'naïve — 日本 \u2028 "quoted"',
        "empty": {},
        "list": [None, True, False, [], {"k": [1.5e-300, 1e300]}],
    }
    store.put(("exact",), "v", value)
    got = store.get(("exact",), "v")
    assert got is not None
    assert got.value == value
    assert list(got.value) == list(value)  # key order too
    assert type(got.value["a"]) is float
    assert type(got.value["z"]) is int
    for bad in ({"t": (1, 2)}, {1: "x"}, {"f": float("nan")}, {"o": object()}):
        with pytest.raises(ValueRefused):
            store.put(("exact",), "bad", bad)
    assert store.get(("exact",), "bad") is None


def test_timestamps_are_the_stores(client: A2MClient) -> None:
    store = A2MStore(client)
    store.put(("t",), "k", {"v": 1})
    first = store.get(("t",), "k")
    time.sleep(0.01)
    store.put(("t",), "k", {"v": 2})
    second = store.get(("t",), "k")
    assert first is not None
    assert second is not None
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    assert second.created_at.tzinfo is not None


def test_invalid_namespaces_are_refused_before_sending(server: A2MServer) -> None:
    counting = CountingServer(server)
    with A2MClient.in_process(counting) as client:
        store = A2MStore(client)
        for bad in [(), ("langgraph", "x"), ("a.b",), ("",)]:
            with pytest.raises(InvalidNamespaceError):
                store.put(bad, "k", {"v": 1})
        with pytest.raises(InvalidNamespaceError):
            store.batch([PutOp(("ok",), "k", {"v": 1}), PutOp(("no.pe",), "k", {"v": 1})])
        assert not counting.calls
        assert store.get(("ok",), "k") is None  # the good half of the batch was not written


def test_records_other_adapters_wrote_are_items(client: A2MClient, binding: str) -> None:
    store = A2MStore(client)
    A2MAdapter(client, "users/alice", source_framework="crewai").write(
        "pref", "semantic", {"theme": "dark"}
    )
    client.remember({"content": "the deploy key rotates every 90 days", "key": "ops/deploy-key"})
    item = store.get(("users", "alice"), "pref")
    assert item is not None
    assert item.value == {"theme": "dark"}
    raw = store.get(("ops",), "deploy-key")
    assert raw is not None
    assert raw.value == {"content": "the deploy key rotates every 90 days"}
    assert [i.key for i in store.search(("users",))] == ["pref"]
    assert store.search(("ops",), query="deploy key rotation")[0].key == "deploy-key"
    assert ("users", "alice") in store.list_namespaces()
    # And the other way: an item is an entry any adapter reads.
    store.put(("users", "alice"), "city", {"name": "Lyon"})
    entry = A2MAdapter(client, "users/alice").read("city")
    assert entry is not None
    assert entry.value == {"name": "Lyon"}
    assert entry.meta.source_framework == "langgraph"


def test_ttl_expires_and_refreshes_on_read(client: A2MClient) -> None:
    store = A2MStore(client, ttl={"default_ttl": 2 / 60, "refresh_on_read": True})
    assert store.supports_ttl
    store.put(("ttl",), "kept", {"v": 1})
    store.put(("ttl",), "left", {"v": 2})
    store.put(("ttl",), "forever", {"v": 3}, ttl=None)
    written = store.get(("ttl",), "kept", refresh_ttl=False)
    assert written is not None
    time.sleep(1.2)
    refreshed = store.get(("ttl",), "kept")  # refreshed: two more seconds from now
    assert refreshed is not None
    time.sleep(1.2)
    assert store.get(("ttl",), "left", refresh_ttl=False) is None
    again = store.get(("ttl",), "kept", refresh_ttl=False)
    assert again is not None
    assert again.updated_at == written.updated_at  # a refresh is not an update
    assert store.get(("ttl",), "forever") is not None


def test_a_batch_costs_a_bounded_number_of_calls(server: A2MServer) -> None:
    counting = CountingServer(server)
    with A2MClient.in_process(counting) as client:
        store = A2MStore(client, index={"dims": 64, "embed": WordHashEmbeddings()})
        store.get(("warm",), "up")
        counting.reset()
        store.batch([PutOp(("b", str(i)), f"k{i}", {"text": f"item {i}"}) for i in range(50)])
        assert counting.calls == {"memory/remember": 1}
        counting.reset()
        results = store.batch([GetOp(("b", str(i)), f"k{i}") for i in range(50)])
        assert counting.calls == {"memory/timeline": 1}
        assert [r.value["text"] for r in results] == [f"item {i}" for i in range(50)]  # type: ignore[union-attr]
        counting.reset()
        item = store.get(("b", "7"), "k7")
        assert counting.calls == {"memory/fetch": 1}  # one get: one fetch, nothing else
        assert item is not None
        assert item.value == {"text": "item 7"}
        counting.reset()
        store.batch([SearchOp(("b",), {"text": "item 3"}), SearchOp(("b",), query="item 7")])
        assert counting.calls == {"memory/timeline": 1, "memory/recall": 1}
        counting.reset()
        hits = store.search(("b",), query="item 7", filter={"text": "item 7"}, limit=3)
        assert counting.calls == {"memory/recall": 1}  # ranked by the server, no vectors
        assert [h.key for h in hits] == ["k7"]


def test_async_store_matches_the_sync_one(server: A2MServer) -> None:
    async def run() -> None:
        async with AsyncA2MClient.in_process(server) as client:
            store = AsyncA2MStore(client, index={"dims": 64, "embed": WordHashEmbeddings()})
            await store.aput(("a",), "k", {"text": "async python"})
            item = await store.aget(("a",), "k")
            assert item is not None
            assert item.value == {"text": "async python"}
            hits = await store.asearch(("a",), query="python")
            assert [h.key for h in hits] == ["k"]
            assert await store.alist_namespaces() == [("a",)]
            with pytest.raises(asyncio.InvalidStateError):
                store.get(("a",), "k")  # on the loop: it would deadlock
            # From a worker thread, the sync surface runs on the store's loop.
            found = await asyncio.to_thread(store.get, ("a",), "k")
            assert found is not None
            await store.adelete(("a",), "k")
            assert await store.aget(("a",), "k") is None

    asyncio.run(run())
    with A2MClient.in_process(server) as sync_client:
        assert A2MStore(sync_client).get(("a",), "k") is None


def test_every_tuple_is_addressable_even_long_ones(client: A2MClient) -> None:
    ours, theirs = _both(client)
    long_label, long_key = "Ünïcode/" * 40, "key/" * 200
    for store in (ours, theirs):
        store.put(("docs", long_label), long_key, {"v": 1})
        store.put(("docs", long_label), "short", {"v": 2})
    assert view([ours.get(("docs", long_label), long_key)]) == view(
        [theirs.get(("docs", long_label), long_key)]
    )
    assert view(ours.search(("docs", long_label))) == view(theirs.search(("docs", long_label)))
    assert ours.list_namespaces(prefix=("docs",)) == [("docs", long_label)]


def test_filtered_semantic_search_matches_inmemory(client: A2MClient) -> None:
    index = {"dims": 64, "embed": WordHashEmbeddings(), "fields": ["text"]}
    ours, theirs = _both(client, index=index)
    _fill(ours, theirs)
    for filter in [{"tag": "red"}, {"n": {"$gt": 1}}, {"nested": {"x": 2}}]:
        for query in ["python", "rust ownership"]:
            got = ours.search(("docs",), query=query, filter=filter, limit=4)
            want = theirs.search(("docs",), query=query, filter=filter, limit=4)
            assert same_ranking(got, want), (filter, query)


def test_semantic_search_re_scores_vectors_on_a_server_that_only_blends(
    server: A2MServer,
) -> None:
    # Without describe's recall.rank the store ranks the blend's candidates by their
    # vectors itself; the answers are the same.
    with A2MClient.in_process(BlendOnlyServer(server)) as client:  # type: ignore[arg-type]
        assert client.describe().recall is None
        test_semantic_search_matches_inmemory(client)
    with A2MServer() as fresh, A2MClient.in_process(BlendOnlyServer(fresh)) as client:  # type: ignore[arg-type]
        test_filtered_semantic_search_matches_inmemory(client)


def test_scores_are_the_same_without_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    from a2m_langchain.langgraph import _items

    vectors = [[1.0, 0.0, 2.0], [0.0, 0.0, 0.0], None, [1.0, 1.0], [-3.0, 0.5, 1.0]]
    with_numpy = _items.cosines([1.0, 2.0, 3.0], vectors)
    monkeypatch.setattr(_items, "_numpy", lambda: None)
    without = _items.cosines([1.0, 2.0, 3.0], vectors)
    assert without[2] is None
    assert without[3] is None
    assert without[1] == 0.0
    for a, b in zip(with_numpy, without, strict=True):
        assert (a is None and b is None) or abs(a - b) < 1e-12  # type: ignore[operator]


def test_a_thousand_gets_and_deletes_in_one_batch(client: A2MClient) -> None:
    store = A2MStore(client)
    store.batch([PutOp(("n",), f"k{i}", {"i": i}) for i in range(1000)])
    found = store.batch([GetOp(("n",), f"k{i}") for i in range(1000)])
    assert [r.value["i"] for r in found] == list(range(1000))  # type: ignore[union-attr]
    store.batch([PutOp(("n",), f"k{i}", None) for i in range(1000)])
    assert store.search(("n",)) == []


def test_a_server_without_vectors_ranks_queries_by_text() -> None:
    from a2m_server.config import ServerConfig

    config = ServerConfig().with_capabilities(["core", "keys", "tiers", "sessions"])
    with A2MServer(config) as server, A2MClient.in_process(server) as client:
        store = A2MStore(client, index={"dims": 64, "embed": WordHashEmbeddings()})
        store.put(("d",), "a", {"text": "rust ownership"})
        store.put(("d",), "b", {"text": "python typing"})
        assert store.search(("d",), query="python")[0].key == "b"


def test_a_root_namespace_places_the_stores_items(client: A2MClient) -> None:
    scoped = A2MStore(client, namespace="app/v1")
    scoped.put(("users", "alice"), "pref", {"theme": "dark"})
    assert client.fetch("app/v1/users/alice/pref").record is not None
    assert scoped.list_namespaces() == [("users", "alice")]
    everything = A2MStore(client)
    assert everything.list_namespaces() == [("app", "v1", "users", "alice")]
    item = everything.get(("app", "v1", "users", "alice"), "pref")
    assert item is not None
    assert item.value == {"theme": "dark"}
    with pytest.raises(ValueError):
        A2MStore(client, namespace="Not Valid")


def test_each_principal_reads_its_own_item_where_both_put_one(server: A2MServer) -> None:
    from a2m_testing.servers import serve_http

    with (
        serve_http(server, tokens={"token-a": "alice", "token-b": "bob"}) as url,
        A2MClient(url, token="token-a") as alice,
        A2MClient(url, token="token-b") as bob,
    ):
        A2MStore(alice).put(("team",), "goal", {"text": "ship it"})
        A2MStore(alice).put(("team",), "other", {"text": "alice only"})
        seen = A2MStore(bob).get(("team",), "goal")
        assert seen is not None
        assert seen.value == {"text": "ship it"}  # bob holds none: he reads alice's
        A2MStore(bob).put(("team",), "goal", {"text": "ship it friday"})
        for store, mine in ((A2MStore(alice), "ship it"), (A2MStore(bob), "ship it friday")):
            # As memory/fetch answers: the caller's own record, one call or a batch.
            own = store.get(("team",), "goal")
            assert own is not None
            assert own.value == {"text": mine}
            both = store.batch([GetOp(("team",), "goal"), GetOp(("team",), "other")])
            assert [i.value["text"] for i in both if i is not None] == [mine, "alice only"]
            listed = store.search(("team",))
            assert sorted((i.key, i.value["text"]) for i in listed) == [
                ("goal", mine),
                ("other", "alice only"),
            ]
            found = store.search(("team",), query="ship")
            assert [i.key for i in found].count("goal") == 1
            assert store.list_namespaces() == [("team",)]


def test_filters_find_records_other_frameworks_wrote(client: A2MClient) -> None:
    store = A2MStore(client)
    client.remember({"content": "hello", "key": "notes/greeting"})
    store.put(("notes",), "mine", {"content": "hello"})
    found = store.search(("notes",), filter={"content": "hello"})
    assert sorted(i.key for i in found) == ["greeting", "mine"]
