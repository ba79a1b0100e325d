"""Listing entries completely, as flows both adapters run (:mod:`._adapter_steps`).

Against a server declaring the ``timeline.cursor`` extension a listing pages through
``memory/timeline`` by keyset cursor: complete, oldest first, and stable while others write
(no entry twice, none missed). Against any other server one ``memory/timeline`` carries the
newest ``max_recall_limit`` records, and the result says it was ``truncated`` when that cap
was reached. A ``where`` the server cannot run (operators it does not declare) is applied
here, to each page, with :func:`a2m.filters.matches`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from a2m_types import Record
from a2m_types.rest import Entry, EntryList

from . import filters
from ._adapter_core import Layout, list_params, listed_entries
from ._adapter_owners import Caller, one_per_key
from ._adapter_steps import Flow, call
from ._adapter_where import split_where
from .errors import InvalidParams

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_CALLS_PER_PAGE",
    "AsyncEntryIterator",
    "EntryIterator",
    "Listing",
    "Page",
    "check_page_size",
    "complete",
    "listing",
    "page",
    "page_at",
]

DEFAULT_PAGE_SIZE = 100
"""Records an ``iter_entries`` page asks for, unless told otherwise."""

MAX_CALLS_PER_PAGE = 10
"""Most ``memory/timeline`` calls one ``list(cursor=…)`` page makes while entries filtered
here (tags, an exact namespace, a ``where`` the server cannot run) leave it short; past
that the page is returned short, with its ``next_cursor``."""

_LOCAL = "o:"  # a cursor into the capped window, against a server without cursors


def _refuse(message: str) -> InvalidParams:
    return InvalidParams(message + " (nothing was sent)")


@dataclass(frozen=True)
class Listing:
    """What a listing selects: the timeline params, and what is filtered here."""

    params: dict[str, Any]
    namespace: str
    recursive: bool
    tags: tuple[str, ...]
    local_where: dict[str, Any] | None
    caller: Caller | None = None
    """Whose record a key several owners hold lists as (``None``: every record)."""
    seen: set[str] = field(default_factory=set, compare=False)
    """Keys already listed, so a key whose owners' records fall on two pages lists once."""

    def entries(self, records: Sequence[Record], layout: Layout) -> list[Entry]:
        """The listed entries among ``records``, in order."""
        if self.local_where is not None:
            records = [r for r in records if filters.matches(self.local_where, r.to_wire())]
        return listed_entries(
            records, layout, tags=self.tags, namespace=self.namespace, recursive=self.recursive
        )


def listing(
    layout: Layout,
    *,
    type: str | None,
    tags: Sequence[str] | None,
    namespace: str,
    recursive: bool,
    where: Mapping[str, Any] | None,
    caller: Caller | None = None,
) -> Listing:
    """The listing of ``namespace``'s entries (arguments already checked); with
    ``caller``, on a server with owners, one entry per key: the caller's own record."""
    params = list_params(layout, type=type, namespace=namespace)
    del params["limit"]
    pushed, local = split_where(layout.operators, where)
    if pushed:
        params["where"] = {**params.get("where", {}), **pushed}
    if "scopes" not in layout.capabilities:
        caller = None  # without owners a key holds one record
    return Listing(params, namespace, recursive, tuple(tags or ()), local, caller)


def _own(plan: Listing, layout: Layout, records: Sequence[Record]) -> Flow[Sequence[Record]]:
    if plan.caller is None:
        return records
    return (yield from one_per_key(plan.caller, records, layout.vectors(), plan.seen))


@dataclass(frozen=True)
class Page:
    """One page: its entries, the cursor of the next (``None`` at the end), and whether the
    listing stopped at the server's cap rather than at its end."""

    entries: list[Entry]
    next_cursor: str | None
    truncated: bool


