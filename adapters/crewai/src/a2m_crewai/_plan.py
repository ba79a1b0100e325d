"""What the sync and async halves of :class:`~a2m_crewai.A2MStorage` share: the A2M call
each StorageBackend member makes, and what its answer means to CrewAI. No I/O."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from datetime import datetime
from threading import Lock
from typing import Any

from crewai.memory.storage.backend import EmbeddingDimensionMismatchError
from crewai.memory.types import MemoryRecord

from a2m import DescribeResult, EmbeddingMismatch, Record

from ._mapping import (
    FRAMEWORK,
    ID_KEY,
    Layout,
    key_prefix_for,
    matches,
    naive_utc,
    server_where,
    to_memory_record,
    utc_stamp,
)

__all__ = [
    "DeletePlan",
    "QueryTexts",
    "RecallContext",
    "SearchPlan",
    "current_recall",
    "delete_plan",
    "dimension_error",
    "layout_of",
    "listed",
    "listing_params",
    "lookup_params",
    "newest_first",
    "search_plan",
    "searched",
]

OWN: dict[str, Any] = {"source_framework": FRAMEWORK}
"""The ``where`` selecting what this adapter wrote: all that it may change or delete."""
_CREATED = "metadata.crewai.created_utc"
"""CrewAI's ``created_at`` of a record, as a string that orders as the instants do."""
# How many candidates a search asks for when it filters some of them out here.
_OVERSAMPLE = 3


def layout_of(description: DescribeResult) -> Layout:
    """The storage's view of a server, from its ``memory/describe``."""
    capabilities = frozenset(description.capabilities)
    tier = None
    if "tiers" in capabilities:
        tier = next((t.name for t in description.tiers or [] if t.kind == "semantic"), None)
    limits = description.limits
    recall = limits.max_recall_limit if limits and limits.max_recall_limit else 1000
    per_call = limits.max_records_per_call if limits and limits.max_records_per_call else 1000
    cursor = description.timeline is not None and bool(description.timeline.cursor)
    operators = frozenset(description.where.operators) if description.where is not None else None
    declared = bool(limits and limits.max_recall_limit)
    return Layout(capabilities, tier, recall, per_call, cursor, operators or frozenset(), declared)


def dimension_error(error: EmbeddingMismatch) -> EmbeddingDimensionMismatchError:
    """CrewAI's own error for a vector of the wrong width, from the server's."""
    data = error.data if isinstance(error.data, Mapping) else {}
    stored, got = data.get("expected"), data.get("got")
    return EmbeddingDimensionMismatchError(
        stored if isinstance(stored, int) else 0, got if isinstance(got, int) else 0
    )


# --- the query text, carried beside the embedding --------------------------------------


@dataclass(frozen=True)
class RecallContext:
    """The recall under way in this context: its text and who is asking."""

    query: str
    source: str | None
    include_private: bool


_RECALL: ContextVar[RecallContext | None] = ContextVar("a2m_crewai_recall", default=None)


def current_recall() -> ContextVar[RecallContext | None]:
    """The context variable :class:`~a2m_crewai.A2MMemory` sets around a recall."""
    return _RECALL


class QueryTexts:
    """The text each recent embedding was computed from, so a search handed only a vector
    can send its words too. Bounded, and safe to share between threads."""

    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._texts: OrderedDict[tuple[float, ...], str] = OrderedDict()
        self._lock = Lock()

    def note(self, embedding: Sequence[float], text: str) -> None:
        """Remember that ``embedding`` is the vector of ``text``."""
        key = tuple(float(x) for x in embedding)
        with self._lock:
            self._texts[key] = text
            self._texts.move_to_end(key)
            while len(self._texts) > self._size:
                self._texts.popitem(last=False)

    def text_of(self, embedding: Sequence[float]) -> str | None:
        """The text ``embedding`` was computed from, if it was noted."""
        with self._lock:
            return self._texts.get(tuple(float(x) for x in embedding))


