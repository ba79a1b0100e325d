"""The async twin of :class:`a2m.adapter.A2MAdapter` (import it from :mod:`a2m.adapter`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

from typing_extensions import Self

from a2m_types.observations import ObservationRememberResult
from a2m_types.rest import Entry, EntryList, EntryWrite, ScoredEntry

from . import _adapter_batch as batch
from . import _adapter_paging as paging
from ._adapter_core import (
    Change,
    Layout,
    WatchState,
    check_page,
    check_query,
    check_type,
    checked_namespace,
    doomed,
    entry_at,
    entry_page,
    list_params,
    new_scope,
    plan_query,
    scored_entries,
    to_entry,
    type_selector,
    vectors_params,
    watched_namespace,
    with_vectors,
)
from ._adapter_owners import best_per_key
from ._adapter_paging import DEFAULT_PAGE_SIZE, AsyncEntryIterator, check_page_size
from ._adapter_steps import drive_async
from ._adapter_where import checked_where
from ._async_client import AsyncA2MClient
from ._observations import adapter_provenance
from .errors import InvalidParams

__all__ = ["AsyncA2MAdapter"]


class AsyncA2MAdapter:
    """The contract over an :class:`~a2m.AsyncA2MClient`: :class:`A2MAdapter`'s twin."""

    def __init__(
        self,
        client: AsyncA2MClient,
        namespace: str,
        *,
        source_framework: str | None = None,
        agent: str | None = None,
        session: str | None = None,
    ) -> None:
        self.client = client
        self.scope = new_scope(namespace, source_framework, agent, session)
        self._layout: Layout | None = None

    @property
    def namespace(self) -> str:
        """Where this adapter's writes and deletes land."""
        return self.scope.namespace

    async def _known(self) -> Layout:
        if self._layout is None:
            description = self.client.description or await self.client.describe()
            self._layout = Layout.of(description)
            self.scope.caller.described(description)
        return self._layout

    async def remember_observation(
        self,
        content: str,
        *,
        classification: str | None = None,
        file_path: str | None = None,
        tags: Sequence[str] | None = None,
        weight: float = 1.0,
        type: str | None = None,
    ) -> ObservationRememberResult:
        """Remember one durable fact for this adapter's agent (``docs/observations.md``),
        with the adapter's provenance; an identical fact already stored has its weight
        raised instead. One ``memory/observations/remember``."""
        layout = await self._known()
        return await self.client.remember_observation(
            content,
            classification=classification,
            file_path=file_path,
            tags=tags,
            weight=weight,
            type=type,
            **adapter_provenance(
                self.scope.namespace,
                self.scope.source_framework,
                self.scope.agent,
                self.scope.session,
                layout.capabilities,
            ),
        )

    async def write(
        self,
        key: str,
        type: str,
        value: Any,
        embedding: Sequence[float] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Entry:
        """Create or replace the entry at ``key`` in this namespace; returns it as stored.
        A batch of one (:meth:`write_many`): three calls."""
        entry = {"key": key, "type": type, "value": value, "embedding": embedding, "meta": meta}
        return (await self.write_many([entry]))[0]

    async def write_many(self, entries: Iterable[Mapping[str, Any] | EntryWrite]) -> list[Entry]:
        """Create or replace many entries at once, all or nothing:
        :meth:`A2MAdapter.write_many`'s twin, with the same calls."""
        writes = batch.entry_writes(self.scope, entries)
        if not writes:
            return []
        flow = batch.write_many(self.scope, await self._known(), writes)
        return await drive_async(flow, self.client, settle=True)

    async def read(self, key: str, *, namespace: str | None = None) -> Entry | None:
        """The entry at ``key`` in this namespace (or ``namespace``), or ``None``: one
        ``memory/fetch``."""
        where, address = self.scope.address(key, namespace)
        layout = await self._known()
        fetched = await self.client.fetch(address, **layout.vectors())
        return entry_at(fetched.record, where, layout)

    async def read_many(
        self, keys: Iterable[str], *, namespace: str | None = None
    ) -> dict[str, Entry]:
        """The entries at ``keys``, by key: :meth:`A2MAdapter.read_many`'s twin."""
        where, addressed = batch.addresses(self.scope, keys, namespace)
        if not addressed:
            return {}
        flow = batch.read_many(self.scope, await self._known(), where, addressed)
        return await drive_async(flow, self.client)

    async def query(
        self,
        embedding: Sequence[float] | None = None,
        type: str | None = None,
        top_k: int = 5,
        min_score: float | None = None,
        *,
        text: str | None = None,
        tags: Sequence[str] | None = None,
        recursive: bool = False,
        namespace: str | None = None,
        where: Mapping[str, Any] | None = None,
    ) -> list[ScoredEntry]:
        """The ``top_k`` entries (at most the server's ``max_recall_limit``) most similar to
        ``embedding`` and/or ``text``, best first.
        :meth:`A2MAdapter.query`'s twin, with the same calls."""
        check_query(embedding, type, top_k, text, namespace)
        where = checked_where(where)
        layout = await self._known()
        plan = plan_query(
            layout,
            embedding=embedding,
            type=type,
            top_k=top_k,
            min_score=min_score,
            text=text,
            tags=tags,
            recursive=recursive,
            namespace=namespace,
            where_given=where,
        )
        recalled = (await self.client.recall(**plan.params)).records
        own = best_per_key(self.scope.caller, recalled, layout.vectors())
        hits = scored_entries(await drive_async(own, self.client), layout, plan)
        if plan.vectors_later and hits:
            fetched = await self.client.timeline(**vectors_params(hits))
            hits = with_vectors(hits, fetched.records)
        return hits

    async def delete(self, key: str) -> None:
        """Delete the entry at ``key`` in this namespace; a missing key is not an error."""
        await self.delete_many([key])

    async def delete_many(self, keys: Iterable[str]) -> int:
        """Delete the entries at ``keys`` in this namespace; returns how many there were:
        :meth:`A2MAdapter.delete_many`'s twin."""
        _, addressed = batch.addresses(self.scope, keys, None)
        if not addressed:
            return 0
        flow = batch.delete_many(self.scope, await self._known(), addressed)
        return await drive_async(flow, self.client)

    async def list(
        self,
        *,
        type: str | None = None,
        tags: Sequence[str] | None = None,
        limit: int = 50,
        offset: int = 0,
        recursive: bool = False,
        namespace: str | None = None,
        where: Mapping[str, Any] | None = None,
        cursor: str | None = None,
    ) -> EntryList:
        """Entries of this namespace (or ``namespace``), oldest first, a page at a time, by
        offset or by cursor: :meth:`A2MAdapter.list`'s twin, with the same calls."""
        check_page(limit, offset)
        check_type(type)
        where = checked_where(where)
        if cursor is not None and offset:
            raise InvalidParams("page by offset or by cursor, not both (nothing was sent)")
        where_ns = self.namespace if namespace is None else checked_namespace(namespace)
        layout = await self._known()
        plan = paging.listing(
            layout,
            type=type,
            tags=tags,
            namespace=where_ns,
            recursive=recursive,
            where=where,
            caller=self.scope.caller,
        )
        if cursor is not None:
            return await drive_async(paging.page_at(plan, layout, cursor, limit), self.client)
        found = await drive_async(paging.complete(plan, layout), self.client)
        return entry_page(found.entries, offset, limit, truncated=found.truncated)

    def iter_entries(
        self,
        *,
        type: str | None = None,
        tags: Sequence[str] | None = None,
        recursive: bool = False,
        namespace: str | None = None,
        where: Mapping[str, Any] | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> AsyncEntryIterator:
        """Every entry, oldest first, a page at a time (``async for``):
        :meth:`A2MAdapter.iter_entries`'s twin. Nothing is sent until iteration starts."""
        check_type(type)
        check_page_size(page_size)
        where = checked_where(where)
        where_ns = self.namespace if namespace is None else checked_namespace(namespace)

        async def entries(iterator: AsyncEntryIterator) -> AsyncIterator[Entry]:
            layout = await self._known()
            plan = paging.listing(
                layout,
                type=type,
                tags=tags,
                namespace=where_ns,
                recursive=recursive,
                where=where,
                caller=self.scope.caller,
            )
            size = min(page_size, layout.max_recall_limit)
            position: str | None = ""
            while position is not None:
                flow = paging.page(plan, layout, position, size)
                found = await drive_async(flow, self.client)
                iterator.truncated = found.truncated
                for entry in found.entries:
                    yield entry
                position = found.next_cursor

        return AsyncEntryIterator(entries)

    async def filter_operators(self) -> frozenset[str]:
        """The ``where`` operators the server runs (empty: §5.2 equality only)."""
        return (await self._known()).operators

    async def clear(self, *, type: str | None = None, tags: Sequence[str] | None = None) -> int:
        """Delete this namespace's entries (of ``type``, carrying ``tags``); returns how many."""
        check_type(type)
        layout = await self._known()
        cleared = 0
        if not tags:
            selector = type_selector(layout, type)
            selector["where"] = {**selector.get("where", {}), "namespace": self.namespace}
            cleared += (await self.client.forget(**selector)).forgotten
        params = list_params(layout, type=type, namespace=self.namespace)
        while True:
            records = (await self.client.timeline(**params)).records
            going = doomed(records, layout, tags=tags, namespace=self.namespace)
            cleared += await self._forget(going)
            if not going or len(records) < layout.max_recall_limit:
                return cleared

    async def _forget(self, entries: Sequence[Entry]) -> int:
        return await drive_async(batch.forget(entries), self.client)

    async def watch(
        self,
        pattern: str | None = None,
        *,
        namespace: str | None = None,
        recursive: bool = False,
        poll_interval: float = 1.0,
    ) -> AsyncIterator[Change]:
        """Follow writes and deletes of matching entries: :meth:`A2MAdapter.watch`'s twin."""
        watched = watched_namespace(self.namespace, namespace)
        layout = await self._known()
        state = WatchState(watched, recursive, pattern, {})
        async for event in self.client.watch(poll_interval=poll_interval):
            payload = event.model_dump(mode="json")
            written = state.written_key(event.kind, payload)
            if written is not None:
                record = (await self.client.fetch(written, **layout.vectors())).record
                entry = to_entry(record, layout, state.namespace) if record else None
                if entry is not None and state.wrote(written, entry):
                    yield Change("write", entry.namespace, entry.key, entry)
            for space, key in state.deleted(event.kind, payload):
                yield Change("delete", space, key, None)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        return None
