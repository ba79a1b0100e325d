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
from a2m_types.json_values import JSONValueError, check_json_value
from a2m_types.rest import MAX_TTL_SECONDS

from .context import CallContext
from .core import Protocol, now_ms
from .filtering import checked_where
from .hub import deletion_event
from .observations import OBSERVATION_KEY_PREFIX, audit_forgotten
from .tiers import enforce_capacity

__all__ = [
    "WriteRequest",
    "embed_missing",
    "forget",
    "prepare_write",
    "prepare_writes",
    "remember",
    "write_records",
    "written_without_vectors",
]


@dataclass
class WriteRequest:
    """One record ready to be written: validated, defaulted, owner resolved."""

    new: NewRecord
    write_id: str | None
    """The client-supplied id, which makes the write idempotent."""
    explicit_tier: bool


@dataclass(frozen=True)
class _Plan:
    """What a call's capabilities and limits make of every record it writes, read once."""

    max_content_length: int
    max_metadata_bytes: int
    tiers: bool
    home_tier: str | None
    scopes: bool
    embeddings: bool
    salience: bool
    sessions: bool
    keys: bool
    external: bool

    @classmethod
    def of(cls, proto: Protocol, ctx: CallContext) -> _Plan:
        caps = ctx.capabilities
        tiers = "tiers" in caps
        return cls(
            max_content_length=proto.config.limits.max_content_length,
            max_metadata_bytes=proto.config.limits.max_metadata_bytes,
            tiers=tiers,
            home_tier=proto.config.home_tier if tiers else None,
            scopes="scopes" in caps,
            embeddings="embeddings" in caps,
            salience="salience" in caps,
            sessions="sessions" in caps,
            keys="keys" in caps,
            external="external" in caps,
        )


def prepare_write(
    proto: Protocol,
    ctx: CallContext,
    item: RecordInput,
    *,
    default_owner: str | None,
    default_session: str | None,
    index: int,
) -> WriteRequest:
    """``item`` checked against the limits and made a :class:`WriteRequest`: defaults
    filled, fields the call's capabilities do not cover dropped, the owner resolved."""
    return _prepare(proto, ctx, _Plan.of(proto, ctx), item, default_owner, default_session, index)


def prepare_writes(
    proto: Protocol,
    ctx: CallContext,
    items: Sequence[RecordInput],
    *,
    default_owner: str | None,
    default_session: str | None,
) -> list[WriteRequest]:
    """:func:`prepare_write` for each of ``items``, the capabilities read once."""
    plan = _Plan.of(proto, ctx)
    return [
        _prepare(proto, ctx, plan, item, default_owner, default_session, index)
        for index, item in enumerate(items)
    ]


def _prepare(
    proto: Protocol,
    ctx: CallContext,
    plan: _Plan,
    item: RecordInput,
    default_owner: str | None,
    default_session: str | None,
    index: int,
) -> WriteRequest:
    content = item.content
    if len(content) > plan.max_content_length:
        maximum = plan.max_content_length
        raise ProtocolError(
            ErrorCode.QUOTA_EXCEEDED,
            f"records.{index}.content is {len(content)} characters; "
            f"max_content_length is {maximum}",
            {"limit": "max_content_length", "max": maximum, "got": len(content), "index": index},
        )
    metadata = item.metadata
    metadata_json = None if metadata is None else checked_metadata(metadata, index, plan)
    tier: str | None = None
    if item.tier is not None:
        # §4.2: silently dropping a caller's placement is a correctness bug, so tier is
        # the one record field refused, rather than ignored, without the capability.
        tier = proto.tier(ctx, item.tier, f"records.{index}.tier").name
    elif plan.tiers:
        tier = plan.home_tier
    owner = default_owner
    if plan.scopes and item.owner is not None:
        owner = proto.acting_owner(ctx, item.owner)
    key = item.key
    if plan.keys:
        refuse_reserved_key(proto, key, f"records[{index}].key")
    # The validated list itself: params are this call's own, and nothing changes them.
    embedding = item.embedding if plan.embeddings and item.embedding else None
    external = plan.external
    return WriteRequest(
        NewRecord(
            id=item.id or "",
            content=content,
            created_at=0,
            role=item.role,
            metadata=metadata,
            group=item.group,
            tier=tier,
            salience=float(item.salience or 0.0) if plan.salience else 0.0,
            owner=owner,
            session=(
                (item.session if item.session is not None else default_session)
                if plan.sessions
                else None
            ),
            key=item.key if plan.keys else None,
            embedding=embedding,
            uri=item.uri if external else None,
            media_type=item.media_type if external else None,
            metadata_json=metadata_json,
        ),
        item.id,
        item.tier is not None,
    )


