"""Following a store: push subscriptions on the bindings that carry notifications (stdio,
in-process), their refusal over HTTP, and ``watch`` polling the log on every binding
(spec §4.12 to §4.14)."""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any

import pytest
from client_support import Driver, close_all

import a2m
from a2m import A2MClient, AsyncA2MClient, WrittenEvent

pytestmark = pytest.mark.anyio


async def collect(subscription: Any, count: int, timeout: float = 10.0) -> list[Any]:
    """Up to ``count`` events from a sync or async subscription's iterator."""
    if isinstance(subscription, a2m.AsyncSubscription):
        events = []
        async for event in subscription.iter_events(timeout=timeout):
            events.append(event)
            if len(events) == count:
                break
        return events
    return list(itertools.islice(subscription.iter_events(timeout=timeout), count))


async def drain(subscription: Any) -> list[Any]:
    """Everything left in a subscription that has ended."""
    if isinstance(subscription, a2m.AsyncSubscription):
        return [event async for event in subscription]
    return list(subscription)


async def test_subscribe_delivers_typed_events_until_unsubscribed(push_client: Driver, spy) -> None:
    subscription = await push_client.subscribe()
    ids = (await push_client.remember(["one", "two"])).ids
    await push_client.forget(ids[:1])
    events = await collect(subscription, 3)
    assert [e.kind for e in events] == ["written", "written", "forgotten"]
    assert isinstance(events[0], WrittenEvent)
    assert [e.id for e in events[:2]] == ids
    assert events[2].count == 1

    recorder = spy(push_client)
    result = await push_client.unsubscribe()
    assert result.subscribed is False
    assert recorder.methods == ["memory/events/unsubscribe"]
    assert not subscription.active
    await push_client.remember("after")
    assert await drain(subscription) == []  # iteration ends; nothing more arrives


async def test_subscribe_filters_kinds(push_client: Driver) -> None:
    subscription = await push_client.subscribe(kinds=["forgotten"])
    ids = (await push_client.remember(["one", "two"])).ids
    await push_client.forget(ids)
    events = await collect(subscription, 1)
    assert [e.kind for e in events] == ["forgotten"]
    assert events[0].count == 2


async def test_subscribe_with_a_callback(push_client: Driver) -> None:
    received: list[Any] = []
    done = asyncio.Event()

    if push_client.is_async:

        async def callback(event: Any) -> None:
            await push_client.client.describe()  # a callback may call the client back
            received.append(event)
            if len(received) == 2:
                done.set()
    else:
        loop = asyncio.get_running_loop()

        def callback(event: Any) -> None:  # type: ignore[misc]
            push_client.client.describe()  # runs off the reader thread, so this cannot hang
            received.append(event)
            if len(received) == 2:
                loop.call_soon_threadsafe(done.set)

    subscription = await push_client.subscribe(callback)
    await push_client.remember(["one", "two"])
    await asyncio.wait_for(done.wait(), 10)
    assert [e.kind for e in received] == ["written", "written"]
    with pytest.raises(TypeError):  # events go to the callback, not to an iterator
        await collect(subscription, 1)
    await push_client.unsubscribe()


async def test_a_new_subscription_replaces_the_old_and_close_unsubscribes(
    push_client: Driver, spy
) -> None:
    first = await push_client.subscribe()
    second = await push_client.subscribe(kinds=["written"])
    assert not first.active
    assert await drain(first) == []
    await push_client.remember("x")
    assert [e.kind for e in await collect(second, 1)] == ["written"]
    recorder = spy(push_client)
    if push_client.is_async:
        await second.aclose()
    else:
        second.close()
    assert recorder.methods == ["memory/events/unsubscribe"]
    assert not second.active


async def test_closing_the_client_ends_the_subscription(make_driver) -> None:
    for mode in ("sync", "async"):
        driver = make_driver(mode, "in-process")
        subscription = await driver.subscribe()
        if driver.is_async:
            await driver.client.aclose()
        else:
            driver.client.close()
        assert await drain(subscription) == []
    await close_all(make_driver)


async def test_events_written_by_another_client_are_pushed() -> None:
    from a2m_server.server import A2MServer

    with A2MServer() as server:
        for cls in (A2MClient, AsyncA2MClient):
            watcher = Driver(cls.in_process(server), "in-process")
            writer = A2MClient.in_process(server)
            subscription = await watcher.subscribe()
            written = writer.remember("from elsewhere").ids
            events = await collect(subscription, 1)
            assert [e.id for e in events] == written
            writer.close()
            if watcher.is_async:
                await watcher.client.aclose()
            else:
                watcher.client.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_subscribe_over_http_is_refused_unsent(make_driver, spy, mode) -> None:
    driver = make_driver(mode, "http")
    try:
        description = await driver.describe()
        assert description.events is not None
        assert description.events.push is False  # §8.3: never advertised over HTTP
        recorder = spy(driver)
        with pytest.raises(a2m.CapabilityNotSupported) as caught:
            await driver.subscribe()
        assert "watch()" in str(caught.value)
        assert recorder.methods == []
    finally:
        await close_all(make_driver)


# --- watch ------------------------------------------------------------------------------------


async def take(watcher: Any, count: int) -> list[Any]:
    """The first ``count`` events a sync or async watcher yields."""
    if isinstance(watcher, a2m.AsyncWatcher):
        events = []
        async for event in watcher:
            events.append(event)
            if len(events) == count:
                break
        return events
    return list(itertools.islice(watcher, count))


async def test_watch_follows_the_cursor_through_more(client: Driver) -> None:
    from client_support import install_sleep

    head = (await client.events()).cursor
    ids = (await client.remember(["a", "b", "c"])).ids
    sleeps = install_sleep(client.client)
    watcher = client.watch(cursor=head, limit=2, poll_interval=5.0)
    events = await take(watcher, 3)
    assert [e.id for e in events] == ids
    assert sleeps.delays == []  # "more" means poll again at once
    assert watcher.cursor != head


async def test_watch_from_now_sleeps_between_empty_polls(client: Driver) -> None:
    """Without a cursor the watch starts at the head: earlier events are not replayed. The
    injected sleep writes a record on its first call, as another agent would meanwhile."""
    await client.remember("before the watch")
    delays: list[float] = []
    later: list[str] = []

    if client.is_async:

        async def sleep(seconds: float) -> None:
            delays.append(seconds)
            if not later:
                later.extend((await client.client.remember("during the watch")).ids)
    else:

        def sleep(seconds: float) -> None:  # type: ignore[misc]
            delays.append(seconds)
            if not later:
                later.extend(client.client.remember("during the watch").ids)

    client.client._sleep = sleep
    events = await take(client.watch(poll_interval=0.25), 1)
    assert [e.id for e in events] == later
    assert delays == [0.25]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_watch_surfaces_a_reset(make_driver, caplog, mode) -> None:
    from client_support import install_sleep

    driver = make_driver(mode, "in-process", config={"event_retention": 2})
    try:
        install_sleep(driver.client)
        head = (await driver.events()).cursor
        await driver.remember(["1", "2", "3", "4", "5"])
        resets: list[str] = []
        watcher = driver.watch(cursor=head, on_reset=lambda: resets.append("reset"))
        events = await take(watcher, 2)
        assert resets == ["reset"]
        assert len(events) == 2  # continues from the oldest retained event

        with caplog.at_level(logging.WARNING, logger="a2m"):
            assert len(await take(driver.watch(cursor=head), 1)) == 1
        assert any("missed" in r.getMessage() for r in caplog.records)
    finally:
        await close_all(make_driver)
