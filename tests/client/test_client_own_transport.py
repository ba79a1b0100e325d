"""A transport of one's own, as the client README describes: subclass ``Transport`` /
``AsyncTransport``, take a JSON-RPC request object and return the response object (and,
when it can push, hand notification objects to the handler), and pass it as
``A2MClient(transport=…)``. The client then negotiates, gates, subscribes and closes
through it exactly as through its own transports; here the carrier is a connection to the
bundled server that takes JSON text."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import anyio
import pytest

from a2m import A2MClient, AsyncA2MClient, CapabilityNotSupported
from a2m.transports import AsyncTransport, Transport
from a2m_server import A2MServer
from a2m_server.config import ServerConfig

pytestmark = pytest.mark.anyio


class _Carrier:
    """What both transports share: a server connection opened on the first request, the
    methods sent in order, and whether the transport was closed."""

    def __init__(self, server: A2MServer, notify: Any) -> None:
        self.server = server
        self.notify = notify
        self.connection: Any = None
        self.sent: list[str] = []
        self.closed = False
        self._lock = threading.Lock()

    def roundtrip(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            if self.connection is None:
                self.connection = self.server.connect(notify=self.notify)
            self.sent.append(request["method"])
        answer = self.connection.handle(json.dumps(request))
        assert answer is not None, request
        response: dict[str, Any] = json.loads(answer)
        return response

    def close(self) -> None:
        self.closed = True
        if self.connection is not None:
            self.connection.close()


class TextTransport(Transport):
    """A synchronous transport carrying JSON text; it can push."""

    supports_push: ClassVar[bool] = True

    def __init__(self, server: A2MServer) -> None:
        self.carrier = _Carrier(server, self._notify)

    def handle_request(self, request: dict[str, Any], *, timeout: float | None) -> dict[str, Any]:
        return self.carrier.roundtrip(request)

    def close(self) -> None:
        self.carrier.close()


class AsyncTextTransport(AsyncTransport):
    """The async twin, sending from a worker thread so the loop never waits; no push."""

    def __init__(self, server: A2MServer) -> None:
        self.carrier = _Carrier(server, self._notify)

    async def handle_async_request(
        self, request: dict[str, Any], *, timeout: float | None
    ) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(self.carrier.roundtrip, request)

    async def aclose(self) -> None:
        self.carrier.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server() -> Iterator[A2MServer]:
    with A2MServer() as server:
        yield server


def test_a_sync_transport_of_ones_own_carries_every_call_and_push(server: A2MServer) -> None:
    transport = TextTransport(server)
    client = A2MClient(transport=transport)
    assert transport.carrier.sent == []  # nothing in the constructor
    ids = client.remember(["the deploy key rotates every 90 days", "lunch is at noon"]).ids
    assert transport.carrier.sent == ["memory/describe", "memory/remember"]
    assert client.recall("deploy key").records[0].id == ids[0]

    subscription = client.subscribe()
    written = client.remember({"content": "pushed", "key": "ops/pushed"}).ids
    events = list(itertools.islice(subscription.iter_events(timeout=10), 1))
    assert [(e.kind, e.id) for e in events] == [("written", written[0])]
    assert transport.carrier.sent.count("memory/describe") == 1  # negotiated once

    client.close()
    assert transport.carrier.closed


def test_gating_happens_before_a_transport_of_ones_own_sees_the_call() -> None:
    with A2MServer(ServerConfig(capabilities=frozenset({"core"}))) as core_only:
        transport = TextTransport(core_only)
        with A2MClient(transport=transport) as client:
            with pytest.raises(CapabilityNotSupported):
                client.fetch("user/city")
            assert transport.carrier.sent == ["memory/describe"]


async def test_an_async_transport_of_ones_own_carries_every_call(server: A2MServer) -> None:
    transport = AsyncTextTransport(server)
    client = AsyncA2MClient(transport=transport)
    assert transport.carrier.sent == []
    ids = (await client.remember(["alpha notes", "beta notes"])).ids
    found = await client.recall("beta")
    assert [r.id for r in found.records] == [ids[1]]
    assert transport.carrier.sent == ["memory/describe", "memory/remember", "memory/recall"]
    with pytest.raises(CapabilityNotSupported):  # it declares no push: refused, unsent
        await client.subscribe()
    assert transport.carrier.sent[-1] == "memory/recall"
    await client.aclose()
    assert transport.carrier.closed
