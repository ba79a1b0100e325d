"""Sharing one client: 16 threads on one sync client, 64 concurrent recalls on one async
client, and concurrent first calls that must negotiate exactly once."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from client_support import BINDINGS, close_all

pytestmark = pytest.mark.anyio

THREADS = 16
TASKS = 64


@pytest.mark.parametrize("binding", BINDINGS)
async def test_sixteen_threads_share_one_sync_client(make_driver, spy, binding) -> None:
    driver = make_driver("sync", binding)
    recorder = spy(driver)
    client = driver.client
    start = threading.Barrier(THREADS)

    def work(worker: int) -> list[str]:
        start.wait()  # every thread makes its first call at once
        ids: list[str] = []
        for turn in range(5):
            ids += client.remember(f"worker {worker} turn {turn}").ids
            found = client.recall(f"worker {worker}", limit=50).records
            assert any(r.content.startswith(f"worker {worker} ") for r in found)
        return ids

    with ThreadPoolExecutor(THREADS) as pool:
        written = [i for ids in pool.map(work, range(THREADS)) for i in ids]
    assert len(set(written)) == THREADS * 5
    assert recorder.count("memory/describe") == 1
    timeline = client.timeline()
    assert {r.id for r in timeline.records} == set(written)


@pytest.mark.parametrize("binding", BINDINGS)
async def test_sixty_four_concurrent_async_recalls(make_driver, spy, binding) -> None:
    driver = make_driver("async", binding)
    try:
        recorder = spy(driver)
        client = driver.client
        await client.remember([f"fact number {n}" for n in range(8)])
        results = await asyncio.gather(
            *(client.recall(f"fact number {n % 8}") for n in range(TASKS))
        )
        assert len(results) == TASKS
        for n, result in enumerate(results):
            assert f"fact number {n % 8}" in [r.content for r in result.records]
        assert recorder.count("memory/describe") == 1
        assert recorder.count("memory/recall") == TASKS
    finally:
        await close_all(make_driver)


@pytest.mark.parametrize("binding", BINDINGS)
async def test_concurrent_first_async_calls_negotiate_once(make_driver, spy, binding) -> None:
    driver = make_driver("async", binding)
    try:
        recorder = spy(driver)
        await asyncio.gather(*(driver.client.timeline() for _ in range(TASKS)))
        assert recorder.count("memory/describe") == 1
    finally:
        await close_all(make_driver)
