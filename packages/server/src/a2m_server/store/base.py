"""The one storage interface every backend implements (SQLite today, PostgreSQL next).

A backend stores records and the event log and answers filtered, ordered and ranked
reads. It knows nothing of JSON-RPC, capabilities or tier policy: the protocol layer
decides *what* to do and calls these primitives inside one write transaction."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Final, Literal, NamedTuple, cast

from . import vectors
from ._audit import AuditQuery, AuditRow
from ._json_text import dump_json, load_json

log = logging.getLogger("a2m_server.store")

__all__ = [
    "RECORD_COLUMNS",
    "AgentCount",
    "EventRow",
    "LexicalHit",
    "NewRecord",
    "RecordFilter",
    "Scope",
    "SessionStats",
    "Store",
    "StoreError",
    "StoreReader",
    "StoreWriter",
    "StoredRecord",
]

Order = Literal["created_asc", "created_desc"]

RECORD_COLUMNS = (
    "rowid, id, content, created_at, updated_at, role, metadata, grp, tier, salience, "
    "accessed_at, access_count, owner, session, key, revision, uri, media_type, expires_at"
)
"""The record columns every store selects, in the order :meth:`StoredRecord.from_row` reads."""


class LexicalHit(NamedTuple):
    """One record a lexical search found, and how well it matched."""

    id: str
    relevance: float
    """BM25 relevance: positive, larger is better."""
    guessed: bool = False
    """Found only through the typo correction of a query word no record holds, not by a
    word as given: ranked after every record holding one."""


class StoreError(RuntimeError):
    """The backend failed (a lost connection, a cancelled statement): the call fails
    and its transaction is rolled back; the next call may succeed."""


class _UnreadableMetadata:
    """Stands for metadata a store holds but cannot parse (nested past what a parser
    follows, stored by a release that did not bound it). Reads as holding no key, so
    filters pass over it; no encoder writes it, so an answer leaves its record out
    (see :func:`a2m_server.dispatch.encode`) instead of failing."""

    __slots__ = ()

    def get(self, key: str, default: Any = None) -> Any:
        return default

    def __contains__(self, key: object) -> bool:
        return False

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "<unreadable metadata>"


UNREADABLE_METADATA: Final = _UnreadableMetadata()


def _metadata(record_id: str, text: str) -> dict[str, Any]:
    try:
        value: dict[str, Any] = load_json(text)
    except (ValueError, RecursionError) as exc:
        log.error("record %s: its stored metadata cannot be read (%s)", record_id, exc)
        return cast("dict[str, Any]", UNREADABLE_METADATA)
    return value


@dataclass
class StoredRecord:
    """A record as the store holds it; times are epoch milliseconds."""

    rowid: int
    id: str
    content: str
    created_at: int
    updated_at: int
    role: str | None = None
    metadata: dict[str, Any] | None = None
    group: str | None = None
    tier: str | None = None
    salience: float = 0.0
    accessed_at: int | None = None
    access_count: int = 0
    owner: str | None = None
    session: str | None = None
    key: str | None = None
    revision: int = 0
    embedding: list[float] | None = None
    """Loaded only when the read asked for vectors."""
    uri: str | None = None
    media_type: str | None = None
    expires_at: int | None = None

    @classmethod
    def from_row(cls, row: Sequence[Any], embedding: list[float] | None) -> StoredRecord:
        """The record a row of :data:`RECORD_COLUMNS` holds (``metadata`` as JSON text),
        with ``embedding`` as the store decoded it."""
        return cls(
            rowid=row[0],
            id=row[1],
            content=row[2],
            created_at=row[3],
            updated_at=row[4],
            role=row[5],
            metadata=_metadata(row[1], row[6]) if row[6] is not None else None,
            group=row[7],
            tier=row[8],
            salience=row[9],
            accessed_at=row[10],
            access_count=row[11],
            owner=row[12],
            session=row[13],
            key=row[14],
            revision=row[15],
            embedding=embedding,
            uri=row[16],
            media_type=row[17],
            expires_at=row[18],
        )


@dataclass
class NewRecord:
    """A record about to be inserted; the protocol layer has filled every default."""

    id: str
    content: str
    created_at: int
    role: str | None = None
    metadata: dict[str, Any] | None = None
    group: str | None = None
    tier: str | None = None
    salience: float = 0.0
    owner: str | None = None
    session: str | None = None
    key: str | None = None
    embedding: list[float] | None = None
    uri: str | None = None
    media_type: str | None = None
    expires_at: int | None = None
    metadata_json: str | None = None
    """``metadata`` as JSON text, when the writer has dumped it already (checking it can
    be stored): a store keeping metadata as text may take this rather than dump again."""

    def metadata_text(self) -> str | None:
        """``metadata`` as the JSON text a store keeps: the writer's dump when it made
        one, else dumped here."""
        if self.metadata is None:
            return None
        return self.metadata_json if self.metadata_json is not None else dump_json(self.metadata)


@dataclass(frozen=True)
class Scope:
    """Whose records a call may touch.

    For reads (``include_shared``) an owner sees its own records, records with no owner,
    and everything in a shared tier; for writes it touches only records it owns."""

    owner: str
    include_shared: bool = True
    shared_tiers: tuple[str, ...] = ()


_UNSET: Any = object()


@dataclass(frozen=True)
class RecordFilter:
    """A conjunction of conditions; every unset condition matches everything.

    Expired records never match."""

    ids: Sequence[str] | None = None
    tier: str | None = None
    tiers: Sequence[str] | None = None
    where: Mapping[str, Any] | None = None
    key_prefix: str | None = None
    scope: Scope | None = None
    session: Any = _UNSET
    """A session name, or ``None`` for records without one; unset matches all."""
    groups: Sequence[tuple[str | None, str]] | None = None
    """(owner, group) pairs: records of any of these groups."""
    tags_all: Sequence[str] | None = None
    """Every one of these strings is in ``metadata.tags``."""
    with_embedding: bool = False
    """Only records carrying a vector."""
    earned_at_least: float | None = None
    """Only records whose ``access_count + salience`` reaches this (promotion)."""
    key_under: str | None = None
    """Only keys strictly beneath this prefix, segment-wise ("a/b" matches "a/b/c", never
    "a/b" itself)."""
    key_child_of: str | None = None
    """Only keys exactly one segment beneath this prefix ("a/b" matches "a/b/c", not
    "a/b/c/d")."""
    has_uri: bool | None = None
    """Only records with (True) or without (False) a ``uri``."""
    any_of: Sequence[RecordFilter] | None = None
    """At least one of these filters matches too (an empty sequence matches nothing)."""
    after: tuple[int, int] | None = None
    """Only records after this ``(created_at, rowid)`` position of creation order: the
    keyset of a page cursor. ``rowid`` is :attr:`StoredRecord.rowid`, the store's
    insertion order, which breaks ties of ``created_at`` in every ``select``."""

    @property
    def has_session(self) -> bool:
        return self.session is not _UNSET

    def with_(self, **changes: Any) -> RecordFilter:
        values = {name: getattr(self, name) for name in self.__dataclass_fields__}
        values.update(changes)
        return RecordFilter(**values)


@dataclass
class SessionStats:
    """One session's size and span."""

    session: str
    records: int
    tiers: dict[str, int] = field(default_factory=dict)
    opened_at: int | None = None
    touched_at: int | None = None