def checked_metadata(metadata: dict[str, Any], index: int, plan: _Plan) -> str:
    """``records.{index}.metadata`` as the JSON text to store, refused with
    ``INVALID_PARAMS`` naming the place at fault, before anything is written, when JSON
    cannot carry it exactly, when it nests past ``MAX_JSON_DEPTH`` levels (a record every
    reader can parse and serialise) or when its text is past ``max_metadata_bytes``."""
    field = f"records.{index}.metadata"
    try:
        check_json_value(metadata, field)
        text = dump_json(metadata)
    except JSONValueError as exc:
        raise ProtocolError.invalid_params(
            f"{_short(exc.path)} {exc.reason}", index=index, field=exc.path
        ) from None
    except (ValueError, TypeError):
        # §3.1: metadata that cannot be stored fails the write; it is never dropped.
        raise ProtocolError.invalid_params(
            f"{field} holds a number out of JSON's range (such as 1e400)",
            index=index,
            field=field,
        ) from None
    limit = plan.max_metadata_bytes
    # A character is at most four bytes: most metadata is settled without encoding it.
    if len(text) * 4 > limit:
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > limit:
            raise ProtocolError.invalid_params(
                f"{field} is {size} bytes as JSON; max_metadata_bytes is {limit}",
                index=index,
                field=field,
                limit="max_metadata_bytes",
                max=limit,
                got=size,
            )
    return text


def _short(path: str) -> str:
    """A path short enough for a message (the error's data carries it whole)."""
    return path if len(path) <= 160 else f"{path[:100]}…{path[-50:]}"


def _expiry(metadata: dict[str, Any] | None, now: int) -> int | None:
    """When a record expires: ``metadata.ttl_s`` seconds after it was last written.

    Not part of A2M 0.1: this server's convention, shared by every binding (REST's
    ``meta.ttl_s`` travels as exactly this key), so an upsert refreshes the TTL."""
    ttl = (metadata or {}).get("ttl_s")
    if isinstance(ttl, int) and not isinstance(ttl, bool) and 0 < ttl <= MAX_TTL_SECONDS:
        return now + ttl * 1000
    return None


def embed_missing(proto: Protocol, requests: Sequence[WriteRequest]) -> bool:
    """With a server-side embedder, a vector for every record that came without one: one
    embedder call for the batch, before any write (a failure writes nothing). True when
    the embedder failed and records go without (``embed_failures = "lexical"``): call
    :func:`written_without_vectors` once they are written."""
    if proto.embedding is not None and "embeddings" in proto.config.capabilities:
        return proto.embedding.embed_records([request.new for request in requests])
    return False


def written_without_vectors(proto: Protocol) -> None:
    """Records the embedder failed on are written: have the back-fill take them."""
    if proto.embedding is not None:
        proto.embedding.wake()


