"""The ``observations`` extension (``docs/observations.md``): weighted, deduplicated facts per
(org, project, agent), kept as ordinary records, every change written to an append-only
audit log, and read-only transfer between projects by operator grant.

The tenant always comes from the connection — the authenticated principal, or on a local
transport the call's ``owner`` — never from a field the caller sets (spec §6)."""

from __future__ import annotations

import hashlib
import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from a2m_server import ranking
from a2m_server.errors import ProtocolError
from a2m_server.store import NewRecord, RecordFilter, StoredRecord, StoreReader, StoreWriter
from a2m_server.store._audit import AuditQuery, AuditRow
from a2m_server.text import query_terms
from a2m_types import ErrorCode, new_id, parse_timestamp, to_epoch_ms
from a2m_types.observations import (
    TENANT_FIELDS,
    ObservationAuditParams,
    ObservationDeleteParams,
    ObservationListParams,
    ObservationRecallParams,
    ObservationRememberParams,
    ObservationUpdateParams,
)

from .context import CallContext
from .core import Protocol, now_ms
from .hub import deletion_event
from .reads import comparable, rank_candidates
from .wire import timestamp

__all__ = [
    "HANDLERS",
    "OBSERVATION_KEY_PREFIX",
    "Tenant",
    "audit_forgotten",
    "audit_reweighted",
    "content_hash",
    "normalise",
    "prune_observations",
    "weight_factor",
]

OBSERVATION_KEY_PREFIX = "observation/"
"""Every observation's key starts so; core ``memory/remember`` may not write under it."""
SERVER_ACTOR = "a2m-server"
"""The actor of changes no caller asked for (evictions)."""
DEFAULT_AUTO_WEIGHT = {"session": 0.30, "pr": 0.55, "batch": 0.30, None: 0.30}
"""The seed's base confidence of each automatic ingest path, the weight it writes."""
_RESERVED = ("observation", "tags")
_MAX_PAGE = 1000
_TRACKED = ("content", "type", "classification", "weight", "tags", "file_path")


def normalise(content: str) -> str:
    """What two observations must share to be the same: NFKC, case folded, whitespace
    collapsed."""
    return " ".join(unicodedata.normalize("NFKC", content).casefold().split())


def content_hash(content: str) -> str:
    """``sha256:<hex>`` of the normalised content (comparable across tenants)."""
    return "sha256:" + hashlib.sha256(normalise(content).encode("utf-8")).hexdigest()


def weight_factor(weight: float) -> float:
    """How much an observation's effective weight lets its relevance count:
    ``w / (w + 1)``, 0 at weight 0, ½ at 1, tending to 1 (``docs/observations.md`` §4)."""
    weight = max(weight, 0.0)
    return weight / (weight + 1.0)


@dataclass(frozen=True)
class Tenant:
    """Who an observation call acts for."""

    org: str
    project: str
    agent: str | None
    owner: str | None
    """The record owner: the principal, or the local caller's ``owner``."""
    actor: str
    """Who the audit log names."""
    operator: bool
    """May act on every agent of the project."""

    @property
    def project_path(self) -> str:
        return f"{self.org}/{self.project}"

    def key(self, content: str) -> str:
        """The record key of ``content`` for this tenant: one address per fact."""
        raw = "\x1f".join((self.org, self.project, self.agent or "", normalise(content)))
        return OBSERVATION_KEY_PREFIX + hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _scope_denied(message: str, **data: Any) -> ProtocolError:
    return ProtocolError(ErrorCode.SCOPE_DENIED, message, data or None)


def tenant_of(proto: Protocol, ctx: CallContext, params: Any) -> Tenant:
    """The caller's tenant; SCOPE_DENIED for a tenant field or an owner it may not be."""
    forged = sorted(TENANT_FIELDS & set(params.model_extra or {}))
    if forged:
        raise _scope_denied(
            f"{', '.join(forged)} cannot be set by the caller: the tenant comes from the "
            "authenticated principal and the server configuration",
            fields=forged,
        )
    config = proto.config.observations
    owner: str | None = params.owner
    if ctx.principal is not None:
        if owner is not None and owner != ctx.principal:
            raise _scope_denied(
                f"authenticated as {ctx.principal!r}; may not act as {owner!r}",
                principal=ctx.principal,
                owner=owner,
            )
        parts = ctx.principal.split("/")
        if len(parts) == 3 and all(parts):
            org, project, agent = parts
        else:
            org, project, agent = config.org, config.project, ctx.principal
        return Tenant(
            org,
            project,
            agent,
            ctx.principal,
            ctx.principal,
            operator=ctx.principal in config.operators,
        )
    if ctx.network:
        if owner is not None:
            raise _scope_denied(
                "this connection is not authenticated, so it cannot name an owner", owner=owner
            )
        return Tenant(config.org, config.project, None, None, "anonymous", operator=False)
    return Tenant(
        config.org, config.project, owner, owner, owner or "local", operator=owner is None
    )


