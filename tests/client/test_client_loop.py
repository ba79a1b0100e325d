"""The client README's promise that ``AsyncA2MClient`` never blocks the event loop: while a
call waits on a server that cannot answer yet (its writer held, or its process stopped),
the loop keeps running other tasks, in process (the server runs on a worker thread), over
HTTP and over stdio (asyncio subprocess pipes). The loop itself frees the server; were the
call blocking the loop, only a fallback timer on another thread could, and the test says
which did."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from a2m import AsyncA2MClient
from a2m.transports import AsyncStdioTransport
from a2m_server import A2MServer
from a2m_testing.servers import serve_http, stdio_command

pytestmark = pytest.mark.anyio

FALLBACK_S = 10.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server() -> Iterator[A2MServer]:
    with A2MServer() as server:
        yield server


class _Held:
    """The server's writer held by a thread of its own until ``release``."""

    def __init__(self, server: A2MServer) -> None:
        lock: Any = server.store._write_lock  # type: ignore[attr-defined]
        self._go = threading.Event()
        held = threading.Event()

        def hold() -> None:
            with lock:
                held.set()
                self._go.wait(FALLBACK_S * 2)

        self._thread = threading.Thread(target=hold, daemon=True)
        self._thread.start()
        assert held.wait(FALLBACK_S)

    def release(self) -> None:
        self._go.set()
        self._thread.join(FALLBACK_S)


async def _the_loop_frees_the_server(
    call: Callable[[], Awaitable[Any]], release: Callable[[], None]
) -> Any:
    """Run ``call`` against a server that cannot answer until ``release``; free it from the
    loop after a while, with a timer thread as the fallback. Returns the call's result."""
    first: list[str] = []
    guard = threading.Lock()

    def free(by: str) -> None:
        with guard:
            if first:
                return
            first.append(by)
        release()

    fallback = threading.Timer(FALLBACK_S, free, args=("a timer thread",))
    fallback.start()
    try:
        task = asyncio.ensure_future(call())
        for _ in range(20):  # other tasks run while the call waits
            await asyncio.sleep(0.01)
        assert not first, "the call blocked the event loop until the timer freed it"
        assert not task.done(), "the server answered although it was held"
        free("the event loop")
        result = await asyncio.wait_for(task, FALLBACK_S * 2)
    finally:
        fallback.cancel()
    assert first == ["the event loop"], "the call blocked the event loop"
    return result


async def test_in_process_calls_leave_the_loop_free(server: A2MServer) -> None:
    async with AsyncA2MClient.in_process(server) as client:
        await client.describe()
        held = _Held(server)
        result = await _the_loop_frees_the_server(
            lambda: client.remember({"id": "in-process-1", "content": "written"}), held.release
        )
        assert result.ids == ["in-process-1"]


async def test_http_calls_leave_the_loop_free(server: A2MServer) -> None:
    with serve_http(server) as url:
        async with AsyncA2MClient(url) as client:
            await client.describe()
            held = _Held(server)
            result = await _the_loop_frees_the_server(
                lambda: client.remember({"id": "http-1", "content": "written"}), held.release
            )
            assert result.ids == ["http-1"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
async def test_stdio_calls_leave_the_loop_free(tmp_path: Path) -> None:
    transport = AsyncStdioTransport(stdio_command(str(tmp_path / "loop.db")))
    async with AsyncA2MClient(transport=transport) as client:
        await client.describe()
        process = transport._process
        assert process is not None
        os.kill(process.pid, signal.SIGSTOP)
        try:
            result = await _the_loop_frees_the_server(
                lambda: client.remember({"id": "stdio-1", "content": "written"}),
                lambda: os.kill(process.pid, signal.SIGCONT),
            )
        finally:
            os.kill(process.pid, signal.SIGCONT)
        assert result.ids == ["stdio-1"]
        assert [r.id for r in (await client.timeline(limit=5)).records] == ["stdio-1"]
