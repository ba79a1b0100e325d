"""The in-process binding (§8.1): a server object in this process, reached without sockets.

Every message still round-trips through JSON text, so an in-process server never accepts
what a remote one could not receive. The client does not import the server: anything with
the :class:`ConnectableServer` shape will do."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from typing import Any, Protocol

import anyio

from a2m.errors import A2MConnectionError, A2MTimeoutError, ResponseValidationError

from ._base import AsyncTransport, Transport, decode_message, encode_message

__all__ = ["AsyncInProcessTransport", "ConnectableServer", "InProcessTransport", "ServerConnection"]


class ServerConnection(Protocol):
    """One peer's connection to an in-process server."""

    def handle(self, message: str, /) -> str | None:
        """Handle one JSON-RPC message given as JSON text; the response text, or ``None``."""

    def close(self) -> None:
        """End the connection (and its subscription)."""


class ConnectableServer(Protocol):
    """An in-process server, such as ``a2m_server.server.A2MServer``."""

    def connect(self, *, notify: Callable[[dict[str, Any]], None] | None = ...) -> ServerConnection:
        """Open a connection; ``notify`` receives each pushed notification object."""


class _Connector:
    """Opens the server connection on first use, never in a constructor."""

    def __init__(self, server: ConnectableServer, notify: Callable[[dict[str, Any]], None]):
        self._server = server
        self._notify = notify
        self._connection: ServerConnection | None = None
        self._lock = threading.Lock()
        self._closed = False

    def connection(self, method: str | None) -> ServerConnection:
        connection = self._connection
        if connection is not None:
            return connection
        with self._lock:
            if self._closed:
                raise A2MConnectionError(
                    "this in-process transport is closed", method=method, retryable=False
                )
            if self._connection is None:
                try:
                    self._connection = self._server.connect(notify=self._notify)
                except Exception as exc:
                    raise A2MConnectionError(
                        f"could not connect to the in-process server: {exc}",
                        method=method,
                        retryable=False,
                    ) from exc
            return self._connection

    def roundtrip(self, request: dict[str, Any]) -> dict[str, Any]:
        method = request.get("method")
        text = encode_message(request).decode("utf-8")
        try:
            answer = self.connection(method).handle(text)
        except A2MConnectionError:
            raise
        except Exception as exc:
            raise A2MConnectionError(
                f"the in-process server failed: {exc!r}", method=method, retryable=False
            ) from exc
        if answer is None:
            raise ResponseValidationError(
                "the server treated a request as a notification and sent no response",
                method=method,
            )
        message = decode_message(answer, method=method)
        if not isinstance(message, dict):
            raise ResponseValidationError(
                f"expected one JSON-RPC response object, got {type(message).__name__}",
                method=method,
                data=message,
            )
        return message

    def close(self) -> None:
        with self._lock:
            self._closed = True
            connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()


def _copy_notification(notify: Callable[[dict[str, Any]], None]) -> Callable[[Any], None]:
    # A server is asked (§8.1), not trusted, to round-trip notifications through JSON; a
    # copy keeps a handler from ever sharing objects with the server.
    def deliver(message: Any) -> None:
        if isinstance(message, dict):
            notify(json.loads(json.dumps(message)))

    return deliver


class InProcessTransport(Transport):
    """Calls an in-process server on the calling thread. ``timeout`` cannot interrupt a call
    already running in this thread, so it is not enforced here."""

    supports_push = True

    def __init__(self, server: ConnectableServer) -> None:
        self._connector = _Connector(server, _copy_notification(self._notify))

    def handle_request(self, request: dict[str, Any], *, timeout: float | None) -> dict[str, Any]:
        """Hand the request to the server as JSON text and parse its answer."""
        return self._connector.roundtrip(request)

    def close(self) -> None:
        """Close the connection; the server itself stays open."""
        self._connector.close()


class AsyncInProcessTransport(AsyncTransport):
    """Calls an in-process server on a worker thread, because serving blocks (SQLite I/O);
    anyio's threads, so it runs under trio as under asyncio."""

    supports_push = True

    def __init__(self, server: ConnectableServer) -> None:
        self._connector = _Connector(server, _copy_notification(self._notify))

    async def handle_async_request(
        self, request: dict[str, Any], *, timeout: float | None
    ) -> dict[str, Any]:
        """Run the server's handler in a worker thread, giving up after ``timeout`` (the
        handler runs on to its end; its answer is dropped)."""
        work = functools.partial(self._connector.roundtrip, request)
        with anyio.move_on_after(timeout):
            return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        raise A2MTimeoutError(  # reached only when the deadline cancelled the wait
            f"the in-process server did not answer within {timeout}s",
            method=request.get("method"),
        )

    async def aclose(self) -> None:
        """Close the connection; the server itself stays open."""
        await anyio.to_thread.run_sync(self._connector.close)
