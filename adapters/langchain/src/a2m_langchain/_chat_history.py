"""``A2MChatMessageHistory``: LangChain's ``BaseChatMessageHistory`` over an A2M store, one
conversation per ``session_id``, each message an episodic record."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.messages import BaseMessage

from a2m import A2MClient, AsyncA2MClient, IncompleteListing, Record
from a2m.adapter_support import Flow, drive, drive_async, remember_whole

from ._clients import need_async, need_sync, sort_clients
from ._compat import BaseChatMessageHistory
from ._records import (
    DEFAULT_NAMESPACE,
    Layout,
    Provenance,
    alayout_of,
    checked_messages,
    checked_namespace,
    embeddable,
    layout_of,
    message_records,
    message_vectors,
    new_id,
    record_message,
    transcript_where,
)

__all__ = ["A2MChatMessageHistory"]


def _checked(limit: int | None) -> int | None:
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be 0 or more, not {limit}")
    return limit


def _beyond_one_call(layout: Layout, limit: int | None) -> bool:
    """Whether one timeline may not carry what is asked: all of a conversation, or more
    messages than the server's declared ``max_recall_limit``."""
    if not layout.recall_limit_declared:
        return False
    return limit is None or limit > layout.max_recall_limit


def _newest(records: list[Record], limit: int | None) -> list[Record]:
    return records if limit is None else records[-limit:]


def _warn_if_capped(layout: Layout, limit: int | None, got: int) -> None:
    if _beyond_one_call(layout, limit) and got >= layout.max_recall_limit:
        warnings.warn(
            f"the conversation may hold more messages than the {got} returned: the server "
            f"returns at most {layout.max_recall_limit} (max_recall_limit) and pages by no "
            "timeline cursor",
            IncompleteListing,
            stacklevel=3,
        )


