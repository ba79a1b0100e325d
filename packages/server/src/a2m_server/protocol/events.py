"""The event log's two views as methods (§4.12 to §4.14): polling with opaque cursors,
and subscribing to push. Push only mirrors the log, so nothing is pushed that a poll
would not also return."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a2m_server.errors import ProtocolError
from a2m_types import ErrorCode, EventsParams, SubscribeParams, UnsubscribeParams

from .context import CallContext
from .hub import decode_cursor, encode_cursor, event_to_wire

if TYPE_CHECKING:
    from .core import Protocol

__all__ = ["poll_events", "subscribe", "unsubscribe"]

_DEFAULT_POLL_LIMIT = 100
_MAX_POLL_LIMIT = 1000


def poll_events(proto: Protocol, ctx: CallContext, params: EventsParams) -> dict[str, Any]:
    """§4.12: every retained event after the cursor, once, in order."""
    owner = proto.acting_owner(ctx, params.owner)
    scope = proto.read_scope(owner)
    limit = params.limit or _DEFAULT_POLL_LIMIT
    limit = min(limit, _MAX_POLL_LIMIT)
    store_id = proto.store.store_id
    with proto.store.reading() as reader:
        oldest, head = reader.event_bounds()
        if params.cursor is None:
            return {"events": [], "cursor": encode_cursor(store_id, head)}
        position = decode_cursor(store_id, params.cursor)
        if position > head:
            raise ProtocolError.invalid_params(
                "cursor lies beyond the newest event; it was not issued by this store"
            )
        reset = position < oldest - 1
        start = oldest - 1 if reset else position
        rows = reader.events_after(start, limit=limit + 1, kinds=params.kinds, scope=scope)
    more = len(rows) > limit
    rows = rows[:limit]
    # Without more, everything up to the head has been considered, filtered out or not.
    next_position = rows[-1].seq if more else head
    result: dict[str, Any] = {
        "events": [event_to_wire(row) for row in rows],
        "cursor": encode_cursor(store_id, next_position),
    }
    if more:
        result["more"] = True
    if reset:
        result["reset"] = True
    return result


def subscribe(proto: Protocol, ctx: CallContext, params: SubscribeParams) -> dict[str, Any]:
    """§4.13: start pushing events on this connection, where its transport can."""
    if not ctx.push:
        raise ProtocolError(
            ErrorCode.CAPABILITY_NOT_SUPPORTED,
            f"this {ctx.transport} connection cannot carry notifications; "
            "poll memory/events instead",
            {"capability": "events", "push": False},
        )
    owner = proto.acting_owner(ctx, params.owner)
    proto.events.subscribe(ctx, params.kinds, proto.read_scope(owner))
    return {"subscribed": True}


def unsubscribe(proto: Protocol, ctx: CallContext, params: UnsubscribeParams) -> dict[str, Any]:
    """§4.14: stop pushing; a no-op when not subscribed."""
    proto.events.unsubscribe(ctx)
    return {"subscribed": False}
