"""Searching a LangGraph store on A2M: a ``SearchOp`` (filtered listing, semantic or
lexical) and a ``ListNamespacesOp``, each one A2M call mostly (see :mod:`._store_plan`
for when a search takes more)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from langgraph.store.base import ListNamespacesOp, MatchCondition, SearchItem, SearchOp

from a2m import Record

from ._addressing import namespace_path
from ._effects import Call, Embed, Layout, Plan, log, scan
from ._items import item_value, matches_filter, ordered, similarity, to_item

if TYPE_CHECKING:
    from ._store_plan import StoreSettings

__all__ = ["list_namespaces", "search", "server_where"]


# A semantic search re-scores the server's best candidates exactly; it asks for this many
# times the requested window (at least _MIN_CANDIDATES), as the server's own score also
# weighs recency and salience.
_OVERFETCH = 4
_MIN_CANDIDATES = 50


@dataclass(frozen=True)
class Pushed:
    """What of a LangGraph filter the server runs, as ``where`` on ``metadata.value``."""

    where: dict[str, Any] | None
    exact: bool
    """The server runs the whole filter: every record it sends passes it."""
    tight: bool
    """Every record it sends passes, unless its value is a string (``"7"`` may pass
    ``{"$gt": 5}``, ``"x"`` does not): the page asked for is likely one call."""


def server_where(filter: Mapping[str, Any] | None, layout: Layout) -> Pushed:
    """The part of a LangGraph filter the server can run, as ``where`` on
    ``metadata.value``, matching every item LangGraph's stores would (the filter is
    checked again here on what comes back, so the answer is theirs exactly).

    Equality and ``$ne`` go as themselves, except with 0, 1 or a boolean, which Python
    holds equal (``True == 1``) and A2M does not: those go as ``$in`` / ``$nin`` of both.
    The ordering operators compare after converting to a number (a stored ``"5"`` is
    greater than 3, ``True`` is 1.0), which A2M's typed operators do not: they go as
    ``$or`` of the numbers in range, any string, and the booleans in range."""
    if not filter or not layout.operators:
        return Pushed(None, exact=not filter, tight=not filter)
    where: dict[str, Any] = {}
    ranges: list[list[dict[str, Any]]] = []
    exact = tight = True
    for name, expected in filter.items():
        if not name or "." in name or name in _FOREIGN_KEYS:
            exact = tight = False
            continue
        path = f"metadata.value.{name}"
        if not isinstance(expected, dict):
            expected = {"$eq": expected}
        sent: dict[str, Any] = {}
        ordering: dict[str, Any] = {}
        for op, operand in expected.items():
            if op in ("$gt", "$gte", "$lt", "$lte"):
                ordering[op] = operand
                continue
            condition = _equality(op, operand, layout.operators)
            if condition is None:
                exact = tight = False
            else:
                sent.update(condition)
        if ordering:
            exact = False
            alternatives = _ordering(path, ordering, layout.operators)
            if alternatives is None:
                tight = False
            else:
                ranges.append(alternatives)
        if sent:
            where[path] = sent
    if len(ranges) == 1:
        where["$or"] = ranges[0]
    elif ranges and "$and" in layout.operators:
        where["$and"] = [{"$or": alternatives} for alternatives in ranges]
    elif ranges:
        where["$or"] = ranges[0]
        tight = False
    return Pushed(where or None, exact=exact, tight=tight)


# A record another framework wrote without ``metadata.value`` reads as {"content": …} or
# {"value": …} (see item_value): a filter on those keys cannot be sent as metadata.value.
_FOREIGN_KEYS = frozenset({"content", "value"})

# Beyond 2**53 an integer and its float differ, and LangGraph compares the floats: a
# bound there is left to the check here.
_EXACT_FLOATS = 2.0**53


def _equality(op: str, operand: Any, operators: frozenset[str]) -> dict[str, Any] | None:
    """``$eq`` / ``$ne`` of ``operand`` as A2M operators meaning what ``==`` / ``!=``
    mean in Python, or ``None`` when they cannot (a list, an object, an operator A2M
    lacks)."""
    if op not in ("$eq", "$ne") or op not in operators:
        return None
    if isinstance(operand, float) and not math.isfinite(operand):
        return None  # JSON cannot carry it
    if operand is None or isinstance(operand, str) or (_number(operand) and operand not in (0, 1)):
        return {op: operand}
    if not isinstance(operand, (bool, int, float)):
        return None
    # 0, 1 or a boolean: the number and the boolean are one value to Python.
    both = [int(operand), bool(operand)]
    listed = "$in" if op == "$eq" else "$nin"
    return {listed: both} if listed in operators else None


def _ordering(
    path: str, ordering: Mapping[str, Any], operators: frozenset[str]
) -> list[dict[str, Any]] | None:
    """The ``$or`` alternatives holding every value whose ``float()`` is in range: the
    numbers in range, every string (some are numbers), the booleans in range; ``None``
    when there is no bound to send (one no number, or past where floats are exact)."""
    needed = {"$or", "$gte", "$in", *ordering}
    if not needed <= operators:
        return None
    bounds: dict[str, float] = {}
    for op, operand in ordering.items():
        try:
            bound = float(operand)
        except (TypeError, ValueError):
            return None
        if not abs(bound) < _EXACT_FLOATS:  # also refuses NaN
            return None
        bounds[op] = bound
    alternatives: list[dict[str, Any]] = [{path: bounds}, {path: {"$gte": ""}}]
    booleans = [
        b for b in (True, False) if all(ordered(op, float(b), x) for op, x in bounds.items())
    ]
    if booleans:
        alternatives.append({path: {"$in": booleans}})
    return alternatives


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Once:
    """The addresses a search has shown, so each shows once even where several
    principals hold one; those held twice are settled by the server afterwards."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.twice: set[str] = set()

    def again(self) -> None:
        """Start over, for a second look at a longer list."""
        self.seen.clear()
        self.twice.clear()

    def first(self, record: Record) -> bool:
        key = record.key or ""
        if key in self.seen:
            self.twice.add(key)
            return False
        self.seen.add(key)
        return True