class A2MChatMessageHistory(BaseChatMessageHistory):
    """The messages of one conversation, kept as A2M episodic records.

    Each message is one record, at a fresh key beneath ``{namespace}/messages/`` (so
    adapters reading entries find it): its readable text as ``content``, ``role`` set
    (user, assistant, system, tool, function), ``session`` the ``session_id``, and the message
    exactly as LangChain serializes it in ``metadata.message``, so every message type —
    chunks, tool calls, ids, names, ``additional_kwargs``, ``response_metadata`` — comes
    back equal. Within one ``add_messages`` call each turn is one ``group``: a user (or
    system) message opens it and what follows joins it, so an answer, its tool calls and
    their results are kept or evicted together.

    Round trips: ``add_messages`` is one ``memory/remember`` (per ``max_records_per_call``
    messages, all or nothing: when a later batch is refused, one ``memory/forget`` takes
    back the earlier ones); ``messages`` reads the whole conversation: one
    ``memory/timeline`` per ``max_recall_limit`` messages where the server pages by keyset cursor
    (``timeline.cursor``), one without a limit where it declares no ``max_recall_limit``,
    else one carrying the newest ``max_recall_limit``, with an
    :class:`~a2m.IncompleteListing` warning when that cap is reached; ``clear`` is one
    ``memory/forget``;
    the first call of a client adds its one ``memory/describe``.

    ``client`` may be an :class:`~a2m.A2MClient` (sync methods) or an
    :class:`~a2m.AsyncA2MClient` (``aget_messages``, ``aadd_messages``, ``aclear``); pass
    both to use both. The clients stay the caller's: nothing here closes them, and nothing
    touches the network before the first call. ``namespace`` scopes writes and ``clear``;
    ``agent`` is written as ``source_agent`` and as the records' owner where the server
    keeps owners (over an authenticated connection leave it unset: the principal is the
    owner). With ``embeddings`` every message is also stored with its vector
    (one ``embed_documents`` per call), so vector search finds the conversation too."""

    def __init__(
        self,
        session_id: str,
        client: A2MClient | AsyncA2MClient | None = None,
        *,
        async_client: AsyncA2MClient | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        agent: str | None = None,
        embeddings: Embeddings | None = None,
    ) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise ValueError("session_id must be a non-empty string")
        self.session_id = session_id
        self.client, self.async_client = sort_clients(client, async_client)
        self.provenance = Provenance(checked_namespace(namespace), agent)
        self.embeddings = embeddings

    @property
    def namespace(self) -> str:
        """Where this history's records are written and cleared."""
        return self.provenance.namespace

    def _sync(self, method: str) -> tuple[A2MClient, Layout]:
        client = need_sync(self.client, self, method)
        return client, layout_of(client)

    async def _async(self, method: str) -> tuple[AsyncA2MClient, Layout]:
        client = need_async(self.async_client, self, method)
        return client, await alayout_of(client)

    # --- read ------------------------------------------------------------------------------

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The conversation, oldest first."""
        return self.recent_messages()

    def recent_messages(self, limit: int | None = None) -> list[BaseMessage]:
        """The ``limit`` most recent messages (``None``: all of them), oldest first. When
        the server can give neither (no timeline cursor, and its declared
        ``max_recall_limit`` was reached) the newest it gives come with an
        :class:`~a2m.IncompleteListing` warning, never silently short."""
        client, layout = self._sync("recent_messages")
        if _checked(limit) == 0:
            return []
        if _beyond_one_call(layout, limit) and client.pages_by_cursor():
            records: list[Record] = []
            cursor: str | None = ""
            while cursor is not None:  # the whole conversation, a page at a time
                page = client.timeline(**self._timeline(layout, None), cursor=cursor)
                records += page.records
                cursor = page.next_cursor
        else:
            records = client.timeline(**self._timeline(layout, limit)).records
            _warn_if_capped(layout, limit, len(records))
        return [record_message(record) for record in _newest(records, limit)]

    async def aget_messages(self) -> list[BaseMessage]:
        """The conversation, oldest first, on the async client."""
        return await self.arecent_messages()

    async def arecent_messages(self, limit: int | None = None) -> list[BaseMessage]:
        """The async twin of :meth:`recent_messages`."""
        client, layout = await self._async("arecent_messages")
        if _checked(limit) == 0:
            return []
        if _beyond_one_call(layout, limit) and await client.pages_by_cursor():
            records: list[Record] = []
            cursor: str | None = ""
            while cursor is not None:
                page = await client.timeline(**self._timeline(layout, None), cursor=cursor)
                records += page.records
                cursor = page.next_cursor
        else:
            records = (await client.timeline(**self._timeline(layout, limit))).records
            _warn_if_capped(layout, limit, len(records))
        return [record_message(record) for record in _newest(records, limit)]

    def _timeline(self, layout: Layout, limit: int | None) -> dict[str, Any]:
        params: dict[str, Any] = {
            "where": transcript_where(self.provenance, self.session_id, layout)
        }
        if layout.recall_limit_declared:
            params["limit"] = (
                layout.max_recall_limit if limit is None else min(limit, layout.max_recall_limit)
            )
        elif limit is not None:
            params["limit"] = limit
        # else no limit: the server declares none, so the timeline carries every message
        return params

    # --- write -----------------------------------------------------------------------------

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append ``messages`` in one ``memory/remember`` (per ``max_records_per_call``), a
        group per turn; all or nothing: a batch the server refuses takes back the earlier
        ones."""
        if not messages:
            return
        client, layout = self._sync("add_messages")
        messages = checked_messages(messages)
        vectors = None
        if self.embeddings is not None:
            layout.require("embeddings", "A2MChatMessageHistory(embeddings=...)")
            texts = embeddable(messages)
            found = self.embeddings.embed_documents(texts) if texts else []
            vectors = message_vectors(messages, found)
        drive(self._write(messages, layout, vectors), client)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """The async twin of :meth:`add_messages`."""
        if not messages:
            return
        client, layout = await self._async("aadd_messages")
        messages = checked_messages(messages)
        vectors = None
        if self.embeddings is not None:
            layout.require("embeddings", "A2MChatMessageHistory(embeddings=...)")
            texts = embeddable(messages)
            found = await self.embeddings.aembed_documents(texts) if texts else []
            vectors = message_vectors(messages, found)
        await drive_async(self._write(messages, layout, vectors), client, settle=True)

    def _write(
        self,
        messages: Sequence[BaseMessage],
        layout: Layout,
        vectors: Sequence[Sequence[float] | None] | None,
    ) -> Flow[list[str]]:
        """The messages' records, each under a new id, in one ``memory/remember`` per
        ``max_records_per_call``, all or nothing (a refused later batch has the earlier
        ones removed)."""
        records = message_records(
            list(messages), self.provenance, layout, session=self.session_id, vectors=vectors
        )
        for record in records:
            record["id"] = new_id()
        return remember_whole(
            records,
            per_call=layout.max_records_per_call,
            per_read=layout.max_recall_limit,
            capabilities=layout.capabilities,
            fresh=True,
        )

    # --- delete ----------------------------------------------------------------------------

    def clear(self) -> None:
        """Delete this conversation's messages written in this namespace (one forget)."""
        client, layout = self._sync("clear")
        client.forget(where=transcript_where(self.provenance, self.session_id, layout))

    async def aclear(self) -> None:
        """The async twin of :meth:`clear`."""
        client, layout = await self._async("aclear")
        await client.forget(where=transcript_where(self.provenance, self.session_id, layout))
