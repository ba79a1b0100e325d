"""The event log as the protocol core uses it: deletion events, the wire form of an
event, opaque cursors, and :class:`EventHub`, which pushes newly logged events to
subscribed connections. It depends on the store alone, never on the method handlers
(``events.py`` holds those), so the layers read one way."""

from __future__ import annotations

import base64
import binascii
import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from a2m_server.errors import ProtocolError
from a2m_server.store import EventRow, Scope, Store, StoredRecord
from a2m_types import EVENT_NOTIFICATION

from .context import CallContext
from .wire import timestamp

__all__ = [
    "EventHub",
    "decode_cursor",
    "deletion_event",
    "encode_cursor",
    "event_to_wire",
]

log = logging.getLogger("a2m_server.events")


def deletion_event(
    records: Sequence[StoredRecord], fallback_owner: str | None
) -> tuple[dict[str, Any], str | None, str | None]:
    """The payload of one coalesced deletion event (a forget, an expiry), and the owner
    and tier to file it under. Ids and keys are named only when one owner held all the
    records: only then could every receiver have recalled them (§4.12)."""
    owners = {r.owner for r in records}
    tiers = {r.tier for r in records}
    owner = next(iter(owners)) if len(owners) == 1 else (fallback_owner if not records else None)
    tier = next(iter(tiers)) if len(tiers) == 1 else None
    payload: dict[str, Any] = {"count": len(records)}
    if len(owners) <= 1:
        payload["ids"] = [r.id for r in records]
        payload["keys"] = [r.key for r in records if r.key is not None]
    return payload, owner, tier


def event_to_wire(row: EventRow) -> dict[str, Any]:
    """An event as the spec shapes it: kind, at, then its own fields."""
    return {"kind": row.kind, "at": timestamp(row.at), **row.payload}


def encode_cursor(store_id: str, seq: int) -> str:
    raw = f"{store_id}:{seq}".encode()
    return "c1." + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(store_id: str, cursor: str) -> int:
    """The position a cursor names; INVALID_PARAMS for one this store never issued."""
    try:
        if not cursor.startswith("c1."):
            raise ValueError(cursor)
        body = cursor[3:]
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()
        issuer, _, seq = raw.partition(":")
        position = int(seq)
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise ProtocolError.invalid_params(
            "cursor was not issued by this server; poll without a cursor to start from now"
        ) from None
    if issuer != store_id or position < 0:
        raise ProtocolError.invalid_params(
            "cursor was issued by another store; poll without a cursor to start from now"
        )
    return position


@dataclass
class _Subscription:
    context: CallContext
    kinds: frozenset[str] | None
    scope: Scope | None
    after: int


class EventHub:
    """Push delivery: forwards each newly logged event to matching subscriptions."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._subscriptions: dict[int, _Subscription] = {}
        self._lock = threading.Lock()
        self._published = 0

    def subscribe(self, ctx: CallContext, kinds: Sequence[str] | None, scope: Scope | None) -> None:
        # Events committed by other processes sharing the store reach subscribers too.
        self._store.listen(self.publish)
        with self._lock:
            with self._store.reading() as reader:
                head = reader.event_bounds()[1]
            if not self._subscriptions:
                self._published = head
            self._subscriptions[ctx.connection_id] = _Subscription(
                ctx, frozenset(kinds) if kinds is not None else None, scope, head
            )

    def unsubscribe(self, ctx: CallContext) -> None:
        with self._lock:
            self._subscriptions.pop(ctx.connection_id, None)

    def close(self) -> None:
        with self._lock:
            self._subscriptions.clear()

    def publish(self) -> None:
        """Deliver events logged since the last publish, in log order."""
        with self._lock:
            if not self._subscriptions:
                return
            with self._store.reading() as reader:
                rows = reader.events_after(self._published, limit=1_000_000, kinds=None, scope=None)
            if not rows:
                return
            self._published = rows[-1].seq
            subscriptions = list(self._subscriptions.values())
            for row in rows:
                message = json.loads(
                    json.dumps(
                        {
                            "jsonrpc": "2.0",
                            "method": EVENT_NOTIFICATION,
                            "params": event_to_wire(row),
                        }
                    )
                )
                for sub in subscriptions:
                    if row.seq <= sub.after or not _visible(row, sub):
                        continue
                    notify = sub.context.notify
                    if notify is None:
                        continue
                    try:
                        notify(message)
                    except Exception:
                        log.exception("dropping a notification the peer could not take")


def _visible(row: EventRow, sub: _Subscription) -> bool:
    if sub.kinds is not None and row.kind not in sub.kinds:
        return False
    scope = sub.scope
    if scope is None:
        return True
    if row.owner is None or row.owner == scope.owner:
        return True
    return row.tier is not None and row.tier in scope.shared_tiers
