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

import asyncio
import os
import select
import socket
import sys
import threading
import time
import zlib
from collections import deque
from dataclasses import dataclass, replace
from typing import NoReturn

from a2m.errors import A2MConnectionError, A2MPoolTimeout, A2MTimeoutError

from ._hints import connect_error

__all__ = [
    "MAX_CONNECTIONS",
    "AsyncPool",
    "Origin",
    "Response",
    "ResponseParser",
    "SyncPool",
    "check_max_connections",
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
_RECV = 64 * 1024  # below malloc's mmap threshold: no map and unmap per read
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


def _connect_failed(origin: Origin, exc: BaseException, method: str | None) -> NoReturn:
    raise connect_error(origin.url, exc, method) from exc


def _timed_out(origin: Origin, what: str, method: str | None) -> NoReturn:
    raise A2MTimeoutError(f"no answer from {origin.url} in time ({what} timed out)", method=method)


def _broken(origin: Origin, exc: BaseException, method: str | None) -> NoReturn:
    raise A2MConnectionError(
        f"the connection to {origin.url} failed: {exc or type(exc).__name__}", method=method
    ) from exc


def _pool_timed_out(origin: Origin, limit: int, method: str | None) -> NoReturn:
    # Nothing was sent: the class that lets the retry policy send any call again, as the
    # httpx path raises for httpx.PoolTimeout.
    raise A2MPoolTimeout(
        f"no connection to {origin.url} came free in time: all {limit} were busy (pool timeout)",
        method=method,
    )


def _closed(origin: Origin, method: str | None) -> NoReturn:
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


def _open_socket(origin: Origin, timeout: float | None) -> socket.socket:
    sock = socket.create_connection((origin.host, origin.port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _readable_now(sock: socket.socket) -> bool:
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


# --- sync ---------------------------------------------------------------------------------


class SyncPool:
    """Keep-alive connections to one origin, shared by threads: each request takes an idle
    connection that is still open (or opens one) and gives it back if the response lets it
    be reused. At most ``max_connections`` are open at once; a request finding them all
    busy waits, at most its timeout, for one to be given back or closed."""

    def __init__(self, origin: Origin, max_connections: int = MAX_CONNECTIONS) -> None:
        self.origin = origin
        self.max_connections = check_max_connections(max_connections)
        self._idle: list[socket.socket] = []
        self._open = 0
        """Connections counted against the limit: idle, in use, or being opened."""
        self._waiting = 0
        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)
        self._closed = False

    @property
    def waiting(self) -> int:
        """How many requests are waiting for a connection to come free."""
        return self._waiting

    def _acquire(self, timeout: float | None, method: str | None) -> socket.socket | None:
        """An idle connection still open, or ``None`` with a slot taken for a new one."""
        deadline: float | None = None
        with self._lock:
            while True:
                if self._closed:
                    _closed(self.origin, method)
                if self._idle:
                    sock = self._idle.pop()
                    break
                if self._open < self.max_connections:
                    self._open += 1
                    return None
                # Every slot is busy. Wake-ups are only hints: each is followed by this
                # loop's checks, so a notify that raced the wait's expiry is not lost.
                if timeout is not None:
                    now = time.monotonic()
                    if deadline is None:
                        deadline = now + timeout
                    elif now >= deadline:
                        _pool_timed_out(self.origin, self.max_connections, method)
                self._waiting += 1
                try:
                    self._freed.wait(None if deadline is None else deadline - time.monotonic())
                finally:
                    self._waiting -= 1
        while _readable_now(sock):  # the server closed it while idle: its slot opens anew
            sock.close()
            with self._lock:
                if not self._idle:
                    return None
                sock = self._idle.pop()
                self._release_locked()  # two slots held now: one goes back
        return sock

    def _release_locked(self) -> None:
        self._open -= 1
        if self._waiting:
            self._freed.notify()

    def _give_back(self, sock: socket.socket) -> None:
        with self._lock:
            if not self._closed and (len(self._idle) < MAX_IDLE or self._waiting):
                self._idle.append(sock)
                if self._waiting:
                    self._freed.notify()
                return
            self._release_locked()
        sock.close()

    def _discard(self, sock: socket.socket | None) -> None:
        if sock is not None:
            sock.close()
        with self._lock:
            self._release_locked()

    def request(self, body: bytes, timeout: float | None, method: str | None) -> Response:
        """POST ``body``; the wait for a free connection, and every connect, write and read,
        is bounded by ``timeout``."""
        origin = self.origin
        if self._closed:
            _closed(origin, method)
        sock = self._acquire(timeout, method)
        try:
            if sock is None:
                try:
                    sock = _open_socket(origin, timeout)
                except OSError as exc:  # socket.timeout is an OSError too
                    _connect_failed(origin, exc, method)
            else:
                sock.settimeout(timeout)
            response = self._exchange(sock, origin.request(body), timeout, method)
        except BaseException:  # the slot is freed on every way out
            self._discard(sock)
            raise
        if response.reusable:
            self._give_back(sock)
        else:
            self._discard(sock)
        return response

    def _exchange(
        self, sock: socket.socket, data: bytes, timeout: float | None, method: str | None
    ) -> Response:
        origin = self.origin
        refused: OSError | None = None
        try:
            sock.sendall(data)
        except TimeoutError:
            _timed_out(origin, "write", method)
        except OSError as exc:
            # A server may answer before reading the whole request (a 413) and close: its
            # answer can still be read, and is worth more than the write's error.
            refused = exc
        parser = ResponseParser()
        try:
            while True:
                chunk = sock.recv(_RECV)
                response = parser.feed(chunk) if chunk else parser.eof()
                if response is not None:
                    return response if refused is None else replace(response, reusable=False)
        except TimeoutError:
            if refused is not None:
                _broken(origin, refused, method)
            _timed_out(origin, "read", method)
        except (OSError, ProtocolFault, Incomplete) as exc:
            _broken(origin, refused or exc, method)

    def close(self) -> None:
        """Close every idle connection and wake every waiting request, which raises; a
        request still running closes its own after."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            self._open -= len(idle)
            self._freed.notify_all()
        for sock in idle:
            sock.close()


# --- async --------------------------------------------------------------------------------


class _Expired(Exception):
    pass


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _expire(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_exception(_Expired())


async def _ready(
    loop: asyncio.AbstractEventLoop, fd: int, *, write: bool, timeout: float | None
) -> None:
    """Wait until ``fd`` is readable (or writable), at most ``timeout`` seconds."""
    future: asyncio.Future[None] = loop.create_future()
    if write:
        loop.add_writer(fd, _wake, future)
    else:
        loop.add_reader(fd, _wake, future)
    expiry = loop.call_later(timeout, _expire, future) if timeout is not None else None
    try:
        await future
    finally:
        if write:
            loop.remove_writer(fd)
        else:
            loop.remove_reader(fd)
        if expiry is not None:
            expiry.cancel()


def async_supported(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop`` can wait on sockets' readiness (``add_reader``), which Windows'
    proactor loop cannot."""
    proactor = getattr(asyncio, "ProactorEventLoop", None)
    return not (sys.platform == "win32" and proactor is not None and isinstance(loop, proactor))


@dataclass
class _Conn:
    sock: socket.socket
    loop: asyncio.AbstractEventLoop


class _Waiter:
    """A request waiting for a free slot. A slot is handed to it under the pool's lock
    (``granted``, with an idle connection or none: open one), then its future is woken in
    its own loop, so a hand-over can never be lost to a timeout or a cancellation that
    lands between the two."""

    __slots__ = ("conn", "future", "granted", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.future: asyncio.Future[None] = loop.create_future()
        self.granted = False
        self.conn: _Conn | None = None


def _wake_in(waiter: _Waiter, current: asyncio.AbstractEventLoop | None) -> bool:
    """Wake ``waiter`` from the loop ``current`` (or from no loop); ``False`` when its loop
    is closed and nothing will ever run it."""
    if waiter.loop is current:
        _wake(waiter.future)
        return True
    try:
        waiter.loop.call_soon_threadsafe(_wake, waiter.future)
    except RuntimeError:
        return False
    return True


class AsyncPool:
    """Keep-alive connections to one origin for asyncio, on non-blocking sockets waited on
    through the running loop: tasks share it, and a connection is reused only under the
    loop it was opened in (a client used under a second loop opens fresh ones and closes
    those of the first). At most ``max_connections`` are open at once, whatever loop they
    belong to; a request finding them all busy waits, at most its timeout, and is handed
    the next one freed, first come first served."""

    def __init__(self, origin: Origin, max_connections: int = MAX_CONNECTIONS) -> None:
        self.origin = origin
        self.max_connections = check_max_connections(max_connections)
        self._idle: list[_Conn] = []
        self._open = 0
        """Connections counted against the limit: idle, in use, being opened, or handed to
        a waiter that has yet to run."""
        self._waiters: deque[_Waiter] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def waiting(self) -> int:
        """How many requests are waiting for a connection to come free."""
        return len(self._waiters)

    def _take(self, loop: asyncio.AbstractEventLoop, method: str | None) -> _Conn | _Waiter | None:
        """An idle connection of ``loop`` still open; ``None`` with a slot taken for a new
        one; or, with every slot busy, a queued :class:`_Waiter`."""
        stale: list[_Conn] = []
        try:
            with self._lock:
                if self._closed:
                    _closed(self.origin, method)
                if self._loop is not loop:
                    stale, self._idle, self._loop = self._idle, [], loop
                    self._open -= len(stale)
                taken: _Conn | _Waiter | None
                while self._idle:
                    conn = self._idle.pop()
                    if _readable_now(conn.sock):
                        stale.append(conn)
                        self._open -= 1
                        continue
                    taken = conn
                    break
                else:
                    if self._open < self.max_connections:
                        self._open += 1
                        taken = None
                    else:
                        taken = _Waiter(loop)
                        self._waiters.append(taken)
                if stale and self._waiters:
                    self._grant_free_locked(loop)
                return taken
        finally:
            for conn in stale:
                conn.sock.close()

    def _grant_locked(self, conn: _Conn | None, current: asyncio.AbstractEventLoop) -> bool:
        """Hand a slot (with ``conn``, or bare) to the first waiter whose loop still runs;
        ``False`` when there is none. A connection of another loop than the waiter's is
        closed and the waiter opens its own."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not _wake_in(waiter, current):
                continue
            if conn is not None and conn.loop is not waiter.loop:
                conn.sock.close()
                conn = None
            waiter.granted, waiter.conn = True, conn
            return True
        return False

    def _grant_free_locked(self, current: asyncio.AbstractEventLoop) -> None:
        """Hand every free slot to a waiter (after connections were dropped in bulk)."""
        while self._waiters and self._open < self.max_connections:
            if not self._grant_locked(None, current):
                return
            self._open += 1

    def _release_locked(self, current: asyncio.AbstractEventLoop) -> None:
        """A slot is free: the first waiter gets it, else the count goes down."""
        if not (self._waiters and self._grant_locked(None, current)):
            self._open -= 1

    def _give_back(self, conn: _Conn, current: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            if not self._closed and conn.loop is self._loop:
                if self._waiters and self._grant_locked(conn, current):
                    return
                if len(self._idle) < MAX_IDLE:
                    self._idle.append(conn)
                    return
            self._release_locked(current)
        conn.sock.close()

    def _discard(self, conn: _Conn | None, current: asyncio.AbstractEventLoop) -> None:
        if conn is not None:
            conn.sock.close()
        with self._lock:
            self._release_locked(current)

    async def _wait(
        self, waiter: _Waiter, timeout: float | None, method: str | None
    ) -> _Conn | None:
        """Wait, at most ``timeout``, for a slot to be handed to ``waiter``: the connection
        it came with, or ``None`` to open one."""
        loop = waiter.loop
        expiry = loop.call_later(timeout, _expire, waiter.future) if timeout is not None else None
        try:
            await waiter.future
        except _Expired:
            pass  # unless a slot was handed over meanwhile: decided below, under the lock
        except BaseException:  # cancelled: a slot handed over already goes to the next
            with self._lock:
                granted, conn = waiter.granted, waiter.conn
                if not granted:
                    _forget(self._waiters, waiter)
            if granted:
                if conn is not None:
                    self._give_back(conn, loop)
                else:
                    with self._lock:
                        self._release_locked(loop)
            raise
        finally:
            if expiry is not None:
                expiry.cancel()
        with self._lock:
            if not waiter.granted:
                _forget(self._waiters, waiter)
                if self._closed:
                    _closed(self.origin, method)
                _pool_timed_out(self.origin, self.max_connections, method)
        conn = waiter.conn
        if conn is not None and _readable_now(conn.sock):  # closed by the server meanwhile
            conn.sock.close()
            return None
        return conn

    async def request(self, body: bytes, timeout: float | None, method: str | None) -> Response:
        """POST ``body``; the wait for a free connection, and every connect, write and read,
        is bounded by ``timeout``."""
        origin = self.origin
        if self._closed:
            _closed(origin, method)
        loop = asyncio.get_running_loop()
        taken = self._take(loop, method)
        conn = await self._wait(taken, timeout, method) if isinstance(taken, _Waiter) else taken
        try:
            if conn is None:
                conn = _Conn(await self._connect(loop, timeout, method), loop)
            response = await self._exchange(conn, origin.request(body), timeout, method)
        except BaseException:  # cancelled or failed: the socket is mid-message; the slot frees
            self._discard(conn, loop)
            raise
        if response.reusable:
            self._give_back(conn, loop)
        else:
            self._discard(conn, loop)
        return response

    async def _connect(
        self, loop: asyncio.AbstractEventLoop, timeout: float | None, method: str | None
    ) -> socket.socket:
        origin = self.origin
        deadline = None if timeout is None else loop.time() + timeout
        try:
            infos = await _resolve(loop, origin.host, origin.port, timeout)
        except _Expired:
            _connect_failed(origin, TimeoutError("timed out resolving the host"), method)
        except OSError as exc:
            _connect_failed(origin, exc, method)
        error: OSError | None = None
        for family, kind, proto, _, address in infos:
            sock = socket.socket(family, kind, proto)
            try:
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                try:
                    sock.connect(address)
                except (BlockingIOError, InterruptedError):
                    left = None if deadline is None else max(0.0, deadline - loop.time())
                    await _ready(loop, sock.fileno(), write=True, timeout=left)
                    code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                else:
                    code = 0
                if code:
                    raise OSError(code, f"connect to {address!r} failed: {os.strerror(code)}")
                return sock
            except _Expired:
                sock.close()
                _connect_failed(origin, TimeoutError("timed out connecting"), method)
            except OSError as exc:
                sock.close()
                error = exc
            except BaseException:
                sock.close()
                raise
        _connect_failed(origin, error or OSError("no address to connect to"), method)

    async def _exchange(
        self, conn: _Conn, data: bytes, timeout: float | None, method: str | None
    ) -> Response:
        origin, sock, loop = self.origin, conn.sock, conn.loop
        fd = sock.fileno()
        view = memoryview(data)
        refused: OSError | None = None
        try:
            while view:
                try:
                    sent = sock.send(view)
                except (BlockingIOError, InterruptedError):
                    await _ready(loop, fd, write=True, timeout=timeout)
                    continue
                view = view[sent:]
        except _Expired:
            _timed_out(origin, "write", method)
        except OSError as exc:
            refused = exc  # an early answer may still be readable (see SyncPool._exchange)
        parser = ResponseParser()
        try:
            while True:
                try:
                    chunk = sock.recv(_RECV)
                except (BlockingIOError, InterruptedError):
                    await _ready(loop, fd, write=False, timeout=timeout)
                    continue
                response = parser.feed(chunk) if chunk else parser.eof()
                if response is not None:
                    return response if refused is None else replace(response, reusable=False)
        except _Expired:
            if refused is not None:
                _broken(origin, refused, method)
            _timed_out(origin, "read", method)
        except (OSError, ProtocolFault, Incomplete) as exc:
            _broken(origin, refused or exc, method)

    def close(self) -> None:
        """Close every idle connection and wake every waiting request, which raises (plain
        socket closes and thread-safe wake-ups: safe from any loop or none)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            self._open -= len(idle)
            waiters, self._waiters = list(self._waiters), deque()
        for conn in idle:
            conn.sock.close()
        current = asyncio._get_running_loop()
        for waiter in waiters:
            _wake_in(waiter, current)


def _forget(waiters: deque[_Waiter], waiter: _Waiter) -> None:
    if waiter in waiters:  # else already taken off by a hand-over or a close
        waiters.remove(waiter)


async def _resolve(
    loop: asyncio.AbstractEventLoop, host: str, port: int, timeout: float | None
) -> list[tuple[socket.AddressFamily, socket.SocketKind, int, str, tuple[object, ...]]]:
    """The addresses of ``host``: an IP literal at once, a name through the loop's resolver
    (a worker thread), at most ``timeout`` seconds."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except (OSError, ValueError):
            continue
        address: tuple[object, ...] = (
            (host, port) if family == socket.AF_INET else (host, port, 0, 0)
        )
        return [(family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", address)]
    lookup = loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    try:
        infos = await (lookup if timeout is None else asyncio.wait_for(lookup, timeout))
    except asyncio.TimeoutError:
        raise _Expired() from None
    return [(f, k, p, c, tuple(a)) for f, k, p, c, a in infos]
