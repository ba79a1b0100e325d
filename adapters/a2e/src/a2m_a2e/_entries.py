"""One A2E ``MemoryEntry`` and the A2M record it is stored as, following the record
conventions every adapter shares (``a2m.adapter``): readable text in ``content``, the exact
JSON in ``metadata.value``, the tier as ``metadata.type``, provenance and tags in
``metadata``, so the records read as entries through every other adapter, and back."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from a2m_types import Record
from a2m_types.json_values import JSONValueError, check_json_value, is_utf8_text
from a2m_types.rest import MAX_TTL_SECONDS, split_record_key

from ._keys import decode_key, encode_key
from ._messages import TIERS

__all__ = [
    "Entry",
    "EntryRefused",
    "check_json",
    "entry_of",
    "json_size",
    "parse_entry",
    "record_of",
    "score_of",
    "searchable_text",
    "tier_of",
]

SOURCE_FRAMEWORK = "a2e"
MEMORY_FIELD = "a2e_memory"
"""``metadata`` key naming the memory session a working entry belongs to."""


class EntryRefused(ValueError):
    """One store entry that cannot be written; the message names the field, never the
    content."""


def check_json(value: Any, *, max_depth: int) -> None:
    """Refuse ``value`` unless it is JSON A2M carries exactly (finite numbers, string keys,
    text without lone surrogates) nested at most ``max_depth`` deep: the one check every
    adapter shares (:mod:`a2m_types.json_values`), iterative, so a 10,000-deep value is
    refused, not a ``RecursionError``."""
    try:
        check_json_value(value, "content", max_depth=max_depth)
    except JSONValueError as exc:
        raise EntryRefused(str(exc)) from None


def json_size(value: Any) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON: what an entry counts against quotas."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


@dataclass(frozen=True)
class Entry:
    """A validated store entry, ready to become a record."""

    key: dict[str, Any]
    entry_key: str
    content: Any
    tier: str
    tags: list[str]
    source: str
    score: float
    ttl: int
    size: int
    embedding: list[float] | None
    text: str
    """The record's ``content``: see :func:`searchable_text`."""


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_entry(raw: Any, *, max_depth: int, max_entry_bytes: int) -> Entry:
    """The entry ``raw`` describes, or :class:`EntryRefused` saying what is wrong."""
    if not isinstance(raw, Mapping):
        raise EntryRefused("an entry must be an object")
    for name in ("key", "content", "tier"):
        if name not in raw:
            raise EntryRefused(f"an entry needs {name!r}")
    key = raw["key"]
    if not isinstance(key, Mapping):
        raise EntryRefused("'key' must be an object")
    check_json(dict(key), max_depth=8)
    try:
        entry_key = encode_key(key)
    except ValueError as exc:
        raise EntryRefused(str(exc)) from None
    tier = raw["tier"]
    if tier not in TIERS:
        raise EntryRefused(f"'tier' must be one of {', '.join(TIERS)}")
    tags = raw.get("tags", [])
    if not isinstance(tags, list) or not all(
        isinstance(tag, str) and is_utf8_text(tag) for tag in tags
    ):
        raise EntryRefused("'tags' must be a list of strings of text (no lone surrogate)")
    source = raw.get("source", "")
    if not isinstance(source, str) or not is_utf8_text(source):
        raise EntryRefused("'source' must be a string of text (no lone surrogate)")
    score = raw.get("score", 1.0)
    if not _number(score) or not 0.0 <= score <= 1.0:
        raise EntryRefused("'score' must be a number from 0.0 to 1.0")
    ttl = raw.get("ttl", 0)
    if not isinstance(ttl, int) or isinstance(ttl, bool) or not 0 <= ttl <= MAX_TTL_SECONDS:
        raise EntryRefused(f"'ttl' must be an integer from 0 to {MAX_TTL_SECONDS}")
    embedding = raw.get("embedding")
    if embedding is not None and (
        not isinstance(embedding, list)
        or not embedding
        or not all(_number(x) and math.isfinite(x) for x in embedding)
    ):
        raise EntryRefused("'embedding' must be a non-empty list of finite numbers")
    content = raw["content"]
    check_json(content, max_depth=max_depth)
    compact = json.dumps(content, ensure_ascii=False, separators=(",", ":"))
    size = len(compact.encode())
    if size > max_entry_bytes:
        raise EntryRefused(f"content is {size} bytes; at most {max_entry_bytes} are allowed")
    return Entry(
        key=dict(key),
        entry_key=entry_key,
        content=content,
        tier=tier,
        tags=list(dict.fromkeys(tags)),
        source=source,
        score=float(score),
        ttl=ttl,
        size=size,
        embedding=None if embedding is None else [float(x) for x in embedding],
        text=searchable_text(
            content if isinstance(content, str) else compact, dict(key), list(dict.fromkeys(tags))
        ),
    )


