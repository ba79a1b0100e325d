"""One mapping between CrewAI's ``MemoryRecord`` and an A2M record, and the filters CrewAI
asks for, with no I/O: the storage only adds the calls.

A scope path is an A2M key prefix, segment by segment: a record at scope
``/crew/research`` with id ``abc`` is the A2M record ``abc`` at key ``crew/research/abc``, so
``key_prefix`` does what ``scope_prefix`` asks, server-side. Categories are
``metadata.tags``, importance is ``salience``, the embedding travels verbatim, and
everything CrewAI needs back exactly (scope, timestamps, importance, source, private) sits
in ``metadata.crewai``. The caller's own metadata keys sit at the top of ``metadata``, where
other frameworks and ``where`` see them; when one collides with a name the mapping owns,
the whole of it is also kept under ``metadata.crewai.metadata``, which is what reads back."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote, unquote

from crewai.memory.types import MemoryRecord, ScopeInfo

from a2m import Record, filters
from a2m.adapter import check_storable

__all__ = [
    "FRAMEWORK",
    "ID_KEY",
    "RESERVED_KEYS",
    "Layout",
    "child_scopes",
    "chosen_copy",
    "crewai_id",
    "is_own",
    "key_for",
    "key_prefix_for",
    "matches",
    "naive_utc",
    "one_per_id",
    "record_input",
    "scope_info",
    "server_where",
    "to_memory_record",
    "utc_stamp",
]

FRAMEWORK = "crewai"
"""``metadata.source_framework`` of every record this adapter writes."""
_BLOCK = "crewai"
ID_KEY = "crewai_id"
"""Top-level ``metadata`` key holding the CrewAI id of a record whose A2M id differs from
it: an update that moves a record to another scope writes the new state under a new A2M
id before it removes the old record, so the record is never missing."""
RESERVED_KEYS = frozenset(
    # the adapter's own, then the names the REST mapping gives a meaning to
    {"crewai", ID_KEY, "source_framework", "source_agent", "tags", "namespace", "value", "type"}
)
"""Top-level ``metadata`` keys the mapping owns."""
# Names a where key means before it means a metadata key: the record fields (spec §5.2),
# and ``score``.
_RECORD_FIELDS = filters.FIELD_NAMES | {"score"}


@dataclass(frozen=True)
class Layout:
    """What the storage needs to know of the server, read once from ``memory/describe``."""

    capabilities: frozenset[str]
    tier: str | None
    """The tier CrewAI's memories are written to: the first of kind ``semantic``."""
    max_recall_limit: int
    max_records_per_call: int
    cursor: bool = False
    """Whether ``memory/timeline`` pages by keyset cursor (describe ``timeline.cursor``)."""
    operators: frozenset[str] = frozenset()
    """The ``where`` operators the server declares (describe ``where.operators``)."""
    recall_declared: bool = True
    """Whether the server declares ``max_recall_limit`` (else a timeline without ``limit``
    carries every record it selects, spec §4.4)."""


# --- scopes and keys -------------------------------------------------------------------


def _segments(scope: str | None) -> list[str]:
    return [part for part in (scope or "").split("/") if part]


def _encode(segment: str) -> str:
    # A key segment is never empty, "." or "..", and holds no control character or "/".
    if segment in (".", ".."):
        return segment.replace(".", "%2E")
    if _UNRESERVED.fullmatch(segment):  # a uuid, a plain name: what quote leaves alone
        return segment
    return quote(segment, safe=" !$&'()*+,;=:@~-._")


_UNRESERVED = re.compile(r"[A-Za-z0-9_.~-]+")


@functools.lru_cache(maxsize=1024)
def _key_path(scope: str) -> str:
    # A store has few scopes and many records in each: encode each scope once.
    return "".join(_encode(part) + "/" for part in _segments(scope))


def key_for(scope: str, record_id: str) -> str:
    """The A2M key of the record ``record_id`` at ``scope``."""
    return _key_path(scope) + _encode(record_id)


def key_prefix_for(scope_prefix: str | None) -> str | None:
    """The ``key_prefix`` selecting ``scope_prefix`` and its subscopes; ``None`` for the
    root, which is every record, keyed or not."""
    parts = _segments(scope_prefix)
    return "/".join(_encode(part) for part in parts) if parts else None


