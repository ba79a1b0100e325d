"""``A2MStorage``: CrewAI's ``StorageBackend`` protocol on an A2M server."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from crewai.memory.types import MemoryRecord, ScopeInfo

from a2m import A2MClient, A2MConnectionError, AsyncA2MClient, EmbeddingMismatch, Record
from a2m._adapter_owners import Caller, best_per_key, choose
from a2m._adapter_steps import drive, drive_async
from a2m.adapter_support import Flow, remember_whole

from ._listing import arecords, records
from ._mapping import (
    Layout,
    child_scopes,
    chosen_copy,
    is_own,
    one_per_id,
    record_input,
    scope_info,
    to_memory_record,
)
from ._plan import (
    QueryTexts,
    delete_plan,
    dimension_error,
    layout_of,
    listed,
    listing_params,
    lookup_params,
    newest_first,
    search_plan,
    searched,
)

__all__ = ["A2MStorage", "ForeignRecordError"]


class ForeignRecordError(PermissionError):
    """An update of a record another framework wrote: this adapter changes only its own."""


class A2MStorage:
    """CrewAI's ``StorageBackend`` on an A2M server, so every crew (and every other
    framework) pointed at that server shares one memory.

    ``client`` is an :class:`~a2m.A2MClient` (the caller's: never closed here) or a URL
    (then this storage owns its clients; :meth:`close` them). The async members use
    ``async_client``, or with a URL an :class:`~a2m.AsyncA2MClient` made on first use; with
    only a sync client given they run it in a worker thread, never on the event loop.
    ``agent`` and ``session`` go into every record's provenance.

    Reads cross frameworks: ``search`` and the listings see every record in the scope,
    whoever wrote it. Writes and deletes touch only records this adapter wrote. Nothing
    touches the network until the first call."""

    def __init__(
        self,
        client: A2MClient | str | None = None,
        *,
        async_client: AsyncA2MClient | None = None,
        agent: str | None = None,
        session: str | None = None,
    ) -> None:
        self._url: str | None = None
        if isinstance(client, A2MClient):
            self._client, self._owns_client = client, False
        else:
            self._url = client
            self._client, self._owns_client = A2MClient(client), True
        self._async_client = async_client
        self._owns_async = False
        self.agent = agent
        self.session = session
        self.query_texts = QueryTexts()
        """The text of recent query embeddings (filled by :class:`~a2m_crewai.A2MMemory`),
        sent beside the vector so the server ranks lexically too."""
        self._layout: Layout | None = None
        self._caller = Caller()
        """Whom the connection acts as, where several principals hold one record's key."""

    @property
    def client(self) -> A2MClient:
        """The synchronous client every sync member calls through."""
        return self._client

    # --- plumbing ----------------------------------------------------------------------

    def check_reachable(self) -> None:
        """Raise the client's error (:class:`~a2m.A2MConnectError` for a server that is
        down) unless the server has answered: one ``memory/describe`` the first time,
        none after. The error is raised on its own, without the socket's chained one."""
        try:
            self._known()
        except A2MConnectionError as exc:
            raise type(exc)(exc.message, method=exc.method) from None

    def _known(self) -> Layout:
        if self._layout is None:
            description = self._client.description or self._client.describe()
            self._layout = layout_of(description)
            self._caller.described(description)
        return self._layout

    async def _aknown(self, client: AsyncA2MClient) -> Layout:
        if self._layout is None:
            description = client.description or await client.describe()
            self._layout = layout_of(description)
            self._caller.described(description)
        return self._layout

    def _aclient(self) -> AsyncA2MClient | None:
        if self._async_client is None and self._owns_client:
            self._async_client, self._owns_async = AsyncA2MClient(self._url), True
        return self._async_client

    def _inputs(self, records: Sequence[MemoryRecord], layout: Layout) -> list[dict[str, Any]]:
        return [record_input(r, layout, agent=self.agent, session=self.session) for r in records]

    @staticmethod
    def _save_flow(layout: Layout, inputs: list[dict[str, Any]]) -> Flow[list[str]]:
        return remember_whole(
            inputs,
            per_call=layout.max_records_per_call,
            per_read=layout.max_recall_limit,
            capabilities=layout.capabilities,
        )

    def _batches(self, items: list[Any], layout: Layout) -> list[list[Any]]:
        size = max(layout.max_records_per_call, 1)
        return [items[start : start + size] for start in range(0, len(items), size)]

    def _list(
        self, scope_prefix: str | None, *, own: bool = False, vectors: bool = False
    ) -> list[MemoryRecord]:
        layout = self._known()
        params = listing_params(layout, scope_prefix, own=own, vectors=vectors)
        found = self._own(list(records(self._client, layout, params)))
        return listed(one_per_id(found, self._caller.owner), scope_prefix)

    def _vectors(self) -> dict[str, Any]:
        return {"embeddings": True} if "embeddings" in self._known().capabilities else {}

    def _own(self, found: list[Record]) -> list[Record]:
        # Several principals may each hold a record's key (spec §3.6): keep the caller's.
        if "scopes" not in self._known().capabilities:
            return found
        chosen = drive(choose(self._caller, found, self._vectors()), self._client)
        return [r for r in found if r.key is None or chosen[r.key].id == r.id]

    # --- StorageBackend: writes ----------------------------------------------------------

    def save(self, records: list[MemoryRecord]) -> None:
        """Store ``records``, all or nothing: one ``memory/remember`` for the batch (split
        only at the server's ``max_records_per_call``). A save of several calls first reads
        which ids are stored, and when a later call is refused removes what the earlier
        ones created (one ``memory/timeline`` per ``max_recall_limit`` ids and one
        ``memory/forget`` more). A record whose id is already stored is left as it is (A2M
        ids make writes idempotent; use :meth:`update` to change one). A record that
        cannot be stored exactly raises ``ValueError`` and nothing of the batch is sent."""
        if not records:
            return
        layout = self._known()
        inputs = self._inputs(records, layout)
        try:
            drive(self._save_flow(layout, inputs), self._client)
        except EmbeddingMismatch as exc:
            raise dimension_error(exc) from exc

    def _found(self, record_id: str, *, vectors: bool = False, whole: bool = False) -> list[Record]:
        """The records holding CrewAI id ``record_id`` this caller reads: by A2M id, then
        by ``metadata.crewai_id``, which a record an update moved to another scope carries
        (its A2M id is new), as does another principal's copy of a record. The second
        lookup is skipped where the first found the record and owners cannot share it,
        unless ``whole``: an update must also find the copy an interrupted move left."""
        layout = self._known()
        found: list[Record] = []
        for moved in (False, True):
            if found and not whole and "scopes" not in layout.capabilities:
                break
            params = lookup_params(layout, record_id, moved=moved, vectors=vectors)
            found += self._client.timeline(**params).records
        return self._own(found) if len(found) > 1 else found

    def _find(self, record_id: str, *, vectors: bool = False) -> Record | None:
        found = self._found(record_id, vectors=vectors)
        return chosen_copy(found, self._caller.owner) if found else None

    def update(self, record: MemoryRecord) -> None:
        """Replace the record with ``record.id``: two ``memory/timeline`` to find it (by
        A2M id, and by ``metadata.crewai_id``, which a record an earlier update moved
        carries), then one ``memory/remember`` at its key (the A2M id survives). When the
        scope moves it to another key, the new state is written first (a
        ``memory/remember`` under a new A2M id, ``record.id`` kept in
        ``metadata.crewai_id``) and only then is the old record removed (a
        ``memory/forget``): a refused write or a failure in between leaves the old record
        in place, never neither, and the next update of the record removes every copy an
        interrupted one left, whatever scope it moves to. A record that is not stored is
        saved. A record another framework wrote raises :class:`ForeignRecordError` and is
        left unchanged."""
        layout = self._known()
        found = self._found(record.id, whole=True)
        if not found:
            self.save([record])
            return
        current = chosen_copy(found, self._caller.owner)
        if not is_own(current):
            raise ForeignRecordError(
                f"record {record.id!r} was written by another framework; a2m-crewai "
                "changes only the records it wrote"
            )
        # Without an id: an id already stored would make the write a no-op (spec §3.1).
        fresh = record_input(record, layout, agent=self.agent, session=self.session, with_id=False)
        try:
            self._client.remember([fresh])
        except EmbeddingMismatch as exc:
            raise dimension_error(exc) from exc
        # The caller's copies at other keys: where it was, and where an interrupted move
        # left it (a copy at the new key was replaced in place). Where the caller is not
        # known, the owner of the copy it read.
        mine = current.owner if self._caller.owner is None else self._caller.owner
        stale = [r.id for r in found if r.key != fresh["key"] and r.owner == mine and is_own(r)]
        if stale:
            self._client.forget(ids=list(dict.fromkeys(stale)))

    def delete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        """Delete this adapter's records matching every given criterion (scope by
        segment, any of ``categories``, ids, created before ``older_than``, metadata
        equal); none given deletes all of them. Returns how many went. Without
        categories, metadata or age: one ``memory/forget``, the server selecting (two
        with ``record_ids``: the second removes records an update moved to another
        scope, which keep their id in ``metadata.crewai_id``).

        Deleting by categories, metadata or age lists this adapter's records in the scope
        (``⌈n/L⌉`` ``memory/timeline`` calls by cursor, ``L`` the server's
        ``max_recall_limit``; metadata and age are filtered by the server where it
        declares the operators, categories always here), then forgets the chosen ids, one
        ``memory/forget`` per ``max_records_per_call``."""
        layout = self._known()
        plan = delete_plan(
            layout, scope_prefix, categories, record_ids, older_than, metadata_filter
        )
        if plan is None:
            return 0
        if plan.forget is not None:
            forgotten = self._client.forget(**plan.forget).forgotten
            if plan.moved is not None:
                forgotten += self._client.forget(**plan.moved).forgotten
            return forgotten
        assert plan.listing is not None
        chosen = plan.chosen(records(self._client, layout, plan.listing))
        return sum(
            self._client.forget(ids=batch).forgotten for batch in self._batches(chosen, layout)
        )

    def reset(self, scope_prefix: str | None = None) -> None:
        """Delete every record this adapter wrote in ``scope_prefix`` (all of them for
        ``None``), however many; other frameworks' records stay. One ``memory/forget``."""
        self.delete(scope_prefix=scope_prefix)

    def touch_records(self, record_ids: list[str]) -> None:
        """Refresh ``last_accessed`` of records a recall returned (CrewAI's ``Memory``
        calls it after each recall): no call at all. The server stamps ``accessed_at`` on
        every record a ``memory/recall`` returns (spec §3.1), and a record reads with the
        later of that and the ``last_accessed`` CrewAI saved. So every search candidate
        counts as accessed, as the server counts it, not only the ones CrewAI kept."""
        del record_ids

    # --- StorageBackend: reads -----------------------------------------------------------

    def search(
        self,
        query_embedding: list[float],
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[MemoryRecord, float]]:
        """The ``limit`` records most relevant to ``query_embedding`` (and to the query's
        text, when :class:`~a2m_crewai.A2MMemory` carried it down), best first, as
        ``(record, score)``: one ``memory/recall``. Scores rank within one call only."""
        layout = self._known()
        plan = search_plan(
            layout,
            self.query_texts,
            query_embedding,
            scope_prefix,
            categories,
            metadata_filter,
            limit,
            min_score,
        )
        if "embedding" not in plan.params and "query" not in plan.params:
            return []
        try:
            found = self._client.recall(**plan.params).records
            own = best_per_key(self._caller, found, self._vectors())
            return searched(plan, one_per_id(drive(own, self._client), self._caller.owner))
        except EmbeddingMismatch as exc:
            raise dimension_error(exc) from exc

    def get_record(self, record_id: str) -> MemoryRecord | None:
        """The record with ``record_id``, or ``None``: one ``memory/timeline``, a second
        when no A2M id is ``record_id`` (a record an update moved keeps its id in
        ``metadata.crewai_id``)."""
        found = self._find(record_id, vectors=True)
        return to_memory_record(found) if found is not None else None

    def list_records(
        self, scope_prefix: str | None = None, limit: int = 200, offset: int = 0
    ) -> list[MemoryRecord]:
        """Records at or beneath ``scope_prefix``, newest first, ``limit`` from ``offset``,
        over every record in the scope: ``⌈n/L⌉`` ``memory/timeline`` calls (``n`` records
        in the scope, ``L`` the server's ``max_recall_limit``, by cursor; one, capped with
        :class:`~a2m_crewai.ListingCapped`, on a server that cannot page)."""
        if limit <= 0 or offset < 0:
            return []
        records = newest_first(self._list(scope_prefix, vectors=True))
        return records[offset : offset + limit]

    def get_scope_info(self, scope: str) -> ScopeInfo:
        """Count, categories, date range and child scopes of ``scope``: ``⌈n/L⌉`` timeline
        calls, as :meth:`list_records`."""
        return scope_info(scope, self._list(scope))

    def list_scopes(self, parent: str = "/") -> list[str]:
        """The immediate child scopes of ``parent``: ``⌈n/L⌉`` ``memory/timeline`` calls,
        as :meth:`list_records`."""
        return child_scopes((r.scope for r in self._list(parent)), parent)

    def list_categories(self, scope_prefix: str | None = None) -> dict[str, int]:
        """Each category in ``scope_prefix`` and how many records carry it: ``⌈n/L⌉``
        timeline calls, as :meth:`list_records`."""
        counts: dict[str, int] = {}
        for record in self._list(scope_prefix):
            for category in record.categories:
                counts[category] = counts.get(category, 0) + 1
        return counts

    def count(self, scope_prefix: str | None = None) -> int:
        """How many records are at or beneath ``scope_prefix``: ``⌈n/L⌉``
        ``memory/timeline`` calls, as :meth:`list_records` (A2M has no count)."""
        return len(self._list(scope_prefix))

    # --- StorageBackend: async -----------------------------------------------------------

    async def asave(self, records: list[MemoryRecord]) -> None:
        """:meth:`save` on the async client."""
        client = self._aclient()
        if client is None:
            await asyncio.to_thread(self.save, records)
            return
        if not records:
            return
        layout = await self._aknown(client)
        inputs = self._inputs(records, layout)
        try:
            await drive_async(self._save_flow(layout, inputs), client, settle=True)
        except EmbeddingMismatch as exc:
            raise dimension_error(exc) from exc

    async def asearch(
        self,
        query_embedding: list[float],
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[MemoryRecord, float]]:
        """:meth:`search` on the async client."""
        client = self._aclient()
        if client is None:
            return await asyncio.to_thread(
                self.search,
                query_embedding,
                scope_prefix,
                categories,
                metadata_filter,
                limit,
                min_score,
            )
        layout = await self._aknown(client)
        plan = search_plan(
            layout,
            self.query_texts,
            query_embedding,
            scope_prefix,
            categories,
            metadata_filter,
            limit,
            min_score,
        )
        if "embedding" not in plan.params and "query" not in plan.params:
            return []
        try:
            found = (await client.recall(**plan.params)).records
            own = best_per_key(self._caller, found, self._vectors())
            return searched(plan, one_per_id(await drive_async(own, client), self._caller.owner))
        except EmbeddingMismatch as exc:
            raise dimension_error(exc) from exc

    async def adelete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        """:meth:`delete` on the async client."""
        client = self._aclient()
        if client is None:
            return await asyncio.to_thread(
                self.delete, scope_prefix, categories, record_ids, older_than, metadata_filter
            )
        layout = await self._aknown(client)
        plan = delete_plan(
            layout, scope_prefix, categories, record_ids, older_than, metadata_filter
        )
        if plan is None:
            return 0
        if plan.forget is not None:
            forgotten = (await client.forget(**plan.forget)).forgotten
            if plan.moved is not None:
                forgotten += (await client.forget(**plan.moved)).forgotten
            return forgotten
        assert plan.listing is not None
        listing = [record async for record in arecords(client, layout, plan.listing)]
        chosen = plan.chosen(listing)
        forgotten = 0
        for batch in self._batches(chosen, layout):
            forgotten += (await client.forget(ids=batch)).forgotten
        return forgotten

    # --- lifetime ------------------------------------------------------------------------

    def __copy__(self) -> A2MStorage:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> A2MStorage:
        # A handle on a shared server: copies of a Memory (a crew's copy(), kickoff_for_each)
        # keep writing to the same store through the same clients.
        return self

    def close(self) -> None:
        """Close the sync client if this storage made it (a caller's client stays open)."""
        if self._owns_client:
            self._client.close()

    async def aclose(self) -> None:
        """Close every client this storage made, the async one included."""
        self.close()
        if self._owns_async and self._async_client is not None:
            await self._async_client.aclose()
