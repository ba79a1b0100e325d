"""How a component reaches its store: the connection part of a component's config (URL or
binding, never a token in clear), the client it opens from that lazily, and what the
adapter needs to know of the server once it has described itself."""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from autogen_core import CancellationToken
from pydantic import BaseModel, Field, SecretStr

from a2m import AsyncA2MClient, IncompleteListing, Record
from a2m.adapter_support import ServerLayout

__all__ = ["ConnectionConfig", "Link", "StoreLayout", "cancellable", "every_record"]

T = TypeVar("T")

DEFAULT_TIMEOUT = 30.0


class ConnectionConfig(BaseModel):
    """Where the A2M store is. A dumped component carries this instead of a client, and
    never a token: the token is read from ``token_env`` when the client is opened."""

    url: str | None = None
    """The server's URL (JSON-RPC over HTTP, or the REST base URL); ``None`` reads
    ``A2M_URL`` when the client is opened."""
    binding: Literal["http", "rest", "stdio"] = "http"
    """JSON-RPC over HTTP, the REST binding (``/a2m/v1``), or a stdio subprocess."""
    command: list[str] | None = None
    """The server's argv, for ``binding="stdio"``."""
    token: SecretStr | None = Field(default=None, exclude=True)
    """A bearer token given in code; it is never dumped (use ``token_env`` for configs)."""
    token_env: str | None = "A2M_TOKEN"
    """The environment variable holding the bearer token, read when the client opens."""
    timeout: float | None = Field(default=DEFAULT_TIMEOUT, gt=0)
    """Seconds each call may take; ``None`` waits for ever."""


def _token(config: ConnectionConfig) -> str | None:
    if config.token is not None:
        return config.token.get_secret_value()
    if config.token_env is None:
        return None
    return os.environ.get(config.token_env) or None


def open_client(config: ConnectionConfig, namespace: str) -> AsyncA2MClient:
    """A new client for ``config`` (no I/O: the client connects on its first call)."""
    if config.binding == "stdio":
        if not config.command:
            raise ValueError("binding='stdio' needs command=[...], the server's argv")
        return AsyncA2MClient.stdio(config.command, timeout=config.timeout)
    url = config.url or os.environ.get("A2M_URL")
    if not url:
        raise ValueError(
            "no A2M server given: pass url='http://127.0.0.1:8765/' (or set A2M_URL), "
            "binding='stdio' with command=[...], or client=AsyncA2MClient(...)"
        )
    if config.binding == "rest":
        return AsyncA2MClient.rest(
            url, namespace=namespace, token=_token(config), timeout=config.timeout
        )
    return AsyncA2MClient(url, token=_token(config), timeout=config.timeout)


@dataclass(frozen=True)
class StoreLayout(ServerLayout):
    """What the adapter needs to know of the server (:class:`a2m.adapter_support.
    ServerLayout`: its capabilities, batch and recall limits, the tier of each memory
    kind), and how a transcript is selected there."""

    @property
    def keys(self) -> bool:
        """Whether records can have keys (namespaces are key prefixes then)."""
        return "keys" in self.capabilities

    def beneath(self, namespace: str, session: str) -> dict[str, Any]:
        """The selector of a transcript's records: those saying they are ``session``'s in
        ``namespace`` (``metadata.transcript``, since ``session`` is a record field a
        where never reaches the metadata key of), and beneath ``namespace/session/``
        where the server has keys, so the store's index narrows it first."""
        selector: dict[str, Any] = {"where": {"namespace": namespace, "transcript": session}}
        if self.keys:
            selector["key_prefix"] = f"{namespace}/{session}/"
        return selector

    def tier(self, kind: str) -> str | None:
        """The tier holding ``kind``, where the server has tiers."""
        return self.tier_for_kind.get(kind) if "tiers" in self.capabilities else None


class Link:
    """A component's connection: the client it was given (never closed here) or one it
    opens from its config on first use and closes in :meth:`aclose`."""

    def __init__(
        self, client: AsyncA2MClient | None, config: ConnectionConfig, namespace: str
    ) -> None:
        self.given = client
        self.config = config
        self.namespace = namespace
        self._opened: AsyncA2MClient | None = None
        self._opening = asyncio.Lock()
        self._layout: StoreLayout | None = None

    @property
    def describable(self) -> bool:
        """Whether the config says where the store is (a given client alone does not)."""
        return self.given is None or self.config.url is not None or bool(self.config.command)

    async def client(self) -> AsyncA2MClient:
        """The client to call, opened on first use when none was given. Opening builds an
        httpx client (reading certificates from disk, ~0.1 s of work), so it runs on a
        worker thread, once however many calls are waiting for it."""
        if self.given is not None:
            return self.given
        if self._opened is None:
            async with self._opening:
                if self._opened is None:
                    self._opened = await asyncio.to_thread(open_client, self.config, self.namespace)
        return self._opened

    async def layout(self) -> StoreLayout:
        """The server's layout; the first call describes it (once, however many calls
        are waiting), unless the client already has."""
        layout = self._layout
        if layout is None:
            client = await self.client()
            async with self._opening:
                layout = self._layout
                if layout is None:
                    description = client.description or await client.describe()
                    layout = self._layout = StoreLayout.of(description)
        return layout

    async def aclose(self) -> None:
        """Close the client this link opened, if any; a given client stays open."""
        opened, self._opened, self._layout = self._opened, None, None
        if opened is not None:
            await opened.aclose()


async def every_record(
    client: AsyncA2MClient, layout: StoreLayout, selector: dict[str, Any]
) -> list[Record]:
    """Every record ``selector`` picks, oldest first: a page of ``max_recall_limit`` per
    ``memory/timeline`` where the server pages by keyset cursor; one timeline without a
    limit where it declares no ``max_recall_limit`` (spec §4.4: then it carries them all);
    else the newest ``max_recall_limit`` in one call, with an
    :class:`~a2m.IncompleteListing` warning when that cap is reached."""
    limit = layout.max_recall_limit
    if not await client.pages_by_cursor():
        if not layout.recall_limit_declared:
            return (await client.timeline(**selector)).records
        found = (await client.timeline(limit=limit, **selector)).records
        if len(found) >= limit:
            warnings.warn(
                f"the listing may hold more than the {len(found)} records returned: the "
                f"server returns at most {limit} (max_recall_limit) and pages by no "
                "timeline cursor",
                IncompleteListing,
                stacklevel=2,
            )
        return found
    records: list[Record] = []
    cursor: str | None = ""
    while cursor is not None:
        page = await client.timeline(limit=limit, cursor=cursor, **selector)
        records.extend(page.records)
        if not page.records or page.next_cursor == cursor:  # a server that stands still
            break
        cursor = page.next_cursor
    return records


async def cancellable(call: Awaitable[T], token: CancellationToken | None) -> T:
    """Await ``call``, cancelled when ``token`` is (AutoGen's way to stop a pending call)."""
    if token is None:
        return await call
    future = asyncio.ensure_future(call)
    token.link_future(future)
    return await future
