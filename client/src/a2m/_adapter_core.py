"""What the sync and async adapters share: turning contract calls into A2M params and A2M
records back into entries. No I/O; the two adapters only add their calls to the client."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from a2m_types import (
    DescribeResult,
    Record,
    RecordInput,
    parse_timestamp,
)
from a2m_types.filters import matches
from a2m_types.rest import (
    MAX_LIST_LIMIT,
    MAX_TOP_K,
    MEMORY_TYPES,
    Entry,
    EntryList,
    EntryMetaWrite,
    EntryWrite,
    InvalidKey,
    InvalidNamespace,
    ScoredEntry,
    entry_to_record_input,
    key_matches,
    record_key,
    record_to_entry,
    split_record_key,
    validate_namespace,
)

from ._adapter_owners import Caller
from ._adapter_values import UnstorableValue, check_storable
from ._adapter_where import split_where
from ._core import Extensions
from .errors import CapabilityNotSupported, InvalidParams

__all__ = ["Change", "Layout", "QueryPlan", "Scope", "WatchState"]

_DEFAULT_MAX_RECORDS = 1000


@dataclass(frozen=True)
class Change:
    """One change to an entry, as a watch sees it: ``entry`` is ``None`` for a delete,
    since the entry is gone by the time anyone hears of it."""

    event: Literal["write", "delete"]
    namespace: str
    key: str
    entry: Entry | None


@dataclass(frozen=True)
class Layout:
    """What the adapter needs to know of the server: which tier holds each kind."""

    tier_for_kind: dict[str, str]
    kind_of_tier: dict[str, str]
    capabilities: frozenset[str]
    max_recall_limit: int
    max_records_per_call: int = _DEFAULT_MAX_RECORDS
    cursor: bool = False
    """``memory/timeline`` pages by keyset cursor (describe ``timeline.cursor``)."""
    operators: frozenset[str] = frozenset()
    """``where`` operators the server runs (describe ``where.operators``)."""
    recall_declared: bool = True
    """Whether the server declares ``max_recall_limit``: if not, ``max_recall_limit`` is
    this side's page size, and a timeline without ``limit`` carries every record (§4.4)."""

    @classmethod
    def of(cls, description: DescribeResult) -> Layout:
        tier_for_kind: dict[str, str] = {}
        kind_of_tier: dict[str, str] = {}
        for tier in description.tiers or []:
            if tier.kind is not None:
                tier_for_kind.setdefault(tier.kind, tier.name)
                kind_of_tier[tier.name] = tier.kind
        limits = description.limits
        maximum = limits.max_recall_limit if limits and limits.max_recall_limit else 1000
        batch = limits.max_records_per_call if limits and limits.max_records_per_call else None
        capabilities = frozenset(description.capabilities)
        if "keys" not in capabilities:
            raise CapabilityNotSupported(
                "an adapter addresses entries by key, and this server does not declare the "
                "'keys' capability; use a server that does",
                data={"capability": "keys"},
            )
        declared = Extensions.of(description)
        return cls(
            tier_for_kind,
            kind_of_tier,
            capabilities,
            maximum,
            batch or _DEFAULT_MAX_RECORDS,
            declared.cursor,
            declared.operators,
            bool(limits and limits.max_recall_limit),
        )

    def vectors(self) -> dict[str, Any]:
        """The read option asking for vectors: entries always carry theirs (draft §6.1),
        where the server keeps vectors."""
        return {"embeddings": True} if "embeddings" in self.capabilities else {}


def new_scope(
    namespace: str, source_framework: str | None, agent: str | None, session: str | None
) -> Scope:
    """An adapter's identity, its namespace checked before anything is sent."""
    return Scope(
        checked_namespace(namespace),
        source_framework,
        agent,
        session,
        Caller(across=agent is not None),
    )


def watched_namespace(own: str, namespace: str | None) -> str | None:
    """The namespace a watch follows: ``None`` for every one (``"*"``)."""
    if namespace == "*":
        return None
    return own if namespace is None else checked_namespace(namespace)


