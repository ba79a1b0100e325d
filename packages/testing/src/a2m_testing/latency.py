"""A store a network away, in process: :class:`DelayedTransport` waits before the calls it
names, so a test can cancel an adapter's write of several calls between two of them and
check that nothing is left half-written."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import anyio

from a2m.transports import AsyncInProcessTransport
from a2m.transports.in_process import ConnectableServer

__all__ = ["DelayedTransport"]


class DelayedTransport(AsyncInProcessTransport):
    """The in-process async transport, waiting ``delay`` seconds before each call of
    ``methods`` (``memory/remember`` unless told), as a round trip over a network would;
    ``sent`` keeps every method sent, in order."""

    def __init__(
        self,
        server: ConnectableServer,
        delay: float,
        methods: Collection[str] = ("memory/remember",),
    ) -> None:
        super().__init__(server)
        self.delay = delay
        self.methods = frozenset(methods)
        self.sent: list[str] = []

    async def handle_async_request(
        self, request: dict[str, Any], *, timeout: float | None
    ) -> dict[str, Any]:
        """Wait (where the method is one of :attr:`methods`), then call the server."""
        method = str(request.get("method"))
        self.sent.append(method)
        if method in self.methods:
            await anyio.sleep(self.delay)
        return await super().handle_async_request(request, timeout=timeout)