def _scope_of_key(key: str | None) -> str:
    if not key:
        return "/"
    parents = key.split("/")[:-1]
    return "/" + "/".join(unquote(part) for part in parents) if parents else "/"


def child_scopes(scopes: Iterable[str], parent: str) -> list[str]:
    """The immediate children of ``parent`` among ``scopes``, sorted."""
    base = _segments(parent)
    children: set[str] = set()
    for scope in scopes:
        parts = _segments(scope)
        if len(parts) > len(base) and parts[: len(base)] == base:
            children.add("/" + "/".join(parts[: len(base) + 1]))
    return sorted(children)


def _within(scope: str, prefix: str | None) -> bool:
    base = _segments(prefix)
    return _segments(scope)[: len(base)] == base


# --- records ---------------------------------------------------------------------------


def _stamp(moment: datetime) -> str:
    return moment.isoformat()


def utc_stamp(moment: datetime) -> str:
    """``moment`` as naive UTC in one fixed width, so strings order as the instants do:
    what a server compares ``older_than`` against (``metadata.crewai.created_utc``)."""
    return naive_utc(moment).isoformat(timespec="microseconds")


def _moment(value: Any, fallback: datetime) -> datetime:
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return fallback
    return fallback


def naive_utc(moment: datetime) -> datetime:
    """``moment`` as CrewAI keeps time, naive UTC: so that any two stamps compare."""
    # CrewAI's timestamps are naive UTC (datetime.utcnow()); its scoring subtracts them.
    if moment.tzinfo is None:
        return moment
    return moment.astimezone(timezone.utc).replace(tzinfo=None)


def record_input(
    record: MemoryRecord,
    layout: Layout,
    *,
    agent: str | None = None,
    session: str | None = None,
    with_id: bool = True,
) -> dict[str, Any]:
    """The ``memory/remember`` record of ``record``; raises
    :class:`~a2m.adapter.UnstorableValue` (a ``ValueError``) before anything is sent when
    it cannot be stored exactly. Without ``with_id`` the server gives the
    record its A2M id, and ``record.id`` travels in ``metadata.crewai_id``."""
    user = dict(record.metadata)
    check_storable(user, f"metadata of record {record.id!r}")
    check_storable(record.content, f"content of record {record.id!r}")
    if record.source is not None:
        check_storable(record.source, f"source of record {record.id!r}")
    created = _stamp(record.created_at)
    block: dict[str, Any] = {
        "scope": record.scope,
        "importance": record.importance,
        "created_at": created,
        # the same text for CrewAI's naive UTC stamps, unless a whole second drops ".000000"
        "created_utc": created
        if record.created_at.tzinfo is None and record.created_at.microsecond
        else utc_stamp(record.created_at),
        "last_accessed": _stamp(record.last_accessed),
        "private": record.private,
    }
    if record.source is not None:
        block["source"] = record.source
    if record.embedding is not None and not record.embedding:
        block["empty_embedding"] = True
    metadata: dict[str, Any] = {}
    if RESERVED_KEYS.isdisjoint(user):
        metadata.update(user)
    else:
        block["metadata"] = user
        # the keys that can stay on top do, so other frameworks and where still see them
        metadata.update((k, v) for k, v in user.items() if k not in RESERVED_KEYS)
    metadata["tags"] = list(record.categories)
    metadata["source_framework"] = FRAMEWORK
    metadata["type"] = "semantic"
    if agent is not None:
        metadata["source_agent"] = agent
    metadata[_BLOCK] = block
    if not with_id:
        metadata[ID_KEY] = record.id
    out: dict[str, Any] = {
        "key": key_for(record.scope, record.id),
        "content": record.content,
        "role": "memory",
        "metadata": metadata,
    }
    if with_id:
        out["id"] = record.id
    if "salience" in layout.capabilities:
        out["salience"] = record.importance
    if record.embedding:
        # Floats already (MemoryRecord validated them), and the client copies what it
        # sends, so the record's own list goes. One C-speed sum usually proves every
        # component finite; look closer only if not.
        vector = record.embedding
        if not math.isfinite(sum(vector)) and not all(math.isfinite(x) for x in vector):
            raise ValueError(f"the embedding of record {record.id!r} holds a NaN or infinity")
        out["embedding"] = vector
    if layout.tier is not None:
        out["tier"] = layout.tier
    if session is not None and "sessions" in layout.capabilities:
        out["session"] = session
    return out


