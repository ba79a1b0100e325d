"""How an Agno ``Document`` chunk is an A2M entry, and Agno's knowledge filters (a dict
of equalities, or ``agno.filters`` expressions) applied to the chunks read back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from hashlib import md5
from typing import Any

from agno.filters import FilterExpr
from agno.knowledge.document import Document

from a2m.adapter import Entry

from ._records import KIND_KEY

DOCUMENT = "document"


def chunk_key(document: Document, content_hash: str, user_id: str | None) -> str:
    """The entry key of a chunk: stable for (document id or text, content hash, owner), so
    re-ingesting the same content replaces its chunks instead of adding copies (Agno's
    LanceDb derives its ids the same way)."""
    base = document.id or md5(document.content.encode()).hexdigest()
    key = md5(f"{base}_{content_hash}".encode()).hexdigest()
    return key if user_id is None else md5(f"{key}_{user_id}".encode()).hexdigest()


def chunk_entry(
    document: Document,
    content_hash: str,
    filters: Mapping[str, Any] | None,
    user_id: str | None,
) -> dict[str, Any]:
    """The entry write holding a chunk: its text as the value, the caller's embedding
    verbatim, name/metadata/ids/owner in metadata. ``filters`` are stamped into the chunk's
    ``meta_data`` (as every Agno vector db does)."""
    meta_data = {**(document.meta_data or {}), **(filters or {})}
    document.meta_data = meta_data
    meta: dict[str, Any] = {
        KIND_KEY: DOCUMENT,
        "content_hash": content_hash,
        "meta_data": meta_data,
        "name": document.name,
        "document_id": document.id,
        "content_id": document.content_id,
        "content_origin": document.content_origin,
        "user_id": user_id,
    }
    embedding = document.embedding if document.embedding else None
    return {
        "key": chunk_key(document, content_hash, user_id),
        "type": "semantic",
        "value": document.content,
        "embedding": embedding,
        "meta": {k: v for k, v in meta.items() if v is not None},
    }


def is_chunk(entry: Entry) -> bool:
    """Whether ``entry`` is a knowledge chunk this adapter wrote."""
    return (entry.meta.model_extra or {}).get(KIND_KEY) == DOCUMENT


def extras(entry: Entry) -> dict[str, Any]:
    """The chunk's metadata fields."""
    return dict(entry.meta.model_extra or {})


def to_document(entry: Entry, score: float | None = None) -> Document:
    """The ``Document`` a chunk entry is; its ``id`` is the entry key (what
    ``delete_by_id`` and ``id_exists`` take)."""
    extra = extras(entry)
    meta_data = extra.get("meta_data")
    return Document(
        content=entry.value if isinstance(entry.value, str) else str(entry.value),
        id=entry.key,
        name=extra.get("name"),
        meta_data=dict(meta_data) if isinstance(meta_data, dict) else {},
        embedding=list(entry.embedding) if entry.embedding is not None else None,
        content_id=extra.get("content_id"),
        content_origin=extra.get("content_origin"),
        reranking_score=score,
    )


def foreign_document(entry: Entry, score: float | None = None) -> Document | None:
    """The ``Document`` an entry another framework wrote reads as: its text, its key as the
    name, its metadata (provenance included: ``source_framework``, ``source_agent``,
    ``namespace``, ``tags``) as ``meta_data``. ``None`` for this adapter's own memories."""
    extra = extras(entry)
    if KIND_KEY in extra:
        return None
    meta_data: dict[str, Any] = {
        **extra,
        "source_framework": entry.meta.source_framework,
        "source_agent": entry.meta.source_agent,
        "namespace": entry.namespace,
        "tags": list(entry.meta.tags),
    }
    return Document(
        content=entry.value if isinstance(entry.value, str) else str(entry.value),
        id=entry.id,
        name=entry.key,
        meta_data=meta_data,
        embedding=list(entry.embedding) if entry.embedding is not None else None,
        reranking_score=score,
    )


def visible_to(entry: Entry, user_id: str | None) -> bool:
    """A search for ``user_id`` sees that owner's chunks and the shared ones; ``None``
    sees every chunk."""
    owner = extras(entry).get("user_id")
    return user_id is None or owner is None or owner == user_id


