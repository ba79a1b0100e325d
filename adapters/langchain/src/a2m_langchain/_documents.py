"""How vector store documents become A2M entries and come back as documents, and how the
nearest of them are picked: by score, or by maximal marginal relevance."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.documents import Document

from a2m import Record
from a2m.adapter import Entry
from a2m_types.rest import InvalidKey, validate_key

from . import _filters
from ._records import DOCUMENT_METADATA_FIELD, Layout, new_id


def checked_id(id: Any) -> str:
    """``id`` if it can be a document's id (a non-empty string)."""
    if not isinstance(id, str) or not id:
        raise ValueError(f"document ids must be non-empty strings, not {id!r}")
    return id


def addressable(ids: Sequence[Any]) -> list[str]:
    """The ids (each checked as :func:`checked_id` checks it) that can be A2M entry keys:
    any other names no stored document, so a lookup or delete passes it over."""
    kept = []
    for id in ids:
        try:
            kept.append(validate_key(checked_id(id)))
        except InvalidKey:
            continue
    return kept


def entries_for(
    layout: Layout,
    texts: Sequence[str],
    vectors: Sequence[Sequence[float]],
    metadatas: Sequence[dict[str, Any] | None] | None,
    ids: Sequence[str | None] | None,
) -> tuple[list[str], list[dict[str, Any]]]:
    """(the ids, the semantic entries) of documents about to be written; a given id is
    kept, a missing one made. Refuses a batch that cannot be written, before anything is."""
    layout.require("embeddings", "A2MVectorStore")
    if metadatas is not None and len(metadatas) != len(texts):
        raise ValueError(f"{len(texts)} texts but {len(metadatas)} metadatas")
    if ids is not None and len(ids) != len(texts):
        raise ValueError(f"{len(texts)} texts but {len(ids)} ids")
    given = list(ids) if ids is not None else [None] * len(texts)
    chosen = [new_id() if id is None else checked_id(id) for id in given]
    entries = []
    for index, text in enumerate(texts):
        meta = dict(metadatas[index] or {}) if metadatas is not None else {}
        entries.append(
            {
                "key": chosen[index],
                "type": "semantic",
                "value": text,
                "embedding": [float(x) for x in vectors[index]],
                "meta": {DOCUMENT_METADATA_FIELD: meta},
            }
        )
    return chosen, entries


def entry_document(entry: Entry) -> Document:
    """The document an entry of the store's namespace is."""
    stated = (entry.meta.model_extra or {}).get(DOCUMENT_METADATA_FIELD)
    return Document(
        id=entry.key,
        page_content=entry.value if isinstance(entry.value, str) else str(entry.value),
        metadata=dict(stated) if isinstance(stated, dict) else {},
    )


def record_document(record: Record, namespace: str) -> Document:
    """The document a recalled record of ``namespace`` is."""
    prefix = namespace + "/"
    key = record.key or ""
    stated = (record.metadata or {}).get(DOCUMENT_METADATA_FIELD)
    return Document(
        id=key[len(prefix) :] if key.startswith(prefix) else key or record.id,
        page_content=record.content,
        metadata=dict(stated) if isinstance(stated, dict) else {},
    )


def scored_documents(
    records: Iterable[Record], namespace: str, k: int, filter: _filters.DocumentFilter | None
) -> list[tuple[Document, float]]:
    """The first ``k`` recalled documents passing ``filter``, with their scores."""
    found: list[tuple[Document, float]] = []
    for record in records:
        document = record_document(record, namespace)
        if _filters.matches(filter, document):
            found.append((document, record.score or 0.0))
            if len(found) == k:
                break
    return found


def diverse_documents(
    records: Sequence[Record],
    namespace: str,
    vector: Sequence[float],
    k: int,
    lambda_mult: float,
    filter: _filters.DocumentFilter | None,
    fetch_k: int,
) -> list[Document]:
    """``k`` of the ``fetch_k`` nearest documents passing ``filter``, by maximal marginal
    relevance around ``vector``."""
    candidates: list[tuple[list[float], Document]] = [
        (record.embedding, document)
        for record in records
        if record.embedding is not None
        and _filters.matches(filter, document := record_document(record, namespace))
    ][:fetch_k]
    chosen = maximal_marginal_relevance(vector, [v for v, _ in candidates], k, lambda_mult)
    return [candidates[index][1] for index in chosen]


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norms if norms else 0.0


def maximal_marginal_relevance(
    query: Sequence[float], vectors: Sequence[Sequence[float]], k: int, lambda_mult: float
) -> list[int]:
    """The indices of ``k`` of ``vectors`` near ``query`` and far from each other, picked as
    ``langchain_core.vectorstores.utils.maximal_marginal_relevance`` picks them (which
    needs numpy; a few thousand products do not)."""
    if not vectors or k <= 0:
        return []
    to_query = [_cosine(query, vector) for vector in vectors]
    chosen = [max(range(len(vectors)), key=to_query.__getitem__)]
    nearest_chosen = [_cosine(vector, vectors[chosen[0]]) for vector in vectors]
    while len(chosen) < min(k, len(vectors)):
        best, pick = -math.inf, -1
        for index, relevance in enumerate(to_query):
            if index in chosen:
                continue
            score = lambda_mult * relevance - (1 - lambda_mult) * nearest_chosen[index]
            if score > best:
                best, pick = score, index
        chosen.append(pick)
        nearest_chosen = [
            max(near, _cosine(vector, vectors[pick]))
            for near, vector in zip(nearest_chosen, vectors, strict=True)
        ]
    return chosen
