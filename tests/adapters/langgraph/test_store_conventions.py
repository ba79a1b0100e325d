"""The store behaves as LangGraph's own stores do where users notice: concurrent async calls
merged into few A2M calls, the loop rules, distance types, list prefixes; and it loses
nothing when the server refuses part of a batch, nor changes a value on the way."""

from __future__ import annotations

import asyncio
import math
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore
from store_kit import DIMS, CountingServer, WordHashEmbeddings

from a2m import A2MClient, A2MError, AsyncA2MClient, InvalidParams
from a2m_langchain.langgraph import A2MStore, AsyncA2MStore, ValueRefused
from a2m_langchain.langgraph._items import MAX_VALUE_DEPTH
from a2m_server.server import A2MServer


def test_concurrent_async_calls_merge_into_few_a2m_calls(server: A2MServer) -> None:
    counting = CountingServer(server)

    async def run() -> list[Any]:
        async with AsyncA2MClient.in_process(counting) as client:
            store = AsyncA2MStore(client)
            calls = []
            for i in range(500):
                space = ("t", str(i % 2))
                calls += [
                    store.aput(space, f"k{i}", {"n": i}),
                    store.aget(space, f"k{i}"),
                    store.asearch(("t",)),
                    store.alist_namespaces(max_depth=2),
                ]
            return await asyncio.gather(*calls)

    results = asyncio.run(run())
    assert len(results) == 2000
    # 2,000 operations: one describe, one read of all keys, one search, one listing,
    # one write — the reads see the store as it was before the merged batch.
    assert counting.calls["memory/describe"] == 1
    assert sum(counting.calls.values()) <= 8, counting.calls
    with A2MClient.in_process(server) as client:
        assert len(A2MStore(client).search(("t",), limit=1000)) == 500


def test_one_describe_however_many_batches_wait(server: A2MServer) -> None:
    counting = CountingServer(server)

    async def run() -> None:
        async with AsyncA2MClient.in_process(counting) as client:
            store = AsyncA2MStore(client)
            # abatch called directly, concurrently: not merged, but described once.
            await asyncio.gather(*(store.abatch([PutOp(("d",), f"k{i}", {})]) for i in range(50)))

    asyncio.run(run())
    assert counting.calls["memory/describe"] == 1


class _SlowDescribe(CountingServer):
    """Answers describe after 50 ms, so threads starting together all wait on it."""

    def connect(self, **options: Any) -> Any:
        inner = super().connect(**options)

        class Slow:
            def handle(self, message: str) -> str | None:
                if '"memory/describe"' in message:
                    time.sleep(0.05)
                return inner.handle(message)  # type: ignore[no-any-return]

            def close(self) -> None:
                inner.close()

        return Slow()


def test_threads_sharing_a_sync_store_describe_once(server: A2MServer) -> None:
    counting = _SlowDescribe(server)
    with A2MClient.in_process(counting) as client:
        store = A2MStore(client)
        with ThreadPoolExecutor(max_workers=20) as pool:
            list(pool.map(lambda i: store.get(("t",), f"k{i}"), range(200)))
    assert counting.calls["memory/describe"] == 1


def test_one_refused_put_fails_only_its_own_call(server: A2MServer) -> None:
    async def run() -> None:
        async with AsyncA2MClient.in_process(server) as client:
            await client.remember({"content": "x", "key": "w/v", "embedding": [1.0, 0.0, 0.0]})
            store = AsyncA2MStore(client, index={"dims": DIMS, "embed": WordHashEmbeddings()})
            plain = AsyncA2MStore(client)
            outcomes = await asyncio.gather(
                store.aput(("w",), "wide", {"text": "refused: another vector width"}),
                plain.aput(("w",), "fine", {"text": "kept"}),
                return_exceptions=True,
            )
            assert isinstance(outcomes[0], A2MError)
            assert outcomes[1] is None
            assert await plain.aget(("w",), "fine") is not None

    asyncio.run(run())


def test_puts_too_large_together_but_not_alone_are_each_stored(server: A2MServer) -> None:
    """Eight puts merged into one request past the server's body limit: each is sent
    again alone and stored, as each would be on its own (and in InMemoryStore)."""
    from a2m_testing.servers import serve_http

    async def run(url: str) -> None:
        async with AsyncA2MClient(url) as client:
            store = AsyncA2MStore(client)
            values = [{"text": str(n) * 20_000} for n in range(8)]
            outcomes = await asyncio.gather(
                *(store.aput(("big",), f"k{n}", v) for n, v in enumerate(values)),
                return_exceptions=True,
            )
            assert outcomes == [None] * 8
            for n, value in enumerate(values):
                item = await store.aget(("big",), f"k{n}")
                assert item is not None
                assert item.value == value

    with serve_http(server, max_body_bytes=64 * 1024) as url:
        asyncio.run(run(url))


