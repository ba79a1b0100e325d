"""What the memory page lists: filters read from the URL (so a filtered view can be
shared), checked before anything is read, and pages of records newest first by keyset.

A page cursor names the ``(created_at, rowid)`` of the last row shown and its place among
the rows of its millisecond (one batch shares one), signed and bound to the listing
(filters and principal), so the next page is one indexed read wherever it lies: page 500
costs what page 1 costs."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import QueryParams

from a2m_server.protocol import CallContext, Protocol
from a2m_server.protocol.observations import operator_reach
from a2m_server.protocol.paging import listing_digest
from a2m_server.protocol.wire import timestamp
from a2m_server.store import RecordFilter, Scope, StoredRecord

from ._fields import (
    AGENT_KEY,
    CLASSIFICATION_KEY,
    FRAMEWORK_KEY,
    NOTE,
    OBSERVATION_AGENT_KEY,
    OBSERVATION_KEY,
)

__all__ = [
    "PAGE_SIZE",
    "SEARCH_LIMIT",
    "BadRequest",
    "Filters",
    "Page",
    "SearchPage",
    "agent_branches",
    "read_page",
    "recall_where",
    "selector_for",
]

PAGE_SIZE = 50
SEARCH_LIMIT = 50
"""Rows a text search shows per page. Recall ranks and has no cursor: page ``k`` asks it
for the best ``k * SEARCH_LIMIT + 1`` (within the server's declared maximum) and shows
the last ``SEARCH_LIMIT`` of them."""
MAX_SEARCH_PAGE = 1000
"""The highest search page the URL may name (the server's recall limit ends it sooner)."""
MAX_FILTER_LENGTH = 500
MAX_CLASSIFICATIONS = 20
OLDEST = "oldest"
"""The ``cursor`` value asking for the last page (the oldest records)."""


class BadRequest(Exception):
    """A URL or form the page cannot act on: answered with a 400 page naming why."""


@dataclass(frozen=True)
class Filters:
    """The filter bar's state, as the URL carries it."""

    tag: str = ""
    classifications: tuple[str, ...] = ()
    framework: str = ""
    tier: str = ""
    q: str = ""
    cursor: str = ""
    page: int = 1
    """The page of a text search's matches (from 1); a listing pages by ``cursor``."""

    @classmethod
    def from_query(cls, query: QueryParams, *, tiers: list[str]) -> Filters:
        """The filters of a query string (a Starlette ``QueryParams``); BadRequest for one
        that cannot be meant."""

        def one(name: str) -> str:
            values = query.getlist(name)
            if len(values) > 1:
                raise BadRequest(f"{name} is given {len(values)} times; give it once")
            value = (values[0] if values else "").strip()
            if len(value) > MAX_FILTER_LENGTH:
                raise BadRequest(f"{name} is longer than {MAX_FILTER_LENGTH} characters")
            if "\x00" in value:
                raise BadRequest(f"{name} holds a NUL character")
            return value

        classes = query.getlist("classification")
        picked = tuple(dict.fromkeys(c.strip() for c in classes if c.strip()))
        if len(picked) > MAX_CLASSIFICATIONS:
            raise BadRequest(f"at most {MAX_CLASSIFICATIONS} classifications at once")
        if any(len(c) > MAX_FILTER_LENGTH or "\x00" in c for c in picked):
            raise BadRequest("a classification is too long or holds a NUL character")
        tier = one("tier")
        if tier and tier not in tiers:
            raise BadRequest(f"no tier named {tier!r}; the tiers are {', '.join(tiers) or 'none'}")
        q, cursor, page = one("q"), one("cursor"), one("page")
        if page and not q:
            raise BadRequest("page applies to a text search (q); a listing pages by its cursor")
        if page and cursor:
            raise BadRequest("a text search pages by page, not by cursor")
        if page and not (page.isascii() and page.isdigit() and 1 <= int(page) <= MAX_SEARCH_PAGE):
            raise BadRequest(f"page must be a whole number from 1 to {MAX_SEARCH_PAGE}")
        return cls(
            tag=one("tag"),
            classifications=picked,
            framework=one("framework"),
            tier=tier,
            q=q,
            cursor=cursor,
            page=int(page) if page else 1,
        )

    def query_items(self, *, cursor: str | None = None) -> list[tuple[str, str]]:
        """The filters as query-string pairs (``cursor`` replaces the current one)."""
        items: list[tuple[str, str]] = []
        if self.q:
            items.append(("q", self.q))
        if self.tag:
            items.append(("tag", self.tag))
        items.extend(("classification", c) for c in self.classifications)
        if self.framework:
            items.append(("framework", self.framework))
        if self.tier:
            items.append(("tier", self.tier))
        chosen = self.cursor if cursor is None else cursor
        if chosen:
            items.append(("cursor", chosen))
        if self.q and self.page > 1:
            items.append(("page", str(self.page)))
        return items

    @property
    def active(self) -> bool:
        return bool(self.tag or self.classifications or self.framework or self.tier or self.q)


def agent_branches(agent: str | None) -> list[dict[str, Any]] | None:
    """The records of one agent, as ``where`` alternatives: its ``source_agent``, or,
    without one, its owner (``""``: records nobody claims)."""
    if agent is None:
        return None
    unclaimed = {AGENT_KEY: [None, ""], OBSERVATION_AGENT_KEY: [None, ""]}
    if agent == "":
        return [{**unclaimed, "owner": None}]
    return [
        {AGENT_KEY: agent},
        {AGENT_KEY: [None, ""], OBSERVATION_AGENT_KEY: agent},
        {**unclaimed, "owner": agent},
    ]


def _classification_branches(picked: tuple[str, ...]) -> list[dict[str, Any]] | None:
    if not picked:
        return None
    branches: list[dict[str, Any]] = [{CLASSIFICATION_KEY: list(picked)}]
    if NOTE in picked:
        # An observation written without a classification carries the note badge.
        branches.append({OBSERVATION_KEY: True, CLASSIFICATION_KEY: None})
    return branches


def selector_for(
    proto: Protocol, ctx: CallContext, filters: Filters, agent: str | None
) -> RecordFilter:
    """The store filter for a listing, within what the caller's principal may read."""
    owner = proto.acting_owner(ctx, None)
    where: dict[str, Any] = {}
    if filters.framework:
        where[FRAMEWORK_KEY] = filters.framework
    # Each condition is a list of alternatives; both at once is every pairing of them.
    alternatives: list[dict[str, Any]] | None = None
    for branches in (agent_branches(agent), _classification_branches(filters.classifications)):
        if branches is None:
            continue
        if alternatives is None:
            alternatives = branches
        else:
            alternatives = [{**a, **b} for a in alternatives for b in branches]
    narrowed = None if alternatives is None else [RecordFilter(where=w) for w in alternatives]
    scope: Scope | None = proto.read_scope(owner)
    reach = operator_reach(proto, ctx)
    any_of = narrowed
    if reach is not None:
        # An operator audits every agent's observations of its project: what its principal
        # reads, or those, each narrowed to the agent and classifications asked for.
        if narrowed is not None:
            reach = reach.with_(any_of=[p.with_(any_of=narrowed) for p in reach.any_of or ()])
        any_of = [RecordFilter(scope=scope, any_of=narrowed), reach]
        scope = None
    return RecordFilter(
        scope=scope,
        tier=filters.tier or None,
        where=where or None,
        tags_all=[filters.tag] if filters.tag else None,
        any_of=any_of,
    )


def recall_where(filters: Filters, agent: str | None) -> dict[str, Any] | None:
    """The listing's conditions as one ``where`` for ``memory/recall`` (a text search):
    the framework, and the agent and classifications as ``$or`` alternatives."""
    parts: list[dict[str, Any]] = []
    if filters.framework:
        parts.append({FRAMEWORK_KEY: filters.framework})
    for branches in (agent_branches(agent), _classification_branches(filters.classifications)):
        if branches is not None:
            parts.append({"$or": branches})
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else {"$and": parts}


@dataclass(frozen=True)
class Page:
    records: list[StoredRecord]
    next_cursor: str | None
    """The cursor of the following (older) page, or ``None`` on the last page."""
    oldest: bool
    """This is the last page, asked for directly."""


@dataclass(frozen=True)
class SearchPage:
    """Where one page of a text search's matches lies among them."""

    page: int
    """This page's number, from 1."""
    first: int
    """The rank of its first row, from 1."""
    more: bool
    """A further page has matches."""
    limit: int | None
    """The server's recall limit, when it ended the matches before they ran out (the
    recall could rank no further); ``None`` when they ended on their own."""


def read_page(
    proto: Protocol, selector: RecordFilter, filters: Filters, *, limit: int = PAGE_SIZE
) -> Page:
    """One page of the listing, newest first: the first, the one after ``filters.cursor``,
    or the last (``cursor=oldest``); BadRequest for a cursor this listing did not issue."""
    store_id = proto.store.store_id
    digest = listing_digest(
        view="ui-newest-first",
        tier=selector.tier,
        where=selector.where,
        tags=selector.tags_all,
        any_of=repr(selector.any_of),
        scope=selector.scope,
    )
    with proto.store.reading() as reader:
        if filters.cursor == OLDEST:
            oldest = reader.select(selector, order="created_asc", limit=limit)
            oldest.reverse()
            return Page(oldest, None, oldest=True)
        if not filters.cursor:
            rows, shown_before = reader.select(selector, order="created_desc", limit=limit + 1), 0
            group_at = None
        else:
            group_at, rowid, position = decode_cursor(store_id, digest, filters.cursor)
            rows, shown_before = _before(reader, selector, group_at, rowid, position, limit + 1)
    following = None
    if len(rows) > limit:
        rows = rows[:limit]
        last = rows[-1]
        # The last row's place in its millisecond: rows shown of it so far, on this page
        # and, when it is the cursor's millisecond, on the pages before.
        position = sum(1 for r in rows if r.created_at == last.created_at)
        if last.created_at == group_at:
            position += shown_before
        following = encode_cursor(store_id, digest, last.created_at, last.rowid, position)
    return Page(rows, following, oldest=False)


def _before(
    reader: Any, selector: RecordFilter, created_at: int, rowid: int, position: int, limit: int
) -> tuple[list[StoredRecord], int]:
    """The ``limit`` records after the cursor row ``(created_at, rowid)`` newest first (the
    rest of its millisecond, then older ones), and how many of that millisecond's rows
    came before them.

    The cursor row was the ``position``-th of its millisecond: the read starts there
    (one indexed step per row skipped, nothing decoded) and checks it finds the cursor row
    at that place; when rows of that millisecond came or went since, the millisecond is
    read whole instead."""
    stamp = timestamp(created_at)
    where = dict(selector.where or {})
    same_ms = selector.with_(where={**where, "created_at": stamp})
    probe = reader.select(same_ms, order="created_desc", limit=limit + 1, offset=position - 1)
    if probe and probe[0].rowid == rowid:
        rows, before = probe[1:], position
    else:
        whole = reader.select(same_ms, order="created_desc")
        rows = [r for r in whole if r.rowid < rowid][:limit]
        before = sum(1 for r in whole if r.rowid >= rowid)
    if len(rows) < limit:
        rows += reader.select(
            selector.with_(where={**where, "created_at": {"$lt": stamp}}),
            order="created_desc",
            limit=limit - len(rows),
        )
    return rows, before


_CURSOR_PREFIX = "u1."
_MAC_BYTES = 12


def _cursor_key(store_id: str) -> bytes:
    return hashlib.sha256(b"a2m-ui-cursor\x00" + store_id.encode()).digest()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def encode_cursor(store_id: str, digest: str, created_at: int, rowid: int, position: int) -> str:
    """The cursor after the row ``(created_at, rowid)``, the ``position``-th (from 1) of
    its millisecond in this listing; signed, and bound to the store and the listing."""
    body = _b64(json.dumps([digest, created_at, rowid, position], separators=(",", ":")).encode())
    mac = hmac.new(_cursor_key(store_id), body.encode(), hashlib.sha256).digest()[:_MAC_BYTES]
    return f"{_CURSOR_PREFIX}{body}.{_b64(mac)}"


def decode_cursor(store_id: str, digest: str, cursor: str) -> tuple[int, int, int]:
    """``(created_at, rowid, position)`` of a cursor this listing issued; BadRequest for any
    other (altered, from another store, for other filters or another principal)."""
    try:
        if not cursor.startswith(_CURSOR_PREFIX):
            raise ValueError(cursor)
        body, _, mac = cursor[len(_CURSOR_PREFIX) :].partition(".")
        expected = hmac.new(_cursor_key(store_id), body.encode(), hashlib.sha256).digest()
        given = base64.urlsafe_b64decode(mac + "=" * (-len(mac) % 4))
        signed = hmac.compare_digest(given, expected[:_MAC_BYTES])
        fields = (
            json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))) if signed else None
        )
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise BadRequest(
            "the page cursor is not one of this page's; start again from the first page"
        ) from None
    if fields is None:
        raise BadRequest(
            "the page cursor was altered, or issued by another server; start again from the first page"
        )
    if (
        not isinstance(fields, list)
        or len(fields) != 4
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in fields[1:])
        or fields[3] < 1
    ):
        raise BadRequest(
            "the page cursor is not one of this page's; start again from the first page"
        )
    if fields[0] != digest:
        raise BadRequest(
            "the page cursor was issued for another listing (other filters or another principal)"
        )
    return fields[1], fields[2], fields[3]