@dataclass
class EventRow:
    """One event of the log, with the position that follows it."""

    seq: int
    at: int
    kind: str
    payload: dict[str, Any]
    owner: str | None
    tier: str | None


@dataclass(frozen=True)
class AgentCount:
    """How many live records of one agent, written by one framework, one tier holds
    (``tier`` ``None`` for records without a tier); see ``store/_agents.py``."""

    agent: str
    framework: str
    tier: str | None
    n: int


class StoreReader(ABC):
    """Reads, all seeing one consistent snapshot."""

    @abstractmethod
    def get(self, ids: Sequence[str], *, embeddings: bool = False) -> list[StoredRecord]:
        """The live records among ``ids``, in no particular order."""

    @abstractmethod
    def get_by_key(
        self, owner: str | None, key: str, *, embeddings: bool = False
    ) -> StoredRecord | None:
        """The record ``owner`` holds at ``key``."""

    @abstractmethod
    def select(
        self,
        where: RecordFilter,
        *,
        order: Order = "created_asc",
        limit: int | None = None,
        offset: int = 0,
        embeddings: bool = False,
    ) -> list[StoredRecord]:
        """Matching records in creation order (ties broken by insertion order)."""

    def select_ids(
        self, where: RecordFilter, *, order: Order = "created_asc", limit: int | None = None
    ) -> list[tuple[str, str | None, str | None]]:
        """``(id, owner, group)`` of what :meth:`select` returns, in its order: what
        moving records needs, without reading their content. A backend may read less."""
        return [(r.id, r.owner, r.group) for r in self.select(where, order=order, limit=limit)]

    @abstractmethod
    def scan(self, after: int, limit: int) -> list[StoredRecord]:
        """Up to ``limit`` live records with a rowid above ``after``, in rowid (insertion)
        order, vectors included: a keyset walk over the whole store (export)."""

    @abstractmethod
    def count(self, where: RecordFilter) -> int:
        """How many records match."""

    @abstractmethod
    def count_by_tier(self, where: RecordFilter) -> dict[str, int]:
        """Matching records per tier."""

    @abstractmethod
    def count_by_agent(self, scope: Scope | None) -> list[AgentCount]:
        """Live records per (agent, framework, tier) that ``scope`` may read (every
        record without one), from the counts the store keeps: exact, and in time
        independent of the store's size."""

    @abstractmethod
    def count_agents_where(self, where: RecordFilter) -> list[AgentCount]:
        """Live records matching ``where`` per (agent, framework, tier), counted by reading
        them: for a view the kept counts do not cover (an operator's audit of observations)."""

    @abstractmethod
    def count_by_session(self, where: RecordFilter) -> dict[str | None, int]:
        """Matching records per session (``None`` for the no-session bucket)."""

    @abstractmethod
    def lexical(
        self,
        where: RecordFilter,
        terms: Sequence[str],
        limit: int | None,
        *,
        match_all: bool = False,
    ) -> list[LexicalHit]:
        """Up to ``limit`` (all when None) records matching any of ``terms`` (every one as
        given with ``match_all``): those holding a term as given, best first, then those
        found only through a typo correction (``guessed``), best first."""

    @abstractmethod
    def nearest(
        self, where: RecordFilter, vector: Sequence[float], limit: int
    ) -> list[tuple[str, float]]:
        """Up to ``limit`` (id, similarity) pairs among records with a vector, most similar
        first; similarity is the store's metric mapped into [0, 1], larger is closer."""

    def rescore(
        self, ids: Sequence[str], vector: Sequence[float], metric: str
    ) -> list[tuple[StoredRecord, float]]:
        """The live records among ``ids`` that have a vector, in no particular order, each
        with its similarity in [0, 1] from its verbatim vector in float64
        (:func:`~.vectors.exact_similarities`). A backend may score the vectors without
        decoding them and return the records without (``embedding`` left ``None``)."""
        records = [r for r in self.get(ids, embeddings=True) if r.embedding]
        scores = vectors.exact_similarities(metric, vector, [r.embedding or [] for r in records])
        return list(zip(records, scores, strict=True))

    @abstractmethod
    def sessions(self, where: RecordFilter) -> list[SessionStats]:
        """Every named session among matching records."""

    def audit(self, query: AuditQuery) -> list[AuditRow]:
        """Observation audit entries matching ``query``, newest first."""
        raise NotImplementedError(f"{type(self).__name__} keeps no observation audit log")

    def scan_audit(self, after: int, limit: int) -> list[AuditRow]:
        """Up to ``limit`` audit entries past position ``after``, oldest first (export)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no observation audit log")

    @abstractmethod
    def events_after(
        self, seq: int, *, limit: int, kinds: Sequence[str] | None, scope: Scope | None
    ) -> list[EventRow]:
        """Events with a position after ``seq``, oldest first, visible to ``scope``."""

    @abstractmethod
    def event_bounds(self) -> tuple[int, int]:
        """(oldest retained position, head position); (head + 1, head) when empty."""

    @abstractmethod
    def dimensions(self) -> int | None:
        """The vector width fixed by the first vector stored."""

    def meta_value(self, key: str) -> str | None:
        """A value the store keeps about itself (the embedding model that made its
        vectors), or None."""
        raise NotImplementedError

    def missing_vectors(self, after: int, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` (rowid, content) of records with no vector and a rowid above
        ``after``, in rowid order: what a server-side embedder back-fills."""
        raise NotImplementedError

    def holds_vectors(self) -> bool:
        """Whether any live record carries a vector: while none does, the width
        :meth:`dimensions` remembers fixes nothing (§3.7), and the next vector sets it."""
        return bool(self.select(RecordFilter(with_embedding=True), limit=1))

    @property
    @abstractmethod
    def store_id(self) -> str:
        """A stable identifier of this store, minted when it was created."""


