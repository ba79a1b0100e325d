"""The transport seam: a transport carries one JSON-RPC request object to a server and brings
back its response object; a transport that can carry push hands notification objects to a
handler. Everything above it (negotiation, gating, retries, parsing) is binding-agnostic."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable
from types import TracebackType
from typing import Any, ClassVar

import sniffio
from typing_extensions import Self

from a2m.errors import A2MEventLoopError, InvalidParams, ResponseValidationError
from a2m_types.json_values import JSONValueError, check_json_value
from a2m_types.plain_json import NOT_READ, fast_dumps, fast_loads, orjson_matches_stdlib

__all__ = [
    "AsyncTransport",
    "NotificationHandler",
    "PlainRequest",
    "Transport",
    "decode_message",
    "encode_message",
    "require_asyncio",
]

NotificationHandler = Callable[[dict[str, Any]], None]
"""Receives each JSON-RPC notification object a server pushes. Transports may call it from
any thread (a reader thread, a worker thread, the event loop), so it must be thread-safe."""


def require_asyncio(what: str, *, method: str | None = None) -> None:
    """Refuse, with a message naming what does work, to run ``what`` (which waits on an
    asyncio loop: subprocess pipes, push delivery) in a task of another async library."""
    try:
        library = sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        library = "no async library"
    if library != "asyncio":
        raise A2MEventLoopError(
            f"{what} needs asyncio; this task runs on {library}. Under another "
            "async library AsyncA2MClient works over HTTP, REST and in process, and watch() "
            "polls for events",
            method=method,
        )


class PlainRequest(dict[str, Any]):
    """A request object proven, by how it was built, to hold only what
    :func:`~a2m_types.plain_json.orjson_matches_stdlib` accepts: :func:`encode_message`
    skips that walk for it. Only the client's own request
    building makes one (``memory/remember`` params read off a validated model, whose
    fields are exact strings and finite floats and whose metadata was walked); to anything
    else it is an ordinary ``dict``."""

    __slots__ = ()


def encode_message(message: dict[str, Any]) -> bytes:
    """One JSON-RPC message as compact UTF-8 JSON on a single line (§8.2). With orjson
    installed, a message of plain JSON types without NaN or infinity is encoded by it (the
    same JSON, floats written shortest-exact as ``repr`` writes them); anything else, and
    anything orjson refuses, by the standard library, whose errors are the contract. A
    :class:`PlainRequest` is plain and finite already, so goes to orjson unwalked."""
    if type(message) is PlainRequest:
        fast = fast_dumps(dict(message))  # orjson passes subclasses on
    else:
        try:
            fast = fast_dumps(message) if orjson_matches_stdlib(message) else None
        except RecursionError:  # nested past Python's limit: the backstop below names it
            fast = None
    if fast is not None:
        return fast
    try:
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode("utf-8")
    except (ValueError, TypeError, RecursionError, UnicodeEncodeError) as exc:
        # The client checks params before building a request; this is the backstop for a
        # request built some other way, so no bare encoder error ever leaves the client.
        raise _not_carried(message, exc) from None


def _not_carried(message: dict[str, Any], exc: BaseException) -> InvalidParams:
    """The :class:`InvalidParams` for a message the encoder refused, naming the first
    place JSON cannot carry exactly when the shared check finds it."""
    method = message.get("method")
    params = message.get("params", message) if method is not None else message
    try:
        check_json_value(params, "params")
    except JSONValueError as found:
        return InvalidParams(
            f"{found} (nothing was sent)", method=method, data={"field": found.path}
        )
    reason = "nested too deep" if isinstance(exc, RecursionError) else str(exc)
    return InvalidParams(
        f"the parameters are not valid JSON ({reason}); NaN and Infinity cannot be sent "
        "(nothing was sent)",
        method=method,
    )


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def decode_message(raw: bytes | str, *, method: str | None = None) -> Any:
    """Parse one JSON message strictly; a body that is not JSON is a ResponseValidationError.

    With orjson installed, a text it parses is its value, unless some integer in it may
    pass 64 bits (a run of 19 digits anywhere, strings included); anything it refuses
    (NaN, 1e400, a lone surrogate, deep nesting) is decided by the standard library, whose
    values and errors are the contract."""
    value = fast_loads(raw)
    if value is not NOT_READ:
        return value
    try:
        return json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        snippet = raw[:200].decode("utf-8", "replace") if isinstance(raw, bytes) else raw[:200]
        raise ResponseValidationError(
            f"the server's response is not JSON ({exc}): {snippet!r}", method=method
        ) from None


class Transport(ABC):
    """Sends JSON-RPC request objects synchronously; implementations must be thread-safe."""

    supports_push: ClassVar[bool] = False
    """Whether this transport can deliver server notifications (§8): stdio and in-process
    can, HTTP cannot."""

    _notification_handler: NotificationHandler | None = None

    @abstractmethod
    def handle_request(self, request: dict[str, Any], *, timeout: float | None) -> dict[str, Any]:
        """Send ``request`` and return the response object; raise an
        :class:`~a2m.errors.A2MTransportError` when no response can be had."""

    def set_notification_handler(self, handler: NotificationHandler | None) -> None:
        """Route pushed notification objects to ``handler`` (``None`` drops them)."""
        self._notification_handler = handler

    def _notify(self, message: dict[str, Any]) -> None:
        handler = self._notification_handler
        if handler is not None:
            handler(message)

    @abstractmethod
    def close(self) -> None:
        """Release connections, pipes or processes this transport owns."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncTransport(ABC):
    """Sends JSON-RPC request objects from asyncio; implementations must be task-safe and
    must never block the event loop."""

    supports_push: ClassVar[bool] = False
    """Whether this transport can deliver server notifications."""

    _notification_handler: NotificationHandler | None = None

    @abstractmethod
    async def handle_async_request(
        self, request: dict[str, Any], *, timeout: float | None
    ) -> dict[str, Any]:
        """Send ``request`` and return the response object; raise an
        :class:`~a2m.errors.A2MTransportError` when no response can be had."""

    def set_notification_handler(self, handler: NotificationHandler | None) -> None:
        """Route pushed notification objects to ``handler`` (``None`` drops them)."""
        self._notification_handler = handler

    def _notify(self, message: dict[str, Any]) -> None:
        handler = self._notification_handler
        if handler is not None:
            handler(message)

    @abstractmethod
    async def aclose(self) -> None:
        """Release connections, pipes or processes this transport owns."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
