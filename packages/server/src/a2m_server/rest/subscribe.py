"""``WS /a2m/v1/{namespace}/subscribe?pattern=glob``: a ``write`` or ``delete`` message for
every entry of the namespace, matching the glob, that changes after the connection opened.

The route follows the store's event log, so it sees every writer (JSON-RPC, REST, another
process on the same file): every ~100 ms a worker thread reads the events since its
cursor. It remembers the entries it has announced, which is how a ``delete`` message can
carry the entry that went, whatever removed it (a delete, ``memory/forget``, TTL expiry,
a tier dropping it)."""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from a2m_server._web import principal_of
from a2m_server.protocol.core import now_ms
from a2m_server.server import A2MServer, Connection
from a2m_server.store import StoredRecord, StoreReader
from a2m_types import MAX_KEY_LENGTH, key_matches

from .errors import RestError
from .params import parse_target
from .view import RestView

__all__ = ["POLL_INTERVAL", "SubscribeEndpoint"]

log = logging.getLogger("a2m_server.rest")

POLL_INTERVAL = 0.1
"""Seconds between two reads of the event log."""

_BATCH = 1000


@dataclass
class _Known:
    entry: dict[str, Any]
    expires_at: int | None


class _Subscription:
    """One subscriber: its cursor in the event log and the entries it has announced.
    Only one worker thread touches it at a time."""

    def __init__(
        self, connection: Connection, view: RestView, namespace: str, pattern: str | None
    ) -> None:
        self.connection = connection
        self.view = view
        self.namespace = namespace
        self.pattern = pattern
        self.cursor = 0
        self.known: dict[str, _Known] = {}

    @classmethod
    def open(
        cls, server: A2MServer, principal: str | None, namespace: str, pattern: str | None
    ) -> _Subscription:
        try:
            connection = server.connect(transport="http", principal=principal)
        except RuntimeError:
            raise RestError("UNAVAILABLE", "the server is shutting down") from None
        view = RestView(server.protocol, connection.context)
        try:
            view.require("keys", "addressing entries by namespace")
            subscription = cls(connection, view, namespace, pattern)
            with server.store.reading() as reader:
                subscription.cursor = reader.event_bounds()[1]
                subscription.known = subscription._snapshot(reader)
        except BaseException:
            connection.close()
            raise
        return subscription

    def close(self) -> None:
        self.connection.close()

    def _announce(self, stored: StoredRecord) -> _Known | None:
        entry = self.view.entry(stored)
        if entry is None or entry.namespace != self.namespace:
            return None
        if not key_matches(self.pattern, entry.key):
            return None
        return _Known(entry.to_wire(), stored.expires_at)

    def _snapshot(self, reader: StoreReader) -> dict[str, _Known]:
        view = self.view
        selector = view.selector(self.namespace, recursive=False, scope=view.read_scope)
        known: dict[str, _Known] = {}
        for stored in reader.select(selector, embeddings=True):
            announced = self._announce(stored)
            if announced is not None:
                known[stored.id] = announced
        return known

    def poll(self) -> list[dict[str, Any]]:
        """The messages for whatever happened since the last poll, oldest first."""
        messages: list[dict[str, Any]] = []
        with self.view.proto.store.reading() as reader:
            oldest, head = reader.event_bounds()
            if self.cursor < oldest - 1:
                # The log no longer holds what we missed: compare with a fresh snapshot.
                fresh = self._snapshot(reader)
                for record_id in [i for i in self.known if i not in fresh]:
                    messages.append(_delete(self.known.pop(record_id)))
                for record_id, item in fresh.items():
                    if self.known.get(record_id) != item:
                        messages.append({"event": "write", "entry": item.entry})
                self.known, self.cursor = fresh, head
                return messages
            rows = reader.events_after(
                self.cursor, limit=_BATCH, kinds=None, scope=self.view.read_scope
            )
            self.cursor = rows[-1].seq if len(rows) == _BATCH else head
            written = list(dict.fromkeys(str(r.payload["id"]) for r in rows if r.kind == "written"))
            found = {r.id: r for r in reader.get(written, embeddings=True)}
            for record_id in written:
                stored = found.get(record_id)
                if stored is None:
                    continue  # gone again already; the removal check below reports it
                announced = self._announce(stored)
                if announced is not None:
                    self.known[record_id] = announced
                    messages.append({"event": "write", "entry": announced.entry})
                elif record_id in self.known:
                    messages.append(_delete(self.known.pop(record_id)))
            if self.known and (any(r.kind != "written" for r in rows) or self._expiry_due()):
                alive = {r.id for r in reader.get(list(self.known))}
                for record_id in [i for i in self.known if i not in alive]:
                    messages.append(_delete(self.known.pop(record_id)))
        return messages

    def _expiry_due(self) -> bool:
        # Reads stop seeing an expired entry at once; the log hears of it only with the
        # next write, so expiry is watched for here.
        now = now_ms()
        return any(k.expires_at is not None and k.expires_at <= now for k in self.known.values())


def _delete(known: _Known) -> dict[str, Any]:
    return {"event": "delete", "entry": known.entry}


class SubscribeEndpoint:
    """The WebSocket route; the gate has already checked Origin and credentials."""

    def __init__(self, server: A2MServer) -> None:
        self.server = server

    async def handle(self, websocket: WebSocket) -> None:
        try:
            target = parse_target(websocket.path_params.get("path", ""))
            if target.kind != "subscribe":
                raise RestError("NOT_FOUND", "only /{namespace}/subscribe is a WebSocket route")
            pattern = websocket.query_params.get("pattern") or None
            if pattern is not None and (len(pattern) > MAX_KEY_LENGTH or "\x00" in pattern):
                raise RestError.invalid_body("pattern must be a glob of at most 512 characters")
            subscription = await anyio.to_thread.run_sync(
                _Subscription.open, self.server, principal_of(websocket), target.namespace, pattern
            )
        except RestError as exc:
            await _deny(websocket, exc)
            return
        try:
            await websocket.accept()
            async with anyio.create_task_group() as group:
                group.start_soon(_until_closed, websocket, group.cancel_scope)
                await _follow(websocket, subscription)
                group.cancel_scope.cancel()
        finally:
            subscription.close()
            if (
                websocket.client_state == WebSocketState.CONNECTED
                and websocket.application_state == WebSocketState.CONNECTED
            ):
                await _close(websocket)


async def _until_closed(websocket: WebSocket, scope: anyio.CancelScope) -> None:
    """Read (and ignore) what the client sends, until it goes."""
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
    finally:
        scope.cancel()


async def _follow(websocket: WebSocket, subscription: _Subscription) -> None:
    while True:
        await anyio.sleep(POLL_INTERVAL)
        try:
            messages = await anyio.to_thread.run_sync(subscription.poll)
        except Exception:
            log.exception("a REST subscription could not read the event log")
            return
        try:
            for message in messages:
                await websocket.send_text(json.dumps(message))
        except (WebSocketDisconnect, RuntimeError, OSError):
            return


async def _close(websocket: WebSocket) -> None:
    with contextlib.suppress(RuntimeError, OSError):  # the peer may be gone already
        await websocket.close(code=1011)


async def _deny(websocket: WebSocket, error: RestError) -> None:
    """Refuse before accepting: the error body over HTTP where the server can send one,
    else a policy-violation close (which the server turns into a 403)."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(error.response())
    else:
        await websocket.close(code=1008, reason=error.message[:120])
