"""A misbehaving HTTP server on a loopback socket: each request after describe is answered
by the next action a test scripted (the right answer, a wrong one, a close, silence), so
the client's own HTTP/1.1 path meets every fault a real peer can produce."""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from client_support import DESCRIBE_ALL, Driver

from a2m import A2MClient, AsyncA2MClient

RECORD_AT = "2026-07-28T10:15:30.123Z"


@dataclass
class Request:
    """One request as the server read it."""

    connection: int
    head: bytes
    body: bytes
    message: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.message = json.loads(self.body)

    @property
    def method(self) -> str:
        return str(self.message["method"])

    @property
    def request_line(self) -> bytes:
        return self.head.split(b"\r\n", 1)[0]

    def header(self, name: str) -> str | None:
        for line in self.head.split(b"\r\n")[1:]:
            key, _, value = line.partition(b":")
            if key.decode().lower() == name.lower():
                return value.strip().decode()
        return None


class Exchange:
    """What an action works with: the request and the connection it came on."""

    def __init__(self, sock: socket.socket, request: Request) -> None:
        self.sock = sock
        self.request = request

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def rpc_body(self, result: Any) -> bytes:
        """The JSON-RPC response answering this request with ``result``."""
        message = {"jsonrpc": "2.0", "id": self.request.message["id"], "result": result}
        return json.dumps(message).encode()


Action = Callable[[Exchange], bool]
"""Answers one request; returns whether the connection stays open for the next one."""


def echo_result(request: Request) -> Any:
    """The default answer: describe declares everything; recall returns one record whose
    content is the query (so a caller can tell its answer from another's)."""
    if request.method == "memory/describe":
        return DESCRIBE_ALL
    if request.method == "memory/recall":
        query = request.message["params"].get("query")
        return {"records": [{"id": "r1", "content": query, "created_at": RECORD_AT}]}
    if request.method == "memory/consolidate":
        return {"promoted": 0, "counts": {"working": 0}}
    return {}


def respond(
    result: Any = None,
    *,
    status: int = 200,
    reason: str = "OK",
    headers: tuple[tuple[str, str], ...] = (),
    framing: str = "length",
    version: str = "HTTP/1.1",
    body: bytes | None = None,
    interim: bytes = b"",
    keep_open: bool | None = None,
) -> Action:
    """A complete response: ``framing`` is ``length`` (Content-Length), ``chunked`` (with a
    chunk extension and a trailer) or ``close`` (neither: the body ends at the close).
    ``result`` ``None`` echoes (:func:`echo_result`); ``body`` replaces the JSON-RPC body;
    ``interim`` is sent first (1xx responses)."""

    def act(exchange: Exchange) -> bool:
        payload = (
            body
            if body is not None
            else exchange.rpc_body(result if result is not None else echo_result(exchange.request))
        )
        lines = [f"{version} {status} {reason}", "Content-Type: application/json"]
        lines += [f"{name}: {value}" for name, value in headers]
        if framing == "length":
            lines.append(f"Content-Length: {len(payload)}")
            wire = payload
        elif framing == "chunked":
            lines.append("Transfer-Encoding: chunked")
            half = len(payload) // 2
            wire = b"".join(
                b"%x;name=value\r\n%b\r\n" % (len(part), part)
                for part in (payload[:half], payload[half:])
                if part
            )
            wire += b"0\r\nX-Trailer: done\r\n\r\n"
        else:
            wire = payload
        exchange.send(interim + ("\r\n".join(lines) + "\r\n\r\n").encode() + wire)
        if keep_open is not None:
            return keep_open
        return framing != "close"

    return act


def raw(data: bytes) -> Action:
    """Send ``data`` as it is, then close."""

    def act(exchange: Exchange) -> bool:
        if data:
            exchange.send(data)
        return False

    return act


def hang(release: threading.Event) -> Action:
    """Read the request and answer nothing until ``release`` is set, then close."""

    def act(exchange: Exchange) -> bool:
        release.wait(30)
        return False

    return act


def reset() -> Action:
    """Read the request, then reset the connection (``SO_LINGER`` 0: an RST, not a FIN)."""

    def act(exchange: Exchange) -> bool:
        exchange.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        return False

    return act


def held(release: threading.Event, then: Action | None = None) -> Action:
    """Read the request and answer it (``then``, else :func:`respond`) once ``release`` is
    set: a request kept in flight for as long as a test needs."""

    def act(exchange: Exchange) -> bool:
        release.wait(30)
        return (then or respond())(exchange)

    return act


