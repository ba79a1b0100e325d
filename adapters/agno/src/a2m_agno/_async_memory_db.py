"""``AsyncA2MDb``: ``A2MDb``'s twin for Agno's async database interface (``AsyncBaseDb``)."""

from __future__ import annotations

from typing import Any

from ._compat import check_agno

check_agno()

from agno.db.base import AsyncBaseDb  # noqa: E402
from agno.db.in_memory import InMemoryDb  # noqa: E402
from agno.db.schemas.memory import UserMemory  # noqa: E402

from a2m import AsyncA2MClient  # noqa: E402
from a2m.adapter import Entry  # noqa: E402
from a2m_types import Record  # noqa: E402

from . import _records as records  # noqa: E402
from ._local_tables import LocalTables  # noqa: E402
from ._memory_db import Row, Rows, latest_by_id, planned_writes, selected, valid_keys  # noqa: E402
from ._store import AsyncMemoryStore  # noqa: E402

__all__ = ["AsyncA2MDb"]


class AsyncA2MDb(LocalTables, AsyncBaseDb):
    """An async Agno database keeping user memories in A2M over an
    :class:`~a2m.AsyncA2MClient`: every memory method is a coroutine awaiting the client,
    nothing blocks the event loop. The same layout, rules and call counts as
    :class:`~a2m_agno.A2MDb`; sessions and the rest live in an in-process ``InMemoryDb``
    (``local``). Agno awaits it where its ``arun`` paths take an ``AsyncBaseDb``. The client
    is the caller's and is never closed here."""

    def __init__(
        self,
        client: AsyncA2MClient,
        *,
        namespace: str = "agno",
        include_foreign: bool = True,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.client = client
        self.include_foreign = include_foreign
        self.local = InMemoryDb()  # type: ignore[no-untyped-call]
        self._store = AsyncMemoryStore(client, namespace, None)

    @property
    def namespace(self) -> str:
        """Where this database's memories live."""
        return self._store.namespace

    async def _rows(self, user_id: str | None = None) -> list[Row]:
        return [records.row(e) for e in await self._store.entries({"user_id": user_id})]

    async def _upsert(
        self, memories: list[UserMemory], preserve_updated_at: bool | None
    ) -> list[Entry]:
        if not memories:
            return []
        latest = latest_by_id(memories)
        existing = await self._store.read_many(list(latest))
        writes = planned_writes(latest, existing, preserve_updated_at)
        return await self._store.write_many(writes)

    async def upsert_user_memory(
        self, memory: UserMemory, deserialize: bool | None = True
    ) -> UserMemory | Row | None:
        """See :meth:`A2MDb.upsert_user_memory <a2m_agno.A2MDb.upsert_user_memory>`."""
        stored = await self._upsert([memory], preserve_updated_at=None)
        values = records.row(stored[0])
        return records.to_memory(values) if deserialize else values

    async def upsert_memories(
        self,
        memories: list[UserMemory],
        deserialize: bool | None = True,
        preserve_updated_at: bool = False,
    ) -> list[UserMemory | Row]:
        """See :meth:`A2MDb.upsert_memories <a2m_agno.A2MDb.upsert_memories>`: one
        ``memory/remember`` per ``max_records_per_call``, after one read."""
        stored = await self._upsert([m for m in memories if m is not None], preserve_updated_at)
        rows = [records.row(entry) for entry in stored]
        return [records.to_memory(values) if deserialize else values for values in rows]

    async def get_user_memory(
        self, memory_id: str, deserialize: bool | None = True, user_id: str | None = None
    ) -> UserMemory | Row | None:
        """See :meth:`A2MDb.get_user_memory <a2m_agno.A2MDb.get_user_memory>`."""
        keys = valid_keys([memory_id])
        entry = (await self._store.read_many(keys)).get(keys[0]) if keys else None
        if entry is None or not records.is_own(entry):
            return None
        values = records.row(entry)
        if user_id is not None and values["user_id"] != user_id:
            return None
        return records.to_memory(values) if deserialize else values

    async def get_user_memories(
        self,
        user_id: str | None = None,
        agent_id: str | None = None,
        team_id: str | None = None,
        topics: list[str] | None = None,
        search_content: str | None = None,
        limit: int | None = None,
        page: int | None = None,
        sort_by: str | None = None,
        sort_order: str | None = None,
        deserialize: bool | None = True,
    ) -> list[UserMemory] | Rows:
        """See :meth:`A2MDb.get_user_memories <a2m_agno.A2MDb.get_user_memories>`."""
        records.check_page(limit, page)
        pushed = {"user_id": user_id, "agent_id": agent_id, "team_id": team_id}
        own = await self._store.entries(pushed)
        foreign: list[Record] = []
        if search_content is not None and self.include_foreign:
            foreign = await self._store.search(search_content)
        filters: dict[str, Any] = {**pushed, "topics": topics, "search_content": search_content}
        rows = selected(own, foreign, filters, sort_by, sort_order)
        window = records.page_rows(rows, limit, page)
        if not deserialize:
            return window, len(rows)
        return [records.to_memory(values) for values in window]

    async def delete_user_memory(self, memory_id: str, user_id: str | None = None) -> None:
        """See :meth:`A2MDb.delete_user_memory <a2m_agno.A2MDb.delete_user_memory>`."""
        await self._store.forget(valid_keys([memory_id]), user_id)

    async def delete_user_memories(self, memory_ids: list[str], user_id: str | None = None) -> None:
        """See :meth:`A2MDb.delete_user_memories <a2m_agno.A2MDb.delete_user_memories>`."""
        await self._store.forget(valid_keys(memory_ids), user_id)

    async def clear_memories(self) -> None:
        """See :meth:`A2MDb.clear_memories <a2m_agno.A2MDb.clear_memories>`."""
        await self._store.clear()

    async def get_all_memory_topics(self, user_id: str | None = None) -> list[str]:
        """See :meth:`A2MDb.get_all_memory_topics <a2m_agno.A2MDb.get_all_memory_topics>`."""
        return records.topics_of(await self._rows(user_id))

    async def get_user_memory_stats(
        self, limit: int | None = None, page: int | None = None, user_id: str | None = None
    ) -> Rows:
        """See :meth:`A2MDb.get_user_memory_stats <a2m_agno.A2MDb.get_user_memory_stats>`."""
        records.check_page(limit, page)
        return records.memory_stats(await self._rows(user_id), limit, page)
