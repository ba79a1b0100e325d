"""``memory/summarize`` (§4.15): distil selected records into a stored summary record with
the extractive summarizer. Sources are never deleted; declining is not an error."""

from __future__ import annotations

from typing import Any

from a2m_server.store import NewRecord, RecordFilter, StoredRecord
from a2m_server.summarizer import summarize as extract_summary
from a2m_server.text import query_terms
from a2m_types import SummarizeParams

from .context import CallContext
from .core import Protocol
from .filtering import checked_where
from .wire import record_to_wire
from .writes import (
    WriteRequest,
    embed_missing,
    refuse_reserved_key,
    write_records,
    written_without_vectors,
)

__all__ = ["summarize"]


def _summary_tier(proto: Protocol, ctx: CallContext, into: str | None) -> str | None:
    if "tiers" not in ctx.capabilities:
        return None
    if into is not None:
        return proto.tier(ctx, into, "into").name
    # Distilling what happened into what is true: the motivating case lands in semantic.
    for tier in proto.config.tiers:
        if tier.kind == "semantic":
            return tier.name
    return proto.config.home_tier


def summarize(proto: Protocol, ctx: CallContext, params: SummarizeParams) -> dict[str, Any]:
    """§4.15: read the selected records, write one summary record (or decline)."""
    proto.ensure_writable("memory/summarize")
    proto.require_selector(
        "memory/summarize", params, "summarizing a whole store must not be that casual"
    )
    if "keys" in ctx.capabilities:
        refuse_reserved_key(proto, params.key, "key")
    if params.tier is not None:
        proto.tier(ctx, params.tier)
    into = _summary_tier(proto, ctx, params.into)
    owner = proto.acting_owner(ctx, params.owner)
    cap = proto.config.summarize_limit
    limit = min(params.limit, cap) if params.limit else cap
    selector = RecordFilter(
        ids=params.ids,
        tier=params.tier,
        where=checked_where(proto.config, params.where),
        key_prefix=params.key_prefix,
        scope=proto.read_scope(owner),
    )
    sources: list[StoredRecord]
    with proto.store.reading() as reader:
        terms = query_terms(params.query) if params.query else []
        if terms:
            ranked = [hit.id for hit in reader.lexical(selector, terms, limit)]
            found = {r.id: r for r in reader.get(ranked)}
            sources = sorted(
                (found[i] for i in ranked if i in found), key=lambda r: (r.created_at, r.rowid)
            )
        elif params.query:
            sources = []
        else:
            sources = reader.select(selector, order="created_desc", limit=limit)
            sources.reverse()
    # Never longer than a record this server accepts (a sentence of a source fits: its
    # source did).
    longest = min(1200, proto.config.limits.max_content_length)
    text = extract_summary([(r.id, r.content) for r in sources], max_chars=longest)
    if text is None:
        return {"records": [], "read": len(sources), "written": 0}
    caps = ctx.capabilities
    request = WriteRequest(
        new=NewRecord(
            id="",
            content=text,
            created_at=0,
            role="memory",
            metadata={"summary_of": [r.id for r in sources], "summarizer": "extractive"},
            tier=into,
            owner=owner,
            key=params.key if "keys" in caps else None,
        ),
        write_id=None,
        explicit_tier=params.into is not None,
    )
    unembedded = embed_missing(proto, [request])
    with proto.transaction() as writer:
        (record_id,) = write_records(proto, ctx, writer, [request])
        (record,) = writer.get([record_id])
    if unembedded:
        written_without_vectors(proto)
    return {
        "records": [record_to_wire(record, caps)],
        "read": len(sources),
        "written": 1,
    }
