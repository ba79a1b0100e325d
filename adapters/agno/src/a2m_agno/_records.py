"""How an Agno ``UserMemory`` is an A2M entry, and Agno's memory-table semantics (filters,
sorting, paging, stats) applied to the rows read back. Pure functions: the sync and the
async database share them, so the two cannot drift apart.

Where Agno's own backends disagree, these follow ``SqliteDb`` (Agno's SQL backends):
``topics`` selects memories carrying *every* topic given; on a first write ``updated_at``
is the memory's own or else its ``created_at`` (PostgresDb's rule, a superset of SQLite's);
a rewrite keeps ``created_at``; ``None`` sorts lowest. ``search_content`` is a literal,
case-insensitive substring (as ``InMemoryDb``; SQL ``ILIKE`` would treat ``%``/``_`` as
wildcards). Ties in a sort keep the order memories were first written in."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import uuid4

from agno.db.schemas.memory import UserMemory
from agno.db.utils import validate_pagination

from a2m import InvalidParams
from a2m.adapter import Entry
from a2m_types import Record, parse_timestamp

SOURCE_FRAMEWORK = "agno"
KIND_KEY = "agno_kind"
USER_MEMORY = "user_memory"

COLUMNS = (
    "memory_id",
    "memory",
    "input",
    "agent_id",
    "team_id",
    "user_id",
    "topics",
    "feedback",
    "created_at",
    "updated_at",
)
"""The memory table's columns, in ``SqliteDb``'s order: a row dict has exactly these."""

_META_FIELDS = ("user_id", "agent_id", "team_id", "topics", "input", "feedback")
# A2M keeps its own record times; Agno's are the caller's (epoch seconds) and must survive.
_CREATED = "memory_created_at"
_UPDATED = "memory_updated_at"

PROVENANCE = ("source_framework", "source_agent", "namespace", "key", "a2m_id")
"""Extra keys of a row read from another framework's entry (``deserialize=False``)."""


def now() -> int:
    """The current time in epoch seconds, as Agno stamps ``updated_at``."""
    return int(time.time())


def id_text(memory_id: Any) -> str | None:
    """A memory id as the text it is stored under: a string as it is, an integer as its
    digits (as ``SqliteDb`` stores one); ``None`` for anything else."""
    if isinstance(memory_id, str):
        return memory_id
    if isinstance(memory_id, int) and not isinstance(memory_id, bool):
        return str(memory_id)
    return None


def ensure_id(memory: UserMemory) -> str:
    """The memory's id, assigning a fresh one first as Agno's backends do; an integer id
    becomes its digits, any other kind is refused before anything is sent."""
    if memory.memory_id is None:
        memory.memory_id = str(uuid4())
    text = id_text(memory.memory_id)
    if text is None:
        raise InvalidParams(
            f"memory_id must be a string (or an integer, stored as its digits, as SqliteDb "
            f"stores it); got {type(memory.memory_id).__name__} {memory.memory_id!r}. "
            "Nothing was sent"
        )
    memory.memory_id = text
    return text


def memory_entry(
    memory: UserMemory, *, created_at: int | None, updated_at: int | None
) -> dict[str, Any]:
    """The entry write (``key``, ``type``, ``value``, ``meta``) holding ``memory``: the
    text is the value (so every framework's recall finds its words), the other fields
    are metadata, topics are also tags."""
    meta: dict[str, Any] = {KIND_KEY: USER_MEMORY}
    for name in _META_FIELDS:
        value = getattr(memory, name)
        if value is not None:
            meta[name] = list(value) if name == "topics" else value
    source_agent = memory.agent_id or memory.team_id
    if source_agent is not None:
        meta["source_agent"] = source_agent
    if memory.topics:
        meta["tags"] = [str(topic) for topic in memory.topics]
    meta[_CREATED] = created_at
    meta[_UPDATED] = updated_at
    return {
        "key": ensure_id(memory),
        "type": "semantic",
        "value": memory.memory,
        "meta": {k: v for k, v in meta.items() if v is not None},
    }


def stamps(
    memory: UserMemory, existing: Mapping[str, Any] | None, *, updated_at: int | None
) -> tuple[int | None, int | None]:
    """``(created_at, updated_at)`` a write of ``memory`` stores, given the row already at
    its id (``None``: a first write) and the ``updated_at`` the caller's method imposes
    (``None``: keep the memory's own)."""
    if existing is not None:
        created = existing.get("created_at")
        return (created if created is not None else memory.created_at), (updated_at or now())
    stated = updated_at if updated_at is not None else memory.updated_at
    return memory.created_at, stated if stated is not None else memory.created_at


def _epoch(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, datetime):
        return int(value.timestamp())
    return None


def is_own(entry: Entry) -> bool:
    """Whether ``entry`` is an Agno user memory written by this adapter."""
    return (entry.meta.model_extra or {}).get(KIND_KEY) == USER_MEMORY