def test_a_batch_too_large_for_one_request_goes_in_several_all_or_nothing(
    server: A2MServer,
) -> None:
    """Puts that fit the server one by one but not in one request are sent in halves, as
    InMemoryStore and PostgresStore take them; a read refreshing their TTL too. A put no
    request can carry fails the batch, and nothing of it stays."""
    from a2m import PayloadTooLargeError
    from a2m_testing.servers import serve_http

    with serve_http(server, max_body_bytes=64 * 1024) as url, A2MClient(url) as client:
        store = A2MStore(client)
        values = {f"k{n}": {"text": f"{n} " * 4_000} for n in range(12)}
        store.batch([PutOp(("big",), key, value, ttl=60) for key, value in values.items()])
        found = store.search(("big",), limit=20)  # refreshes every TTL: 12 rewrites
        assert {item.key: item.value for item in found} == values
        too_large = {"text": "x" * 70_000}
        with pytest.raises(PayloadTooLargeError):
            store.batch(
                [PutOp(("whole",), f"k{n}", {"text": str(n)}) for n in range(5)]
                + [PutOp(("whole",), "huge", too_large)]
            )
        assert store.search(("whole",)) == []


def test_a_list_namespace_reads_as_the_tuple(server: A2MServer) -> None:
    """As PostgresStore and SqliteStore read it: ``get``, ``search`` and ``delete`` with a
    list find and delete the item a tuple names (it read as no item at all)."""
    with A2MClient.in_process(server) as client:
        store = A2MStore(client)
        store.put(["a", "b"], "k", {"v": 1})  # type: ignore[arg-type]
        item = store.get(["a", "b"], "k")  # type: ignore[arg-type]
        assert item is not None
        assert (tuple(item.namespace), item.value) == (("a", "b"), {"v": 1})
        assert [i.key for i in store.search(["a", "b"])] == ["k"]  # type: ignore[arg-type]
        store.delete(["a", "b"], "k")  # type: ignore[arg-type]
        assert store.get(("a", "b"), "k") is None


@pytest.mark.parametrize(
    ("namespace", "key", "named"),
    [(("e", "\ud800"), "k", "namespace label"), (("e",), "a\udfff", "key")],
    ids=["label", "key"],
)
def test_a_lone_surrogate_in_an_address_is_refused_by_name(
    server: A2MServer, namespace: tuple[str, ...], key: str, named: str
) -> None:
    """UTF-8 text cannot hold a lone surrogate, so no A2M address can: every operation
    naming one raises the adapter's ``AddressError`` (a ``ValueError``) saying so, before
    anything is sent, never a bare ``UnicodeEncodeError``."""
    from a2m_langchain.langgraph._addressing import AddressError

    with A2MClient.in_process(server) as client:
        store = A2MStore(client)
        for operation in (
            lambda: store.put(namespace, key, {"x": 1}),
            lambda: store.get(namespace, key),
            lambda: store.delete(namespace, key),
        ):
            with pytest.raises(AddressError, match=f"{named} .* lone surrogate"):
                operation()
        assert client.timeline().records == []


def test_sync_calls_without_a_loop_or_on_it_raise_invalid_state(server: A2MServer) -> None:
    client = AsyncA2MClient.in_process(server)
    store = AsyncA2MStore(client)
    with pytest.raises(asyncio.InvalidStateError):
        store.put(("a",), "k", {"v": 1})  # no loop runs the store

    async def on_the_loop() -> None:
        with pytest.raises(asyncio.InvalidStateError):
            store.get(("a",), "k")
        await client.aclose()

    asyncio.run(on_the_loop())


def test_a_put_the_server_refuses_leaves_the_batchs_deletes_undone(client: A2MClient) -> None:
    plain = A2MStore(client)
    plain.put(("docs",), "old", {"text": "keep me"})
    client.remember({"content": "fixes the width", "key": "x/y", "embedding": [1.0, 0.0]})
    indexed = A2MStore(client, index={"dims": DIMS, "embed": WordHashEmbeddings()})
    with pytest.raises(A2MError):
        indexed.batch(
            [PutOp(("docs",), "old", None), PutOp(("docs",), "new", {"text": "wider vector"})]
        )
    kept = plain.get(("docs",), "old")
    assert kept is not None
    assert kept.value == {"text": "keep me"}


