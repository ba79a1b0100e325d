"""A batch of LangGraph store operations as A2M calls, decided once for both stores.

A batch runs as LangGraph's own stores run one: every read sees the store as it was
before the batch, then the batch's writes apply, the last write to an address winning.
Its calls, whatever the number of operations:

- all ``GetOp``: one ``memory/timeline`` naming their keys (per 500 keys), plus one
  ``memory/fetch`` per key that several principals hold (the server knows which record
  is the caller's); a single key is one ``memory/fetch`` instead;
- each distinct ``SearchOp`` (identical ones are answered once) (:mod:`._store_search`):
  one ``memory/recall`` with a query; a semantic one on a server ranking by similarity
  alone (describe ``recall.rank``) adds a second when records filtered here leave the
  page short; elsewhere a semantic one with a filter adds one ``memory/timeline`` for its
  winners' vectors;
  without one, a ``memory/timeline`` per page until the page asked for is full (on a
  server without a timeline cursor one page, with no ``limit`` where it declares no
  ``max_recall_limit``, else with an :class:`~a2m.IncompleteListing` warning when full);
- each distinct literal prefix of the ``ListNamespacesOp``: a ``memory/timeline`` per
  ``max_recall_limit`` records beneath it;
- all ``PutOp`` with a value: one embedding call and one ``memory/remember`` (per
  ``max_records_per_call``); then all deletes: one ``memory/forget`` (per 500 keys),
  so a put the server refuses leaves the batch's deletes undone;
- refreshing the TTL of items read: one ``memory/timeline`` and one ``memory/remember``.

Every operation is checked before the first call, so a refused batch sends nothing."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import (
    GetOp,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchOp,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)
from langgraph.store.base import InvalidNamespaceError as InvalidNamespace

from a2m import CapabilityNotSupported, PayloadTooLargeError, Record
from a2m.adapter_support import as_written
from a2m_types import format_timestamp

from ._addressing import item_address, names_needed, namespace_path
from ._effects import DESCRIBE, Call, Embed, Layout, Plan, remember_all
from ._items import (
    RESERVED_ROOT,
    VALUE_UPDATED_AT,
    check_filter,
    checked_value,
    readable_content,
    to_item,
    ttl_seconds,
)
from ._store_search import list_namespaces, search

__all__ = ["StoreSettings", "check_op", "plan_batch"]


@dataclass
class StoreSettings:
    """What a store is configured with, and what it has learnt of its server."""

    root: tuple[str, ...]
    fields: list[tuple[str, str | list[str]]] | None
    """Tokenized index fields (``None``: no semantic index)."""
    source_framework: str
    agent: str | None
    layout: Layout | None = None
    distance: str = "cosine"
    """``IndexConfig.distance_type``: ``cosine``, ``inner_product`` or ``l2``."""


def plan_batch(
    ops: Iterable[Op], settings: StoreSettings, *, checked: bool = False
) -> Plan[list[Result]]:
    """The calls that carry out ``ops``; returns their results in order. ``checked``:
    every op has passed :func:`check_op` already."""
    ops = [_normalised(op) for op in ops]
    puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
    for op in ops:
        if not checked:
            check_op(op, settings.root)
        if isinstance(op, PutOp):
            puts[(op.namespace, op.key)] = op
    if settings.layout is None:
        settings.layout = Layout.of((yield DESCRIBE))
    layout = settings.layout
    results: list[Result] = [None] * len(ops)
    refresh: dict[str, Record] = {}

    gets = [(i, op) for i, op in enumerate(ops) if isinstance(op, GetOp)]
    if gets:
        found = yield from _read_addresses(
            [item_address(op.namespace, op.key, settings.root) for _, op in gets], layout
        )
        for i, op in gets:
            record = found.get(item_address(op.namespace, op.key, settings.root))
            item = to_item(record, settings.root) if record is not None else None
            if item is not None and (item.namespace, item.key) == (op.namespace, op.key):
                results[i] = item
                if op.refresh_ttl:
                    _note_refresh(refresh, record)
    # Identical reads (as merged concurrent calls often hold) are answered once.
    answered: dict[str, Result] = {}
    scanned: dict[str, list[Record]] = {}
    for i, op in enumerate(ops):
        if not isinstance(op, (SearchOp, ListNamespacesOp)):
            continue
        same = repr(op)
        if same in answered:
            results[i] = copy.deepcopy(answered[same])
            continue
        if isinstance(op, SearchOp):
            hits = yield from search(op, settings, layout)
            results[i] = [item for item, _ in hits]
            if op.refresh_ttl:
                for _, record in hits:
                    _note_refresh(refresh, record)
        else:
            results[i] = yield from list_namespaces(op, settings, layout, scanned)
        answered[same] = results[i]

    if refresh:
        yield from _refresh(list(refresh.values()), layout)
    if puts:
        yield from _write(list(puts.values()), settings, layout)
    return results


def _normalised(op: Op) -> Op:
    """``op`` with a list where LangGraph means a tuple (``search(["a"])``,
    ``get(["a"], k)``, a list ``MatchCondition`` path), as LangGraph's database stores
    read them."""
    namespace: Any = op.namespace if isinstance(op, (GetOp, PutOp)) else None
    if isinstance(op, (GetOp, PutOp)) and isinstance(namespace, list):
        return op._replace(namespace=tuple(namespace))
    prefix: Any = op.namespace_prefix if isinstance(op, SearchOp) else None
    if isinstance(op, SearchOp) and isinstance(prefix, list):
        return op._replace(namespace_prefix=tuple(prefix))
    if isinstance(op, ListNamespacesOp) and op.match_conditions:
        return op._replace(
            match_conditions=tuple(
                MatchCondition(c.match_type, tuple(c.path)) for c in op.match_conditions
            )
        )
    return op


def check_op(op: Op, root: tuple[str, ...]) -> None:
    """Refuse an operation no store would run, before anything is sent."""
    op = _normalised(op)
    if not isinstance(op, (GetOp, PutOp, SearchOp, ListNamespacesOp)):
        raise ValueError(f"unknown operation type: {type(op).__name__}")
    validate_op_namespace(op)
    if isinstance(op, PutOp):
        if not op.namespace:
            raise InvalidNamespace("Namespace cannot be empty.")
        if op.namespace[0] == RESERVED_ROOT:
            raise InvalidNamespace(
                f'Root label for namespace cannot be "{RESERVED_ROOT}". Got: {op.namespace}'
            )
        if op.value is not None:
            checked_value(op.value)
        item_address(op.namespace, op.key, root)
    elif isinstance(op, SearchOp):
        check_filter(op.filter)
        if op.limit < 0 or op.offset < 0:
            raise ValueError("limit and offset must be 0 or more")


# --- reads --------------------------------------------------------------------------------


def _read_addresses(addresses: Sequence[str], layout: Layout) -> Plan[dict[str, Record]]:
    """The records at ``addresses``, as ``memory/fetch`` picks them (the caller's own,
    else the unowned one, else the latest), in as few timeline calls as the server
    allows, plus one fetch per address several principals hold."""
    unique = list(dict.fromkeys(addresses))
    found: dict[str, Record] = {}
    if len(unique) == 1:
        # One key: a fetch is the cheapest read there is, and the server knows the caller.
        fetched = yield Call("fetch", {"key": unique[0]})
        if fetched.record is not None:
            found[unique[0]] = fetched.record
        return found
    step = layout.keys_per_call
    for start in range(0, len(unique), step):
        chunk = unique[start : start + step]
        try:
            # Room for more records than keys: where owners are kept, several may hold one.
            result = yield Call(
                "timeline", {"where": {"key": chunk}, "limit": layout.max_recall_limit}
            )
        except CapabilityNotSupported:
            # A server of the REST draft alone filters on nothing but namespace and type:
            # there, one fetch per address.
            for address in chunk:
                fetched = yield Call("fetch", {"key": address})
                if fetched.record is not None:
                    found[address] = fetched.record
            continue
        held: dict[str, list[Record]] = {}
        for record in result.records:
            if record.key is not None:
                held.setdefault(record.key, []).append(record)
        # Only the server knows which principal the caller is: where several records
        # hold an address (or a full page may have left some out), it decides.
        unsure = [key for key, records in held.items() if len(records) > 1]
        if len(result.records) >= layout.max_recall_limit:
            unsure += [key for key in chunk if key not in held]
        for key, records in held.items():
            if len(records) == 1:
                found[key] = records[0]
        for key in unsure:
            fetched = yield Call("fetch", {"key": key})
            if fetched.record is not None:
                found[key] = fetched.record
    return found


# --- TTL ----------------------------------------------------------------------------------


def _note_refresh(refresh: dict[str, Record], record: Record | None) -> None:
    if record is not None and isinstance((record.metadata or {}).get("ttl_s"), int):
        refresh.setdefault(record.id, record)


def _refresh(records: list[Record], layout: Layout) -> Plan[None]:
    """Rewrite records whose TTL a read refreshes: the server counts a TTL from the last
    write. Their vectors are fetched first, since a rewrite without one would drop it."""
    fetched: list[Record] = []
    step = layout.keys_per_call
    for start in range(0, len(records), step):
        chunk = [r.id for r in records[start : start + step]]
        result = yield Call(
            "timeline", {"where": {"id": chunk}, "embeddings": True, "limit": len(chunk)}
        )
        fetched += result.records
    rewrites = []
    for record in fetched:
        metadata = dict(record.metadata or {})
        stamp = (record.model_extra or {}).get("updated_at")
        metadata.setdefault(VALUE_UPDATED_AT, stamp or format_timestamp(record.created_at))
        rewrites.append({**as_written(record, layout.capabilities), "metadata": metadata})
    yield from _remember(rewrites, layout)


# --- writes -------------------------------------------------------------------------------


def _write(puts: list[PutOp], settings: StoreSettings, layout: Layout) -> Plan[None]:
    doomed = [
        (
            item_address(op.namespace, op.key, settings.root),
            namespace_path(op.namespace, settings.root),
        )
        for op in puts
        if op.value is None
    ]
    kept = [op for op in puts if op.value is not None]
    vectors = yield from _vectors(kept, settings)
    records = [_record(op, vectors.get(i), settings, layout) for i, op in enumerate(kept)]
    # The new state first: when the server refuses a put, nothing was deleted yet.
    if records:
        yield from remember_all(records, layout)
    step = layout.keys_per_call
    for start in range(0, len(doomed), step):
        chunk = doomed[start : start + step]
        try:
            yield Call("forget", {"where": {"key": [address for address, _ in chunk]}})
        except CapabilityNotSupported:  # the REST draft alone: one delete per address
            for address, space in chunk:
                yield Call("forget", {"where": {"key": address, "namespace": space}})


def _vectors(puts: list[PutOp], settings: StoreSettings) -> Plan[dict[int, list[float]]]:
    """One embedding per indexed item: the text at its index fields (several texts are
    embedded as one, so an item keeps one vector, stored verbatim)."""
    if settings.fields is None:
        return {}
    texts: dict[int, str] = {}
    for i, op in enumerate(puts):
        if op.index is False:
            continue
        paths = (
            settings.fields
            if op.index is None
            else [(path, tokenize_path(path)) for path in op.index]
        )
        found = [text for _, path in paths for text in get_text_at_path(op.value, path)]
        if found:
            texts[i] = "\n".join(found)
    if not texts:
        return {}
    embedded = yield Embed(list(texts.values()))
    return {i: [float(x) for x in vector] for i, vector in zip(texts, embedded, strict=True)}


def _record(
    op: PutOp, vector: list[float] | None, settings: StoreSettings, layout: Layout
) -> dict[str, Any]:
    value = checked_value(op.value)
    space = namespace_path(op.namespace, settings.root)
    metadata: dict[str, Any] = {
        "namespace": space,
        "type": "semantic",
        "value": value,
        "source_framework": settings.source_framework,
    }
    if settings.agent is not None:
        metadata["source_agent"] = settings.agent
    metadata.update(names_needed(op.namespace, op.key))
    ttl = ttl_seconds(op.ttl)
    if ttl is not None:
        metadata["ttl_s"] = ttl
    record: dict[str, Any] = {
        "key": item_address(op.namespace, op.key, settings.root),
        "content": readable_content(value, layout.max_content_length),
        "metadata": metadata,
    }
    tier = layout.tier_for_kind.get("semantic")
    if tier is not None:
        record["tier"] = tier
    if vector is not None and "embeddings" in layout.capabilities:
        record["embedding"] = vector
    if settings.agent is not None and "scopes" in layout.capabilities:
        record["owner"] = settings.agent
    return record


def _remember(records: list[dict[str, Any]], layout: Layout) -> Plan[None]:
    """Rewrite ``records`` (each as it is stored, so each call alone leaves the store
    right): one ``memory/remember`` per ``max_records_per_call``, a call the server finds
    too large (413) sent again as two halves, down to one record."""
    step = layout.max_records_per_call
    pending = [records[start : start + step] for start in range(0, len(records), step)]
    while pending:
        batch = pending.pop(0)
        try:
            yield Call("remember", {"records": batch})
        except PayloadTooLargeError:
            if len(batch) == 1:
                raise
            middle = len(batch) // 2
            pending[:0] = [batch[:middle], batch[middle:]]
