"""What each REST route does to the store, synchronously (the routes run these on worker
threads).

Nothing here re-implements A2M: writes go through the protocol's own preparation,
``write_records`` and ``forget`` (same events, ids, key replacement and capacity rules),
and ranked queries through recall's ranking. What REST adds is addressing by namespace,
the type and tag filters, TTL and the key-conflict check."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from a2m_server import ranking
from a2m_server.errors import ProtocolError
from a2m_server.protocol.core import now_ms
from a2m_server.protocol.filtering import checked_where
from a2m_server.protocol.paging import decode_page_cursor, encode_page_cursor, listing_digest
from a2m_server.protocol.reads import comparable, rank_candidates
from a2m_server.protocol.writes import forget, prepare_write, write_records
from a2m_server.store import RecordFilter, StoredRecord, StoreReader
from a2m_server.text import query_terms
from a2m_types import (
    DEFAULT_LIST_LIMIT,
    EntryWrite,
    ErrorCode,
    ForgetParams,
    QueryRequest,
    entry_to_record_input,
    record_key,
    split_record_key,
)

from .errors import RestError
from .view import RestView, UnreadableEntry

__all__ = [
    "ListOptions",
    "delete_entries",
    "delete_entry",
    "list_entries",
    "query_entries",
    "read_entry",
    "upsert_entry",
]


@dataclass
class ListOptions:
    """The filters and page of a list or bulk delete."""

    type: str | None = None
    tags: list[str] = field(default_factory=list)
    limit: int = DEFAULT_LIST_LIMIT
    offset: int = 0
    recursive: bool = False
    where: dict[str, Any] | None = None
    """A record-level ``where`` (an addition to the draft): operators where declared."""
    cursor: str | None = None
    """Page by keyset cursor instead of ``offset`` (an addition to the draft)."""


def _check_limit(view: RestView, requested: int) -> None:
    maximum = view.proto.config.limits.max_recall_limit
    if requested > maximum:
        raise RestError.from_protocol(ProtocolError.quota("max_recall_limit", maximum, requested))


def _at_address(
    reader: StoreReader, view: RestView, namespace: str, key: str
) -> list[StoredRecord]:
    """The records the caller can read whose entry is exactly ``(namespace, key)``."""
    address = record_key(namespace, key)
    found = reader.select(
        RecordFilter(where={"key": address}, scope=view.read_scope), embeddings=True
    )
    return [
        r for r in found if split_record_key(address, r.metadata, namespace) == (namespace, key)
    ]


def upsert_entry(view: RestView, namespace: str, write: EntryWrite) -> tuple[bool, dict[str, Any]]:
    """Create or replace the entry at ``(namespace, write.key)``; ``(created, entry)``."""
    proto, ctx = view.proto, view.ctx
    proto.ensure_writable("memory/remember")
    view.require("keys", "addressing an entry by key")
    if write.embedding is not None:
        view.require("embeddings", "an entry's embedding")
    if write.type == "external":
        view.require("external", "an external entry")
    tiers = view.tier_for_kind
    if tiers is not None and write.type != "external" and write.type not in tiers:
        raise RestError("INVALID_TYPE", f"this server has no tier of kind {write.type!r}")
    item = entry_to_record_input(write, namespace, tier_for_kind=tiers)
    try:
        request = prepare_write(
            proto, ctx, item, default_owner=view.owner, default_session=None, index=0
        )
    except ProtocolError as exc:
        field = exc.data.get("field") if isinstance(exc.data, dict) else None
        if exc.code == ErrorCode.INVALID_PARAMS and isinstance(field, str):
            raise _entry_field_error(exc, field) from None
        if exc.code == ErrorCode.QUOTA_EXCEEDED:
            limit = proto.config.limits.max_content_length
            raise RestError(
                "QUOTA_EXCEEDED",
                f"the value is {len(item.content)} characters as text; "
                f"max_content_length is {limit}",
                a2m_code=exc.code,
                data=exc.data,
            ) from None
        raise
    address = request.new.key
    assert address is not None
    with proto.transaction() as writer:
        current = writer.get_by_key(view.owner, address)
        if current is not None:
            held = split_record_key(address, current.metadata, namespace)
            if held != (namespace, write.key):
                raise RestError(
                    "KEY_CONFLICT",
                    f"A2M key {address!r} is held by entry {held!r}; two entries cannot "
                    "share one A2M key",
                    data={"a2m_key": address, "held_by": list(held) if held else None},
                )
        (record_id,) = write_records(proto, ctx, writer, [request])
        stored = writer.get([record_id], embeddings=True)
    if not stored:
        # Written, then evicted at once by a tier that drops what no longer fits.
        raise RestError(
            "QUOTA_EXCEEDED", "the entry was evicted by its tier's capacity as it was written"
        )
    try:
        return current is None, view.entry_wire(stored[0], hint=namespace)
    except UnreadableEntry:
        # Say what happened: the write stood; only its answer could not be made.
        raise RestError(
            "BACKEND_ERROR",
            f"the entry was stored (record {record_id}) but cannot be read back as JSON; "
            "the server log has the details",
            data={"id": record_id, "stored": True},
        ) from None


def _entry_field_error(exc: ProtocolError, field: str) -> RestError:
    """A refused record field named as the entry's: its ``value`` and ``meta`` are kept in
    the record's metadata, which the A2M message names."""
    prefix = "records.0.metadata"
    message = exc.message
    if field.startswith(prefix + ".value"):
        named = "value" + field[len(prefix + ".value") :]
        message = message.replace(prefix + ".value", "value", 1)
    elif field.startswith(prefix + "."):
        named = "meta" + field[len(prefix) :]
        message = message.replace(prefix, "meta", 1)
    elif field == prefix:
        named = "value"
        message = message.replace(prefix, "the entry's value and meta, as JSON,", 1)
    else:
        named = field
    data = {**exc.data, "field": named} if isinstance(exc.data, dict) else None
    return RestError("INVALID_BODY", message, a2m_code=exc.code, data=data)


