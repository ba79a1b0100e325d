"""The blocking pool of :mod:`a2m.transports._http1`: one keep-alive connection per
request in flight, at most ``max_connections``, each request a single ``sendall`` and
reads until the response is whole."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import replace

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
    open_socket,
    pool_closed,
    pool_timed_out,
    readable_now,
    timed_out,
)

__all__ = ["SyncPool"]


class SyncPool:
    """Keep-alive connections to one origin, shared by threads: each request takes an idle
    connection that is still open (or opens one) and gives it back if the response lets it
    be reused. At most ``max_connections`` are open at once; a request finding them all
    busy waits, within its timeout, for one to be given back or closed. A request's
    timeout bounds the whole of it: the wait, the connect, the write and every read."""

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

    def _acquire(self, deadline: float | None, method: str | None) -> socket.socket | None:
        """An idle connection still open, or ``None`` with a slot taken for a new one."""
        with self._lock:
            while True:
                if self._closed:
                    pool_closed(self.origin, method)
                if self._idle:
                    sock = self._idle.pop()
                    break
                if self._open < self.max_connections:
                    self._open += 1
                    return None
                # Every slot is busy. Wake-ups are only hints: each is followed by this
                # loop's checks, so a notify that raced the wait's expiry is not lost.
                if deadline is not None and time.monotonic() >= deadline:
                    pool_timed_out(self.origin, self.max_connections, method)
                self._waiting += 1
                try:
                    self._freed.wait(None if deadline is None else deadline - time.monotonic())
                finally:
                    self._waiting -= 1
        while readable_now(sock):  # the server closed it while idle: its slot opens anew
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
        """POST ``body``, all of it (the wait for a free connection, the connect, the write
        and the reads) within ``timeout`` seconds."""
        origin = self.origin
        if self._closed:
            pool_closed(origin, method)
        deadline = None if timeout is None else time.monotonic() + timeout
        sock = self._acquire(deadline, method)
        try:
            if sock is None:
                try:
                    sock = open_socket(origin, _left(deadline))
                except OSError as exc:  # a timeout (TimeoutError) is an OSError too
                    connect_failed(origin, exc, method)
            response = self._exchange(sock, origin.request(body), deadline, method)
        except BaseException:  # the slot is freed on every way out
            self._discard(sock)
            raise
        if response.reusable:
            self._give_back(sock)
        else:
            self._discard(sock)
        return response

    def _exchange(
        self, sock: socket.socket, data: bytes, deadline: float | None, method: str | None
    ) -> Response:
        origin = self.origin
        refused: OSError | None = None
        try:
            sock.settimeout(_left(deadline))
            sock.sendall(data)  # the timeout bounds the whole sendall
        except TimeoutError:
            timed_out(origin, "write", method)
        except OSError as exc:
            # A server may answer before reading the whole request (a 413) and close: its
            # answer can still be read, and is worth more than the write's error.
            refused = exc
        parser = ResponseParser()
        try:
            while True:
                sock.settimeout(_left(deadline))
                chunk = sock.recv(RECV_SIZE)
                response = parser.feed(chunk) if chunk else parser.eof()
                if response is not None:
                    return response if refused is None else replace(response, reusable=False)
        except TimeoutError:
            if refused is not None:
                broken(origin, refused, method)
            timed_out(origin, "read", method)
        except (OSError, ProtocolFault, Incomplete) as exc:
            broken(origin, refused or exc, method)

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


def _left(deadline: float | None) -> float | None:
    """Seconds left before ``deadline`` (``None``: no deadline); ``TimeoutError`` once it
    has passed."""
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("timed out")
    return left
