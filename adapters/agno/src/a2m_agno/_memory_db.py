"""``A2MDb``: an Agno database whose user memories are A2M records."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._compat import check_agno

check_agno()

from agno.db.in_memory import InMemoryDb  # noqa: E402
from agno.db.schemas.memory import UserMemory  # noqa: E402

from a2m import A2MClient  # noqa: E402
from a2m.adapter import Entry  # noqa: E402
from a2m_types import Record  # noqa: E402
from a2m_types.rest import InvalidKey, validate_key  # noqa: E402

from . import _records as records  # noqa: E402
from ._store import MemoryStore  # noqa: E402

__all__ = ["A2MDb"]

Row = dict[str, Any]
Rows = tuple[list[Row], int]


def valid_keys(memory_ids: Sequence[str]) -> list[str]:
    """The ids that can be A2M entry keys: any other id names no stored memory."""
    kept = []
    for memory_id in memory_ids:
        text = records.id_text(memory_id)
        if text is None:
            continue
        try:
            kept.append(validate_key(text))
        except InvalidKey:
            continue
    return kept


def latest_by_id(memories: Sequence[UserMemory]) -> dict[str, UserMemory]:
    """The memories to write, one per id (assigned where missing), the last one winning."""
    return {records.ensure_id(memory): memory for memory in memories}


def planned_writes(
    latest: dict[str, UserMemory], existing: dict[str, Entry], preserve_updated_at: bool | None
) -> list[dict[str, Any]]:
    """The entry writes storing ``latest`` over what ``existing`` holds at their ids.
    ``preserve_updated_at`` is ``None`` for ``upsert_user_memory``'s rules (a first write
    keeps the memory's stamps, a rewrite is stamped now), else ``upsert_memories``'."""
    writes = []
    for key, memory in latest.items():
        held = existing.get(key)
        before = records.row(held) if held is not None and records.is_own(held) else None
        if preserve_updated_at is None:
            imposed = None if before is None else records.now()
        else:
            imposed = memory.updated_at if preserve_updated_at else records.now()
        created, updated = records.stamps(memory, before, updated_at=imposed)
        writes.append(records.memory_entry(memory, created_at=created, updated_at=updated))
    return writes


def selected(
    own: list[Entry],
    foreign: list[Record],
    filters: dict[str, Any],
    sort_by: str | None,
    sort_order: str | None,
) -> list[Row]:
    """The rows ``get_user_memories`` answers with, before paging: this namespace's
    memories, then other frameworks' records found by text, filtered and sorted."""
    rows = [records.row(entry) for entry in own]
    seen: set[str] = set()
    for record in foreign:
        values = records.foreign_row(record)
        if values is not None and record.id not in seen:
            seen.add(record.id)
            rows.append(values)
    rows = [values for values in rows if records.matches(values, **filters)]
    return records.sort_rows(rows, sort_by, sort_order)