def _checked_agent(tenant: Tenant, agent: str | None) -> tuple[str | None, bool]:
    """(agent, every agent) a read may look at: another agent's only for an operator."""
    if agent is None:
        return tenant.agent, tenant.operator
    if agent != tenant.agent and not tenant.operator:
        raise _scope_denied(
            f"only an operator may read another agent's observations ({agent!r})", agent=agent
        )
    return agent, False


def _classification(classification: str | None, kind: str | None) -> str:
    """The derived classification: the given one, else the type's first dot-segment; a note
    (or nothing) is ``note``."""
    if classification is not None:
        value = classification.strip().lower()
    elif kind is not None:
        value = kind.strip().split(".", 1)[0].lower()
    else:
        value = "note"
    if not value:
        raise ProtocolError.invalid_params("classification must not be blank")
    return value


def _tags(tags: Sequence[str] | None) -> list[str]:
    cleaned: list[str] = []
    for tag in tags or ():
        text = tag.strip()
        if not text:
            raise ProtocolError.invalid_params("a tag must not be blank", field="tags")
        if text not in cleaned:
            cleaned.append(text)
    return cleaned


def _check_content(proto: Protocol, content: str) -> str:
    text = content.strip()
    if not text:
        raise ProtocolError.invalid_params("content must not be empty or blank", field="content")
    maximum = proto.config.limits.max_content_length
    if len(text) > maximum:
        raise ProtocolError.quota("max_content_length", maximum, len(text))
    return text


def _check_weight(proto: Protocol, weight: float, name: str = "weight") -> float:
    maximum = proto.config.observations.max_weight
    if not math.isfinite(weight) or weight < 0 or weight > maximum:
        raise ProtocolError.invalid_params(
            f"{name} must be a finite number from 0 to {maximum:g}, got {weight!r}",
            field=name,
            max=maximum,
        )
    return weight


# --- records <-> observations --------------------------------------------------------------


def _is_observation(record: StoredRecord) -> bool:
    return bool(record.metadata and record.metadata.get("observation") is True)


def snapshot(record: StoredRecord | NewRecord) -> dict[str, Any]:
    """The audited fields of an observation record."""
    meta = record.metadata or {}
    return {
        "content": record.content,
        "type": meta.get("observation_type"),
        "classification": meta.get("observation_classification"),
        "weight": record.salience,
        "tags": list(meta.get("tags") or []),
        "file_path": meta.get("observation_file_path"),
    }


def _project_of(record: StoredRecord) -> str:
    meta = record.metadata or {}
    return f"{meta.get('observation_org')}/{meta.get('observation_project')}"


def to_observation(
    proto: Protocol, record: StoredRecord, tenant: Tenant, score: float | None = None
) -> dict[str, Any]:
    """An observation record as the extension's reads return it."""
    meta = record.metadata or {}
    project = _project_of(record)
    transferred = project != tenant.project_path
    multiplier = proto.config.observations.transfer_multiplier if transferred else 1.0
    result: dict[str, Any] = {
        "id": record.id,
        "content": record.content,
        "type": meta.get("observation_type") or "note",
        "classification": meta.get("observation_classification") or "note",
        "weight": record.salience,
        "effective_weight": record.salience * multiplier,
        "tags": list(meta.get("tags") or []),
        "source": meta.get("observation_source") or "explicit",
        "origin": meta.get("observation_origin"),
        "file_path": meta.get("observation_file_path"),
        "org": meta.get("observation_org"),
        "project": meta.get("observation_project"),
        "agent": meta.get("observation_agent"),
        "created_at": timestamp(record.created_at),
        "transferred": transferred,
        "source_project": project if transferred else None,
    }
    if score is not None:
        result["score"] = score
    return result


