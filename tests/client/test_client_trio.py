"""The async client under trio (through anyio): over HTTP (httpx carries it there), REST
and in process, every method, retries, timeouts, tasks sharing one client, polling for
events and the adapter contract work as on asyncio, against the bundled server and the
scripted one; what needs asyncio (the stdio binding's pipes, push delivery) refuses
clearly, unsent."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from scripted_http import ScriptedServer, hang, respond

import a2m
from a2m import AsyncA2MClient
from a2m.adapter import AsyncA2MAdapter

pytest.importorskip("trio")
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "trio"


@pytest.fixture
def scripted() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


@pytest.fixture
def bundled() -> Iterator[Any]:
    from a2m_server.server import A2MServer

    with A2MServer({}) as server:
        yield server


@pytest.fixture
def url(bundled: Any) -> Iterator[str]:
    from a2m_testing.servers import serve_http

    with serve_http(bundled) as served:
        yield served


async def test_these_tests_run_on_trio() -> None:
    """Guard: the fixture above is what makes every test here a trio test."""
    import sniffio

    assert sniffio.current_async_library() == "trio"


async def _exercise(client: AsyncA2MClient) -> None:
    described = await client.describe()
    assert "keys" in described.capabilities
    written = await client.remember(
        [
            {"content": "the deploy key rotates on fridays", "key": "ops/deploy-key"},
            {"content": "lunch is at noon", "embedding": [1.0, 0.0, 0.0]},
        ]
    )
    assert len(written.ids) == 2
    found = await client.recall("deploy key")
    assert found.records[0].content == "the deploy key rotates on fridays"
    similar = await client.recall(embedding=[0.9, 0.1, 0.0], limit=1)
    assert similar.records[0].id == written.ids[1]
    fetched = await client.fetch("ops/deploy-key")
    assert fetched.record is not None
    assert fetched.record.id == written.ids[0]
    first = await client.timeline(limit=1)
    assert len(first.records) == 1
    forgotten = await client.forget(ids=[written.ids[1]])
    assert forgotten.forgotten == 1
    assert [r.id for r in (await client.timeline(limit=10)).records] == [written.ids[0]]


async def test_every_call_over_http(url: str) -> None:
    async with AsyncA2MClient(url) as client:
        await _exercise(client)


async def test_every_call_over_rest(url: str) -> None:
    async with AsyncA2MClient.rest(url, namespace="trio-app") as client:
        await _exercise(client)


async def test_every_call_in_process(bundled: Any) -> None:
    async with AsyncA2MClient.in_process(bundled) as client:
        await _exercise(client)


async def test_tasks_share_one_client_and_negotiate_once(scripted: ScriptedServer) -> None:
    client = AsyncA2MClient(scripted.url)
    answers: dict[int, str] = {}

    async def ask(index: int) -> None:
        answers[index] = (await client.recall(f"q{index}")).records[0].content

    async with anyio.create_task_group() as group:
        for index in range(20):
            group.start_soon(ask, index)
    await client.aclose()
    assert answers == {index: f"q{index}" for index in range(20)}
    assert scripted.methods().count("memory/describe") == 1
    assert scripted.methods().count("memory/recall") == 20


async def test_retries_wait_on_trio(scripted: ScriptedServer) -> None:
    busy = b'{"error": "busy"}'
    scripted.script = [
        respond(
            status=503, reason="Service Unavailable", headers=(("Retry-After", "0"),), body=busy
        ),
        respond(status=429, reason="Too Many Requests", headers=(("Retry-After", "0"),), body=busy),
    ]
    async with AsyncA2MClient(scripted.url) as client:
        assert (await client.recall("eventually")).records[0].content == "eventually"
    assert scripted.methods().count("memory/recall") == 3


async def test_a_silent_server_times_out(scripted: ScriptedServer) -> None:
    release = threading.Event()
    scripted.script = [hang(release)]
    client = AsyncA2MClient(scripted.url)
    await client.describe()
    started = time.monotonic()
    try:
        with pytest.raises(a2m.A2MTimeoutError):
            await client.with_options(timeout=0.3, max_retries=0).recall("x")
    finally:
        release.set()
    assert time.monotonic() - started < 10
    assert (await client.recall("later")).records[0].content == "later"
    await client.aclose()


async def test_a_blocked_in_process_server_times_out_and_the_write_still_lands(
    bundled: Any,
) -> None:
    client = AsyncA2MClient.in_process(bundled)
    await client.describe()
    hurried = client.with_options(timeout=0.3, max_retries=0)
    lock = bundled.store._write_lock  # held here, the server's writer waits on it
    lock.acquire()
    try:
        with pytest.raises(a2m.A2MTimeoutError, match=r"did not answer within 0\.3s"):
            await hurried.remember({"id": "late-1", "content": "written after the deadline"})
    finally:
        lock.release()
    # The abandoned call runs on to its end on its thread, which signals no one: the write
    # lands once the lock is free. Reads keep the default timeout: only the write was
    # meant to miss its deadline.
    with anyio.fail_after(10):
        while not (await client.timeline(limit=5)).records:  # noqa: ASYNC110
            await anyio.sleep(0.02)
    assert [r.id for r in (await client.timeline(limit=5)).records] == ["late-1"]
    await client.aclose()


async def test_watch_polls_for_events(url: str) -> None:
    async with AsyncA2MClient(url) as reader, AsyncA2MClient(url) as writer:
        watcher = reader.watch(poll_interval=0.02)
        seen: list[str] = []

        async def follow() -> None:
            async for event in watcher:
                seen.append(event.kind)
                if len(seen) == 2:
                    return

        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(follow)
                await anyio.sleep(0.05)
                await writer.remember(["one", "two"])
    assert seen == ["written", "written"]


async def test_the_adapter_contract(url: str) -> None:
    async with AsyncA2MClient(url) as client:
        adapter = AsyncA2MAdapter(client, "trio/app", source_framework="trio-test")
        await adapter.write("notes/a", "semantic", "the vault moved to staging", [1.0, 0.0])
        entry = await adapter.read("notes/a")
        assert entry is not None
        assert entry.value == "the vault moved to staging"
        hits = await adapter.query([1.0, 0.0], top_k=1)
        assert [hit.entry.key for hit in hits] == ["notes/a"]
        await adapter.delete("notes/a")
        assert await adapter.read("notes/a") is None


async def test_stdio_refuses_clearly_and_starts_nothing(tmp_path: Path) -> None:
    from a2m_testing.servers import stdio_command

    client = AsyncA2MClient.stdio(stdio_command(str(tmp_path / "stdio.db")))
    with pytest.raises(RuntimeError, match=r"AsyncA2MClient.stdio needs asyncio.*runs on trio"):
        await client.describe()
    assert client._state.transport._process is None  # type: ignore[attr-defined]
    await client.aclose()


async def test_push_refuses_clearly_and_unsent(bundled: Any) -> None:
    async with AsyncA2MClient.in_process(bundled) as client:
        await client.describe()
        with pytest.raises(RuntimeError, match=r"push delivery .* needs asyncio.*watch"):
            await client.subscribe()
        assert client._state.subscription is None  # refused before anything was registered
        assert (await client.recall("anything")).records == []  # and the client carries on
