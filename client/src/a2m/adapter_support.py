"""What every framework adapter built on the async client needs and none should write again:
the client it was given or opens lazily, what it must know of the server, a listing that
is complete or says it is not, a write that is all or nothing, recalled records as lines
a model reads, a loud check of the framework interface it is built on, the step driver
that runs one flow on the sync and the async client alike, and which record the caller
reads where several principals hold one key (:class:`Caller`, :func:`best_per_key`), and
the observations another project granted, for a context put before the model
(:func:`transferred_observations`)."""

from __future__ import annotations

import asyncio
import os
import threading
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import import_module, metadata
from typing import Any

from typing_extensions import Self

from a2m_types import DescribeResult, Record

from ._adapter_batch import remember_whole
from ._adapter_core import as_written
from ._adapter_owners import Caller, best_per_key
from ._adapter_steps import Flow, Step, call, drive, drive_async, settled
from ._adapter_transfers import (
    TRANSFERRED_HEADER,
    continued,
    offers_transfers,
    transferred_lines,
    transferred_observations,
)
from ._async_client import AsyncA2MClient
from .errors import IncompleteListing

__all__ = [
    "DEFAULT_TIMEOUT",
    "TRANSFERRED_HEADER",
    "Caller",
    "ClientSource",
    "Flow",
    "IncompleteListingWarning",
    "ServerLayout",
    "Step",
    "as_written",
    "best_per_key",
    "call",
    "continued",
    "drive",
    "drive_async",
    "every_record",
    "memory_lines",
    "offers_transfers",
    "remember_all",
    "remember_whole",
    "require_interface",
    "settled",
    "transferred_lines",
    "transferred_observations",
]

DEFAULT_TIMEOUT = 30.0
"""Seconds each A2M call may take when an adapter opens its own client."""


def require_interface(
    adapter: str, distribution: str, supported: str, names: Mapping[str, Sequence[str]]
) -> None:
    """Raise :class:`ImportError` unless every ``module: (attribute, …)`` in ``names`` can
    be imported, naming the adapter, the supported framework releases and the one
    installed: a framework release that moved its memory interface fails at import, not
    half-way through a run."""
    missing: list[str] = []
    for module_name, attributes in names.items():
        try:
            module = import_module(module_name)
        except ImportError:
            missing.append(module_name)
            continue
        missing += [f"{module_name}.{a}" for a in attributes if not hasattr(module, a)]
    if missing:
        try:
            installed = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            installed = "not installed"
        raise ImportError(
            f"{adapter} needs {supported} (found {distribution} {installed}); missing: "
            f'{", ".join(missing)}. Install a supported release: pip install "{supported}"'
        )


@dataclass(frozen=True)
class ServerLayout:
    """What an adapter needs to know of a server, read once from ``memory/describe``: its
    capabilities, which tier holds each memory kind, and its batch and recall limits
    (100 and 1,000 where it declares none)."""

    capabilities: frozenset[str]
    tier_for_kind: Mapping[str, str]
    max_records_per_call: int
    max_recall_limit: int
    recall_limit_declared: bool = True
    """Whether the server declares ``max_recall_limit``; one that does not returns a whole
    timeline asked for with no ``limit`` (§4.4)."""

    @classmethod
    def of(cls, description: DescribeResult) -> Self:
        tiers: dict[str, str] = {}
        if "tiers" in description.capabilities:
            for tier in description.tiers or []:
                if tier.kind is not None:
                    tiers.setdefault(tier.kind, tier.name)
        limits = description.limits
        per_call = limits.max_records_per_call if limits and limits.max_records_per_call else 100
        declared = bool(limits and limits.max_recall_limit)
        recall = limits.max_recall_limit if limits and limits.max_recall_limit else 1000
        return cls(frozenset(description.capabilities), tiers, per_call, recall, declared)

    def supports(self, capability: str) -> bool:
        """Whether the server declares ``capability``."""
        return capability in self.capabilities

    def tier(self, kind: str) -> str | None:
        """The tier holding memories of ``kind`` (episodic, semantic…), if there is one."""
        return self.tier_for_kind.get(kind)