# --- search ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchPlan:
    """One ``memory/recall``, and what is checked here on its answer."""

    params: dict[str, Any]
    scope_prefix: str | None
    categories: tuple[str, ...]
    metadata_filter: dict[str, Any]
    limit: int
    min_score: float
    viewer: RecallContext | None


def search_plan(
    layout: Layout,
    texts: QueryTexts,
    query_embedding: Sequence[float],
    scope_prefix: str | None,
    categories: Sequence[str] | None,
    metadata_filter: Mapping[str, Any] | None,
    limit: int,
    min_score: float,
) -> SearchPlan:
    """The recall for a ``search``: the vector, the query's words when they are known (the
    server then ranks by both, and finds records that have no vector), the scope as a
    key prefix, and the filters the server can apply. A ``limit`` below 1 is refused, as
    CrewAI's LanceDB storage refuses it."""
    if limit < 1:
        raise ValueError(f"search limit must be at least 1; got {limit}")
    viewer = _RECALL.get()
    text = texts.text_of(query_embedding) if query_embedding else None
    if text is None and viewer is not None:
        text = viewer.query
    params: dict[str, Any] = {"embeddings": True}
    if query_embedding:
        params["embedding"] = [float(x) for x in query_embedding]
    if text:
        params["query"] = text
    prefix = key_prefix_for(scope_prefix)
    if prefix is not None:
        params["key_prefix"] = prefix
    where = server_where(metadata_filter, layout.operators)
    if where:
        params["where"] = where
    if min_score > 0:
        params["min_score"] = min_score
    filtered = bool(categories) or len(where) < len(metadata_filter or {}) or viewer is not None
    wanted = max(limit, 1) * (_OVERSAMPLE if filtered else 1)
    params["limit"] = min(wanted, layout.max_recall_limit)
    return SearchPlan(
        params,
        scope_prefix,
        tuple(categories or ()),
        dict(metadata_filter or {}),
        limit,
        min_score,
        viewer,
    )


def _visible(record: MemoryRecord, viewer: RecallContext | None) -> bool:
    # As Memory.recall decides, but before the limit, so hidden records take no place.
    if viewer is None or viewer.include_private or not record.private:
        return True
    return viewer.source is not None and record.source == viewer.source


def searched(plan: SearchPlan, records: Sequence[Record]) -> list[tuple[MemoryRecord, float]]:
    """The ``(record, score)`` pairs of a search, best first, at most ``limit``."""
    found: list[tuple[MemoryRecord, float]] = []
    for record in records:
        memory = to_memory_record(record)
        score = float(record.score or 0.0)
        if score < plan.min_score or not _visible(memory, plan.viewer):
            continue
        if not matches(
            memory,
            scope_prefix=plan.scope_prefix,
            categories=plan.categories,
            metadata_filter=plan.metadata_filter,
        ):
            continue
        found.append((memory, score))
        if len(found) >= plan.limit:
            break
    return found


# --- listing and deleting ----------------------------------------------------------------


def listing_params(
    layout: Layout, scope_prefix: str | None, *, own: bool = False, vectors: bool = False
) -> dict[str, Any]:
    """``memory/timeline`` params for every record at or beneath ``scope_prefix`` (the
    paging, :mod:`._listing`, adds ``limit`` and ``cursor``)."""
    params: dict[str, Any] = {}
    prefix = key_prefix_for(scope_prefix)
    if prefix is not None:
        params["key_prefix"] = prefix
    if own:
        params["where"] = dict(OWN)
    if vectors and "embeddings" in layout.capabilities:
        params["embeddings"] = True
    return params


def lookup_params(
    layout: Layout, record_id: str, *, moved: bool, vectors: bool = False
) -> dict[str, Any]:
    """``memory/timeline`` params finding the record with CrewAI id ``record_id``: by A2M
    id, or (``moved``) by ``metadata.crewai_id``, the newest such record of this adapter."""
    where: dict[str, Any] = {**OWN, ID_KEY: record_id} if moved else {"id": record_id}
    # moved: one record per principal holding a copy, and one left by an interrupted move
    # (no more than the server returns in one call: asking past it is refused)
    params: dict[str, Any] = {
        "where": where,
        "limit": min(10, layout.max_recall_limit) if moved else 1,
    }
    if vectors and "embeddings" in layout.capabilities:
        params["embeddings"] = True
    return params


