"""Searching a LangGraph store on A2M: a ``SearchOp`` (filtered listing, semantic or
lexical) and a ``ListNamespacesOp``, each one A2M call mostly (see :mod:`._store_plan`
for when a search takes more)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from langgraph.store.base import ListNamespacesOp, MatchCondition, SearchItem, SearchOp

from a2m import Record

from ._addressing import namespace_path
from ._effects import Call, Embed, Layout, Plan, log, scan
from ._items import cosines, item_value, matches_filter, to_item

if TYPE_CHECKING:
    from ._store_plan import StoreSettings

__all__ = ["list_namespaces", "search", "server_where"]


# A semantic search re-scores the server's best candidates exactly; it asks for this many
# times the requested window (at least _MIN_CANDIDATES), as the server's own score also
# weighs recency and salience.
_OVERFETCH = 4
_MIN_CANDIDATES = 50


def server_where(filter: Mapping[str, Any] | None, layout: Layout) -> dict[str, Any] | None:
    """The part of a LangGraph filter the server can run with exactly LangGraph's meaning,
    as ``where`` on ``metadata.value``; the rest (and this part again) is checked here.

    Only what means the same on both sides is sent: equality with a string, or with a
    number other than 0 and 1 (Python holds ``True == 1``, A2M does not), and ``$ne``.
    LangGraph's ordering operators compare after converting to a number (a stored ``"5"``
    is greater than 3), which A2M's typed operators do not, so they are applied here."""
    if not filter or not layout.operators:
        return None
    where: dict[str, Any] = {}
    for name, expected in filter.items():
        if not name or "." in name or name in _FOREIGN_KEYS:
            continue
        path = f"metadata.value.{name}"
        if isinstance(expected, dict):
            sent = {
                op: operand
                for op, operand in expected.items()
                if op in layout.operators
                and (
                    (op == "$eq" and _same_equality(operand)) or (op == "$ne" and _scalar(operand))
                )
            }
            if sent:
                where[path] = sent
        elif _same_equality(expected):
            where[path] = expected
    return where or None


# A record another framework wrote without ``metadata.value`` reads as {"content": …} or
# {"value": …} (see item_value): a filter on those keys cannot be sent as metadata.value.
_FOREIGN_KEYS = frozenset({"content", "value"})


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _same_equality(value: Any) -> bool:
    return isinstance(value, str) or (_scalar(value) and value not in (0, 1))


def search(
    op: SearchOp, settings: StoreSettings, layout: Layout
) -> Plan[list[tuple[SearchItem, Record]]]:
    """The page ``op`` asks for, each hit with the record it came from (for TTL refresh):
    by exact cosine with an index, by the server's text ranking with a query and no index,
    oldest first without a query."""
    prefix = namespace_path(op.namespace_prefix, settings.root)
    window = op.offset + op.limit
    if op.limit == 0:
        return []
    pushed = server_where(op.filter, layout)
    narrowed = {"where": pushed} if pushed else {}
    if op.query and settings.fields is not None and "embeddings" in layout.capabilities:
        [vector] = yield Embed([op.query], query=True)
        query_vector = [float(x) for x in vector]
        if "similarity" in layout.ranks and layout.metric == "cosine":
            return (yield from _nearest(op, settings, layout, query_vector, narrowed))
        candidates = min(max(window * _OVERFETCH, _MIN_CANDIDATES), layout.max_recall_limit)
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
        # Ranked by exact cosine first; items are built only for the page asked for.
        similarities = cosines(query_vector, [r.embedding for r in records])
        order = sorted(
            range(len(records)),
            key=lambda i: (similarities[i] is None, -(similarities[i] or 0.0), i),
        )
        ranked: list[tuple[SearchItem, Record]] = []
        for i in order:
            if len(ranked) >= window:
                break
            item = _hit(records[i], op, settings)
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
            item = _hit(record, op, settings)
            if item is not None:
                item.score = record.score
                found.append((item, record))
        return found[op.offset : window]
    hits: list[tuple[SearchItem, Record]] = []
    seen = 0

    def enough(records: list[Record]) -> bool:
        nonlocal seen
        for record in records[seen:]:
            item = _hit(record, op, settings)
            if item is not None and len(hits) < window:
                hits.append((item, record))
        seen = len(records)
        return len(hits) >= window

    # A filter the server runs whole passes every record sent: the page is all it takes
    # (the next, should some be no items). One checked here may reject most of them.
    wide = window if _all_sent(op.filter, pushed) else max(2 * window, 100)
    page = min(max(wide, 10), layout.max_recall_limit)
    records = yield from scan(prefix, layout, where=pushed, enough=enough, page=page)
    enough(records)
    return hits[op.offset : window]


def _nearest(
    op: SearchOp,
    settings: StoreSettings,
    layout: Layout,
    query_vector: list[float],
    narrowed: dict[str, Any],
) -> Plan[list[tuple[SearchItem, Record]]]:
    """A semantic search on a server ranking by cosine alone: its order is LangGraph's,
    and its score ``(cos + 1) / 2`` gives the cosine back, so no vector is sent. One call
    for the page; a second, for up to ``max_recall_limit``, when records that are no hit
    leave it short — at once when the filter is not all run by the server."""
    window = op.offset + op.limit
    prefix = namespace_path(op.namespace_prefix, settings.root)
    whole = _all_sent(op.filter, narrowed.get("where"))
    limit = min(window if whole else layout.max_recall_limit, layout.max_recall_limit)
    while True:
        params = {"embedding": query_vector, "key_prefix": prefix, "rank": "similarity"}
        result = yield Call("recall", {**params, "limit": limit, **narrowed})
        hits: list[tuple[SearchItem, Record]] = []
        for record in result.records:
            item = _hit(record, op, settings)
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


def _all_sent(filter: Mapping[str, Any] | None, where: Mapping[str, Any] | None) -> bool:
    """Whether the server runs all of ``filter`` (as :func:`server_where` sent it)."""
    sent = where or {}
    return all(
        sent.get(f"metadata.value.{name}") == value for name, value in (filter or {}).items()
    )


def _hit(record: Record, op: SearchOp, settings: StoreSettings) -> SearchItem | None:
    # The filter first: it is cheaper than building the item, and most records fail it.
    if record.key is None or not matches_filter(item_value(record), op.filter):
        return None
    item = to_item(record, settings.root, search=True)
    if item is None or item.namespace[: len(op.namespace_prefix)] != op.namespace_prefix:
        return None
    return cast(SearchItem, item)


def list_namespaces(
    op: ListNamespacesOp, settings: StoreSettings, layout: Layout
) -> Plan[list[tuple[str, ...]]]:
    """The namespaces holding items that match ``op``, sorted, truncated to ``max_depth``:
    one timeline beneath the conditions' literal prefix."""
    literal: list[str] = []
    for condition in op.match_conditions or ():
        if condition.match_type == "prefix":
            for label in condition.path:
                if label == "*":
                    break
                literal.append(label)
            break
    records = yield from scan(namespace_path(literal, settings.root), layout)
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