class ClientSource:
    """The client an adapter calls: one given by the caller (never closed here), or one
    opened from ``url`` (``A2M_URL`` when unset) and ``token`` (``A2M_TOKEN``) on the first
    call and closed by :meth:`aclose`. Nothing touches the network before that call, and
    opening — which reads certificates from disk — runs on a worker thread, once, from
    whichever event loop asks first."""

    def __init__(
        self,
        client: AsyncA2MClient | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        if client is not None and (url is not None or token is not None):
            raise TypeError("pass either client= or url=/token=, not both")
        if client is not None and not isinstance(client, AsyncA2MClient):
            raise TypeError(f"client must be an a2m.AsyncA2MClient, not {type(client).__name__}")
        self.given = client
        self._url = url
        self._token = token
        self._timeout = timeout
        self._opened: AsyncA2MClient | None = None
        self._layout: ServerLayout | None = None
        # A thread lock, not an asyncio one: an adapter may be called from several event
        # loops (sync wrappers running asyncio.run on worker threads).
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
        """The client to call, opened on first use when none was given."""
        if self.given is not None:
            return self.given
        opened = self._opened
        return opened if opened is not None else await asyncio.to_thread(self._open)

    async def open(self) -> tuple[AsyncA2MClient, ServerLayout]:
        """The client and the server's layout; the first call describes the server
        (unless the client already has)."""
        client = await self.client()
        layout = self._layout
        if layout is None:
            layout = self._layout = ServerLayout.of(client.description or await client.describe())
        return client, layout

    async def aclose(self) -> None:
        """Close the client this source opened, if any; a given client stays open."""
        with self._opening:
            opened, self._opened, self._layout = self._opened, None, None
        if opened is not None:
            await opened.aclose()


class IncompleteListingWarning(IncompleteListing):
    """A listing longer than the server lets one call return, on a server that cannot page
    through it: the records returned are the newest ones, not all of them. An
    :class:`a2m.IncompleteListing`, as every adapter's such warning is."""


async def every_record(
    client: AsyncA2MClient,
    layout: ServerLayout,
    where: Mapping[str, Any],
    *,
    what: str,
) -> list[Record]:
    """Every record ``where`` selects, oldest first: one ``memory/timeline`` per
    ``max_recall_limit`` records where the server pages by keyset cursor; one timeline with
    no limit where the server declares no ``max_recall_limit``; elsewhere the newest
    ``max_recall_limit``, with an :class:`IncompleteListingWarning` naming ``what`` when
    there may be more — complete, or saying it is not."""
    page_size = layout.max_recall_limit
    if not await client.pages_by_cursor():
        if not layout.recall_limit_declared:
            return (await client.timeline(where=where)).records  # §4.4: unbounded, all of it
        records = (await client.timeline(where=where, limit=page_size)).records
        if len(records) >= page_size:
            warnings.warn(
                f"{what} may hold more than the {page_size} records this server returns "
                "in one call, and it cannot page: these are the newest",
                IncompleteListingWarning,
                stacklevel=3,
            )
        return records
    records = []
    cursor: str | None = ""
    while cursor is not None:
        page = await client.timeline(where=where, limit=page_size, cursor=cursor)
        records += page.records
        if not page.records or page.next_cursor == cursor:
            break
        cursor = page.next_cursor
    return records


async def remember_all(
    client: AsyncA2MClient, layout: ServerLayout, records: Sequence[Mapping[str, Any]]
) -> None:
    """Write ``records`` (each with a fresh ``id`` of its own) in one ``memory/remember``
    per ``max_records_per_call``; if a later call fails, take back what the earlier ones
    wrote, so a failed write leaves nothing half-written (:func:`remember_whole` with
    ``fresh``). A caller cancelled meanwhile is cancelled once the write is whole
    (:func:`settled`)."""
    flow = remember_whole(
        records,
        per_call=layout.max_records_per_call,
        per_read=layout.max_recall_limit,
        capabilities=layout.capabilities,
        fresh=True,
    )
    await drive_async(flow, client, settle=True)


def memory_lines(records: Sequence[Record], header: str | None = None) -> str:
    """Recalled records as lines a model reads: who wrote each one (framework and agent)
    and its score, under ``header`` when given; a record's own line breaks indent what
    follows them (:func:`continued`), so one record never reads as several."""
    lines = [header] if header else []
    for record in records:
        stated = record.metadata or {}
        who = stated.get("source_framework") or "unknown framework"
        agent = stated.get("source_agent")
        origin = f"{who}/{agent}" if agent else who
        score = f" (score {record.score:.2f})" if record.score is not None else ""
        lines.append(continued(f"- [{origin}] {record.content}{score}"))
    return "\n".join(lines)
