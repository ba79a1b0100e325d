"""The observation reads: the listing (newest or heaviest first), recall ranked by relevance
scaled by effective weight (a granted project's discounted), and the audit log."""

from __future__ import annotations

from typing import Any

from a2m_server import ranking
from a2m_server.errors import ProtocolError
from a2m_server.protocol.context import CallContext
from a2m_server.protocol.core import Protocol, now_ms
from a2m_server.protocol.reads import comparable, ranked_candidates
from a2m_server.protocol.wire import timestamp
from a2m_server.store import RecordFilter, StoredRecord, StoreReader
from a2m_server.store._audit import AuditQuery, AuditRow
from a2m_server.text import query_terms
from a2m_types import parse_timestamp, to_epoch_ms
from a2m_types.observations import (
    ObservationAuditParams,
    ObservationListParams,
    ObservationRecallParams,
)

from .model import (
    Tenant,
    checked_agent,
    project_of,
    readable_filter,
    tenant_of,
    to_observation,
    weight_factor,
)

__all__ = ["audit", "audit_to_wire", "list_observations", "recall_observations"]

_MAX_PAGE = 1000
"""The most audit entries one page holds."""


def _page_limit(proto: Protocol, limit: int | None) -> int:
    return proto.result_limit(limit, 50)


def list_observations(
    proto: Protocol, ctx: CallContext, params: ObservationListParams
) -> dict[str, Any]:
    """A page of the tenant's observations (and granted ones), newest or heaviest first."""
    tenant = tenant_of(proto, ctx, params)
    agent, every = checked_agent(tenant, params.agent)
    limit = _page_limit(proto, params.limit)
    offset = _offset(params.cursor)
    selector = readable_filter(
        proto,
        tenant,
        agent=agent,
        every_agent=every,
        include_transferred=params.include_transferred,
        classifications=params.classifications,
        types=params.types,
        source=params.source,
        tags=params.tags,
    )
    with proto.store.reading() as reader:
        if params.order == "recent":
            page = reader.select(selector, order="created_desc", limit=limit + 1, offset=offset)
        else:
            everything = reader.select(selector, order="created_desc")
            everything.sort(key=lambda r: -_effective(proto, tenant, r))
            page = everything[offset : offset + limit + 1]
    following = str(offset + limit) if len(page) > limit else None
    return {
        "observations": [to_observation(proto, r, tenant) for r in page[:limit]],
        "next_cursor": following,
    }


def _offset(cursor: str | None) -> int:
    if not cursor:
        return 0
    # An offset or audit position is a 63-bit integer in either store: a longer run of
    # digits is no cursor this server issued.
    if not cursor.isascii() or not cursor.isdigit() or len(cursor) > 18:
        raise ProtocolError.invalid_params(f"not a cursor of this listing: {cursor[:40]!r}")
    return int(cursor)


def _effective(proto: Protocol, tenant: Tenant, record: StoredRecord) -> float:
    if project_of(record) == tenant.project_path:
        return record.salience
    return record.salience * proto.config.observations.transfer_multiplier


def recall_observations(
    proto: Protocol, ctx: CallContext, params: ObservationRecallParams
) -> dict[str, Any]:
    """Observations ranked by relevance scaled by effective weight, best first."""
    tenant = tenant_of(proto, ctx, params)
    limit = proto.result_limit(params.limit, proto.config.default_recall_limit)
    selector = readable_filter(
        proto,
        tenant,
        agent=tenant.agent,
        every_agent=tenant.operator and tenant.agent is None,
        include_transferred=params.include_transferred,
        classifications=params.classifications,
        tags=params.tags,
    )
    terms = query_terms(params.query) if params.query else []
    now = now_ms()
    with proto.store.reading() as reader:
        ranked = _relevance(proto, reader, selector, terms, params.embedding, limit, now)
    # A typo's guess follows what was asked, whatever its weight, and scores no higher.
    scored = ranking.asked_first(
        (r, round(relevance * weight_factor(_effective(proto, tenant, r)), 6), guessed)
        for r, relevance, guessed in ranked
    )
    return {
        "observations": [to_observation(proto, r, tenant, score) for r, score, _ in scored[:limit]]
    }


def _relevance(
    proto: Protocol,
    reader: StoreReader,
    selector: RecordFilter,
    terms: list[str],
    embedding: list[float] | None,
    limit: int,
    now: int,
) -> list[tuple[StoredRecord, float, bool]]:
    """The candidates with their ordinary relevance in [0, 1] and whether a typo's guess
    found them: the §5 blend for a query, recency without one."""
    vector = embedding if embedding is not None and comparable(reader, embedding) else None
    if terms or vector is not None:
        return ranked_candidates(proto, reader, selector, terms, vector, limit, now)
    pool = max(limit * 4, 50)
    records = reader.select(selector, order="created_desc", limit=pool)
    scores = ranking.by_recency([r.created_at for r in records], now)
    return [(record, score, False) for record, score in zip(records, scores, strict=True)]


def audit(proto: Protocol, ctx: CallContext, params: ObservationAuditParams) -> dict[str, Any]:
    """The audit log of the tenant's project, newest first: its own agent's entries, or any
    agent's for an operator."""
    tenant = tenant_of(proto, ctx, params)
    if params.model_extra:
        raise ProtocolError.invalid_params(
            "memory/observations/audit only reads: the audit log is written by the server "
            f"alone (unexpected {', '.join(sorted(params.model_extra))})",
            fields=sorted(params.model_extra),
        )
    agent, every = checked_agent(tenant, params.agent)
    limit = min(_page_limit(proto, params.limit), _MAX_PAGE)
    before_seq = _offset(params.cursor) if params.cursor else None
    query = AuditQuery(
        org=tenant.org,
        project=tenant.project,
        agent=agent,
        any_agent=every,
        observation_id=params.observation_id,
        since=to_epoch_ms(parse_timestamp(params.since)) if params.since is not None else None,
        until=to_epoch_ms(parse_timestamp(params.until)) if params.until is not None else None,
        before_seq=before_seq,
        limit=limit + 1,
    )
    with proto.store.reading() as reader:
        rows = reader.audit(query)
    following = str(rows[limit - 1].seq) if len(rows) > limit else None
    return {"entries": [audit_to_wire(row) for row in rows[:limit]], "next_cursor": following}


def audit_to_wire(row: AuditRow) -> dict[str, Any]:
    """An audit entry as the wire carries it."""
    return {
        "seq": row.seq,
        "at": timestamp(row.at),
        "actor": row.actor,
        "action": row.action,
        "observation_id": row.observation_id,
        "org": row.org,
        "project": row.project,
        "agent": row.agent,
        "before": row.before,
        "after": row.after,
    }
