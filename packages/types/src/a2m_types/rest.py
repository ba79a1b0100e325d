"""The REST binding (``/a2m/v1``): the draft's entry models, and the one mapping between an
entry and an A2M record, shared by the server's REST routes and the client's REST transport.

A2M 0.1 is the data model of record; an entry is a second view of a record. Every rule
here is stated in prose in ``docs/rest-binding.md``; keep the two in step."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from fnmatch import fnmatchcase
from typing import Any, cast

from ._rest_models import (
    DEFAULT_LIST_LIMIT,
    DEFAULT_TOP_K,
    DELETED_COUNT_HEADER,
    FLOAT32_MAX,
    KEY_PATTERN,
    MAX_KEY_LENGTH,
    MAX_LIST_LIMIT,
    MAX_NAMESPACE_LENGTH,
    MAX_TOP_K,
    MAX_TTL_SECONDS,
    MEMORY_TYPES,
    NAMESPACE_PATTERN,
    RESERVED_METADATA_KEYS,
    REST_BASE_PATH,
    REST_ERROR_STATUS,
    ROUTE_WORDS,
    Entry,
    EntryList,
    EntryMeta,
    EntryMetaWrite,
    EntryWrite,
    InvalidKey,
    InvalidNamespace,
    MemoryType,
    QueryRequest,
    RestErrorBody,
    ScoredEntry,
    a2m_code_for,
    external_reference,
    rest_error_for,
    validate_key,
    validate_namespace,
)
from ._time import format_timestamp
from .records import Record, RecordInput

__all__ = [
    "DEFAULT_LIST_LIMIT",
    "DEFAULT_TOP_K",
    "DELETED_COUNT_HEADER",
    "FLOAT32_MAX",
    "KEY_PATTERN",
    "MAX_KEY_LENGTH",
    "MAX_LIST_LIMIT",
    "MAX_NAMESPACE_LENGTH",
    "MAX_TOP_K",
    "MAX_TTL_SECONDS",
    "MEMORY_TYPES",
    "NAMESPACE_PATTERN",
    "RESERVED_METADATA_KEYS",
    "REST_BASE_PATH",
    "REST_ERROR_STATUS",
    "ROUTE_WORDS",
    "Entry",
    "EntryList",
    "EntryMeta",
    "EntryMetaWrite",
    "EntryWrite",
    "InvalidKey",
    "InvalidNamespace",
    "MemoryType",
    "QueryRequest",
    "RestErrorBody",
    "ScoredEntry",
    "a2m_code_for",
    "entry_to_record",
    "entry_to_record_input",
    "entry_type",
    "key_matches",
    "readable_text",
    "record_input_to_entry_write",
    "record_key",
    "record_to_entry",
    "rest_error_for",
    "split_record_key",
    "ttl_seconds",
    "validate_key",
    "validate_namespace",
]


def record_key(namespace: str, key: str) -> str:
    """The A2M key of the entry ``(namespace, key)``: ``"{namespace}/{key}"``."""
    return f"{validate_namespace(namespace)}/{validate_key(key)}"


def split_record_key(
    record_key: str, metadata: Mapping[str, Any] | None, hint: str | None = None
) -> tuple[str, str] | None:
    """The ``(namespace, key)`` of the record at A2M key ``record_key``, or ``None`` when
    it has none (a key without ``/`` is not visible over REST).

    ``metadata.namespace`` decides when the key lies beneath it. A record written over
    JSON-RPC carries none; it is then addressed by ``hint`` (the namespace a caller named)
    when the key lies beneath that, else by everything before the key's last ``/``."""
    stated = metadata.get("namespace") if metadata is not None else None
    candidate = stated if isinstance(stated, str) else hint
    if (
        candidate
        and record_key.startswith(candidate + "/")
        and len(record_key) > len(candidate) + 1
    ):
        return candidate, record_key[len(candidate) + 1 :]
    namespace, _, key = record_key.rpartition("/")
    if not namespace or not key:
        return None
    return namespace, key


def key_matches(pattern: str | None, key: str) -> bool:
    """Whether ``key`` matches the subscription glob ``pattern`` (``None`` matches all).

    Matching is segment by segment: ``*`` and ``?`` never cross a ``/``, so ``user/*``
    matches ``user/goal`` but not ``user/goal/city``."""
    if pattern is None:
        return True
    wanted = pattern.split("/")
    parts = key.split("/")
    return len(wanted) == len(parts) and all(
        fnmatchcase(part, glob) for part, glob in zip(parts, wanted, strict=True)
    )


# --- the mapping ----------------------------------------------------------------------