def entry_page(
    entries: list[Entry], offset: int, limit: int, *, truncated: bool = False
) -> EntryList:
    """The page of ``entries`` starting at ``offset``."""
    window = entries[offset : offset + limit]
    following = offset + len(window)
    return EntryList(
        entries=window,
        total=len(entries),
        next_offset=following if following < len(entries) else None,
        truncated=truncated,
    )


def _refuse(message: str) -> InvalidParams:
    return InvalidParams(message + " (nothing was sent)")


def checked_namespace(namespace: str) -> str:
    """``namespace`` if it is valid (segments of ``[a-z0-9_-]``, at most 256 characters)."""
    try:
        return validate_namespace(namespace)
    except InvalidNamespace as exc:
        raise _refuse(str(exc)) from None


@dataclass(frozen=True)
class Scope:
    """An adapter's identity: where it writes, and who it says it is."""

    namespace: str
    source_framework: str | None
    agent: str | None
    session: str | None
    caller: Caller = field(default_factory=Caller, compare=False, repr=False)
    """Whom the connection acts as, where several owners hold one key."""

    def entry_write(
        self,
        key: str,
        type: str,
        value: Any,
        embedding: Sequence[float] | None,
        meta: Mapping[str, Any] | None,
    ) -> EntryWrite:
        """A validated entry write, with the adapter's provenance filled in; raises
        :class:`InvalidParams` before anything is sent."""
        if type not in MEMORY_TYPES:
            raise _refuse(f"type must be one of {', '.join(MEMORY_TYPES)}, not {type!r}")
        stated: dict[str, Any] = {"source_framework": self.source_framework}
        if self.agent is not None:
            stated["source_agent"] = self.agent
        try:
            stated.update(meta or {})
            # Refused here, naming the place, before validation and dumping would rewrite
            # what JSON cannot carry exactly (NaN to null, a set to a list).
            check_storable(value, f"entry {key!r}: value")
            check_storable(stated, f"entry {key!r}: meta")
            return EntryWrite(
                key=key,
                type=type,  # type: ignore[arg-type]
                value=value,
                embedding=None if embedding is None else [float(x) for x in embedding],
                meta=EntryMetaWrite.model_validate(
                    {k: v for k, v in stated.items() if v is not None}
                ),
            )
        except UnstorableValue:
            raise  # already names the place, and says nothing was sent
        except (ValidationError, InvalidKey, InvalidNamespace, ValueError, TypeError) as exc:
            raise _refuse(f"invalid entry {key!r}: {exc}") from None

    def record_for_write(self, layout: Layout, write: EntryWrite) -> RecordInput:
        """The A2M record an entry write becomes, with owner and session where the server
        keeps them."""
        record = entry_to_record_input(write, self.namespace, tier_for_kind=layout.tier_for_kind)
        if record.salience is not None and "salience" not in layout.capabilities:
            # confidence still travels in metadata; salience is only for servers keeping it
            record = RecordInput.model_validate(
                {k: v for k, v in record.to_wire().items() if k != "salience"}
            )
        extra: dict[str, Any] = {}
        if self.agent is not None and "scopes" in layout.capabilities:
            extra["owner"] = self.agent
        if self.session is not None and "sessions" in layout.capabilities:
            extra["session"] = self.session
        return record.model_copy(update=extra) if extra else record

    def conflict(self, held: Record | None, key: str) -> InvalidParams | None:
        """Refusal when the A2M key of ``key`` is held by an entry of another namespace:
        ``(a, b/c)`` and ``(a/b, c)`` are one A2M key, and must not silently merge."""
        if held is None or held.key is None:
            return None
        owner = split_record_key(held.key, held.metadata, self.namespace)
        if owner is None or owner == (self.namespace, key):
            return None
        return InvalidParams(
            f"entry {key!r} of {self.namespace!r} is the A2M key {held.key!r}, which entry "
            f"{owner[1]!r} of {owner[0]!r} already holds; choose another key",
            data={"a2m_key": held.key, "held_by": list(owner)},
        )

    def address(self, key: str, namespace: str | None = None) -> tuple[str, str]:
        """(namespace, A2M key) of ``key`` in ``namespace`` (default: the adapter's)."""
        where = self.namespace if namespace is None else checked_namespace(namespace)
        try:
            return where, record_key(where, key)
        except (InvalidKey, InvalidNamespace) as exc:
            raise _refuse(str(exc)) from None


