"""A2MSession beside the SDK's own SQLiteSession: the same calls, on every binding the
client speaks, give the same answers — items of every kind, limits, empty sessions,
pops to empty, session settings."""

from __future__ import annotations

from typing import Any

import pytest
from agents import SQLiteSession
from agents.memory import SessionSettings
from oai_items import every_kind_of_item

from a2m import AsyncA2MClient
from a2m_openai_agents import A2MSession

pytestmark = pytest.mark.anyio


async def _script(session: Any) -> list[Any]:
    """What every call of a fixed sequence answers on ``session``."""
    items = every_kind_of_item()
    seen: list[Any] = [
        await session.get_items(),
        await session.get_items(limit=3),
        await session.pop_item(),
    ]
    await session.add_items(items[:4])
    await session.add_items([])
    await session.add_items(items[4:])
    for limit in (None, 1, 3, 0, -1, len(items), len(items) + 5):
        seen.append(await session.get_items(limit=limit))
    seen.append(await session.pop_item())
    seen.append(await session.pop_item())
    seen.append(await session.get_items())
    await session.add_items([{"role": "user", "content": "one more"}])
    seen.append(await session.get_items(limit=2))
    while (popped := await session.pop_item()) is not None:
        seen.append(popped)
    seen.append(await session.get_items())
    seen.append(await session.pop_item())
    await session.add_items(items[:2])
    await session.clear_session()
    seen.append(await session.get_items())
    return seen


@pytest.mark.parametrize("session_id", ["s1", ""], ids=["named", "empty"])
async def test_every_call_answers_as_sqlite_session_does(
    a2m_async_client: AsyncA2MClient, session_id: str
) -> None:
    reference = SQLiteSession(session_id)
    try:
        expected = await _script(reference)
    finally:
        reference.close()
    ours = await _script(A2MSession(session_id, a2m_async_client, agent="assistant"))
    assert ours == expected
    assert ours[3] == every_kind_of_item()  # every item came back equal, in order


async def test_session_settings_limit_applies_as_in_sqlite_session(
    a2m_async_client: AsyncA2MClient,
) -> None:
    settings = SessionSettings(limit=2)
    reference = SQLiteSession("s2", session_settings=settings)
    ours = A2MSession("s2", a2m_async_client, session_settings={"limit": 2})
    items = every_kind_of_item()
    try:
        for session in (reference, ours):
            await session.add_items(items)
        assert await ours.get_items() == await reference.get_items() == items[-2:]
        assert await ours.get_items(limit=4) == await reference.get_items(limit=4) == items[-4:]
    finally:
        reference.close()


async def test_sessions_and_namespaces_keep_apart(a2m_async_client: AsyncA2MClient) -> None:
    first = A2MSession("alpha", a2m_async_client)
    second = A2MSession("beta", a2m_async_client)
    elsewhere = A2MSession("alpha", a2m_async_client, namespace="other-app")
    await first.add_items([{"role": "user", "content": "alpha one"}])
    await second.add_items([{"role": "user", "content": "beta one"}])
    await elsewhere.add_items([{"role": "user", "content": "other alpha"}])
    await first.clear_session()
    assert await first.get_items() == []
    assert await second.get_items() == [{"role": "user", "content": "beta one"}]
    assert await elsewhere.get_items() == [{"role": "user", "content": "other alpha"}]


async def test_odd_items_store_and_pop_as_in_sqlite_session(
    a2m_async_client: AsyncA2MClient,
) -> None:
    """An empty item ``{}`` is an item (a pop takes it, not the one before it), and an
    item whose ``type`` is not a string is stored as it is, as SQLiteSession does."""
    items: list[Any] = [
        {"role": "user", "content": "hello"},
        {},
        {"type": ["x"], "data": 1},
        {"type": {"k": 1}},
        {},
    ]

    async def run(session: Any) -> list[Any]:
        await session.add_items(items)
        seen = [await session.get_items()]
        while (popped := await session.pop_item()) is not None:
            seen += [popped, await session.get_items()]
        return seen

    reference = SQLiteSession("odd")
    try:
        expected = await run(reference)
    finally:
        reference.close()
    assert await run(A2MSession("odd", a2m_async_client)) == expected