def _audit_row(
    tenant_actor: str,
    action: str,
    record: StoredRecord | NewRecord,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    at: int,
) -> AuditRow:
    meta = record.metadata or {}
    return AuditRow(
        seq=0,
        at=at,
        actor=tenant_actor,
        action=action,
        observation_id=record.id,
        org=meta.get("observation_org"),
        project=meta.get("observation_project"),
        agent=meta.get("observation_agent"),
        before=before,
        after=after,
    )


def _selector(
    proto: Protocol,
    tenant: Tenant,
    *,
    agent: str | None,
    every_agent: bool,
    include_transferred: bool,
    classifications: Sequence[str] | None = None,
    types: Sequence[str] | None = None,
    source: str | None = None,
    tags: Sequence[str] | None = None,
) -> RecordFilter:
    """Observations the tenant may read: its project's, and granted projects' (same
    agent), narrowed by the filters."""
    config = proto.config.observations
    projects = (
        config.sources_for(tenant.project_path) if include_transferred else [tenant.project_path]
    )
    branches = []
    for path in projects:
        org, project = path.split("/", 1)
        where: dict[str, Any] = {"observation_org": org, "observation_project": project}
        if not every_agent:
            where["observation_agent"] = agent
        branches.append(RecordFilter(where=where))
    where = {"observation": True}
    if classifications:
        where["observation_classification"] = [c.strip().lower() for c in classifications]
    if types:
        where["observation_type"] = list(types)
    if source is not None:
        where["observation_source"] = source
    return RecordFilter(where=where, any_of=branches, tags_all=list(tags) if tags else None)


def _readable(proto: Protocol, tenant: Tenant, record: StoredRecord) -> str:
    """``own`` when the tenant may change ``record``, ``transferred`` when it may only read
    it, ``hidden`` otherwise."""
    if not _is_observation(record):
        return "hidden"
    meta = record.metadata or {}
    same_agent = tenant.operator or meta.get("observation_agent") == tenant.agent
    project = _project_of(record)
    if project == tenant.project_path:
        return "own" if same_agent else "hidden"
    if same_agent and proto.config.observations.grant_holds(project, tenant.project_path):
        return "transferred"
    return "hidden"


def _editable(
    proto: Protocol, tenant: Tenant, records: Sequence[StoredRecord], ids: Sequence[str], what: str
) -> list[StoredRecord]:
    """``records`` (found for ``ids``) when the tenant may change every one; else the
    typed error, and nothing changes."""
    by_id = {r.id: r for r in records}
    for record_id in ids:
        record = by_id.get(record_id)
        access = "hidden" if record is None else _readable(proto, tenant, record)
        if access == "transferred":
            assert record is not None
            raise ProtocolError(
                ErrorCode.READ_ONLY,
                f"observation {record_id!r} is a read-only transfer from project "
                f"{_project_of(record)!r}; it cannot be {what} from {tenant.project_path!r}",
                {"transferred": True, "source_project": _project_of(record), "id": record_id},
            )
        if access == "hidden":
            raise ProtocolError(
                ErrorCode.UNKNOWN_RECORD,
                f"no observation {record_id!r} that this caller may change",
                {"id": record_id},
            )
    return [by_id[i] for i in dict.fromkeys(ids)]


# --- methods ---------------------------------------------------------------------------------


def remember(
    proto: Protocol, ctx: CallContext, params: ObservationRememberParams
) -> dict[str, Any]:
    """Store one observation, or raise the weight of the identical one the tenant holds."""
    proto.ensure_writable("memory/observations/remember")
    tenant = tenant_of(proto, ctx, params)
    content = _check_content(proto, params.content)
    if params.weight is not None:
        weight = _check_weight(proto, params.weight)
    elif params.source == "auto":
        weight = DEFAULT_AUTO_WEIGHT[params.ingest]
    else:
        weight = 1.0
    extra = dict(params.metadata or {})
    # Observations are durable: they leave by delete or eviction, audited, never by expiry.
    reserved = sorted(k for k in extra if k.startswith(_RESERVED) or k == "ttl_s")
    if reserved:
        raise ProtocolError.invalid_params(
            f"metadata keys {', '.join(reserved)} are the server's (docs/observations.md)",
            fields=reserved,
        )
    classification = _classification(params.classification, params.type)
    kind = params.type.strip() if params.type else classification
    tags = _tags(params.tags)
    key = tenant.key(content)
    metadata = {
        **extra,
        "observation": True,
        "observation_type": kind,
        "observation_classification": classification,
        "observation_source": params.source,
        "observation_origin": params.origin,
        "observation_file_path": params.file_path,
        "observation_org": tenant.org,
        "observation_project": tenant.project,
        "observation_agent": tenant.agent,
        "observation_hash": content_hash(content),
        "tags": tags,
    }
    vector = params.embedding if "embeddings" in proto.config.capabilities else None
    unembedded = False
    if vector is None and proto.embedding is not None and "embeddings" in proto.config.capabilities:
        # The server's embedder gives a new observation its vector, outside the write lock;
        # a duplicate keeps the stored one's, so it is not embedded again.
        with proto.store.reading() as reader:
            known = reader.get_by_key(tenant.owner, key) is not None
        if not known:
            probe = NewRecord(id="", content=content, created_at=0)
            unembedded = proto.embedding.embed_records([probe])
            vector = probe.embedding
    now = now_ms()
    try:
        return _remember_in(proto, tenant, key, content, weight, tags, metadata, vector, now)
    finally:
        if unembedded and proto.embedding is not None:
            proto.embedding.wake()  # the back-fill gives it a vector later


