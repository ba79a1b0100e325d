"""The A2M calls behind the databases, sync and async twins, on the adapter contract
(:mod:`a2m.adapter`): batched writes, complete listings, deletes by key in one call.

Every method here states its number of A2M calls; the databases add none of their own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from a2m import A2MClient, AsyncA2MClient, IncompleteListing
from a2m.adapter import A2MAdapter, AsyncA2MAdapter, Entry, ScoredEntry
from a2m.adapter_support import ServerLayout
from a2m_types import DescribeResult, Record
from a2m_types.rest import MAX_TOP_K, record_key

from ._records import KIND_KEY, SOURCE_FRAMEWORK, USER_MEMORY

__all__ = ["AsyncMemoryStore", "IncompleteListingError", "MemoryStore"]

PAGE_SIZE = 1000
"""Entries per listing call (the client lowers it to the server's ``max_recall_limit``)."""
KEYS_PER_CALL = 1000
"""Keys named in one ``memory/forget``, which keeps a request's body small."""


class IncompleteListingError(RuntimeError, IncompleteListing):
    """The server cannot list every matching entry (it pages by no cursor, and its limit
    was reached), so an exact answer is not possible: nothing is returned rather than a
    silently short one. An :class:`a2m.IncompleteListing`, as every adapter's is."""


def _incomplete(namespace: str) -> IncompleteListingError:
    return IncompleteListingError(
        f"namespace {namespace!r} holds more matching entries than this server lists in "
        "one call, and it offers no paging cursor; an exact answer is not possible"
    )


def _search_limit(description: DescribeResult) -> int:
    """Records a search asks for: ``MAX_TOP_K``, or the server's ``max_recall_limit``
    where that is fewer."""
    return min(MAX_TOP_K, ServerLayout.of(description).max_recall_limit)


def _pushed(where: Mapping[str, Any], kind: str) -> dict[str, Any]:
    return {KIND_KEY: kind, **{k: v for k, v in where.items() if v is not None}}


def forget_params(namespace: str, keys: Sequence[str], user_id: str | None) -> dict[str, Any]:
    """``memory/forget`` params deleting the memories at ``keys`` of ``namespace`` (only
    those of ``user_id`` when given): one call, decided by the server."""
    where: dict[str, Any] = {
        "key": [record_key(namespace, key) for key in keys],
        "namespace": namespace,
        KIND_KEY: USER_MEMORY,
    }
    if user_id is not None:
        where["user_id"] = user_id
    return {"where": where}


class MemoryStore:
    """A namespace of Agno memories on a synchronous client."""

    def __init__(self, client: A2MClient, namespace: str, agent: str | None) -> None:
        self.adapter = A2MAdapter(client, namespace, source_framework=SOURCE_FRAMEWORK, agent=agent)

    @property
    def namespace(self) -> str:
        return self.adapter.namespace

    def entries(self, where: Mapping[str, Any], kind: str = USER_MEMORY) -> list[Entry]:
        """Every entry of the namespace of this ``kind`` whose metadata equals ``where``
        (``None`` values ignored), oldest first, filtered by the server: one call per
        ``PAGE_SIZE`` entries, complete on a server paging by cursor. On one without,
        :class:`IncompleteListingError` when its limit cut the listing short."""
        listing = self.adapter.iter_entries(where=_pushed(where, kind), page_size=PAGE_SIZE)
        found = list(listing)
        if listing.truncated:
            raise _incomplete(self.namespace)
        return found

    def read_many(self, keys: Sequence[str]) -> dict[str, Entry]:
        """The entries at ``keys`` (missing ones absent): one call per ``L`` keys."""
        return self.adapter.read_many(keys) if keys else {}

    def write_many(self, writes: Sequence[Mapping[str, Any]]) -> list[Entry]:
        """Store ``writes`` (entry writes), all checked before anything is sent, all or
        nothing: one ``memory/remember`` per ``max_records_per_call``, one read for the
        namespace check and one reading them back (per ``L`` keys). Where a later call is
        refused, the contract puts back what the earlier ones replaced and removes what
        they added (:meth:`a2m.adapter.A2MAdapter.write_many`)."""
        return self.adapter.write_many(writes) if writes else []

    def forget(self, keys: Sequence[str], user_id: str | None) -> int:
        """Delete the memories at ``keys`` (of ``user_id`` when given): one call per 1000 ids."""
        if not keys:
            return 0
        forgotten = 0
        for start in range(0, len(keys), KEYS_PER_CALL):
            params = forget_params(self.namespace, keys[start : start + KEYS_PER_CALL], user_id)
            forgotten += self.adapter.client.forget(**params).forgotten
        return forgotten

    def forget_where(self, where: Mapping[str, Any], kind: str) -> int:
        """Delete the entries of the namespace of this ``kind`` whose metadata equals
        ``where``: one call."""
        selector = {**_pushed(where, kind), "namespace": self.namespace}
        return self.adapter.client.forget(where=selector).forgotten

    def forget_keys(self, keys: Sequence[str]) -> int:
        """Delete the entries at ``keys`` of the namespace: one call per 1000 keys."""
        if not keys:
            return 0
        forgotten = 0
        for start in range(0, len(keys), KEYS_PER_CALL):
            chunk = [record_key(self.namespace, k) for k in keys[start : start + KEYS_PER_CALL]]
            where = {"key": chunk, "namespace": self.namespace}
            forgotten += self.adapter.client.forget(where=where).forgotten
        return forgotten

    def query(
        self,
        embedding: Sequence[float] | None,
        text: str | None,
        top_k: int,
        everywhere: bool = False,
        where: Mapping[str, Any] | None = None,
    ) -> list[ScoredEntry]:
        """The ``top_k`` entries of the namespace and beneath (of every namespace when
        ``everywhere``) nearest ``embedding`` and/or ``text`` that match ``where``, best
        first: one recall."""
        namespace = None if everywhere else self.namespace
        return self.adapter.query(
            embedding, text=text, top_k=top_k, namespace=namespace, recursive=True, where=where
        )

    def clear(self) -> int:
        """Delete every entry of the namespace: one call, plus one per page of entries
        that only their key places here."""
        return self.adapter.clear()

    def search(self, text: str) -> list[Record]:
        """Records of every namespace and framework, keyed or not, whose words match
        ``text`` by the server's recall: one call, at most ``MAX_TOP_K`` records (or the
        server's ``max_recall_limit`` where that is fewer: asking past it is refused)."""
        if not text.strip():
            return []
        client = self.adapter.client
        limit = _search_limit(client.description or client.describe())
        return client.recall(text, limit=limit).records


class AsyncMemoryStore:
    """:class:`MemoryStore`'s twin on an asyncio client."""

    def __init__(self, client: AsyncA2MClient, namespace: str, agent: str | None) -> None:
        self.adapter = AsyncA2MAdapter(
            client, namespace, source_framework=SOURCE_FRAMEWORK, agent=agent
        )

    @property
    def namespace(self) -> str:
        return self.adapter.namespace

    async def entries(self, where: Mapping[str, Any], kind: str = USER_MEMORY) -> list[Entry]:
        """See :meth:`MemoryStore.entries`."""
        listing = self.adapter.iter_entries(where=_pushed(where, kind), page_size=PAGE_SIZE)
        found = [entry async for entry in listing]
        if listing.truncated:
            raise _incomplete(self.namespace)
        return found

    async def read_many(self, keys: Sequence[str]) -> dict[str, Entry]:
        """See :meth:`MemoryStore.read_many`."""
        return await self.adapter.read_many(keys) if keys else {}

    async def write_many(self, writes: Sequence[Mapping[str, Any]]) -> list[Entry]:
        """See :meth:`MemoryStore.write_many`."""
        return await self.adapter.write_many(writes) if writes else []

    async def forget(self, keys: Sequence[str], user_id: str | None) -> int:
        """See :meth:`MemoryStore.forget`."""
        if not keys:
            return 0
        forgotten = 0
        for start in range(0, len(keys), KEYS_PER_CALL):
            params = forget_params(self.namespace, keys[start : start + KEYS_PER_CALL], user_id)
            forgotten += (await self.adapter.client.forget(**params)).forgotten
        return forgotten

    async def forget_where(self, where: Mapping[str, Any], kind: str) -> int:
        """See :meth:`MemoryStore.forget_where`."""
        selector = {**_pushed(where, kind), "namespace": self.namespace}
        return (await self.adapter.client.forget(where=selector)).forgotten

    async def forget_keys(self, keys: Sequence[str]) -> int:
        """See :meth:`MemoryStore.forget_keys`."""
        if not keys:
            return 0
        forgotten = 0
        for start in range(0, len(keys), KEYS_PER_CALL):
            chunk = [record_key(self.namespace, k) for k in keys[start : start + KEYS_PER_CALL]]
            where = {"key": chunk, "namespace": self.namespace}
            forgotten += (await self.adapter.client.forget(where=where)).forgotten
        return forgotten

    async def query(
        self,
        embedding: Sequence[float] | None,
        text: str | None,
        top_k: int,
        everywhere: bool = False,
        where: Mapping[str, Any] | None = None,
    ) -> list[ScoredEntry]:
        """See :meth:`MemoryStore.query`."""
        namespace = None if everywhere else self.namespace
        return await self.adapter.query(
            embedding, text=text, top_k=top_k, namespace=namespace, recursive=True, where=where
        )

    async def clear(self) -> int:
        """See :meth:`MemoryStore.clear`."""
        return await self.adapter.clear()

    async def search(self, text: str) -> list[Record]:
        """See :meth:`MemoryStore.search`."""
        if not text.strip():
            return []
        client = self.adapter.client
        limit = _search_limit(client.description or await client.describe())
        return (await client.recall(text, limit=limit)).records
