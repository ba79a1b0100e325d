"""Complete listing and operator filters beyond the contract suite: a listing over real HTTP
while another client writes all the while; a server with both features switched off, which
must see no cursor and no operator on the wire while the adapter still answers rightly
(filtering itself, and saying when the server's cap truncated a listing); and refusals
before anything is sent."""

from __future__ import annotations

import inspect
import itertools
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import anyio
import httpx
import pytest
import respx

from a2m import A2MClient, AsyncA2MClient, CapabilityNotSupported, InvalidParams
from a2m.adapter import A2MAdapter, AsyncA2MAdapter
from a2m.transports import use_httpx
from a2m_server.config import LimitsConfig, ServerConfig
from a2m_testing.mock_http import route_to_server

pytestmark = pytest.mark.anyio

Adapter = A2MAdapter | AsyncA2MAdapter
PLAIN = ServerConfig(timeline_cursor=False, where_operators=False)
"""A server answering as a plain 0.1 server: no cursor, equality-only where."""


async def settle(result: Any) -> Any:
    return await result if inspect.isawaitable(result) else result


async def drain(iterator: Any) -> list[Any]:
    """Everything an entry iterator (sync or async) yields."""
    if hasattr(iterator, "__aiter__"):
        return [entry async for entry in iterator]
    return list(iterator)


def batch(count: int, prefix: str = "k") -> list[dict[str, Any]]:
    return [
        {
            "key": f"{prefix}{n:05d}",
            "type": "semantic",
            "value": {"n": n},
            "meta": {"score": n, "team": "red" if n % 2 else "blue", "deep": {"level": n % 4}},
        }
        for n in range(count)
    ]


# --- a writer at work during the listing -----------------------------------------------


def test_iter_entries_over_http_while_another_client_writes(a2m_http_url: str) -> None:
    originals = batch(3000)
    with A2MClient(a2m_http_url) as reader, A2MClient(a2m_http_url) as writer_client:
        adapter = A2MAdapter(reader, "acme/wf-1")
        writer = A2MAdapter(writer_client, "acme/wf-1")
        adapter.write_many(originals)
        stop = threading.Event()
        deleted: list[str] = []
        failures: list[BaseException] = []

        def write_all_the_while() -> None:
            try:
                n = 0
                while not stop.is_set():
                    writer.write_many(batch(20, prefix=f"late{n:03d}-"))
                    writer.write("k00010", "semantic", {"n": "replaced"})  # listed early
                    doomed = f"k{2999 - n:05d}"
                    writer.delete(doomed)  # listed late, if at all
                    deleted.append(doomed)
                    n += 1
            except BaseException as exc:
                failures.append(exc)

        thread = threading.Thread(target=write_all_the_while)
        thread.start()
        try:
            listed = [entry.key for entry in adapter.iter_entries(page_size=150)]
        finally:
            stop.set()
            thread.join(timeout=60)
        assert not failures, failures
        assert deleted, "the writer ran during the listing"
        assert len(listed) == len(set(listed)), "no entry listed twice"
        present = [e["key"] for e in originals if e["key"] not in set(deleted)]
        seen = set(listed)
        assert all(key in seen for key in present), "every entry present throughout is listed"
        assert [k for k in listed if not k.startswith("late")] == [
            k for k in (e["key"] for e in originals) if k in seen
        ], "oldest first"


async def test_async_iter_entries_while_another_task_writes(a2m_http_url: str) -> None:
    async with AsyncA2MClient(a2m_http_url) as reader, AsyncA2MClient(a2m_http_url) as other:
        adapter = AsyncA2MAdapter(reader, "acme/wf-1")
        writer = AsyncA2MAdapter(other, "acme/wf-1")
        await adapter.write_many(batch(2000))
        listed: list[str] = []

        async def listing() -> None:
            listed.extend([entry.key async for entry in adapter.iter_entries(page_size=100)])

        async with anyio.create_task_group() as group:
            group.start_soon(listing)
            for n in range(10):
                await writer.write_many(batch(10, prefix=f"late{n}-"))
        assert len(listed) == len(set(listed))
        assert [k for k in listed if k.startswith("k")] == [e["key"] for e in batch(2000)]


# --- a plain server: nothing of either extension goes on the wire ---------------------