def _remember_in(
    proto: Protocol,
    tenant: Tenant,
    key: str,
    content: str,
    weight: float,
    tags: list[str],
    metadata: dict[str, Any],
    vector: list[float] | None,
    now: int,
) -> dict[str, Any]:
    """The write of :func:`remember`: raise the weight of the stored duplicate, or insert."""
    maximum = proto.config.observations.max_weight
    with proto.transaction() as writer:
        existing = writer.get_by_key(tenant.owner, key)
        if existing is not None and _is_observation(existing):
            before = snapshot(existing)
            total = min(existing.salience + weight, maximum)
            merged = [*before["tags"], *(t for t in tags if t not in before["tags"])]
            if merged != before["tags"]:
                current = writer.get([existing.id], embeddings=True)[0]
                meta = {**(current.metadata or {}), "tags": merged}
                writer.replace(existing.id, _as_new(current, meta, total, now))
            else:
                writer.set_salience(existing.id, total)
            after = {**before, "weight": total, "tags": merged}
            writer.append_audit([_audit_row(tenant.actor, "merged", existing, before, after, now)])
            return {"id": existing.id, "deduplicated": True, "weight": total}
        if existing is not None:
            raise ProtocolError.invalid_params(
                f"the key {key!r} holds a record that is not an observation", key=key
            )
        tier = proto.config.observation_tier if "tiers" in proto.config.capabilities else None
        if vector is not None:
            _fix_width(writer, vector)
        record_id = new_id()
        new = NewRecord(
            id=record_id,
            content=content,
            created_at=now,
            role="memory",
            metadata=metadata,
            tier=tier,
            salience=weight,
            owner=tenant.owner,
            key=key,
            embedding=vector,
        )
        writer.insert([new])
        payload: dict[str, Any] = {"id": record_id, "key": key, "revision": 0}
        if tier is not None:
            payload["tier"] = tier
        writer.append_event("written", now, payload, tenant.owner, tier)
        # Audited from what was written: reading the row back would cost a round trip.
        writer.append_audit([_audit_row(tenant.actor, "created", new, None, snapshot(new), now)])
        _prune_tenant(proto, writer, tenant.org, tenant.project, tenant.agent, now)
    return {"id": record_id, "deduplicated": False, "weight": weight}


def _fix_width(writer: StoreWriter, vector: Sequence[float]) -> None:
    """§3.7: the first vector fixes the store's width; another is EMBEDDING_MISMATCH."""
    width = writer.dimensions()
    if width is None:
        writer.set_dimensions(len(vector))
    elif width != len(vector):
        raise ProtocolError(
            ErrorCode.EMBEDDING_MISMATCH,
            f"embedding has {len(vector)} dimensions; this store's vectors have {width}",
            {"expected": width, "got": len(vector)},
        )


def _as_new(record: StoredRecord, metadata: dict[str, Any], salience: float, now: int) -> NewRecord:
    """``record`` rewritten with new metadata and weight (a replacement keeps the rest)."""
    return NewRecord(
        id=record.id,
        content=record.content,
        created_at=now,
        role=record.role,
        metadata=metadata,
        group=record.group,
        tier=record.tier,
        salience=salience,
        owner=record.owner,
        session=record.session,
        key=record.key,
        embedding=record.embedding,
        uri=record.uri,
        media_type=record.media_type,
        expires_at=record.expires_at,
    )


