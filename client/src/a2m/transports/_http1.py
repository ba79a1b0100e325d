"""A minimal HTTP/1.1 client for the one exchange JSON-RPC over HTTP needs: ``POST`` of a
JSON body to one origin, the response read whole. A general client (httpx) spends more per
call on features this exchange never uses than the server spends answering a small call,
so plain ``http://`` URLs without a proxy take this path (see :mod:`a2m.transports.http`).

The response is framed by ``Content-Length``, ``Transfer-Encoding: chunked`` or the close
of the connection; ``1xx`` responses are skipped; a connection is reused only when the
server allows it (HTTP/1.1 without ``Connection: close``, HTTP/1.0 with ``keep-alive``) and
the response was framed. At most ``max_connections`` connections are open at once per
pool; a request finding them all busy waits for one, at most its timeout.

Failures are raised as the client's errors, the way the httpx path maps httpx's: no
connection (refused, unreachable, connect timeout, or none of the pool's came free in time)
is :class:`A2MConnectError`, the one failure after which any call may be sent again; a read
or write past the timeout is :class:`A2MTimeoutError`; anything that breaks once the request
may have left (reset, EOF before a complete response, a malformed response) is
:class:`A2MConnectionError`. Nothing is retried here: the client's retry policy decides."""

from __future__ import annotations

import select
import socket
import zlib
from dataclasses import dataclass
from typing import NoReturn

from a2m.errors import A2MConnectionError, A2MPoolTimeout, A2MTimeoutError

from ._hints import connect_error

__all__ = [
    "MAX_CONNECTIONS",
    "MAX_IDLE",
    "RECV_SIZE",
    "Incomplete",
    "Origin",
    "ProtocolFault",
    "Response",
    "ResponseParser",
    "broken",
    "check_max_connections",
    "connect_failed",
    "open_socket",
    "pool_closed",
    "pool_timed_out",
    "readable_now",
    "timed_out",
]

MAX_HEAD = 64 * 1024
"""The most bytes a response head (status line and headers, or a chunked body's trailers)
may take; a server sending more is refused rather than buffered without bound."""
MAX_CONNECTIONS = 100
"""Connections a pool may have open at once, idle or busy (httpx's default): a request that
finds them all busy waits for one, at most its timeout, so many threads or tasks sharing a
client cannot run it out of file descriptors."""
MAX_IDLE = 20
"""Idle keep-alive connections kept per pool (httpx's default); more are closed."""
RECV_SIZE = 64 * 1024  # below malloc's mmap threshold: no map and unmap per read
_MAX_CHUNK_LINE = 4096


@dataclass(frozen=True)
class Origin:
    """Where requests go: the address to connect to and the request's fixed head, built
    once (request line, ``Host`` and every header but ``Content-Length``)."""

    host: str
    port: int
    url: str
    head: bytes

    @classmethod
    def build(cls, host: str, port: int, target: str, url: str, headers: dict[str, str]) -> Origin:
        """The origin for ``host:port``, POSTing to ``target`` with ``headers``; a header
        name or value that cannot be sent as it is raises ``ValueError``."""
        authority = f"[{host}]" if ":" in host else host
        if port != 80:
            authority += f":{port}"
        lines = [f"POST {target} HTTP/1.1", f"Host: {authority}"]
        for name, value in headers.items():
            if not _token(name) or any(ch in value for ch in "\r\n\0"):
                raise ValueError(f"header {name!r} cannot be sent as it is")
            lines.append(f"{name}: {value}")
        head = ("\r\n".join(lines) + "\r\nContent-Length: ").encode("ascii")
        return cls(host, port, url, head)

    def request(self, body: bytes) -> bytes:
        """The whole request for ``body``, written in one ``sendall``."""
        return b"%b%d\r\n\r\n%b" % (self.head, len(body), body)


_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _token(name: str) -> bool:
    return bool(name) and all(ch in _TCHAR for ch in name)


@dataclass(frozen=True)
class Response:
    """A complete response: status, reason phrase, headers (names lower-cased, repeated
    ones joined with ``", "``) and the decoded body."""

    status: int
    reason: str
    headers: dict[str, str]
    body: bytes
    reusable: bool
    """Whether the connection it came on may carry the next request."""


class ProtocolFault(Exception):
    """The server's bytes are not a valid HTTP/1.1 response."""


class Incomplete(Exception):
    """The connection ended before the response was complete."""


# --- parsing ------------------------------------------------------------------------------

_HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_END, _TRAILERS, _TO_CLOSE, _DONE = range(8)