def _updated_at(record: Record) -> Any:
    stamp = (record.model_extra or {}).get("updated_at")
    if isinstance(stamp, str):
        try:
            return parse_timestamp(stamp)
        except ValueError:
            return None
    return None


def to_entry(record: Record, layout: Layout, namespace_hint: str | None = None) -> Entry | None:
    """The entry a record reads as (``None`` when it has no place as an entry)."""
    return record_to_entry(
        record,
        namespace_hint=namespace_hint,
        kind_of_tier=layout.kind_of_tier,
        updated_at=_updated_at(record),
    )


def entry_at(record: Record | None, namespace: str, layout: Layout) -> Entry | None:
    """The entry ``record`` is, if it belongs to exactly ``namespace``."""
    if record is None:
        return None
    entry = to_entry(record, layout, namespace)
    return entry if entry is not None and entry.namespace == namespace else None


@dataclass(frozen=True)
class QueryPlan:
    """How a contract ``query`` runs: one recall, filtered here when the server cannot
    filter (tags, or an exact namespace that records without ``metadata.namespace`` are
    only placed in by their key), then the winners' vectors when they were not fetched."""

    params: dict[str, Any]
    exact: str | None
    tags: tuple[str, ...]
    top_k: int
    vectors_later: bool
    local_where: dict[str, Any] | None = None
    """A ``where`` the server cannot run, matched here against each candidate."""


def check_query(
    embedding: Sequence[float] | None,
    type: str | None,
    top_k: int,
    text: str | None,
    namespace: str | None,
) -> None:
    """Refuse a query that cannot be asked, before anything is sent."""
    if namespace is not None:
        checked_namespace(namespace)
    if not 1 <= top_k <= MAX_TOP_K:
        raise _refuse(f"top_k must be between 1 and {MAX_TOP_K}, not {top_k}")
    if embedding is None and not text:
        raise _refuse("query needs an embedding, a text, or both")
    if embedding is not None:
        check_embedding(embedding)
    check_type(type)


def check_embedding(embedding: object) -> None:
    """Refuse a query vector that is not a non-empty list of finite numbers (a text passed
    where the vector goes, most often), before anything is sent."""
    if isinstance(embedding, (str, bytes)) or not isinstance(embedding, Sequence):
        raise _refuse(
            f"embedding must be a list of numbers, not {type(embedding).__name__} "
            "(to search by text, pass text=...)"
        )
    if not embedding:
        raise _refuse("embedding must hold at least one number")
    for index, value in enumerate(embedding):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _refuse(f"embedding[{index}] must be a number, not {value!r}")
        if not math.isfinite(value):
            raise _refuse(f"embedding[{index}] must be finite, not {value!r}")


