"""Complete listings for :class:`~a2m_crewai.A2MStorage`: every record a
``memory/timeline`` selects, over any number of records.

Against a server declaring keyset paging (describe ``timeline.cursor``) a listing pages
by cursor, ``max_recall_limit`` records a call: complete, oldest first, and stable while
others write (a record present for the whole listing comes exactly once; one written
meanwhile comes after every older one). Against a server declaring no ``max_recall_limit``
one ``memory/timeline`` without a limit carries them all (spec §4.4). Against any other
server one ``memory/timeline`` carries the newest ``max_recall_limit`` records, and
reaching that cap warns with :class:`ListingCapped` (an :class:`a2m.IncompleteListing`),
so a listing is never silently short."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from a2m import A2MClient, AsyncA2MClient, IncompleteListing, Record, TimelineResult

from ._mapping import Layout

__all__ = ["ListingCapped", "arecords", "records"]


class ListingCapped(IncompleteListing):
    """A listing reached the server's ``max_recall_limit`` and may be missing older
    records: the server offers no way to page past it (no ``timeline.cursor``), or it
    answered one cursor twice."""


def _capped(reason: str) -> None:
    warnings.warn(reason, ListingCapped, stacklevel=4)


def _cap_reason(layout: Layout) -> str:
    return (
        f"the listing reached the server's max_recall_limit ({layout.max_recall_limit}) "
        "and the server pages no further (no timeline.cursor); older records are not included"
    )


def _following(cursor: str, result: TimelineResult, seen: set[str]) -> str | None:
    """The next page's cursor, or ``None`` at the end; a server that answers a cursor it
    already gave ends the listing (it would loop), with a warning."""
    following = result.next_cursor
    if following is None:
        return None
    if following == cursor or following in seen:
        _capped("the server answered a listing cursor twice; the listing stops there")
        return None
    seen.add(following)
    return following


def records(client: A2MClient, layout: Layout, params: Mapping[str, Any]) -> Iterator[Record]:
    """Every record ``memory/timeline(**params)`` selects, oldest first: ``⌈n/L⌉`` calls
    by cursor (``L`` = ``max_recall_limit``), else one, capped."""
    limit = layout.max_recall_limit
    if not layout.cursor and not layout.recall_declared:
        yield from client.timeline(**params).records  # no declared cap: all of them
        return
    if not layout.cursor:
        found = client.timeline(**params, limit=limit).records
        if len(found) >= limit:
            _capped(_cap_reason(layout))
        yield from found
        return
    cursor: str | None = ""
    seen: set[str] = set()
    while cursor is not None:
        result = client.timeline(**params, limit=limit, cursor=cursor)
        yield from result.records
        cursor = _following(cursor, result, seen)


async def arecords(
    client: AsyncA2MClient, layout: Layout, params: Mapping[str, Any]
) -> AsyncIterator[Record]:
    """:func:`records` on the async client."""
    limit = layout.max_recall_limit
    if not layout.cursor and not layout.recall_declared:
        for record in (await client.timeline(**params)).records:  # no declared cap: all
            yield record
        return
    if not layout.cursor:
        found = (await client.timeline(**params, limit=limit)).records
        if len(found) >= limit:
            _capped(_cap_reason(layout))
        for record in found:
            yield record
        return
    cursor: str | None = ""
    seen: set[str] = set()
    while cursor is not None:
        result = await client.timeline(**params, limit=limit, cursor=cursor)
        for record in result.records:
            yield record
        cursor = _following(cursor, result, seen)