def _check_widths(
    writer: StoreWriter,
    requests: Sequence[WriteRequest],
    model: str | None = None,
    model_width: int | None = None,
) -> None:
    """§3.7: the first vector fixes the width; any other width is EMBEDDING_MISMATCH. The
    store takes the width of the first vector it is given, and again once no record
    carries a vector any more; with a server-side embedder, the width of its model
    (``model_width``), named in the error."""
    stored = writer.dimensions()
    widths = {len(vector) for r in requests if (vector := r.new.embedding) is not None}
    if not widths:
        return
    if (
        stored is not None
        and model_width is None
        and widths != {stored}
        and not writer.holds_vectors()
    ):
        stored = None  # every vector is gone (§3.7: a width is fixed by a vector stored)
    fixed = stored if stored is not None else model_width
    if len(widths) == 1 and (fixed is None or fixed in widths):
        if stored is None:
            writer.set_dimensions(widths.pop())
        return
    width = fixed
    for index, request in enumerate(requests):
        vector = request.new.embedding
        if vector is None:
            continue
        if width is None:
            width = len(vector)
        elif len(vector) != width:
            speaks = f" (model {model!r})" if model else ""
            data: dict[str, Any] = {"expected": width, "got": len(vector), "index": index}
            if model:
                data["model"] = model
            raise ProtocolError(
                ErrorCode.EMBEDDING_MISMATCH,
                f"records.{index}.embedding has {len(vector)} dimensions; this store's "
                f"vectors have {width}{speaks}",
                data,
            )
    raise AssertionError("unreachable: the widths differ, so one of them mismatched")


def refuse_reserved_key(proto: Protocol, key: str | None, field: str) -> None:
    """INVALID_PARAMS for a core write at a key under ``observation/`` while the
    extension is on: only its audited paths write there (docs/observations.md §1)."""
    reserved = key is not None and (
        key == OBSERVATION_KEY_PREFIX.rstrip("/") or key.startswith(OBSERVATION_KEY_PREFIX)
    )
    if reserved and proto.extensions:
        raise ProtocolError.invalid_params(
            f"{field}: keys under {OBSERVATION_KEY_PREFIX!r} belong to observations; write "
            "them with memory/observations/remember or update",
            field=field,
        )


def _place_in_group(
    writer: StoreWriter, request: WriteRequest, replacing: StoredRecord | None
) -> bool:
    """Keep a group in one tier (§3.4): a new member, or a record replacing one at its key,
    joins its group's tier. Whether the group's other members decided the tier."""
    new = request.new
    if new.group is None or new.tier is None:
        return False
    members = writer.select(RecordFilter(groups=[(new.owner, new.group)]), limit=2)
    existing = [r for r in members if replacing is None or r.id != replacing.id][:1]
    if not existing:
        return False
    if existing[0].tier == new.tier:
        return True
    if request.explicit_tier:
        raise ProtocolError.invalid_params(
            f"group {new.group!r} lives in tier {existing[0].tier!r}; write its records "
            f"there, or promote the group to {new.tier!r} first",
            group=new.group,
            tier=existing[0].tier,
        )
    new.tier = existing[0].tier
    return True


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
    news = [r.new for r in requests]
    write_ids = [r.write_id for r in requests if r.write_id is not None]
    keyed = [i for i, new in enumerate(news) if new.key is not None]
    keys = [(news[i].owner, news[i].key or "") for i in keyed]
    if (
        any(new.group is not None for new in news)
        or len(set(write_ids)) < len(write_ids)
        or len({(owner or "", key) for owner, key in keys}) < len(keys)
        # one C-speed scan for a NUL in any id, key or owner
        or "\x00" in "".join(write_ids)
        or "\x00" in "".join(key + (owner or "") for owner, key in keys)
    ):
        return None
    current: list[StoredRecord | None] = [None] * len(requests)
    if keyed:
        for index, record in zip(keyed, writer.get_by_keys(keys), strict=True):
            current[index] = record
    return _Lookups(writer.resolve_write_ids(write_ids), current)


def write_records(
    proto: Protocol, ctx: CallContext, writer: StoreWriter, requests: Sequence[WriteRequest]
) -> list[str]:
    """Write prepared records inside ``writer``'s transaction; returns one id per record.

    A client id already seen returns the record it produced, unchanged (§3.2); a key
    already held by the owner is replaced in place (§3.6)."""
    embedder = proto.embedding.embedder if proto.embedding is not None else None
    _check_widths(
        writer, requests, proto.embedding_model, embedder.dimensions if embedder else None
    )
    now = now_ms()
    known = _look_up(writer, requests)
    touched_tiers: set[str] = set()
    if known is not None and not known.landed and known.current.count(None) == len(requests):
        # The usual batch: every record new, none replacing a key or already written.
        news = [request.new for request in requests]
        ids = _insert_new(writer, news, now)
        touched_tiers.update(new.tier for new in news if new.tier is not None)
    else:
        ids = _write_one_by_one(proto, writer, requests, known, now, touched_tiers)
    if "tiers" in ctx.capabilities and touched_tiers:
        enforce_capacity(proto, writer, touched_tiers)
    return ids


