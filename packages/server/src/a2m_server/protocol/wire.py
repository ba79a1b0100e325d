"""Stored records to wire dicts, showing only the fields of declared capabilities."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from a2m_server.store import StoredRecord
from a2m_types import format_timestamp, from_epoch_ms

__all__ = ["record_to_wire", "timestamp"]


@functools.lru_cache(maxsize=16384)
def timestamp(ms: int) -> str:
    """Epoch milliseconds as an RFC 3339 ``…Z`` string with milliseconds (§3.3); kept for
    the instants reads return again and again (a record's stamps, a batch's one
    millisecond), each of which costs a datetime and a strftime to write."""
    return format_timestamp(from_epoch_ms(ms))


def record_to_wire(
    record: StoredRecord,
    capabilities: Iterable[str],
    *,
    embeddings: bool = False,
    score: float | None = None,
) -> dict[str, Any]:
    """The record as the spec shapes it (§3.1): absent optional fields are omitted."""
    caps = capabilities if isinstance(capabilities, (set, frozenset)) else set(capabilities)
    out: dict[str, Any] = {
        "id": record.id,
        "content": record.content,
        "created_at": timestamp(record.created_at),
    }
    if record.updated_at != record.created_at:
        # Not a spec field (clients tolerate extra fields, §2): when a key was last
        # rewritten, which the REST view calls meta.updated_at.
        out["updated_at"] = timestamp(record.updated_at)
    if record.role is not None:
        out["role"] = record.role
    if record.metadata is not None:
        out["metadata"] = record.metadata
    if record.group is not None:
        out["group"] = record.group
    if "tiers" in caps and record.tier is not None:
        out["tier"] = record.tier
    if "salience" in caps:
        out["salience"] = record.salience
        out["access_count"] = record.access_count
        if record.accessed_at is not None:
            out["accessed_at"] = timestamp(record.accessed_at)
    if "scopes" in caps:
        out["owner"] = record.owner
    if "sessions" in caps:
        out["session"] = record.session
    if "keys" in caps:
        out["key"] = record.key
        if record.key is not None:
            out["revision"] = record.revision
    if "embeddings" in caps and embeddings and record.embedding is not None:
        out["embedding"] = record.embedding
    if "external" in caps:
        if record.uri is not None:
            out["uri"] = record.uri
        if record.media_type is not None:
            out["media_type"] = record.media_type
    if score is not None:
        out["score"] = score
    return out
