"""``A2MRetriever``: a LangChain ``BaseRetriever`` over ``memory/recall``, reading what every
framework wrote to the store."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from a2m import A2MClient, AsyncA2MClient, Record
from a2m._adapter_steps import Flow, drive, drive_async
from a2m.adapter_support import Caller, best_per_key

from ._clients import need_async, need_sync, sort_clients
from ._compat import BaseRetriever
from ._records import Layout, alayout_of, checked_namespace, layout_of, retrieved_document

__all__ = ["A2MRetriever"]


class A2MRetriever(BaseRetriever):
    """Documents from an A2M store, most relevant first: one ``memory/recall`` per query,
    plus, over an authenticated connection where several principals hold one key among
    the results, one ``memory/fetch`` per such key until the caller is known.

    Lexical by default (the server ranks the query text); with ``embeddings`` the query is
    embedded caller-side and ranked against the vectors the records carry (stored verbatim,
    so only vectors of the same model compare). ``k`` (also ``invoke(query, k=...)``) is how
    many at most (a server's ``max_recall_limit`` caps it); ``min_score`` drops weaker
    results (scores are the server's own, §5.3); ``filter`` is an A2M ``where`` (equality
    on record fields, else metadata keys; a list means any of; ``$gte`` and the other
    operators where the server declares them); ``namespaces`` narrows to records whose
    ``metadata.namespace`` is one of them (``None``: every namespace, every framework);
    ``key_prefix`` to keys beneath it.

    Each document carries the record's text as ``page_content``, its id as ``id``, and in
    ``metadata`` the id, key, score and provenance (``source_framework``,
    ``source_agent``, ``namespace``, ``session``, ``owner``, ``role``, ``created_at``)
    plus the record's own metadata under ``metadata``.

    A key several principals hold (keys are unique per owner, §3.6) is one memory: the
    retriever returns the record ``memory/fetch`` would give its caller (its own, else the
    unowned one, else the newest), once, at the rank of the key's best-ranked record."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: A2MClient | AsyncA2MClient | None = None
    async_client: AsyncA2MClient | None = None
    k: int = Field(default=4, ge=1)
    min_score: float | None = None
    filter: dict[str, Any] | None = None
    namespaces: list[str] | None = None
    key_prefix: str | None = None
    embeddings: Embeddings | None = None
    _caller: Caller = PrivateAttr(default_factory=Caller)

    @model_validator(mode="after")
    def _sort(self) -> A2MRetriever:
        self.client, self.async_client = sort_clients(self.client, self.async_client)
        if self.namespaces is not None:
            self.namespaces = [checked_namespace(namespace) for namespace in self.namespaces]
        return self

    def _params(self, query: str, overrides: dict[str, Any], layout: Layout) -> dict[str, Any]:
        unknown = set(overrides) - {"k", "min_score", "filter"}
        if unknown:
            raise TypeError(f"unexpected search options: {', '.join(sorted(unknown))}")
        k = overrides.get("k", self.k)
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive integer, not {k!r}")
        # k is an upper bound: a server returning fewer records a call gives what it allows
        params: dict[str, Any] = {"limit": min(k, layout.max_recall_limit)}
        where = dict(self.filter or {})
        where.update(overrides.get("filter") or {})
        if self.namespaces is not None:
            where["namespace"] = list(self.namespaces)
        if where:
            params["where"] = where
        min_score = overrides.get("min_score", self.min_score)
        if min_score is not None:
            params["min_score"] = min_score
        if self.key_prefix is not None:
            params["key_prefix"] = self.key_prefix
        if self.embeddings is None:
            params["query"] = query
        return params

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        client = need_sync(self.client, self, "invoke")
        params = self._params(query, kwargs, layout_of(client))
        if self.embeddings is not None:
            params["embedding"] = self.embeddings.embed_query(query)
        records = drive(self._once_per_key(client.recall(**params).records), client)
        return [retrieved_document(record) for record in records]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        client = need_async(self.async_client, self, "ainvoke")
        params = self._params(query, kwargs, await alayout_of(client))
        if self.embeddings is not None:
            params["embedding"] = await self.embeddings.aembed_query(query)
        result = await client.recall(**params)
        records = await drive_async(self._once_per_key(result.records), client)
        return [retrieved_document(record) for record in records]

    def _once_per_key(self, records: list[Record]) -> Flow[list[Record]]:
        return best_per_key(self._caller, records, {})