def is_own(record: Record) -> bool:
    """Whether ``record`` was written by this adapter (and so may be changed by it)."""
    metadata = record.metadata or {}
    return metadata.get("source_framework") == FRAMEWORK and isinstance(metadata.get(_BLOCK), dict)


def crewai_id(record: Record) -> str:
    """The CrewAI id of an A2M record: its A2M id, unless it was written under another one
    (a record moved to another scope) and carries its own in ``metadata.crewai_id``."""
    held = (record.metadata or {}).get(ID_KEY)
    return held if isinstance(held, str) and held and is_own(record) else record.id


def one_per_id(records: Sequence[Record], owner: str | None) -> list[Record]:
    """``records`` in their order, holding each CrewAI id once: of the copies of a record
    at several keys, the one :func:`chosen_copy` reads for the caller ``owner``."""
    copies: dict[str, list[Record]] = {}
    for record in records:
        copies.setdefault(crewai_id(record), []).append(record)
    if len(copies) == len(records):
        return list(records)
    kept = {id(chosen_copy(held, owner)) for held in copies.values()}
    return [record for record in records if id(record) in kept]


def chosen_copy(copies: Sequence[Record], owner: str | None) -> Record:
    """Which of one CrewAI record's copies at different keys the caller reads.

    Copies arise where another principal updated the record into another scope (its copy
    is its own, spec §3.6) or a move failed after writing the new copy, before removing
    the old one. The copy of ``owner``, the caller where it is known (``None`` where
    not: see :class:`a2m._adapter_owners.Caller`); else the original (whose A2M id is the
    CrewAI id), as a failed move leaves it; else the newest. Another principal's copy
    never hides the caller's own."""
    if len(copies) == 1:
        return copies[0]
    if owner is not None:
        own = [r for r in copies if r.owner == owner]
        if own:
            return _original(own) or _newest(own)
    return _original(copies) or _newest(copies)


def _original(copies: Sequence[Record]) -> Record | None:
    return next((r for r in copies if r.id == crewai_id(r)), None)


def _newest(records: Sequence[Record]) -> Record:
    # max keeps the first of equals: the later listed wins ties, as the later written.
    return max(reversed(records), key=lambda r: r.created_at)


def _importance(salience: float | None) -> float:
    # A salience of 0 is a server's default, not a statement (docs/rest-binding.md).
    if salience is None or salience <= 0:
        return 0.5
    return min(float(salience), 1.0)


def _categories(tags: Any) -> list[str]:
    if isinstance(tags, list) and all(isinstance(tag, str) for tag in tags):
        return list(tags)
    return []


def _last_accessed(record: Record, stored: datetime) -> datetime:
    # The server stamps accessed_at on every recall that returns a record (spec §3.1):
    # that is CrewAI's touch_records, with no call of its own.
    if record.accessed_at is None:
        return stored
    recalled = naive_utc(record.accessed_at)
    return recalled if naive_utc(stored) < recalled else stored


def to_memory_record(record: Record) -> MemoryRecord:
    """The ``MemoryRecord`` an A2M record reads as: exactly what was saved for this
    adapter's records; for any other writer's, its key's path as the scope, its tags as
    categories and its salience as importance."""
    metadata = dict(record.metadata or {})
    created = naive_utc(record.created_at)
    embedding = list(record.embedding) if record.embedding is not None else None
    block = metadata.get(_BLOCK)
    if is_own(record) and isinstance(block, dict):
        if "metadata" in block and isinstance(block["metadata"], dict):
            user = dict(block["metadata"])
        else:
            user = {k: v for k, v in metadata.items() if k not in RESERVED_KEYS}
        if embedding is None and block.get("empty_embedding"):
            embedding = []
        source = block.get("source")
        return MemoryRecord(
            id=crewai_id(record),
            content=record.content,
            scope=str(block.get("scope", _scope_of_key(record.key))),
            categories=_categories(metadata.get("tags")),
            metadata=user,
            importance=float(block.get("importance", _importance(record.salience))),
            created_at=_moment(block.get("created_at"), created),
            last_accessed=_last_accessed(record, _moment(block.get("last_accessed"), created)),
            embedding=embedding,
            source=source if isinstance(source, str) else None,
            private=bool(block.get("private", False)),
        )
    accessed = naive_utc(record.accessed_at) if record.accessed_at is not None else created
    agent = metadata.get("source_agent")
    return MemoryRecord(
        id=record.id,
        content=record.content,
        scope=_scope_of_key(record.key),
        categories=_categories(metadata.get("tags")),
        metadata={k: v for k, v in metadata.items() if k != "tags"},
        importance=_importance(record.salience),
        created_at=created,
        last_accessed=accessed,
        embedding=embedding,
        source=agent if isinstance(agent, str) else None,
        private=False,
    )