def plan_query(
    layout: Layout,
    *,
    embedding: Sequence[float] | None,
    type: str | None,
    top_k: int,
    min_score: float | None,
    text: str | None,
    tags: Sequence[str] | None,
    recursive: bool,
    namespace: str | None,
    where_given: Mapping[str, Any] | None = None,
) -> QueryPlan:
    """The ``memory/recall`` call for a contract ``query`` (already checked)."""
    params: dict[str, Any] = {}
    where, local_where = split_where(layout.operators, where_given)
    if text:
        params["query"] = text
    if embedding is not None:
        params["embedding"] = [float(x) for x in embedding]
    if min_score is not None:
        params["min_score"] = min_score
    if type is not None:
        params.update(_type_filter(layout, type, where))
    exact = None
    if namespace is not None:
        params["key_prefix"] = namespace = checked_namespace(namespace)
        exact = None if recursive else namespace
    else:
        # Only keyed records are entries: ask for those, across every namespace.
        params["key_prefix"] = ""
    if where:
        params["where"] = where
    filtered = bool(tags) or exact is not None or local_where is not None
    # Filtering here needs more candidates than top_k; their vectors would be wasted.
    # top_k is an upper bound: a server returning fewer records a call caps it.
    params["limit"] = layout.max_recall_limit if filtered else min(top_k, layout.max_recall_limit)
    fetch_vectors = "embeddings" in layout.capabilities
    if fetch_vectors and not filtered:
        params["embeddings"] = True  # an entry carries its vector (draft §6.1)
    return QueryPlan(
        params, exact, tuple(tags or ()), top_k, fetch_vectors and filtered, local_where
    )


def _type_filter(layout: Layout, type: str, where: dict[str, Any]) -> dict[str, Any]:
    if type not in MEMORY_TYPES:
        raise _refuse(f"type must be one of {', '.join(MEMORY_TYPES)}, not {type!r}")
    if type == "external":
        where["type"] = "external"
        return {}
    tier = layout.tier_for_kind.get(type)
    if tier is not None and "tiers" in layout.capabilities:
        return {"tier": tier}
    where["type"] = type
    return {}


def scored_entries(records: Iterable[Record], layout: Layout, plan: QueryPlan) -> list[ScoredEntry]:
    """Recall results as ``[{entry, score}]``, best first, at most ``top_k``."""
    found: list[ScoredEntry] = []
    hint = plan.params.get("key_prefix") or None
    for record in records:
        if plan.local_where is not None and not matches(plan.local_where, record.to_wire()):
            continue
        entry = to_entry(record, layout, hint)
        if entry is None or not _wanted(entry, plan.exact, plan.tags):
            continue
        found.append(ScoredEntry(entry=entry, score=record.score or 0.0))
        if len(found) == plan.top_k:
            break
    return found


def vectors_params(hits: Sequence[ScoredEntry]) -> dict[str, Any]:
    """``memory/timeline`` params fetching the vectors of ``hits`` (a timeline, unlike a
    recall, does not count as an access)."""
    return {"where": {"id": [hit.entry.id for hit in hits]}, "embeddings": True}


def with_vectors(hits: list[ScoredEntry], records: Iterable[Record]) -> list[ScoredEntry]:
    vectors = {record.id: record.embedding for record in records}
    for hit in hits:
        hit.entry.embedding = vectors.get(hit.entry.id)
    return hits


def _wanted(entry: Entry, exact: str | None, tags: Sequence[str] | None) -> bool:
    if exact is not None and entry.namespace != exact:
        return False
    return not tags or set(tags) <= set(entry.meta.tags)


def type_selector(layout: Layout, type: str | None) -> dict[str, Any]:
    """The ``tier`` / ``where`` params that select entries of ``type``."""
    if type is None:
        return {}
    where: dict[str, Any] = {}
    params = _type_filter(layout, type, where)
    return {**params, "where": where} if where else params


def check_type(type: str | None) -> None:
    """Refuse a memory type that is not one of the five, before anything is sent."""
    if type is not None and type not in MEMORY_TYPES:
        raise _refuse(f"type must be one of {', '.join(MEMORY_TYPES)}, not {type!r}")


def check_page(limit: int, offset: int) -> None:
    """Refuse a page that cannot end or cannot start."""
    if not 1 <= limit <= MAX_LIST_LIMIT:
        raise _refuse(f"limit must be between 1 and {MAX_LIST_LIMIT}, not {limit}")
    if offset < 0:
        raise _refuse(f"offset must be 0 or more, not {offset}")