def search(
    op: SearchOp, settings: StoreSettings, layout: Layout
) -> Plan[list[tuple[SearchItem, Record]]]:
    """The page ``op`` asks for, each hit with the record it came from (for TTL refresh):
    by exact similarity with an index, by the server's text ranking with a query and no
    index, oldest first without a query. An address several principals hold shows once,
    with the record ``memory/fetch`` gives the caller (one fetch each)."""
    once = _Once()
    hits = yield from _search(op, settings, layout, once)
    settled: list[tuple[SearchItem, Record]] = []
    for item, record in hits:
        if record.key in once.twice:
            fetched = yield Call("fetch", {"key": record.key})
            if fetched.record is not None and fetched.record.id != record.id:
                record = fetched.record
                item.value = item_value(record)
        settled.append((item, record))
    return settled


def _search(
    op: SearchOp, settings: StoreSettings, layout: Layout, once: _Once
) -> Plan[list[tuple[SearchItem, Record]]]:
    prefix = namespace_path(op.namespace_prefix, settings.root)
    window = op.offset + op.limit
    if op.limit == 0:
        return []
    pushed = server_where(op.filter, layout)
    narrowed = {"where": pushed.where} if pushed.where else {}
    if op.query and settings.fields is not None and "embeddings" in layout.capabilities:
        [vector] = yield Embed([op.query], query=True)
        query_vector = [float(x) for x in vector]
        if (
            "similarity" in layout.ranks
            and layout.metric == "cosine"
            and settings.distance == "cosine"
        ):
            return (yield from _nearest(op, settings, layout, query_vector, pushed, once))
        candidates = min(max(window * _OVERFETCH, _MIN_CANDIDATES), layout.max_recall_limit)
        if settings.distance != "cosine":
            # The server ranks by cosine: another metric re-ranks all it can send.
            candidates = layout.max_recall_limit
        params = {"embedding": query_vector, "key_prefix": prefix, **narrowed}
        if not op.filter:
            result = yield Call("recall", {**params, "limit": candidates, "embeddings": True})
            records = list(result.records)
        else:
            # Filtered here: rank every candidate, keep the best that pass, and fetch only
            # their vectors to score them exactly.
            result = yield Call("recall", {**params, "limit": layout.max_recall_limit})
            passing = [r for r in result.records if _hit(r, op, settings) is not None]
            records = passing[:candidates]
            by_id: dict[str, list[float] | None] = {}
            for start in range(0, len(records), layout.keys_per_call):
                chunk = [r.id for r in records[start : start + layout.keys_per_call]]
                vectors = yield Call(
                    "timeline",
                    {"where": {"id": chunk}, "embeddings": True, "limit": len(chunk)},
                )
                by_id.update((r.id, r.embedding) for r in vectors.records)
            for record in records:
                record.embedding = by_id.get(record.id)
        # Ranked by the exact metric first; items are built only for the page asked for.
        similarities = similarity(query_vector, [r.embedding for r in records], settings.distance)
        order = sorted(
            range(len(records)),
            key=lambda i: (similarities[i] is None, -(similarities[i] or 0.0), i),
        )
        ranked: list[tuple[SearchItem, Record]] = []
        for i in order:
            if len(ranked) >= window:
                break
            item = _hit(records[i], op, settings, once)
            if item is not None:
                item.score = similarities[i]
                ranked.append((item, records[i]))
        return ranked[op.offset : window]
    if op.query:
        result = yield Call(
            "recall",
            {"query": op.query, "key_prefix": prefix, "limit": layout.max_recall_limit, **narrowed},
        )
        found = []
        for record in result.records:
            item = _hit(record, op, settings, once)
            if item is not None:
                item.score = record.score
                found.append((item, record))
        return found[op.offset : window]
    hits: list[tuple[SearchItem, Record]] = []
    seen = 0

    def enough(records: list[Record]) -> bool:
        nonlocal seen
        for record in records[seen:]:
            if len(hits) >= window:
                break
            item = _hit(record, op, settings, once)
            if item is not None:
                hits.append((item, record))
        seen = len(records)
        return len(hits) >= window

    # A filter the server runs whole passes every record sent: the page is all it takes
    # (the next, should some be no items); so, likely, when only a string may fail it
    # here. One checked here may reject most of them.
    wide = min(max(2 * window, 100), layout.max_recall_limit)
    page = min(max(window, 10), layout.max_recall_limit)
    records = yield from scan(
        prefix,
        layout,
        where=pushed.where,
        enough=enough,
        page=page if pushed.exact or pushed.tight else wide,
        next_page=page if pushed.exact else wide,
    )
    enough(records)
    return hits[op.offset : window]


