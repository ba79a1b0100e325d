"""``A2MVectorDb``: an Agno vector database whose chunks are A2M entries."""

from __future__ import annotations

from typing import Any

from ._compat import check_agno

check_agno()

from agno.knowledge.document import Document  # noqa: E402
from agno.knowledge.embedder.base import Embedder  # noqa: E402
from agno.vectordb.base import VectorDb  # noqa: E402

from a2m import A2MClient, AsyncA2MClient  # noqa: E402
from a2m.adapter import Entry, ScoredEntry  # noqa: E402
from a2m_types.rest import MAX_TOP_K  # noqa: E402

from . import _documents as docs  # noqa: E402
from ._records import KIND_KEY  # noqa: E402
from ._store import AsyncMemoryStore, MemoryStore  # noqa: E402

__all__ = ["A2MVectorDb"]

SEARCH_TYPES = ("vector", "keyword", "hybrid")


class A2MVectorDb(VectorDb):
    """An Agno ``VectorDb`` for ``Knowledge`` whose chunks are entries of ``namespace``:
    the chunk text is the value (every framework's text recall finds it), the caller's
    embedding is stored verbatim (A2M never re-embeds), and name, ``meta_data``, content
    ids and owner travel in metadata with ``source_framework="agno"``.

    ``client`` serves the sync methods, ``async_client`` the ``async_*`` ones (each raises
    ``TypeError`` when its client is missing, rather than block the loop on a sync one).
    Agno's ``VectorDb`` has no async ``content_hash_exists``, and ``Knowledge.ainsert``
    calls the sync one: give an async knowledge base both clients.
    ``embedder`` embeds chunks that arrive without a vector and every query; without one
    search is by text. ``search_type``: ``"vector"`` (embedding only), ``"keyword"`` (text
    only) or ``"hybrid"`` (both, ranked by the server; the default with an embedder).
    Scores are the server's, for ranking only, so ``similarity_threshold`` is not applied.
    ``include_foreign=True`` lets a search also return what other frameworks wrote, in any
    namespace, as documents whose ``meta_data`` carries their provenance.

    Calls: insert one ``memory/remember`` (plus one read); upsert adds one listing and one
    delete; search one recall (filters the server runs go to it; the owner, and filters only
    checked here, on at most 100 candidates);
    deletes by id, name or content id one call; by metadata one listing and one delete."""

    def __init__(
        self,
        client: A2MClient | None = None,
        *,
        async_client: AsyncA2MClient | None = None,
        namespace: str = "agno/knowledge",
        embedder: Embedder | None = None,
        search_type: str | None = None,
        include_foreign: bool = False,
        name: str | None = None,
        id: str | None = None,
        description: str | None = None,
    ) -> None:
        super().__init__(id=id, name=name, description=description)
        if client is None and async_client is None:
            raise TypeError("A2MVectorDb needs client= (A2MClient), async_client=, or both")
        chosen = search_type or ("hybrid" if embedder is not None else "keyword")
        if chosen not in SEARCH_TYPES:
            raise ValueError(f"search_type must be one of {', '.join(SEARCH_TYPES)}")
        if chosen != "keyword" and embedder is None:
            raise ValueError(f"search_type {chosen!r} needs an embedder")
        self.search_type = chosen
        self.include_foreign = include_foreign
        self.embedder = embedder
        self.client = client
        self.async_client = async_client
        self._sync = MemoryStore(client, namespace, None) if client is not None else None
        self._async = (
            AsyncMemoryStore(async_client, namespace, None) if async_client is not None else None
        )

    @property
    def namespace(self) -> str:
        """Where the chunks live."""
        return (self._sync or self._async).namespace  # type: ignore[union-attr]

    def _store(self) -> MemoryStore:
        if self._sync is None:
            raise TypeError("this A2MVectorDb has no sync client: pass client=A2MClient(…)")
        return self._sync

    def _astore(self) -> AsyncMemoryStore:
        if self._async is None:
            raise TypeError(
                "this A2MVectorDb has no async client: pass async_client=AsyncA2MClient(…)"
            )
        return self._async

    # --- helpers shared by both halves ----------------------------------------------------

    def _embed(self, documents: list[Document]) -> None:
        for document in documents:
            if not document.embedding and self.embedder is not None:
                document.embed(embedder=self.embedder)

    async def _aembed(self, documents: list[Document]) -> None:
        for document in documents:
            if not document.embedding and self.embedder is not None:
                await document.async_embed(embedder=self.embedder)

    def _plan(
        self, query: str, limit: int, filters: Any, user_id: str | None
    ) -> tuple[str | None, int, dict[str, Any] | None]:
        """The text, ``top_k`` and ``where`` of a search's one recall: filters the server
        can run go to it (so the ``limit`` best matching chunks come back); the owner
        check, and filters it cannot run, widen the candidates to ``MAX_TOP_K``."""
        text = query if self.search_type != "vector" and query.strip() else None
        pushed = docs.server_where(filters)
        where = None
        if pushed is not None:
            where = pushed if self.include_foreign else {KIND_KEY: docs.DOCUMENT, **pushed}
        wide = pushed is None or user_id is not None
        return text, MAX_TOP_K if wide else max(1, min(limit, MAX_TOP_K)), where or None

    def _document(self, hit: ScoredEntry, filters: Any, user_id: str | None) -> Document | None:
        entry = hit.entry
        if docs.is_chunk(entry):
            chosen = docs.visible_to(entry, user_id) and docs.passes(entry, filters)
            return docs.to_document(entry, hit.score) if chosen else None
        foreign = docs.foreign_document(entry, hit.score) if self.include_foreign else None
        if foreign is not None and docs.passes_meta(foreign.meta_data, filters):
            return foreign
        return None

    def _found(
        self, hits: list[ScoredEntry], limit: int, filters: Any, user_id: str | None
    ) -> list[Document]:
        found = []
        for hit in hits:
            document = self._document(hit, filters, user_id)
            if document is not None:
                found.append(document)
            if len(found) == limit:
                break
        return found

    @staticmethod
    def _owned(entries: list[Entry], user_id: str | None) -> list[Entry]:
        return [e for e in entries if docs.extras(e).get("user_id") == user_id]

    # --- sync -----------------------------------------------------------------------------

    def create(self) -> None:
        """Nothing to create: an A2M namespace needs no schema."""

    def exists(self) -> bool:
        """Always ``True``, without a call: an A2M namespace is ready before its first
        chunk (``Knowledge`` asks this while it is being built)."""
        return True

    def drop(self) -> None:
        """Delete every chunk of the namespace."""
        self._store().clear()

    def delete(self) -> bool:
        """Delete every chunk of the namespace; ``True``."""
        self.drop()
        return True

    def upsert_available(self) -> bool:
        """Upsert is supported."""
        return True

    def insert(
        self,
        content_hash: str,
        documents: list[Document],
        filters: dict[str, Any] | None = None,
        user_id: str | None = None,
    ) -> None:
        """Store chunks (embedding those without a vector) in one batched write."""
        self._embed(documents)
        writes = [docs.chunk_entry(d, content_hash, filters, user_id) for d in documents]
        self._store().write_many(writes)

    def upsert(
        self,
        content_hash: str,
        documents: list[Document],
        filters: dict[str, Any] | None = None,
        user_id: str | None = None,
    ) -> None:
        """Replace the owner's chunks of ``content_hash`` with ``documents``: the new ones
        are written first, then the old ones they do not replace are deleted."""
        self._embed(documents)
        store = self._store()
        before = self._owned(store.entries({"content_hash": content_hash}, docs.DOCUMENT), user_id)
        writes = [docs.chunk_entry(d, content_hash, filters, user_id) for d in documents]
        store.write_many(writes)
        kept = {write["key"] for write in writes}
        store.forget_keys([e.key for e in before if e.key not in kept])

    def search(
        self, query: str, limit: int = 5, filters: Any | None = None, user_id: str | None = None
    ) -> list[Document]:
        """The ``limit`` chunks best matching ``query`` whose ``meta_data`` passes
        ``filters`` (a dict of equalities or ``agno.filters`` expressions), among the
        owner's and the shared chunks (``user_id=None``: all), best first."""
        text, top_k, where = self._plan(query, limit, filters, user_id)
        vector = None
        if self.search_type != "keyword" and self.embedder is not None:
            vector = self.embedder.get_embedding(query)
        if text is None and not vector:
            return []
        hits = self._store().query(vector or None, text, top_k, self.include_foreign, where)
        return self._found(hits, limit, filters, user_id)

    def name_exists(self, name: str) -> bool:
        """Whether a chunk named ``name`` is stored."""
        return bool(self._store().entries({"name": name}, docs.DOCUMENT))

    def id_exists(self, id: str) -> bool:
        """Whether a chunk with this id (its entry key) is stored."""
        return any(docs.is_chunk(e) for e in self._store().read_many([id]).values())

    def content_hash_exists(self, content_hash: str, user_id: str | None = None) -> bool:
        """Whether the owner (``None``: the shared bucket) holds chunks of ``content_hash``."""
        held = self._store().entries({"content_hash": content_hash}, docs.DOCUMENT)
        return bool(self._owned(held, user_id))

    def delete_by_id(self, id: str) -> bool:
        """Delete the chunk with this id; whether one went."""
        return self._store().forget_keys([id]) > 0

    def delete_by_name(self, name: str) -> bool:
        """Delete every chunk named ``name``; whether any went."""
        return self._store().forget_where({"name": name}, docs.DOCUMENT) > 0

    def delete_by_metadata(self, metadata: dict[str, Any]) -> bool:
        """Delete every chunk whose ``meta_data`` holds all of ``metadata``; whether any went."""
        store = self._store()
        doomed = [e.key for e in store.entries({}, docs.DOCUMENT) if docs.passes(e, metadata)]
        return store.forget_keys(doomed) > 0

    def delete_by_content_id(self, content_id: str, user_id: str | None = None) -> bool:
        """Delete the chunks of ``content_id`` (only ``user_id``'s when given)."""
        where = {"content_id": content_id, "user_id": user_id}
        return self._store().forget_where(where, docs.DOCUMENT) > 0

    def get_supported_search_types(self) -> list[str]:
        """``vector``, ``keyword`` and ``hybrid``."""
        return list(SEARCH_TYPES)

    # --- async ----------------------------------------------------------------------------

    async def async_create(self) -> None:
        """See :meth:`create`."""

    async def async_exists(self) -> bool:
        """See :meth:`exists`."""
        return True

    async def async_drop(self) -> None:
        """See :meth:`drop`."""
        await self._astore().clear()

    async def async_insert(
        self,
        content_hash: str,
        documents: list[Document],
        filters: dict[str, Any] | None = None,
        user_id: str | None = None,
    ) -> None:
        """See :meth:`insert`."""
        await self._aembed(documents)
        writes = [docs.chunk_entry(d, content_hash, filters, user_id) for d in documents]
        await self._astore().write_many(writes)

    async def async_upsert(
        self,
        content_hash: str,
        documents: list[Document],
        filters: dict[str, Any] | None = None,
        user_id: str | None = None,
    ) -> None:
        """See :meth:`upsert`."""
        await self._aembed(documents)
        store = self._astore()
        held = await store.entries({"content_hash": content_hash}, docs.DOCUMENT)
        before = self._owned(held, user_id)
        writes = [docs.chunk_entry(d, content_hash, filters, user_id) for d in documents]
        await store.write_many(writes)
        kept = {write["key"] for write in writes}
        await store.forget_keys([e.key for e in before if e.key not in kept])

    async def async_search(
        self, query: str, limit: int = 5, filters: Any | None = None, user_id: str | None = None
    ) -> list[Document]:
        """See :meth:`search`."""
        text, top_k, where = self._plan(query, limit, filters, user_id)
        vector = None
        if self.search_type != "keyword" and self.embedder is not None:
            vector = await self.embedder.async_get_embedding(query)
        if text is None and not vector:
            return []
        hits = await self._astore().query(vector or None, text, top_k, self.include_foreign, where)
        return self._found(hits, limit, filters, user_id)

    async def async_name_exists(self, name: str) -> bool:  # type: ignore[override]
        """See :meth:`name_exists`."""
        return bool(await self._astore().entries({"name": name}, docs.DOCUMENT))
