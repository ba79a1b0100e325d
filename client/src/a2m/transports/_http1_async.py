"""The asyncio pool of :mod:`a2m.transports._http1`: non-blocking sockets driven by the
event loop's readiness callbacks, waiters served in order, every connection bound to the
loop that opened it."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
from collections import deque
from dataclasses import dataclass, replace

from ._http1 import (
    MAX_CONNECTIONS,
    MAX_IDLE,
    RECV_SIZE,
    Incomplete,
    Origin,
    ProtocolFault,
    Response,
    ResponseParser,
    broken,
    check_max_connections,
    connect_failed,
    pool_closed,
    pool_timed_out,
    readable_now,
    timed_out,
)

__all__ = ["AsyncPool", "async_supported"]


class _Expired(Exception):
    pass


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _expire(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_exception(_Expired())


def _left(loop: asyncio.AbstractEventLoop, deadline: float | None) -> float | None:
    """Seconds left before ``deadline`` on ``loop``'s clock (``None``: no deadline);
    :class:`_Expired` once it has passed."""
    if deadline is None:
        return None
    left = deadline - loop.time()
    if left <= 0:
        raise _Expired
    return left


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
                    pool_closed(self.origin, method)
                if self._loop is not loop:
                    stale, self._idle, self._loop = self._idle, [], loop
                    self._open -= len(stale)
                taken: _Conn | _Waiter | None
                while self._idle:
                    conn = self._idle.pop()
                    if readable_now(conn.sock):
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
                    pool_closed(self.origin, method)
                pool_timed_out(self.origin, self.max_connections, method)
        conn = waiter.conn
        if conn is not None and readable_now(conn.sock):  # closed by the server meanwhile
            conn.sock.close()
            return None
        return conn

    async def request(self, body: bytes, timeout: float | None, method: str | None) -> Response:
        """POST ``body``, all of it (the wait for a free connection, the connect, the write
        and the reads) within ``timeout`` seconds."""
        origin = self.origin
        if self._closed:
            pool_closed(origin, method)
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        taken = self._take(loop, method)
        conn = await self._wait(taken, timeout, method) if isinstance(taken, _Waiter) else taken
        try:
            if conn is None:
                conn = _Conn(await self._connect(loop, deadline, method), loop)
            response = await self._exchange(conn, origin.request(body), deadline, method)
        except BaseException:  # cancelled or failed: the socket is mid-message; the slot frees
            self._discard(conn, loop)
            raise
        if response.reusable:
            self._give_back(conn, loop)
        else:
            self._discard(conn, loop)
        return response

    async def _connect(  # noqa: RET503 (connect_failed raises)
        self, loop: asyncio.AbstractEventLoop, deadline: float | None, method: str | None
    ) -> socket.socket:
        origin = self.origin
        try:
            infos = await _resolve(loop, origin.host, origin.port, _left(loop, deadline))
        except _Expired:
            connect_failed(origin, TimeoutError("timed out resolving the host"), method)
        except OSError as exc:
            connect_failed(origin, exc, method)
        error: OSError | None = None
        for family, kind, proto, _, address in infos:
            sock = socket.socket(family, kind, proto)
            try:
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                try:
                    sock.connect(address)
                except (BlockingIOError, InterruptedError):
                    await _ready(loop, sock.fileno(), write=True, timeout=_left(loop, deadline))
                    code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                else:
                    code = 0
                if code:
                    raise OSError(code, f"connect to {address!r} failed: {os.strerror(code)}")
                return sock
            except _Expired:
                sock.close()
                connect_failed(origin, TimeoutError("timed out connecting"), method)
            except OSError as exc:
                sock.close()
                error = exc
            except BaseException:
                sock.close()
                raise
        connect_failed(origin, error or OSError("no address to connect to"), method)

    async def _exchange(
        self, conn: _Conn, data: bytes, deadline: float | None, method: str | None
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
                    await _ready(loop, fd, write=True, timeout=_left(loop, deadline))
                    continue
                view = view[sent:]
        except _Expired:
            timed_out(origin, "write", method)
        except OSError as exc:
            refused = exc  # an early answer may still be readable (see SyncPool._exchange)
        parser = ResponseParser()
        try:
            while True:
                try:
                    chunk = sock.recv(RECV_SIZE)
                except (BlockingIOError, InterruptedError):
                    await _ready(loop, fd, write=False, timeout=_left(loop, deadline))
                    continue
                response = parser.feed(chunk) if chunk else parser.eof()
                if response is not None:
                    return response if refused is None else replace(response, reusable=False)
        except _Expired:
            if refused is not None:
                broken(origin, refused, method)
            timed_out(origin, "read", method)
        except (OSError, ProtocolFault, Incomplete) as exc:
            broken(origin, refused or exc, method)

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
