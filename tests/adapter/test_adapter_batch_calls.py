"""What a batch of a thousand costs, as the client README states it: up to ``L'`` keys (the
server's ``max_recall_limit``, less one where it declares ``scopes``, since owners may
share a key) is three calls; the bundled server in process declares ``scopes``, so 999
entries are three calls there and a thousand are four. Counted on the wire by a
transport that passes every request to the in-process server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from a2m import A2MClient
from a2m.adapter import A2MAdapter
from a2m.transports import InProcessTransport, Transport
from a2m_server import A2MServer


class Counting(Transport):
    """Every request's method, then the in-process server's answer."""

    def __init__(self, server: A2MServer) -> None:
        self.inner = InProcessTransport(server)
        self.sent: list[str] = []

    def handle_request(self, request: dict[str, Any], *, timeout: float | None) -> dict[str, Any]:
        self.sent.append(request["method"])
        return self.inner.handle_request(request, timeout=timeout)

    def close(self) -> None:
        self.inner.close()


@pytest.fixture
def server() -> Iterator[A2MServer]:
    with A2MServer() as server:
        yield server


@pytest.mark.parametrize(
    ("count", "timelines_first"),
    [(999, 1), (1000, 2)],  # L' = 999: a full page of 1000 is asked for again in halves
)
def test_a_batch_costs_three_calls_up_to_l_prime(
    server: A2MServer, count: int, timelines_first: int
) -> None:
    transport = Counting(server)
    with A2MClient(transport=transport) as client:
        assert client.supports("scopes")
        transport.sent.clear()
        adapter = A2MAdapter(client, "acme/batch")
        batch = [{"key": f"k{n:04d}", "type": "semantic", "value": n} for n in range(count)]
        assert len(adapter.write_many(batch)) == count
        assert transport.sent == [
            *["memory/timeline"] * timelines_first,
            "memory/remember",
            "memory/timeline",
        ]