def read_entry(view: RestView, namespace: str, key: str) -> dict[str, Any]:
    """The entry at ``(namespace, key)``; the caller's own first when owners differ."""
    view.require("keys", "addressing an entry by key")
    with view.proto.store.reading() as reader:
        found = _at_address(reader, view, namespace, key)
    if not found:
        raise RestError("ENTRY_NOT_FOUND", f"no entry with key {key!r} in namespace {namespace!r}")
    chosen = next((r for r in found if r.owner == view.owner), found[0])
    return view.entry_wire(chosen, hint=namespace)


def delete_entry(view: RestView, namespace: str, key: str) -> None:
    """Delete the caller's entry at ``(namespace, key)`` by ``memory/forget``."""
    view.proto.ensure_writable("memory/forget")
    view.require("keys", "addressing an entry by key")
    with view.proto.store.reading() as reader:
        found = _at_address(reader, view, namespace, key)
    mine = [r.id for r in found if view.owner is None or r.owner == view.owner]
    if found and not mine:
        raise RestError(
            "SCOPE_DENIED",
            f"the entry {key!r} in {namespace!r} belongs to another owner",
            a2m_code=int(ErrorCode.SCOPE_DENIED),
        )
    gone = _forget(view, mine)
    if not gone:
        raise RestError("ENTRY_NOT_FOUND", f"no entry with key {key!r} in namespace {namespace!r}")


def delete_entries(view: RestView, namespace: str, options: ListOptions) -> int:
    """Delete every entry of the caller's that the filters select; how many went."""
    view.proto.ensure_writable("memory/forget")
    view.require("keys", "addressing entries by namespace")
    selector = view.selector(
        namespace,
        recursive=options.recursive,
        type_=options.type,
        tags=options.tags,
        scope=view.write_scope,
    ).with_(where=checked_where(view.proto.config, options.where))
    with view.proto.store.reading() as reader:
        ids = [r.id for r in reader.select(selector)]
    return _forget(view, ids)


def _forget(view: RestView, ids: list[str]) -> int:
    if not ids:
        return 0
    params = ForgetParams.model_validate({"ids": ids})
    forgotten: int = forget(view.proto, view.ctx, params)["forgotten"]
    return forgotten


