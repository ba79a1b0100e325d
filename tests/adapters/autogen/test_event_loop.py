"""Every coroutine of the adapter leaves the event loop free while it waits on the store.

The server answers each HTTP request only after a delay; a heartbeat task on the test's
loop notes the longest gap between its ticks. A call that waited on the network by
blocking (a sync client, a ``time.sleep``) would stall the heartbeat for the whole delay;
the monitor's own test shows it catches exactly that."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.model_context import UnboundedChatCompletionContext
from autogen_core.models import UserMessage

from a2m import AsyncA2MClient
from a2m_autogen import A2MChatCompletionContext, A2MMemory
from a2m_autogen.agentchat import A2MTranscript
from a2m_server import A2MServer
from a2m_server.bindings.http import create_app
from a2m_testing.servers import serve_http

pytestmark = pytest.mark.anyio

DELAY = 0.2  # seconds the server waits before answering each request
TICK = 0.005
STALL = DELAY / 2  # a gap this long means the loop was blocked


def slow(app: Any) -> Any:
    async def delayed(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await asyncio.sleep(DELAY)
        await app(scope, receive, send)

    return delayed


@pytest.fixture
def slow_url() -> Iterator[str]:
    with A2MServer() as server, serve_http(slow(create_app(server))) as url:
        yield url


@asynccontextmanager
async def heartbeat() -> AsyncIterator[list[float]]:
    """Yields a list that holds, once the block ends, the longest gap between ticks."""
    longest: list[float] = [0.0]

    async def beat() -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(TICK)
            now = time.perf_counter()
            longest[0] = max(longest[0], now - last)
            last = now

    task = asyncio.create_task(beat())
    await asyncio.sleep(TICK * 2)
    try:
        yield longest
    finally:
        await asyncio.sleep(TICK * 2)  # let the heartbeat see a stall that just ended
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def unblocked(call: Callable[[], Awaitable[Any]]) -> float:
    """Run ``call`` under the heartbeat; returns how long it took, after checking the
    loop never stalled meanwhile."""
    async with heartbeat() as longest:
        started = time.perf_counter()
        await call()
        took = time.perf_counter() - started
    assert longest[0] < STALL, f"the event loop was blocked for {longest[0]:.3f}s"
    return took


async def test_the_monitor_catches_a_blocking_call() -> None:
    async def blocking() -> None:
        time.sleep(DELAY)  # noqa: ASYNC251  (what a sync client in a coroutine amounts to)

    with pytest.raises(AssertionError, match="blocked"):
        await unblocked(blocking)


async def test_memory_coroutines_never_block_the_loop(slow_url: str) -> None:
    memory = A2MMemory(url=slow_url, namespace="app/loop")
    text = MemoryMimeType.TEXT
    calls: list[Callable[[], Awaitable[Any]]] = [
        lambda: memory.add(MemoryContent(content="first note", mime_type=text)),
        lambda: memory.add_many([MemoryContent(content=f"n{i}", mime_type=text) for i in range(3)]),
        lambda: memory.query("note"),
        lambda: memory.update_context(_context("note")),
        memory.clear,
        memory.close,
    ]
    for call in calls[:-1]:
        took = await unblocked(call)
        assert took >= DELAY  # it really waited on the slow server
    await unblocked(calls[-1])


async def test_context_and_transcript_coroutines_never_block_the_loop(slow_url: str) -> None:
    async with AsyncA2MClient(slow_url) as client:
        context = A2MChatCompletionContext(client, session="s1")
        message = UserMessage(content="hello", source="user")
        assert await unblocked(lambda: context.add_message(message)) >= DELAY
        fresh = A2MChatCompletionContext(client, session="s1")
        assert await unblocked(fresh.get_messages) >= DELAY
        assert await unblocked(fresh.clear) >= DELAY
        transcript = A2MTranscript(client, session="s1")
        assert await unblocked(transcript.messages) >= DELAY


def _context(question: str) -> UnboundedChatCompletionContext:
    return UnboundedChatCompletionContext([UserMessage(content=question, source="user")])