def _compare(held: Any, op: str, wanted: Any) -> bool:
    try:
        if op == "GT":
            return bool(held > wanted)
        if op == "GTE":
            return bool(held >= wanted)
        if op == "LT":
            return bool(held < wanted)
        return bool(held <= wanted)
    except TypeError:  # a missing or differently typed value never satisfies an order
        return False


def _holds(expression: Mapping[str, Any], meta_data: Mapping[str, Any]) -> bool:
    op = expression.get("op")
    if op == "AND":
        return all(_holds(c, meta_data) for c in expression["conditions"])
    if op == "OR":
        return any(_holds(c, meta_data) for c in expression["conditions"])
    if op == "NOT":
        return not _holds(expression["condition"], meta_data)
    key = expression.get("key")
    present = key in meta_data
    held = meta_data.get(key) if isinstance(key, str) else None
    if op == "EQ":
        return present and held == expression.get("value")
    if op == "NEQ":
        return not present or held != expression.get("value")
    if op == "IN":
        return present and held in (expression.get("values") or [])
    if op in ("GT", "GTE", "LT", "LTE"):
        return present and _compare(held, op, expression.get("value"))
    if op == "CONTAINS":
        return present and isinstance(held, str) and str(expression.get("value")) in held
    if op == "STARTSWITH":
        return present and isinstance(held, str) and held.startswith(str(expression.get("value")))
    raise ValueError(f"unsupported knowledge filter operator {op!r}")


def passes(entry: Entry, filters: Any) -> bool:
    """Whether a chunk's ``meta_data`` satisfies ``filters`` (see :func:`passes_meta`)."""
    meta_data = extras(entry).get("meta_data")
    return passes_meta(meta_data if isinstance(meta_data, dict) else {}, filters)


def passes_meta(held: Mapping[str, Any], filters: Any) -> bool:
    """Whether ``meta_data`` satisfies ``filters``: a dict (every key equal), a
    ``FilterExpr``, or a list of them (all must hold); ``None`` passes everything."""
    if not filters:
        return True
    if isinstance(filters, Mapping):
        return all(key in held and held[key] == value for key, value in filters.items())
    expressions: Sequence[Any] = filters if isinstance(filters, list) else [filters]
    for expression in expressions:
        if not isinstance(expression, FilterExpr):
            raise TypeError(
                f"knowledge filters are a dict or agno.filters expressions, not {expression!r}"
            )
        if not _holds(expression.to_dict(), held):
            return False
    return True


_ORDERING = {"GT": "$gt", "GTE": "$gte", "LT": "$lt", "LTE": "$lte", "NEQ": "$ne", "EQ": "$eq"}


def _scalar(value: Any) -> bool:
    return value is None or (isinstance(value, (str, int, float)) and not isinstance(value, bool))


def _condition(expression: Mapping[str, Any], where: dict[str, dict[str, Any]]) -> bool:
    op, key = expression.get("op"), expression.get("key")
    if op == "AND":
        return all(_condition(c, where) for c in expression["conditions"])
    if not isinstance(key, str) or not key or "." in key:
        return False
    if op in _ORDERING and _scalar(expression.get("value")):
        operator, operand = _ORDERING[str(op)], expression.get("value")
    elif op == "IN" and expression.get("values") and all(map(_scalar, expression["values"])):
        operator, operand = "$in", list(expression["values"])
    else:
        return False  # OR, NOT, CONTAINS, STARTSWITH: only checked here
    held = where.setdefault(f"metadata.meta_data.{key}", {})
    if operator in held:
        return False
    held[operator] = operand
    return True


def server_where(filters: Any) -> dict[str, Any] | None:
    """``filters`` as a ``where`` the server runs on chunk metadata, or ``None`` when some
    part has no A2M operator (then the candidates are checked here instead)."""
    if not filters:
        return {}
    if isinstance(filters, Mapping):
        expressions = [{"op": "EQ", "key": k, "value": v} for k, v in filters.items()]
    elif isinstance(filters, (list, FilterExpr)):
        listed = filters if isinstance(filters, list) else [filters]
        if not all(isinstance(e, FilterExpr) for e in listed):
            return None
        expressions = [e.to_dict() for e in listed]
    else:
        return None
    where: dict[str, dict[str, Any]] = {}
    if not all(_condition(expression, where) for expression in expressions):
        return None
    return dict(where)