class A2MDb(InMemoryDb):
    """An Agno database keeping user memories in A2M, everything else in process memory.

    ``A2MDb(A2MClient("http://127.0.0.1:8765/"), namespace="agno")`` then
    ``Agent(db=db, update_memory_on_run=True)``: every memory Agno's memory manager writes
    is an entry of ``namespace`` (key = ``memory_id``, value = the memory's text, the other
    fields in metadata, topics also as tags, ``source_framework="agno"``), so any
    framework's recall finds it and any process with the same namespace reads it back.
    Sessions, runs, metrics and the rest stay in this process, as in ``InMemoryDb``: a
    subclass overriding every user-memory method is all Agno needs for memories to be
    shared, and keeps a session store out of A2M.

    ``namespace`` holds this database's memories only (``clear_memories`` empties it).
    ``get_user_memories(search_content=…)`` also returns records other frameworks wrote,
    anywhere in the store, that the server's recall finds for the text and that contain
    it, with their provenance in the row (``deserialize=False``); ``include_foreign=False``
    turns that off. No owner is set here, so on a local connection Agno's memory ids are
    one space for every agent. Over an authenticated connection the server makes the
    principal the owner of what it writes (spec §6): two principals upserting one
    ``memory_id`` each hold their own copy, each reads its own, and a listing holds
    each id once (the caller's, else the one it may read). The client
    is the caller's and is never closed here; nothing touches the network until a method
    is called."""

    def __init__(
        self,
        client: A2MClient,
        *,
        namespace: str = "agno",
        include_foreign: bool = True,
        id: str | None = None,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        if id is not None:
            self.id = id
        self.client = client
        self.include_foreign = include_foreign
        self._store = MemoryStore(client, namespace, None)

    @property
    def namespace(self) -> str:
        """Where this database's memories live."""
        return self._store.namespace

    def _rows(self, user_id: str | None = None) -> list[Row]:
        return [records.row(e) for e in self._store.entries({"user_id": user_id})]

    def upsert_user_memory(
        self, memory: UserMemory, deserialize: bool | None = True
    ) -> UserMemory | Row | None:
        """Create or replace one memory (a missing ``memory_id`` is assigned): one read,
        then one batched write. A rewrite keeps ``created_at`` and stamps ``updated_at``."""
        stored = self._upsert([memory], preserve_updated_at=None)
        values = records.row(stored[0])
        return records.to_memory(values) if deserialize else values

    def upsert_memories(
        self,
        memories: list[UserMemory],
        deserialize: bool | None = True,
        preserve_updated_at: bool = False,
    ) -> list[UserMemory | Row]:
        """Create or replace many memories in one ``memory/remember`` (per
        ``max_records_per_call``) after one read: all are stored or, on error, none (where
        a later call fails, the memories the earlier ones replaced are written back as
        the read found them and the new ones removed, before the error is raised).
        ``updated_at`` is now unless ``preserve_updated_at`` keeps each memory's own."""
        stored = self._upsert([m for m in memories if m is not None], preserve_updated_at)
        rows = [records.row(entry) for entry in stored]
        return [records.to_memory(values) if deserialize else values for values in rows]

    def _upsert(self, memories: list[UserMemory], preserve_updated_at: bool | None) -> list[Entry]:
        if not memories:
            return []
        latest = latest_by_id(memories)
        existing = self._store.read_many(list(latest))
        return self._store.write_many(planned_writes(latest, existing, preserve_updated_at))

    def get_user_memory(
        self, memory_id: str, deserialize: bool | None = True, user_id: str | None = None
    ) -> UserMemory | Row | None:
        """The memory with ``memory_id`` (of ``user_id`` when given), or ``None``: one call."""
        keys = valid_keys([memory_id])
        entry = self._store.read_many(keys).get(keys[0]) if keys else None
        if entry is None or not records.is_own(entry):
            return None
        values = records.row(entry)
        if user_id is not None and values["user_id"] != user_id:
            return None
        return records.to_memory(values) if deserialize else values

    def get_user_memories(
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
        """Memories matching every filter given, exactly and completely, sorted by a
        column (descending unless ``sort_order="asc"``) and paged (1-indexed); with
        ``deserialize=False``, ``(rows, total before paging)``. Calls: one per 1,000
        memories of the user/agent/team selected (those filters run on the server),
        plus one recall when ``search_content`` looks at other frameworks too."""
        records.check_page(limit, page)
        pushed = {"user_id": user_id, "agent_id": agent_id, "team_id": team_id}
        own = self._store.entries(pushed)
        foreign: list[Record] = []
        if search_content is not None and self.include_foreign:
            foreign = self._store.search(search_content)
        filters = {**pushed, "topics": topics, "search_content": search_content}
        rows = selected(own, foreign, filters, sort_by, sort_order)
        window = records.page_rows(rows, limit, page)
        if not deserialize:
            return window, len(rows)
        return [records.to_memory(values) for values in window]

    def delete_user_memory(self, memory_id: str, user_id: str | None = None) -> None:
        """Delete one memory (only if it is ``user_id``'s, when given): one call."""
        self._store.forget(valid_keys([memory_id]), user_id)

    def delete_user_memories(self, memory_ids: list[str], user_id: str | None = None) -> None:
        """Delete memories by id (only ``user_id``'s, when given): one call."""
        self._store.forget(valid_keys(memory_ids), user_id)

    def clear_memories(self) -> None:
        """Delete every memory of this database's namespace."""
        self._store.clear()

    def get_all_memory_topics(self, user_id: str | None = None) -> list[str]:
        """Every topic of the memories (of ``user_id``), once each, sorted."""
        return records.topics_of(self._rows(user_id))

    def get_user_memory_stats(
        self, limit: int | None = None, page: int | None = None, user_id: str | None = None
    ) -> Rows:
        """Per user: ``total_memories`` and ``last_memory_updated_at``, most recently
        updated first, paged; and how many users there are."""
        records.check_page(limit, page)
        return records.memory_stats(self._rows(user_id), limit, page)
