"""Writing and deleting records: ``memory/remember`` (§4.2, with ids §3.2, keys §3.6,
embeddings §3.7, groups §3.4) and ``memory/forget`` (§4.5)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from a2m_server.errors import ProtocolError
from a2m_server.store import NewRecord, RecordFilter, StoredRecord, StoreWriter, dump_json
from a2m_server.text import query_terms
from a2m_types import ErrorCode, ForgetParams, RecordInput, RememberParams, new_id
from a2m_types.rest import MAX_TTL_SECONDS

from .context import CallContext
from .core import Protocol, now_ms
from .filtering import checked_where
from .hub import deletion_event
from .tiers import enforce_capacity

__all__ = ["WriteRequest", "forget", "prepare_write", "remember", "write_records"]


@dataclass
class WriteRequest:
    """One record ready to be written: validated, defaulted, owner resolved."""

    new: NewRecord
    write_id: str | None
    """The client-supplied id, which makes the write idempotent."""
    explicit_tier: bool


def prepare_write(
    proto: Protocol,
    ctx: CallContext,
    item: RecordInput,
    *,
    default_owner: str | None,
    default_session: str | None,
    index: int,
) -> WriteRequest:
    caps = ctx.capabilities
    limits = proto.config.limits
    if len(item.content) > limits.max_content_length:
        raise ProtocolError(
            ErrorCode.QUOTA_EXCEEDED,
            f"records.{index}.content is {len(item.content)} characters; "
            f"max_content_length is {limits.max_content_length}",
            {
                "limit": "max_content_length",
                "max": limits.max_content_length,
                "got": len(item.content),
                "index": index,
            },
        )
    metadata_json: str | None = None
    if item.metadata is not None:
        try:
            metadata_json = dump_json(item.metadata)
        except ValueError:
            # §3.1: metadata that cannot be stored fails the write; it is never dropped.
            raise ProtocolError.invalid_params(
                f"records.{index}.metadata holds a number out of JSON's range (such as 1e400)",
                index=index,
            ) from None
    tier: str | None = None
    if item.tier is not None:
        # §4.2: silently dropping a caller's placement is a correctness bug, so tier is
        # the one record field refused, rather than ignored, without the capability.
        tier = proto.tier(ctx, item.tier, f"records.{index}.tier").name
    elif "tiers" in caps:
        tier = proto.config.home_tier
    owner = default_owner
    if "scopes" in caps and item.owner is not None:
        owner = proto.acting_owner(ctx, item.owner)
    # The validated list itself: params are this call's own, and nothing changes them.
    embedding = item.embedding if "embeddings" in caps and item.embedding else None
    return WriteRequest(
        new=NewRecord(
            id=item.id or "",
            content=item.content,
            created_at=0,
            role=item.role,
            metadata=item.metadata,
            group=item.group,
            tier=tier,
            salience=float(item.salience or 0.0) if "salience" in caps else 0.0,
            owner=owner,
            session=(item.session or default_session) if "sessions" in caps else None,
            key=item.key if "keys" in caps else None,
            embedding=embedding,
            uri=item.uri if "external" in caps else None,
            media_type=item.media_type if "external" in caps else None,
            metadata_json=metadata_json,
        ),
        write_id=item.id,
        explicit_tier=item.tier is not None,
    )


def _expiry(metadata: dict[str, Any] | None, now: int) -> int | None:
    """When a record expires: ``metadata.ttl_s`` seconds after it was last written.

    Not part of A2M 0.1: this server's convention, shared by every binding (REST's
    ``meta.ttl_s`` travels as exactly this key), so an upsert refreshes the TTL."""
    ttl = (metadata or {}).get("ttl_s")
    if isinstance(ttl, int) and not isinstance(ttl, bool) and 0 < ttl <= MAX_TTL_SECONDS:
        return now + ttl * 1000
    return None


def _check_widths(writer: StoreWriter, requests: Sequence[WriteRequest]) -> int | None:
    """§3.7: the first vector fixes the width; any other width is EMBEDDING_MISMATCH."""
    width = writer.dimensions()
    for index, request in enumerate(requests):
        vector = request.new.embedding
        if vector is None:
            continue
        if width is None:
            width = len(vector)
        elif len(vector) != width:
            raise ProtocolError(
                ErrorCode.EMBEDDING_MISMATCH,
                f"records.{index}.embedding has {len(vector)} dimensions; this store's "
                f"vectors have {width}",
                {"expected": width, "got": len(vector), "index": index},
            )
    return width


def _place_in_group(proto: Protocol, writer: StoreWriter, request: WriteRequest) -> None:
    """Keep a group in one tier (§3.4): a new member joins its group's tier."""
    new = request.new
    if new.group is None or new.tier is None:
        return
    existing = writer.select(RecordFilter(groups=[(new.owner, new.group)]), limit=1)
    if not existing or existing[0].tier == new.tier:
        return
    if request.explicit_tier:
        raise ProtocolError.invalid_params(
            f"group {new.group!r} lives in tier {existing[0].tier!r}; write its records "
            f"there, or promote the group to {new.tier!r} first",
            group=new.group,
            tier=existing[0].tier,
        )
    new.tier = existing[0].tier


