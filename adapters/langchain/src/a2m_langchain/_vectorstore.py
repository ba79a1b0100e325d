"""``A2MVectorStore``: a LangChain ``VectorStore`` whose documents are A2M semantic records
addressed by key, carrying the caller's vectors verbatim."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from typing_extensions import Self

from a2m import A2MClient, AsyncA2MClient, Record
from a2m._adapter_owners import best_per_key
from a2m._adapter_steps import drive, drive_async
from a2m.adapter import A2MAdapter, AsyncA2MAdapter

from . import _filters
from ._clients import need_async, need_sync, sort_clients
from ._compat import VectorStore
from ._documents import (
    addressable,
    diverse_documents,
    entries_for,
    entry_document,
    scored_documents,
)
from ._records import (
    DOCUMENT_METADATA_FIELD,
    SOURCE_FRAMEWORK,
    Layout,
    alayout_of,
    checked_namespace,
    layout_of,
)

__all__ = ["A2MVectorStore"]

DEFAULT_DOCUMENT_NAMESPACE = "langchain/documents"


class A2MVectorStore(VectorStore):
    """Documents in an A2M store: one semantic record per document, at the key
    ``{namespace}/{id}`` (so an id given twice replaces, never duplicates), the text as
    ``content``, the embedding verbatim, and the document's metadata exactly as given in
    ``metadata.document_metadata`` beside the provenance every adapter writes.

    Writes, reads by id and deletes by id go through the four-method adapter contract
    (:class:`a2m.adapter.A2MAdapter`), so the documents are entries every other adapter
    reads. Round trips: ``add_texts`` / ``add_documents`` embed once, then one
    ``memory/remember`` per ``max_records_per_call`` documents (all or nothing, as a
    database's one transaction: a refused later call has the earlier ones undone), plus
    one ``memory/timeline`` checking no other namespace holds the keys and one reading the
    entries back; ``similarity_search*`` and ``max_marginal_relevance_search`` one
    ``memory/recall``; ``get_by_ids`` one ``memory/timeline``; ``delete(ids)`` one
    ``memory/timeline`` and one ``memory/forget``; ``delete()`` one ``memory/forget`` (each
    timeline covers up to ``max_recall_limit`` keys). ``filter`` is a callable on the
    document, or a mapping of metadata field to value or ``$``-operators: a mapping of
    comparisons the server declares runs in the server's recall; anything else is applied
    here to the ``max_recall_limit`` nearest candidates, so a very selective filter on a
    large store may then find fewer than ``k``. Reads and deletes see only this store's ``namespace``; to search across
    frameworks use :class:`~a2m_langchain.A2MRetriever`.

    ``client`` is an :class:`~a2m.A2MClient` (sync methods) or an
    :class:`~a2m.AsyncA2MClient` (the ``a``-prefixed ones); pass both to use both. The
    store never closes them. A store fixes the width of its vectors with the first one it
    is given: every writer sharing the store must embed with the same model."""

    def __init__(
        self,
        embedding: Embeddings,
        client: A2MClient | AsyncA2MClient | None = None,
        *,
        async_client: AsyncA2MClient | None = None,
        namespace: str = DEFAULT_DOCUMENT_NAMESPACE,
        agent: str | None = None,
    ) -> None:
        self.embedding = embedding
        self.client, self.async_client = sort_clients(client, async_client)
        self._namespace = checked_namespace(namespace)
        options = {"source_framework": SOURCE_FRAMEWORK, "agent": agent}
        self._adapter = (
            None if self.client is None else A2MAdapter(self.client, namespace, **options)
        )
        self._async_adapter = (
            None
            if self.async_client is None
            else AsyncA2MAdapter(self.async_client, namespace, **options)
        )

    @property
    def embeddings(self) -> Embeddings:
        """The embeddings that vectorize documents and queries."""
        return self.embedding

    @property
    def namespace(self) -> str:
        """Where this store's documents live."""
        return self._namespace

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        # A2M scores are the server's own, higher is better, in [0, 1] where it follows §5.3.
        return lambda score: score

    # --- records -----------------------------------------------------------------------------

    def _where(self, **extra: Any) -> dict[str, Any]:
        # The namespace is the store: whoever wrote a semantic entry there shares it.
        return {"namespace": self.namespace, "type": "semantic", **extra}

    def _recall_params(
        self,
        layout: Layout,
        vector: Sequence[float],
        limit: int,
        filter: _filters.DocumentFilter | None,
        operators: frozenset[str],
        vectors: bool,
    ) -> dict[str, Any]:
        if limit < 1:
            raise ValueError(f"k must be a positive integer, not {limit}")
        _filters.check(filter)
        where = self._where()
        pushed = _filters.as_where(filter, operators, DOCUMENT_METADATA_FIELD)
        if pushed is not None:
            where.update(pushed)
        # a filter the server cannot run is applied here, on the nearest candidates
        wanted = limit if filter is None or pushed is not None else layout.max_recall_limit
        params: dict[str, Any] = {
            "embedding": [float(x) for x in vector],
            "key_prefix": self.namespace,
            "where": where,
            "limit": min(wanted, layout.max_recall_limit),
        }
        if vectors:
            params["embeddings"] = True
        return params

    def _scored(
        self, records: Iterable[Record], k: int, filter: _filters.DocumentFilter | None
    ) -> list[tuple[Document, float]]:
        return scored_documents(records, self.namespace, k, filter)

    def _mmr(
        self,
        records: Sequence[Record],
        vector: Sequence[float],
        k: int,
        lambda_mult: float,
        filter: _filters.DocumentFilter | None,
        fetch_k: int,
    ) -> list[Document]:
        return diverse_documents(records, self.namespace, vector, k, lambda_mult, filter, fetch_k)

    def _own(self, records: Sequence[Record], layout: Layout) -> Sequence[Record]:
        # Several principals may each hold a document's id (spec §3.6): the caller's own,
        # once per id, as the adapter contract reads it.
        if self._adapter is None or "scopes" not in layout.capabilities:
            return records
        flow = best_per_key(self._adapter.scope.caller, records, _vectors(layout))
        return drive(flow, self._adapter.client)

    async def _aown(self, records: Sequence[Record], layout: Layout) -> Sequence[Record]:
        if self._async_adapter is None or "scopes" not in layout.capabilities:
            return records
        flow = best_per_key(self._async_adapter.scope.caller, records, _vectors(layout))
        return await drive_async(flow, self._async_adapter.client)

    # --- sync ----------------------------------------------------------------------------

    def _sync(self, method: str) -> tuple[A2MClient, Layout]:
        client = need_sync(self.client, self, method)
        return client, layout_of(client)

    def _sync_adapter(self, method: str) -> tuple[A2MAdapter, Layout]:
        _, layout = self._sync(method)
        assert self._adapter is not None  # built with the sync client
        return self._adapter, layout

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Embed and write ``texts``; returns their ids (given ones kept, others new)."""
        texts = list(texts)
        if not texts:
            return []
        adapter, layout = self._sync_adapter("add_texts")
        vectors = self.embedding.embed_documents(texts)
        chosen, entries = entries_for(layout, texts, vectors, metadatas, ids)
        adapter.write_many(entries)
        return chosen

    def similarity_search(
        self, query: str, k: int = 4, filter: _filters.DocumentFilter | None = None, **kwargs: Any
    ) -> list[Document]:
        """The ``k`` documents nearest ``query``."""
        return [document for document, _ in self.similarity_search_with_score(query, k, filter)]

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: _filters.DocumentFilter | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The ``k`` documents nearest ``query`` with the server's score (higher is nearer)."""
        vector = self.embedding.embed_query(query)
        return self.similarity_search_by_vector_with_score(vector, k, filter)

    def similarity_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        filter: _filters.DocumentFilter | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """The ``k`` documents nearest ``embedding``."""
        hits = self.similarity_search_by_vector_with_score(embedding, k, filter)
        return [document for document, _ in hits]

    def similarity_search_by_vector_with_score(
        self,
        embedding: Sequence[float],
        k: int = 4,
        filter: _filters.DocumentFilter | None = None,
    ) -> list[tuple[Document, float]]:
        """The ``k`` documents nearest ``embedding``, with scores: one recall (none for
        ``k`` 0, which asks for nothing, as InMemoryVectorStore answers it)."""
        if k == 0:
            return []
        client, layout = self._sync("similarity_search")
        operators = client.filter_operators() if filter is not None else frozenset()
        params = self._recall_params(layout, embedding, k, filter, operators, vectors=False)
        return self._scored(self._own(client.recall(**params).records, layout), k, filter)

    def max_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: _filters.DocumentFilter | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """``k`` documents near ``query`` and unlike each other, from the ``fetch_k``
        nearest."""
        vector = self.embedding.embed_query(query)
        return self.max_marginal_relevance_search_by_vector(vector, k, fetch_k, lambda_mult, filter)

    def max_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: _filters.DocumentFilter | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """Maximal marginal relevance around ``embedding``: one recall with vectors (none
        for ``k`` or ``fetch_k`` 0)."""
        if k == 0 or fetch_k == 0:
            return []
        client, layout = self._sync("max_marginal_relevance_search")
        operators = client.filter_operators() if filter is not None else frozenset()
        params = self._recall_params(layout, embedding, fetch_k, filter, operators, vectors=True)
        records = self._own(client.recall(**params).records, layout)
        return self._mmr(records, embedding, k, lambda_mult, filter, fetch_k)

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The documents with these ids, in their order, an id given twice found twice (as
        InMemoryVectorStore answers); missing ids (and ids no A2M key can be, which name
        no document) are left out."""
        if not ids:
            return []
        adapter, _ = self._sync_adapter("get_by_ids")
        found = adapter.read_many(addressable(list(dict.fromkeys(ids))))
        return [entry_document(found[id]) for id in ids if id in found]

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete these documents (``None``: every document of this namespace); an id no
        A2M key can be names no document, and is passed over."""
        if ids is None:
            client, _ = self._sync("delete")
            client.forget(where=self._where(), key_prefix=self.namespace)
            return True
        adapter, _ = self._sync_adapter("delete")
        adapter.delete_many(addressable(ids))
        return True

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        client: A2MClient | AsyncA2MClient | None = None,
        async_client: AsyncA2MClient | None = None,
        namespace: str = DEFAULT_DOCUMENT_NAMESPACE,
        agent: str | None = None,
        **kwargs: Any,
    ) -> Self:
        """A store on ``client`` holding ``texts``."""
        store = cls(embedding, client, async_client=async_client, namespace=namespace, agent=agent)
        store.add_texts(texts, metadatas, ids=ids)
        return store

    # --- async ----------------------------------------------------------------------------

    async def _async(self, method: str) -> tuple[AsyncA2MClient, Layout]:
        client = need_async(self.async_client, self, method)
        return client, await alayout_of(client)

    async def _aadapter(self, method: str) -> tuple[AsyncA2MAdapter, Layout]:
        _, layout = await self._async(method)
        assert self._async_adapter is not None  # built with the async client
        return self._async_adapter, layout

    async def aadd_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """The async twin of :meth:`add_texts`."""
        texts = list(texts)
        if not texts:
            return []
        adapter, layout = await self._aadapter("aadd_texts")
        vectors = await self.embedding.aembed_documents(texts)
        chosen, entries = entries_for(layout, texts, vectors, metadatas, ids)
        await adapter.write_many(entries)
        return chosen

    async def asimilarity_search(
        self, query: str, k: int = 4, filter: _filters.DocumentFilter | None = None, **kwargs: Any
    ) -> list[Document]:
        """The async twin of :meth:`similarity_search`."""
        hits = await self.asimilarity_search_with_score(query, k, filter)
        return [document for document, _ in hits]

    async def asimilarity_search_with_score(
        self, query: str, k: int = 4, filter: _filters.DocumentFilter | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The async twin of :meth:`similarity_search_with_score`."""
        vector = await self.embedding.aembed_query(query)
        return await self.asimilarity_search_by_vector_with_score(vector, k, filter)

    async def asimilarity_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        filter: _filters.DocumentFilter | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """The async twin of :meth:`similarity_search_by_vector`."""
        hits = await self.asimilarity_search_by_vector_with_score(embedding, k, filter)
        return [document for document, _ in hits]

    async def asimilarity_search_by_vector_with_score(
        self,
        embedding: Sequence[float],
        k: int = 4,
        filter: _filters.DocumentFilter | None = None,
    ) -> list[tuple[Document, float]]:
        """The async twin of :meth:`similarity_search_by_vector_with_score`."""
        if k == 0:
            return []
        client, layout = await self._async("asimilarity_search")
        operators = await client.filter_operators() if filter is not None else frozenset()
        params = self._recall_params(layout, embedding, k, filter, operators, vectors=False)
        found = (await client.recall(**params)).records
        return self._scored(await self._aown(found, layout), k, filter)

    async def amax_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: _filters.DocumentFilter | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """The async twin of :meth:`max_marginal_relevance_search`."""
        vector = await self.embedding.aembed_query(query)
        return await self.amax_marginal_relevance_search_by_vector(
            vector, k, fetch_k, lambda_mult, filter
        )

    async def amax_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: _filters.DocumentFilter | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """The async twin of :meth:`max_marginal_relevance_search_by_vector`."""
        if k == 0 or fetch_k == 0:
            return []
        client, layout = await self._async("amax_marginal_relevance_search")
        operators = await client.filter_operators() if filter is not None else frozenset()
        params = self._recall_params(layout, embedding, fetch_k, filter, operators, vectors=True)
        records = await self._aown((await client.recall(**params)).records, layout)
        return self._mmr(records, embedding, k, lambda_mult, filter, fetch_k)

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The async twin of :meth:`get_by_ids`."""
        if not ids:
            return []
        adapter, _ = await self._aadapter("aget_by_ids")
        found = await adapter.read_many(addressable(list(dict.fromkeys(ids))))
        return [entry_document(found[id]) for id in ids if id in found]

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """The async twin of :meth:`delete`."""
        if ids is None:
            client, _ = await self._async("adelete")
            await client.forget(where=self._where(), key_prefix=self.namespace)
            return True
        adapter, _ = await self._aadapter("adelete")
        await adapter.delete_many(addressable(ids))
        return True

    @classmethod
    async def afrom_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        client: A2MClient | AsyncA2MClient | None = None,
        async_client: AsyncA2MClient | None = None,
        namespace: str = DEFAULT_DOCUMENT_NAMESPACE,
        agent: str | None = None,
        **kwargs: Any,
    ) -> Self:
        """The async twin of :meth:`from_texts`."""
        store = cls(embedding, client, async_client=async_client, namespace=namespace, agent=agent)
        await store.aadd_texts(texts, metadatas, ids=ids)
        return store


def _vectors(layout: Layout) -> dict[str, Any]:
    return {"embeddings": True} if layout.supports("embeddings") else {}