def _insert_new(writer: StoreWriter, news: list[NewRecord], now: int) -> list[str]:
    """Insert ``news``, none of them replacing a record, with one ``written`` event each:
    one pass over the batch, then one insert and one event append for all of it."""
    events: list[tuple[str, int, dict[str, Any], str | None, str | None]] = []
    append = events.append
    for new in news:
        new.created_at = now
        metadata = new.metadata
        new.expires_at = _expiry(metadata, now) if metadata and "ttl_s" in metadata else None
        if not new.id:
            new.id = new_id()
        tier, session, key = new.tier, new.session, new.key
        payload: dict[str, Any] = {"id": new.id}
        if tier is not None:
            payload["tier"] = tier
        if session is not None:
            payload["session"] = session
        if key is not None:
            payload["key"] = key
            payload["revision"] = 0
        append(("written", now, payload, new.owner, tier))
    writer.insert(news)
    writer.append_events(events)
    return [new.id for new in news]


def _write_one_by_one(
    proto: Protocol,
    writer: StoreWriter,
    requests: Sequence[WriteRequest],
    known: _Lookups | None,
    now: int,
    touched_tiers: set[str],
) -> list[str]:
    """The general case: records replacing what a key holds, repeating a client id, in a
    group, or in a batch that could not be looked up at once, in order. Adds the tier of
    each record written to ``touched_tiers``."""
    ids: list[str] = []
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
            _check_owner_of_landed(writer, landed, new.owner, index)
            ids.append(landed)
            continue
        new.created_at = now
        new.expires_at = _expiry(new.metadata, now)
        grouped = False
        if known is None:
            current = writer.get_by_key(new.owner, new.key) if new.key is not None else None
            grouped = _place_in_group(writer, request, current)
            if new.group is not None:
                # Kept or discarded together (§3.4): the group takes the expiry of its
                # latest write, so no member outlives another.
                writer.set_group_expiry(new.owner, new.group, new.expires_at)
        if current is not None:
            if not request.explicit_tier and not grouped:
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
    return ids


def _check_owner_of_landed(
    writer: StoreWriter, record_id: str, owner: str | None, index: int
) -> None:
    """A client id already written is the same write repeated (§3.2) only for the owner
    who wrote it: naming another owner's record is refused, never answered with its id
    as though stored (that would lose the write and reveal the record)."""
    found = writer.get([record_id])
    if found and found[0].owner != owner:
        raise ProtocolError(
            ErrorCode.SCOPE_DENIED,
            f"records.{index}.id is taken by a record this caller may not write; "
            "choose another id (or none, and the server assigns one)",
            {"index": index, "field": f"records.{index}.id"},
        )


def remember(proto: Protocol, ctx: CallContext, params: RememberParams) -> dict[str, Any]:
    """§4.2: write every record or none."""
    proto.ensure_writable("memory/remember")
    maximum = proto.config.limits.max_records_per_call
    if len(params.records) > maximum:
        raise ProtocolError.quota("max_records_per_call", maximum, len(params.records))
    default_owner = proto.acting_owner(ctx, params.owner)
    requests = prepare_writes(
        proto, ctx, params.records, default_owner=default_owner, default_session=params.session
    )
    unembedded = embed_missing(proto, requests)
    with proto.transaction() as writer:
        ids = write_records(proto, ctx, writer, requests)
    if unembedded:
        written_without_vectors(proto)
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
            targets = writer.get([hit.id for hit in matches])
        else:
            targets = writer.select(selector)
        forgotten = writer.delete([record.id for record in targets])
        audit_forgotten(writer, targets, owner or ctx.principal or "local")
        payload, event_owner, event_tier = deletion_event(targets, owner)
        writer.append_event("forgotten", now_ms(), payload, event_owner, event_tier)
    return {"forgotten": forgotten}
