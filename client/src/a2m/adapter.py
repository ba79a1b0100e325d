"""The four-method adapter contract — ``write``, ``read``, ``query``, ``delete`` — that every
framework adapter is built on, over a client of any binding, in the REST draft's entry
shape (``docs/rest-binding.md``).

An adapter is scoped to a namespace for what it *changes*: writes and deletes land in its
namespace only. What it *reads* is not fenced in, because shared memory is the point:
``query`` searches every namespace unless given one, and ``read`` / ``list`` take a
``namespace=`` to look at another agent's entries.

Record conventions every adapter follows, so frameworks can read each other: ``content``
is readable text and a structured value travels in ``metadata.value``; the memory type is
the tier's kind; ``metadata`` carries provenance (``source_framework``, ``source_agent``,
``tags``); ``owner`` is the agent (where the server declares scopes) and ``session`` the
conversation."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any

from typing_extensions import Self

from a2m_types.rest import Entry, EntryList, ScoredEntry

from ._adapter_core import (
    Change,
    Layout,
    Scope,
    WatchState,
    check_page,
    check_query,
    check_type,
    checked_namespace,
    doomed,
    entry_at,
    forget_by_key,
    list_params,
    listed_entries,
    plan_query,
    scored_entries,
    to_entry,
    type_selector,
    vectors_params,
    with_vectors,
)
from ._async_client import AsyncA2MClient
from ._client import A2MClient
from .errors import CapabilityNotSupported

__all__ = ["A2MAdapter", "AsyncA2MAdapter", "Change", "Entry", "EntryList", "ScoredEntry"]


def _scope(
    namespace: str, source_framework: str | None, agent: str | None, session: str | None
) -> Scope:
    return Scope(checked_namespace(namespace), source_framework, agent, session)


def _with_vectors(layout: Layout) -> dict[str, Any]:
    # Entries always carry their vector (draft §6.1), where the server keeps vectors.
    return {"embeddings": True} if "embeddings" in layout.capabilities else {}


def _page(entries: list[Entry], offset: int, limit: int) -> EntryList:
    window = entries[offset : offset + limit]
    following = offset + len(window)
    return EntryList(
        entries=window,
        total=len(entries),
        next_offset=following if following < len(entries) else None,
    )


class A2MAdapter:
    """The contract over a synchronous :class:`~a2m.A2MClient`, scoped to ``namespace``.

    ``source_framework`` and ``agent`` are written into every entry's provenance (``agent``
    also becomes the records' owner where the server declares ``scopes``; over an
    authenticated connection leave it unset, the principal is the owner); ``session`` is
    the conversation records belong to. The client is the caller's: the adapter never
    closes it."""

    def __init__(
        self,
        client: A2MClient,
        namespace: str,
        *,
        source_framework: str | None = None,
        agent: str | None = None,
        session: str | None = None,
    ) -> None:
        self.client = client
        self.scope = _scope(namespace, source_framework, agent, session)
        self._layout: Layout | None = None

    @property
    def namespace(self) -> str:
        """Where this adapter's writes and deletes land."""
        return self.scope.namespace

    def _known(self) -> Layout:
        if self._layout is None:
            description = self.client.description or self.client.describe()
            self._layout = Layout.of(description)
        return self._layout

    # --- the four methods --------------------------------------------------------------

    def write(
        self,
        key: str,
        type: str,
        value: Any,
        embedding: Sequence[float] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Entry:
        """Create or replace the entry at ``key`` in this namespace; returns it as stored
        (its ``id`` and ``created_at`` survive a replacement). A key whose A2M key another
        namespace's entry holds is refused with :class:`~a2m.InvalidParams`."""
        write = self.scope.entry_write(key, type, value, embedding, meta)
        layout = self._known()
        _, address = self.scope.address(key)
        conflict = self.scope.conflict(self.client.fetch(address).record, key)
        if conflict is not None:
            raise conflict
        self.client.remember(self.scope.record_for_write(layout, write))
        entry = self.read(key)
        if entry is None:  # only a concurrent delete can get here
            raise LookupError(f"entry {key!r} was deleted while it was being written")
        return entry

    def read(self, key: str, *, namespace: str | None = None) -> Entry | None:
        """The entry at ``key`` in this namespace (or ``namespace``), or ``None``."""
        where, address = self.scope.address(key, namespace)
        layout = self._known()
        fetched = self.client.fetch(address, **_with_vectors(layout))
        return entry_at(fetched.record, where, layout)

    def query(
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
    ) -> list[ScoredEntry]:
        """The ``top_k`` entries most similar to ``embedding`` and/or ``text``, best first.

        Searches every namespace, or only ``namespace`` (with its children when
        ``recursive``); ``type`` and ``tags`` (all must match) narrow it. Scores rank
        within this one call only (§5.3)."""
        check_query(embedding, type, top_k, text, namespace)
        layout = self._known()
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
        )
        hits = scored_entries(self.client.recall(**plan.params).records, layout, plan)
        if plan.vectors_later and hits:
            hits = with_vectors(hits, self.client.timeline(**vectors_params(hits)).records)
        return hits

    def delete(self, key: str) -> None:
        """Delete the entry at ``key`` in this namespace; a missing key is not an error."""
        entry = self.read(key)
        if entry is not None:
            self._forget([entry])

    # --- what every adapter needs beyond the four ----------------------------------------

    def list(
        self,
        *,
        type: str | None = None,
        tags: Sequence[str] | None = None,
        limit: int = 50,
        offset: int = 0,
        recursive: bool = False,
        namespace: str | None = None,
    ) -> EntryList:
        """Entries of this namespace (or ``namespace``; with children when ``recursive``),
        oldest first, a page at a time. A2M's timeline has no offset, so a listing reaches
        back as far as the server's ``max_recall_limit`` newest records."""
        check_page(limit, offset)
        check_type(type)
        where = self.namespace if namespace is None else checked_namespace(namespace)
        layout = self._known()
        records = self.client.timeline(**list_params(layout, type=type, namespace=where)).records
        entries = listed_entries(records, layout, tags=tags, namespace=where, recursive=recursive)
        return _page(entries, offset, limit)

    def clear(self, *, type: str | None = None, tags: Sequence[str] | None = None) -> int:
        """Delete this namespace's entries (of ``type``, carrying ``tags``); returns how many."""
        check_type(type)
        layout = self._known()
        cleared = 0
        if not tags:
            # The server deletes every entry that says it is this namespace's, however many.
            selector = type_selector(layout, type)
            selector["where"] = {**selector.get("where", {}), "namespace": self.namespace}
            cleared += self.client.forget(**selector).forgotten
        params = list_params(layout, type=type, namespace=self.namespace)
        while True:  # what only a key places here, and what tags select, a page at a time
            records = self.client.timeline(**params).records
            going = doomed(records, layout, tags=tags, namespace=self.namespace)
            cleared += self._forget(going)
            if not going or len(records) < layout.max_recall_limit:
                return cleared

    def _forget(self, entries: Sequence[Entry]) -> int:
        if not entries:
            return 0
        try:
            return self.client.forget(ids=[entry.id for entry in entries]).forgotten
        except CapabilityNotSupported:  # a binding that cannot name records by id
            return sum(self.client.forget(**forget_by_key(e)).forgotten for e in entries)

    def watch(
        self,
        pattern: str | None = None,
        *,
        namespace: str | None = None,
        recursive: bool = False,
        poll_interval: float = 1.0,
    ) -> Iterator[Change]:
        """Follow writes and deletes of entries in this namespace (or ``namespace``, or all
        with ``namespace="*"``) whose key matches the glob ``pattern``; polls the event log,
        so it works on every binding. Iterate it; it never ends on its own."""
        watched = _watched(self.namespace, namespace)
        layout = self._known()
        state = WatchState(watched, recursive, pattern, {})
        for event in self.client.watch(poll_interval=poll_interval):
            payload = event.model_dump(mode="json")
            written = state.written_key(event.kind, payload)
            if written is not None:
                record = self.client.fetch(written, **_with_vectors(layout)).record
                entry = to_entry(record, layout, state.namespace) if record else None
                if entry is not None and state.wrote(written, entry):
                    yield Change("write", entry.namespace, entry.key, entry)
            for space, key in state.deleted(event.kind, payload):
                yield Change("delete", space, key, None)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        return None


