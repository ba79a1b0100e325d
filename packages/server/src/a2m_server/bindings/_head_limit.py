"""A bound on a request's head (request line and headers), which uvicorn's httptools
protocol leaves unbounded: one connection sending an endless header would hold the event
loop ever longer and grow the process without limit, before any authentication. Past
:data:`MAX_HEAD_BYTES` the request is answered ``431`` and the connection closed."""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["MAX_HEAD_BYTES", "BoundedHeadProtocol", "uvicorn_http_options"]

MAX_HEAD_BYTES = 128 * 1024
"""Bytes a request's line and headers may hold together (a request line alone may hold
64 KiB; browsers send a few KiB of headers at most)."""


class BoundedHeadProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, counting the bytes a request's head takes: a read
    that began within a head and completed none is all head, and counts toward
    :data:`MAX_HEAD_BYTES` (a read is at most the transport's buffer, so the bound holds
    within one read)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_bytes = 0
        self._heads = 0
        """Heads completed on this connection."""
        self._in_head = True

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._heads += 1
        self._head_bytes = 0
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head = True  # what comes next on this connection is the next head

    def data_received(self, data: bytes) -> None:
        began_in_head, heads = self._in_head, self._heads
        super().data_received(data)
        if not began_in_head or self._heads != heads or self.transport.is_closing():
            return
        self._head_bytes += len(data)
        if self._head_bytes > MAX_HEAD_BYTES:
            self._refuse_head()

    def _refuse_head(self) -> None:
        message = f"request line and headers exceed {MAX_HEAD_BYTES} bytes"
        self.logger.warning("refused a request: %s", message)
        self.transport.write(
            b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
            b"content-type: text/plain; charset=utf-8\r\n"
            + f"content-length: {len(message)}\r\n".encode("ascii")
            + b"connection: close\r\n\r\n"
            + message.encode("ascii")
        )
        self.transport.close()


def uvicorn_http_options() -> dict[str, Any]:
    """The ``uvicorn.Config`` options serving HTTP through :class:`BoundedHeadProtocol`."""
    protocol: type[asyncio.Protocol] = BoundedHeadProtocol
    return {"http": protocol}
