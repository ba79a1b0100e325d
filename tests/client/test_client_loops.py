"""One ``AsyncA2MClient`` awaited from several event loops — as frameworks do when they run
async code through ``asyncio.run`` on worker threads — at once and one after another, on
every binding: each call is served, or (where the binding's resource belongs to one loop)
refused with the typed :class:`~a2m.A2MEventLoopError`; never a hang, never a bare
``RuntimeError``, and nothing left open (pytest turns a leaked socket or pipe's
``ResourceWarning`` into an error)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

import a2m
from a2m import AsyncA2MClient
from a2m.adapter import AsyncA2MAdapter
from a2m.transports import use_httpx
from a2m_testing.bindings import open_client
from a2m_testing.servers import Servers

THREADS = 5
JOIN_S = 60.0

# "http-httpx" is plain HTTP through the httpx path (https, a proxy) rather than the lean one.
SERVED_BINDINGS = ["in-process", "http", "http-httpx", "rest"]


@pytest.fixture
def servers() -> Iterator[Servers]:
    with Servers() as made:
        yield made


@contextlib.contextmanager
def _path(binding: str) -> Iterator[str]:
    if binding == "http-httpx":
        with use_httpx():
            yield "http"
    else:
        yield binding


def _on_threads(work: Callable[[int], Any], *, together: bool) -> list[Any]:
    """``asyncio.run`` of ``work(i)``'s coroutine on each of THREADS threads, all at once
    (a barrier) or one after another; each result, or the exception it raised."""
    results: list[Any] = [None] * THREADS
    barrier = threading.Barrier(THREADS)

    def run(index: int) -> None:
        try:
            if together:
                barrier.wait(JOIN_S)
            results[index] = asyncio.run(work(index))
        except BaseException as exc:  # reported, not lost on the thread
            results[index] = exc

    threads = [threading.Thread(target=run, args=(index,)) for index in range(THREADS)]
    for thread in threads:
        thread.start()
        if not together:
            thread.join(JOIN_S)
    for thread in threads:
        thread.join(JOIN_S)
    assert not any(thread.is_alive() for thread in threads), "a call hung"
    return results


def _write_and_read(client: AsyncA2MClient) -> Callable[[int], Any]:
    async def work(index: int) -> int:
        await client.remember({"content": f"walrus note {index}", "key": f"loops/{index}"})
        fetched = await client.fetch(f"loops/{index}")
        assert fetched.record is not None
        return index

    return work


def _close(client: AsyncA2MClient) -> None:
    asyncio.run(client.aclose())


@pytest.mark.parametrize("together", [True, False], ids=["at-once", "in-turn"])
@pytest.mark.parametrize("binding", SERVED_BINDINGS)
def test_one_fresh_client_serves_every_loop(servers: Servers, binding: str, together: bool) -> None:
    with _path(binding) as name:
        client = open_client(AsyncA2MClient, name, servers, timeout=30)
        try:
            results = _on_threads(_write_and_read(client), together=together)
            assert results == list(range(THREADS))
            # and every record landed, read back from yet another loop
            listed = asyncio.run(client.timeline()).records
            assert sorted(record.key for record in listed) == [
                f"loops/{index}" for index in range(THREADS)
            ]
        finally:
            _close(client)


@pytest.mark.parametrize("together", [True, False], ids=["at-once", "in-turn"])
def test_stdio_serves_other_loops_while_its_own_runs_and_refuses_typed_after(
    servers: Servers, together: bool
) -> None:
    """A stdio server's pipes belong to the loop that started it: calls from other loops
    are carried over to it while it runs; once it has ended (the server stopped with it,
    nothing left open) they raise A2MEventLoopError."""
    client = open_client(AsyncA2MClient, "stdio", servers, timeout=30)
    try:
        results = _on_threads(_write_and_read(client), together=together)
        served = [r for r in results if isinstance(r, int)]
        refused = [r for r in results if not isinstance(r, int)]
        assert served, results
        assert all(isinstance(r, a2m.A2MEventLoopError) for r in refused), results
        if not together:  # the first loop started the server and ended, stopping it
            assert results[0] == 0
            assert len(refused) == THREADS - 1
        with pytest.raises(a2m.A2MEventLoopError, match="event loop"):
            asyncio.run(client.recall("walrus"))
    finally:
        _close(client)


@pytest.mark.parametrize("binding", ["http", "rest"])
def test_an_injected_http_client_serves_its_loop_and_refuses_others_typed(
    servers: Servers, binding: str
) -> None:
    url = servers.http_url()
    holder: dict[str, Any] = {}

    async def first() -> int:
        http_client = httpx.AsyncClient()
        holder["http"] = http_client
        client = (
            AsyncA2MClient(url, http_client=http_client)
            if binding == "http"
            else AsyncA2MClient.rest(url, namespace="loops", http_client=http_client)
        )
        holder["client"] = client
        await client.remember("from the first loop")
        return 1

    async def second() -> None:
        await holder["client"].recall("first")

    async def close() -> None:
        await holder["client"].aclose()
        await holder["http"].aclose()

    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(first()) == 1
        outcome: list[BaseException] = []
        thread = threading.Thread(target=lambda: _capture(outcome, second))
        thread.start()
        thread.join(JOIN_S)
        assert not thread.is_alive()
        assert len(outcome) == 1
        assert isinstance(outcome[0], a2m.A2MEventLoopError), outcome
        assert "injected http_client" in str(outcome[0])
        loop.run_until_complete(close())
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


def _capture(outcome: list[BaseException], work: Callable[[], Any]) -> None:
    try:
        asyncio.run(work())
    except BaseException as exc:
        outcome.append(exc)


@pytest.mark.parametrize("binding", ["in-process", "http", "rest"])
def test_the_async_adapter_serves_every_loop_at_once(servers: Servers, binding: str) -> None:
    client = open_client(AsyncA2MClient, binding, servers, timeout=30)
    adapter = AsyncA2MAdapter(client, "loops", source_framework="test")

    async def work(index: int) -> int:
        await adapter.write(f"k{index}", "semantic", {"n": index})
        entry = await adapter.read(f"k{index}")
        assert entry is not None
        assert entry.value == {"n": index}
        return index

    try:
        assert _on_threads(work, together=True) == list(range(THREADS))
    finally:
        _close(client)


@pytest.mark.parametrize("binding", ["in-process", "http", "rest"])
def test_trio_runs_on_threads_share_one_client(servers: Servers, binding: str) -> None:
    trio = pytest.importorskip("trio")
    client = open_client(AsyncA2MClient, binding, servers, timeout=30)
    results: list[Any] = [None] * THREADS
    barrier = threading.Barrier(THREADS)

    def run(index: int) -> None:
        async def work() -> int:
            await client.remember({"content": f"trio {index}", "key": f"trio/{index}"})
            assert (await client.fetch(f"trio/{index}")).record is not None
            return index

        try:
            barrier.wait(JOIN_S)
            results[index] = trio.run(work)
        except BaseException as exc:
            results[index] = exc

    threads = [threading.Thread(target=run, args=(index,)) for index in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_S)
    assert not any(thread.is_alive() for thread in threads)
    try:
        assert results == list(range(THREADS))
    finally:
        _close(client)