def slow(seconds: float, then: Action | None = None) -> Action:
    """Answer (``then``, else :func:`respond`) after ``seconds``, so concurrent requests
    overlap at the server."""

    def act(exchange: Exchange) -> bool:
        time.sleep(seconds)
        return (then or respond())(exchange)

    return act


def trickle(release: threading.Event, every: float = 0.05) -> Action:
    """Send a response head promising a body, then one byte of it every ``every`` seconds
    until ``release`` is set: each read gets something well within any timeout, and the
    response never completes."""

    def act(exchange: Exchange) -> bool:
        exchange.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        exchange.send(b"Content-Length: 100000\r\n\r\n")
        while not release.wait(every):
            try:
                exchange.send(b" ")
            except OSError:  # the client gave up and closed
                break
        return False

    return act


class ScriptedServer:
    """The server: ``script`` holds the actions for the requests after describe, consumed in
    order (when it is empty, ``default`` answers: :func:`respond`, unless a test sets
    another); ``requests`` records what came, ``connections`` how many were accepted,
    ``closes`` how many the server closed, ``peak`` the most it had open at once."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        self.script: list[Action] = []
        self.early: Callable[[socket.socket], None] | None = None
        """Answers, in place of reading it, a request whose body is over 100 kB; the
        connection is then closed with the body unread (the kernel resets it)."""
        self.default: Action = respond()
        self.requests: list[Request] = []
        self.connections = 0
        self.closes = 0
        self.peak = 0
        self._changed = threading.Condition()
        self._open: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._accepter = threading.Thread(target=self._accept, daemon=True)
        self._accepter.start()

    def methods(self) -> list[str]:
        return [request.method for request in self.requests]

    def wait_closes(self, count: int) -> None:
        """Block until the server has closed ``count`` connections."""
        with self._changed:
            assert self._changed.wait_for(lambda: self.closes >= count, timeout=10)

    def wait_requests(self, count: int) -> None:
        """Block until the server has read ``count`` requests."""
        with self._changed:
            assert self._changed.wait_for(lambda: len(self.requests) >= count, timeout=10)

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            with self._changed:
                self.connections += 1
                number = self.connections
                self._open.append(sock)
                self.peak = max(self.peak, self.connections - self.closes)
            thread = threading.Thread(target=self._serve, args=(sock, number), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, sock: socket.socket, number: int) -> None:
        sock.settimeout(30)
        buffer = b""
        try:
            while True:
                request, buffer = _read_request(sock, buffer, number, self.early)
                if request is None:
                    return
                with self._changed:
                    self.requests.append(request)
                    self._changed.notify_all()
                    scripted = request.method != "memory/describe" and self.script
                    action = self.script.pop(0) if scripted else self.default
                if not action(Exchange(sock, request)):
                    return
        except OSError:
            return
        finally:
            sock.close()
            with self._changed:
                self.closes += 1
                self._changed.notify_all()

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with contextlib.suppress(OSError):  # wakes the accept (a close alone does not)
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._changed:
            still_open = list(self._open)
        for sock in still_open:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._accepter.join(5)
        for thread in self._threads:
            thread.join(5)


def _read_request(
    sock: socket.socket,
    buffer: bytes,
    number: int,
    early: Callable[[socket.socket], None] | None = None,
) -> tuple[Request | None, bytes]:
    while b"\r\n\r\n" not in buffer:
        data = sock.recv(65536)
        if not data:
            return None, b""
        buffer += data
    head, _, rest = buffer.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == b"content-length":
            length = int(value)
    if early is not None and length > 100_000:
        early(sock)
        return None, b""
    while len(rest) < length:
        data = sock.recv(65536)
        if not data:
            return None, b""
        rest += data
    return Request(number, head, rest[:length]), rest[length:]


def unused_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def make(mode: str, url: str, **options: object) -> Driver:
    """A client of ``mode`` (``sync`` or ``async``) over HTTP at ``url``."""
    cls = A2MClient if mode == "sync" else AsyncA2MClient
    return Driver(cls(url, **options), "http")  # type: ignore[arg-type]


async def close(driver: Driver) -> None:
    """Close the client ``make`` built, sync or async."""
    if driver.is_async:
        await driver.client.aclose()
    else:
        driver.client.close()