def row(entry: Entry) -> dict[str, Any]:
    """The memory-table row of an Agno memory entry this adapter wrote."""
    extra = entry.meta.model_extra or {}
    topics = extra.get("topics")
    return {
        "memory_id": entry.key,
        "memory": entry.value,
        "input": extra.get("input"),
        "agent_id": extra.get("agent_id"),
        "team_id": extra.get("team_id"),
        "user_id": extra.get("user_id"),
        "topics": list(topics) if isinstance(topics, list) else None,
        "feedback": extra.get("feedback"),
        "created_at": _epoch(extra.get(_CREATED)),
        "updated_at": _epoch(extra.get(_UPDATED)),
    }


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def foreign_row(record: Record) -> dict[str, Any] | None:
    """The memory-table row of a record another framework (or a raw client) wrote: its
    text, tags as topics, its agent, its A2M times, and its provenance in the extra keys
    :data:`PROVENANCE`. ``None`` for what this adapter wrote itself (memories, chunks)."""
    metadata = record.metadata or {}
    if KIND_KEY in metadata:
        return None
    tags = metadata.get("tags")
    topics = [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []
    agent = _text(metadata.get("source_agent")) or record.owner
    stamp = (record.model_extra or {}).get("updated_at")
    created = _epoch(record.created_at)
    updated = _epoch(parse_timestamp(stamp)) if isinstance(stamp, str) else created
    return {
        "memory_id": record.id,
        "memory": record.content,
        "input": None,
        "agent_id": agent,
        "team_id": None,
        "user_id": _text(metadata.get("user_id")),
        "topics": topics or None,
        "feedback": None,
        "created_at": created,
        "updated_at": updated,
        "source_framework": _text(metadata.get("source_framework")),
        "source_agent": agent,
        "namespace": _text(metadata.get("namespace")),
        "key": record.key,
        "a2m_id": record.id,
    }


def to_memory(values: Mapping[str, Any]) -> UserMemory:
    """The ``UserMemory`` a row is (provenance keys left out)."""
    return UserMemory(**{name: values[name] for name in COLUMNS})


def matches(
    values: Mapping[str, Any],
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    team_id: str | None = None,
    topics: Sequence[str] | None = None,
    search_content: str | None = None,
) -> bool:
    """Whether a row passes ``get_user_memories``' filters (``None`` is no filter)."""
    for name, wanted in (("user_id", user_id), ("agent_id", agent_id), ("team_id", team_id)):
        if wanted is not None and values.get(name) != wanted:
            return False
    if topics is not None:
        held = values.get("topics") or []
        if not all(topic in held for topic in topics):
            return False
    if search_content is not None:
        return search_content.lower() in str(values.get("memory", "")).lower()
    return True


def _sort_key(values: Mapping[str, Any], sort_by: str) -> tuple[int, Any]:
    value = values.get(sort_by)
    if value is None and sort_by == "updated_at":
        value = values.get("created_at")
    if value is None:
        return (0, 0)
    if isinstance(value, (list, dict)):
        return (1, json.dumps(value))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (1, value)
    return (2, str(value))


def sort_rows(
    rows: list[dict[str, Any]], sort_by: str | None, sort_order: str | None
) -> list[dict[str, Any]]:
    """``rows`` sorted as Agno sorts: by a column (unknown columns: unsorted), descending
    unless ``sort_order == "asc"``, ``updated_at`` falling back to ``created_at``."""
    if sort_by is None or sort_by not in COLUMNS:
        return rows
    descending = sort_order != "asc"
    # Python's sort is stable, reverse=True included: ties keep first-write order.
    return sorted(rows, key=lambda r: _sort_key(r, sort_by), reverse=descending)


def page_rows(rows: list[Any], limit: int | None, page: int | None) -> list[Any]:
    """One page (1-indexed) of ``limit`` rows; everything when ``limit`` is ``None`` or
    negative (SQLite's ``LIMIT -1``, which ``SqliteDb`` passes on, means no limit)."""
    if limit is None or limit < 0:
        return rows
    start = (page - 1) * limit if page is not None else 0
    return rows[start : start + max(limit, 0)]


def check_page(limit: int | None, page: int | None) -> None:
    """Refuse ``page`` without ``limit`` and pages below 1, as Agno does."""
    validate_pagination(limit, page)


def memory_stats(
    rows: Iterable[Mapping[str, Any]], limit: int | None, page: int | None
) -> tuple[list[dict[str, Any]], int]:
    """Per user: how many memories and when one last changed, most recent first."""
    users: dict[str, dict[str, Any]] = {}
    for values in rows:
        user = values.get("user_id")
        if user is None:
            continue
        stats = users.setdefault(
            user, {"user_id": user, "total_memories": 0, "last_memory_updated_at": None}
        )
        stats["total_memories"] += 1
        updated = values.get("updated_at")
        last = stats["last_memory_updated_at"]
        if updated is not None and (last is None or updated > last):
            stats["last_memory_updated_at"] = updated
    ordered = sorted(
        users.values(),
        key=lambda s: (s["last_memory_updated_at"] is not None, s["last_memory_updated_at"] or 0),
        reverse=True,
    )
    return page_rows(ordered, limit, page), len(ordered)


def topics_of(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every topic the rows carry, once each, sorted."""
    found: set[str] = set()
    for values in rows:
        held = values.get("topics")
        if isinstance(held, list):
            found.update(str(topic) for topic in held)
    return sorted(found)