class Recorder:
    """Adapters on one server, reached at its own URL through respx, which keeps every
    request."""

    def __init__(self, router: respx.MockRouter, url: str, flavour: str) -> None:
        self.router = router
        self.url = url
        self.flavour = flavour
        self.clients: list[Any] = []

    def adapter(self) -> Adapter:
        if self.flavour == "async":
            async_client = AsyncA2MClient(self.url)
            self.clients.append(async_client)
            return AsyncA2MAdapter(async_client, "acme/wf-1")
        client = A2MClient(self.url)
        self.clients.append(client)
        return A2MAdapter(client, "acme/wf-1")

    def requests(self) -> list[dict[str, Any]]:
        mine = [c for c in self.router.calls if str(c.request.url).startswith(self.url)]
        return [json.loads(call.request.content) for call in mine]

    async def close(self) -> None:
        for client in self.clients:
            if isinstance(client, AsyncA2MClient):
                await client.aclose()
            else:
                client.close()


@pytest.fixture
def recorder_factory(
    a2m_server_factory: Callable[..., Any],
) -> Iterator[Callable[[str, ServerConfig], Recorder]]:
    """``recorder_factory(flavour, config)``: a :class:`Recorder` on a new server."""
    with respx.mock(assert_all_called=False) as router:
        made = itertools.count()

        def make(flavour: str, config: ServerConfig) -> Recorder:
            url = f"http://paging-{next(made)}.test/"
            route_to_server(router, a2m_server_factory(config), url)
            return Recorder(router, url, flavour)

        yield make


@pytest.fixture(params=["sync", "async"])
def flavour(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _extensions_sent(requests: list[dict[str, Any]]) -> list[str]:
    found = []
    for request in requests:
        params = request.get("params") or {}
        if "cursor" in params:
            found.append(f"{request['method']} cursor")
        for name, value in (params.get("where") or {}).items():
            if isinstance(value, dict) or name.startswith("metadata."):
                found.append(f"{request['method']} where.{name}")
    return found


FILTERS = [
    {"score": {"$gte": 70}},
    {"team": "red", "score": {"$lt": 10}},
    {"metadata.deep.level": 3, "score": {"$nin": [3, 7]}},
    {"metadata.deep.absent": {"$exists": False}, "score": {"$lt": 3}},
]


async def test_a_plain_server_gets_no_cursor_and_no_operator(
    recorder_factory: Callable[[str, ServerConfig], Recorder], flavour: str
) -> None:
    plain = recorder_factory(flavour, PLAIN)
    full = recorder_factory(flavour, ServerConfig())
    try:
        on_plain, on_full = plain.adapter(), full.adapter()
        await settle(on_plain.write_many(batch(100)))
        await settle(on_full.write_many(batch(100)))
        assert await settle(on_plain.filter_operators()) == frozenset()
        assert "$gte" in await settle(on_full.filter_operators())
        for where in FILTERS:
            wanted = [e.key for e in (await settle(on_full.list(where=where))).entries]
            assert wanted, f"{where} selects something"
            assert [e.key for e in (await settle(on_plain.list(where=where))).entries] == wanted
            assert [e.key for e in await drain(on_plain.iter_entries(where=where))] == wanted
            page = await settle(on_plain.list(where=where, cursor="", limit=500))
            assert [e.key for e in page.entries] == wanted
            hits = await settle(on_plain.query(text="n", where=where, top_k=50))
            assert {h.entry.key for h in hits} <= set(wanted), "query filters here too"
            assert hits, f"query(where={where}) finds what the full server's does"
        assert _extensions_sent(plain.requests()) == [], "nothing a plain server cannot read"
        assert _extensions_sent(full.requests()), "the full server was sent both"
    finally:
        await plain.close()
        await full.close()


async def test_a_plain_servers_cap_is_reported_as_truncated(
    recorder_factory: Callable[[str, ServerConfig], Recorder], flavour: str
) -> None:
    capped = recorder_factory(flavour, replace(PLAIN, limits=LimitsConfig(max_recall_limit=40)))
    try:
        adapter = capped.adapter()
        await settle(adapter.write_many(batch(30)))
        await settle(adapter.write_many(batch(30, prefix="m")))
        page = await settle(adapter.list(limit=100))
        assert (page.total, page.truncated) == (40, True), "the newest 40, and it says so"
        iterator = adapter.iter_entries()
        entries = await drain(iterator)
        assert len(entries) == 40
        assert iterator.truncated
        assert [e.key for e in entries] == [e.key for e in page.entries]
        by_cursor = await settle(adapter.list(limit=25, cursor=""))
        rest = await settle(adapter.list(limit=25, cursor=by_cursor.next_cursor))
        keys = [e.key for e in by_cursor.entries + rest.entries]
        assert keys == [e.key for e in page.entries]
        assert rest.next_cursor is None
        assert by_cursor.truncated
        assert _extensions_sent(capped.requests()) == []
    finally:
        await capped.close()


async def test_the_client_refuses_either_extension_to_a_plain_server(
    recorder_factory: Callable[[str, ServerConfig], Recorder], flavour: str
) -> None:
    plain = recorder_factory(flavour, PLAIN)
    try:
        client = plain.adapter().client
        await settle(client.describe())
        sent = len(plain.requests())
        for call in (
            lambda: client.timeline(cursor=""),
            lambda: client.timeline(where={"n": {"$gt": 1}}),
            lambda: client.recall(where={"metadata.a.b": 1}),
            lambda: client.forget(where={"n": {"$in": [1]}}),
        ):
            with pytest.raises(CapabilityNotSupported, match="nothing was sent"):
                await settle(call())
        assert len(plain.requests()) == sent, "nothing was sent"
        assert await settle(client.filter_operators()) == frozenset()
        assert await settle(client.pages_by_cursor()) is False
    finally:
        await plain.close()


# --- refusals before anything is sent ------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"where": {"score": {"$regex": "1"}}},
        {"where": {"score": {"$gt": {"a": 1}}}},
        {"where": {"score": {"$in": []}}},
        {"where": {"namespace": "other"}},
        {"where": {"type": "semantic"}},
        {"where": "score > 1"},
        {"cursor": "", "offset": 3},
    ],
    ids=str,
)
async def test_a_bad_listing_is_refused_before_anything_is_sent(
    recorder_factory: Callable[[str, ServerConfig], Recorder], flavour: str, options: Any
) -> None:
    kit = recorder_factory(flavour, ServerConfig())
    try:
        adapter = kit.adapter()
        with pytest.raises(InvalidParams, match="nothing was sent"):
            await settle(adapter.list(**options))
        if "where" in options:
            with pytest.raises(InvalidParams):
                await settle(adapter.query(text="x", where=options["where"]))
            with pytest.raises(InvalidParams):
                adapter.iter_entries(where=options["where"])
        with pytest.raises(InvalidParams):
            adapter.iter_entries(page_size=0)
        assert kit.requests() == [], "not even describe"
    finally:
        await kit.close()


