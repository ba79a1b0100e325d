"""Batched reads and writes for an ``a2m`` client whose adapter predates ``write_many`` and
``read_many``: the same calls those make (one read for a batch's keys, one
``memory/remember`` per ``max_records_per_call``), built from the contract's own
validation and record mapping, so the batch is refused whole before anything is sent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from a2m._adapter_core import Layout, entry_at
from a2m.adapter import A2MAdapter, AsyncA2MAdapter, Entry
from a2m_types import DescribeResult, Record, RecordInput

KEYS_PER_CALL = 500
"""Keys named in one ``where`` list: the bundled server turns a list into one ``OR`` per
value, and SQLite refuses an expression deeper than 1,000."""


def _chunks(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[start : start + size] for start in range(0, len(items), size)]


def _per_call(description: DescribeResult | None, layout: Layout) -> int:
    limits = description.limits if description is not None else None
    stated = limits.max_records_per_call if limits is not None else None
    return min(stated or layout.max_recall_limit, layout.max_recall_limit)


def _keyed(adapter: A2MAdapter | AsyncA2MAdapter, keys: Sequence[str]) -> dict[str, str]:
    """A2M key -> entry key, for ``keys`` of the adapter's namespace."""
    return {adapter.scope.address(key)[1]: key for key in dict.fromkeys(keys)}


def _found(
    records: Sequence[Record], keyed: Mapping[str, str], adapter: Any, layout: Layout
) -> dict[str, Entry]:
    found: dict[str, Entry] = {}
    for record in records:
        entry = entry_at(record, adapter.namespace, layout)
        if entry is not None and record.key in keyed:
            found[entry.key] = entry
    return found


def _planned(
    adapter: A2MAdapter | AsyncA2MAdapter,
    layout: Layout,
    writes: Sequence[Mapping[str, Any]],
    held: Sequence[Record],
) -> list[RecordInput]:
    checked = [
        adapter.scope.entry_write(
            w["key"], w["type"], w["value"], w.get("embedding"), w.get("meta")
        )
        for w in writes
    ]
    at_key = {record.key: record for record in held if record.key is not None}
    for write in checked:
        record = at_key.get(adapter.scope.address(write.key)[1])
        conflict = adapter.scope.conflict(record, write.key) if record is not None else None
        if conflict is not None:
            raise conflict
    return [adapter.scope.record_for_write(layout, write) for write in checked]


def read_many(adapter: A2MAdapter, keys: Sequence[str]) -> dict[str, Entry]:
    """The entries at ``keys``: one ``memory/timeline`` per ``max_recall_limit`` keys."""
    layout = adapter._known()
    keyed = _keyed(adapter, keys)
    records: list[Record] = []
    for chunk in _chunks(list(keyed), min(KEYS_PER_CALL, layout.max_recall_limit)):
        params: dict[str, Any] = {"where": {"key": list(chunk)}, "limit": len(chunk)}
        if "embeddings" in layout.capabilities:
            params["embeddings"] = True
        records += adapter.client.timeline(**params).records
    return _found(records, keyed, adapter, layout)


def write_many(adapter: A2MAdapter, writes: Sequence[Mapping[str, Any]]) -> list[Entry]:
    """Store ``writes``; returns them as stored, in order."""
    layout = adapter._known()
    keyed = _keyed(adapter, [w["key"] for w in writes])
    held: list[Record] = []
    for chunk in _chunks(list(keyed), min(KEYS_PER_CALL, layout.max_recall_limit)):
        params: dict[str, Any] = {"where": {"key": list(chunk)}, "limit": len(chunk)}
        held += adapter.client.timeline(**params).records
    planned = _planned(adapter, layout, writes, held)
    for chunk in _chunks(planned, _per_call(adapter.client.description, layout)):
        adapter.client.remember(list(chunk))
    stored = read_many(adapter, [w["key"] for w in writes])
    return [stored[key] for key in keyed.values()]


async def aread_many(adapter: AsyncA2MAdapter, keys: Sequence[str]) -> dict[str, Entry]:
    """:func:`read_many` on the async adapter."""
    layout = await adapter._known()
    keyed = _keyed(adapter, keys)
    records: list[Record] = []
    for chunk in _chunks(list(keyed), min(KEYS_PER_CALL, layout.max_recall_limit)):
        params: dict[str, Any] = {"where": {"key": list(chunk)}, "limit": len(chunk)}
        if "embeddings" in layout.capabilities:
            params["embeddings"] = True
        records += (await adapter.client.timeline(**params)).records
    return _found(records, keyed, adapter, layout)


async def awrite_many(adapter: AsyncA2MAdapter, writes: Sequence[Mapping[str, Any]]) -> list[Entry]:
    """:func:`write_many` on the async adapter."""
    layout = await adapter._known()
    keyed = _keyed(adapter, [w["key"] for w in writes])
    held: list[Record] = []
    for chunk in _chunks(list(keyed), min(KEYS_PER_CALL, layout.max_recall_limit)):
        params: dict[str, Any] = {"where": {"key": list(chunk)}, "limit": len(chunk)}
        held += (await adapter.client.timeline(**params)).records
    planned = _planned(adapter, layout, writes, held)
    for chunk in _chunks(planned, _per_call(adapter.client.description, layout)):
        await adapter.client.remember(list(chunk))
    stored = await aread_many(adapter, [w["key"] for w in writes])
    return [stored[key] for key in keyed.values()]


class IncompleteListingError(RuntimeError):
    """The server cannot list every matching entry of the namespace, so an exact answer is
    not possible; nothing is returned rather than a silently truncated one."""


def _listing(
    adapter: A2MAdapter | AsyncA2MAdapter, layout: Layout, where: Mapping[str, Any]
) -> dict[str, Any]:
    params: dict[str, Any] = {
        "key_prefix": adapter.namespace + "/",
        "where": {**where, "namespace": adapter.namespace},
        "limit": layout.max_recall_limit,
    }
    return params  # no vectors: a listing's callers never read them


def _listed(adapter: Any, layout: Layout, records: Sequence[Record]) -> list[Entry]:
    if len(records) >= layout.max_recall_limit:
        raise IncompleteListingError(
            f"namespace {adapter.namespace!r} holds more matching entries than this server "
            f"lists in one call ({layout.max_recall_limit}), and the client offers no paging"
        )
    found = (entry_at(record, adapter.namespace, layout) for record in records)
    return [entry for entry in found if entry is not None]


def list_where(adapter: A2MAdapter, where: Mapping[str, Any]) -> list[Entry]:
    """Every entry of the namespace whose fields/metadata equal ``where``, oldest first,
    filtered by the server: one ``memory/timeline``."""
    layout = adapter._known()
    records = adapter.client.timeline(**_listing(adapter, layout, where)).records
    return _listed(adapter, layout, records)


async def alist_where(adapter: AsyncA2MAdapter, where: Mapping[str, Any]) -> list[Entry]:
    """:func:`list_where` on the async adapter."""
    layout = await adapter._known()
    records = (await adapter.client.timeline(**_listing(adapter, layout, where))).records
    return _listed(adapter, layout, records)
