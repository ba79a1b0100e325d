"""What the HTTP and REST bindings share, kept apart from both so neither imports the
other's package: the authenticated principal the HTTP gate leaves on a connection, JSON
text as the bytes a response carries, and the worker threads their storage calls run on."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ipaddress
import json
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread
from starlette.requests import HTTPConnection

__all__ = [
    "PRINCIPAL_SCOPE_KEY",
    "WORKER_THREADS",
    "addressed_directly",
    "in_worker",
    "principal_of",
    "utf8",
]

PRINCIPAL_SCOPE_KEY = "a2m.principal"
"""Where the HTTP gate puts the authenticated principal in the ASGI scope."""

WORKER_THREADS = 40
"""Most storage calls run at once for the bindings (anyio's default limit)."""

_T = TypeVar("_T")


def principal_of(request: HTTPConnection) -> str | None:
    """The authenticated principal of a request or WebSocket that passed the gate (``None``
    without auth)."""
    principal = request.scope.get(PRINCIPAL_SCOPE_KEY)
    return principal if isinstance(principal, str) else None


def utf8(text: str) -> bytes:
    """``text`` (one JSON message) as UTF-8 bytes, even when it holds a lone surrogate.

    JSON may escape a surrogate half (``"\\ud800"``) that UTF-8 cannot encode; such a
    message is re-serialised with ASCII escapes, which is the same JSON value."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        value = json.loads(text)
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")


async def in_worker(func: Callable[..., _T], *args: Any) -> _T:
    """Run ``func(*args)`` on a worker thread and wait for it: storage calls block, and the
    event loop must not.

    Under asyncio the call goes to :data:`_workers` directly; any other event loop gets
    anyio's ``to_thread``."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return await anyio.to_thread.run_sync(func, *args)
    future: asyncio.Future[_T] = loop.create_future()
    _workers.submit(_Call(loop, future, func, args))
    return await future


class _Call:
    """One call for a worker thread, which hands the outcome back to the loop that waits."""

    __slots__ = ("args", "func", "future", "loop")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
        func: Callable[..., Any],
        args: tuple[Any, ...],
    ) -> None:
        self.loop = loop
        self.future = future
        self.func = func
        self.args = args

    def run(self) -> None:
        try:
            result = self.func(*self.args)
        except BaseException as exc:  # the waiting coroutine re-raises it, as an executor does
            self._settle(None, exc)
        else:
            self._settle(result, None)

    def _settle(self, result: Any, error: BaseException | None) -> None:
        # A closed loop refuses the call: nobody waits any more.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(_settle, self.future, result, error)


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


class _Workers:
    """Threads fed from one queue, started as calls need them, up to ``limit``.

    Lighter than ``loop.run_in_executor``: no ``concurrent.futures.Future`` to create, wrap
    and chain per call, and the worker hands the outcome straight to the loop, which
    measurably shortens every request's round trip."""

    def __init__(self, limit: int, name: str) -> None:
        self._limit = limit
        self._name = name
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0  # threads waiting for a call that no submitted call has claimed
        self._stopped = False

    def submit(self, call: _Call) -> None:
        with self._lock:
            if self._stopped:
                raise RuntimeError("the worker threads have stopped")
            if self._idle:
                self._idle -= 1
            elif len(self._threads) < self._limit:
                thread = threading.Thread(
                    target=self._work, name=f"{self._name}-{len(self._threads)}", daemon=True
                )
                self._threads.append(thread)
                thread.start()
        self._calls.put(call)

    def _work(self) -> None:
        calls = self._calls
        while True:
            call = calls.get()
            if call is None:
                return
            call.run()
            del call
            with self._lock:
                self._idle += 1

    def stop(self) -> None:
        """Let the calls in progress finish and end the threads (at interpreter exit)."""
        with self._lock:
            self._stopped = True
            threads = list(self._threads)
        for _ in threads:
            self._calls.put(None)
        for thread in threads:
            thread.join()


_workers = _Workers(WORKER_THREADS, "a2m-worker")
atexit.register(_workers.stop)


def addressed_directly(host: str) -> bool:
    """Whether a ``Host`` header names an IP address or localhost, not a DNS name another
    site could rebind to this server (and so read it, from its user's browser)."""
    name = host.strip().lower()
    if name.startswith("["):
        name = name[1 : name.find("]")] if "]" in name else name
    else:
        name = name.rsplit(":", 1)[0] if name.count(":") == 1 else name
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