@pytest.mark.parametrize("distance", ["cosine", "inner_product", "l2"])
def test_distance_types_score_as_langgraph_defines_them(client: A2MClient, distance: str) -> None:
    embed = WordHashEmbeddings()
    store = A2MStore(
        client,
        index={"dims": DIMS, "embed": embed, "distance_type": distance, "fields": ["text"]},  # type: ignore[typeddict-item]
    )
    texts = {"a": "red apple red", "b": "green apple", "c": "blue sky sky sky"}
    for key, text in texts.items():
        store.put(("s",), key, {"text": text})
    query = embed.embed_query("red apple")
    hits = store.search(("s",), query="red apple")
    expected = {}
    for key, text in texts.items():
        vector = embed.embed_query(text)
        dot = sum(a * b for a, b in zip(query, vector, strict=True))
        if distance == "cosine":
            expected[key] = dot / (math.hypot(*query) * math.hypot(*vector))
        elif distance == "inner_product":
            expected[key] = dot
        else:
            expected[key] = -math.dist(query, vector)
    assert [h.key for h in hits] == sorted(expected, key=lambda k: -expected[k])
    for hit in hits:
        assert hit.score == pytest.approx(expected[hit.key], abs=1e-6)


def test_an_unknown_distance_type_is_refused(client: A2MClient) -> None:
    with pytest.raises(ValueError, match="hamming"):
        A2MStore(
            client,
            index={"dims": 4, "embed": WordHashEmbeddings(), "distance_type": "hamming"},  # type: ignore[typeddict-item]
        )


def test_a_list_prefix_reads_as_the_tuple(client: A2MClient) -> None:
    store = A2MStore(client)
    store.put(("a", "b"), "k", {"v": 1})
    assert [i.key for i in store.search(["a"])] == ["k"]  # type: ignore[arg-type]
    assert store.list_namespaces(prefix=["a"]) == [("a", "b")]  # type: ignore[arg-type]
    assert InMemoryStore().list_namespaces(prefix=["a"]) == []  # type: ignore[arg-type]


def _deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"x": value}
    return value


HOSTILE: list[tuple[str, Any]] = [
    ("nan", {"n": float("nan")}),
    ("infinity", {"n": [1, float("inf")]}),
    ("set", {"tags": {"a", "b"}}),
    ("tuple", {"pair": (1, 2)}),
    ("bytes", {"raw": b"\x00\x01"}),
    ("int key", {"nested": {1: "one"}}),
    ("object", {"when": object()}),
    ("deep", _deep(5000)),
    ("one level too deep", _deep(MAX_VALUE_DEPTH)),
    ("lone surrogate", {"text": "\ud800"}),
]


@pytest.mark.parametrize(("name", "value"), HOSTILE, ids=[name for name, _ in HOSTILE])
def test_values_json_cannot_carry_are_refused_before_writing(
    client: A2MClient, name: str, value: dict[str, Any]
) -> None:
    store = A2MStore(client)
    store.put(("h",), "before", {"ok": True})
    with pytest.raises(ValueRefused) as refused:
        store.batch([PutOp(("h",), "before", None), PutOp(("h",), "bad", value)])
    assert isinstance(refused.value, InvalidParams)
    assert "value" in str(refused.value)
    assert [i.key for i in store.search(("h",))] == ["before"]  # nothing written, nothing lost


def test_a_value_as_deep_as_allowed_round_trips(client: A2MClient) -> None:
    value = _deep(MAX_VALUE_DEPTH - 1)  # the value is one level, each {"x": …} another
    store = A2MStore(client)
    store.put(("d",), "deep", value)
    got = store.get(("d",), "deep")
    assert got is not None
    assert got.value == value


def test_a_value_reaches_the_client_as_it_was_put(
    client: A2MClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[Any] = []
    remember = client.remember

    def spy(*args: Any, **kwargs: Any) -> Any:
        sent.append(kwargs.get("records", args[0] if args else None))
        return remember(*args, **kwargs)

    monkeypatch.setattr(client, "remember", spy)
    value = {"text": "é\u2028", "big": 2**70, "f": 0.1, "nested": {"list": [None, True, 1.5]}}
    A2MStore(client).put(("v",), "k", value)
    [record] = sent[0]
    assert record["metadata"]["value"] == value  # nothing converted on the way
    assert type(record["metadata"]["value"]["big"]) is int
    got = A2MStore(client).get(("v",), "k")
    assert got is not None
    assert got.value == value