def list_params(layout: Layout, *, type: str | None, namespace: str) -> dict[str, Any]:
    """``memory/timeline`` params for the entries at or beneath ``namespace``.

    A2M's timeline has no offset, so one call carries the newest ``max_recall_limit``
    records: that is as far back as a listing reaches."""
    params: dict[str, Any] = {"limit": layout.max_recall_limit, "key_prefix": namespace}
    params.update(type_selector(layout, type))
    if "embeddings" in layout.capabilities:
        params["embeddings"] = True
    return params


def listed_entries(
    records: Iterable[Record],
    layout: Layout,
    *,
    tags: Sequence[str] | None,
    namespace: str,
    recursive: bool,
) -> list[Entry]:
    """Timeline results as the entries of ``namespace`` (or beneath it), oldest first."""
    exact = None if recursive else namespace
    entries = []
    for record in records:
        entry = to_entry(record, layout, namespace)
        if entry is not None and _wanted(entry, exact, tags):
            entries.append(entry)
    return entries


def doomed(
    records: Iterable[Record], layout: Layout, *, tags: Sequence[str] | None, namespace: str
) -> list[Entry]:
    """The entries of exactly ``namespace`` among ``records`` (carrying ``tags``)."""
    return listed_entries(records, layout, tags=tags, namespace=namespace, recursive=False)


_KEPT_FIELDS = frozenset(
    {"content", "role", "metadata", "group", "tier", "salience", "owner", "session", "key"}
    | {"embedding", "uri", "media_type"}
)


def as_written(record: Record, capabilities: Collection[str]) -> dict[str, Any]:
    """``record`` as the ``memory/remember`` record that puts it back as it is: its content,
    metadata and every field the server keeps (read it with ``embeddings`` to keep its
    vector; a TTL in its metadata counts again from the rewrite). Salience goes only to a
    server declaring ``salience``."""
    kept = record.model_dump(mode="json", include=set(_KEPT_FIELDS), exclude_none=True)
    if "salience" not in capabilities:
        kept.pop("salience", None)
    return kept


def forget_by_key(entry: Entry) -> dict[str, Any]:
    """``memory/forget`` params removing one entry by its address, for a binding that
    cannot name records by id (a draft-only REST server)."""
    return {"where": {"key": record_key(entry.namespace, entry.key), "namespace": entry.namespace}}


@dataclass
class WatchState:
    """What a watch has seen, so a delete (whose event names only A2M keys) can be told
    by the entry it removed, whatever namespace the key alone would suggest."""

    namespace: str | None
    recursive: bool
    pattern: str | None
    seen: dict[str, tuple[str, str]]

    def includes(self, namespace: str, key: str) -> bool:
        if self.namespace is not None:
            inside = (
                namespace == self.namespace or namespace.startswith(self.namespace + "/")
                if self.recursive
                else namespace == self.namespace
            )
            if not inside:
                return False
        return key_matches(self.pattern, key)

    def written_key(self, event_kind: str, payload: Mapping[str, Any]) -> str | None:
        """The A2M key an event says was written, if it is one."""
        key = payload.get("key") if event_kind == "written" else None
        return key if isinstance(key, str) else None

    def wrote(self, a2m_key: str, entry: Entry) -> bool:
        """Note an entry written at ``a2m_key``; whether the watch reports it."""
        self.seen[a2m_key] = (entry.namespace, entry.key)
        return self.includes(entry.namespace, entry.key)

    def deleted(self, event_kind: str, payload: Mapping[str, Any]) -> list[tuple[str, str]]:
        """The (namespace, key) of each watched entry a delete event removed."""
        if event_kind not in ("forgotten", "expired"):
            return []
        changes = []
        for a2m_key in payload.get("keys") or []:
            if not isinstance(a2m_key, str):
                continue
            address = self.seen.pop(a2m_key, None) or split_record_key(
                a2m_key, None, self.namespace
            )
            if address is not None and self.includes(*address):
                changes.append(address)
        return changes