def _nearest(
    op: SearchOp,
    settings: StoreSettings,
    layout: Layout,
    query_vector: list[float],
    pushed: Pushed,
    once: _Once,
) -> Plan[list[tuple[SearchItem, Record]]]:
    """A semantic search on a server ranking by cosine alone: its order is LangGraph's,
    and its score ``(cos + 1) / 2`` gives the cosine back, so no vector is sent. One call
    for the page; a second, for up to ``max_recall_limit``, when records that are no hit
    leave it short — at once when the server runs little of the filter."""
    window = op.offset + op.limit
    prefix = namespace_path(op.namespace_prefix, settings.root)
    narrowed = {"where": pushed.where} if pushed.where else {}
    likely = pushed.exact or pushed.tight
    limit = min(window if likely else layout.max_recall_limit, layout.max_recall_limit)
    while True:
        params = {"embedding": query_vector, "key_prefix": prefix, "rank": "similarity"}
        result = yield Call("recall", {**params, "limit": limit, **narrowed})
        once.again()
        hits: list[tuple[SearchItem, Record]] = []
        for record in result.records:
            item = _hit(record, op, settings, once)
            if item is not None and record.score is not None:
                item.score = 2.0 * record.score - 1.0
                hits.append((item, record))
                if len(hits) >= window:
                    break
        if len(hits) >= window or len(result.records) < limit:
            return hits[op.offset : window]
        if limit >= layout.max_recall_limit:
            log.warning(
                "a semantic search beneath %r looked at the server's max_recall_limit (%d) "
                "nearest records and found %d hits of the %d asked for",
                prefix,
                limit,
                len(hits),
                window,
            )
            return hits[op.offset : window]
        limit = layout.max_recall_limit


def _hit(
    record: Record, op: SearchOp, settings: StoreSettings, once: _Once | None = None
) -> SearchItem | None:
    # The filter first: it is cheaper than building the item, and most records fail it.
    if record.key is None:
        return None
    value = item_value(record)
    if not matches_filter(value, op.filter):
        return None
    item = to_item(record, settings.root, search=True, value=value)
    if item is None or item.namespace[: len(op.namespace_prefix)] != op.namespace_prefix:
        return None
    if once is not None and not once.first(record):
        return None
    return cast(SearchItem, item)


def list_namespaces(
    op: ListNamespacesOp,
    settings: StoreSettings,
    layout: Layout,
    scanned: dict[str, list[Record]] | None = None,
) -> Plan[list[tuple[str, ...]]]:
    """The namespaces holding items that match ``op``, sorted, truncated to ``max_depth``:
    one timeline beneath the conditions' literal prefix (shared, through ``scanned``, by
    the listings of one batch beneath the same prefix)."""
    literal: list[str] = []
    for condition in op.match_conditions or ():
        if condition.match_type == "prefix":
            for label in condition.path:
                if label == "*":
                    break
                literal.append(label)
            break
    prefix = namespace_path(literal, settings.root)
    if scanned is None or prefix not in scanned:
        records = yield from scan(prefix, layout)
        if scanned is not None:
            scanned[prefix] = records
    records = scanned[prefix] if scanned is not None else records
    spaces: set[tuple[str, ...]] = set()
    for record in records:
        item = to_item(record, settings.root)
        if item is None or not all(_matches(c, item.namespace) for c in op.match_conditions or ()):
            continue
        spaces.add(item.namespace if op.max_depth is None else item.namespace[: op.max_depth])
    return sorted(spaces)[op.offset : op.offset + op.limit]


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"unsupported match type: {condition.match_type!r}")
    return all(wanted == "*" or label == wanted for label, wanted in pairs)