def page(plan: Listing, layout: Layout, cursor: str, size: int) -> Flow[Page]:
    """The records after ``cursor`` (``""``: from the oldest), ``size`` at most, as one
    page; without server cursors, the whole capped window at once."""
    if not layout.cursor and not layout.recall_declared:
        # No cursor, and no declared cap: one timeline without a limit carries them all.
        records = (yield call("timeline", **plan.params)).records
        return Page(plan.entries((yield from _own(plan, layout, records)), layout), None, False)
    if not layout.cursor:
        limit = layout.max_recall_limit
        records = (yield call("timeline", **plan.params, limit=limit)).records
        full = len(records) >= limit
        return Page(plan.entries((yield from _own(plan, layout, records)), layout), None, full)
    result = yield call("timeline", **plan.params, limit=size, cursor=cursor)
    records = yield from _own(plan, layout, result.records)
    following = result.next_cursor
    if following is not None and following == cursor:  # a server that stands still
        return Page(plan.entries(records, layout), None, True)
    return Page(plan.entries(records, layout), following, False)


def complete(plan: Listing, layout: Layout) -> Flow[Page]:
    """Every entry of the listing (``⌈n/max_recall_limit⌉`` calls with server cursors; one,
    capped, without)."""
    entries: list[Entry] = []
    cursor: str | None = ""
    while cursor is not None:
        found = yield from page(plan, layout, cursor, layout.max_recall_limit)
        entries += found.entries
        if found.truncated:
            return Page(entries, None, True)
        cursor = found.next_cursor
    return Page(entries, None, False)


def _local_offset(cursor: str) -> int:
    digits = cursor[len(_LOCAL) :]
    if not cursor.startswith(_LOCAL) or not digits.isdigit():
        raise InvalidParams(
            "cursor: not a cursor of this listing (this server pages without cursors; pass "
            "a next_cursor this adapter returned, or an empty cursor to start) (nothing was sent)",
            data={"field": "cursor"},
        )
    return int(digits)


def page_at(plan: Listing, layout: Layout, cursor: str, limit: int) -> Flow[EntryList]:
    """``list(cursor=…)``: up to ``limit`` entries after ``cursor``."""
    if not layout.cursor:
        offset = _local_offset(cursor) if cursor else 0
        window = yield from page(plan, layout, "", layout.max_recall_limit)
        chosen = window.entries[offset : offset + limit]
        end = offset + len(chosen)
        more = end < len(window.entries)
        return EntryList(
            entries=chosen,
            total=len(chosen),
            next_cursor=f"{_LOCAL}{end}" if more else None,
            truncated=window.truncated,
        )
    entries: list[Entry] = []
    position: str | None = cursor
    truncated = False
    for _ in range(MAX_CALLS_PER_PAGE):
        if position is None or len(entries) >= limit:
            break
        size = min(layout.max_recall_limit, limit - len(entries))
        found = yield from page(plan, layout, position, size)
        entries += found.entries
        position = found.next_cursor
        truncated = truncated or found.truncated
    return EntryList(entries=entries, total=len(entries), next_cursor=position, truncated=truncated)


class EntryIterator(Iterator[Entry]):
    """The entries of an ``iter_entries`` listing, oldest first, fetched a page at a time
    as iteration reaches them. Once exhausted, :attr:`truncated` says whether the listing
    stopped at the server's cap (a server without cursors) rather than at its end."""

    def __init__(self, pages: Callable[[EntryIterator], Iterator[Entry]]) -> None:
        self.truncated = False
        self._entries = pages(self)

    def __iter__(self) -> EntryIterator:
        return self

    def __next__(self) -> Entry:
        return next(self._entries)


class AsyncEntryIterator(AsyncIterator[Entry]):
    """:class:`EntryIterator` for the async adapter: ``async for entry in …``."""

    def __init__(self, pages: Callable[[AsyncEntryIterator], AsyncIterator[Entry]]) -> None:
        self.truncated = False
        self._entries = pages(self)

    def __aiter__(self) -> AsyncEntryIterator:
        return self

    async def __anext__(self) -> Entry:
        return await self._entries.__anext__()


def check_page_size(page_size: int) -> None:
    """Refuse a page size that cannot page."""
    if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
        raise InvalidParams(
            f"page_size must be a positive integer, not {page_size!r} (nothing was sent)"
        )