class StoreWriter(StoreReader):
    """Reads and writes inside one atomic transaction."""

    @abstractmethod
    def insert(self, records: Sequence[NewRecord]) -> list[int]:
        """Insert new records; returns their rowids."""

    @abstractmethod
    def restore(self, records: Sequence[StoredRecord]) -> int:
        """Insert records exactly as exported (ids, revisions, access counts, times),
        skipping ids already present; returns how many were added (import)."""

    @abstractmethod
    def replace(self, record_id: str, new: NewRecord) -> StoredRecord:
        """Overwrite the record at ``record_id`` with ``new`` (key replacement): its id,
        owner, key and created_at stay, revision goes up by one. Returns the result."""

    @abstractmethod
    def resolve_write_id(self, write_id: str) -> str | None:
        """The record a client-supplied id already produced, if any."""

    def resolve_write_ids(self, write_ids: Sequence[str]) -> dict[str, str]:
        """:meth:`resolve_write_id` for a whole batch: each of ``write_ids`` already seen,
        mapped to the record it produced. A backend may answer in one round trip."""
        found: dict[str, str] = {}
        for write_id in write_ids:
            landed = self.resolve_write_id(write_id)
            if landed is not None:
                found[write_id] = landed
        return found

    def get_by_keys(self, keys: Sequence[tuple[str | None, str]]) -> list[StoredRecord | None]:
        """:meth:`get_by_key` for a whole batch of (owner, key) pairs: the record each
        holds, or ``None``, in the order given. A backend may answer in one round trip."""
        return [self.get_by_key(owner, key) for owner, key in keys]

    @abstractmethod
    def remember_write_id(self, write_id: str, record_id: str) -> None:
        """Note that a write carrying ``write_id`` landed on ``record_id``."""

    @abstractmethod
    def set_tier(self, ids: Sequence[str], tier: str) -> int:
        """Move records to ``tier``; returns how many changed."""

    @abstractmethod
    def add_salience(self, ids: Sequence[str], amount: float) -> int:
        """Raise salience; returns how many records changed."""

    @abstractmethod
    def touch(self, ids: Sequence[str], at: int) -> None:
        """Count one access for each record, at time ``at``."""

    @abstractmethod
    def delete(self, ids: Sequence[str]) -> int:
        """Delete records; returns how many were removed."""

    @abstractmethod
    def expire(self, now: int) -> list[StoredRecord]:
        """Delete records whose expiry has passed; returns them."""

    @abstractmethod
    def set_group_expiry(self, owner: str | None, group: str, expires_at: int | None) -> None:
        """Give every record of ``owner``'s ``group`` the expiry ``expires_at`` (``None``:
        none), so the group expires whole (§3.4)."""

    def append_audit(self, entries: Sequence[AuditRow]) -> None:
        """Append observation audit entries in order (the log is append-only)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no observation audit log")

    def rekey(self, record_id: str, key: str) -> None:
        """Give a record a new key (an observation whose content was edited)."""
        raise NotImplementedError(f"{type(self).__name__} cannot change a record's key")

    def set_salience(self, record_id: str, salience: float) -> None:
        """Set a record's salience exactly (an observation's weight)."""
        raise NotImplementedError(f"{type(self).__name__} cannot set a salience")

    @abstractmethod
    def set_dimensions(self, dimensions: int) -> None:
        """Fix the vector width."""

    def set_meta_value(self, key: str, value: str) -> None:
        """Keep ``value`` under ``key`` (see :meth:`meta_value`)."""
        raise NotImplementedError

    def add_vectors(self, items: Sequence[tuple[int, Sequence[float]]]) -> int:
        """Give each record (by rowid) that still has no vector the one paired with it;
        records gone, or holding a vector by now, are left alone. Returns how many got
        one. The width must already be fixed (:meth:`set_dimensions`)."""
        raise NotImplementedError

    def clear_vectors(self) -> int:
        """Drop every record's vector and the width (re-embedding with another model);
        returns how many vectors went."""
        raise NotImplementedError

    @abstractmethod
    def append_event(
        self, kind: str, at: int, payload: Mapping[str, Any], owner: str | None, tier: str | None
    ) -> int:
        """Append to the event log; returns the event's position."""

    def append_events(
        self,
        events: Sequence[tuple[str, int, Mapping[str, Any], str | None, str | None]],
    ) -> None:
        """Append several (kind, at, payload, owner, tier) events in order; a backend
        may do it in one round trip."""
        for kind, at, payload, owner, tier in events:
            self.append_event(kind, at, payload, owner, tier)


class Store(ABC):
    """A backend: transactions over one body of records."""

    @property
    @abstractmethod
    def store_id(self) -> str:
        """A stable identifier of this store, minted when it was created."""

    @abstractmethod
    def reading(self) -> AbstractContextManager[StoreReader]:
        """A consistent read snapshot."""

    @abstractmethod
    def writing(self) -> AbstractContextManager[StoreWriter]:
        """One write transaction: committed on a clean exit, rolled back on an exception."""

    def record_access(self, ids: Sequence[str], at: int) -> None:
        """Count one access (a recall) of each record at time ``at``. A backend may
        buffer these, as long as its reads and its next write transaction see them."""
        with self.writing() as writer:
            writer.touch(ids, at)

    def flush_access(self) -> None:  # noqa: B027 - a hook; writing at once needs none
        """Make buffered access counts visible to filters (a no-op when nothing is
        buffered, or for a backend that writes them at once)."""

    def listen(self, callback: Callable[[], None]) -> None:  # noqa: B027 - a hook
        """Call ``callback`` when another process commits events to this store; a
        backend only one process writes needs no such thing."""

    @abstractmethod
    def close(self) -> None:
        """Release connections and files."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
