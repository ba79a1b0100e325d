"""``A2MHistoryProvider``: Agent Framework's ``HistoryProvider`` over an A2M store, one
conversation per session, each message a record other frameworks can read."""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Sequence
from typing import Any

from agent_framework import HistoryProvider, Message
from agent_framework._sessions import filter_new_messages

from a2m import AsyncA2MClient, Record
from a2m.adapter_support import (
    DEFAULT_TIMEOUT,
    ClientSource,
    IncompleteListingWarning,
    ServerLayout,
    every_record,
    remember_all,
)

from ._messages import Provenance, checked_messages, checked_namespace, message_of

__all__ = ["DEFAULT_NAMESPACE", "NO_SESSION", "A2MHistoryProvider", "IncompleteHistoryWarning"]

DEFAULT_NAMESPACE = "agent-framework"
"""Where conversations are written when no namespace is given."""

NO_SESSION = "default"
"""The conversation a call without a session id reads and writes."""

log = logging.getLogger("a2m_agent_framework")


IncompleteHistoryWarning = IncompleteListingWarning
"""A conversation longer than the server lets one call return, on a server that cannot
page through it: the messages returned are the newest ones, not all of them."""


class A2MHistoryProvider(HistoryProvider):
    """Conversation history in A2M: ``Agent(..., context_providers=[A2MHistoryProvider(
    url="http://127.0.0.1:8765/")])``.

    Each message is one episodic record: readable text as ``content`` (a function call as
    ``name(arguments)``), ``role``, ``session`` the session id, provenance
    ``source_framework="agent-framework"`` and ``source_agent``, and the message exactly as
    ``Message.to_dict()`` gives it in ``metadata.message``, so every content type (text,
    reasoning, function calls and results, data and URI contents, approvals) comes back
    equal. The provider flags (``load_messages``, ``store_inputs``, ``store_outputs``,
    ``store_context_messages``, ``store_context_from``) work as on every ``HistoryProvider``.

    Round trips: ``get_messages`` is one ``memory/timeline`` (one per ``max_recall_limit``
    messages past that, where the server pages by cursor); ``save_messages`` is one
    timeline of as many newest messages as it was given — to drop the ones already stored,
    as ``InMemoryHistoryProvider`` does — and one ``memory/remember`` per
    ``max_records_per_call`` new messages, all or nothing. The first call also sends one
    ``memory/describe``, unless the client has.

    ``client`` stays the caller's (never closed here); without one, a client is opened
    from ``url`` (``A2M_URL``) and ``token`` (``A2M_TOKEN``) on the first call, and
    :meth:`aclose` closes it. ``namespace`` scopes what this provider writes and reads back
    as a conversation; ``agent`` is written as ``source_agent`` (a message's own
    ``author_name`` otherwise)."""

    DEFAULT_SOURCE_ID = "a2m_history"

    def __init__(
        self,
        client: AsyncA2MClient | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        agent: str | None = None,
        source_id: str = DEFAULT_SOURCE_ID,
        load_messages: bool = True,
        store_inputs: bool = True,
        store_context_messages: bool = False,
        store_context_from: set[str] | None = None,
        store_outputs: bool = True,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        super().__init__(
            source_id,
            load_messages=load_messages,
            store_inputs=store_inputs,
            store_context_messages=store_context_messages,
            store_context_from=store_context_from,
            store_outputs=store_outputs,
        )
        self.provenance = Provenance(checked_namespace(namespace), agent)
        self._source = ClientSource(client, url=url, token=token, timeout=timeout)
        # One save at a time per session and event loop, as FileHistoryProvider locks its
        # file: a second save then sees the first's messages and adds only what is new.
        self._saving: weakref.WeakValueDictionary[tuple[int, str], asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )

    @property
    def namespace(self) -> str:
        """Where this provider's conversations are written."""
        return self.provenance.namespace

    async def _open(self) -> tuple[AsyncA2MClient, ServerLayout]:
        return await self._source.open()

    async def get_messages(
        self, session_id: str | None, *, state: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Message]:
        """The session's messages, oldest first. A record that holds no message (written
        by hand, or damaged) is skipped with a warning in the log."""
        client, layout = await self._open()
        session = session_id or NO_SESSION
        where = self.provenance.where(session, sessions=layout.supports("sessions"))
        return _messages(await every_record(client, layout, where, what=f"session {session!r}"))

    async def save_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Append the messages not already stored at the end of the session (a replayed
        transcript adds only what is new), in order, all or nothing. Every message is
        checked before anything is sent."""
        checked = checked_messages(messages)
        if not checked:
            return
        session = session_id or NO_SESSION
        async with self._lock_for(session):
            await self._save(session, checked)

    def _lock_for(self, session: str) -> asyncio.Lock:
        key = (id(asyncio.get_running_loop()), session)
        lock = self._saving.get(key)
        if lock is None:
            lock = self._saving[key] = asyncio.Lock()
        return lock

    async def _save(self, session: str, checked: list[tuple[Message, dict[str, Any]]]) -> None:
        client, layout = await self._open()
        tail_size = min(len(checked), layout.max_recall_limit)
        where = self.provenance.where(session, sessions=layout.supports("sessions"))
        tail = _messages((await client.timeline(where=where, limit=tail_size)).records)
        new = filter_new_messages(tail, [message for message, _ in checked])
        if not new:
            return
        serialized = {id(message): data for message, data in checked}
        tier = layout.tier("episodic")
        keys, scopes = layout.supports("keys"), layout.supports("scopes")
        sessions = layout.supports("sessions")
        records = [
            self.provenance.message_record(
                message,
                serialized[id(message)],
                session,
                tier=tier,
                keys=keys,
                scopes=scopes,
                sessions=sessions,
            )
            for message in new
        ]
        await remember_all(client, layout, records)

    async def clear(self, session_id: str | None) -> None:
        """Delete the session's messages written in this namespace (one ``memory/forget``)."""
        client, layout = await self._open()
        sessions = layout.supports("sessions")
        await client.forget(
            where=self.provenance.where(session_id or NO_SESSION, sessions=sessions)
        )

    async def aclose(self) -> None:
        """Close the client this provider opened from a URL; a given client stays open."""
        await self._source.aclose()


def _messages(records: list[Record]) -> list[Message]:
    found: list[Message] = []
    for record in records:
        message = message_of(record)
        if message is None:
            log.warning(
                "skipped record %s: it holds no message in metadata.message (written by "
                "hand, or damaged)",
                record.id,
            )
        else:
            found.append(message)
    return found
