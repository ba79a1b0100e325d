"""How a session or a tool reaches its store: the client it was given (never closed here),
or one it opens from a URL on first use — off the event loop, once, whichever loop asks —
and what it needs to know of the server once the server has described itself."""

from __future__ import annotations

import asyncio
import os
import threading
from dataclasses import dataclass

from a2m import AsyncA2MClient, DescribeResult

__all__ = ["DEFAULT_TIMEOUT", "Connection", "Layout"]

DEFAULT_TIMEOUT = 30.0
"""Seconds each A2M call may take when the session opens its own client."""


@dataclass(frozen=True)
class Layout:
    """What this package needs to know of a server, read once from ``memory/describe``."""

    capabilities: frozenset[str]
    tier_for_kind: dict[str, str]
    max_records_per_call: int
    max_recall_limit: int

    @classmethod
    def of(cls, description: DescribeResult) -> Layout:
        tiers: dict[str, str] = {}
        if "tiers" in description.capabilities:
            for tier in description.tiers or []:
                if tier.kind is not None:
                    tiers.setdefault(tier.kind, tier.name)
        limits = description.limits
        per_call = limits.max_records_per_call if limits and limits.max_records_per_call else 100
        recall = limits.max_recall_limit if limits and limits.max_recall_limit else 1000
        return cls(frozenset(description.capabilities), tiers, per_call, recall)

    def tier(self, kind: str) -> str | None:
        """The tier holding memories of ``kind`` (episodic, semantic…), if the server has one."""
        return self.tier_for_kind.get(kind)

    def supports(self, capability: str) -> bool:
        """Whether the server declares ``capability``."""
        return capability in self.capabilities


class Connection:
    """A client given by the caller, or one opened from ``url`` (``A2M_URL`` when unset)
    and ``token`` (``A2M_TOKEN`` when unset) on the first call and closed by
    :meth:`aclose`. Nothing here touches the network before the first call."""

    def __init__(
        self,
        client: AsyncA2MClient | None,
        url: str | None,
        token: str | None,
        timeout: float | None,
    ) -> None:
        if client is not None and (url is not None or token is not None):
            raise TypeError("pass either client= or url=/token=, not both")
        if client is not None and not isinstance(client, AsyncA2MClient):
            raise TypeError(
                f"client must be an a2m.AsyncA2MClient (Agent Framework is async), "
                f"not {type(client).__name__}"
            )
        self.given = client
        self._url = url
        self._token = token
        self._timeout = timeout
        self._opened: AsyncA2MClient | None = None
        self._layout: Layout | None = None
        # A thread lock, not an asyncio one: a session may be used from several event
        # loops (sync wrappers running asyncio.run on worker threads), and opening runs on a
        # worker thread.
        self._opening = threading.Lock()

    def _open(self) -> AsyncA2MClient:
        with self._opening:
            opened = self._opened
            if opened is None:
                url = self._url or os.environ.get("A2M_URL")
                if not url:
                    raise ValueError(
                        "no A2M server given: pass url='http://127.0.0.1:8765/' "
                        "(or set A2M_URL), or client=AsyncA2MClient(...)"
                    )
                token = self._token or os.environ.get("A2M_TOKEN") or None
                opened = self._opened = AsyncA2MClient(url, token=token, timeout=self._timeout)
            return opened

    async def client(self) -> AsyncA2MClient:
        """The client to call. Building an HTTP client reads certificates from disk, so
        the first call does it on a worker thread."""
        if self.given is not None:
            return self.given
        opened = self._opened
        return opened if opened is not None else await asyncio.to_thread(self._open)

    async def layout(self, client: AsyncA2MClient) -> Layout:
        """The server's layout; the first call describes it, unless the client already has."""
        layout = self._layout
        if layout is None:
            layout = self._layout = Layout.of(client.description or await client.describe())
        return layout

    async def aclose(self) -> None:
        """Close the client this connection opened, if any; a given client stays open."""
        with self._opening:
            opened, self._opened, self._layout = self._opened, None, None
        if opened is not None:
            await opened.aclose()
