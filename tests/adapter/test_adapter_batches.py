"""Batched adapter calls beyond the contract suite: the number of A2M calls each costs, the
server's limits splitting a batch, refusals that write nothing, and owners sharing keys.

Call counts are read off the wire: the client speaks HTTP to an in-process server through
``respx``, which keeps every request."""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import respx

from a2m import A2MClient, A2MConnectionError, A2MError, AsyncA2MClient, InvalidParams
from a2m.adapter import A2MAdapter, AsyncA2MAdapter
from a2m_server.config import LimitsConfig, ServerConfig
from a2m_testing.mock_http import route_to_server

pytestmark = pytest.mark.anyio

Adapter = A2MAdapter | AsyncA2MAdapter
URL = "http://batches.test/"


async def settle(result: Any) -> Any:
    """Awaited for the async flavour, as it is for the sync one."""
    return await result if inspect.isawaitable(result) else result


def entries(count: int, prefix: str = "k") -> list[dict[str, Any]]:
    return [
        {"key": f"{prefix}{n:05d}", "type": "semantic", "value": {"n": n}, "embedding": [1.0, n]}
        for n in range(count)
    ]


@dataclass
class Wire:
    """Adapters of one flavour on a server reached through respx, which keeps every request."""

    flavour: str
    router: respx.MockRouter
    clients: list[Any] = field(default_factory=list)

    def adapter(self, namespace: str = "acme/wf-1", **identity: Any) -> Adapter:
        if self.flavour == "async":
            async_client = AsyncA2MClient(URL)
            self.clients.append(async_client)
            return AsyncA2MAdapter(async_client, namespace, **identity)
        client = A2MClient(URL)
        self.clients.append(client)
        return A2MAdapter(client, namespace, **identity)

    def sent(self) -> list[str]:
        """The A2M methods sent since the last call, in order."""
        methods = [json.loads(call.request.content)["method"] for call in self.router.calls]
        self.router.calls.clear()
        return methods

    async def close(self) -> None:
        for client in self.clients:
            if isinstance(client, AsyncA2MClient):
                await client.aclose()
            else:
                client.close()


@pytest.fixture
def wire_factory(
    request: pytest.FixtureRequest, a2m_server_factory: Callable[..., Any]
) -> Iterator[Callable[..., Wire]]:
    """``wire_factory(flavour, config=None)``: a :class:`Wire` on a fresh server."""
    opened: list[tuple[Wire, Any]] = []

    @contextmanager
    def _router(server: Any) -> Iterator[respx.MockRouter]:
        with respx.mock(assert_all_called=False) as router:
            route_to_server(router, server, URL)
            yield router

    def make(flavour: str, config: ServerConfig | None = None) -> Wire:
        context = _router(a2m_server_factory(config))
        wire = Wire(flavour, context.__enter__())
        opened.append((wire, context))
        return wire

    yield make
    for _, context in reversed(opened):
        context.__exit__(None, None, None)


@pytest.fixture(params=["sync", "async"])
async def wire(
    request: pytest.FixtureRequest, wire_factory: Callable[..., Wire]
) -> AsyncIterator[Wire]:
    kit = wire_factory(request.param)
    yield kit
    await kit.close()


async def test_999_entries_cost_three_calls(wire: Wire) -> None:
    adapter = wire.adapter()
    written = await settle(adapter.write_many(entries(999)))
    assert len(written) == 999
    assert wire.sent() == [
        "memory/describe",
        "memory/timeline",  # no other namespace holds these keys
        "memory/remember",  # the whole batch, one transaction
        "memory/timeline",  # the entries as stored
    ]
    read = await settle(adapter.read_many([e["key"] for e in entries(999)]))
    assert len(read) == 999
    assert wire.sent() == ["memory/timeline"]
    assert await settle(adapter.delete_many([e["key"] for e in entries(999)])) == 999
    assert wire.sent() == ["memory/timeline", "memory/forget"]


