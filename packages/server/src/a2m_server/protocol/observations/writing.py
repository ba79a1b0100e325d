"""The observation write paths: remember (insert, or raise the weight of the identical
observation the tenant holds), update and delete, each audited; the hooks that audit
what core methods do to observations; and the eviction of the lowest-weight ones beyond
a tenant's capacity."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from a2m_server.errors import ProtocolError
from a2m_server.protocol.context import CallContext
from a2m_server.protocol.core import Protocol, now_ms
from a2m_server.protocol.hub import deletion_event
from a2m_server.store import NewRecord, RecordFilter, StoredRecord, StoreWriter
from a2m_types import ErrorCode, new_id
from a2m_types.observations import (
    ObservationDeleteParams,
    ObservationRememberParams,
    ObservationUpdateParams,
)

from .model import (
    DEFAULT_AUTO_WEIGHT,
    MAX_TAGS,
    OBSERVATION_KEYS,
    SERVER_ACTOR,
    Tenant,
    audit_row,
    check_content,
    check_weight,
    classification_of,
    clean_tags,
    content_hash,
    editable,
    is_observation,
    normalise,
    snapshot,
    tenant_of,
    to_observation,
)

__all__ = [
    "audit_forgotten",
    "delete",
    "prune_observations",
    "remember",
    "reweigh",
    "update",
]

_RESERVED = ("observation", "tags")
"""Metadata key prefixes the server writes (a caller's metadata may not use them)."""


def remember(
    proto: Protocol, ctx: CallContext, params: ObservationRememberParams
) -> dict[str, Any]:
    """Store one observation, or raise the weight of the identical one the tenant holds."""
    proto.ensure_writable("memory/observations/remember")
    tenant = tenant_of(proto, ctx, params)
    content = check_content(proto, params.content)
    if params.weight is not None:
        weight = check_weight(proto, params.weight)
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
    classification = classification_of(params.classification, params.type)
    kind = params.type.strip() if params.type else classification
    tags = clean_tags(params.tags)
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
            vector, unembedded = _server_vector(proto, content)
    now = now_ms()
    try:
        return _remember_in(proto, tenant, key, content, weight, tags, metadata, vector, now)
    finally:
        _backfill_if(proto, unembedded)


def _server_vector(proto: Protocol, content: str) -> tuple[list[float] | None, bool]:
    """The server's embedder's vector for ``content``, made outside the write lock, and
    whether the embedder failed (:func:`_backfill_if` then has it made later)."""
    assert proto.embedding is not None
    probe = NewRecord(id="", content=content, created_at=0)
    unembedded = proto.embedding.embed_records([probe])
    return probe.embedding, unembedded


def _backfill_if(proto: Protocol, unembedded: bool) -> None:
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
        if existing is not None and is_observation(existing):
            before = snapshot(existing)
            total = min(existing.salience + weight, maximum)
            merged = [*before["tags"], *(t for t in tags if t not in before["tags"])]
            if len(merged) > MAX_TAGS:
                raise ProtocolError.invalid_params(
                    f"this fact is stored already with {len(before['tags'])} tags; adding "
                    f"these would give it {len(merged)}, past {MAX_TAGS}",
                    field="tags",
                    id=existing.id,
                )
            if merged != before["tags"]:
                current = writer.get([existing.id], embeddings=True)[0]
                meta = {**(current.metadata or {}), "tags": merged}
                writer.replace(existing.id, _as_new(current, meta, total, now))
            else:
                writer.set_salience(existing.id, total)
            after = {**before, "weight": total, "tags": merged}
            writer.append_audit([audit_row(tenant.actor, "merged", existing, before, after, now)])
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
        writer.append_audit([audit_row(tenant.actor, "created", new, None, snapshot(new), now)])
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


def update(proto: Protocol, ctx: CallContext, params: ObservationUpdateParams) -> dict[str, Any]:
    """Edit one observation; the change is audited. A transferred one is READ_ONLY."""
    proto.ensure_writable("memory/observations/update")
    tenant = tenant_of(proto, ctx, params)
    content = check_content(proto, params.content) if params.content is not None else None
    weight = check_weight(proto, params.weight) if params.weight is not None else None
    tags = clean_tags(params.tags) if params.tags is not None else None
    # New content needs a new vector (the old one ranks the old text): the server's
    # embedder gives it one outside the write lock; without one, the edited observation
    # keeps none rather than a wrong one.
    vector: list[float] | None = None
    unembedded = False
    if content is not None and proto.embedding is not None:
        vector, unembedded = _server_vector(proto, content)
    try:
        return _update_in(proto, tenant, params, content, weight, tags, vector)
    finally:
        _backfill_if(proto, unembedded)


def _update_in(
    proto: Protocol,
    tenant: Tenant,
    params: ObservationUpdateParams,
    content: str | None,
    weight: float | None,
    tags: list[str] | None,
    vector: list[float] | None,
) -> dict[str, Any]:
    """The write of :func:`update`, in one transaction."""
    now = now_ms()
    with proto.transaction() as writer:
        record = editable(
            proto, tenant, writer.get([params.id], embeddings=True), [params.id], "edited"
        )[0]
        before = snapshot(record)
        meta = dict(record.metadata or {})
        # A type sent again unchanged (the memory page's form sends it with every edit)
        # leaves the classification the observation was written with.
        new_type = params.type.strip() if params.type is not None else None
        type_changed = new_type is not None and new_type != meta.get("observation_type")
        if new_type is not None:
            meta["observation_type"] = new_type
        if params.classification is not None or type_changed:
            meta["observation_classification"] = classification_of(params.classification, new_type)
        if tags is not None:
            meta["tags"] = tags
        if "file_path" in params.model_fields_set:  # null, sent, clears it
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
            if content is not None and content != record.content:
                replacement.content = content
                replacement.embedding = vector
            writer.replace(record.id, replacement)
            if new_key != record.key and new_key is not None:
                writer.rekey(record.id, new_key)
        elif weight is not None:
            writer.set_salience(record.id, weight)
        stored = writer.get([record.id])[0]
        after = snapshot(stored)
        if after != before:  # the log holds changes: an edit to the same values is none
            writer.append_audit([audit_row(tenant.actor, "updated", stored, before, after, now)])
    return {"observation": to_observation(proto, stored, tenant)}


def delete(proto: Protocol, ctx: CallContext, params: ObservationDeleteParams) -> dict[str, Any]:
    """Hard-delete observations; each deletion is audited. A transferred one is READ_ONLY,
    an unknown one UNKNOWN_RECORD, and then nothing is deleted."""
    proto.ensure_writable("memory/observations/delete")
    tenant = tenant_of(proto, ctx, params)
    now = now_ms()
    with proto.transaction() as writer:
        records = editable(proto, tenant, writer.get(params.ids), params.ids, "deleted")
        deleted = writer.delete([r.id for r in records])
        writer.append_audit(
            [audit_row(tenant.actor, "deleted", r, snapshot(r), None, now) for r in records]
        )
        payload, owner, tier = deletion_event(records, tenant.owner)
        writer.append_event("forgotten", now, payload, owner, tier)
    return {"deleted": deleted}


# --- hooks into the core methods -------------------------------------------------------------


def audit_forgotten(writer: StoreWriter, records: Sequence[StoredRecord], actor: str) -> None:
    """Audit observations a core ``memory/forget`` removed (a delete by another path)."""
    now = now_ms()
    rows = [
        audit_row(actor, "forgotten", r, snapshot(r), None, now)
        for r in records
        if is_observation(r)
    ]
    if rows:
        writer.append_audit(rows)


def reweigh(
    proto: Protocol,
    writer: StoreWriter,
    records: Sequence[StoredRecord],
    amount: float,
    actor: str,
) -> int:
    """Add ``amount`` to the salience of ``records`` (a core ``memory/reinforce``, or a
    promotion's salience); how many records that was. An observation's weight stays
    within ``[0, max_weight]`` (§1: a weight is a float ≥ 0, ``max_weight`` the largest
    any update may reach), and each change of one is audited."""
    plain = [r.id for r in records if not is_observation(r)]
    counted = writer.add_salience(plain, amount) if plain else 0
    maximum = proto.config.observations.max_weight
    now = now_ms()
    rows = []
    for record in records:
        if not is_observation(record):
            continue
        counted += 1
        weight = min(max(record.salience + amount, 0.0), maximum)
        if weight == record.salience:
            continue
        writer.set_salience(record.id, weight)
        before = snapshot(record)
        rows.append(audit_row(actor, "updated", record, before, {**before, "weight": weight}, now))
    if rows:
        writer.append_audit(rows)
    return counted


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
    held = [
        r
        for r in writer.select(RecordFilter(where=where, key_under=OBSERVATION_KEYS))
        if is_observation(r)
    ]
    if len(held) <= capacity:
        return []
    held.sort(key=lambda r: (r.salience, r.created_at, r.rowid))
    doomed = held[: len(held) - capacity]
    writer.delete([r.id for r in doomed])
    writer.append_audit(
        [audit_row(SERVER_ACTOR, "evicted", r, snapshot(r), None, now) for r in doomed]
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
        for r in writer.select(
            RecordFilter(where={"observation": True}, key_under=OBSERVATION_KEYS)
        )
        if is_observation(r)
    }
    now = now_ms()
    evicted: list[StoredRecord] = []
    for tenant in sorted(tenants, key=str):
        evicted += _prune_tenant(proto, writer, *tenant, now)
    return evicted