# --- filters -------------------------------------------------------------------------


def _pushable_name(name: Any) -> bool:
    # A record field, a nested path or an operator-looking name means something else
    # to a server than "this metadata key".
    return (
        isinstance(name, str)
        and name not in _RECORD_FIELDS
        and name not in RESERVED_KEYS
        and not name.startswith(("metadata.", "$"))
    )


# Past 2**53 a server may compare integers as doubles; such values are matched here only.
_EXACT_INTEGERS = 2**53


def _as_operator(value: Any) -> Any:
    """The ``where`` value a server declaring ``$eq``/``$in`` matches exactly where
    Python's ``==`` does on a metadata scalar (``True == 1 == 1.0``, ``None`` as missing),
    or ``_UNSENT`` for what only Python can decide (containers, NaN, huge integers)."""
    if value is None:
        return {"$eq": None}
    if isinstance(value, bool):
        return {"$in": [value, int(value)]}
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or abs(value) > _EXACT_INTEGERS:
            return _UNSENT
        if value in (0, 1):
            return {"$in": [value, bool(value)]}
        return {"$eq": value}
    return _UNSENT


_UNSENT = object()


def server_where(
    metadata_filter: Mapping[str, Any] | None, operators: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """The part of ``metadata_filter`` the server can test and get exactly Python's ``==``
    answer: strings by §5.2 equality on every server; numbers, booleans and ``None`` too
    where the server declares ``$eq`` and ``$in``. The rest (lists, objects) is tested
    here by :func:`matches`, which always checks everything again."""
    typed = {"$eq", "$in"} <= operators
    where: dict[str, Any] = {}
    for name, value in (metadata_filter or {}).items():
        if not _pushable_name(name):
            continue
        if isinstance(value, str):
            where[name] = value
        elif typed and (condition := _as_operator(value)) is not _UNSENT:
            where[name] = condition
    return where


def matches(
    record: MemoryRecord,
    *,
    scope_prefix: str | None = None,
    categories: Sequence[str] | None = None,
    metadata_filter: Mapping[str, Any] | None = None,
    older_than: datetime | None = None,
) -> bool:
    """CrewAI's filter semantics: scope by segment, any of ``categories``, every
    ``metadata_filter`` item equal, created strictly before ``older_than``."""
    if scope_prefix is not None and not _within(record.scope, scope_prefix):
        return False
    if categories and not any(c in record.categories for c in categories):
        return False
    if metadata_filter and not all(record.metadata.get(k) == v for k, v in metadata_filter.items()):
        return False
    return older_than is None or naive_utc(record.created_at) < naive_utc(older_than)


def scope_info(scope: str, records: Sequence[MemoryRecord]) -> ScopeInfo:
    """What ``get_scope_info`` reports of ``scope`` from the records beneath it."""
    path = "/" + "/".join(_segments(scope))
    if not records:
        return ScopeInfo(path=path)
    categories = sorted({c for r in records for c in r.categories})
    created = [r.created_at for r in records]
    return ScopeInfo(
        path=path,
        record_count=len(records),
        categories=categories,
        # Saved stamps may mix naive (CrewAI's UTC) and aware ones: compare as UTC.
        oldest_record=min(created, key=naive_utc),
        newest_record=max(created, key=naive_utc),
        child_scopes=child_scopes((r.scope for r in records), path),
    )