def searchable_text(readable: str, key: Mapping[str, Any], tags: list[str]) -> str:
    """A record's ``content``: the entry's readable text (a string as it is, anything else
    as compact JSON), then its key and tags as words, so a query naming a tag or a key part
    finds it."""
    words = [f"{name} {value}" for name, value in key.items()]
    parts = [readable, "; ".join(words)]
    if tags:
        parts.append(" ".join(tags))
    return "\n".join(parts)


def record_of(
    entry: Entry,
    *,
    namespace: str,
    memory_id: str,
    agent: str | None,
    tier_name: str | None,
    fields: frozenset[str],
) -> dict[str, Any]:
    """The ``memory/remember`` record for ``entry``; ``fields`` are the optional record
    fields the server keeps (``owner``, ``session``, ``salience``, ``embedding``)."""
    metadata: dict[str, Any] = {
        "namespace": namespace,
        "type": entry.tier,
        "value": entry.content,
        "tags": entry.tags,
        "source": entry.source,
        "confidence": entry.score,
        "source_framework": SOURCE_FRAMEWORK,
        MEMORY_FIELD: memory_id,
    }
    if agent is not None:
        metadata["source_agent"] = agent
    if entry.ttl:
        metadata["ttl_s"] = entry.ttl
    record: dict[str, Any] = {
        "content": entry.text,
        "key": f"{namespace}/{entry.entry_key}",
        "metadata": metadata,
        "role": "memory",
    }
    if tier_name is not None:
        record["tier"] = tier_name
    if "salience" in fields:
        record["salience"] = entry.score
    if agent is not None and "owner" in fields:
        record["owner"] = agent
    if "session" in fields:
        record["session"] = memory_id
    if entry.embedding is not None and "embedding" in fields:
        record["embedding"] = entry.embedding
    return record


def tier_of(record: Record, kind_of_tier: Mapping[str, str]) -> str:
    """The A2E tier of a record: as written by this host, else its A2M tier's kind, else
    ``semantic`` (procedural and external knowledge is shared knowledge)."""
    stated = (record.metadata or {}).get("type")
    if stated in TIERS:
        return str(stated)
    kind = kind_of_tier.get(record.tier or "")
    return kind if kind in TIERS else "semantic"


def key_of(record: Record) -> dict[str, Any]:
    """The composite key of a record: decoded when this host wrote it, else the record's
    A2M address (``{"a2m_key": …}``, or ``{"a2m_id": …}`` for a record with no key)."""
    if record.key is None:
        return {"a2m_id": record.id}
    address = split_record_key(record.key, record.metadata)
    decoded = decode_key(address[1]) if address is not None else None
    return decoded if decoded is not None else {"a2m_key": record.key}


def _epoch(stamp: Any, fallback: datetime) -> float:
    if isinstance(stamp, str):
        try:
            return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return fallback.timestamp()


def entry_of(
    record: Record, kind_of_tier: Mapping[str, str], *, embeddings: bool = False
) -> dict[str, Any]:
    """The ``MemoryEntry`` dict a record reads as; the vector only when ``embeddings``."""
    metadata = record.metadata or {}
    tags = metadata.get("tags")
    source = metadata.get("source")
    if not isinstance(source, str):
        # a record another framework wrote: its provenance is where it came from
        writer = metadata.get("source_framework")
        agent = metadata.get("source_agent")
        source = "/".join(str(part) for part in (writer, agent) if isinstance(part, str))
    ttl = metadata.get("ttl_s")
    entry: dict[str, Any] = {
        "key": key_of(record),
        "content": metadata.get("value", record.content),
        "tier": tier_of(record, kind_of_tier),
        "tags": [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else [],
        "source": source,
        "score": score_of(record),
        "ttl": ttl if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl > 0 else 0,
        "created_at": record.created_at.timestamp(),
        "updated_at": _epoch((record.model_extra or {}).get("updated_at"), record.created_at),
    }
    if embeddings and record.embedding is not None:
        entry["embedding"] = record.embedding
    return entry


def score_of(record: Record) -> float:
    """An entry's importance: the ``confidence`` written with it, else the record's
    salience when that is in (0, 1], else the seed's default 1.0."""
    stated = (record.metadata or {}).get("confidence")
    if isinstance(stated, (int, float)) and not isinstance(stated, bool) and 0 <= stated <= 1:
        return float(stated)
    salience = record.salience
    return float(salience) if salience is not None and 0.0 < salience <= 1.0 else 1.0