@dataclass
class _Lookups:
    """What a batch's client ids and keys already hold, looked up for the whole batch."""

    landed: dict[str, str]
    """Client id → the record it already produced."""
    current: list[StoredRecord | None]
    """Per request: the live record its owner holds at its key."""


def _look_up(writer: StoreWriter, requests: Sequence[WriteRequest]) -> _Lookups | None:
    """Every client id and key of the batch, looked up at once; ``None`` when one record
    of it could change what another finds (a repeated id or key, or a group, whose tier
    follows its members), so they must be looked up one after another.

    Also ``None`` when an id, key or owner holds a NUL character: a store may pass a batch
    lookup's values as one JSON text, and SQLite's JSON functions end a string at NUL."""
    write_ids = [r.write_id for r in requests if r.write_id is not None]
    keys = [(r.new.owner or "", r.new.key) for r in requests if r.new.key is not None]
    if (
        any(r.new.group is not None for r in requests)
        or len(set(write_ids)) < len(write_ids)
        or len(set(keys)) < len(keys)
        or any("\x00" in value for value in write_ids)
        or any("\x00" in owner or "\x00" in key for owner, key in keys)
    ):
        return None
    keyed = [i for i, r in enumerate(requests) if r.new.key is not None]
    found = writer.get_by_keys([(requests[i].new.owner, requests[i].new.key or "") for i in keyed])
    current: list[StoredRecord | None] = [None] * len(requests)
    for index, record in zip(keyed, found, strict=True):
        current[index] = record
    return _Lookups(writer.resolve_write_ids(write_ids), current)