def _watched(own: str, namespace: str | None) -> str | None:
    if namespace == "*":
        return None
    return own if namespace is None else checked_namespace(namespace)


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
        self.scope = _scope(namespace, source_framework, agent, session)
        self._layout: Layout | None = None

    @property
    def namespace(self) -> str:
        """Where this adapter's writes and deletes land."""
        return self.scope.namespace

    async def _known(self) -> Layout:
        if self._layout is None:
            description = self.client.description or await self.client.describe()
            self._layout = Layout.of(description)
        return self._layout

    async def write(
        self,
        key: str,
        type: str,
        value: Any,
        embedding: Sequence[float] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Entry:
        """Create or replace the entry at ``key`` in this namespace; returns it as stored."""
        write = self.scope.entry_write(key, type, value, embedding, meta)
        layout = await self._known()
        _, address = self.scope.address(key)
        conflict = self.scope.conflict((await self.client.fetch(address)).record, key)
        if conflict is not None:
            raise conflict
        await self.client.remember(self.scope.record_for_write(layout, write))
        entry = await self.read(key)
        if entry is None:
            raise LookupError(f"entry {key!r} was deleted while it was being written")
        return entry

    async def read(self, key: str, *, namespace: str | None = None) -> Entry | None:
        """The entry at ``key`` in this namespace (or ``namespace``), or ``None``."""
        where, address = self.scope.address(key, namespace)
        layout = await self._known()
        fetched = await self.client.fetch(address, **_with_vectors(layout))
        return entry_at(fetched.record, where, layout)

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
    ) -> list[ScoredEntry]:
        """The ``top_k`` entries most similar to ``embedding`` and/or ``text``, best first."""
        check_query(embedding, type, top_k, text, namespace)
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
        )
        hits = scored_entries((await self.client.recall(**plan.params)).records, layout, plan)
        if plan.vectors_later and hits:
            fetched = await self.client.timeline(**vectors_params(hits))
            hits = with_vectors(hits, fetched.records)
        return hits

    async def delete(self, key: str) -> None:
        """Delete the entry at ``key`` in this namespace; a missing key is not an error."""
        entry = await self.read(key)
        if entry is not None:
            await self._forget([entry])

    async def list(
        self,
        *,
        type: str | None = None,
        tags: Sequence[str] | None = None,
        limit: int = 50,
        offset: int = 0,
        recursive: bool = False,
        namespace: str | None = None,
    ) -> EntryList:
        """Entries of this namespace (or ``namespace``), oldest first, a page at a time."""
        check_page(limit, offset)
        check_type(type)
        where = self.namespace if namespace is None else checked_namespace(namespace)
        layout = await self._known()
        result = await self.client.timeline(**list_params(layout, type=type, namespace=where))
        entries = listed_entries(
            result.records, layout, tags=tags, namespace=where, recursive=recursive
        )
        return _page(entries, offset, limit)

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
        if not entries:
            return 0
        try:
            return (await self.client.forget(ids=[entry.id for entry in entries])).forgotten
        except CapabilityNotSupported:  # a binding that cannot name records by id
            forgotten = 0
            for entry in entries:
                forgotten += (await self.client.forget(**forget_by_key(entry))).forgotten
            return forgotten

    async def watch(
        self,
        pattern: str | None = None,
        *,
        namespace: str | None = None,
        recursive: bool = False,
        poll_interval: float = 1.0,
    ) -> AsyncIterator[Change]:
        """Follow writes and deletes of matching entries: :meth:`A2MAdapter.watch`'s twin."""
        watched = _watched(self.namespace, namespace)
        layout = await self._known()
        state = WatchState(watched, recursive, pattern, {})
        async for event in self.client.watch(poll_interval=poll_interval):
            payload = event.model_dump(mode="json")
            written = state.written_key(event.kind, payload)
            if written is not None:
                record = (await self.client.fetch(written, **_with_vectors(layout))).record
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