def list_entries(view: RestView, namespace: str, options: ListOptions) -> dict[str, Any]:
    """One page of the namespace, oldest first, with the total and the next offset (or,
    paging by ``cursor`` on a server offering it, the next cursor)."""
    proto = view.proto
    view.require("keys", "addressing entries by namespace")
    _check_limit(view, options.limit)
    selector = view.selector(
        namespace,
        recursive=options.recursive,
        type_=options.type,
        tags=options.tags,
        scope=view.read_scope,
    ).with_(where=checked_where(proto.config, options.where))
    if options.cursor is not None and proto.config.timeline_cursor:
        return _keyset_page(view, namespace, options, selector)
    with proto.store.reading() as reader:
        total = reader.count(selector)
        page = reader.select(selector, limit=options.limit, offset=options.offset, embeddings=True)
    end = options.offset + len(page)
    return {
        "entries": [entry for _, entry in view.readable_entries(page)],
        "total": total,
        "next_offset": end if end < total else None,
    }


def _keyset_page(
    view: RestView, namespace: str, options: ListOptions, selector: RecordFilter
) -> dict[str, Any]:
    store_id = view.proto.store.store_id
    digest = listing_digest(
        namespace=namespace,
        recursive=options.recursive,
        type=options.type,
        tags=options.tags,
        where=options.where,
        scope=selector.scope,
    )
    after = decode_page_cursor(store_id, digest, options.cursor) if options.cursor else None
    with view.proto.store.reading() as reader:
        total = reader.count(selector)
        page = reader.select(selector.with_(after=after), limit=options.limit + 1, embeddings=True)
    following = None
    if len(page) > options.limit:
        page = page[: options.limit]
        following = encode_page_cursor(store_id, digest, page[-1].created_at, page[-1].rowid)
    return {
        "entries": [entry for _, entry in view.readable_entries(page)],
        "total": total,
        "next_offset": None,
        "next_cursor": following,
    }


def query_entries(view: RestView, namespace: str, request: QueryRequest) -> list[dict[str, Any]]:
    """Entries best first: by vector similarity alone for an ``embedding``, as
    ``memory/recall`` ranks for a text ``query`` (with or without one)."""
    proto = view.proto
    view.require("keys", "addressing entries by namespace")
    if request.embedding is not None:
        view.require("embeddings", "a query embedding")
    _check_limit(view, request.top_k)
    selector = view.selector(
        namespace,
        recursive=request.recursive,
        type_=request.type,
        tags=request.tag,
        scope=view.read_scope,
    )
    now = now_ms()
    with proto.store.reading() as reader:
        vector = request.embedding
        if vector is not None and not comparable(reader, vector):
            vector = None
        if request.query is None:
            ranked = _by_vector(view, reader, selector, vector, request.top_k)
        else:
            terms = query_terms(request.query)
            if terms or vector is not None:
                ranked = rank_candidates(proto, reader, selector, terms, vector, request.top_k, now)
            else:
                recent = reader.select(selector, order="created_desc", limit=request.top_k)
                scores = ranking.by_recency([r.created_at for r in recent], now)
                ranked = list(zip(recent, scores, strict=True))
        if request.min_score is not None:
            ranked = [(r, s) for r, s in ranked if s >= request.min_score]
        ranked = ranked[: request.top_k]
        with_vectors = {r.id: r for r in reader.get([r.id for r, _ in ranked], embeddings=True)}
    ranked = [(with_vectors[r.id], s) for r, s in ranked if r.id in with_vectors]
    if ranked and not proto.config.read_only:
        # A query is a recall: it counts as an access, as memory/recall does.
        proto.store.record_access([r.id for r, _ in ranked], now)
    score_of = {r.id: s for r, s in ranked}
    return [
        {"entry": entry, "score": score_of[r.id]}
        for r, entry in view.readable_entries([r for r, _ in ranked])
    ]


def _by_vector(
    view: RestView,
    reader: StoreReader,
    selector: RecordFilter,
    vector: list[float] | None,
    top_k: int,
) -> list[tuple[StoredRecord, float]]:
    """Nearest entries by the store's metric; with ``cosine`` the score is the cosine
    similarity itself, as the draft defines it."""
    if vector is None:
        return []
    hits = reader.nearest(selector, vector, top_k)
    found = {r.id: r for r in reader.get([record_id for record_id, _ in hits])}
    cosine = view.proto.config.metric == "cosine"
    return [
        (found[record_id], round(2.0 * similarity - 1.0, 6) if cosine else similarity)
        for record_id, similarity in hits
        if record_id in found
    ]