def readable_text(value: Any) -> str:
    """The text an A2M record keeps as ``content`` for ``value``: a string as it is,
    anything else as compact JSON, so lexical recall still finds its words."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def ttl_seconds(write: EntryWrite) -> int | None:
    """How long after this write the entry expires, in seconds (``None``: never)."""
    return write.meta.ttl_s if write.meta is not None else None


def entry_to_record_input(
    write: EntryWrite, namespace: str, *, tier_for_kind: Mapping[str, str] | None = None
) -> RecordInput:
    """The A2M record an entry write becomes.

    ``key`` is ``{namespace}/{key}``; ``metadata`` carries ``meta`` (server-managed times
    and nulls left out) plus ``namespace``, ``type`` and, for a value that is not a
    string, ``value``; ``content`` is readable text; ``confidence`` is also ``salience``;
    an ``external`` entry carries ``uri``. ``tier_for_kind`` maps a kind to the tier that
    holds it (``external`` lives with ``semantic``); without it, or without a tier of that
    kind, the record names no tier and the server places it."""
    metadata: dict[str, Any] = {}
    confidence: float | None = None
    if write.meta is not None:
        for name in EntryMeta.model_fields:
            item = getattr(write.meta, name)
            if name in ("created_at", "updated_at") or item is None:
                continue
            if name == "tags" and "tags" not in write.meta.model_fields_set:
                continue
            metadata[name] = item
        extra = write.meta.model_extra or {}
        metadata.update({k: v for k, v in extra.items() if k not in RESERVED_METADATA_KEYS})
        confidence = write.meta.confidence
    metadata["namespace"] = validate_namespace(namespace)
    metadata["type"] = write.type
    if not isinstance(write.value, str):
        metadata["value"] = write.value
    uri: str | None = None
    if write.type == "external":
        uri, content = external_reference(write.value)
    else:
        content = readable_text(write.value)
    kind = "semantic" if write.type == "external" else write.type
    tier = tier_for_kind.get(kind) if tier_for_kind is not None else None
    optional: dict[str, Any] = {
        "tier": tier,
        "salience": confidence,
        "embedding": write.embedding,
        "uri": uri,
    }
    # Only what is set, so the record's wire form names no null a server must ignore.
    present = {name: item for name, item in optional.items() if item is not None}
    return RecordInput.model_validate(
        {
            "content": content,
            "key": record_key(namespace, write.key),
            "metadata": metadata,
            **present,
        }
    )


def entry_type(record: Record, kind_of_tier: Mapping[str, str] | None = None) -> MemoryType:
    """An entry's type: ``external`` when the record carries a ``uri``; else the kind of
    its tier; else ``metadata.type`` when that names a kind; else ``semantic``."""
    if record.uri is not None:
        return "external"
    kind = kind_of_tier.get(record.tier) if kind_of_tier and record.tier else None
    if kind in MEMORY_TYPES:
        return cast(MemoryType, kind)
    stated = (record.metadata or {}).get("type")
    # Only a uri makes an entry external, so a filter on type can follow the same rule.
    if stated in MEMORY_TYPES and stated != "external":
        return cast(MemoryType, stated)
    return "semantic"


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _meta(record: Record, updated_at: datetime | None) -> EntryMeta:
    metadata = record.metadata or {}
    meta = {k: v for k, v in metadata.items() if k not in RESERVED_METADATA_KEYS}
    # Known fields of a record written over JSON-RPC may hold anything: keep what fits.
    for name in ("source_agent", "source_framework"):
        if not isinstance(meta.get(name), str):
            meta[name] = None
    # Tags as the store's tag filter matches them: the strings of a list, or a lone string.
    tags = meta.get("tags")
    if isinstance(tags, str):
        meta["tags"] = [tags]
    else:
        meta["tags"] = [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []
    ttl = meta.get("ttl_s")
    valid_ttl = isinstance(ttl, int) and not isinstance(ttl, bool) and 1 <= ttl <= MAX_TTL_SECONDS
    meta["ttl_s"] = ttl if valid_ttl else None
    confidence = metadata.get("confidence")
    if not (isinstance(confidence, (int, float)) and _number(confidence) and 0 <= confidence <= 1):
        # Salience 0 is the default, not a statement of doubt.
        salience = record.salience
        confidence = salience if salience is not None and 0 < salience <= 1 else None
    meta["confidence"] = None if confidence is None else float(confidence)
    meta["created_at"] = record.created_at
    meta["updated_at"] = updated_at or record.created_at
    return EntryMeta.model_validate(meta, strict=False)


def record_to_entry(
    record: Record,
    *,
    namespace_hint: str | None = None,
    kind_of_tier: Mapping[str, str] | None = None,
    updated_at: datetime | None = None,
) -> Entry | None:
    """The entry a record reads as, or ``None`` when it has no place over REST (no key,
    or a key with no namespace part).

    ``namespace_hint`` is the namespace the caller addressed (see
    :func:`split_record_key`); ``kind_of_tier`` maps tier names to kinds;
    ``updated_at`` is when the record was last written, when the reader knows."""
    if record.key is None:
        return None
    metadata = record.metadata or {}
    address = split_record_key(record.key, metadata, namespace_hint)
    if address is None:
        return None
    namespace, key = address
    kind = entry_type(record, kind_of_tier)
    if "value" in metadata:
        value = metadata["value"]
    elif kind == "external" and record.uri is not None:
        value = record.uri
    else:
        value = record.content
    return Entry(
        id=record.id,
        key=key,
        namespace=namespace,
        type=kind,
        value=value,
        embedding=record.embedding,
        meta=_meta(record, updated_at),
    )


# --- the client's direction ------------------------------------------------------------


def record_input_to_entry_write(
    record: RecordInput,
    namespace_hint: str | None = None,
    *,
    kind_of_tier: Mapping[str, str] | None = None,
) -> tuple[str, EntryWrite]:
    """The ``(namespace, entry write)`` that stores ``record`` on a REST server: the reverse
    of :func:`entry_to_record_input`, for a client writing A2M records to the draft's routes.

    - The address is the record's key split by :func:`split_record_key`
      (``metadata.namespace`` when the key lies under it, else ``namespace_hint`` when it
      does, else everything before the last ``/``); a record without a key lives at
      ``(namespace_hint, id)``.
    - The type is ``external`` for a record with a ``uri``; else the kind of its tier (by
      ``kind_of_tier``); else ``metadata.type`` when it names one of the four kinds; else
      ``semantic``.
    - The value is ``metadata.value`` when present; else, for an external record, its
      ``uri`` (or ``{"uri", "text"}`` when its content says more than the uri); else its
      ``content``. A ``content`` that is not the readable text of ``metadata.value`` is
      therefore not kept: an entry holds only its value.
    - ``meta`` is ``metadata`` without the reserved keys, plus ``confidence`` from a
      salience in (0, 1] when ``metadata`` states none.

    Fields an entry has no place for (``id`` beyond the rule above, ``role``, ``group``,
    ``owner``, ``session``, ``media_type``, and ``tier`` beyond its kind) are not carried;
    a caller that must not lose them checks first. A record that cannot be an entry (no
    namespace in its key, a bad namespace or key, a ``metadata`` field of the wrong shape
    for ``meta``) raises ``ValueError``: :class:`InvalidKey`, :class:`InvalidNamespace`,
    or pydantic's ``ValidationError``."""
    metadata = dict(record.metadata or {})
    if record.key is not None:
        address = split_record_key(record.key, metadata, namespace_hint)
        if address is None:
            raise InvalidKey(
                f"key {record.key!r} has no namespace part ('namespace/key'), so it "
                "addresses no entry"
            )
        namespace, key = address
    elif namespace_hint is not None and record.id is not None:
        namespace, key = namespace_hint, record.id
    else:
        raise InvalidKey("a record without a key needs an id and a namespace to be an entry")
    validate_namespace(namespace)
    validate_key(key)
    kind = kind_of_tier.get(record.tier) if kind_of_tier and record.tier else None
    stated = metadata.get("type")
    type_: str
    if record.uri is not None:
        type_ = "external"
    elif kind in MEMORY_TYPES and kind != "external":
        type_ = kind
    elif stated in MEMORY_TYPES and stated != "external":
        type_ = stated
    else:
        type_ = "semantic"
    value: Any
    if "value" in metadata:
        value = metadata["value"]
    elif record.uri is not None:
        said = record.content not in ("", record.uri)
        value = {"uri": record.uri, "text": record.content} if said else record.uri
    else:
        value = record.content
    meta = {k: v for k, v in metadata.items() if k not in RESERVED_METADATA_KEYS}
    salience = record.salience
    if "confidence" not in meta and salience is not None and 0 < salience <= 1:
        meta["confidence"] = salience
    write = EntryWrite.model_validate(
        {
            "key": key,
            "type": type_,
            "value": value,
            "embedding": record.embedding,
            "meta": EntryMetaWrite.model_validate(meta) if meta else None,
        }
    )
    return namespace, write