def listed(records: Iterable[Record], scope_prefix: str | None) -> list[MemoryRecord]:
    """A listing's records as CrewAI's, checked against the scope by segment."""
    memories = [to_memory_record(record) for record in records]
    return [m for m in memories if matches(m, scope_prefix=scope_prefix)]


def newest_first(records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """CrewAI's listing order: ``created_at`` descending (ties: the later written first)."""
    indexed = list(enumerate(records))
    indexed.sort(key=lambda pair: (naive_utc(pair[1].created_at), pair[0]), reverse=True)
    return [record for _, record in indexed]


@dataclass(frozen=True)
class DeletePlan:
    """A delete: one ``memory/forget`` when the server can select everything itself,
    otherwise a listing of this adapter's records, filtered here, then one forget by id."""

    forget: dict[str, Any] | None
    listing: dict[str, Any] | None
    scope_prefix: str | None
    categories: tuple[str, ...]
    record_ids: frozenset[str] | None
    older_than: datetime | None
    metadata_filter: dict[str, Any]
    moved: dict[str, Any] | None = None
    """A second ``memory/forget`` after ``forget`` by ids: the records of those ids that
    an update moved to another scope, which carry their id in ``metadata.crewai_id``."""

    def chosen(self, records: Iterable[Record]) -> list[str]:
        """The A2M ids of the listed records the delete removes, each copy tested as it
        reads: a record an update moved has an A2M id of its own, not its CrewAI id."""
        chosen = []
        for record in records:
            memory = to_memory_record(record)
            if (self.record_ids is None or memory.id in self.record_ids) and matches(
                memory,
                scope_prefix=self.scope_prefix,
                categories=self.categories,
                metadata_filter=self.metadata_filter,
                older_than=self.older_than,
            ):
                chosen.append(record.id)
        return chosen


def delete_plan(
    layout: Layout,
    scope_prefix: str | None,
    categories: Sequence[str] | None,
    record_ids: Sequence[str] | None,
    older_than: datetime | None,
    metadata_filter: Mapping[str, Any] | None,
) -> DeletePlan | None:
    """How to delete what every given criterion matches (all of them, of this adapter's
    records only); ``None`` when nothing can match (an empty ``record_ids``)."""
    if record_ids is not None and not record_ids:
        return None
    ids = None if record_ids is None else frozenset(str(i) for i in record_ids)
    plan = DeletePlan(
        None,
        None,
        scope_prefix,
        tuple(categories or ()),
        ids,
        older_than,
        dict(metadata_filter or {}),
    )
    if categories or metadata_filter or older_than is not None:
        where = {**server_where(metadata_filter, layout.operators), **OWN}
        if older_than is not None and "$lt" in layout.operators:
            # Categories never go: a where has no test of membership in an array (tags).
            where[_CREATED] = {"$lt": utc_stamp(older_than)}
        listing = listing_params(layout, scope_prefix, own=True)
        listing["where"] = where
        return DeletePlan(None, listing, *_rest(plan))
    forget: dict[str, Any] = {"where": dict(OWN)}
    prefix = key_prefix_for(scope_prefix)
    if prefix is not None:
        forget["key_prefix"] = prefix
    moved = None
    if ids is not None:
        forget["ids"] = sorted(ids)
        moved = {k: v for k, v in forget.items() if k != "ids"}
        moved["where"] = {**OWN, ID_KEY: sorted(ids)}
    return replace(plan, forget=forget, moved=moved)


def _rest(plan: DeletePlan) -> tuple[Any, ...]:
    return (
        plan.scope_prefix,
        plan.categories,
        plan.record_ids,
        plan.older_than,
        plan.metadata_filter,
    )
