"""The server object and its connections: the seam every binding (in-process, stdio,
HTTP) plugs into.

A binding opens a :class:`Connection` per peer, naming its transport and, where the
transport authenticates, the principal; it then feeds JSON-RPC text in and writes what
comes back out. Push notifications reach the peer through the ``notify`` callback."""

from __future__ import annotations

import itertools
import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from a2m_types import ErrorCode
from a2m_types.json_values import MAX_JSON_DEPTH, JSONValueError, check_json_value

from .config import ServerConfig
from .dispatch import decode, encode, error_response, handle_message, handle_text
from .errors import ProtocolError
from .protocol import CallContext, Protocol
from .protocol.handlers import HANDLERS
from .store import Store, open_store
from .store._fts import POSTING_BUDGET

__all__ = ["A2MServer", "Connection", "NotificationHandler", "Transport"]

Transport = Literal["in-process", "stdio", "http"]
NotificationHandler = Callable[[dict[str, Any]], None]
"""Receives each JSON-RPC notification object (already JSON round-tripped)."""

_NETWORK_TRANSPORTS = frozenset({"http"})

log = logging.getLogger("a2m_server")


class A2MServer:
    """An A2M 0.1 server over one store.

    ``A2MServer()`` is a private in-memory store with every capability; pass ``db`` for a
    SQLite file or a ``postgresql://`` URL (``vector_index="hnsw"`` indexes its vectors
    approximately), ``config`` to change capabilities, tiers or limits, or ``store`` for
    another backend. Thread-safe: bindings may call connections from many threads at once."""

    def __init__(
        self,
        config: ServerConfig | None = None,
        *,
        db: str | Path = ":memory:",
        store: Store | None = None,
        vector_index: str = "exact",
    ) -> None:
        self.config = config or ServerConfig()
        self.store = store or open_store(
            db,
            metric=self.config.metric,
            event_retention=self.config.event_retention,
            vector_index=vector_index,
            posting_budget=None if self.config.exact_ranking else POSTING_BUDGET,
        )
        self._owns_store = store is None
        self.protocol = Protocol(self.config, self.store, HANDLERS)
        self._ids = itertools.count(1)
        self._closed = False
        self._lock = threading.Lock()

    def connect(
        self,
        *,
        transport: Transport = "in-process",
        principal: str | None = None,
        notify: NotificationHandler | None = None,
    ) -> Connection:
        """Open a connection for one peer.

        ``principal`` is the authenticated caller (network transports derive ``owner``
        from it, §6); ``notify`` receives pushed events after ``memory/events/subscribe``
        and is ignored on transports that cannot carry notifications."""
        if self._closed:
            raise RuntimeError("this server is closed")
        network = transport in _NETWORK_TRANSPORTS
        capabilities = set(self.config.capabilities)
        if network and principal is None:
            # §6: a server that cannot authenticate its callers does not offer scopes.
            capabilities.discard("scopes")
        push = self.config.push and notify is not None and not network
        context = CallContext(
            connection_id=next(self._ids),
            transport=transport,
            network=network,
            principal=principal,
            capabilities=frozenset(capabilities),
            push=push,
            notify=notify if push else None,
        )
        return Connection(self, context)

    def close(self) -> None:
        """Close the store if this server opened it."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.protocol.close()
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> A2MServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Connection:
    """One peer's view of the server: its capabilities, principal and subscription."""

    def __init__(self, server: A2MServer, context: CallContext) -> None:
        self.server = server
        self.context = context

    @property
    def transport(self) -> str:
        return self.context.transport

    @property
    def principal(self) -> str | None:
        return self.context.principal

    @property
    def capabilities(self) -> frozenset[str]:
        """What this connection declares (HTTP without auth drops ``scopes``)."""
        return self.context.capabilities

    def _invoke(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.server.protocol.invoke(self.context, method, params)

    def handle(self, message: str | bytes) -> str | None:
        """Handle one JSON-RPC message given as JSON text; the response text, or ``None``
        for a notification."""
        response = handle_text(message, self._invoke)
        if response is None:
            return None
        try:
            return encode(response)
        except (ValueError, TypeError, RecursionError):
            # A value JSON cannot carry (an infinity) reached a result: a server fault,
            # answered as one rather than breaking the binding.
            log.exception("unencodable response to %r", response.get("id"))
            return encode(
                error_response(
                    response.get("id"),
                    ErrorCode.INTERNAL_ERROR,
                    "internal error: the result held a value JSON cannot carry",
                )
            )

    def handle_object(self, message: Any) -> dict[str, Any] | None:
        """Handle one already-parsed message, round-tripping through JSON both ways so an
        in-process peer sees exactly what a remote one would (§8.1)."""
        try:
            text = json.dumps(message, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            return _unserialisable(message, exc)
        answer = self.handle(text)
        return None if answer is None else decode(answer)

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run one method directly and return its result; raises :class:`ProtocolError`."""
        response = handle_message(
            {"jsonrpc": "2.0", "id": 0, "method": method, "params": params or {}}, self._invoke
        )
        assert response is not None
        if "error" in response:
            error = response["error"]
            raise ProtocolError(error["code"], error["message"], error.get("data"))
        return response["result"]  # type: ignore[no-any-return]

    def close(self) -> None:
        """End this connection's subscription, if any."""
        self.server.protocol.disconnect(self.context)

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _unserialisable(message: Any, exc: BaseException) -> dict[str, Any]:
    """The answer to an in-process message JSON cannot carry: ``INVALID_PARAMS`` naming
    the place when it is in a record's metadata (§3.1: metadata that cannot be stored
    fails the write so), else the parse error a remote peer's bytes would meet (§8.1)."""
    params = message.get("params") if isinstance(message, dict) else None
    if isinstance(params, dict):
        records = params.get("records")
        # Named as the write path names them: records.0.metadata.key
        places: list[tuple[Any, str, int]] = [
            (record.get("metadata"), f"records.{index}.metadata", MAX_JSON_DEPTH)
            for index, record in enumerate(records if isinstance(records, list) else [])
            if isinstance(record, dict)
        ]
        try:
            for value, path, depth in places:
                check_json_value(value, path, max_depth=depth)
        except JSONValueError as found:
            return error_response(
                message.get("id") if isinstance(message.get("id"), (str, int)) else None,
                ErrorCode.INVALID_PARAMS,
                f"{found.path[:160]} {found.reason}",
                {"field": found.path},
            )
    detail = str(exc) or type(exc).__name__
    return error_response(
        None, ErrorCode.PARSE_ERROR, f"message is not JSON-serialisable: {detail}"
    )
