"""The async members on the async client: the same answers as the sync ones, and the
event loop keeps running while they wait on the server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

import pytest
from crew_support import embed_one
from storage_support import BASE, ids, records

from a2m import A2MClient, AsyncA2MClient
from a2m_crewai import A2MStorage

pytestmark = pytest.mark.anyio


async def test_async_members_match_sync(storage_factory: Callable[..., A2MStorage]) -> None:
    sync, asynchronous = storage_factory(), storage_factory()
    try:
        await asynchronous.asave(records())
        assert asynchronous._async_client is not None  # the async client did the work
        query = embed_one("the deploy key")
        for options in (
            {},
            {"scope_prefix": "/crew"},
            {"categories": ["market"]},
            {"metadata_filter": {"team": "blue"}, "limit": 2},
        ):
            mine = ids(await asynchronous.asearch(query, **options))  # type: ignore[arg-type]
            assert mine == ids(sync.search(query, **options))  # type: ignore[arg-type]
        assert await asynchronous.adelete(older_than=BASE + timedelta(days=1)) == 1
        assert await asynchronous.adelete(record_ids=["rec-1"]) == 1
        assert await asynchronous.adelete(scope_prefix="/crew", categories=["ops"]) == 1
        assert await asynchronous.adelete(record_ids=[]) == 0
        assert await asynchronous.adelete() == 2
        assert sync.count() == 0
    finally:
        await asynchronous.aclose()


async def test_given_clients_are_used_and_left_open(a2m_http_url: str) -> None:
    sync = A2MClient(a2m_http_url)
    asynchronous = AsyncA2MClient(a2m_http_url)
    storage = A2MStorage(sync, async_client=asynchronous)
    await storage.asave(records())
    assert ids(await storage.asearch(embed_one("annual plan"), limit=1)) == ["rec-2"]
    await storage.aclose()
    assert (await asynchronous.timeline(limit=1)).records  # still open
    assert sync.timeline(limit=1).records
    await asynchronous.aclose()
    sync.close()
    # With only a sync client the async members run it off the loop, in a thread.
    thread_only = A2MStorage(A2MClient(a2m_http_url))
    assert len(await thread_only.asearch(embed_one("annual plan"), limit=2)) == 2
    thread_only.client.close()


async def test_the_loop_keeps_running_during_calls(
    storage_factory: Callable[..., A2MStorage],
) -> None:
    storage = storage_factory()
    try:
        await storage.asave(records())
        ticks = 0
        stop = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        before = ticks
        await asyncio.gather(*(storage.asearch(embed_one(f"q {i}")) for i in range(20)))
        during = ticks - before
        stop.set()
        await task
        # Each search waits on a socket; a blocking call would have let the ticker run 0 times.
        assert during >= 20
    finally:
        await storage.aclose()