def _page_limit(proto: Protocol, limit: int | None) -> int:
    return proto.result_limit(limit, 50)


def list_observations(
    proto: Protocol, ctx: CallContext, params: ObservationListParams
) -> dict[str, Any]:
    """A page of the tenant's observations (and granted ones), newest or heaviest first."""
    tenant = tenant_of(proto, ctx, params)
    agent, every = _checked_agent(tenant, params.agent)
    limit = _page_limit(proto, params.limit)
    offset = _offset(params.cursor)
    selector = _selector(
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
    if not cursor.isdigit():
        raise ProtocolError.invalid_params(f"not a cursor of this listing: {cursor!r}")
    return int(cursor)


def _effective(proto: Protocol, tenant: Tenant, record: StoredRecord) -> float:
    if _project_of(record) == tenant.project_path:
        return record.salience
    return record.salience * proto.config.observations.transfer_multiplier


def recall_observations(
    proto: Protocol, ctx: CallContext, params: ObservationRecallParams
) -> dict[str, Any]:
    """Observations ranked by relevance scaled by effective weight, best first."""
    tenant = tenant_of(proto, ctx, params)
    limit = proto.result_limit(params.limit, proto.config.default_recall_limit)
    selector = _selector(
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
    scored = [
        (r, round(relevance * weight_factor(_effective(proto, tenant, r)), 6))
        for r, relevance in ranked
    ]
    scored.sort(key=lambda pair: (-pair[1], -pair[0].created_at, pair[0].id))
    return {
        "observations": [to_observation(proto, r, tenant, score) for r, score in scored[:limit]]
    }


def _relevance(
    proto: Protocol,
    reader: StoreReader,
    selector: RecordFilter,
    terms: list[str],
    embedding: list[float] | None,
    limit: int,
    now: int,
) -> list[tuple[StoredRecord, float]]:
    """The candidates with their ordinary relevance in [0, 1]: the §5 blend for a query,
    recency without one."""
    vector = embedding if embedding is not None and comparable(reader, embedding) else None
    if terms or vector is not None:
        return rank_candidates(proto, reader, selector, terms, vector, limit, now)
    pool = max(limit * 4, 50)
    records = reader.select(selector, order="created_desc", limit=pool)
    scores = ranking.by_recency([r.created_at for r in records], now)
    return list(zip(records, scores, strict=True))


def update(proto: Protocol, ctx: CallContext, params: ObservationUpdateParams) -> dict[str, Any]:
    """Edit one observation; the change is audited. A transferred one is READ_ONLY."""
    proto.ensure_writable("memory/observations/update")
    tenant = tenant_of(proto, ctx, params)
    content = _check_content(proto, params.content) if params.content is not None else None
    weight = _check_weight(proto, params.weight) if params.weight is not None else None
    tags = _tags(params.tags) if params.tags is not None else None
    now = now_ms()
    with proto.transaction() as writer:
        record = _editable(
            proto, tenant, writer.get([params.id], embeddings=True), [params.id], "edited"
        )[0]
        before = snapshot(record)
        meta = dict(record.metadata or {})
        if params.type is not None:
            meta["observation_type"] = params.type.strip()
        if params.classification is not None or params.type is not None:
            meta["observation_classification"] = _classification(params.classification, params.type)
        if tags is not None:
            meta["tags"] = tags
        if params.file_path is not None:
            meta["observation_file_path"] = params.file_path
        new_key = record.key
        if content is not None and normalise(content) != normalise(record.content):
            owner_tenant = Tenant(
                str(meta.get("observation_org")),
                str(meta.get("observation_project")),
                meta.get("observation_agent"),
                record.owner,
                tenant.actor,
                tenant.operator,
            )
            new_key = owner_tenant.key(content)
            taken = writer.get_by_key(record.owner, new_key)
            if taken is not None and taken.id != record.id:
                raise ProtocolError.invalid_params(
                    f"the new content duplicates observation {taken.id!r}; raise its weight "
                    "or delete one of them instead",
                    duplicate_of=taken.id,
                )
            meta["observation_hash"] = content_hash(content)
        salience = record.salience if weight is None else weight
        changed_record = content is not None or meta != (record.metadata or {})
        if changed_record:
            replacement = _as_new(record, meta, salience, now)
            if content is not None:
                replacement.content = content
            writer.replace(record.id, replacement)
            if new_key != record.key and new_key is not None:
                writer.rekey(record.id, new_key)
        elif weight is not None:
            writer.set_salience(record.id, weight)
        stored = writer.get([record.id])[0]
        after = snapshot(stored)
        writer.append_audit([_audit_row(tenant.actor, "updated", stored, before, after, now)])
    return {"observation": to_observation(proto, stored, tenant)}


def delete(proto: Protocol, ctx: CallContext, params: ObservationDeleteParams) -> dict[str, Any]:
    """Hard-delete observations; each deletion is audited. A transferred one is READ_ONLY,
    an unknown one UNKNOWN_RECORD, and then nothing is deleted."""
    proto.ensure_writable("memory/observations/delete")
    tenant = tenant_of(proto, ctx, params)
    now = now_ms()
    with proto.transaction() as writer:
        records = _editable(proto, tenant, writer.get(params.ids), params.ids, "deleted")
        deleted = writer.delete([r.id for r in records])
        writer.append_audit(
            [_audit_row(tenant.actor, "deleted", r, snapshot(r), None, now) for r in records]
        )
        payload, owner, tier = deletion_event(records, tenant.owner)
        writer.append_event("forgotten", now, payload, owner, tier)
    return {"deleted": deleted}


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
    agent, every = _checked_agent(tenant, params.agent)
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


# --- hooks into the core methods -------------------------------------------------------------


def audit_forgotten(writer: StoreWriter, records: Sequence[StoredRecord], actor: str) -> None:
    """Audit observations a core ``memory/forget`` removed (a delete by another path)."""
    now = now_ms()
    rows = [
        _audit_row(actor, "forgotten", r, snapshot(r), None, now)
        for r in records
        if _is_observation(r)
    ]
    if rows:
        writer.append_audit(rows)


def audit_reweighted(
    writer: StoreWriter, records: Sequence[StoredRecord], amount: float, actor: str
) -> None:
    """Audit observations whose weight a core ``memory/reinforce`` (or a promotion's
    salience) raised by ``amount``."""
    now = now_ms()
    rows = []
    for record in records:
        if _is_observation(record):
            before = snapshot(record)
            rows.append(
                _audit_row(
                    actor,
                    "updated",
                    record,
                    before,
                    {**before, "weight": record.salience + amount},
                    now,
                )
            )
    if rows:
        writer.append_audit(rows)


def _prune_tenant(
    proto: Protocol,
    writer: StoreWriter,
    org: str | None,
    project: str | None,
    agent: str | None,
    now: int,
) -> list[StoredRecord]:
    """Evict a tenant's lowest-weight observations (ties: oldest) beyond the capacity;
    returns them."""
    capacity = proto.config.observations.capacity
    if capacity <= 0:
        return []
    where = {
        "observation": True,
        "observation_org": org,
        "observation_project": project,
        "observation_agent": agent,
    }
    held = writer.select(RecordFilter(where=where))
    if len(held) <= capacity:
        return []
    held.sort(key=lambda r: (r.salience, r.created_at, r.rowid))
    doomed = held[: len(held) - capacity]
    writer.delete([r.id for r in doomed])
    writer.append_audit(
        [_audit_row(SERVER_ACTOR, "evicted", r, snapshot(r), None, now) for r in doomed]
    )
    payload, owner, tier = deletion_event(doomed, None)
    writer.append_event("forgotten", now, payload, owner, tier)
    return doomed


def prune_observations(proto: Protocol, writer: StoreWriter) -> list[StoredRecord]:
    """Bring every tenant back within ``observations.capacity`` (consolidation); returns
    the observations evicted."""
    if proto.config.observations.capacity <= 0:
        return []
    tenants = {
        (
            (r.metadata or {}).get("observation_org"),
            (r.metadata or {}).get("observation_project"),
            (r.metadata or {}).get("observation_agent"),
        )
        for r in writer.select(RecordFilter(where={"observation": True}))
    }
    now = now_ms()
    evicted: list[StoredRecord] = []
    for tenant in sorted(tenants, key=str):
        evicted += _prune_tenant(proto, writer, *tenant, now)
    return evicted


def is_observation(record: StoredRecord) -> bool:
    """Whether ``record`` is an observation (``metadata.observation`` is true)."""
    return _is_observation(record)


HANDLERS: dict[str, Any] = {
    "memory/observations/remember": remember,
    "memory/observations/list": list_observations,
    "memory/observations/recall": recall_observations,
    "memory/observations/update": update,
    "memory/observations/delete": delete,
    "memory/observations/audit": audit,
}