def write_records(
    proto: Protocol, ctx: CallContext, writer: StoreWriter, requests: Sequence[WriteRequest]
) -> list[str]:
    """Write prepared records inside ``writer``'s transaction; returns one id per record.

    A client id already seen returns the record it produced, unchanged (§3.2); a key
    already held by the owner is replaced in place (§3.6)."""
    width = _check_widths(writer, requests)
    if width is not None and writer.dimensions() is None:
        writer.set_dimensions(width)
    now = now_ms()
    ids: list[str] = []
    touched_tiers: set[str] = set()
    known = _look_up(writer, requests)
    # New records are inserted together, with their events, and the batch is flushed
    # before anything that must see it: a key replacement, a group, or (when the batch
    # could not be looked up at once) any key or client id.
    pending: list[NewRecord] = []
    pending_ids: set[str] = set()
    events: list[tuple[str, int, dict[str, Any], str | None, str | None]] = []

    def flush() -> None:
        writer.insert(pending)
        writer.append_events(events)
        pending.clear()
        pending_ids.clear()
        events.clear()

    for index, request in enumerate(requests):
        new = request.new
        landed: str | None = None
        current: StoredRecord | None = None
        if known is not None:
            current = known.current[index]
            plain = current is None
            if not plain:
                flush()
            if request.write_id is not None:
                landed = known.landed.get(request.write_id)
        else:
            plain = new.key is None and new.group is None
            if not plain or (request.write_id is not None and request.write_id in pending_ids):
                flush()
            if request.write_id is not None:
                landed = writer.resolve_write_id(request.write_id)
        if landed is not None:
            ids.append(landed)
            continue
        new.created_at = now
        new.expires_at = _expiry(new.metadata, now)
        if known is None:
            _place_in_group(proto, writer, request)
            current = writer.get_by_key(new.owner, new.key) if new.key is not None else None
        if current is not None:
            if not request.explicit_tier:
                new.tier = current.tier
            stored = writer.replace(current.id, new)
            if request.write_id is not None and request.write_id != current.id:
                writer.remember_write_id(request.write_id, current.id)
            record_id, revision = current.id, stored.revision
        else:
            if not new.id:
                new.id = new_id()
            pending.append(new)
            pending_ids.add(new.id)
            record_id, revision = new.id, 0
        ids.append(record_id)
        if new.tier is not None:
            touched_tiers.add(new.tier)
        payload: dict[str, Any] = {"id": record_id}
        if new.tier is not None:
            payload["tier"] = new.tier
        if new.session is not None:
            payload["session"] = new.session
        if new.key is not None:
            payload["key"] = new.key
            payload["revision"] = revision
        events.append(("written", now, payload, new.owner, new.tier))
        if not plain:
            flush()
    flush()
    if "tiers" in ctx.capabilities and touched_tiers:
        enforce_capacity(proto, writer, touched_tiers)
    return ids


def remember(proto: Protocol, ctx: CallContext, params: RememberParams) -> dict[str, Any]:
    """§4.2: write every record or none."""
    proto.ensure_writable("memory/remember")
    maximum = proto.config.limits.max_records_per_call
    if len(params.records) > maximum:
        raise ProtocolError.quota("max_records_per_call", maximum, len(params.records))
    default_owner = proto.acting_owner(ctx, params.owner)
    requests = [
        prepare_write(
            proto,
            ctx,
            item,
            default_owner=default_owner,
            default_session=params.session,
            index=index,
        )
        for index, item in enumerate(params.records)
    ]
    with proto.transaction() as writer:
        ids = write_records(proto, ctx, writer, requests)
    return {"ids": ids}


def forget(proto: Protocol, ctx: CallContext, params: ForgetParams) -> dict[str, Any]:
    """§4.5: delete what every given selector matches; no selector at all is refused."""
    proto.ensure_writable("memory/forget")
    proto.require_selector(
        "memory/forget", params, "deleting a whole store must be more deliberate than that"
    )
    if params.tier is not None:
        proto.tier(ctx, params.tier)
    owner = proto.acting_owner(ctx, params.owner)
    selector = RecordFilter(
        ids=params.ids,
        tier=params.tier,
        where=checked_where(proto.config, params.where),
        key_prefix=params.key_prefix,
        scope=proto.write_scope(owner),
    )
    with proto.transaction() as writer:
        if params.query:
            terms = query_terms(params.query, keep_stop_words=True)
            # Forget takes what mentions *every* term: deleting is no place for "any of".
            matches = writer.lexical(selector, terms, None, match_all=True) if terms else []
            targets = writer.get([record_id for record_id, _ in matches])
        else:
            targets = writer.select(selector)
        forgotten = writer.delete([record.id for record in targets])
        payload, event_owner, event_tier = deletion_event(targets, owner)
        writer.append_event("forgotten", now_ms(), payload, event_owner, event_tier)
    return {"forgotten": forgotten}
