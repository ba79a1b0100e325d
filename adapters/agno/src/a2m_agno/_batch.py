"""A filtered listing for an ``a2m`` client whose adapter has no ``iter_entries`` yet: one
``memory/timeline`` filtered by the server, refusing rather than answering short when the
server's limit would cut it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from a2m._adapter_core import Layout, entry_at
from a2m.adapter import A2MAdapter, AsyncA2MAdapter, Entry
from a2m_types import Record


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