async def test_write_read_and_delete_of_one_are_batches_of_one(wire: Wire) -> None:
    adapter = wire.adapter()
    await settle(adapter.write("k", "semantic", "v"))
    assert wire.sent() == [
        "memory/describe",
        "memory/timeline",
        "memory/remember",
        "memory/timeline",
    ]
    await settle(adapter.read("k"))
    assert wire.sent() == ["memory/fetch"]
    await settle(adapter.delete("k"))
    assert wire.sent() == ["memory/timeline", "memory/forget"]
    await settle(adapter.delete("k"))
    assert wire.sent() == ["memory/timeline"], "nothing to forget, nothing sent"


SMALL = ServerConfig(limits=LimitsConfig(max_records_per_call=4, max_recall_limit=6))


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_a_batch_is_split_at_the_servers_limits(
    flavour: str, wire_factory: Callable[..., Wire]
) -> None:
    wire = wire_factory(flavour, SMALL)
    try:
        adapter = wire.adapter()
        batch = entries(10)
        written = await settle(adapter.write_many(batch))
        assert [entry.key for entry in written] == [e["key"] for e in batch]
        sent = wire.sent()
        assert sent.count("memory/remember") == 3, "10 records, 4 a call"
        # scopes are declared, so 5 keys a lookup (one less than 6); 6 ids a read
        assert sent.count("memory/timeline") == 2 + 2, sent
        keys = [e["key"] for e in batch]
        assert sorted(await settle(adapter.read_many(keys))) == keys
        assert await settle(adapter.delete_many(keys)) == 10
        assert await settle(adapter.read_many(keys)) == {}
    finally:
        await wire.close()


async def test_a_batch_the_server_refuses_writes_nothing(
    wire_factory: Callable[..., Wire],
) -> None:
    wire = wire_factory("sync", ServerConfig(limits=LimitsConfig(max_content_length=40)))
    try:
        adapter = wire.adapter()
        batch = [*entries(3), {"key": "long", "type": "semantic", "value": "x" * 100}]
        with pytest.raises(A2MError):
            await settle(adapter.write_many(batch))
        assert await settle(adapter.read_many([e["key"] for e in batch])) == {}
    finally:
        await wire.close()


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_a_batch_refused_after_earlier_calls_took_part_writes_nothing(
    flavour: str, wire_factory: Callable[..., Wire]
) -> None:
    """Four records a call: the first call replaces an entry another framework wrote and
    adds three, the second is refused. The entry is put back as it was (content,
    metadata, vector, session, salience, tier), the three added are removed, and the
    server's refusal is what is raised."""
    config = ServerConfig(limits=LimitsConfig(max_records_per_call=4, max_content_length=40))
    wire = wire_factory(flavour, config)
    try:
        adapter = wire.adapter()
        with A2MClient(URL) as bare:
            bare.remember(
                [
                    {
                        "content": "their note",
                        "key": "acme/wf-1/k00000",
                        "metadata": {"source_framework": "crewai", "namespace": "acme/wf-1"},
                        "session": "their-run",
                        "salience": 0.25,
                        "tier": "semantic",
                        "embedding": [0.5, 0.5],
                    }
                ]
            )
            before = bare.timeline(embeddings=True).records
            wire.sent()
            batch = [*entries(7), {"key": "long", "type": "semantic", "value": "x" * 100}]
            with pytest.raises(A2MError, match="max_content_length"):
                await settle(adapter.write_many(batch))
            assert wire.sent() == [
                "memory/describe",
                "memory/timeline",  # what the keys hold, vectors included
                "memory/remember",
                "memory/remember",  # refused
                "memory/remember",  # the replaced entry put back
                "memory/forget",  # the three added taken back
            ]
            after = bare.timeline(embeddings=True).records
        assert [r.model_dump(exclude={"updated_at", "revision"}) for r in after] == [
            r.model_dump(exclude={"updated_at", "revision"}) for r in before
        ]
    finally:
        await wire.close()


