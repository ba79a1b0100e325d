"""The async paths never block the event loop: every async method runs against a server
that takes a while to answer, while a ticker measures the longest the loop went without
running it. A blocking call anywhere would stall the loop for a whole answer."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage
from langchain_support import WordEmbeddings

from a2m import A2MClient, AsyncA2MClient
from a2m_langchain import A2MChatMessageHistory, A2MMemory, A2MRetriever, A2MVectorStore
from a2m_server.bindings.http import create_app
from a2m_server.server import A2MServer
from a2m_testing.servers import serve_http

DELAY = 0.4
"""How long the server takes over every request, in seconds."""
STALL = 0.25
"""The longest the loop may go without running the ticker: well under one DELAY."""


class SlowApp:
    """The HTTP binding, answering every request only after ``DELAY`` (asleep on the
    server's own loop, so the server stays responsive)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await asyncio.sleep(DELAY)
        await self.app(scope, receive, send)


@pytest.fixture
def slow_url() -> Iterator[str]:
    with A2MServer() as server, serve_http(SlowApp(create_app(server))) as url:
        yield url


@pytest.fixture
async def slow_client(slow_url: str) -> AsyncIterator[AsyncA2MClient]:
    async with AsyncA2MClient(slow_url, timeout=30) as client:
        await client.describe()  # negotiated up front, as any later call would need
        yield client


async def longest_stall(work: Callable[[], Awaitable[Any]]) -> float:
    """Run ``work`` while ticking; the longest gap between ticks, in seconds."""
    gaps: list[float] = []
    running = True

    async def tick() -> None:
        last = time.perf_counter()
        while running:
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.02)
    try:
        await work()
    finally:
        running = False
        await ticker
    return max(gaps)


async def test_the_ticker_sees_a_blocking_call(slow_url: str) -> None:
    """The harness itself: a sync client called on the loop is caught."""
    with A2MClient(slow_url, timeout=30) as blocking:

        async def block() -> None:
            blocking.timeline()

        assert await longest_stall(block) >= DELAY


async def test_chat_history_async_paths(slow_client: AsyncA2MClient) -> None:
    history = A2MChatMessageHistory("conv-1", slow_client)

    async def work() -> None:
        await history.aadd_messages([HumanMessage("hi"), AIMessage("hello")])
        assert len(await history.aget_messages()) == 2
        await history.aclear()

    assert await longest_stall(work) < STALL


async def test_memory_async_paths(slow_client: AsyncA2MClient) -> None:
    memory = A2MMemory(client=slow_client, session_id="conv-1", relevant_key="facts")

    async def work() -> None:
        await memory.asave_context({"input": "hi"}, {"output": "hello"})
        loaded = await memory.aload_memory_variables({"input": "hello"})
        assert loaded["history"] == "Human: hi\nAI: hello"
        await memory.aclear()

    assert await longest_stall(work) < STALL


async def test_retriever_and_vector_store_async_paths(slow_client: AsyncA2MClient) -> None:
    store = A2MVectorStore(WordEmbeddings(), slow_client)
    lexical = A2MRetriever(client=slow_client)
    semantic = A2MRetriever(client=slow_client, embeddings=WordEmbeddings())

    async def work() -> None:
        ids = await store.aadd_documents([Document("tea drink"), Document("cat pet")])
        assert len(await store.asimilarity_search("tea", k=1)) == 1
        assert len(await store.asimilarity_search_with_score("tea", k=1, filter={})) == 1
        assert len(await store.amax_marginal_relevance_search("tea", k=1)) == 1
        assert len(await store.aget_by_ids(ids)) == 2
        assert await lexical.ainvoke("tea")
        assert await semantic.ainvoke("tea drink")
        await store.adelete(ids)

    assert await longest_stall(work) < STALL