def entry_to_record(entry: Entry, *, score: float | None = None) -> Record:
    """The A2M record an entry read from a REST server stands for: what
    :func:`entry_to_record_input` makes of it, with the entry's ``id``, ``meta.created_at``
    as ``created_at``, ``meta.updated_at`` as ``updated_at`` when it is later (as the
    server's own records carry it), and ``score`` when the entry came from a query.

    ``meta`` fields at their defaults (no tags, nulls) add nothing to ``metadata``. An
    entry that cannot be a record (a bad namespace or key, an ``external`` value that is
    no reference, neither timestamp) raises ``ValueError``."""
    meta = entry.meta.model_dump(exclude_defaults=True)
    write = EntryWrite.model_validate(
        {
            "key": entry.key,
            "type": entry.type,
            "value": entry.value,
            "embedding": entry.embedding or None,
            "meta": EntryMetaWrite.model_validate(meta) if meta else None,
        }
    )
    created = entry.meta.created_at or entry.meta.updated_at
    if created is None:
        raise ValueError(f"entry {entry.key!r} carries no meta.created_at")
    wire = entry_to_record_input(write, entry.namespace).to_wire()
    wire.update(id=entry.id, created_at=format_timestamp(created))
    updated = entry.meta.updated_at
    if updated is not None and updated > created:
        wire["updated_at"] = format_timestamp(updated)
    if score is not None:
        wire["score"] = score
    return Record.model_validate(wire)