def test_a_server_gone_after_the_first_call_raises_its_own_error_and_says_what_stayed(
    a2m_server_factory: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    """The server goes away after taking the first of two calls: the take-back cannot
    reach it either, so it is logged (naming the records) and the write raises the
    connection error of the call that failed, not a later one; what the first call
    wrote is still there once the server is back."""
    server = a2m_server_factory(ServerConfig(limits=LimitsConfig(max_records_per_call=4)))
    with respx.mock(assert_all_called=False) as router:
        route = route_to_server(router, server, URL)
        answer: Any = route.side_effect
        remembered = 0
        gone = False

        def flaky(request: httpx.Request) -> httpx.Response:
            nonlocal remembered, gone
            if gone:
                raise httpx.ConnectError("connection refused", request=request)
            response = answer(request)
            if json.loads(request.content)["method"] == "memory/remember":
                remembered += 1
                gone = True
            return response

        route.mock(side_effect=flaky)
        with A2MClient(URL, max_retries=0) as client, caplog.at_level("ERROR", "a2m.adapter"):
            adapter = A2MAdapter(client, "acme/wf-1")
            with pytest.raises(A2MConnectionError) as failed:
                adapter.write_many(entries(6))
        assert failed.value.method == "memory/remember"  # not the take-back's forget
        assert remembered == 1
        assert "could not take back 4 records of a failed write" in caplog.text
        gone = False
        with A2MClient(URL) as client:
            assert (
                len(A2MAdapter(client, "acme/wf-1").read_many([e["key"] for e in entries(6)])) == 4
            )


async def test_a_key_another_namespace_holds_refuses_the_whole_batch(wire: Wire) -> None:
    above = wire.adapter("acme")
    await settle(above.write("wf-1/note", "semantic", "acme's note"))  # the A2M key acme/wf-1/note
    adapter = wire.adapter("acme/wf-1")
    with pytest.raises(InvalidParams, match="already holds"):
        await settle(
            adapter.write_many([*entries(2), {"key": "note", "type": "semantic", "value": 1}])
        )
    assert await settle(adapter.read_many([e["key"] for e in entries(2)] + ["note"])) == {}
    kept = await settle(above.read("wf-1/note"))
    assert kept is not None
    assert kept.value == "acme's note"


@pytest.mark.parametrize(
    ("bad", "names"),
    [
        ({"key": "x", "type": "memo", "value": 1}, "entries[1]"),
        ({"type": "semantic", "value": 1}, "entries[1] needs key"),
        ({"key": "x", "type": "semantic", "value": 1, "colour": "red"}, "unknown field"),
        ({"key": "a/../b", "type": "semantic", "value": 1}, "entries[1]"),
        ("not an entry", "entries[1] must be a mapping"),
    ],
)
async def test_an_invalid_entry_is_refused_before_anything_is_sent(
    wire: Wire, bad: Any, names: str
) -> None:
    adapter = wire.adapter()
    with pytest.raises(InvalidParams, match=names.replace("[", r"\[").replace("]", r"\]")):
        await settle(adapter.write_many([{"key": "ok", "type": "semantic", "value": 1}, bad]))
    assert wire.sent() == [], "nothing was sent, not even describe"


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_read_and_read_many_agree_when_owners_share_a_key(
    flavour: str,
    a2m_client_factory: Callable[..., A2MClient],
    a2m_async_client_factory: Callable[..., AsyncA2MClient],
) -> None:
    # In process, where the server declares scopes: each agent owns a record of the key.
    if flavour == "async":
        async_client = a2m_async_client_factory("in-process")
        alice: Adapter = AsyncA2MAdapter(async_client, "acme/wf-1", agent="alice")
        bob: Adapter = AsyncA2MAdapter(async_client, "acme/wf-1", agent="bob")
    else:
        client = a2m_client_factory("in-process")
        alice, bob = (
            A2MAdapter(client, "acme/wf-1", agent="alice"),
            A2MAdapter(client, "acme/wf-1", agent="bob"),
        )
    await settle(alice.write_many([{"key": "pref", "type": "semantic", "value": "tea"}]))
    await settle(bob.write_many([{"key": "pref", "type": "semantic", "value": "coffee"}]))
    # Two records now: reads cross agents, and both pick the most recently written one.
    for reader in (alice, bob):
        assert (await settle(reader.read("pref"))).value == "coffee"
        assert (await settle(reader.read_many(["pref"])))["pref"].value == "coffee"
    await settle(alice.write_many([{"key": "pref", "type": "semantic", "value": "green tea"}]))
    for reader in (alice, bob):
        assert (await settle(reader.read("pref"))).value == "green tea"
        assert (await settle(reader.read_many(["pref"])))["pref"].value == "green tea"