class ResponseParser:
    """An incremental parser of one response: :meth:`feed` it what the socket gives, and
    :meth:`eof` when the socket ends; each returns the :class:`Response` once complete,
    else ``None``. It raises :class:`ProtocolFault` on bytes no server may send and
    :class:`Incomplete` on an end before the response is whole."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._state = _HEAD
        self._status = 0
        self._reason = ""
        self._headers: dict[str, str] = {}
        self._keep_alive = False
        self._remaining = 0
        self._body = bytearray()

    def feed(self, data: bytes) -> Response | None:
        """Take ``data``; the response if it is now complete."""
        self._buffer += data
        return self._advance()

    def eof(self) -> Response:
        """The connection ended: the response, if the end completes it."""
        if self._state == _TO_CLOSE:
            self._body += self._buffer
            self._buffer.clear()
            self._keep_alive = False
            self._state = _DONE
            return self._finish()
        if self._state == _HEAD and not self._buffer and not self._status:
            raise Incomplete("the server closed the connection without answering")
        raise Incomplete("the server closed the connection before the response was complete")

    def _advance(self) -> Response | None:
        buffer = self._buffer
        while True:
            state = self._state
            if state == _HEAD:
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    if len(buffer) > MAX_HEAD:
                        raise ProtocolFault(f"the response head is larger than {MAX_HEAD} bytes")
                    return None
                if end > MAX_HEAD:
                    raise ProtocolFault(f"the response head is larger than {MAX_HEAD} bytes")
                head = bytes(buffer[:end])
                del buffer[: end + 4]
                self._head(head)
            elif state == _LENGTH:
                if len(buffer) < self._remaining:
                    return None
                self._body = buffer[: self._remaining]
                del buffer[: self._remaining]
                self._state = _DONE
            elif state == _CHUNK_SIZE:
                end = buffer.find(b"\r\n")
                if end < 0:
                    if len(buffer) > _MAX_CHUNK_LINE:
                        raise ProtocolFault("a chunk-size line is too long")
                    return None
                line = bytes(buffer[:end]).split(b";", 1)[0].strip(b" \t")
                del buffer[: end + 2]
                if not line or any(c not in b"0123456789abcdefABCDEF" for c in line):
                    raise ProtocolFault(f"invalid chunk size {line[:40]!r}")
                size = int(line, 16)
                if size:
                    self._remaining, self._state = size, _CHUNK_DATA
                else:
                    self._remaining, self._state = 0, _TRAILERS
            elif state == _CHUNK_DATA:
                if len(buffer) < self._remaining:
                    return None
                self._body += buffer[: self._remaining]
                del buffer[: self._remaining]
                self._state = _CHUNK_END
            elif state == _CHUNK_END:
                if len(buffer) < 2:
                    return None
                if buffer[:2] != b"\r\n":
                    raise ProtocolFault("a chunk is not followed by CRLF")
                del buffer[:2]
                self._state = _CHUNK_SIZE
            elif state == _TRAILERS:
                # Trailer fields up to an empty line; read and dropped (nothing here uses them).
                if buffer[:2] == b"\r\n":
                    del buffer[:2]
                    self._state = _DONE
                    continue
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    if len(buffer) > MAX_HEAD:
                        raise ProtocolFault(f"the trailers are larger than {MAX_HEAD} bytes")
                    return None
                del buffer[: end + 4]
                self._state = _DONE
            elif state == _TO_CLOSE:
                self._body += buffer
                buffer.clear()
                return None
            else:  # _DONE
                if buffer:  # bytes beyond the response: nothing may follow on this socket
                    self._keep_alive = False
                return self._finish()

    def _head(self, head: bytes) -> None:
        lines = head.split(b"\r\n")
        status_line = lines[0]
        parts = status_line.split(b" ", 2)
        version = parts[0]
        if (
            len(parts) < 2
            or version not in (b"HTTP/1.1", b"HTTP/1.0")
            or len(parts[1]) != 3
            or not parts[1].isdigit()
        ):
            raise ProtocolFault(f"not an HTTP/1.x status line: {status_line[:80]!r}")
        status = int(parts[1])
        headers: dict[str, str] = {}
        last = ""
        for raw in lines[1:]:
            if raw[:1] in (b" ", b"\t"):  # obs-fold: a continuation of the line before
                if not last:
                    raise ProtocolFault("a header continuation line with no header before it")
                headers[last] += " " + raw.strip(b" \t").decode("latin-1")
                continue
            name, colon, value = raw.partition(b":")
            if not colon or not name or name != name.strip(b" \t"):
                raise ProtocolFault(f"malformed header line {raw[:80]!r}")
            key = name.decode("latin-1").lower()
            text = value.strip(b" \t").decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
            last = key
        if 100 <= status < 200:
            if status == 101:
                raise ProtocolFault("the server switched protocols, which was not asked for")
            self._state = _HEAD  # an interim response: the final one follows
            return
        self._status = status
        self._reason = parts[2].decode("latin-1") if len(parts) > 2 else ""
        self._headers = headers
        tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
        if version == b"HTTP/1.1":
            self._keep_alive = "close" not in tokens
        else:
            self._keep_alive = "keep-alive" in tokens
        if status in (204, 304):
            self._state = _DONE
            return
        coding = headers.get("transfer-encoding")
        if coding is not None:
            if coding.rsplit(",", 1)[-1].strip().lower() == "chunked":
                self._state = _CHUNK_SIZE
                if "content-length" in headers:  # RFC 9112 §6.1: framed, but not reused
                    self._keep_alive = False
            else:
                self._state = _TO_CLOSE
                self._keep_alive = False
            return
        length = headers.get("content-length")
        if length is None:
            self._state = _TO_CLOSE
            self._keep_alive = False
            return
        values = {v.strip() for v in length.split(",")}
        if len(values) != 1 or not next(iter(values)).isdigit():
            raise ProtocolFault(f"invalid Content-Length {length[:40]!r}")
        self._remaining = int(next(iter(values)))
        self._state = _LENGTH

    def _finish(self) -> Response:
        body = bytes(self._body)
        encoding = self._headers.get("content-encoding", "").strip().lower()
        if encoding and encoding != "identity":
            body = _decode(body, encoding)
        return Response(self._status, self._reason, self._headers, body, self._keep_alive)


def _decode(body: bytes, encoding: str) -> bytes:
    """Undo a ``Content-Encoding`` the server applied though none was asked for."""
    try:
        if encoding in ("gzip", "x-gzip"):
            return zlib.decompress(body, 16 + zlib.MAX_WBITS)
        if encoding == "deflate":
            try:
                return zlib.decompress(body)
            except zlib.error:
                return zlib.decompress(body, -zlib.MAX_WBITS)
    except zlib.error as exc:
        raise ProtocolFault(f"the {encoding} body does not decode: {exc}") from None
    raise ProtocolFault(f"the response has a Content-Encoding this client cannot read: {encoding}")


# --- failures -----------------------------------------------------------------------------


def connect_failed(origin: Origin, exc: BaseException, method: str | None) -> NoReturn:
    raise connect_error(origin.url, exc, method) from exc


def timed_out(origin: Origin, what: str, method: str | None) -> NoReturn:
    raise A2MTimeoutError(f"no answer from {origin.url} in time ({what} timed out)", method=method)


def broken(origin: Origin, exc: BaseException, method: str | None) -> NoReturn:
    raise A2MConnectionError(
        f"the connection to {origin.url} failed: {exc or type(exc).__name__}", method=method
    ) from exc


def pool_timed_out(origin: Origin, limit: int, method: str | None) -> NoReturn:
    # Nothing was sent: the class that lets the retry policy send any call again, as the
    # httpx path raises for httpx.PoolTimeout.
    raise A2MPoolTimeout(
        f"no connection to {origin.url} came free in time: all {limit} were busy (pool timeout)",
        method=method,
    )


def pool_closed(origin: Origin, method: str | None) -> NoReturn:
    raise A2MConnectionError(
        f"the transport for {origin.url} is closed", method=method, retryable=False
    )


def check_max_connections(max_connections: int) -> int:
    """``max_connections`` if it is a whole number of at least 1; else a clear error."""
    if isinstance(max_connections, bool) or not isinstance(max_connections, int):
        raise TypeError(f"max_connections must be an int, not {max_connections!r}")
    if max_connections < 1:
        raise ValueError(f"max_connections must be 1 or more, not {max_connections!r}")
    return max_connections


def open_socket(origin: Origin, timeout: float | None) -> socket.socket:
    sock = socket.create_connection((origin.host, origin.port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def readable_now(sock: socket.socket) -> bool:
    """Whether reading ``sock`` would not block: for an idle keep-alive connection, that
    the server closed it or sent bytes nobody asked for; either way it cannot be reused."""
    fd = sock.fileno()
    if fd < 0:
        return True
    if _poll is not None:
        poller = _poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)


_poll = getattr(select, "poll", None)