async def test_a_foreign_or_tampered_cursor_is_invalid_params(
    recorder_factory: Callable[[str, ServerConfig], Recorder], flavour: str
) -> None:
    kit = recorder_factory(flavour, ServerConfig())
    other = recorder_factory(flavour, ServerConfig())
    try:
        adapter, stranger = kit.adapter(), other.adapter()
        await settle(adapter.write_many(batch(5)))
        await settle(stranger.write_many(batch(5)))
        mine = (await settle(adapter.list(limit=2, cursor=""))).next_cursor
        theirs = (await settle(stranger.list(limit=2, cursor=""))).next_cursor
        assert isinstance(mine, str)
        for cursor in (theirs, mine[:-2] + "xx", "o:3"):
            with pytest.raises(InvalidParams, match="cursor"):
                await settle(adapter.list(limit=2, cursor=cursor))
        with pytest.raises(InvalidParams, match="cursor"):
            await settle(adapter.list(limit=2, cursor=mine, type="procedural"))
        assert len((await settle(adapter.list())).entries) == 5, "nothing lost"
    finally:
        await kit.close()
        await other.close()


def test_a_server_that_repeats_its_cursor_cannot_make_a_listing_loop() -> None:
    """A faulty server answering every page with the cursor it was given: the listing ends,
    marked truncated, rather than asking for ever."""
    asked: list[Any] = []

    def answer(request: Any) -> Any:
        message = json.loads(request.content)
        params = message.get("params") or {}
        if message["method"] == "memory/describe":
            result: dict[str, Any] = {
                "protocol": "a2m/0.1",
                "name": "stuck",
                "capabilities": ["core", "keys"],
                "methods": ["memory/describe", "memory/timeline", "memory/fetch"],
                "timeline": {"cursor": True},
            }
        else:
            asked.append(params.get("cursor"))
            result = {"records": [], "next_cursor": "stuck"}
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": message["id"], "result": result})

    with use_httpx(), respx.mock(assert_all_called=False) as router:
        router.post("http://stuck.test/").mock(side_effect=answer)
        with A2MClient("http://stuck.test/") as client:
            iterator = A2MAdapter(client, "acme").iter_entries()
            assert list(iterator) == []
            assert iterator.truncated
            page = A2MAdapter(client, "acme").list(cursor="")
            assert page.truncated
    assert asked == ["", "stuck", "", "stuck"], "two calls each, then it stops"
