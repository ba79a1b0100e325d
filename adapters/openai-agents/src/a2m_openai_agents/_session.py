"""``A2MSession``: the Agents SDK's ``Session`` over an A2M store, so a run's conversation
lives where LangChain, CrewAI, AutoGen and Agno agents can read it."""

from __future__ import annotations

import logging
from typing import Any

from agents import SessionABC
from agents.memory.session_settings import (
    SessionSettings,
    coerce_session_settings,
    resolve_session_limit,
)

from a2m import AsyncA2MClient, Record
from a2m.adapter_support import (
    DEFAULT_TIMEOUT,
    ClientSource,
    IncompleteListingWarning,
    ServerLayout,
    every_record,
    remember_all,
)

from ._items import Provenance, checked_items, checked_namespace, item_of

__all__ = ["DEFAULT_NAMESPACE", "A2MSession", "IncompleteHistoryWarning"]

DEFAULT_NAMESPACE = "openai-agents"
"""Where a session's items are written when no namespace is given."""

_POP_WINDOW = 8
"""How many of the newest records a pop reads at once (fewer where the server's
``max_recall_limit`` is lower): enough to step over a few damaged ones without a second
call."""

log = logging.getLogger("a2m_openai_agents")


IncompleteHistoryWarning = IncompleteListingWarning
"""A session longer than the server lets one call return, on a server that cannot page
through it: the items returned are the newest ones, not all of them."""


class A2MSession(SessionABC):
    """An Agents SDK session whose items are A2M records: ``Runner.run(agent, input,
    session=A2MSession("conversation-1", url="http://127.0.0.1:8765/"))``.

    Each item is one episodic record: its readable text as ``content`` (a message's text, a
    tool call as ``name(arguments)``), its ``role``, ``session`` the ``session_id``,
    provenance ``source_framework="openai-agents"`` and ``source_agent``, and the item
    itself, exactly as given, in ``metadata.item`` — so items of every kind come back
    equal, and another framework's recall finds what was said.

    Round trips: ``add_items`` is one ``memory/remember`` per ``max_records_per_call``
    items, all or nothing; ``get_items(limit)`` is one ``memory/timeline`` (more only to
    step over damaged records, or for more than ``max_recall_limit`` items, a page each
    where the server pages by cursor); ``pop_item`` is one timeline and one
    ``memory/forget``, again only if another pop took the same item first; ``clear_session``
    is one forget. The first call also sends one ``memory/describe``, unless the client
    has.

    ``client`` stays the caller's (never closed here); without one, a client is opened
    from ``url`` (``A2M_URL``) and ``token`` (``A2M_TOKEN``) on the first call, and
    :meth:`aclose` closes it. Nothing touches the network in the constructor. ``namespace``
    scopes writes, pops and clears; ``agent`` is written as ``source_agent`` (and as the
    owner where the server keeps owners — over an authenticated connection leave it unset:
    the principal is the owner)."""

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        client: AsyncA2MClient | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        agent: str | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        if not isinstance(session_id, str):
            raise TypeError(f"session_id must be a string, not {type(session_id).__name__}")
        self.session_id = session_id
        self.session_settings = (
            coerce_session_settings(session_settings)
            if session_settings is not None
            else SessionSettings()
        )
        self.provenance = Provenance(checked_namespace(namespace), session_id, agent)
        self._source = ClientSource(client, url=url, token=token, timeout=timeout)

    @property
    def namespace(self) -> str:
        """Where this session's items are written, popped and cleared."""
        return self.provenance.namespace

    async def _open(self) -> tuple[AsyncA2MClient, ServerLayout]:
        return await self._source.open()

    # --- read ------------------------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The session's items, oldest first: the newest ``limit`` of them (``None``: the
        ``session_settings`` limit, else all). Damaged records are skipped with a warning
        in the log, and do not count towards ``limit``."""
        wanted = resolve_session_limit(limit, self.session_settings)
        if wanted == 0:
            return []
        client, layout = await self._open()
        if wanted is None or wanted < 0:
            return _items(await self._every_record(client, layout))
        if wanted > layout.max_recall_limit:
            return _items(await self._every_record(client, layout))[-wanted:]
        window = wanted
        while True:
            records = await self._newest(client, layout, window)
            items = _items(records)
            if len(items) >= wanted or len(records) < window:
                return items[-wanted:]
            if window >= layout.max_recall_limit:
                return items
            window = min(window * 2, layout.max_recall_limit)

    def _where(self, layout: ServerLayout) -> dict[str, Any]:
        return self.provenance.where(sessions=layout.supports("sessions"))

    async def _newest(
        self, client: AsyncA2MClient, layout: ServerLayout, limit: int
    ) -> list[Record]:
        return (await client.timeline(where=self._where(layout), limit=limit)).records

    async def _every_record(self, client: AsyncA2MClient, layout: ServerLayout) -> list[Record]:
        what = f"session {self.session_id!r}"
        return await every_record(client, layout, self._where(layout), what=what)

    # --- write -----------------------------------------------------------------------------

    async def add_items(self, items: list[Any]) -> None:
        """Append ``items``, in order, in one ``memory/remember`` per
        ``max_records_per_call`` items. Every item is checked before anything is sent; if
        a later call fails, what the earlier ones wrote is taken back, so a failed
        ``add_items`` leaves the session as it was."""
        checked = checked_items(items)
        if not checked:
            return
        client, layout = await self._open()
        tier = layout.tier("episodic")
        keys, scopes = layout.supports("keys"), layout.supports("scopes")
        sessions = layout.supports("sessions")
        records = [
            self.provenance.record(item, tier=tier, keys=keys, scopes=scopes, sessions=sessions)
            for item in checked
        ]
        await remember_all(client, layout, records)

    async def pop_item(self) -> Any | None:
        """Remove and return the newest item (``None`` when the session is empty). Two
        concurrent pops never return the same item: the one whose ``memory/forget``
        removed it returns it, the other moves on to the next. A damaged record is
        stepped over and left in place."""
        client, layout = await self._open()
        window = min(_POP_WINDOW, layout.max_recall_limit)
        while True:
            records = await self._newest(client, layout, window)
            if not records:
                return None
            newest = next(
                (
                    (record, item)
                    for record in reversed(records)
                    if (item := item_of(record)) is not None  # an empty item {} is one too
                ),
                None,
            )
            if newest is None:
                if len(records) < window or window >= layout.max_recall_limit:
                    _skipped(records)
                    return None
                window = min(window * 2, layout.max_recall_limit)
                continue
            record, item = newest
            if (await client.forget([record.id])).forgotten:
                return item
            # another pop removed it between our read and our forget: read again

    async def clear_session(self) -> None:
        """Delete every item of this session written in this namespace (one forget)."""
        client, layout = await self._open()
        await client.forget(where=self._where(layout))

    async def aclose(self) -> None:
        """Close the client this session opened from a URL; a given client stays open."""
        await self._source.aclose()


def _items(records: list[Record]) -> list[Any]:
    found = [item for record in records if (item := item_of(record)) is not None]
    if len(found) < len(records):
        _skipped([record for record in records if item_of(record) is None])
    return found


def _skipped(records: list[Record]) -> None:
    for record in records:
        if item_of(record) is None:
            log.warning(
                "skipped record %s: it holds no input item in metadata.item (written by "
                "hand, or damaged)",
                record.id,
            )
